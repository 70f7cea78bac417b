import { createHmac, timingSafeEqual } from 'node:crypto'
import type { PetStatus } from '#shared/domain/pet-schema.ts'

/**
 * Opaque pagination cursors: `base64url(payload).base64url(tag)`. The payload names the listing
 * that issued the cursor (its operation id), what the listing was narrowed to (its scope, such as
 * a path's id, and its status filter) and the last pet returned; the HMAC tag makes any edit
 * detectable. A listing refuses a cursor another listing, another scope or another filter issued.
 * A cursor only ever positions a listing the caller may read anyway, so the key guards integrity,
 * not secrecy.
 */
export interface CursorPosition {
  lastId: number
  status: PetStatus | undefined
  /** What the listing is narrowed to besides the filter (a path's id), when it is. */
  scope?: string | undefined
}

const TAG_BYTES = 12

/**
 * The listing whose cursors carried no listing name (payload version 1, before cursors named
 * their listing): its cursors of then still read, for it alone.
 */
const FIRST_LISTING = 'listPets'

export class CursorCodec {
  readonly #key: string
  readonly #listing: string

  /** `listing`: the operation id of the listing whose cursors this codec makes and reads. */
  constructor(key: string, listing: string) {
    this.#key = key
    this.#listing = listing
  }

  encode(position: CursorPosition): string {
    const payload = Buffer.from(
      JSON.stringify([
        2,
        this.#listing,
        position.scope ?? null,
        position.status ?? null,
        position.lastId,
      ]),
    ).toString('base64url')
    return `${payload}.${this.#tag(payload).toString('base64url')}`
  }

  /**
   * The position, or undefined when the cursor was not made by this listing for this scope and
   * status filter.
   */
  decode(
    cursor: string,
    status: PetStatus | undefined,
    scope?: string | undefined,
  ): CursorPosition | undefined {
    const [payload, tag, extra] = cursor.split('.')
    if (!payload || !tag || extra !== undefined) return undefined
    // Compare the tag as text: Node's base64 decoder is lenient ('+' reads as '-', '/' as '_',
    // stray characters are skipped), so comparing decoded bytes would accept edited cursors.
    const given = Buffer.from(tag)
    const expected = Buffer.from(this.#tag(payload).toString('base64url'))
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined
    let decoded: unknown
    try {
      decoded = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'))
    } catch {
      return undefined
    }
    const fields = this.#fieldsOf(decoded)
    if (!fields) return undefined
    const [cursorScope, cursorStatus, lastId] = fields
    if ((cursorScope ?? undefined) !== scope || (cursorStatus ?? undefined) !== status)
      return undefined
    if (typeof lastId !== 'number' || !Number.isSafeInteger(lastId) || lastId < 1) return undefined
    return scope === undefined ? { lastId, status } : { lastId, status, scope }
  }

  /** Scope, status and last id of a payload this listing issued, whichever version. */
  #fieldsOf(decoded: unknown): [unknown, unknown, unknown] | undefined {
    if (!Array.isArray(decoded)) return undefined
    if (decoded.length === 5 && decoded[0] === 2 && decoded[1] === this.#listing) {
      return [decoded[2], decoded[3], decoded[4]]
    }
    if (decoded.length === 3 && decoded[0] === 1 && this.#listing === FIRST_LISTING) {
      return [null, decoded[1], decoded[2]]
    }
    return undefined
  }

  #tag(payload: string): Buffer {
    return createHmac('sha256', this.#key).update(payload).digest().subarray(0, TAG_BYTES)
  }
}

/**
 * What a cursor says of its issuer, unverified: the listing whose codec encoded it and the scope it
 * was made for. For the listing contract's
 * messages, which name the copy that made a cursor; a listing never reads a cursor through it.
 */
export const cursorIssuer = (
  cursor: string,
): { listing: string; scope: string | undefined } | undefined => {
  try {
    const decoded: unknown = JSON.parse(
      Buffer.from(cursor.split('.')[0] ?? '', 'base64url').toString('utf8'),
    )
    if (!Array.isArray(decoded)) return undefined
    if (decoded.length === 5 && decoded[0] === 2) {
      return {
        listing: String(decoded[1]),
        scope: decoded[2] == null ? undefined : String(decoded[2]),
      }
    }
    if (decoded.length === 3 && decoded[0] === 1)
      return { listing: FIRST_LISTING, scope: undefined }
  } catch {}
  return undefined
}
