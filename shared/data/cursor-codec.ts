import { createHmac, timingSafeEqual } from 'node:crypto'
import type { PetStatus } from '#shared/domain/pet-schema.ts'

/**
 * Opaque pagination cursors: `base64url(payload).base64url(tag)`. The payload names the last pet
 * returned and the status filter it belongs to; the HMAC tag makes any edit detectable. A cursor
 * only ever positions a listing the caller may read anyway, so the key guards integrity, not secrecy.
 */
export interface CursorPosition {
  lastId: number
  status: PetStatus | undefined
}

const TAG_BYTES = 12

export class CursorCodec {
  readonly #key: string

  constructor(key: string) {
    this.#key = key
  }

  encode(position: CursorPosition): string {
    const payload = Buffer.from(
      JSON.stringify([1, position.status ?? null, position.lastId]),
    ).toString('base64url')
    return `${payload}.${this.#tag(payload).toString('base64url')}`
  }

  /** The position, or undefined when the cursor was not made by us for this status filter. */
  decode(cursor: string, status: PetStatus | undefined): CursorPosition | undefined {
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
    if (!Array.isArray(decoded) || decoded.length !== 3 || decoded[0] !== 1) return undefined
    const [, cursorStatus, lastId] = decoded as [number, unknown, unknown]
    if ((cursorStatus ?? undefined) !== status) return undefined
    if (typeof lastId !== 'number' || !Number.isSafeInteger(lastId) || lastId < 1) return undefined
    return { lastId, status }
  }

  #tag(payload: string): Buffer {
    return createHmac('sha256', this.#key).update(payload).digest().subarray(0, TAG_BYTES)
  }
}
