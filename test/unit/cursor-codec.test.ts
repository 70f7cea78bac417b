import { createHmac } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { CursorCodec, type CursorPosition, cursorIssuer } from '#shared/data/cursor-codec.ts'
import { PET_STATUSES, type PetStatus } from '#shared/domain/pet-schema.ts'

const codec = new CursorCodec('unit-test-cursor-secret', 'listPets')

/** Every character a client could type into a cursor, URL-unsafe ones included. */
const ALPHABET =
  'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_+/=.~!*%$ \t"\\\u00e9'

const STATUSES: (PetStatus | undefined)[] = [undefined, ...PET_STATUSES]

describe('cursor codec', () => {
  it.each(STATUSES)('round-trips a position with status %s', (status) => {
    const position: CursorPosition = { lastId: 42, status }
    expect(codec.decode(codec.encode(position), status)).toStrictEqual(position)
  })

  it.each([1, 999, 2 ** 31, Number.MAX_SAFE_INTEGER])('keeps lastId %i exactly', (lastId) => {
    expect(codec.decode(codec.encode({ lastId, status: 'sold' }), 'sold')?.lastId).toBe(lastId)
  })

  it('makes URL-safe cursors', () => {
    for (const status of STATUSES) {
      expect(codec.encode({ lastId: 123456, status })).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/)
    }
  })

  it('is deterministic for a key (a repeated page gets the same cursor)', () => {
    const position = { lastId: 7, status: 'pending' } as const
    expect(codec.encode(position)).toBe(
      new CursorCodec('unit-test-cursor-secret', 'listPets').encode(position),
    )
  })

  describe('a cursor used with another status filter', () => {
    for (const made of STATUSES) {
      for (const used of STATUSES) {
        if (made === used) continue
        it(`is refused when made for ${made} and used with ${used}`, () => {
          expect(codec.decode(codec.encode({ lastId: 5, status: made }), used)).toBeUndefined()
        })
      }
    }
  })

  it('refuses every single-character change, at every position', () => {
    const accepted: string[] = []
    let checked = 0
    let cursorsWithUrlSafeSymbols = 0
    // Many cursors, so the tags contain '-' and '_' (which a lenient decoder reads like '+', '/').
    for (let lastId = 1; lastId <= 40; lastId += 1) {
      const status = STATUSES[lastId % STATUSES.length]
      const cursor = codec.encode({ lastId, status })
      if (/[-_]/.test(cursor.split('.')[1] ?? '')) cursorsWithUrlSafeSymbols += 1
      for (let at = 0; at < cursor.length; at += 1) {
        for (const replacement of ALPHABET) {
          if (replacement === cursor[at]) continue
          const edited = cursor.slice(0, at) + replacement + cursor.slice(at + 1)
          if (codec.decode(edited, status) !== undefined) accepted.push(`${cursor} → ${edited}`)
          checked += 1
        }
      }
    }
    expect(accepted).toEqual([])
    expect(cursorsWithUrlSafeSymbols).toBeGreaterThan(5)
    expect(checked).toBeGreaterThan(50_000)
  })

  it('refuses a cursor with any one character removed or added', () => {
    const cursor = codec.encode({ lastId: 31337, status: 'available' })
    for (let at = 0; at <= cursor.length; at += 1) {
      if (at < cursor.length) {
        const removed = cursor.slice(0, at) + cursor.slice(at + 1)
        expect(codec.decode(removed, 'available'), removed).toBeUndefined()
      }
      for (const added of ['A', '-', '=', '.']) {
        const inserted = cursor.slice(0, at) + added + cursor.slice(at)
        expect(codec.decode(inserted, 'available'), inserted).toBeUndefined()
      }
    }
  })

  it('refuses a cursor made with another key', () => {
    const other = new CursorCodec('another-deployment-secret', 'listPets')
    expect(codec.decode(other.encode({ lastId: 5, status: 'sold' }), 'sold')).toBeUndefined()
  })

  it.each([
    ['empty', ''],
    ['a lone dot', '.'],
    ['two dots', '..'],
    ['garbage', 'garbage'],
    ['an empty tag', 'abc.'],
    ['an empty payload', '.abc'],
    ['three parts', 'a.b.c'],
    ['an untagged payload', 'WzEsbnVsbCw1XQ'],
    ['non-base64 text', '%%%.%%%'],
    ['5,000 characters', 'x'.repeat(5000)],
  ])('refuses %s', (_label, cursor) => {
    expect(codec.decode(cursor, undefined)).toBeUndefined()
    expect(codec.decode(cursor, 'sold')).toBeUndefined()
  })

  it('refuses a valid cursor with extra parts', () => {
    const cursor = codec.encode({ lastId: 5, status: undefined })
    expect(codec.decode(`${cursor}.`, undefined)).toBeUndefined()
    expect(codec.decode(`${cursor}.x`, undefined)).toBeUndefined()
    expect(codec.decode(`.${cursor}`, undefined)).toBeUndefined()
  })

  it('refuses a payload swapped between two genuine cursors', () => {
    const [payloadA, tagA] = codec.encode({ lastId: 5, status: 'sold' }).split('.')
    const [payloadB, tagB] = codec.encode({ lastId: 500, status: 'sold' }).split('.')
    expect(codec.decode(`${payloadA}.${tagB}`, 'sold')).toBeUndefined()
    expect(codec.decode(`${payloadB}.${tagA}`, 'sold')).toBeUndefined()
  })

  it('refuses a cursor another listing issued, or one made for another scope of this listing', () => {
    const categories = new CursorCodec('unit-test-cursor-secret', 'listCategoryPets')
    const listed = codec.encode({ lastId: 5, status: 'sold' })
    expect(categories.decode(listed, 'sold')).toBeUndefined()
    expect(codec.decode(categories.encode({ lastId: 5, status: 'sold' }), 'sold')).toBeUndefined()
    const inCategory7 = categories.encode({ lastId: 5, status: undefined, scope: '7' })
    expect(categories.decode(inCategory7, undefined, '7')).toStrictEqual({
      lastId: 5,
      status: undefined,
      scope: '7',
    })
    expect(categories.decode(inCategory7, undefined, '8')).toBeUndefined()
    expect(categories.decode(inCategory7, undefined)).toBeUndefined()
  })

  it('still reads the cursors listPets issued before cursors named their listing, and no other listing does', () => {
    // A version 1 cursor: [1, status, lastId], tagged with the same key.
    const payload = Buffer.from(JSON.stringify([1, 'sold', 42])).toString('base64url')
    const tag = createHmac('sha256', 'unit-test-cursor-secret')
      .update(payload)
      .digest()
      .subarray(0, 12)
      .toString('base64url')
    expect(codec.decode(`${payload}.${tag}`, 'sold')).toStrictEqual({ lastId: 42, status: 'sold' })
    const other = new CursorCodec('unit-test-cursor-secret', 'listCategoryPets')
    expect(other.decode(`${payload}.${tag}`, 'sold')).toBeUndefined()
  })

  it('tells which listing encoded a cursor and for which scope, for the listing contract to name the copy', () => {
    const categories = new CursorCodec('unit-test-cursor-secret', 'listCategoryPets')
    expect(cursorIssuer(codec.encode({ lastId: 5, status: 'sold' }))).toEqual({
      listing: 'listPets',
      scope: undefined,
    })
    expect(cursorIssuer(categories.encode({ lastId: 5, status: undefined, scope: '7' }))).toEqual({
      listing: 'listCategoryPets',
      scope: '7',
    })
    const version1 = Buffer.from(JSON.stringify([1, 'sold', 42])).toString('base64url')
    expect(cursorIssuer(`${version1}.tag`)).toEqual({ listing: 'listPets', scope: undefined })
    for (const garbage of [
      '',
      '.',
      'not a cursor',
      `${Buffer.from('{}').toString('base64url')}.x`,
    ]) {
      expect(cursorIssuer(garbage)).toBeUndefined()
    }
  })
})
