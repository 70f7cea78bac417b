import { readdirSync, readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { USAGE_RETENTION_DAYS } from '#shared/rate-limit/rate-limiter.ts'

/**
 * Claims of the README and docs an operator or a client acts on, each held to what the code
 * does (the behaviour itself is tested where it lives: test/infra/data-stack.test.ts,
 * test/e2e/rate-limits.test.ts, test/e2e/local-request-log.test.ts).
 */
const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8')
const DOCS = [
  'README.md',
  ...readdirSync(new URL('../../docs/', import.meta.url))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
]

/** Every paragraph (or list item, or table row) of every doc, with its file. */
const paragraphs = (): { path: string; text: string }[] =>
  DOCS.flatMap((path) =>
    read(path)
      .split(/\n\s*\n|\n(?=\s*[-|] )/)
      .map((text) => ({ path, text: text.replace(/\s+/g, ' ') })),
  )

describe('the usage history, as the docs describe it', () => {
  it('is never called rebuildable or disposable', () => {
    const disposable =
      /can be rebuilt|rebuildable|disposable|nothing worth keeping|would serve no one|only what can be/i
    const aboutHistory = /rate-limit|usage history|usage|counters/i
    const claims = paragraphs().filter(
      ({ text }) => disposable.test(text) && aboutHistory.test(text),
    )
    expect(claims).toEqual([])
  })

  it('says where it lives, how long it is kept, how to restore it, and what a plan change does', () => {
    const keys = read('docs/rate-limits-and-keys.md')
    const section = keys.slice(keys.indexOf('### The usage history'))
    expect(section).toContain('RateLimitTableName')
    expect(section).toContain(`${USAGE_RETENTION_DAYS} days after the day`)
    expect(section).toContain('aws dynamodb restore-table-to-point-in-time')
    expect(section).toContain('RetainExceptOnCreate')
    expect(section).toContain('A key whose plan changed')
  })
})

describe('the rate-limit headers, as the docs promise them', () => {
  it("promise them on a function's answers, never on every answer to a valid key", () => {
    // The gateway's own answers (404 route_not_found, the backstop's 429s) carry none.
    const promise =
      /every (keyed answer|keyed response|answer to a valid key|response to a request with a valid key)/i
    const unqualified = paragraphs().filter(
      ({ text }) => promise.test(text) && /rate-?limit/i.test(text),
    )
    expect(unqualified).toEqual([])
  })
})

describe('request ids, as the docs ask for them', () => {
  it('name the header the API sends, x-amzn-RequestId, never X-Request-Id', () => {
    for (const path of DOCS) expect(read(path), path).not.toMatch(/X-Request-Id/i)
  })
})

describe('the licence', () => {
  const licence = read('LICENSE')
  const root = JSON.parse(read('package.json')) as { license: string }
  const client = JSON.parse(read('client/package.json')) as { license: string }
  const api = JSON.parse(read('openapi/openapi.json')) as {
    info: { license: { name: string; identifier: string } }
  }

  it('is MIT, the same in the repository, the client package and the OpenAPI document', () => {
    expect(licence).toMatch(/^MIT License\n/)
    expect(read('client/LICENSE')).toBe(licence)
    expect(root.license).toBe('MIT')
    expect(client.license).toBe('MIT')
    expect(api.info.license).toEqual({ name: 'MIT', identifier: 'MIT' })
  })

  it('is stated in the README', () => {
    expect(read('README.md')).toMatch(/## Licence\n\nMIT/)
  })
})

describe('the API reference page (/docs), as the OpenAPI document feeds it', () => {
  const api = read('openapi/openapi.json')
  const document = JSON.parse(api) as {
    servers: { description: string; variables?: Record<string, { description: string }> }[]
  }

  it('calls the pets pets', () => {
    expect(api).not.toMatch(/animal/i)
  })

  it('puts no Markdown where the page prints text as it is (servers and their variables)', () => {
    for (const server of document.servers) {
      expect(server.description).not.toContain('`')
      for (const variable of Object.values(server.variables ?? {})) {
        expect(variable.description).not.toContain('`')
      }
    }
  })
})

describe('the Node the docs ask for', () => {
  it('is Node 24 for the project; an older Node only runs npm ci, and its warnings are explained', () => {
    const local = read('docs/local-server.md')
    expect(local).not.toMatch(/any Node ≥ ?20/)
    expect(local).toContain('EBADENGINE')
    expect(read('README.md')).toContain('EBADENGINE')
  })
})
