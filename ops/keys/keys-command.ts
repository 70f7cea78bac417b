import { parseArgs } from 'node:util'
import { keyValuesIn, maskingArguments, shownArgument } from '#keys/key-value-mask.ts'
import {
  openStageTarget,
  type StageTarget,
  type TargetChoice,
} from '#ops/keys/stage-target-resolver.ts'
import { STAGE_NAMES } from '#shared/config/stages-config.ts'
import { KeyAdminError } from './key-admin-error.ts'
import { didYouMean, type OptionValues, type Output, UsageError } from './keys-command-call.ts'
import { COMMAND_NAMES, KEYS_COMMANDS, KEYS_USAGE, type KeysCommand } from './keys-command-table.ts'

/**
 * `npm run keys -- …`: the one way to manage keys, locally and on AWS. Its commands, their help
 * and what runs them are one table (keys-command-table.ts). Key values go to stdout only for a key
 * just created, as soon as the key exists, so no failure or interruption after that loses it;
 * every other line goes to stderr. Exit codes: 0 done, 1 failed (the message says what is
 * changed, by key id), 2 a usage error (one line saying what, one naming the command's usage).
 */
export interface CommandIo {
  stdout: (text: string) => void
  stderr: (text: string) => void
  env: NodeJS.ProcessEnv
  /** Aborted on Ctrl-C or SIGTERM (keys-cli.ts): the command stops at its next step, undoing a
   * change left halfway, and says what is changed. */
  signal?: AbortSignal
}

/** Opens a stage (tests pass their own). */
export type TargetOpener = (choice: TargetChoice) => Promise<StageTarget>

const OPTIONS = {
  stage: { type: 'string' },
  region: { type: 'string' },
  url: { type: 'string' },
  plan: { type: 'string' },
  customer: { type: 'string' },
  name: { type: 'string' },
  overlap: { type: 'string' },
  'per-minute': { type: 'string' },
  'per-day': { type: 'string' },
  json: { type: 'boolean' },
  csv: { type: 'boolean' },
  from: { type: 'string' },
  to: { type: 'string' },
  month: { type: 'string' },
  store: { type: 'boolean' },
  limit: { type: 'string' },
  after: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const

const OPTION_NAMES = Object.keys(OPTIONS).map((name) => `--${name}`)

/**
 * Before any call: a key value typed where an id, a name or a plan belongs would travel to API
 * Gateway in a path or a query (and into CloudTrail). Keys are named by their ids.
 */
const refuseKeyValues = (args: readonly string[], values: OptionValues): void => {
  const typed = [
    ...args,
    ...['name', 'plan', 'customer', 'overlap'].map((name) => values[name]),
  ].filter((value): value is string => typeof value === 'string')
  if (typed.some((value) => keyValuesIn(value).length > 0)) {
    throw new UsageError(
      "that looks like a key value; pass its id (npm run keys -- list shows them). Nothing was sent. (A name of 20 or more letters, digits and - . _ ~ + / has a key's shape too: use a shorter one.)",
    )
  }
}

/**
 * The command a command line names, before it is parsed (the first word that is a command and
 * not an option's value), so that even a line parseArgs refuses gets that command's synopsis.
 */
const commandNamedIn = (argv: readonly string[]): KeysCommand | undefined => {
  for (let index = 0; index < argv.length; index += 1) {
    const word = argv[index] as string
    const option = OPTIONS[word.replace(/^--/, '') as keyof typeof OPTIONS]
    if (word.startsWith('-')) {
      if (option?.type === 'string' && !word.includes('=')) index += 1
      continue
    }
    const command = KEYS_COMMANDS.find((known) => known.name === word)
    if (command) return command
  }
  return undefined
}

/** parseArgs' refusal in the CLI's words: what is wrong, never Node's own text. */
const usageErrorOf = (error: Error): UsageError => {
  const unknown = /Unknown option '([^']+)'/.exec(error.message)?.[1]
  if (unknown !== undefined) {
    return new UsageError(
      `unknown option ${shownArgument(unknown)}${didYouMean(unknown, OPTION_NAMES)}`,
    )
  }
  // "Option '--plan <value>' argument missing", or "… argument is ambiguous" when the next word
  // is an option (`--plan --name x`).
  const valueless = /^Option '(--[a-z-]+)/.exec(error.message)?.[1]
  if (valueless !== undefined && /argument (missing|is ambiguous)/.test(error.message)) {
    return new UsageError(
      `${valueless} needs a value${error.message.includes('ambiguous') ? ` (for one that starts with -, write ${valueless}=<value>)` : ''}`,
    )
  }
  return new UsageError(error.message.split('\n')[0] as string)
}

/** The command line, read and checked as far as it can be without a call. */
const readCommandLine = (argv: string[]) => {
  let parsed: ReturnType<
    typeof parseArgs<{ args: string[]; options: typeof OPTIONS; allowPositionals: true }>
  >
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true })
  } catch (error) {
    throw usageErrorOf(error as Error)
  }
  const values: OptionValues = parsed.values
  const [name, ...args] = parsed.positionals
  return { values, name, args }
}

const checkCommandLine = (command: KeysCommand, args: string[], values: OptionValues) => {
  refuseKeyValues(args, values)
  const stage = values.stage
  if (typeof stage === 'string' && !(STAGE_NAMES as readonly string[]).includes(stage)) {
    throw new UsageError(
      `--stage ${shownArgument(stage)} is no deployed stage (${STAGE_NAMES.join(', ')}; without --stage, the local server)${didYouMean(stage, STAGE_NAMES)}`,
    )
  }
  if (values.stage !== undefined && values.url !== undefined) {
    throw new UsageError('give --stage or --url, not both')
  }
  command.check?.(values, args)
}

/** A usage error: what is wrong, then the command's synopsis (or where the commands are listed). */
const usageErrorLines = (message: string, command: KeysCommand | undefined) =>
  `keys: ${message}
keys: ${
    command ? `usage: npm run keys -- ${command.usage[0]}; ` : ''
  }npm run keys -- --help lists every command\n`

export const runKeysCommand = async (
  argv: string[],
  commandIo: CommandIo,
  open: TargetOpener = openStageTarget,
): Promise<number> => {
  // A key value typed where an id or name belongs is repeated by no message, whoever writes it.
  const io: CommandIo = {
    ...commandIo,
    stdout: maskingArguments(argv, commandIo.stdout),
    stderr: maskingArguments(argv, commandIo.stderr),
  }
  let target: StageTarget | undefined
  // Known before parsing, for the synopsis of a line parseArgs refuses.
  let command: KeysCommand | undefined = commandNamedIn(argv)
  try {
    const { values, name, args } = readCommandLine(argv)
    if (values.help || name === undefined || name === 'help') {
      io.stdout(`${KEYS_USAGE}\n`)
      return values.help || name === 'help' ? 0 : 2
    }
    command = KEYS_COMMANDS.find((known) => known.name === name)
    if (!command) {
      throw new UsageError(
        `unknown command "${shownArgument(name)}"${didYouMean(name, COMMAND_NAMES)}`,
      )
    }
    // Everything the command line alone can tell is checked before any call.
    checkCommandLine(command, args, values)
    target = await open({
      stage: values.stage as string | undefined,
      url: values.url as string | undefined,
      region: values.region as string | undefined,
      env: io.env,
      warn: (message) => io.stderr(`warning: ${message}\n`),
      ...(io.signal ? { signal: io.signal } : {}),
    })
    const out: Output = {
      json: values.json === true,
      stdout: io.stdout,
      say: (line) => io.stderr(`${line}\n`),
      keysCommand: target.admin.keysCommand,
    }
    await command.run({ target, args, values, out, signal: io.signal })
    return 0
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(usageErrorLines(error.message, command))
      return 2
    }
    if (error instanceof KeyAdminError) {
      io.stderr(`keys: ${error.message}\n`)
      return 1
    }
    // An SDK error names its exception and says what AWS said; it carries no key value.
    io.stderr(`keys: ${(error as Error).name}: ${(error as Error).message}\n`)
    return 1
  } finally {
    target?.close()
  }
}
