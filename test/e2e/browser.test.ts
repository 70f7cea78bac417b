import { accessSync, constants, readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type BrowserContext, chromium, type Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type InProcessServer, ROOT, startInProcessServer } from '#test/support/local-server.ts'

/**
 * The API reference page and CORS, in a real browser: Debian's Chromium driven by
 * playwright-core. Not a project dependency: used where installed (`apt-get install chromium`);
 * CI installs it and requires it (PETSTORE_REQUIRE_BROWSER=1, .ci/run).
 */
const CHROMIUM = process.env.PETSTORE_CHROMIUM ?? '/usr/bin/chromium'
const installed = (() => {
  try {
    accessSync(CHROMIUM, constants.X_OK)
    return true
  } catch {
    return false
  }
})()

/** What a function run in the page reads of it (this project's types have no DOM). */
interface PageGlobals {
  document: { body: { innerText: string } }
}

const REDOC_LOGO = /^https:\/\/cdn\.redoc\.ly\/redoc\/logo-mini(-full)?\.svg$/

interface Operation {
  method: string
  path: string
  summary: string
  parameters: string[]
  statuses: string[]
}

/** Every operation of the committed document, with what the page must show of it. */
const operations = (): Operation[] => {
  const document = JSON.parse(readFileSync(join(ROOT, 'openapi', 'openapi.json'), 'utf8')) as {
    paths: Record<
      string,
      Record<
        string,
        { summary: string; parameters?: { name: string }[]; responses: Record<string, unknown> }
      >
    >
  }
  return Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({
      method: method.toUpperCase(),
      path,
      summary: operation.summary,
      parameters: (operation.parameters ?? []).map((parameter) => parameter.name),
      statuses: Object.keys(operation.responses),
    })),
  )
}

if (!installed) {
  describe(`in a browser (skipped: no Chromium at ${CHROMIUM}; apt-get install chromium)`, () => {
    it('is installed where it is required', () => {
      expect(
        process.env.PETSTORE_REQUIRE_BROWSER,
        `Chromium is not installed at ${CHROMIUM}`,
      ).not.toBe('1')
    })
  })
} else {
  describe('in a browser (Chromium)', () => {
    let server: InProcessServer
    let origin: string
    let browser: BrowserContext
    let page: Page
    let userDataDir: string
    /** A page of another origin, as a web app calling the API would be. */
    let appServer: Server
    let appOrigin: string
    /** Requests the page made to anywhere but the local servers. */
    const outside: string[] = []

    beforeAll(async () => {
      server = await startInProcessServer(
        {},
        {
          // A tiny usage-plan backstop, so the gateway's own 429 (THROTTLED) comes at the third call.
          backstopFor: () => ({ rateLimit: 0.001, burstLimit: 2, dailyQuota: 1000 }),
          // The page and the flood share 127.0.0.1, which the local edge otherwise exempts as
          // the local stage's known egress: here it is a customer's NAT like any other, and its
          // keyless requests meet the WAF's keyless rule at 20 per 5 minutes (AWS's minimum is 10).
          edgeExempt: [],
          edgeNumbers: { wafKeylessPer5Minutes: 20 },
        },
      )
      origin = new URL(server.baseUrl).origin
      appServer = createServer((_req, res) => {
        res.writeHead(200, { 'Content-Type': 'text/html' })
        res.end('<!doctype html><title>app</title>')
      })
      await new Promise<void>((resolve) => appServer.listen(0, '127.0.0.1', resolve))
      appOrigin = `http://127.0.0.1:${(appServer.address() as AddressInfo).port}`
      userDataDir = await mkdtemp(join(tmpdir(), 'petstore-chromium-'))
      // A fresh profile per run (launchPersistentContext passes it as --user-data-dir).
      browser = await chromium.launchPersistentContext(userDataDir, {
        executablePath: CHROMIUM,
        args: [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--disable-quic',
          '--no-first-run',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
        ],
      })
      page = browser.pages()[0] ?? (await browser.newPage())
      // Every wait below is for something on the page (its text, an element), never a clock: on a
      // busy machine Redoc took over Playwright's default 30 s to render. The test's time limit
      // (vitest.config.ts) still ends a page that never renders.
      page.setDefaultTimeout(0)
      await page.route('**/*', (route) => {
        const url = new URL(route.request().url())
        if (url.origin === origin || url.origin === appOrigin || url.protocol === 'data:') {
          return route.continue()
        }
        outside.push(url.href)
        return route.abort()
      })
    }, 120_000)

    afterAll(async () => {
      await browser?.close()
      await new Promise((resolve) => appServer?.close(resolve))
      await server?.stop()
      if (userDataDir) await rm(userDataDir, { recursive: true, force: true })
    })

    /** Until the page's visible text holds `text` (Redoc renders as it goes). */
    const untilShown = (text: string) =>
      page.waitForFunction(
        (expected) =>
          (globalThis as unknown as PageGlobals).document.body.innerText.includes(expected),
        text,
      )

    it('shows every operation of /docs with its parameters and error answers, offline', async () => {
      await page.goto(`${origin}/docs`)
      for (const operation of operations()) {
        // The side menu's entry, once rendered; Redoc renders an operation's details once it is
        // near the view.
        await page.getByText(operation.summary, { exact: true }).first().click()
        for (const expected of [...operation.parameters, ...operation.statuses]) {
          await untilShown(expected)
        }
      }
      const text = await page.locator('body').innerText()
      // Words a reader sees as they are meant: Markdown rendered (no raw backticks), the pets
      // called pets, no licence placeholder (the document's licence: test/unit/docs-claims.test.ts).
      expect(text).not.toContain('`')
      expect(text).not.toMatch(/animal/i)
      expect(text).not.toContain('LicenseRef')
      // Every path is there (Redoc shows it beside each operation).
      for (const operation of operations()) expect(text).toContain(operation.path)
      // Every request to the network was refused, and the page read whole all the same. The one
      // it tries is the attribution logo of Redoc's side menu, which hides itself when unreachable.
      expect(outside.filter((url) => !REDOC_LOGO.test(url))).toEqual([])
    })

    /** fetch() run by a page of another origin; what a web app could read of the answer. */
    const fetchFromApp = (
      url: string,
      init: { method?: string; headers?: Record<string, string>; body?: string },
      from: Page = page,
    ) =>
      from.evaluate(
        async ({ url, init }) => {
          const response = await fetch(url, init)
          return {
            status: response.status,
            body: (await response.json()) as Record<string, unknown>,
            headers: Object.fromEntries(
              [
                'location',
                'retry-after',
                'x-ratelimit-remaining',
                'www-authenticate',
                'x-amzn-requestid',
              ].map((name) => [name, response.headers.get(name)]),
            ),
          }
        },
        { url, init },
      )

    it('lets a page of another origin create a pet and read every header it needs', async () => {
      await page.goto(appOrigin)
      const key = server.keys.created.find((entry) => entry.plan === 'free')?.key as string
      // JSON and Authorization make this a preflighted request.
      const created = await fetchFromApp(`${server.baseUrl}/pets`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ name: 'Rex', categoryId: 1 }),
      })
      expect(created.status).toBe(201)
      expect(created.body.name).toBe('Rex')
      expect(created.headers.location).toMatch(/\/v1\/pets\/\d+$/)
      expect(created.headers['x-ratelimit-remaining']).toMatch(/^\d+$/)
      expect(created.headers['x-amzn-requestid']).toMatch(/^[0-9a-f-]{36}$/)
    })

    it('lets that page read a 401 and a 429 of the gateway, with their headers', async () => {
      await page.goto(appOrigin)
      const refused = await fetchFromApp(`${server.baseUrl}/pets`, {
        headers: { Authorization: 'Bearer not-a-key-of-this-stage-0000' },
      })
      expect(refused.status).toBe(401)
      expect(refused.body.code).toBe('unauthorized')
      expect(refused.headers['www-authenticate']).toMatch(/^Bearer/)

      const key = server.keys.created.find((entry) => entry.plan === 'pro')?.key as string
      const calls = []
      for (let call = 0; call < 3; call += 1) {
        calls.push(
          await fetchFromApp(`${server.baseUrl}/pets?limit=1`, {
            headers: { Authorization: `Bearer ${key}` },
          }),
        )
      }
      const throttled = calls.at(-1)
      expect(throttled?.status).toBe(429)
      expect(throttled?.body.code).toBe('rate_limited')
      expect(throttled?.headers['retry-after']).toMatch(/^\d+$/)
    })

    it('keeps a page of another origin working with its key while its own address floods without one', async () => {
      // A page without request interception: with page.route, the browser answers CORS
      // preflights itself, and this test is about the ones the gateway gets.
      const app = await browser.newPage()
      await app.goto(appOrigin)
      const preflights: number[] = []
      app.on('response', (response) => {
        if (response.request().method() === 'OPTIONS') preflights.push(response.status())
      })
      // The page and the flood share 127.0.0.1, as a customer's browser and a neighbour share a
      // NAT: keyless requests from it are refused past the keyless limit (20 here, above).
      const flood = (count: number) =>
        Promise.all(
          Array.from({ length: count }, () =>
            fetch(`${server.baseUrl}/pets`).then((response) => response.status),
          ),
        )
      expect(await flood(40)).toContain(429)
      const key = server.keys.created.find((entry) => entry.plan === 'enterprise')?.key as string
      // A key the gateway has not seen yet, preflighted (JSON and Authorization), during more flood.
      const [created, during] = await Promise.all([
        fetchFromApp(
          `${server.baseUrl}/pets`,
          {
            method: 'POST',
            headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
            body: JSON.stringify({ name: 'Flood', categoryId: 2 }),
          },
          app,
        ),
        flood(20),
      ])
      expect(during.every((status) => status === 429)).toBe(true)
      expect(created.status).toBe(201)
      expect(created.body.name).toBe('Flood')
      const read = await fetchFromApp(
        `${server.baseUrl}${created.headers.location?.replace(/^.*\/v1/, '')}`,
        {
          headers: { Authorization: `Bearer ${key}` },
        },
      )
      expect(read.status).toBe(200)
      expect(read.body.name).toBe('Flood')
    })
  })
}
