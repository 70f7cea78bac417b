import { describe, expect, it } from 'vitest'
import {
  readCommitted,
  renderClientPackage,
  renderOpenApiDocument,
  renderOpenApiTypes,
} from '#openapi/openapi-artifacts.ts'
import { buildOpenApiDocument } from '#openapi/openapi-document.ts'
import { ROUTES } from '#shared/config/routes-config.ts'
import { IDEMPOTENCY_KEY_HEADER } from '#shared/domain/idempotency-schema.ts'

const document = buildOpenApiDocument()
type Operation = {
  operationId: string
  deprecated?: boolean
  parameters?: { name: string; in: string }[]
  responses: Record<string, { headers?: Record<string, { required?: boolean }> }>
}
const operation = (path: string, method: string) =>
  (document.paths as Record<string, Record<string, Operation>>)[path]?.[method] as Operation

describe('committed contract files', () => {
  it('openapi/openapi.json is what `npm run openapi` makes from the zod schemas now', async () => {
    const committed = await readCommitted()
    expect(committed.document, 'stale: run `npm run openapi` and commit').toBe(
      renderOpenApiDocument(),
    )
  })

  it("client/package.json carries the document's version: the client follows the API", async () => {
    const committed = await readCommitted()
    expect(committed.clientPackage, 'stale: run `npm run openapi` and commit').toBe(
      renderClientPackage(committed.document, committed.clientPackage),
    )
    expect(JSON.parse(committed.clientPackage).version).toBe(document.info.version)
  })

  it('openapi/openapi-types.ts is what openapi-typescript makes from that document', async () => {
    const committed = await readCommitted()
    expect(committed.types, 'stale: run `npm run openapi` and commit').toBe(
      await renderOpenApiTypes(committed.document),
    )
  })
})

describe('the OpenAPI document', () => {
  it('is OpenAPI 3.1 for interface version 1.0.0 with a bearer scheme on every operation', () => {
    expect(document.openapi).toBe('3.1.0')
    expect(document.info.version).toBe('1.0.0')
    expect(document.components.securitySchemes.bearerAuth).toMatchObject({
      type: 'http',
      scheme: 'bearer',
    })
    expect(document.security).toEqual([{ bearerAuth: [] }])
  })

  it('has every route of the route table under its operationId, and no other', () => {
    const documented = Object.entries(document.paths).flatMap(([path, methods]) =>
      Object.entries(methods as Record<string, Operation>).map(
        ([method, op]) => `${method.toUpperCase()} ${path} ${op.operationId}`,
      ),
    )
    expect(documented.sort()).toEqual(
      ROUTES.map((route) => `${route.method} ${route.path} ${route.operationId}`).sort(),
    )
  })

  it('marks getPet deprecated and gives every getPet answer the deprecation headers', () => {
    const getPet = operation('/pets/{petId}', 'get')
    expect(getPet).toMatchObject({ deprecated: true })
    for (const status of ['200', '404', '410']) {
      expect(Object.keys(getPet.responses[status]?.headers ?? {})).toEqual(
        expect.arrayContaining(['Deprecation', 'Sunset', 'Link']),
      )
    }
  })

  it('documents the idempotency header and its 409 and 422 on createPet', () => {
    const createPet = operation('/pets', 'post')
    expect(createPet.parameters).toEqual([
      expect.objectContaining({ name: IDEMPOTENCY_KEY_HEADER, in: 'header' }),
    ])
    expect(Object.keys(createPet.responses)).toEqual(
      expect.arrayContaining(['201', '409', '413', '415', '422']),
    )
    expect(createPet.responses['201']?.headers?.Location).toMatchObject({ required: true })
  })

  it('spells int64 as OpenAPI does and keeps unknown members out of NewPet', () => {
    const newPet = document.components.schemas.NewPet as {
      properties: Record<string, unknown>
      additionalProperties: boolean
    }
    expect(newPet.properties.categoryId).toMatchObject({ type: 'integer', format: 'int64' })
    expect(newPet).toMatchObject({ additionalProperties: false })
  })

  it('names servers for production, staging and the local server, each ending in /v1', () => {
    const urls = document.servers.map((server) => server.url)
    expect(urls).toEqual([
      expect.stringMatching(/\/production\/v1$/),
      expect.stringMatching(/\/staging\/v1$/),
      'http://127.0.0.1:3000/v1',
    ])
  })
})
