// The value of every API key this project makes: a project key with the stage's keyed MAC.
import { randomBytes } from 'node:crypto'
import {
  currentMacVersion,
  type KeyKind,
  type MacSecrets,
  projectKeyValue,
  STORE_KEY_ID_PREFIX,
} from '#shared/auth/project-key.ts'

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
const ID_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789'
const RANDOM_CHARACTERS = 32
const ID_CHARACTERS = 10

/** `length` characters of `alphabet`, each as likely as any other (bytes past the last whole multiple are dropped). */
const randomText = (alphabet: string, length: number): string => {
  const unbiasedBelow = 256 - (256 % alphabet.length)
  let text = ''
  while (text.length < length) {
    for (const byte of randomBytes(length)) {
      if (byte < unbiasedBelow && text.length < length) text += alphabet[byte % alphabet.length]
    }
  }
  return text
}

/**
 * A new key of `kind` under the current MAC version: its value (about 190 random bits, then the
 * MAC, shared/auth/project-key.ts) and, for a store key, its id (`s-` and 10 letters and digits,
 * also in the value, so the authorizer reads its item by id). API Gateway takes 20 to 128
 * characters; a gateway key is 70 or 71, a store key 81 or 82, all in the bearer-token grammar.
 */
export const newProjectKey = (
  kind: KeyKind,
  secrets: MacSecrets,
): { value: string; keyId: string | undefined } => {
  const version = currentMacVersion(secrets)
  const secret = secrets.get(version) as string
  const random = randomText(ALPHABET, RANDOM_CHARACTERS)
  if (kind === 'gateway') {
    return { value: projectKeyValue(kind, { version, secret, random }), keyId: undefined }
  }
  const id = randomText(ID_ALPHABET, ID_CHARACTERS)
  return {
    value: projectKeyValue(kind, { version, secret, random, id }),
    keyId: `${STORE_KEY_ID_PREFIX}${id}`,
  }
}

/** The value of a new API Gateway key the project makes (the keys CLI, the local first keys). */
export const newApiKeyValue = (secrets: MacSecrets): string =>
  newProjectKey('gateway', secrets).value
