import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'

/**
 * docs/api.md explains every operation of the published contract (openapi/openapi.json) and no
 * other: a section whose heading ends in the operation id (`## Creating a pet: \`createPet\``)
 * and a row of the Operations table. An operation added to the route table fails here until
 * its section and row are written; one removed fails until they are.
 */
const read = (file: string) => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8')
const apiDoc = read('docs/api.md')
const openApi = JSON.parse(read('openapi/openapi.json')) as {
  paths: Record<string, Record<string, { operationId: string }>>
}
const documented = Object.values(openApi.paths)
  .flatMap((methods) => Object.values(methods).map((operation) => operation.operationId))
  .sort()

const sections = [...apiDoc.matchAll(/^## .*: `([A-Za-z]+)`$/gm)].map((match) => match[1] as string)
const operationsTable = (apiDoc.split(/^## Operations$/m)[1] ?? '').split(/^## /m)[0] ?? ''
const tableRows = [...operationsTable.matchAll(/^\| ([A-Za-z]+)(?: \([^)]*\))? \|/gm)]
  .map((match) => match[1] as string)
  .filter((name) => name !== 'operation')

const difference = (what: string, actual: string[]) => {
  const missing = documented.filter((id) => !actual.includes(id))
  const extra = actual.filter((id) => !documented.includes(id))
  return [
    ...missing.map((id) => `docs/api.md lacks ${what} for ${id}: add it`),
    ...extra.map((id) => `docs/api.md has ${what} for ${id}, which openapi/openapi.json lacks`),
  ]
}

describe('docs/api.md', () => {
  it('has one section (`## …: `operationId``) per operation of the OpenAPI document, and no other', () => {
    expect(documented.length).toBeGreaterThan(0)
    expect(difference('a section', sections)).toEqual([])
    expect(sections).toHaveLength(new Set(sections).size)
  })

  it('lists every operation of the OpenAPI document in its Operations table, and no other', () => {
    expect(difference('an Operations table row', tableRows)).toEqual([])
    expect(tableRows).toHaveLength(documented.length)
  })
})
