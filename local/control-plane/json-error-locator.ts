/**
 * Where and why a text is not JSON, described in words of our own. JSON.parse's messages may quote
 * the text around the error ('Unexpected token ..., "...abc..." is not valid JSON') and some give
 * no position at all, so files that hold secrets are located with this instead: a validating
 * scan (RFC 8259, as JSON.parse reads it) that stops at the first error.
 */
export interface JsonSyntaxProblem {
  /** 1-based, as editors count. */
  line: number
  column: number
  problem: string
}

/** Deeper than any file this project writes; keeps the recursive scan off the stack limit. */
const MAX_DEPTH = 512

class Stop {
  constructor(
    readonly offset: number,
    readonly problem: string,
  ) {}
}

const WHITESPACE = new Set([' ', '\t', '\n', '\r'])
const ESCAPES = new Set(['"', '\\', '/', 'b', 'f', 'n', 'r', 't'])
const isDigit = (char: string | undefined) => char !== undefined && char >= '0' && char <= '9'
const isHex = (char: string | undefined) => char !== undefined && /^[0-9a-fA-F]$/.test(char)

const scan = (text: string): void => {
  let at = 0
  const stop = (offset: number, problem: string) =>
    new Stop(offset, offset >= text.length ? 'the text ends too early' : problem)
  const skipWhitespace = () => {
    while (WHITESPACE.has(text[at] as string)) at += 1
  }
  const string = () => {
    at += 1
    for (;;) {
      const char = text[at]
      if (char === undefined) throw stop(at, 'unterminated string')
      if (char === '"') break
      if (char === '\n' || char === '\r') throw stop(at, 'a string not closed on its line')
      if (char < ' ') throw stop(at, 'control character in a string')
      if (char === '\\') {
        const escaped = text[at + 1]
        if (escaped === 'u') {
          for (let i = 2; i < 6; i += 1) {
            if (!isHex(text[at + i])) throw stop(at + i, 'bad \\u escape in a string')
          }
          at += 6
          continue
        }
        if (!ESCAPES.has(escaped as string)) throw stop(at + 1, 'bad escape in a string')
        at += 2
        continue
      }
      at += 1
    }
    at += 1
  }
  const digits = (what: string) => {
    if (!isDigit(text[at])) throw stop(at, what)
    while (isDigit(text[at])) at += 1
  }
  const number = () => {
    if (text[at] === '-') at += 1
    if (text[at] === '0') at += 1
    else digits('a number without digits')
    if (text[at] === '.') {
      at += 1
      digits('a number without digits after the point')
    }
    if (text[at] === 'e' || text[at] === 'E') {
      at += 1
      if (text[at] === '+' || text[at] === '-') at += 1
      digits('a number without digits in its exponent')
    }
  }
  const value = (depth: number): void => {
    skipWhitespace()
    const char = text[at]
    if (char === '{' || char === '[') {
      if (depth >= MAX_DEPTH) throw stop(at, 'nested too deeply')
      const close = char === '{' ? '}' : ']'
      at += 1
      skipWhitespace()
      if (text[at] === close) {
        at += 1
        return
      }
      for (;;) {
        if (close === '}') {
          skipWhitespace()
          if (text[at] !== '"') throw stop(at, 'expected a "quoted" member name')
          string()
          skipWhitespace()
          if (text[at] !== ':') throw stop(at, "expected ':' after a member name")
          at += 1
        }
        value(depth + 1)
        skipWhitespace()
        if (text[at] === close) {
          at += 1
          return
        }
        if (text[at] !== ',') throw stop(at, `expected ',' or '${close}'`)
        at += 1
      }
    }
    if (char === '"') string()
    else if (char === '-' || isDigit(char)) number()
    else {
      const literal = ['true', 'false', 'null'].find((word) => text.startsWith(word, at))
      if (!literal) throw stop(at, 'unexpected character')
      at += literal.length
    }
  }
  value(0)
  skipWhitespace()
  if (at < text.length) throw stop(at, 'more text after the JSON value')
}

const lineAndColumn = (text: string, offset: number) => {
  const before = text.slice(0, offset)
  const lineStart = before.lastIndexOf('\n') + 1
  return { line: before.split('\n').length, column: offset - lineStart + 1 }
}

/** The first syntax error in text, or undefined if it is JSON. Never quotes the text. */
export const locateJsonError = (text: string): JsonSyntaxProblem | undefined => {
  try {
    scan(text)
    return undefined
  } catch (error) {
    if (!(error instanceof Stop)) throw error
    return { ...lineAndColumn(text, error.offset), problem: error.problem }
  }
}

/**
 * The value of a file's text, or the error `toError` makes of a message naming the file and the
 * place: JSON.parse's own message may quote the text around the error, a key value included.
 */
export const parseJsonFile = (
  text: string,
  path: string,
  toError: (message: string) => Error,
): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    const where = locateJsonError(text)
    throw toError(
      where
        ? `${path} is not valid JSON: ${where.problem} at line ${where.line}, column ${where.column}`
        : `${path} is not valid JSON`,
    )
  }
}
