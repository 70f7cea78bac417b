// Wildcards, ARNs and policy variables as IAM matches them, compiled once per policy.

/**
 * A policy value's variables (`${aws:username}`, `${aws:PrincipalTag/team, 'none'}`) and the
 * literal escapes `${*}`, `${?}` and `${$}` (IAM User Guide, "IAM policy elements: Variables and
 * tags"). Only a policy of Version 2012-10-17 has variables; in an older one `${…}` is text.
 */
const VARIABLE = /\$\{([^}]*)\}/g
const ESCAPES: Record<string, string> = { '*': '*', '?': '?', $: '$' }

export type ContextValue = string | number | boolean | readonly (string | number | boolean)[]
export type RequestContext = Readonly<Record<string, ContextValue | undefined>>

/** The context with lower-case keys: condition keys and variables are case-insensitive. */
export const normalizeContext = (
  context: RequestContext | undefined,
): Map<string, ContextValue> => {
  const map = new Map<string, ContextValue>()
  for (const [key, value] of Object.entries(context ?? {})) {
    if (value !== undefined) map.set(key.toLowerCase(), value)
  }
  return map
}

export const hasVariables = (value: string): boolean => value.includes('${')

/**
 * The value with its variables replaced from the context, or undefined when one has no value and
 * no default: "If there is no value … the policy element that contains the variable does not
 * match" (the same page). A multivalued key has no single value to put in a string: no match.
 * Escapes stay wildcards-as-text: `${*}` becomes a literal `*`, marked so the matcher keeps it.
 */
export const substituteVariables = (
  value: string,
  context: Map<string, ContextValue>,
  literal: (text: string) => string = (text) => text,
): string | undefined => {
  let missing = false
  const result = value.replace(VARIABLE, (_whole, inner: string) => {
    const escaped = ESCAPES[inner.trim()]
    if (escaped !== undefined) return literal(escaped)
    const [name, ...rest] = inner.split(',')
    const found = context.get((name as string).trim().toLowerCase())
    if (found !== undefined && !Array.isArray(found)) return literal(String(found))
    const fallback = rest.join(',').trim()
    if (rest.length > 0 && /^'.*'$/.test(fallback)) return literal(fallback.slice(1, -1))
    missing = true
    return ''
  })
  return missing ? undefined : result
}

const REGEX_SPECIAL = /[.+^${}()|[\]\\]/g

/** A glob of `*` (any run of characters, none too) and `?` (one character) as an anchored RegExp. */
export const globRegExp = (pattern: string, flags = ''): RegExp =>
  new RegExp(
    `^${pattern
      .replace(REGEX_SPECIAL, '\\$&')
      .replace(/\*/g, '[\\s\\S]*')
      .replace(/\?/g, '[\\s\\S]')}$`,
    flags,
  )

/** Escapes `*` and `?` so a substituted variable's value matches as text, never as a wildcard. */
const LITERAL_STAR = '\uE000'
const LITERAL_QUESTION = '\uE001'
const markLiteral = (text: string): string =>
  text.replace(/\*/g, LITERAL_STAR).replace(/\?/g, LITERAL_QUESTION)

const globWithLiterals = (pattern: string, flags = ''): RegExp => {
  const source = globRegExp(pattern.replace(/[\uE000\uE001]/g, '\uE002'), flags).source
  // Put the literal characters back, escaped, in the order they stood.
  const literals = [...pattern.matchAll(/([\uE000\uE001])/g)].map((m) =>
    m[1] === '\uE000' ? '\\*' : '\\?',
  )
  let index = 0
  return new RegExp(
    source.replace(/\uE002/g, () => literals[index++] as string),
    flags,
  )
}

export type Matcher = (value: string, context: Map<string, ContextValue>) => boolean

/**
 * An action pattern (`dynamodb:Get*`, `*`): case-insensitive, as IAM compares actions ("Action
 * element": "the prefix and the action name are case insensitive").
 */
export const actionMatcher = (patterns: readonly string[]): ((action: string) => boolean) => {
  if (patterns.includes('*')) return () => true
  const exact = new Set<string>()
  const globs: RegExp[] = []
  for (const pattern of patterns) {
    if (/[*?]/.test(pattern)) globs.push(globRegExp(pattern, 'i'))
    else exact.add(pattern.toLowerCase())
  }
  return (action) => exact.has(action.toLowerCase()) || globs.some((glob) => glob.test(action))
}

/** `arn:partition:service:region:account:resource`: the resource part keeps its own colons. */
const arnSegments = (arn: string): string[] | undefined => {
  const parts = arn.split(':')
  if (parts.length < 6 || parts[0] !== 'arn') return undefined
  return [...parts.slice(0, 5), parts.slice(5).join(':')]
}

/**
 * An ARN pattern matched as IAM matches ARNs: each of the six colon-separated parts on its own,
 * each with `*` and `?`, case-sensitive ("Condition operators", ARN condition operators: "Each of
 * the six colon-delimited components of the ARN is checked separately"). A pattern that is not
 * an ARN (`*`) is a plain glob over the whole value.
 */
const arnRegExps = (pattern: string): RegExp[] | RegExp => {
  const segments = arnSegments(pattern)
  if (!segments) return globWithLiterals(pattern)
  return segments.map((segment) => globWithLiterals(segment))
}

const arnMatches = (compiled: RegExp[] | RegExp, value: string): boolean => {
  if (!Array.isArray(compiled)) return compiled.test(value)
  const segments = arnSegments(value)
  return segments !== undefined && compiled.every((part, i) => part.test(segments[i] as string))
}

/**
 * Resource patterns, compiled once; one with variables is compiled per request (its value is
 * the request's). `*` alone matches any resource.
 */
export const resourceMatcher = (patterns: readonly string[], variables: boolean): Matcher => {
  if (patterns.includes('*')) return () => true
  const fixed = patterns.filter((p) => !(variables && hasVariables(p))).map(arnRegExps)
  const templated = patterns.filter((p) => variables && hasVariables(p))
  return (value, context) =>
    fixed.some((compiled) => arnMatches(compiled, value)) ||
    templated.some((pattern) => {
      const substituted = substituteVariables(pattern, context, markLiteral)
      return substituted !== undefined && arnMatches(arnRegExps(substituted), value)
    })
}

/** ArnLike and ArnEquals (which takes the same wildcards) on one pattern. */
export const arnLike = (pattern: string): ((value: string) => boolean) => {
  const compiled = arnRegExps(pattern)
  return (value) => arnMatches(compiled, value)
}

/** StringLike on one pattern, with literal escapes kept literal. */
export const stringLike = (pattern: string): ((value: string) => boolean) => {
  const compiled = globWithLiterals(pattern)
  return (value) => compiled.test(value)
}

export { markLiteral }
