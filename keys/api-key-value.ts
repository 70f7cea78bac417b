// The value of every API key this project makes: its plan, then random letters and digits.
import { randomBytes } from 'node:crypto'
import type { PlanName } from '#shared/config/plans-config.ts'

/**
 * The value of a key this project makes (the keys CLI's `create` and `rotate`, the local server's
 * first start): its plan, a hyphen, then 32 random letters and digits (about 190 bits), so a key
 * says its plan wherever it is pasted, as the README shows (`free-3hV0...`). API Gateway takes a
 * value of 20 to 128 characters ("Usage plans and API keys for REST APIs in API Gateway", AWS
 * docs); the longest here is 43, and every one fits the bearer-token grammar the authorizer reads.
 */
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
const RANDOM_CHARACTERS = 32
/** The largest multiple of 62 below 256: bytes at or above it are dropped, so no letter is likelier. */
const UNBIASED_BELOW = 248

export const newApiKeyValue = (plan: PlanName): string => {
  let random = ''
  while (random.length < RANDOM_CHARACTERS) {
    for (const byte of randomBytes(RANDOM_CHARACTERS)) {
      if (byte < UNBIASED_BELOW && random.length < RANDOM_CHARACTERS) {
        random += ALPHABET[byte % ALPHABET.length]
      }
    }
  }
  return `${plan}-${random}`
}
