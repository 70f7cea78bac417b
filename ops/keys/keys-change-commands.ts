import { isStoreKeyId } from '#shared/auth/project-key.ts'
import { isPlanName, PLAN_NAMES } from '#shared/config/plans-config.ts'
import { confirmHeldRemovals, listHeldRemovals } from './held-removals-command.ts'
import { KeyAdminError } from './key-admin-error.ts'
import {
  type CommandCall,
  didYouMean,
  type OptionValues,
  printable,
  stringOption,
  table,
  UsageError,
} from './keys-command-call.ts'
import { suspensionOf, todayCounts } from './keys-support-commands.ts'
import type { PlanSelector } from './stage-plans.ts'
import { StoreKeyAdmin } from './store-key-admin.ts'

/**
 * The keys CLI's commands that change keys and plans (create, enable, disable, revoke, move,
 * rotate, plan create, confirm) and the listings beside them (list, plan list, held). Each one
 * returns once its change is in force (KeyAdmin waits for the key mirror).
 */

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

/** `plan create`'s numbers, checked before the stage is opened. */
export const customerPlanLimits = (values: OptionValues) => {
  const perMinute = positiveInteger('per-minute', stringOption(values, 'per-minute'))
  const perDay = positiveInteger('per-day', stringOption(values, 'per-day'))
  if (perDay < perMinute) {
    throw new UsageError(
      `--per-day ${perDay} is below --per-minute ${perMinute}: a day must allow at least one minute's requests`,
    )
  }
  return { perMinute, perDay }
}

/** The plan `--plan` or `--customer` names; an unknown plan is a usage error that names the near one. */
export const selectorOf = (values: OptionValues): PlanSelector => {
  const plan = stringOption(values, 'plan')
  const customer = stringOption(values, 'customer')
  if (plan !== undefined && customer !== undefined) {
    throw new UsageError('give --plan or --customer, not both')
  }
  if (customer !== undefined) return { customer }
  const name = plan?.toLowerCase() ?? ''
  if (!isPlanName(name)) {
    throw new UsageError(
      `--plan must be one of ${PLAN_NAMES.join(', ')} (or give --customer)${plan === undefined ? '' : didYouMean(plan, PLAN_NAMES)}`,
    )
  }
  return { plan: name }
}

const idArg = ({ args }: CommandCall, command: string): string => {
  const id = args[0]
  if (!id) throw new UsageError(`${command} needs a key id (or name)`)
  return id
}

/** With --json, the command's one JSON document on stdout. */
const emit = ({ out }: CommandCall, document: unknown) => {
  if (out.json) out.stdout(`${JSON.stringify(document, null, 2)}\n`)
}

/**
 * The value is printed the moment the key exists: a failure or Ctrl-C later cannot lose it (with
 * --json, as a document of its own: the key's id and value).
 */
const valuePrinter =
  ({ out }: CommandCall) =>
  (key: { id?: string; value: string }) =>
    out.stdout(
      out.json ? `${JSON.stringify({ id: key.id, value: key.value })}\n` : `${key.value}\n`,
    )

/** The stage's store keys, or why it has none (a stage deployed before them). */
export const storeKeysOf = ({ target }: Pick<CommandCall, 'target'>): StoreKeyAdmin => {
  if (!target.storeKeys) {
    throw new KeyAdminError(
      `Stage ${target.stage} has no store key table (its data stack has no output StoreKeyTableName): deploy it first`,
    )
  }
  return target.storeKeys
}

/** Whether a command names a store key (`s-…`): its table, not API Gateway, holds it. */
const isStoreKey = (call: CommandCall): boolean => isStoreKeyId(call.args[0] ?? '')

export const createCommand = async (call: CommandCall): Promise<void> => {
  const { target, values, out } = call
  const selector = selectorOf(values)
  const name = stringOption(values, 'name') ?? `key-${new Date().toISOString().slice(0, 10)}`
  const store = values.store === true
  const key = store
    ? await storeKeysOf(call).create({ selector, name, onCreated: valuePrinter(call) })
    : await target.admin.createKey({ selector, name, onCreated: valuePrinter(call) })
  out.say(
    `created ${store ? 'store key' : 'key'} ${key.id} "${printable(key.name)}" on ${key.plan} (${key.limits.perMinute}/minute, ${key.limits.perDay}/day) on stage ${target.stage}: it works now`,
  )
}

/** What `list`'s NOTE says of a key: a rotation's end, a running suspension. */
const noteOf = (
  row: { disableAfter: string | undefined },
  suspendedUntil: string | undefined,
  now: number,
) =>
  [
    row.disableAfter === undefined
      ? undefined
      : Date.parse(row.disableAfter) > now
        ? `works until ${row.disableAfter}`
        : `refused since ${row.disableAfter}`,
    suspendedUntil === undefined ? undefined : `suspended until ${suspendedUntil} (429)`,
  ]
    .filter((part) => part !== undefined)
    .join('; ')

/** How many store keys `list` shows at most, unless `--limit` says. */
export const DEFAULT_STORE_PAGE = 100

/** `list`'s `--limit`, `--after` and `--plan`, checked before the stage is opened. */
export const listOptionsOf = (values: OptionValues) => {
  const limitText = stringOption(values, 'limit')
  if (limitText !== undefined && !/^[1-9]\d{0,3}$/.test(limitText)) {
    throw new UsageError('--limit must be a whole number from 1 to 9999')
  }
  const after = stringOption(values, 'after')
  if (after !== undefined && !isStoreKeyId(after)) {
    throw new UsageError('--after takes the store key id a listing ended on (s-…)')
  }
  const plan = stringOption(values, 'plan')?.toLowerCase()
  if (plan !== undefined && !isPlanName(plan)) {
    throw new UsageError(
      `--plan must be one of ${PLAN_NAMES.join(', ')}${didYouMean(plan, PLAN_NAMES)}`,
    )
  }
  return {
    limit: limitText === undefined ? DEFAULT_STORE_PAGE : Number(limitText),
    after,
    plan,
    storeOnly: values.store === true || after !== undefined,
  }
}

/** A listing's rows: API Gateway keys (unless only store keys are asked for), then store keys. */
const listedRows = async (call: CommandCall) => {
  const { target, values } = call
  const options = listOptionsOf(values)
  const consoleKeys = options.storeOnly ? { rows: [], otherKeys: 0 } : await target.admin.listKeys()
  const consoleRows = consoleKeys.rows
    .filter((row) => options.plan === undefined || row.plan === options.plan)
    .map((row) => ({ ...row, kind: 'console' as const }))
  const page = target.storeKeys
    ? await target.storeKeys.page({
        limit: options.limit,
        after: options.after,
        plan: options.plan,
      })
    : undefined
  const storeRows = (page?.items ?? []).map((item) => ({
    id: item.keyId,
    name: item.name,
    plan: StoreKeyAdmin.label(item),
    planId: '',
    enabled: item.enabled,
    createdDate: new Date(item.createdAt),
    limits: { perMinute: item.perMinute, perDay: item.perDay },
    disableAfter: item.disableAfter,
    kind: 'store' as const,
  }))
  return {
    rows: [...consoleRows, ...storeRows],
    otherKeys: consoleKeys.otherKeys,
    next: page?.next,
  }
}

/** `list`: the stage's keys, with TODAY and suspensions as the rate limiter has them. */
export const listCommand = async (call: CommandCall): Promise<void> => {
  const { target, out } = call
  const { rows, otherKeys, next } = await listedRows(call)
  const { counts, suspended, unavailable } = await todayCounts(
    target,
    rows.map((row) => row.id),
  )
  const now = Date.now()
  const suspendedUntil = (id: string) => {
    const until = suspended?.[id]
    return until === undefined ? undefined : new Date(until).toISOString().replace(/\.\d{3}Z$/, 'Z')
  }
  if (out.json) {
    const document = rows.map((row) => ({
      ...row,
      createdDate: row.createdDate?.toISOString() ?? null,
      usedToday: counts?.[row.id] ?? null,
      suspendedUntil: suspended === undefined ? null : (suspendedUntil(row.id) ?? null),
    }))
    out.stdout(`${JSON.stringify(document, null, 2)}\n`)
  } else {
    out.stdout(
      `${table([
        ['ID', 'NAME', 'PLAN', 'ENABLED', 'CREATED', 'TODAY', 'NOTE'],
        ...rows.map((row) => [
          row.id,
          printable(row.name),
          row.plan,
          row.enabled ? 'yes' : 'no',
          row.createdDate?.toISOString().replace(/\.\d{3}Z$/, 'Z') ?? '',
          counts === undefined ? '-' : String(counts[row.id] ?? 0),
          noteOf(row, suspendedUntil(row.id), now),
        ]),
      ])}\n`,
    )
  }
  if (otherKeys > 0) {
    out.say(`${otherKeys} other key(s) in this Region are on no plan of stage ${target.stage}`)
  }
  if (next !== undefined) {
    out.say(`more store keys: ${out.keysCommand} list --store --after ${next}`)
  }
  if (unavailable !== undefined) out.say(`TODAY and suspensions are not shown: ${unavailable}`)
}

/** `enable <id>` and `disable <id>`. */
export const enabledCommand =
  (enabled: boolean) =>
  async (call: CommandCall): Promise<void> => {
    const { target, out } = call
    const id = idArg(call, enabled ? 'enable' : 'disable')
    const result = isStoreKey(call)
      ? await storeKeysOf(call).setEnabled(id, enabled)
      : await target.admin.setEnabled(id, enabled)
    const { suspended, warning } =
      enabled && result.works ? await suspensionOf(target, result.id) : { suspended: false }
    emit(call, { ...result, enabled, suspended })
    out.say(
      !enabled
        ? `disabled key ${result.id}: it gets 401 now`
        : warning !== undefined
          ? `enabled key ${result.id} on ${result.plan}, ${warning}`
          : result.works
            ? `enabled key ${result.id} on ${result.plan}: it works now`
            : `enabled key ${result.id}, but it is on no valid plan of stage ${target.stage} (or past its overlap): it still gets 401`,
    )
  }

export const revokeCommand = async (call: CommandCall): Promise<void> => {
  const id = idArg(call, 'revoke')
  const result = isStoreKey(call)
    ? await storeKeysOf(call).revoke(id)
    : await call.target.admin.revoke(id)
  emit(call, result)
  call.out.say(`revoked (deleted) key ${result.id}: it gets 401 now`)
}

export const moveCommand = async (call: CommandCall): Promise<void> => {
  const { target, values, out } = call
  const id = idArg(call, 'move')
  const result = isStoreKey(call)
    ? await storeKeysOf(call).move(id, selectorOf(values))
    : await target.admin.move(id, selectorOf(values))
  const { suspended, warning } = result.works
    ? await suspensionOf(target, result.id)
    : { suspended: false, warning: undefined }
  emit(call, { ...result, suspended })
  out.say(
    `moved key ${result.id} from ${result.from ?? 'no plan'} to ${result.to}${
      !result.works
        ? ' (it is disabled: still 401)'
        : warning !== undefined
          ? `: its new limits apply, ${warning}`
          : ': its new limits apply now'
    }`,
  )
}

export const rotateCommand = async (call: CommandCall): Promise<void> => {
  const { target, values, out } = call
  const overlap = stringOption(values, 'overlap')
  const options = {
    onCreated: valuePrinter(call),
    ...(overlap === undefined ? {} : { overlapMs: parseDuration(overlap) }),
  }
  const id = idArg(call, 'rotate')
  const result = isStoreKey(call)
    ? await storeKeysOf(call).rotate(id, options)
    : await target.admin.rotate(id, options)
  out.say(
    `created key ${result.created.id} on ${result.created.plan}: it works now. Key ${result.oldId} works ${
      result.disableAfter
        ? `until ${result.disableAfter}, then the key sync refuses it`
        : `until you revoke it: ${target.admin.revokeCommand(result.oldId)}`
    }`,
  )
}

export const PLAN_SUBCOMMANDS = ['list', 'create'] as const

/** `plan list` and `plan create --customer <name> --per-minute <n> --per-day <n>`. */
export const planCommand = async ({ target, args, values, out }: CommandCall): Promise<void> => {
  const { admin, stage } = target
  const [sub] = args
  if (sub === 'list') {
    const plans = await admin.listPlans()
    if (out.json) return out.stdout(`${JSON.stringify(plans, null, 2)}\n`)
    out.stdout(
      `${table([
        ['ID', 'NAME', 'PLAN', 'PER MINUTE', 'PER DAY', 'KEYS'],
        ...plans.map((plan) => [
          plan.id,
          printable(plan.name),
          printable(plan.label),
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
    const customer = stringOption(values, 'customer')
    if (!customer) throw new UsageError('plan create needs --customer')
    const plan = await admin.createCustomerPlan({ customer, ...customerPlanLimits(values) })
    out.stdout(out.json ? `${JSON.stringify(plan, null, 2)}\n` : `${plan.id}\n`)
    out.say(
      `created usage plan ${plan.id} (${plan.name}) on stage ${stage}; its keys: ${admin.keysCommand} create --customer ${customer} --name <name>`,
    )
    return
  }
  throw new UsageError(
    `plan needs ${PLAN_SUBCOMMANDS.join(' or ')}${sub === undefined ? '' : didYouMean(sub, PLAN_SUBCOMMANDS)}`,
  )
}

const heldRemovalsOf = ({ target }: CommandCall, command: string) => {
  if (!target.heldRemovals) {
    throw new KeyAdminError(
      `${command}: this stage's key sync cannot be asked what it holds (no key sync state to read)`,
    )
  }
  return target.heldRemovals
}

/** `held`: what the key sync holds back (held-removals-command.ts). */
export const heldCommand = async (call: CommandCall): Promise<void> => {
  const removals = heldRemovalsOf(call, 'held')
  const { out } = call
  if (out.json) return out.stdout(`${JSON.stringify(await removals.held(), null, 2)}\n`)
  await listHeldRemovals(removals, call.target.admin.keysCommand, out.say, (line) =>
    out.stdout(`${line}\n`),
  )
}

/** `confirm <plan id | key id>...`: only what the key sync holds; anything else fails (exit 1). */
export const confirmCommand = async (call: CommandCall): Promise<void> => {
  const removals = heldRemovalsOf(call, 'confirm')
  if (call.args.length === 0) {
    throw new UsageError('confirm needs the plan or key ids keys held lists')
  }
  const deleted = await confirmHeldRemovals(removals, call.args, {
    say: call.out.say,
    keysCommand: call.target.admin.keysCommand,
  })
  emit(call, { deleted })
}
