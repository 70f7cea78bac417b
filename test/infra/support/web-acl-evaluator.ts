import type { CfnResource } from './synth-app.ts'

/**
 * A synthesized web ACL evaluated on a stream of requests, as AWS WAF evaluates it: rules in
 * priority order, the first blocking rule ends a request's evaluation (a rule after it neither
 * counts nor sees it), a rate-based rule counts only requests its scope-down statement matches,
 * per aggregation instance (source address, or a header after its text transformations), over
 * its evaluation window looking back from each request, and blocks the requests past its limit.
 * WAF itself checks the counts about every 10 seconds and "does not guarantee an exact limit
 * match" (rate-based rule high-level settings, AWS WAF Developer Guide): this is the rule as
 * written, the bound the stage is designed to. Only the statements the stage's web ACL uses are
 * modelled; any other fails the test that meets it. Each statement is read once, into a function
 * of the request: a flood test evaluates hundreds of thousands of requests against one web ACL.
 */
export interface WafRequest {
  /** Seconds since the start of the stream. */
  at: number
  ip: string
  method: string
  authorization?: string
  bodyBytes?: number
}

export interface WafVerdict {
  /** The blocking rule's name, or undefined when the request reaches API Gateway. */
  blockedBy: string | undefined
  status: number | undefined
}

type Statement = Record<string, Record<string, unknown>>
interface Rule {
  Name: string
  Priority: number
  Statement: Statement
  Action: { Block?: { CustomResponse?: { ResponseCode: number } } }
}
type Resources = Record<string, CfnResource>

type Transformation = { Type: string; Priority?: number }

/** WAF's text transformations the stage uses, in priority order, as one function of the text. */
const compileTransform = (transformations: Transformation[]): ((text: string) => string) => {
  const steps = [...transformations]
    .sort((a, b) => (a.Priority ?? 0) - (b.Priority ?? 0))
    .map(({ Type }): ((text: string) => string) => {
      if (Type === 'NONE') return (text) => text
      if (Type === 'LOWERCASE') return (text) => text.toLowerCase()
      // \f \t \n \r \v and the non-breaking space become spaces; runs of spaces become one.
      if (Type === 'COMPRESS_WHITE_SPACE')
        return (text) => text.replace(/[\f\t\n\r\v\u00a0]/g, ' ').replace(/ {2,}/g, ' ')
      return () => {
        throw new Error(`text transformation ${Type} is not modelled here`)
      }
    })
  return (text) => steps.reduce((value, step) => step(value), text)
}

/** WAF's text transformations the stage uses ("Text transformations", AWS WAF Developer Guide). */
export const transform = (value: string, transformations: Transformation[]): string =>
  compileTransform(transformations)(value)

/** An address as a number and its width in bits: IPv4 (32) or IPv6 (128, `::` shortening read). */
const parseAddress = (address: string): { value: bigint; bits: 32 | 128 } | undefined => {
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(address)) {
    return {
      value: address.split('.').reduce((sum, part) => sum * 256n + BigInt(part), 0n),
      bits: 32,
    }
  }
  if (!address.includes(':')) return undefined
  const [head = '', tail] = address.split('::') as [string, string | undefined]
  const groups = (text: string) => (text === '' ? [] : text.split(':'))
  const missing = 8 - groups(head).length - groups(tail ?? '').length
  const all = [
    ...groups(head),
    ...(tail === undefined ? [] : Array(missing).fill('0')),
    ...groups(tail ?? ''),
  ]
  if (all.length !== 8) return undefined
  return { value: all.reduce((sum, group) => sum * 65536n + BigInt(`0x${group}`), 0n), bits: 128 }
}

/** Addresses read once each: a flood sends from a few addresses many times. */
const parsedAddresses = new Map<string, ReturnType<typeof parseAddress>>()
const addressBits = (address: string): ReturnType<typeof parseAddress> => {
  if (!parsedAddresses.has(address)) parsedAddresses.set(address, parseAddress(address))
  return parsedAddresses.get(address)
}

const ipSetAddresses = (resources: Resources, arn: unknown): string[] => {
  const id = (arn as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0]
  return (resources[id]?.Properties?.Addresses as string[] | undefined) ?? []
}

/** Whether `ip` is in `cidr`, of the same IP version (WAF's IP sets hold one version each). */
export const inCidr = (ip: string, cidr: string): boolean => {
  const [base = '', prefix] = cidr.split('/')
  const address = addressBits(ip)
  const network = addressBits(base)
  if (!address || !network || address.bits !== network.bits) return false
  const shift = BigInt(address.bits - Number(prefix ?? address.bits))
  return address.value >> shift === network.value >> shift
}

/** A field's value in a request; a field not modelled fails the request that reads it. */
const compileField = (
  field: Record<string, unknown>,
): ((request: WafRequest) => string | undefined) => {
  if ('Method' in field) return (request) => request.method
  const header = field.SingleHeader as { Name: string } | undefined
  if (header?.Name === 'authorization') return (request) => request.authorization
  return () => {
    throw new Error(`field ${JSON.stringify(field)} is not modelled here`)
  }
}

type Matcher = (request: WafRequest) => boolean

/** A (non rate-based) statement as a function of the request. */
const compileStatement = (statement: Statement, resources: Resources): Matcher => {
  const [[type, body]] = Object.entries(statement) as [[string, Record<string, unknown>]]
  if (type === 'AndStatement') {
    const inner = (body.Statements as Statement[]).map((one) => compileStatement(one, resources))
    return (request) => inner.every((matches) => matches(request))
  }
  if (type === 'OrStatement') {
    const inner = (body.Statements as Statement[]).map((one) => compileStatement(one, resources))
    return (request) => inner.some((matches) => matches(request))
  }
  if (type === 'NotStatement') {
    const inner = compileStatement(body.Statement as Statement, resources)
    return (request) => !inner(request)
  }
  if (type === 'IPSetReferenceStatement') {
    // Read at each request: a test may change a set's addresses between requests, as the
    // automatic block's UpdateIPSet does.
    return (request) => ipSetAddresses(resources, body.Arn).some((cidr) => inCidr(request.ip, cidr))
  }
  const field = body.FieldToMatch as Record<string, unknown>
  if (type === 'SizeConstraintStatement' && 'Body' in field) {
    return (request) => (request.bodyBytes ?? 0) > (body.Size as number)
  }
  const fieldOf = compileField(field)
  const transformed = compileTransform(body.TextTransformations as Transformation[])
  const test = ((): ((value: string) => boolean) | undefined => {
    if (type === 'ByteMatchStatement') {
      const search = body.SearchString as string
      if (body.PositionalConstraint === 'STARTS_WITH') return (value) => value.startsWith(search)
      if (body.PositionalConstraint === 'EXACTLY') return (value) => value === search
    }
    if (type === 'SizeConstraintStatement') {
      const size = body.Size as number
      if (body.ComparisonOperator === 'GE') return (value) => value.length >= size
      if (body.ComparisonOperator === 'LE') return (value) => value.length <= size
    }
    return undefined
  })()
  return (request) => {
    const raw = fieldOf(request)
    if (raw === undefined) return false
    const value = transformed(raw)
    if (!test) throw new Error(`statement ${type} ${JSON.stringify(body)} is not modelled here`)
    return test(value)
  }
}

/** Whether a (non rate-based) statement matches a request. */
export const statementMatches = (
  statement: Statement,
  request: WafRequest,
  resources: Resources = {},
): boolean => compileStatement(statement, resources)(request)

/** The aggregation instance a rate-based rule counts a request in (undefined: not counted). */
const compileInstance = (
  rate: Record<string, unknown>,
): ((request: WafRequest) => string | undefined) => {
  if (rate.AggregateKeyType === 'IP') return (request) => request.ip
  if (rate.AggregateKeyType === 'CUSTOM_KEYS') {
    const keys = (
      rate.CustomKeys as { Header?: { Name: string; TextTransformations: Transformation[] } }[]
    ).map((key) => {
      if (!key.Header) throw new Error(`custom key ${JSON.stringify(key)} is not modelled here`)
      const fieldOf = compileField({ SingleHeader: { Name: key.Header.Name } })
      const transformed = compileTransform(key.Header.TextTransformations)
      return (request: WafRequest) => {
        const value = fieldOf(request)
        return value === undefined ? undefined : transformed(value)
      }
    })
    return (request) => {
      const parts = keys.map((part) => part(request))
      return parts.some((part) => part === undefined) ? undefined : JSON.stringify(parts)
    }
  }
  throw new Error(`aggregation ${String(rate.AggregateKeyType)} is not modelled here`)
}

/** One rule as a function of the request: whether it blocks it, counting it where it counts. */
const compileRule = (rule: Rule, resources: Resources): Matcher => {
  const rate = rule.Statement.RateBasedStatement
  if (!rate) return compileStatement(rule.Statement, resources)
  const scopeDown = rate.ScopeDownStatement as Statement | undefined
  const inScope = scopeDown === undefined ? () => true : compileStatement(scopeDown, resources)
  const instanceOf = compileInstance(rate)
  const windowSeconds = rate.EvaluationWindowSec as number
  const limit = rate.Limit as number
  /** Per instance: the times counted, oldest first, and where the window starts in them. */
  const counts = new Map<string, { times: number[]; start: number }>()
  return (request) => {
    const instance = inScope(request) ? instanceOf(request) : undefined
    if (instance === undefined) return false
    let count = counts.get(instance)
    if (!count) {
      count = { times: [], start: 0 }
      counts.set(instance, count)
    }
    count.times.push(request.at)
    while ((count.times[count.start] as number) <= request.at - windowSeconds) count.start += 1
    return count.times.length - count.start > limit
  }
}

/** A web ACL's evaluator, holding its rate-based counts across the requests it is given. */
export const webAclEvaluator = (acl: CfnResource, resources: Resources) => {
  const rules = [...((acl.Properties?.Rules as Rule[]) ?? [])]
    .sort((a, b) => a.Priority - b.Priority)
    .map((rule) => ({ rule, matches: compileRule(rule, resources) }))
  return (request: WafRequest): WafVerdict => {
    for (const { rule, matches } of rules) {
      if (matches(request) && rule.Action.Block) {
        return {
          blockedBy: rule.Name,
          status: rule.Action.Block.CustomResponse?.ResponseCode ?? 403,
        }
      }
    }
    return { blockedBy: undefined, status: undefined }
  }
}
