import * as z from 'zod/mini'
import { PLAN_NAMES } from '#shared/config/plans-config.ts'

const positiveInt = () => z.int().check(z.positive())

/**
 * Items of the store key table (table-keys.ts `STORE_KEY_TABLE`): keys that live only in the
 * project's own store, never in API Gateway. One item per key, keyed by its id (`s-…`, which the
 * key's value carries, so the authorizer reads it with one GetItem). The value is a secret: only
 * its SHA-256 (`keyHash`, as the key mirror keeps API Gateway keys) is stored, shown once when
 * made and never again.
 */
export const StoreKeyItemSchema = z
  .object({
    keyId: z.string().check(z.regex(/^s-[a-z0-9]{10}$/)),
    keyHash: z.string().check(z.regex(/^[0-9a-f]{64}$/)),
    name: z.string(),
    plan: z.enum(PLAN_NAMES),
    perMinute: positiveInt(),
    perDay: positiveInt(),
    /** A per-customer Enterprise plan's customer (its limits are the item's). */
    customer: z.optional(z.string()),
    enabled: z.boolean(),
    /** ISO 8601; as API Gateway's createdDate. */
    createdAt: z.iso.datetime(),
    /** A rotation's overlap: the key counts as disabled from this instant on (ISO 8601). */
    disableAfter: z.optional(z.iso.datetime()),
    /** The key a rotation made this one to replace. */
    rotatedFrom: z.optional(z.string()),
    /** The MAC secret version its value was made with (for retiring a version). */
    macVersion: positiveInt(),
  })
  .check(z.refine((item) => item.perDay >= item.perMinute, { error: 'perDay is below perMinute' }))

export type StoreKeyItem = z.infer<typeof StoreKeyItemSchema>

/** Whether a store key works at `nowMs`: enabled and not past a rotation's end. */
export const storeKeyWorks = (item: StoreKeyItem, nowMs: number): boolean =>
  item.enabled && (item.disableAfter === undefined || Date.parse(item.disableAfter) > nowMs)
