import { describe, expect, it } from 'vitest'
import { contractViolations } from '#openapi/contract-validator.ts'

/** The contract check itself must be able to fail: each broken response is caught. */
const BASE = 'http://127.0.0.1:3000/v1'
const RATE_LIMIT_HEADERS = {
  'X-RateLimit-Limit': '60',
  'X-RateLimit-Remaining': '59',
  'X-RateLimit-Reset': '1795305660',
  'RateLimit-Policy': '"minute";q=60;w=60, "day";q=1000;w=86400',
  RateLimit: '"minute";r=59;t=60, "day";r=999;t=86400',
}
const json = { 'Content-Type': 'application/json; charset=utf-8' }

const response = (
  method: string,
  path: string,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
) => ({
  method,
  url: `${BASE}${path}`,
  status,
  headers: new Headers({ ...json, ...headers }),
  text: JSON.stringify(body),
})

const pet = { id: 1, name: 'Rex', categoryId: 3 }

describe('contract validator', () => {
  it('accepts a response that keeps the contract', () => {
    expect(contractViolations(response('GET', '/pets', 200, [pet], RATE_LIMIT_HEADERS))).toEqual([])
  })

  it('catches a body that breaks the schema', () => {
    const problems = contractViolations(
      response('GET', '/pets', 200, [{ ...pet, id: 'one' }], RATE_LIMIT_HEADERS),
    )
    expect(problems.join()).toMatch(/listPets 200: body .*\/0\/id/)
  })

  it('catches an unknown member in a pet', () => {
    const problems = contractViolations(
      response('GET', '/pets', 200, [{ ...pet, secret: 1 }], RATE_LIMIT_HEADERS),
    )
    expect(problems.join()).toMatch(/additional properties/)
  })

  it('catches a missing required header', () => {
    const { RateLimit: _dropped, ...fewer } = RATE_LIMIT_HEADERS
    const problems = contractViolations(response('GET', '/pets', 200, [pet], fewer))
    expect(problems).toEqual(['listPets 200: required header RateLimit missing'])
  })

  it('catches a header value of the wrong type', () => {
    const problems = contractViolations(
      response('GET', '/pets', 200, [pet], { ...RATE_LIMIT_HEADERS, 'X-RateLimit-Reset': 'soon' }),
    )
    expect(problems.join()).toMatch(/X-RateLimit-Reset=soon/)
  })

  it('catches a status the operation does not document', () => {
    const problems = contractViolations(
      response('GET', '/pets', 404, { code: 'pet_not_found', message: 'x', status: 404 }),
    )
    expect(problems).toEqual(['listPets 404: status not documented for listPets'])
  })

  it('catches an error body whose code does not belong to its status', () => {
    const problems = contractViolations(
      response(
        'POST',
        '/pets',
        409,
        { code: 'rate_limited', message: 'x', status: 409 },
        {
          'Retry-After': '1',
        },
      ),
    )
    expect(problems.join()).toMatch(/createPet 409: body/)
  })

  it('requires 404 route_not_found with an Error body for a route the document lacks', () => {
    expect(
      contractViolations(
        response('GET', '/store/orders', 404, {
          code: 'route_not_found',
          message: 'x',
          status: 404,
        }),
      ),
    ).toEqual([])
    expect(contractViolations(response('DELETE', '/pets', 200, {})).join()).toMatch(
      /undocumented route answered 200/,
    )
  })
})
