import type { KeyDayUsage } from '#keys/key-usage-repository.ts'
import { shownArgument } from '#keys/key-value-mask.ts'
import type { StageTarget } from '#ops/keys/stage-target-resolver.ts'
import { isStoreKeyId } from '#shared/auth/project-key.ts'
import type { StoreKeyItem } from '#shared/data/store-key-item.ts'
import { SUSPENSION_RECHECK_MS } from '#shared/rate-limit/rate-limiter.ts'
import { KeyAdminError, noSuchKey } from './key-admin-error.ts'
import type { KeyRow } from './key-admin-service.ts'
import { storeKeysOf } from './keys-change-commands.ts'
import {
  type CommandCall,
  isoUtc,
  type OptionValues,
  type Output,
  printable,
  stringOption,
  UsageError,
  utcDay,
} from './keys-command-call.ts'
import { StoreKeyAdmin } from './store-key-admin.ts'

/**
 * What support runs for a customer (docs/operations.md, "Support runbook"): `keys show`, `keys
 * lift`, `keys usage`, and the rate limiter's side of `list`, `enable` and `move`. Every number
 * comes from the rate limiter's day items, so it is the one the key's own `X-RateLimit-*`
 * headers show (admitted requests); KeyAdmin says what API Gateway holds.
 */

const DAY_ID = /^\d{4}-\d{2}-\d{2}$/
const MONTH_ID = /^\d{4}-(0[1-9]|1[0-2])$/
const DAY_MS = 86_400_000
const DEFAULT_HISTORY_DAYS = 30

/** A `yyyy-mm-dd` that is a day of the calendar (`2026-02-30` is not: Date.parse would roll it to March). */
const calendarDay = (option: string, text: string): number => {
  const at = Date.parse(`${text}T00:00:00Z`)
  if (!DAY_ID.test(text) || Number.isNaN(at) || utcDay(at) !== text) {
    throw new UsageError(
      `--${option} ${text} is not a day of the calendar: give one like 2026-11-01 (UTC)`,
    )
  }
  return at
}

/** A key of the stage by id, or by a name only one key has. */
export const findKey = (
  rows: KeyRow[],
  idOrName: string,
  { stage, keysCommand }: { stage: string; keysCommand: string },
): KeyRow => {
  const byId = rows.find((row) => row.id === idOrName)
  if (byId) return byId
  const named = rows.filter((row) => row.name === idOrName)
  if (named.length === 1 && named[0]) return named[0]
  if (named.length > 1) {
    throw new KeyAdminError(
      `${named.length} keys are named ${idOrName}: use an id (${named.map((row) => row.id).join(', ')})`,
    )
  }
  throw noSuchKey(shownArgument(idOrName), stage, keysCommand)
}

/** A store key as a row of the listing (it has no usage plan of API Gateway: `planId` is empty). */
const storeRow = (item: StoreKeyItem): KeyRow & { kind: 'store' } => ({
  id: item.keyId,
  name: item.name,
  plan: StoreKeyAdmin.label(item),
  planId: '',
  enabled: item.enabled,
  createdDate: new Date(item.createdAt),
  limits: { perMinute: item.perMinute, perDay: item.perDay },
  disableAfter: item.disableAfter,
  kind: 'store',
})

/**
 * A key of the stage by id or name: a store key by its id (`s-…`: one read of its table), an API
 * Gateway key by id, or by a name only one such key has.
 */
export const keyRowOf = async (
  target: StageTarget,
  idOrName: string,
  keysCommand: string,
): Promise<KeyRow & { kind: 'console' | 'store' }> => {
  if (isStoreKeyId(idOrName)) return storeRow(await storeKeysOf({ target }).key(idOrName))
  const { rows } = await target.admin.listKeys()
  return { ...findKey(rows, idOrName, { stage: target.stage, keysCommand }), kind: 'console' }
}

/** Every store key's name and plan, page by page (the month export's rows name them). */
const storeKeyNames = async (target: StageTarget) => {
  const names = new Map<string, KeyRow>()
  if (!target.storeKeys) return names
  let after: string | undefined
  do {
    const page = await target.storeKeys.page({ limit: 1_000, after })
    for (const item of page.items) names.set(item.keyId, storeRow(item))
    after = page.next
  } while (after !== undefined)
  return names
}

/** Today's admitted requests and running suspensions per key, or why they could not be read. */
export const todayCounts = async (
  target: StageTarget,
  keyIds: string[],
): Promise<{
  counts?: Record<string, number>
  suspended?: Record<string, number>
  unavailable?: string
}> => {
  try {
    return {
      counts: await target.usage.countsOn(keyIds, utcDay(Date.now())),
      suspended: await target.usage.suspensions(keyIds),
    }
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

/**
 * Whether the key mirror holds the key as its plan grants it: API Gateway's word alone does not
 * make a key work, the mirror the authorizer reads does. Why not, or undefined when it does.
 */
const notInMirror = async (target: StageTarget, key: KeyRow): Promise<string | undefined> => {
  try {
    const item = await target.admin.mirrored(key.id)
    if (item?.keyId === key.id && item.usagePlanId === key.planId) return undefined
    return `the key mirror ${item === undefined ? 'does not have it yet' : `still has it on usage plan ${item.usagePlanId}`}: 401 until the key sync brings it (every minute; any change made with this CLI runs it at once)`
  } catch (error) {
    return `not known to work: the key mirror could not be read (${describe(error)})`
  }
}

const showCommand = async ({ target, args, out }: CommandCall) => {
  const key = await keyRowOf(target, supportIdArg(args, 'show'), out.keysCommand)
  const state = await target.usage.state(key.id)
  const now = Date.now()
  const overlapOver = key.disableAfter !== undefined && Date.parse(key.disableAfter) <= now
  const refusal = !key.enabled
    ? 'disabled: 401'
    : key.limits === undefined
      ? 'its plan is refused by the key sync: 401'
      : overlapOver
        ? `its rotation overlap ended ${key.disableAfter}: 401`
        : ((key.kind === 'store' ? undefined : await notInMirror(target, key)) ??
          (state.suspendedUntil !== undefined
            ? `suspended until ${isoUtc(state.suspendedUntil)}: 429 key_suspended (${out.keysCommand} lift ${key.id} ends it)`
            : undefined))
  const document = {
    id: key.id,
    kind: key.kind,
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
    ['key', `${key.id} "${printable(key.name)}"`],
    ['stage', target.stage],
    [
      'plan',
      key.limits
        ? `${key.plan} (${key.limits.perMinute}/minute, ${key.limits.perDay}/day)`
        : printable(key.plan),
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

/** Resolves once `clock` reads `at` or later (polled: a clock moved by hand moves it too). */
const waitUntil = async (at: number, signal: AbortSignal | undefined): Promise<boolean> => {
  for (let left = at - Date.now(); left > 0; left = at - Date.now()) {
    if (signal?.aborted) return false
    await new Promise((resolve) => setTimeout(resolve, Math.min(left, 100)))
  }
  return true
}

/**
 * `lift <id>`: ends the suspension in the table, then waits out SUSPENSION_RECHECK_MS, the longest
 * any instance (a warm Lambda, the local server) trusts a suspension it read before the lift: the
 * command returns once the key's next request is answered by its plan, as every other change of
 * this CLI does once the key mirror shows it.
 */
const liftCommand = async ({ target, args, out, signal }: CommandCall) => {
  const key = await keyRowOf(target, supportIdArg(args, 'lift'), out.keysCommand)
  const wouldEnd = await target.usage.lift(key.id)
  const seconds = SUSPENSION_RECHECK_MS / 1000
  if (wouldEnd === undefined) {
    if (out.json) {
      out.stdout(`${JSON.stringify({ id: key.id, lifted: false, wouldHaveEnded: null })}\n`)
    }
    out.say(`key ${key.id} is not suspended on stage ${target.stage}: nothing to lift`)
    return
  }
  if (!(await waitUntil(Date.now() + SUSPENSION_RECHECK_MS, signal))) {
    throw new KeyAdminError(
      `lifted the suspension of key ${key.id} in the table, but interrupted (SIGINT or SIGTERM) before every instance reread it: it is in force within ${seconds} s`,
      { made: true },
    )
  }
  if (out.json) {
    out.stdout(
      `${JSON.stringify({ id: key.id, lifted: true, wouldHaveEnded: isoUtc(wouldEnd) })}\n`,
    )
  }
  out.say(
    `lifted the suspension of key ${key.id} (it ran until ${isoUtc(wouldEnd)}): it is answered by its plan limits now; its minute's requests still count`,
  )
}

const CSV_HEADER = ['key_id', 'key_name', 'plan', 'day', 'requests']

/**
 * A cell a spreadsheet would run as a formula (`=`, `+`, `-`, `@`, or a tab or carriage return
 * first) gets a leading `'`, and is then quoted (OWASP, "CSV Injection"): a key's name is the
 * customer's text, and the export goes to billing.
 */
const FORMULA_START = /^[=+\-@\t\r]/

/** RFC 4180: a field with a comma, quote or line break is quoted, its quotes doubled. */
const csvField = (value: string | number) => {
  const text = typeof value === 'string' && FORMULA_START.test(value) ? `'${value}` : String(value)
  return /[",\r\n']/.test(text) ? `"${text.replaceAll('"', '""')}"` : text
}

type UsageRow = KeyDayUsage & { keyName: string; plan: string }

const printUsage = (rows: UsageRow[], format: 'csv' | 'json' | 'table', out: Output) => {
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
  const table = [
    ['KEY', 'NAME', 'PLAN', 'DAY', 'REQUESTS'],
    ...lines.map((line) => line.map((cell) => printable(String(cell)))),
  ]
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

/** What `usage` says of its PLAN column: the limiter records no plan per day. */
const PLAN_NOW =
  "PLAN is each key's plan now: a day's plan is not recorded, so days before a move show the new plan"

/** `usage <id>`'s days: from the day the key was made at the earliest (it had no use before). */
const historyRange = (values: OptionValues, createdDate: Date | undefined) => {
  const toText = stringOption(values, 'to') ?? utcDay(Date.now())
  const to = calendarDay('to', toText)
  const fromText = stringOption(values, 'from')
  const from =
    fromText === undefined
      ? to - (DEFAULT_HISTORY_DAYS - 1) * DAY_MS
      : calendarDay('from', fromText)
  const span = (to - from) / DAY_MS
  if (!(span >= 0 && span < 366)) {
    throw new UsageError('--from must be on or before --to, at most 366 days apart')
  }
  const created =
    createdDate === undefined ? from : Date.parse(`${utcDay(createdDate.getTime())}T00:00:00Z`)
  return { from: utcDay(Math.max(from, created)), to: utcDay(to), before: created > to }
}

/** `usage`'s options, checked before the stage is opened: a month, or real days in order. */
export const checkUsageOptions = (values: OptionValues, args: readonly string[]): void => {
  const month = stringOption(values, 'month')
  if (month === undefined) {
    if (!args[0]) throw new UsageError('usage needs a key id (or name), or --month')
    historyRange(values, undefined)
    return
  }
  if (args[0] !== undefined) throw new UsageError('usage --month takes no key id')
  if (!MONTH_ID.test(month)) {
    throw new UsageError(`--month ${month} is not a month: give one like 2026-11`)
  }
}

const usageCommand = async ({ target, args, values, out }: CommandCall) => {
  const format = values.csv ? 'csv' : out.json ? 'json' : 'table'
  checkUsageOptions(values, args)
  const month = stringOption(values, 'month')
  if (month !== undefined) {
    const { rows: keys } = await target.admin.listKeys()
    const byId = await storeKeyNames(target)
    for (const key of keys) byId.set(key.id, key)
    const rows = (await target.usage.month(month)).map((row) => ({
      ...row,
      // A key revoked since keeps its usage; API Gateway no longer knows its name or plan.
      keyName: byId.get(row.keyId)?.name ?? '',
      plan: byId.get(row.keyId)?.plan ?? '',
    }))
    printUsage(rows, format, out)
    out.say(
      `${rows.length} row(s): admitted requests per key and UTC day of ${month} on stage ${target.stage}. ${PLAN_NOW}`,
    )
    return
  }
  const key = await keyRowOf(target, args[0] as string, out.keysCommand)
  const range = historyRange(values, key.createdDate)
  const days = range.before ? [] : await target.usage.days(key.id, range.from, range.to)
  printUsage(
    days.map((day) => ({ ...day, keyName: key.name, plan: key.plan })),
    format,
    out,
  )
  out.say(
    range.before
      ? `key ${key.id} was made on ${utcDay(key.createdDate?.getTime() ?? 0)}, after ${range.to}: no days to show`
      : `admitted requests of key ${key.id} per UTC day from ${range.from}${key.createdDate && range.from === utcDay(key.createdDate.getTime()) ? ' (the day it was made)' : ''} to ${range.to}. ${PLAN_NOW}`,
  )
}

const supportIdArg = (args: string[], command: string): string => {
  if (!args[0]) throw new UsageError(`${command} needs a key id (or name)`)
  return args[0]
}

export { liftCommand, showCommand, usageCommand }
