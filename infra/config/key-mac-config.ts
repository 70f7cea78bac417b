import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager'

/**
 * The versions of a stage's key MAC secret in use (shared/auth/project-key.ts): every key the
 * project makes carries its version and a MAC under that version's secret, and the authorizer
 * holds every version listed here. New keys take the highest. To rotate (docs/operations.md,
 * "Key MAC secret"): add the next version and deploy (keys made from then on carry it, older ones
 * keep working); rotate the keys of the old version (`keys list` shows each store key's); remove
 * the old version and deploy (its keys are refused before any read from then on).
 */
export const KEY_MAC_VERSIONS: readonly number[] = [1]

/** One version of a stage's key MAC secret, as the data stack makes it. */
export interface KeyMacSecret {
  version: number
  secret: ISecret
}
