import { createHmac, timingSafeEqual } from 'node:crypto'

/**
 * The shape of every key this project makes (the keys CLI, the local server's first keys), and
 * the keyed MAC that lets the authorizer refuse a forgery of one without reading anything:
 *
 *   gateway key (an API Gateway key):          pkg<v>_<secret>_<mac>
 *   store key (only in the project's store):   pks<v>_<id>_<secret>_<mac>
 *
 * `v` is the version of the stage's MAC secret the key was made with (1 to 99, so the secret can
 * be rotated: the authorizer holds every version still in use), `id` the store key's id without
 * its `s-` (10 lower-case letters and digits), `secret` 32 random letters and digits (190 bits),
 * `mac` the first 128 bits of HMAC-SHA256(secret of version v, everything before `_<mac>`) in hex.
 * A public checksum (a CRC) would not do: anyone who knows the format could compute it; the MAC
 * needs the stage's secret.
 *
 * A value that starts with `pkg<v>_` or `pks<v>_` is the project's, and is refused unless it
 * parses and its MAC verifies; any other value (made in the console: API Gateway generates 40
 * letters and digits, never `_`) goes to the key mirror's read. So the key's marker alone says
 * which table holds it, and a forgery of a project key costs no read, whoever knows the format.
 */
export type KeyKind = 'gateway' | 'store'

/** Where a key is read: a project key whose MAC verified, or a console key (no MAC to check). */
export type KeyRoute =
  | { kind: 'gateway'; version: number }
  | { kind: 'store'; version: number; keyId: string }
  | { kind: 'console' }

const MARKERS: Record<KeyKind, string> = { gateway: 'pkg', store: 'pks' }
const PROJECT_PREFIX = /^pk[gs][1-9][0-9]?_/
const PROJECT_KEY =
  /^pk(?<kind>[gs])(?<version>[1-9][0-9]?)_(?:(?<id>[a-z0-9]{10})_)?(?<secret>[A-Za-z0-9]{32})_(?<mac>[0-9a-f]{32})$/

/** A store key's id: `s-` and 10 lower-case letters and digits (API Gateway's ids have no `-`). */
export const STORE_KEY_ID = /^s-[a-z0-9]{10}$/
export const STORE_KEY_ID_PREFIX = 's-'

export const isStoreKeyId = (keyId: string): boolean => STORE_KEY_ID.test(keyId)

/** MAC secrets by version: what the authorizer checks with and the keys CLI makes keys with. */
export type MacSecrets = ReadonlyMap<number, string>

const MAC_HEX_LENGTH = 32

/** The MAC of a key's body under one secret. */
export const keyMac = (secret: string, body: string): string =>
  createHmac('sha256', secret).update(body, 'utf8').digest('hex').slice(0, MAC_HEX_LENGTH)

/** The value of a project key: marker, version, (id,) secret, then the MAC of all that. */
export const projectKeyValue = (
  kind: KeyKind,
  { version, secret, random, id }: { version: number; secret: string; random: string; id?: string },
): string => {
  const body = `${MARKERS[kind]}${version}_${kind === 'store' ? `${id}_` : ''}${random}`
  return `${body}_${keyMac(secret, body)}`
}

/**
 * Where a bearer key is read, decided before any read: `console` for a key of no project shape;
 * the kind (and a store key's id) for a project key whose MAC verifies under a version `secrets`
 * holds; undefined for a project-shaped value that does not parse, names a version no longer in
 * use, or carries a wrong MAC: a forgery, refused with no read.
 */
export const keyRoute = (key: string, secrets: MacSecrets): KeyRoute | undefined => {
  if (!PROJECT_PREFIX.test(key)) return { kind: 'console' }
  const parts = PROJECT_KEY.exec(key)?.groups
  if (!parts) return undefined
  const kind: KeyKind = parts.kind === 's' ? 'store' : 'gateway'
  if ((kind === 'store') !== (parts.id !== undefined)) return undefined
  const version = Number(parts.version)
  const secret = secrets.get(version)
  if (secret === undefined) return undefined
  const body = key.slice(0, key.length - MAC_HEX_LENGTH - 1)
  const expected = Buffer.from(keyMac(secret, body), 'utf8')
  if (!timingSafeEqual(expected, Buffer.from(parts.mac as string, 'utf8'))) return undefined
  return kind === 'store'
    ? { kind, version, keyId: `${STORE_KEY_ID_PREFIX}${parts.id}` }
    : { kind, version }
}

const SECRET_ENTRY = /^([1-9][0-9]?):([A-Za-z0-9._~+/=-]{32,})$/

/**
 * `KEY_MAC_SECRETS`: `<version>:<secret>` pairs separated by commas (the CDK joins the stage's
 * secrets so; the local server writes its one). Anything else fails the cold start: without its
 * secrets the authorizer would refuse every project key.
 */
export const parseMacSecrets = (text: string | undefined): Map<number, string> => {
  const secrets = new Map<number, string>()
  for (const entry of (text ?? '').split(',').map((part) => part.trim())) {
    const match = SECRET_ENTRY.exec(entry)
    if (!match) {
      throw new Error(
        'KEY_MAC_SECRETS must be <version>:<secret> pairs (a version 1 to 99, a secret of 32 or more characters), comma-separated',
      )
    }
    secrets.set(Number(match[1]), match[2] as string)
  }
  return secrets
}

/** The version new keys are made with: the highest one in use. */
export const currentMacVersion = (secrets: MacSecrets): number => Math.max(...secrets.keys())

/** `KEY_MAC_SECRETS` as a variable holds it. */
export const formatMacSecrets = (secrets: MacSecrets): string =>
  [...secrets].map(([version, secret]) => `${version}:${secret}`).join(',')
