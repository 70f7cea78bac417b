// A statement's Condition block compiled to one function of the request context.
import {
  arnLike,
  type ContextValue,
  hasVariables,
  markLiteral,
  stringLike,
  substituteVariables,
} from './iam-patterns.ts'

/**
 * The semantics are those of the IAM User Guide ("IAM JSON policy elements: Condition operators",
 * "Condition element", "Set operators for multivalued context keys"):
 * - every operator of a block and every key of an operator must be true (AND); the values listed
 *   for one key are alternatives (OR), and a negated operator (`StringNotEquals`, `ArnNotLike`, …)
 *   is true when the context value matches none of them;
 * - a key the request does not have makes the condition false, except for a negated operator,
 *   which is then true, `…IfExists`, which is then true, and `Null`;
 * - `ForAllValues:` is true when every context value matches (and when the key is missing or
 *   empty); `ForAnyValue:` when at least one does (false when missing or empty);
 * - keys are case-insensitive, values case-sensitive but for `…IgnoreCase` and `Bool`.
 * A single-valued operator given a multivalued context key matches when any value does (as a
 * negated one, when none does). An operator this module does not know fails the compilation:
 * a policy is never evaluated as if a condition it cannot read were true.
 */
export type ConditionBlock = Record<string, Record<string, unknown>>
export type ConditionTest = (context: Map<string, ContextValue>) => boolean

type ValueTest = (contextValue: string) => boolean
interface Operator {
  /** One policy value compiled to a test of one context value. */
  compile(policyValue: string): ValueTest
  negated: boolean
}

const number = (value: string): number => (value.trim() === '' ? Number.NaN : Number(value))

/** ISO 8601 (`2026-07-01T00:00:00Z`) or seconds since the epoch, as IAM takes dates. */
const date = (value: string): number =>
  /^\d+$/.test(value) ? Number(value) * 1000 : Date.parse(value)

/** An IPv4 or IPv6 address (or CIDR) as a bit string and its prefix length. */
const parseIp = (text: string): { bits: string; prefix: number } | undefined => {
  const [address = '', prefixText] = text.trim().split('/')
  let bits: string
  if (address.includes(':')) {
    const [head = '', tail] = address.split('::')
    const groups = (part: string) => (part === '' ? [] : part.split(':'))
    const left = groups(head)
    const right = tail === undefined ? [] : groups(tail)
    const fill = tail === undefined ? 0 : 8 - left.length - right.length
    const all = [...left, ...Array(fill).fill('0'), ...right]
    if (all.length !== 8 || all.some((g) => !/^[0-9a-f]{1,4}$/i.test(g))) return undefined
    bits = all.map((g) => Number.parseInt(g, 16).toString(2).padStart(16, '0')).join('')
  } else {
    const octets = address.split('.')
    if (octets.length !== 4 || octets.some((o) => !/^\d{1,3}$/.test(o) || Number(o) > 255)) {
      return undefined
    }
    bits = octets.map((o) => Number(o).toString(2).padStart(8, '0')).join('')
  }
  const prefix = prefixText === undefined ? bits.length : Number(prefixText)
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > bits.length) return undefined
  return { bits, prefix }
}

const ipInRange = (range: string): ValueTest => {
  const cidr = parseIp(range)
  return (value) => {
    const ip = parseIp(value)
    return (
      cidr !== undefined &&
      ip !== undefined &&
      ip.bits.length === cidr.bits.length &&
      ip.bits.slice(0, cidr.prefix) === cidr.bits.slice(0, cidr.prefix)
    )
  }
}

const compare =
  (parse: (value: string) => number, test: (a: number, b: number) => boolean) =>
  (policy: string): ValueTest => {
    const b = parse(policy)
    return (value) => {
      const a = parse(value)
      return !Number.isNaN(a) && !Number.isNaN(b) && test(a, b)
    }
  }

const equalsText =
  (policy: string): ValueTest =>
  (value) =>
    value === policy
const equalsIgnoringCase = (policy: string): ValueTest => {
  const lower = policy.toLowerCase()
  return (value) => value.toLowerCase() === lower
}
const like = (policy: string): ValueTest => stringLike(policy)
const arn = (policy: string): ValueTest => arnLike(policy)

const positive = (compile: (policy: string) => ValueTest): Operator => ({ compile, negated: false })
const negative = (compile: (policy: string) => ValueTest): Operator => ({ compile, negated: true })

/** The base operators, by lower-case name (operator names are matched case-insensitively). */
const OPERATORS: Record<string, Operator> = {
  stringequals: positive(equalsText),
  stringnotequals: negative(equalsText),
  stringequalsignorecase: positive(equalsIgnoringCase),
  stringnotequalsignorecase: negative(equalsIgnoringCase),
  stringlike: positive(like),
  stringnotlike: negative(like),
  numericequals: positive(compare(number, (a, b) => a === b)),
  numericnotequals: negative(compare(number, (a, b) => a === b)),
  numericlessthan: positive(compare(number, (a, b) => a < b)),
  numericlessthanequals: positive(compare(number, (a, b) => a <= b)),
  numericgreaterthan: positive(compare(number, (a, b) => a > b)),
  numericgreaterthanequals: positive(compare(number, (a, b) => a >= b)),
  dateequals: positive(compare(date, (a, b) => a === b)),
  datenotequals: negative(compare(date, (a, b) => a === b)),
  datelessthan: positive(compare(date, (a, b) => a < b)),
  datelessthanequals: positive(compare(date, (a, b) => a <= b)),
  dategreaterthan: positive(compare(date, (a, b) => a > b)),
  dategreaterthanequals: positive(compare(date, (a, b) => a >= b)),
  bool: positive(equalsIgnoringCase),
  binaryequals: positive(equalsText),
  ipaddress: positive(ipInRange),
  notipaddress: negative(ipInRange),
  arnequals: positive(arn),
  arnlike: positive(arn),
  arnnotequals: negative(arn),
  arnnotlike: negative(arn),
}

/** Operators whose values take wildcards: a variable's value is text there, never a wildcard. */
const WILDCARD_OPERATORS = new Set([
  'stringlike',
  'stringnotlike',
  'arnequals',
  'arnlike',
  'arnnotequals',
  'arnnotlike',
])

const asStrings = (value: unknown): string[] =>
  (Array.isArray(value) ? value : [value]).map((item) => String(item))

const contextStrings = (value: ContextValue): string[] =>
  (Array.isArray(value) ? value : [value]).map((item) => String(item))

interface ParsedOperator {
  set: 'all' | 'any' | undefined
  base: string
  ifExists: boolean
}

const parseOperator = (name: string): ParsedOperator => {
  const [prefix, rest] = name.includes(':') ? (name.split(':', 2) as [string, string]) : ['', name]
  const set =
    prefix.toLowerCase() === 'forallvalues'
      ? 'all'
      : prefix.toLowerCase() === 'foranyvalue'
        ? 'any'
        : undefined
  if (prefix !== '' && set === undefined) throw new Error(`Unknown set operator in ${name}`)
  const lower = rest.toLowerCase()
  const ifExists = lower.endsWith('ifexists') && lower !== 'ifexists'
  return { set, base: ifExists ? lower.slice(0, -'ifexists'.length) : lower, ifExists }
}

/** `Null`: "true" asks that the key be absent, "false" that it be present. */
const nullTest = (key: string, values: string[]): ConditionTest => {
  const wanted = values.map((v) => v.toLowerCase() === 'true')
  return (context) => {
    const value = context.get(key)
    const absent = value === undefined || (Array.isArray(value) && value.length === 0)
    return wanted.some((wantAbsent) => wantAbsent === absent)
  }
}

const keyTest = (
  operatorName: string,
  key: string,
  policyValues: string[],
  variables: boolean,
): ConditionTest => {
  const { set, base, ifExists } = parseOperator(operatorName)
  if (base === 'null') return nullTest(key, policyValues)
  const operator = OPERATORS[base]
  if (!operator) throw new Error(`Unknown condition operator ${operatorName}`)
  const literal = WILDCARD_OPERATORS.has(base) ? markLiteral : undefined
  const fixed = policyValues
    .filter((v) => !(variables && hasVariables(v)))
    .map((v) => operator.compile(v))
  const templated = policyValues.filter((v) => variables && hasVariables(v))
  /** Whether one context value matches one of the policy's values. */
  const matchesAny = (value: string, context: Map<string, ContextValue>): boolean =>
    fixed.some((test) => test(value)) ||
    templated.some((pattern) => {
      const substituted = substituteVariables(pattern, context, literal)
      return substituted !== undefined && operator.compile(substituted)(value)
    })
  /** The operator's own verdict on one context value (a negated one: matches none). */
  const holds = (value: string, context: Map<string, ContextValue>): boolean =>
    operator.negated ? !matchesAny(value, context) : matchesAny(value, context)
  return (context) => {
    const value = context.get(key)
    const values = value === undefined ? [] : contextStrings(value)
    if (set === 'all') return values.every((v) => holds(v, context))
    if (set === 'any') return values.some((v) => holds(v, context))
    if (value === undefined) return ifExists || operator.negated
    return operator.negated
      ? values.every((v) => holds(v, context))
      : values.some((v) => holds(v, context))
  }
}

/** The whole Condition block as one test; an empty or missing block is always true. */
export const compileCondition = (
  block: ConditionBlock | undefined,
  variables: boolean,
): ConditionTest | undefined => {
  if (!block) return undefined
  const tests: ConditionTest[] = []
  for (const [operatorName, keys] of Object.entries(block)) {
    for (const [key, values] of Object.entries(keys)) {
      tests.push(keyTest(operatorName, key.toLowerCase(), asStrings(values), variables))
    }
  }
  return tests.length === 0 ? undefined : (context) => tests.every((test) => test(context))
}
