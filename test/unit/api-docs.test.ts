import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { ROUTES } from '#shared/config/routes-config.ts'

/**
 * docs/api.md explains every operation of the published contract (openapi/openapi.json) and no
 * other: a section whose heading ends in the operation id (`## Creating a pet: \`createPet\``),
 * its line in the contents and a row of the Operations table. An operation added to the route
 * table fails here until its section, line and row are written; one removed fails until they are.
 */
const read = (file: string) => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8')
const apiDoc = read('docs/api.md')
const openApi = JSON.parse(read('openapi/openapi.json')) as {
  paths: Record<string, Record<string, { operationId: string; deprecated?: boolean }>>
}
const documented = Object.values(openApi.paths)
  .flatMap((methods) => Object.values(methods).map((operation) => operation.operationId))
  .sort()

const sectionHeadings = [...apiDoc.matchAll(/^## (.*): `([A-Za-z]+)`$/gm)].map((match) => ({
  title: match[1] as string,
  operationId: match[2] as string,
}))
const sections = sectionHeadings.map(({ operationId }) => operationId)
const operationsTable = (apiDoc.split(/^## Operations$/m)[1] ?? '').split(/^## /m)[0] ?? ''
const tableEntries = [...operationsTable.matchAll(/^\| ([A-Za-z]+)( \([^)]*\))? \|/gm)]
  .map((match) => ({ operationId: match[1] as string, note: match[2] ?? '' }))
  .filter(({ operationId }) => operationId !== 'operation')
const tableRows = tableEntries.map(({ operationId }) => operationId)

/** The contents: the list of links before the first section. */
const contents = [...(apiDoc.split(/^## /m)[0] ?? '').matchAll(/^- \[(.*)\]\(#(.*)\)$/gm)].map(
  (match) => ({ text: match[1] as string, anchor: match[2] as string }),
)
/** The anchor GitHub gives a heading: lowercase, punctuation dropped, spaces made hyphens. */
const anchorOf = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-')

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

  it("links every operation's section from the contents, by its heading and anchor", () => {
    expect(contents.length).toBeGreaterThan(0)
    const problems = sectionHeadings.flatMap(({ title, operationId }) => {
      const heading = `${title}: \`${operationId}\``
      const line = `- [${heading}](#${anchorOf(heading)})`
      const listed = contents.find(
        ({ text, anchor }) => text === heading || anchor === anchorOf(heading),
      )
      if (!listed) {
        return [
          `docs/api.md's contents lack a line for ${operationId}'s section: add ${line}, in the order of the sections`,
        ]
      }
      return listed.text === heading && listed.anchor === anchorOf(heading)
        ? []
        : [
            `docs/api.md's contents line for ${operationId} is - [${listed.text}](#${listed.anchor}), but its section is "## ${heading}": make it ${line}`,
          ]
    })
    expect(problems).toEqual([])
  })

  it('says "(deprecated)" in the section heading and the table row of exactly the deprecated operations', () => {
    const deprecated = ROUTES.filter((route) => 'deprecation' in route).map((r) => r.operationId)
    const inOpenApi = Object.values(openApi.paths)
      .flatMap((methods) => Object.values(methods))
      .filter((operation) => operation.deprecated)
      .map((operation) => operation.operationId)
    const takeItOut = (operationId: string) =>
      `a new operation is never deprecated: take the \`deprecation\` out of ${operationId}'s entry in shared/config/routes-config.ts (copied from a deprecated entry?)`
    expect([
      ...deprecated
        .filter((id) => !inOpenApi.includes(id))
        .map(
          (id) =>
            `${id}'s route entry has a \`deprecation\`, but openapi/openapi.json does not mark it deprecated: ${takeItOut(id)}; only if it really is deprecated, run \`npm run openapi\` and commit`,
        ),
      ...inOpenApi
        .filter((id) => !deprecated.includes(id as never))
        .map(
          (id) =>
            `openapi/openapi.json marks ${id} deprecated, but its route entry has no \`deprecation\`: run \`npm run openapi\` and commit`,
        ),
    ]).toEqual([])
    const said = [
      ...sectionHeadings.map(({ title, operationId }) => ({
        where: 'section heading',
        operationId,
        marked: title.includes('(deprecated)'),
      })),
      ...tableEntries.map(({ operationId, note }) => ({
        where: 'Operations table row',
        operationId,
        marked: note.includes('deprecated'),
      })),
    ]
    const wrong = said
      .filter(({ operationId, marked }) => marked !== deprecated.includes(operationId as never))
      .map(({ where, operationId, marked }) =>
        marked
          ? `docs/api.md's ${where} for ${operationId} says it is deprecated, but its route entry has no \`deprecation\`: take "(deprecated)" out, or give the route a \`deprecation\` in shared/config/routes-config.ts`
          : `${operationId}'s route entry has a \`deprecation\`, but docs/api.md's ${where} for it does not say "(deprecated)": ${takeItOut(operationId)}; only if it really is deprecated, add "(deprecated)" there`,
      )
    expect(wrong).toEqual([])
  })
})
