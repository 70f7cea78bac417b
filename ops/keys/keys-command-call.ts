import type { StageTarget } from '#ops/keys/stage-target-resolver.ts'

/**
 * What every command of the keys CLI is given (keys-command-table.ts) and the small words they
 * share: the usage error, "did you mean", names made safe for a terminal, aligned tables.
 */

/** The options as the command line gave them (node:util parseArgs). */
export type OptionValues = Record<string, string | boolean | undefined>

/** What a command prints: one JSON document with --json, else lines for a person. */
export interface Output {
  json: boolean
  stdout: (text: string) => void
  say: (line: string) => void
  /** The keys CLI's command line for this stage, for the commands a message names. */
  keysCommand: string
}

/** One run of one command: the stage, the words after the command's name, the options, output. */
export interface CommandCall {
  target: StageTarget
  args: string[]
  values: OptionValues
  out: Output
  /** Ctrl-C or SIGTERM: a command that waits stops its wait. */
  signal?: AbortSignal | undefined
}

/** A command line the CLI cannot run: exit 2, before any call where the command line tells. */
export class UsageError extends Error {
  override name = 'UsageError'
}

export const stringOption = (values: OptionValues, name: string): string | undefined => {
  const value = values[name]
  return typeof value === 'string' ? value : undefined
}

/** Edit distance, for "did you mean": small words only. */
const distance = (a: string, b: string): number => {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index)
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i]
    for (let j = 1; j <= b.length; j += 1) {
      current[j] = Math.min(
        (previous[j] as number) + 1,
        (current[j - 1] as number) + 1,
        (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1),
      )
    }
    previous = current
  }
  return previous[b.length] as number
}

/** The known word meant by a mistyped or shortened one (`lst` list, `prod` production). */
export const nearestWord = (typed: string, known: readonly string[]): string | undefined => {
  const word = typed.toLowerCase()
  if (word.length === 0) return undefined
  return (
    known.find((candidate) => distance(word, candidate) <= 2) ??
    (word.length >= 3 ? known.find((candidate) => candidate.startsWith(word)) : undefined)
  )
}

/** `: did you mean X?` when a known word is near, else nothing. */
export const didYouMean = (typed: string, known: readonly string[]): string => {
  const near = nearestWord(typed, known)
  return near === undefined ? '' : `: did you mean ${near}?`
}

/** C0 and C1 controls, DEL, and the characters that reorder or break a line on a terminal. */
const UNPRINTABLE = /[\p{Cc}\p{Zl}\p{Zp}\u200e\u200f\u202a-\u202e\u2066-\u2069]/gu
const NAMED_ESCAPES: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' }

/**
 * A name as a terminal may show it: a newline, an escape sequence (ESC …) or a bidi override in
 * a key's name is written as `\n`, `\x1b`, `\u202e`, never sent raw, so a name cannot forge a
 * row of a listing or repaint the operator's screen. A backslash is doubled to keep it exact.
 */
export const printable = (text: string): string =>
  text.replaceAll('\\', '\\\\').replace(UNPRINTABLE, (character) => {
    const named = NAMED_ESCAPES[character]
    if (named) return named
    const code = character.charCodeAt(0)
    return code <= 0xff
      ? `\\x${code.toString(16).padStart(2, '0')}`
      : `\\u${code.toString(16).padStart(4, '0')}`
  })

/** Rows as aligned columns, two spaces apart. */
export const table = (rows: string[][]): string => {
  const widths = rows[0]?.map((_, column) =>
    Math.max(...rows.map((row) => row[column]?.length ?? 0)),
  )
  return rows
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths?.[column] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')
}

export const isoUtc = (epochMs: number) => new Date(epochMs).toISOString().replace(/\.\d{3}Z$/, 'Z')
export const utcDay = (epochMs: number) => new Date(epochMs).toISOString().slice(0, 10)
