import { describe, expect, it } from 'vitest'
import type * as z from 'zod/mini'
import { INT64_MAX, INT64_MIN } from '#shared/domain/int64.ts'
import { LIMIT_DEFAULT, ListPetsQuerySchema } from '#shared/domain/list-pets-query-schema.ts'
import { NewPetSchema } from '#shared/domain/new-pet-schema.ts'
import { PetPathSchema } from '#shared/domain/pet-path-schema.ts'
import { PET_STATUSES } from '#shared/domain/pet-schema.ts'

/** The fields a failed parse names (the 400 details), or undefined when it passed. */
const failedFields = (schema: z.ZodMiniType, input: unknown): string[] | undefined => {
  const result = schema.safeParse(input)
  if (result.success) return undefined
  return result.error.issues
    .flatMap((issue) =>
      issue.code === 'unrecognized_keys' ? issue.keys : [issue.path.map(String).join('.')],
    )
    .sort()
}

const messageFor = (schema: z.ZodMiniType, input: unknown, field: string): string | undefined => {
  const result = schema.safeParse(input)
  return result.error?.issues.find((issue) => issue.path.join('.') === field)?.message
}

const pet = (overrides: Record<string, unknown>) => ({ name: 'Rex', categoryId: 1, ...overrides })

describe('NewPet', () => {
  it('accepts a minimal pet and gives categoryId as an exact BigInt', () => {
    expect(NewPetSchema.parse({ name: 'Rex', categoryId: 7 })).toStrictEqual({
      name: 'Rex',
      categoryId: 7n,
    })
  })

  describe('name', () => {
    it('is required', () => {
      expect(failedFields(NewPetSchema, { categoryId: 1 })).toEqual(['name'])
      expect(messageFor(NewPetSchema, { categoryId: 1 }, 'name')).toBe('is required')
    })

    it.each([42, null, true, ['Rex'], { first: 'Rex' }])('rejects the non-string %j', (name) => {
      expect(failedFields(NewPetSchema, pet({ name }))).toEqual(['name'])
      expect(messageFor(NewPetSchema, pet({ name }), 'name')).toBe('must be a string')
    })

    it.each(['', ' ', '   ', '\t\n', '\u00a0'])('rejects the blank name %j', (name) => {
      expect(failedFields(NewPetSchema, pet({ name }))).toEqual(['name'])
    })

    it('accepts 200 characters and rejects 201', () => {
      expect(NewPetSchema.parse(pet({ name: 'a'.repeat(200) })).name).toBe('a'.repeat(200))
      expect(failedFields(NewPetSchema, pet({ name: 'a'.repeat(201) }))).toEqual(['name'])
    })

    it('counts characters, not UTF-16 units', () => {
      const emoji = '\u{1F436}'
      expect(NewPetSchema.safeParse(pet({ name: emoji.repeat(200) }))).toMatchObject({
        success: true,
      })
      expect(failedFields(NewPetSchema, pet({ name: emoji.repeat(201) }))).toEqual(['name'])
    })

    it('keeps the name as sent', () => {
      expect(NewPetSchema.parse(pet({ name: ' Rex the 2nd ' })).name).toBe(' Rex the 2nd ')
    })
  })

  describe('categoryId', () => {
    it('is required', () => {
      expect(failedFields(NewPetSchema, { name: 'Rex' })).toEqual(['categoryId'])
      expect(messageFor(NewPetSchema, { name: 'Rex' }, 'categoryId')).toBe('is required')
    })

    it.each([
      [0, 0n],
      [1, 1n],
      [-5, -5n],
      [Number.MAX_SAFE_INTEGER, 9007199254740991n],
      [Number.MIN_SAFE_INTEGER, -9007199254740991n],
    ])('accepts the integer %s', (categoryId, expected) => {
      expect(NewPetSchema.parse(pet({ categoryId })).categoryId).toBe(expected)
    })

    it('accepts the int64 bounds exactly', () => {
      expect(NewPetSchema.parse(pet({ categoryId: INT64_MAX })).categoryId).toBe(
        9223372036854775807n,
      )
      expect(NewPetSchema.parse(pet({ categoryId: INT64_MIN })).categoryId).toBe(
        -9223372036854775808n,
      )
    })

    it.each([
      ['2^63', 2n ** 63n],
      ['-2^63 - 1', -(2n ** 63n) - 1n],
      ['2^64', 2n ** 64n],
    ])('rejects %s as outside int64', (_label, categoryId) => {
      expect(failedFields(NewPetSchema, pet({ categoryId }))).toEqual(['categoryId'])
      expect(messageFor(NewPetSchema, pet({ categoryId }), 'categoryId')).toBe(
        'must be within the int64 range',
      )
    })

    it.each([
      1.5,
      -0.5,
      1e30,
      -1e30,
      2 ** 53,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      '1',
      '',
      true,
      null,
      [1],
      {},
    ])('rejects %j', (categoryId) => {
      expect(failedFields(NewPetSchema, pet({ categoryId }))).toEqual(['categoryId'])
    })

    it('says why an unsafe double is refused', () => {
      expect(messageFor(NewPetSchema, pet({ categoryId: 1e30 }), 'categoryId')).toBe(
        'must be an exact integer within the int64 range',
      )
    })
  })

  describe('status', () => {
    it.each(PET_STATUSES)('accepts %s', (status) => {
      expect(NewPetSchema.parse(pet({ status })).status).toBe(status)
    })

    it('is optional with no default: absent stays absent', () => {
      const parsed = NewPetSchema.parse({ name: 'Rex', categoryId: 1 })
      expect(parsed).not.toHaveProperty('status')
    })

    it.each(['Available', 'SOLD', 'adopted', '', null, 1])('rejects %j', (status) => {
      expect(failedFields(NewPetSchema, pet({ status }))).toEqual(['status'])
    })
  })

  it('rejects unknown members and names each one', () => {
    expect(failedFields(NewPetSchema, pet({ id: 7, extra: 'x' }))).toEqual(['extra', 'id'])
  })

  it('names every broken field at once', () => {
    expect(failedFields(NewPetSchema, { name: '', categoryId: 1.5, status: 'x', id: 1 })).toEqual([
      'categoryId',
      'id',
      'name',
      'status',
    ])
  })
})

describe('ListPetsQuery', () => {
  it('defaults limit to 20 and leaves status and cursor out', () => {
    expect(LIMIT_DEFAULT).toBe(20)
    expect(ListPetsQuerySchema.parse({})).toStrictEqual({ limit: 20 })
  })

  it.each([
    ['1', 1],
    ['20', 20],
    ['100', 100],
  ])('accepts limit %s', (limit, expected) => {
    expect(ListPetsQuerySchema.parse({ limit }).limit).toBe(expected)
  })

  it.each(['0', '101', '1000', 'abc', '1.5', '', '-1', '+5', ' 5', '1e2', '0x10'])(
    'rejects limit %j',
    (limit) => {
      expect(failedFields(ListPetsQuerySchema, { limit })).toEqual(['limit'])
    },
  )

  it('rejects a repeated limit, even with equal values', () => {
    expect(failedFields(ListPetsQuerySchema, { limit: ['5', '5'] })).toEqual(['limit'])
    expect(messageFor(ListPetsQuerySchema, { limit: ['5', '6'] }, 'limit')).toBe(
      'must be given once',
    )
  })

  it.each(PET_STATUSES)('accepts status %s', (status) => {
    expect(ListPetsQuerySchema.parse({ status })).toStrictEqual({ limit: 20, status })
  })

  it.each(['SOLD', 'adopted', '', ['sold', 'pending']])('rejects status %j', (status) => {
    expect(failedFields(ListPetsQuerySchema, { status })).toEqual(['status'])
  })

  it('passes a cursor through untouched', () => {
    expect(ListPetsQuerySchema.parse({ cursor: 'abc.DEF-_', limit: '5' })).toStrictEqual({
      limit: 5,
      cursor: 'abc.DEF-_',
    })
  })

  it.each([[''], ['x'.repeat(1025)], [['a', 'b']]])('rejects the cursor %#', (cursor) => {
    expect(failedFields(ListPetsQuerySchema, { cursor })).toEqual(['cursor'])
  })

  it('names every broken parameter at once', () => {
    expect(failedFields(ListPetsQuerySchema, { limit: '0', status: 'x' })).toEqual([
      'limit',
      'status',
    ])
  })
})

describe('PetPath', () => {
  it.each([
    ['1', 1],
    ['42', 42],
    ['9007199254740991', Number.MAX_SAFE_INTEGER],
  ])('accepts petId %s', (petId, expected) => {
    expect(PetPathSchema.parse({ petId })).toStrictEqual({ petId: expected })
  })

  it('accepts ids up to the int64 maximum (they cannot name a pet, but are valid ids)', () => {
    expect(PetPathSchema.safeParse({ petId: '9223372036854775807' })).toMatchObject({
      success: true,
    })
  })

  it.each([
    '0',
    '-1',
    'abc',
    '1.5',
    '',
    '1e3',
    '+1',
    ' 1',
    '9223372036854775808',
    '99999999999999999999999',
  ])('rejects petId %j', (petId) => {
    expect(failedFields(PetPathSchema, { petId })).toEqual(['petId'])
  })

  it('rejects a missing petId', () => {
    expect(failedFields(PetPathSchema, {})).toEqual(['petId'])
  })
})
