import { PLAN_NAMES } from '#shared/config/plans-config.ts'
import {
  confirmCommand,
  createCommand,
  customerPlanLimits,
  enabledCommand,
  heldCommand,
  listCommand,
  listOptionsOf,
  moveCommand,
  PLAN_SUBCOMMANDS,
  parseDuration,
  planCommand,
  revokeCommand,
  rotateCommand,
  selectorOf,
} from './keys-change-commands.ts'
import {
  type CommandCall,
  didYouMean,
  type OptionValues,
  stringOption,
  UsageError,
} from './keys-command-call.ts'
import {
  checkUsageOptions,
  liftCommand,
  showCommand,
  usageCommand,
} from './keys-support-commands.ts'

/**
 * The keys CLI's commands, each once: its name, its line of the help text (synopsis, then what it
 * does) and what runs it. The help text, the dispatch and "did you mean" are all read from this
 * table. `check` runs before the stage is opened: what the command line alone can tell (an
 * unknown plan, an impossible number) is a usage error before any call.
 */
export interface KeysCommand {
  name: string
  usage: readonly [synopsis: string, does: string]
  run: (call: CommandCall) => Promise<void>
  check?: (values: OptionValues, args: readonly string[]) => void
}

const checkSelector = (values: OptionValues) => {
  selectorOf(values)
}

export const KEYS_COMMANDS: readonly KeysCommand[] = [
  {
    name: 'create',
    usage: [
      `create --plan <${PLAN_NAMES.join('|')}> | --customer <name>  [--name <name>] [--store]`,
      "create a key on a plan, print it once it works; --store: a store key, kept only in the stage's own store (beyond API Gateway's 10,000 keys per Region)",
    ],
    run: createCommand,
    check: checkSelector,
  },
  {
    name: 'list',
    usage: [
      'list [--store] [--plan <plan>] [--limit N] [--after <id>]',
      "keys of the stage: plan, enabled, created, today's use, suspensions; store keys a page at a time (100, or --limit), --after the id a page ended on",
    ],
    run: listCommand,
    check: (values) => {
      listOptionsOf(values)
    },
  },
  {
    name: 'disable',
    usage: ['disable <id>', 'stop a key (it gets 401 at once)'],
    run: enabledCommand(false),
  },
  { name: 'enable', usage: ['enable <id>', 'restart a disabled key'], run: enabledCommand(true) },
  {
    name: 'revoke',
    usage: ['revoke <id>', 'delete a key (it gets 401 at once)'],
    run: revokeCommand,
  },
  {
    name: 'move',
    usage: [
      'move <id> --plan <plan> | --customer <name>',
      'put a key on another plan (its limits change at once)',
    ],
    run: moveCommand,
    check: checkSelector,
  },
  {
    name: 'rotate',
    usage: [
      'rotate <id> [--overlap 24h]',
      'a new key on the same plan; the old one works until revoked, or until the overlap (5m to 365d, in m, h or d) ends',
    ],
    run: rotateCommand,
    check: (values) => {
      const overlap = stringOption(values, 'overlap')
      if (overlap !== undefined) parseDuration(overlap)
    },
  },
  {
    name: 'held',
    usage: ['held', 'removals the key sync holds (a plan that lost its tags or stage)'],
    run: heldCommand,
  },
  {
    name: 'confirm',
    usage: [
      'confirm <plan id | key id>...',
      'apply held removals: every key of a held group must be named',
    ],
    run: confirmCommand,
  },
  {
    name: 'plan',
    usage: [
      'plan list | plan create --customer <name> --per-minute <n> --per-day <n>',
      "the stage's usage plans; a per-customer Enterprise plan",
    ],
    run: planCommand,
    check: (values, [sub]) => {
      if (!(PLAN_SUBCOMMANDS as readonly string[]).includes(sub ?? '')) {
        throw new UsageError(
          `plan needs ${PLAN_SUBCOMMANDS.join(' or ')}${sub === undefined ? '' : didYouMean(sub, PLAN_SUBCOMMANDS)}`,
        )
      }
      if (values['per-minute'] !== undefined || values['per-day'] !== undefined) {
        customerPlanLimits(values)
      }
    },
  },
  {
    name: 'show',
    usage: [
      'show <id>',
      "a key's plan, state (works only once the key mirror has it), suspension, minute and day use, last seen",
    ],
    run: showCommand,
  },
  {
    name: 'lift',
    usage: [
      'lift <id>',
      "end a key's suspension; returns once every instance answers it by its plan",
    ],
    run: liftCommand,
  },
  {
    name: 'usage',
    usage: [
      'usage <id> [--from D] [--to D] | --month YYYY-MM',
      "admitted requests per UTC day: one key's (default: the last 30 days, none before it was made), or every key's of a month",
    ],
    run: usageCommand,
    check: checkUsageOptions,
  },
]

/** Every word the CLI takes as a command: the table's, and `help`. */
export const COMMAND_NAMES: readonly string[] = [...KEYS_COMMANDS.map(({ name }) => name), 'help']

const SYNOPSIS_WIDTH = 34
const INDENT = '  '

const LINE_WIDTH = 100

/** Words in lines of at most `width` characters (a longer word keeps a line of its own). */
const wrapped = (text: string, width: number): string[] => {
  const lines: string[] = []
  for (const word of text.split(' ')) {
    const last = lines.at(-1)
    if (last !== undefined && last.length + 1 + word.length <= width)
      lines[lines.length - 1] = `${last} ${word}`
    else lines.push(word)
  }
  return lines
}

/** A command's synopsis and what it does, as the help text prints them (100 columns). */
const helpLinesOf = ({ usage: [synopsis, does] }: KeysCommand): string => {
  const column = ' '.repeat(SYNOPSIS_WIDTH)
  const [first = '', ...rest] = wrapped(does, LINE_WIDTH - SYNOPSIS_WIDTH)
  const head =
    synopsis.length + INDENT.length < SYNOPSIS_WIDTH
      ? `${INDENT}${synopsis.padEnd(SYNOPSIS_WIDTH - INDENT.length)}${first}`
      : `${INDENT}${synopsis}\n${column}${first}`
  return [head, ...rest.map((line) => `${column}${line}`)].join('\n')
}

/**
 * `npm run keys -- --help`. Key values go to stdout only for a key just created (so
 * `KEY=$(npm run -s keys -- create --plan free)` works); every other line goes to stderr.
 */
export const KEYS_USAGE = [
  'usage: npm run keys -- [--stage staging|production [--region R] | --url http://127.0.0.1:3000] <command>',
  ...KEYS_COMMANDS.map(helpLinesOf),
  `${INDENT}${'help, --help'.padEnd(SYNOPSIS_WIDTH - INDENT.length)}this text`,
  '--json: one JSON document on stdout (messages stay on stderr); usage also takes --csv.',
  'Exit codes: 0 done, 1 failed (the message says what is changed), 2 a usage error.',
  'Without --stage the local server (npm start) is used: HOST and PORT as npm start reads them, or --url.',
].join('\n')
