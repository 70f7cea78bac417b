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

/** The API stage a request is for, from the authorizer's methodArn. */
export interface KeyScope {
  apiId: string
  stage: string
}

/** Port the authorizer validates keys against: the local store, or API Gateway keys and usage plans. */
export interface KeyStore {
  /**
   * The record of an enabled key, or undefined for a missing, unknown or revoked one.
   * `scope` names the API stage called; a store serving one API only may ignore it.
   */
  lookup(key: string, scope?: KeyScope): Promise<ApiKeyRecord | undefined>
}

/** A short hash for logs and local key ids: identifies a key without revealing it. */
export const keyFingerprint = (key: string): string =>
  createHash('sha256').update(key).digest('hex').slice(0, 12)
