import type { KeyDayUsage } from '#keys/key-usage-repository.ts'
import type { StageTarget } from '#ops/keys/stage-target-resolver.ts'
import { SUSPENSION_RECHECK_MS } from '#shared/rate-limit/rate-limiter.ts'
import { KeyAdminError } from './key-admin-error.ts'
import type { KeyRow } from './key-admin-service.ts'

/**
 * What support runs for a customer (docs/operations.md, "Support runbook"): `keys show`, `keys
 * lift`, `keys usage`, and the rate limiter's side of `list`, `enable` and `move`. Every number
 * comes from the rate limiter's day items, so it is the one the key's own `X-RateLimit-*`
 * headers show (admitted requests); KeyAdmin says what API Gateway holds.
 */

/** What a command prints: one JSON document with --json, else lines for a person. */
export interface Output {
  json: boolean
  stdout: (text: string) => void
  say: (line: string) => void
  /** The keys CLI's command line for this stage, for the commands a message names. */
  keysCommand: string
}

export class SupportUsageError extends Error {}

const DAY_ID = /^\d{4}-\d{2}-\d{2}$/
const MONTH_ID = /^\d{4}-(0[1-9]|1[0-2])$/
const DAY_MS = 86_400_000
const DEFAULT_HISTORY_DAYS = 30

const isoUtc = (epochMs: number) => new Date(epochMs).toISOString().replace(/\.\d{3}Z$/, 'Z')
const utcDay = (epochMs: number) => new Date(epochMs).toISOString().slice(0, 10)

/** A key of the stage by id, or by a name only one key has. */
export const findKey = (rows: KeyRow[], idOrName: string, stage: string): KeyRow => {
  const byId = rows.find((row) => row.id === idOrName)
  if (byId) return byId
  const named = rows.filter((row) => row.name === idOrName)
  if (named.length === 1 && named[0]) return named[0]
  if (named.length > 1) {
    throw new KeyAdminError(
      `${named.length} keys are named ${idOrName}: use an id (${named.map((row) => row.id).join(', ')})`,
    )
  }
  throw new KeyAdminError(`No key ${idOrName} on a plan of stage ${stage}`)
}

/** Today's admitted requests per key, or why they could not be read. */
export const todayCounts = async (
  target: StageTarget,
  keyIds: string[],
): Promise<{ counts?: Record<string, number>; unavailable?: string }> => {
  try {
    return { counts: await target.usage.countsOn(keyIds, utcDay(Date.now())) }
  } catch (error) {
    return { unavailable: `reading the rate limiter's table failed (${describe(error)})` }
  }
}

const describe = (error: unknown) => {
  const { name, message } = (error ?? {}) as { name?: string; message?: string }
  return error instanceof KeyAdminError ? (message ?? '') : `${name ?? 'Error'}: ${message ?? ''}`
}

/**
 * Whether a key is suspended, and the clause `enable` and `move` add when it is (they must not say
 * "it works now"), or when that could not be read (then `suspended` is null).
 */
export const suspensionOf = async (
  target: StageTarget,
  keyId: string,
): Promise<{ suspended: boolean | null; warning?: string }> => {
  const { keysCommand } = target.admin
  try {
    const { suspendedUntil } = await target.usage.state(keyId)
    if (suspendedUntil === undefined) return { suspended: false }
    return {
      suspended: true,
      warning: `but it is suspended until ${isoUtc(suspendedUntil)} (429 key_suspended until then, for going over its minute limit): ${keysCommand} lift ${keyId} ends it`,
    }
  } catch (error) {
    return {
      suspended: null,
      warning: `but whether it is suspended could not be read (${describe(error)}): ${keysCommand} show ${keyId} tells`,
    }
  }
}

const show = async (target: StageTarget, idOrName: string, out: Output) => {
  const { rows } = await target.admin.listKeys()
  const key = findKey(rows, idOrName, target.stage)
  const state = await target.usage.state(key.id)
  const now = Date.now()
  const overlapOver = key.disableAfter !== undefined && Date.parse(key.disableAfter) <= now
  const refusal = !key.enabled
    ? 'disabled: 401'
    : key.limits === undefined
      ? 'its plan is refused by the key sync: 401'
      : overlapOver
        ? `its rotation overlap ended ${key.disableAfter}: 401`
        : state.suspendedUntil !== undefined
          ? `suspended until ${isoUtc(state.suspendedUntil)}: 429 key_suspended (${out.keysCommand} lift ${key.id} ends it)`
          : undefined
  const document = {
    id: key.id,
    name: key.name,
    stage: target.stage,
    plan: key.plan,
    limits: key.limits ?? null,
    enabled: key.enabled,
    createdDate: key.createdDate?.toISOString() ?? null,
    disableAfter: key.disableAfter ?? null,
    works: refusal === undefined,
    refusedBecause: refusal ?? null,
    usage: { minute: state.minute, day: state.day, dayId: utcDay(now) },
    suspendedUntil: state.suspendedUntil === undefined ? null : isoUtc(state.suspendedUntil),
    lastSeenMinute: state.lastSeenMinute === undefined ? null : isoUtc(state.lastSeenMinute),
  }
  if (out.json) return out.stdout(`${JSON.stringify(document, null, 2)}\n`)
  const limit = (used: number, window: 'perMinute' | 'perDay') =>
    key.limits ? `${used} of ${key.limits[window]}` : String(used)
  const lines = [
    ['key', `${key.id} "${key.name}"`],
    ['stage', target.stage],
    [
      'plan',
      key.limits
        ? `${key.plan} (${key.limits.perMinute}/minute, ${key.limits.perDay}/day)`
        : key.plan,
    ],
    ['enabled', key.enabled ? 'yes' : 'no'],
    ['state', refusal ?? 'works'],
    ['minute', `${limit(state.minute, 'perMinute')} used in this UTC minute`],
    ['today', `${limit(state.day, 'perDay')} used on ${utcDay(now)} (UTC)`],
    [
      'last seen',
      state.lastSeenMinute === undefined
        ? 'no request in the last 100 days'
        : `in the UTC minute from ${isoUtc(state.lastSeenMinute)}`,
    ],
  ]
  out.stdout(
    `${lines.map(([label, value]) => `${(label ?? '').padEnd(10)} ${value}`).join('\n')}\n`,
  )
}

const lift = async (target: StageTarget, idOrName: string, out: Output) => {
  const { rows } = await target.admin.listKeys()
  const key = findKey(rows, idOrName, target.stage)
  const wouldEnd = await target.usage.lift(key.id)
  const seconds = SUSPENSION_RECHECK_MS / 1000
  if (out.json) {
    out.stdout(
      `${JSON.stringify({ id: key.id, lifted: wouldEnd !== undefined, wouldHaveEnded: wouldEnd === undefined ? null : isoUtc(wouldEnd), recheckSeconds: seconds })}\n`,
    )
  }
  out.say(
    wouldEnd === undefined
      ? `key ${key.id} is not suspended on stage ${target.stage}: nothing to lift`
      : `lifted the suspension of key ${key.id} (it ran until ${isoUtc(wouldEnd)}): every instance answers it by its plan limits within ${seconds} s; its minute's requests still count`,
  )
}

const CSV_HEADER = ['key_id', 'key_name', 'plan', 'day', 'requests']

/** RFC 4180: a field with a comma, quote or line break is quoted, its quotes doubled. */
const csvField = (value: string | number) => {
  const text = String(value)
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text
}

const printUsage = (
  rows: (KeyDayUsage & { keyName: string; plan: string })[],
  format: 'csv' | 'json' | 'table',
  out: Output,
) => {
  if (format === 'json') {
    const document = rows.map(({ keyId, keyName, plan, day, requests }) => ({
      keyId,
      keyName,
      plan,
      day,
      requests,
    }))
    return out.stdout(`${JSON.stringify(document, null, 2)}\n`)
  }
  const lines = rows.map((row) => [row.keyId, row.keyName, row.plan, row.day, row.requests])
  if (format === 'csv') {
    return out.stdout(
      `${[CSV_HEADER, ...lines].map((line) => line.map(csvField).join(',')).join('\r\n')}\r\n`,
    )
  }
  const table = [['KEY', 'NAME', 'PLAN', 'DAY', 'REQUESTS'], ...lines.map((l) => l.map(String))]
  const widths = CSV_HEADER.map((_, column) =>
    Math.max(...table.map((line) => line[column]?.length ?? 0)),
  )
  out.stdout(
    `${table
      .map((line) =>
        line
          .map((cell, column) => cell.padEnd(widths[column] ?? 0))
          .join('  ')
          .trimEnd(),
      )
      .join('\n')}\n`,
  )
}

const usage = async (
  target: StageTarget,
  args: string[],
  values: Record<string, string | boolean | undefined>,
  out: Output,
) => {
  const format = values.csv ? 'csv' : out.json ? 'json' : 'table'
  const { rows: keys } = await target.admin.listKeys()
  const month = values.month as string | undefined
  if (month !== undefined) {
    if (args[0] !== undefined) throw new SupportUsageError('usage --month takes no key id')
    if (!MONTH_ID.test(month)) throw new SupportUsageError('--month must look like 2026-11')
    const byId = new Map(keys.map((key) => [key.id, key]))
    const rows = (await target.usage.month(month)).map((row) => ({
      ...row,
      // A key revoked since keeps its usage; API Gateway no longer knows its name or plan.
      keyName: byId.get(row.keyId)?.name ?? '',
      plan: byId.get(row.keyId)?.plan ?? '',
    }))
    printUsage(rows, format, out)
    out.say(
      `${rows.length} row(s): admitted requests per key and UTC day of ${month} on stage ${target.stage}`,
    )
    return
  }
  const idOrName = args[0]
  if (!idOrName) throw new SupportUsageError('usage needs a key id (or name), or --month')
  const key = findKey(keys, idOrName, target.stage)
  const to = (values.to as string | undefined) ?? utcDay(Date.now())
  const from =
    (values.from as string | undefined) ??
    utcDay(Date.parse(`${to}T00:00:00Z`) - (DEFAULT_HISTORY_DAYS - 1) * DAY_MS)
  if (!DAY_ID.test(from) || !DAY_ID.test(to) || Number.isNaN(Date.parse(`${from}T00:00:00Z`))) {
    throw new SupportUsageError('--from and --to must look like 2026-11-01')
  }
  const span = (Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS
  if (!(span >= 0 && span < 366)) {
    throw new SupportUsageError('--from must be on or before --to, at most 366 days apart')
  }
  const days = await target.usage.days(key.id, from, to)
  printUsage(
    days.map((day) => ({ ...day, keyName: key.name, plan: key.plan })),
    format,
    out,
  )
}

/** A keys command as the command line gives it, with the stage it goes to. */
export interface CommandCall {
  target: StageTarget
  command: string
  /** The words after the command. */
  args: string[]
  /** The options, parsed. */
  values: Record<string, string | boolean | undefined>
}

/** Runs show, lift or usage; false for any other command. */
export const runSupportCommand = async (
  { target, command, args, values }: CommandCall,
  out: Output,
): Promise<boolean> => {
  const idArg = () => {
    if (!args[0]) throw new SupportUsageError(`${command} needs a key id (or name)`)
    return args[0]
  }
  if (command === 'show') await show(target, idArg(), out)
  else if (command === 'lift') await lift(target, idArg(), out)
  else if (command === 'usage') await usage(target, args, values, out)
  else return false
  return true
}
