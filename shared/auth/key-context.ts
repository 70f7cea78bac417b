import type { APIGatewayProxyEvent } from 'aws-lambda'
import { isPlanName, type PlanLimits, type PlanName } from '#shared/config/plans-config.ts'

/**
 * The authorizer's context as API Gateway hands it to the functions
 * (`event.requestContext.authorizer`): flat string/number values only.
 */
export interface AuthorizerContext {
  keyId: string
  plan: PlanName
  perMinute: number
  perDay: number
}

/**
 * The caller: what a key stands for, one shape end to end. KeyStore.lookup returns it, the
 * authorizer flattens it into its context (toAuthorizerContext) and every function reads it back
 * (readKeyContext). `keyId` is never secret: API Gateway's key id, or a store key's `s-…` id.
 */
export interface KeyContext {
  keyId: string
  plan: PlanName
  /** Per-customer limits (e.g. an Enterprise plan of its own); the plan's limits otherwise. */
  limits: PlanLimits
}

export const toAuthorizerContext = ({ keyId, plan, limits }: KeyContext): AuthorizerContext => ({
  keyId,
  plan,
  perMinute: limits.perMinute,
  perDay: limits.perDay,
})

/**
 * Each authorizer context read so far, by the object API Gateway hands in: the observability and
 * rate-limit middlewares and the handler of one invocation all ask, and it is read once.
 */
const readContexts = new WeakMap<object, KeyContext | undefined>()

/** The caller's key context, or undefined when the event did not pass the authorizer. */
export const readKeyContext = (
  event: Pick<APIGatewayProxyEvent, 'requestContext'>,
): KeyContext | undefined => {
  const raw = event.requestContext?.authorizer as Record<string, unknown> | null | undefined
  if (!raw) return undefined
  if (!readContexts.has(raw)) readContexts.set(raw, fromAuthorizer(raw))
  return readContexts.get(raw)
}

const fromAuthorizer = (raw: Record<string, unknown>): KeyContext | undefined => {
  const keyId = raw.keyId
  const plan = raw.plan
  // API Gateway may deliver context numbers as strings.
  const perMinute = Number(raw.perMinute)
  const perDay = Number(raw.perDay)
  if (typeof keyId !== 'string' || typeof plan !== 'string' || !isPlanName(plan)) return undefined
  if (!Number.isFinite(perMinute) || !Number.isFinite(perDay)) return undefined
  return { keyId, plan, limits: { perMinute, perDay } }
}
