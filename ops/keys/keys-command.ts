import { parseArgs } from 'node:util'
import { keyValuesIn, maskingArguments, shownArgument } from '#keys/key-value-mask.ts'
import {
  openStageTarget,
  type StageTarget,
  type TargetChoice,
} from '#ops/keys/stage-target-resolver.ts'
import { isPlanName, PLAN_NAMES } from '#shared/config/plans-config.ts'
import { confirmHeldRemovals, listHeldRemovals } from './held-removals-command.ts'
import { KeyAdminError } from './key-admin-error.ts'
import {
  type CommandCall,
  type Output,
  runSupportCommand,
  SupportUsageError,
  suspensionOf,
  todayCounts,
} from './keys-support-commands.ts'
import type { PlanSelector } from './stage-plans.ts'

/**
 * `npm run keys -- …`: the one way to manage keys, locally and on AWS. Key values go to stdout
 * only for a key just created (so `KEY=$(npm run -s keys -- create --plan free)` works), as soon
 * as the key exists, so no failure or interruption after that loses it; every other line goes
 * to stderr. Exit codes: 0 done, 1 failed (the message says what is changed, by key id), 2 a
 * usage error.
 */
export const KEYS_USAGE = `usage: npm run keys -- [--stage staging|production [--region R] | --url http://127.0.0.1:3000] <command>
  create --plan <${PLAN_NAMES.join('|')}> | --customer <name>  [--name <name>]
                                  create a key on a plan, print it once it works
  list                            keys of the stage: plan, enabled, created, today's use
  disable <id> | enable <id>      stop or restart a key
  revoke <id>                     delete a key (it gets 401 at once)
  move <id> --plan <plan> | --customer <name>
                                  put a key on another plan (its limits change at once)
  rotate <id> [--overlap 24h]     a new key on the same plan; the old one works until revoked,
                                  or until the overlap (5m to 365d, in m, h or d) ends
  held                            removals the key sync holds (a plan that lost its tags or stage)
  confirm <plan id | key id>...   apply held removals: every key of a held group must be named
  plan list                       the stage's usage plans
  plan create --customer <name> --per-minute <n> --per-day <n>
                                  a per-customer Enterprise plan
  show <id>                       a key's plan, state, suspension, minute and day use, last seen
  lift <id>                       end a key's suspension (in force everywhere within 5 s)
  usage <id> [--from D] [--to D]  admitted requests per UTC day (default: the last 30 days)
  usage --month YYYY-MM           every key's admitted requests per day of a month
--json: one JSON document on stdout (messages stay on stderr); usage also takes --csv.
Exit codes: 0 done, 1 failed (the message says what is changed), 2 a usage error.
Without --stage the local server (npm start) is used: HOST and PORT as npm start reads them, or --url.`

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

class UsageError extends Error {}

/** The commands of KEYS_USAGE: anything else is a usage error before any call. */
const KEYS_COMMANDS = [
  'create',
  'list',
  'disable',
  'enable',
  'revoke',
  'move',
  'rotate',
  'show',
  'lift',
  'usage',
  'held',
  'confirm',
  'plan',
  'help',
] as const

/** Edit distance, for "did you mean": small words only. */
const distance = (a: string, b: string): number => {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index)
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i]
    for (let j = 1; j <= b.length; j += 1) {
      current[j] = Math.min(
        (previous[j] as number) + 1,
        (current[j - 1] as number) + 1,
        (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1),
      )
    }
    previous = current
  }
  return previous[b.length] as number
}

const unknownCommand = (command: string): UsageError => {
  const near = KEYS_COMMANDS.find((known) => distance(command, known) <= 2)
  return new UsageError(
    `unknown command "${shownArgument(command)}"${near ? `: did you mean ${near}?` : ''}`,
  )
}

/**
 * Before any call: a key value typed where an id, a name or a plan belongs would travel to API
 * Gateway in a path or a query (and into CloudTrail). Keys are named by their ids.
 */
const refuseKeyValues = (
  args: readonly string[],
  values: Record<string, string | boolean | undefined>,
): void => {
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

const DURATION = /^(\d+)(s|m|h|d)$/
const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const

/** `24h`, `90m`, `2d`, `30s` in milliseconds. */
export const parseDuration = (text: string): number => {
  const match = DURATION.exec(text.trim())
  if (!match?.[1] || !match[2]) throw new UsageError(`--overlap must look like 24h, 90m, 2d or 30s`)
  return Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS]
}

const positiveInteger = (name: string, text: string | undefined): number => {
  if (text === undefined || !/^[1-9]\d*$/.test(text)) {
    throw new UsageError(`--${name} must be a positive integer`)
  }
  return Number(text)
}

const selectorOf = (values: { plan?: string | undefined; customer?: string | undefined }) => {
  if (values.plan !== undefined && values.customer !== undefined) {
    throw new UsageError('give --plan or --customer, not both')
  }
  if (values.customer !== undefined) return { customer: values.customer } satisfies PlanSelector
  const plan = values.plan?.toLowerCase() ?? ''
  if (!isPlanName(plan)) {
    throw new UsageError(`--plan must be one of ${PLAN_NAMES.join(', ')} (or give --customer)`)
  }
  return { plan } satisfies PlanSelector
}

const table = (rows: string[][]): string => {
  const widths = rows[0]?.map((_, column) =>
    Math.max(...rows.map((row) => row[column]?.length ?? 0)),
  )
  return rows
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths?.[column] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')
}

/** `list`: the stage's keys, with TODAY as the rate limiter counts it. */
const listCommand = async (target: StageTarget, out: Output): Promise<void> => {
  const { rows, otherKeys } = await target.admin.listKeys()
  const { counts, unavailable } = await todayCounts(
    target,
    rows.map((row) => row.id),
  )
  const now = Date.now()
  if (out.json) {
    const document = rows.map((row) => ({
      ...row,
      createdDate: row.createdDate?.toISOString() ?? null,
      usedToday: counts?.[row.id] ?? null,
    }))
    out.stdout(`${JSON.stringify(document, null, 2)}\n`)
  } else {
    out.stdout(
      `${table([
        ['ID', 'NAME', 'PLAN', 'ENABLED', 'CREATED', 'TODAY', 'NOTE'],
        ...rows.map((row) => [
          row.id,
          row.name,
          row.plan,
          row.enabled ? 'yes' : 'no',
          row.createdDate?.toISOString().replace(/\.\d{3}Z$/, 'Z') ?? '',
          counts === undefined ? '-' : String(counts[row.id] ?? 0),
          row.disableAfter === undefined
            ? ''
            : Date.parse(row.disableAfter) > now
              ? `works until ${row.disableAfter}`
              : `refused since ${row.disableAfter}`,
        ]),
      ])}\n`,
    )
  }
  if (otherKeys > 0) {
    out.say(`${otherKeys} other key(s) in this Region are on no plan of stage ${target.stage}`)
  }
  if (unavailable !== undefined) out.say(`TODAY is empty: ${unavailable}`)
}

/** `keys plan list` and `keys plan create --customer <name>`. */
const planCommand = async (
  { admin, stage }: StageTarget,
  args: string[],
  values: Record<string, string | boolean | undefined>,
  io: CommandIo,
): Promise<void> => {
  const json = values.json === true
  const str = (name: string) => values[name] as string | undefined
  const [sub] = args
  if (sub === 'list') {
    const plans = await admin.listPlans()
    if (json) return io.stdout(`${JSON.stringify(plans, null, 2)}\n`)
    io.stdout(
      `${table([
        ['ID', 'NAME', 'PLAN', 'PER MINUTE', 'PER DAY', 'KEYS'],
        ...plans.map((plan) => [
          plan.id,
          plan.name,
          plan.label,
          'error' in plan.grant
            ? `refused: ${plan.grant.error}`
            : String(plan.grant.limits.perMinute),
          'error' in plan.grant ? '' : String(plan.grant.limits.perDay),
          String(plan.keys),
        ]),
      ])}\n`,
    )
    return
  }
  if (sub === 'create') {
    const customer = str('customer')
    if (!customer) throw new UsageError('plan create needs --customer')
    const plan = await admin.createCustomerPlan({
      customer,
      perMinute: positiveInteger('per-minute', str('per-minute')),
      perDay: positiveInteger('per-day', str('per-day')),
    })
    io.stdout(json ? `${JSON.stringify(plan, null, 2)}\n` : `${plan.id}\n`)
    io.stderr(
      `created usage plan ${plan.id} (${plan.name}) on stage ${stage}; its keys: ${admin.keysCommand} create --customer ${customer} --name <name>\n`,
    )
    return
  }
  throw new UsageError('plan needs list or create')
}

const run = async (call: CommandCall, io: CommandIo): Promise<void> => {
  const { target, command, args, values } = call
  const { admin, stage } = target
  const say = (line: string) => io.stderr(`${line}\n`)
  const json = values.json === true
  const out: Output = { json, stdout: io.stdout, say, keysCommand: admin.keysCommand }
  /** With --json, the command's one JSON document on stdout. */
  const emit = (document: unknown) => {
    if (json) io.stdout(`${JSON.stringify(document, null, 2)}\n`)
  }
  // The value is printed the moment the key exists: a failure or Ctrl-C later cannot lose it
  // (with --json, as a document of its own: the key's id and value).
  const printValue = (key: { id?: string; value: string }) =>
    io.stdout(json ? `${JSON.stringify({ id: key.id, value: key.value })}\n` : `${key.value}\n`)
  const str = (name: string) => values[name] as string | undefined
  const idArg = () => {
    const id = args[0]
    if (!id) throw new UsageError(`${command} needs a key id (or name)`)
    return id
  }
  if (await runSupportCommand(call, out)) return
  switch (command) {
    case 'create': {
      const selector = selectorOf({ plan: str('plan'), customer: str('customer') })
      const name = str('name') ?? `key-${new Date().toISOString().slice(0, 10)}`
      const key = await admin.createKey({ selector, name, onCreated: printValue })
      say(
        `created key ${key.id} "${key.name}" on ${key.plan} (${key.limits.perMinute}/minute, ${key.limits.perDay}/day) on stage ${stage}: it works now`,
      )
      return
    }
    case 'list':
      return listCommand(target, out)
    case 'enable':
    case 'disable': {
      const result = await admin.setEnabled(idArg(), command === 'enable')
      const { suspended, warning } =
        command === 'enable' && result.works
          ? await suspensionOf(target, result.id)
          : { suspended: false }
      emit({ ...result, enabled: command === 'enable', suspended })
      say(
        command === 'disable'
          ? `disabled key ${result.id}: it gets 401 now`
          : warning !== undefined
            ? `enabled key ${result.id} on ${result.plan}, ${warning}`
            : result.works
              ? `enabled key ${result.id} on ${result.plan}: it works now`
              : `enabled key ${result.id}, but it is on no valid plan of stage ${stage} (or past its overlap): it still gets 401`,
      )
      return
    }
    case 'revoke': {
      const result = await admin.revoke(idArg())
      emit(result)
      say(`revoked (deleted) key ${result.id}: it gets 401 now`)
      return
    }
    case 'move': {
      const result = await admin.move(
        idArg(),
        selectorOf({ plan: str('plan'), customer: str('customer') }),
      )
      const { suspended, warning } = result.works
        ? await suspensionOf(target, result.id)
        : { suspended: false, warning: undefined }
      emit({ ...result, suspended })
      say(
        `moved key ${result.id} from ${result.from ?? 'no plan'} to ${result.to}${
          !result.works
            ? ' (it is disabled: still 401)'
            : warning !== undefined
              ? `: its new limits apply, ${warning}`
              : ': its new limits apply now'
        }`,
      )
      return
    }
    case 'rotate': {
      const overlap = str('overlap')
      const result = await admin.rotate(idArg(), {
        onCreated: printValue,
        ...(overlap === undefined ? {} : { overlapMs: parseDuration(overlap) }),
      })
      say(
        `created key ${result.created.id} on ${result.created.plan}: it works now. Key ${result.oldId} works ${
          result.disableAfter
            ? `until ${result.disableAfter}, then the key sync refuses it`
            : `until you revoke it: ${admin.revokeCommand(result.oldId)}`
        }`,
      )
      return
    }
    case 'held':
    case 'confirm':
      return runHeldCommand(call, io)
    case 'plan':
      return planCommand(target, args, values, io)
    default:
      throw unknownCommand(command)
  }
}

/** `keys held` and `keys confirm` (held-removals-command.ts). */
const runHeldCommand = async (
  { target, command, args, values }: CommandCall,
  io: CommandIo,
): Promise<void> => {
  const json = values.json === true
  const removals = target.heldRemovals
  if (!removals) {
    throw new KeyAdminError(
      `${command}: this stage's key sync cannot be asked what it holds (no key sync state to read)`,
    )
  }
  const say = (line: string) => io.stderr(`${line}\n`)
  if (command === 'held' && json) {
    io.stdout(`${JSON.stringify(await removals.held(), null, 2)}\n`)
    return
  }
  if (command === 'held') {
    await listHeldRemovals(removals, target.admin.keysCommand, say, (line) =>
      io.stdout(`${line}\n`),
    )
    return
  }
  if (args.length === 0) throw new UsageError('confirm needs the plan or key ids keys held lists')
  const deleted = await confirmHeldRemovals(removals, args, say)
  if (json) io.stdout(`${JSON.stringify({ deleted })}\n`)
}

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
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      options: {
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
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
    })
    const [command, ...args] = positionals
    if (values.help || !command || command === 'help') {
      io.stdout(`${KEYS_USAGE}\n`)
      return values.help || command === 'help' ? 0 : 2
    }
    // Everything the command line alone can tell is checked before any call.
    if (!(KEYS_COMMANDS as readonly string[]).includes(command)) throw unknownCommand(command)
    refuseKeyValues(args, values)
    if (values.plan !== undefined) selectorOf({ plan: values.plan, customer: values.customer })
    if (values.stage !== undefined && values.url !== undefined) {
      throw new UsageError('give --stage or --url, not both')
    }
    target = await open({
      stage: values.stage,
      url: values.url,
      region: values.region,
      env: io.env,
      warn: (message) => io.stderr(`warning: ${message}\n`),
      ...(io.signal ? { signal: io.signal } : {}),
    })
    await run({ target, command, args, values }, io)
    return 0
  } catch (error) {
    if (
      error instanceof UsageError ||
      error instanceof SupportUsageError ||
      (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')
    ) {
      io.stderr(`keys: ${(error as Error).message}\n${KEYS_USAGE}\n`)
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
