import { readFileSync } from 'node:fs'
import { SourceMap } from 'node:module'
import { fileURLToPath } from 'node:url'

/**
 * Readable stack traces without `--enable-source-maps`: that flag makes Node parse every
 * bundle's source map at start (about 11% more process time and 8 MB per cold start, measured by
 * `npm run bench`), for the rare invocation that logs an error. Here a bundle's `.map` file is
 * read only when an error is about to be logged, and its frames are rewritten to the TypeScript
 * source. Frames of files without a map beside them (tsx in development, Node internals) stay
 * as they are.
 */

const maps = new Map<string, SourceMap | null>()

const mapOf = (file: string): SourceMap | null => {
  let map = maps.get(file)
  if (map === undefined) {
    try {
      map = new SourceMap(JSON.parse(readFileSync(`${file}.map`, 'utf8')))
    } catch {
      map = null
    }
    maps.set(file, map)
  }
  return map
}

/** `at fn (file:///var/task/index.mjs:1:2345)` and `at file:///var/task/index.mjs:1:2345`. */
const FRAME = /((?:file:\/\/)?\/[^\s():]+\.m?js):(\d+):(\d+)/g

export const originalStack = (stack: string): string =>
  stack.replace(FRAME, (frame: string, file: string, line: string, column: string) => {
    const path = file.startsWith('file://') ? fileURLToPath(file) : file
    const entry = mapOf(path)?.findEntry(Number(line) - 1, Number(column) - 1)
    if (!entry || !('originalSource' in entry)) return frame
    return `${entry.originalSource}:${entry.originalLine + 1}:${entry.originalColumn + 1}`
  })

/** The error itself, its stack (and its causes' stacks) mapped to the sources, for logging. */
export const withOriginalStack = <T>(error: T): T => {
  let current: unknown = error
  for (let depth = 0; current instanceof Error && depth < 5; depth += 1) {
    if (current.stack) current.stack = originalStack(current.stack)
    current = current.cause
  }
  return error
}
