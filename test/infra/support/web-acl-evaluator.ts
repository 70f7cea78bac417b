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
 * modelled; any other fails the test that meets it.
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

/** WAF's text transformations the stage uses ("Text transformations", AWS WAF Developer Guide). */
export const transform = (value: string, transformations: { Type: string }[]): string =>
  [...transformations]
    .sort(
      (a, b) =>
        ((a as { Priority?: number }).Priority ?? 0) - ((b as { Priority?: number }).Priority ?? 0),
    )
    .reduce((text, { Type }) => {
      if (Type === 'NONE') return text
      if (Type === 'LOWERCASE') return text.toLowerCase()
      // \f \t \n \r \v and the non-breaking space become spaces; runs of spaces become one.
      if (Type === 'COMPRESS_WHITE_SPACE')
        return text.replace(/[\f\t\n\r\v\u00a0]/g, ' ').replace(/ {2,}/g, ' ')
      throw new Error(`text transformation ${Type} is not modelled here`)
    }, value)

/** An address as a number and its width in bits: IPv4 (32) or IPv6 (128, `::` shortening read). */
const addressBits = (address: string): { value: bigint; bits: 32 | 128 } | undefined => {
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

const fieldValue = (field: Record<string, unknown>, request: WafRequest): string | undefined => {
  if ('Method' in field) return request.method
  const header = field.SingleHeader as { Name: string } | undefined
  if (header?.Name === 'authorization') return request.authorization
  throw new Error(`field ${JSON.stringify(field)} is not modelled here`)
}

/** Whether a (non rate-based) statement matches a request. */
export const statementMatches = (
  statement: Statement,
  request: WafRequest,
  resources: Resources = {},
): boolean => {
  const [[type, body]] = Object.entries(statement) as [[string, Record<string, unknown>]]
  if (type === 'AndStatement') {
    return (body.Statements as Statement[]).every((inner) =>
      statementMatches(inner, request, resources),
    )
  }
  if (type === 'OrStatement') {
    return (body.Statements as Statement[]).some((inner) =>
      statementMatches(inner, request, resources),
    )
  }
  if (type === 'NotStatement')
    return !statementMatches(body.Statement as Statement, request, resources)
  if (type === 'IPSetReferenceStatement') {
    return ipSetAddresses(resources, body.Arn).some((cidr) => inCidr(request.ip, cidr))
  }
  const field = body.FieldToMatch as Record<string, unknown>
  if (type === 'SizeConstraintStatement' && 'Body' in field) {
    return (request.bodyBytes ?? 0) > (body.Size as number)
  }
  const raw = fieldValue(field, request)
  if (raw === undefined) return false
  const value = transform(raw, body.TextTransformations as { Type: string }[])
  if (type === 'ByteMatchStatement') {
    const search = body.SearchString as string
    if (body.PositionalConstraint === 'STARTS_WITH') return value.startsWith(search)
    if (body.PositionalConstraint === 'EXACTLY') return value === search
  }
  if (type === 'SizeConstraintStatement') {
    const size = body.Size as number
    if (body.ComparisonOperator === 'GE') return value.length >= size
    if (body.ComparisonOperator === 'LE') return value.length <= size
  }
  throw new Error(`statement ${type} ${JSON.stringify(body)} is not modelled here`)
}

/** The aggregation instance a rate-based rule counts a request in (undefined: not counted). */
const instanceOf = (rate: Record<string, unknown>, request: WafRequest): string | undefined => {
  if (rate.AggregateKeyType === 'IP') return request.ip
  if (rate.AggregateKeyType === 'CUSTOM_KEYS') {
    const keys = rate.CustomKeys as {
      Header?: { Name: string; TextTransformations: { Type: string }[] }
    }[]
    const parts = keys.map((key) => {
      if (!key.Header) throw new Error(`custom key ${JSON.stringify(key)} is not modelled here`)
      const value = fieldValue({ SingleHeader: { Name: key.Header.Name } }, request)
      return value === undefined ? undefined : transform(value, key.Header.TextTransformations)
    })
    return parts.some((part) => part === undefined) ? undefined : JSON.stringify(parts)
  }
  throw new Error(`aggregation ${String(rate.AggregateKeyType)} is not modelled here`)
}

/** A web ACL's evaluator, holding its rate-based counts across the requests it is given. */
export const webAclEvaluator = (acl: CfnResource, resources: Resources) => {
  const rules = [...((acl.Properties?.Rules as Rule[]) ?? [])].sort(
    (a, b) => a.Priority - b.Priority,
  )
  /** Per rule and instance: the times counted, oldest first. */
  const counts = new Map<string, number[]>()
  const starts = new Map<string, number>()
  const countWithin = (id: string, at: number, windowSeconds: number): number => {
    const times = counts.get(id) ?? []
    counts.set(id, times)
    times.push(at)
    let start = starts.get(id) ?? 0
    while ((times[start] as number) <= at - windowSeconds) start += 1
    starts.set(id, start)
    return times.length - start
  }
  return (request: WafRequest): WafVerdict => {
    for (const rule of rules) {
      const rate = rule.Statement.RateBasedStatement
      let matched: boolean
      if (rate) {
        const scopeDown = rate.ScopeDownStatement as Statement | undefined
        const instance =
          scopeDown === undefined || statementMatches(scopeDown, request, resources)
            ? instanceOf(rate, request)
            : undefined
        matched =
          instance !== undefined &&
          countWithin(
            `${rule.Name}\u0000${instance}`,
            request.at,
            rate.EvaluationWindowSec as number,
          ) > (rate.Limit as number)
      } else {
        matched = statementMatches(rule.Statement, request, resources)
      }
      if (matched && rule.Action.Block) {
        return {
          blockedBy: rule.Name,
          status: rule.Action.Block.CustomResponse?.ResponseCode ?? 403,
        }
      }
    }
    return { blockedBy: undefined, status: undefined }
  }
}
