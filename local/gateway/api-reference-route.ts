import { execFile } from 'node:child_process'
import { readFile, stat } from 'node:fs/promises'
import type { RequestListener, ServerResponse } from 'node:http'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

/**
 * The API reference at http://HOST:PORT/docs, outside /v1 (no key needed): `openapi/openapi.json`
 * rendered by Redocly's `build-docs` into one HTML file with its scripts inlined, so it reads
 * offline. `npm run docs` writes the same file; the server builds it on the first visit when it is
 * missing or older than the document.
 */
export const API_REFERENCE_PATH = '/docs'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const DOCUMENT = join(ROOT, 'openapi', 'openapi.json')
/** What `npm run docs` writes (git-ignored: 2.5 MB of scripts, rebuilt from the document). */
export const API_REFERENCE_FILE = join(ROOT, 'docs', 'api-reference.html')

/** What `npm run docs` and the server run: Redocly CLI's build-docs, its scripts inlined. */
const BUILD_DOCS_ARGUMENTS = [
  'build-docs',
  DOCUMENT,
  '--inlineBundle',
  '--title',
  'Pet store API reference',
  '--output',
  API_REFERENCE_FILE,
]

const mtime = async (file: string): Promise<number | undefined> =>
  (await stat(file).catch(() => undefined))?.mtimeMs

let building: Promise<void> | undefined

/** Builds the page unless it is newer than the document (or `force`); one build at a time. */
export const ensureApiReference = ({ force = false } = {}): Promise<void> => {
  building ??= (async () => {
    const [page, document] = await Promise.all([mtime(API_REFERENCE_FILE), mtime(DOCUMENT)])
    if (!force && page !== undefined && document !== undefined && page >= document) return
    await promisify(execFile)(
      process.execPath,
      [join(ROOT, 'node_modules', '@redocly', 'cli', 'bin', 'cli.js'), ...BUILD_DOCS_ARGUMENTS],
      { cwd: ROOT, env: { ...process.env, REDOCLY_TELEMETRY: 'off' }, timeout: 60_000 },
    )
  })().finally(() => {
    building = undefined
  })
  return building
}

const sendError = (res: ServerResponse, status: number, code: string, message: string) => {
  const body = JSON.stringify({ code, message, status })
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
  })
  res.end(body)
}

/** `listener`, with GET /docs answered by the API reference page. */
export const withApiReference =
  (
    listener: RequestListener,
    onError: (message: string, error: unknown) => void,
  ): RequestListener =>
  (req, res) => {
    const path = (req.url ?? '/').split('?')[0]
    const isPage = path === API_REFERENCE_PATH || path === `${API_REFERENCE_PATH}/`
    // Other methods get the gateway's route_not_found, as any path outside the API's routes.
    if (!isPage || (req.method !== 'GET' && req.method !== 'HEAD')) return listener(req, res)
    ensureApiReference()
      .then(() => readFile(API_REFERENCE_FILE))
      .then(
        (page) => {
          res.writeHead(200, {
            'Content-Type': 'text/html; charset=utf-8',
            'Content-Length': page.length,
            'Cache-Control': 'no-cache',
          })
          res.end(req.method === 'HEAD' ? undefined : page)
        },
        (error: unknown) => {
          onError('Building the API reference failed', error)
          sendError(
            res,
            500,
            'internal_error',
            'The API reference could not be built: run npm run docs to see why.',
          )
        },
      )
  }
