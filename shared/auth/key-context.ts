import type { APIGatewayProxyEvent } from 'aws-lambda'
import { isPlanName, type PlanLimits, type PlanName } from '#shared/config/plans-config.ts'
import type { ApiKeyRecord } from './key-store.ts'

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

export interface KeyContext {
  keyId: string
  plan: PlanName
  limits: PlanLimits
}

export const toAuthorizerContext = (record: ApiKeyRecord): AuthorizerContext => ({
  keyId: record.id,
  plan: record.plan,
  perMinute: record.limits.perMinute,
  perDay: record.limits.perDay,
})

/** The caller's key context, or undefined when the event did not pass the authorizer. */
export const readKeyContext = (
  event: Pick<APIGatewayProxyEvent, 'requestContext'>,
): KeyContext | undefined => {
  const raw = event.requestContext?.authorizer as Record<string, unknown> | null | undefined
  if (!raw) return undefined
  const keyId = raw.keyId
  const plan = raw.plan
  // API Gateway may deliver context numbers as strings.
  const perMinute = Number(raw.perMinute)
  const perDay = Number(raw.perDay)
  if (typeof keyId !== 'string' || typeof plan !== 'string' || !isPlanName(plan)) return undefined
  if (!Number.isFinite(perMinute) || !Number.isFinite(perDay)) return undefined
  return { keyId, plan, limits: { perMinute, perDay } }
}
