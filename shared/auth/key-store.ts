import { createHash } from 'node:crypto'
import type { PlanLimits, PlanName } from '#shared/config/plans-config.ts'

/** What the authorizer learns about a valid key. The key itself never leaves the authorizer. */
export interface ApiKeyRecord {
  /** Stable, non-secret id: API Gateway's key id on AWS, a hash prefix locally. */
  id: string
  plan: PlanName
  /** Per-customer limits (e.g. an Enterprise plan of its own); the plan's limits otherwise. */
  limits: PlanLimits
}

/** Port the authorizer validates keys against: the local key store, or the stage's key mirror on AWS. */
export interface KeyStore {
  /**
   * The record of an enabled key, or undefined for a missing, unknown or revoked one. Each
   * stage has its own store (on AWS its own key mirror table), so no scope is passed.
   */
  lookup(key: string): Promise<ApiKeyRecord | undefined>
}

/** A short hash for logs and local key ids: identifies a key without revealing it. */
export const keyFingerprint = (key: string): string =>
  createHash('sha256').update(key).digest('hex').slice(0, 12)
