import { ControlPlaneError } from './control-plane-error.ts'
import type { PatchOperation, StoredApiKey, StoredUsagePlan } from './control-plane-store.ts'

/*
 * The management API's JSON as API Gateway writes and reads it: resources, pages, tags, patch
 * operations, and the 400s for a body it cannot read.
 */

const MAX_PAGE = 500
const DEFAULT_PAGE = 25
export const MAX_USAGE_DAYS = 90

const seconds = (ms: number) => ms / 1000

/** An ApiKey as the management API renders it (dates in epoch seconds, restJson's default). */
export const apiKeyJson = (key: StoredApiKey, includeValue: boolean) => ({
  id: key.id,
  name: key.name,
  ...(key.description !== undefined ? { description: key.description } : {}),
  enabled: key.enabled,
  createdDate: seconds(key.createdDate),
  lastUpdatedDate: seconds(key.lastUpdatedDate),
  ...(key.customerId !== undefined ? { customerId: key.customerId } : {}),
  stageKeys: [],
  tags: key.tags,
  ...(includeValue ? { value: key.value } : {}),
})

export const usagePlanJson = (plan: StoredUsagePlan) => ({
  id: plan.id,
  name: plan.name,
  ...(plan.description !== undefined ? { description: plan.description } : {}),
  apiStages: plan.apiStages,
  ...(plan.throttle ? { throttle: plan.throttle } : {}),
  ...(plan.quota ? { quota: plan.quota } : {}),
  tags: plan.tags,
})

export const usagePlanKeyJson = (key: StoredApiKey) => ({
  id: key.id,
  type: 'API_KEY',
  name: key.name,
})

/** One page of a listing: API Gateway's `item` list and an opaque `position`. */
export const page = <T>(items: T[], query: URLSearchParams) => {
  const limit = Math.min(Number(query.get('limit')) || DEFAULT_PAGE, MAX_PAGE)
  const position = query.get('position')
  if (position !== null && !/^\d+$/.test(position)) throw badRequest('Invalid position')
  const start = position === null ? 0 : Number(position)
  const end = start + limit
  return { item: items.slice(start, end), ...(end < items.length ? { position: String(end) } : {}) }
}

export const badRequest = (message: string) =>
  new ControlPlaneError(400, 'BadRequestException', message)

export const str = (value: unknown): string | undefined =>
  typeof value === 'string' ? value : undefined
type Kind = 'string' | 'boolean' | 'object' | 'array'
/**
 * Fields of the wrong JSON type are refused, as API Gateway refuses a body it cannot deserialize
 * (400), rather than read as absent.
 */
export const checkKinds = (input: Record<string, unknown>, kinds: Record<string, Kind>): void => {
  for (const [field, kind] of Object.entries(kinds)) {
    const value = input[field]
    if (value === undefined || value === null) continue
    const actual = Array.isArray(value) ? 'array' : typeof value
    if (actual !== kind) throw badRequest(`${field} must be a JSON ${kind}`)
  }
}

export const objectOf = (value: unknown): Record<string, unknown> | undefined =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined
export const tagsOf = (value: unknown): Record<string, string> | undefined =>
  value && typeof value === 'object'
    ? Object.fromEntries(
        Object.entries(value as Record<string, unknown>).filter(
          (entry): entry is [string, string] => typeof entry[1] === 'string',
        ),
      )
    : undefined
export const patchOperations = (body: Record<string, unknown>): PatchOperation[] =>
  Array.isArray(body.patchOperations)
    ? body.patchOperations.map((operation: unknown) => ({
        op: str(objectOf(operation)?.op),
        path: str(objectOf(operation)?.path),
        value: str(objectOf(operation)?.value),
      }))
    : []

/** A path label as its percent-escapes say; a malformed escape is the caller's mistake (400). */
export const decodedLabel = (label: string): string => {
  try {
    return decodeURIComponent(label)
  } catch {
    throw badRequest('Invalid percent-encoding in the path')
  }
}

export const utcDay = (epochMs: number) => new Date(epochMs).toISOString().slice(0, 10)

/** Every UTC day from start to end (YYYY-MM-DD, both included). */
export const daysBetween = (start: string | null, end: string | null): string[] => {
  const day = /^\d{4}-\d{2}-\d{2}$/
  if (!start || !end || !day.test(start) || !day.test(end) || start > end) {
    throw badRequest('startDate and endDate must be YYYY-MM-DD, startDate first')
  }
  const days: string[] = []
  for (let at = Date.parse(`${start}T00:00:00Z`); utcDay(at) <= end; at += 86_400_000) {
    days.push(utcDay(at))
    if (days.length > MAX_USAGE_DAYS) throw badRequest(`At most ${MAX_USAGE_DAYS} days of usage`)
  }
  return days
}
