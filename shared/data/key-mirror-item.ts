import { createHash } from 'node:crypto'
import * as z from 'zod/mini'
import { PLAN_NAMES } from '#shared/config/plans-config.ts'

/**
 * Items of the key mirror table (table-keys.ts `KEY_MIRROR_TABLE`). The key value is a secret:
 * only its SHA-256 is stored, so a leaked table or log line never reveals a usable key.
 */
export const hashApiKey = (value: string): string =>
  createHash('sha256').update(value, 'utf8').digest('hex')

const positiveInt = () => z.int().check(z.positive())

export const KeyMirrorItemSchema = z
  .object({
    keyHash: z.string().check(z.regex(/^[0-9a-f]{64}$/)),
    /** API Gateway's key id: not secret, what logs and rate-limit counters use. */
    keyId: z.string().check(z.minLength(1)),
    enabled: z.boolean(),
    plan: z.enum(PLAN_NAMES),
    perMinute: positiveInt(),
    perDay: positiveInt(),
    usagePlanId: z.string().check(z.minLength(1)),
    /** Start of the sync run that last changed the item (unchanged items are not rewritten). */
    syncedAt: z.iso.datetime(),
  })
  .check(z.refine((item) => item.perDay >= item.perMinute, { error: 'perDay is below perMinute' }))

export type KeyMirrorItem = z.infer<typeof KeyMirrorItemSchema>

/** What the key source produces: an item before a sync run stamps it. */
export type KeyMirrorEntry = Omit<KeyMirrorItem, 'syncedAt'>
