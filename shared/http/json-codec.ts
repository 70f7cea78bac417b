import { HttpError } from '#shared/errors/http-error.ts'

/**
 * JSON that keeps int64 values exact. Integer literals outside the safe range are revived
 * as BigInt from their source text (JSON.parse source access, Node 22+), and BigInt values
 * are written back verbatim with JSON.rawJSON. Everything else is plain JSON.
 */

interface ReviverContext {
  source?: string
}

declare global {
  interface JSON {
    rawJSON(text: string): unknown
  }
}

const INTEGER_LITERAL = /^-?\d+$/

function reviveExactIntegers(key: string, value: unknown, context?: ReviverContext): unknown {
  // Never let a body redefine prototypes: stricter than @middy/util's jsonParseProtectProto
  // (any object under `constructor`, not only one with a `prototype`), and a 400 invalid_json.
  if (
    key === '__proto__' ||
    (key === 'constructor' && typeof value === 'object' && value !== null)
  ) {
    throw new HttpError('invalid_json', { message: `Forbidden member "${key}" in JSON body.` })
  }
  if (
    typeof value === 'number' &&
    !Number.isSafeInteger(value) &&
    context?.source !== undefined &&
    INTEGER_LITERAL.test(context.source)
  ) {
    return BigInt(context.source)
  }
  return value
}

export const parseJson = (text: string): unknown =>
  JSON.parse(text, reviveExactIntegers as (key: string, value: unknown) => unknown)

const writeBigInts = (_key: string, value: unknown): unknown =>
  typeof value === 'bigint' ? JSON.rawJSON(value.toString()) : value

export const stringifyJson = (value: unknown): string => JSON.stringify(value, writeBigInts)
