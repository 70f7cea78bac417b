import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { createPetstoreClient } from '#openapi/petstore-client.ts'

/**
 * The typed client (openapi/petstore-client.ts) has one method per operation of the published
 * document, named by its operationId, besides its helpers: an operation added to the API without
 * a client method fails here, and so does a method left behind by a removed operation.
 */
const HELPERS = ['pets', 'raw']

const openApi = JSON.parse(
  readFileSync(new URL('../../openapi/openapi.json', import.meta.url), 'utf8'),
) as { paths: Record<string, Record<string, { operationId: string }>> }
const operationIds = Object.values(openApi.paths)
  .flatMap((methods) => Object.values(methods).map((operation) => operation.operationId))
  .sort()

describe('typed client', () => {
  it('has a method for every operation of openapi/openapi.json, and no method for any other', () => {
    const client = createPetstoreClient({ baseUrl: 'http://127.0.0.1:1/v1', apiKey: 'k' })
    const methods = Object.keys(client).filter((name) => !HELPERS.includes(name))
    const missing = operationIds.filter((id) => !methods.includes(id))
    const extra = methods.filter((name) => !operationIds.includes(name))
    expect(missing.map((id) => `openapi/petstore-client.ts lacks a method ${id}: add it`)).toEqual(
      [],
    )
    expect(
      extra.map((name) => `openapi/petstore-client.ts has ${name}, which no operation has`),
    ).toEqual([])
    for (const id of operationIds) {
      expect(typeof (client as Record<string, unknown>)[id], id).toBe('function')
    }
  })
})
