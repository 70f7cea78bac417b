import { createHash } from 'node:crypto'
import type { KeyContext } from './key-context.ts'

/**
 * Port the authorizer validates keys against (functions/authorizer/stage-key-store.ts on AWS and
 * locally: the stage's key mirror for API Gateway keys, its store key table for store keys).
 */
export interface KeyStore {
  /**
   * The caller a key stands for (its key id, plan and limits: the one shape the authorizer hands
   * every function), or undefined for a missing, unknown, forged, disabled or revoked key. Each
   * stage has its own store, so no scope is passed.
   */
  lookup(key: string): Promise<KeyContext | undefined>
}

/** A short hash for logs: identifies a key without revealing it. */
export const keyFingerprint = (key: string): string =>
  createHash('sha256').update(key).digest('hex').slice(0, 12)
