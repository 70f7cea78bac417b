// biome-ignore-all lint/suspicious/noTemplateCurlyInString: IAM policy variables are written ${name} in policies
import { describe, expect, it } from 'vitest'
import { type ConditionBlock, compileCondition } from '#local/iam/iam-condition-operators.ts'
import { normalizeContext, type RequestContext } from '#local/iam/iam-patterns.ts'

/** Condition operators as "IAM JSON policy elements: Condition operators" defines them. */
const holds = (block: ConditionBlock, context: RequestContext = {}, variables = true) => {
  const test = compileCondition(block, variables)
  return test === undefined ? true : test(normalizeContext(context))
}

describe('IAM condition operators', () => {
  it('takes an absent key as false, but true for a negated operator and for ...IfExists', () => {
    expect(holds({ StringEquals: { 'aws:PrincipalTag/team': 'a' } })).toBe(false)
    expect(holds({ StringNotEquals: { 'aws:PrincipalTag/team': 'a' } })).toBe(true)
    expect(holds({ ArnNotLike: { 'aws:SourceArn': 'arn:aws:sns:*:*:t' } })).toBe(true)
    expect(holds({ StringEqualsIfExists: { 'aws:PrincipalTag/team': 'a' } })).toBe(true)
    // "a Deny with StringNotEqualsIfExists still denies when the key is missing"
    expect(holds({ StringNotEqualsIfExists: { 'aws:PrincipalTag/team': 'a' } })).toBe(true)
  })

  it('ORs the values of one key, ANDs keys and operators; a negated operator matches none', () => {
    const block = {
      StringEquals: { 'aws:RequestedRegion': ['eu-west-1', 'eu-central-1'], 'aws:username': 'ana' },
      Bool: { 'aws:SecureTransport': 'true' },
    }
    const context = {
      'aws:RequestedRegion': 'eu-central-1',
      'aws:username': 'ana',
      'aws:SecureTransport': true,
    }
    expect(holds(block, context)).toBe(true)
    expect(holds(block, { ...context, 'aws:SecureTransport': 'false' })).toBe(false)
    expect(holds(block, { ...context, 'aws:username': 'bob' })).toBe(false)
    expect(
      holds(
        { StringNotEquals: { 'aws:RequestedRegion': ['eu-west-1', 'us-east-1'] } },
        { 'aws:RequestedRegion': 'us-east-1' },
      ),
    ).toBe(false)
    expect(
      holds(
        { StringNotEquals: { 'aws:RequestedRegion': ['eu-west-1', 'us-east-1'] } },
        { 'aws:RequestedRegion': 'ap-south-1' },
      ),
    ).toBe(true)
  })

  it('compares strings with and without case, Bool without it, and reads keys without it', () => {
    expect(holds({ StringEquals: { 'aws:username': 'Ana' } }, { 'AWS:USERNAME': 'ana' })).toBe(
      false,
    )
    expect(
      holds({ StringEqualsIgnoreCase: { 'aws:username': 'Ana' } }, { 'AWS:USERNAME': 'ana' }),
    ).toBe(true)
    expect(
      holds(
        { Bool: { 'aws:MultiFactorAuthPresent': 'TRUE' } },
        { 'aws:MultiFactorAuthPresent': true },
      ),
    ).toBe(true)
    expect(holds({ stringlike: { 'aws:username': 'a*' } }, { 'aws:username': 'ana' })).toBe(true)
  })

  it('compares numbers and dates, and addresses in IPv4 and IPv6 ranges', () => {
    expect(holds({ NumericLessThanEquals: { 's3:max-keys': '10' } }, { 's3:max-keys': '10' })).toBe(
      true,
    )
    expect(holds({ NumericLessThan: { 's3:max-keys': '10' } }, { 's3:max-keys': 'ten' })).toBe(
      false,
    )
    expect(
      holds(
        { DateGreaterThan: { 'aws:CurrentTime': '2026-01-01T00:00:00Z' } },
        { 'aws:CurrentTime': '2026-07-01T00:00:00Z' },
      ),
    ).toBe(true)
    expect(
      holds({ DateLessThan: { 'aws:EpochTime': '1700000000' } }, { 'aws:EpochTime': '1600000000' }),
    ).toBe(true)
    // The page's example: IPv4 and IPv6 ranges of one organization.
    const ranges = { IpAddress: { 'aws:SourceIp': ['203.0.113.0/24', '2001:DB8:1234:5678::/64'] } }
    expect(holds(ranges, { 'aws:SourceIp': '203.0.113.7' })).toBe(true)
    expect(holds(ranges, { 'aws:SourceIp': '203.0.114.7' })).toBe(false)
    expect(holds(ranges, { 'aws:SourceIp': '2001:db8:1234:5678:abcd::1' })).toBe(true)
    expect(holds(ranges, { 'aws:SourceIp': '2001:db8:1234:5679::1' })).toBe(false)
    expect(
      holds(
        { NotIpAddress: { 'aws:SourceIp': '203.0.113.0/24' } },
        { 'aws:SourceIp': '198.51.100.1' },
      ),
    ).toBe(true)
  })

  it('reads Null, ForAllValues and ForAnyValue, negated set forms too', () => {
    expect(holds({ Null: { 'aws:TokenIssueTime': 'false' } }, { 'aws:TokenIssueTime': 'x' })).toBe(
      true,
    )
    expect(holds({ Null: { 'aws:TokenIssueTime': 'false' } })).toBe(false)
    const tags = (...keys: string[]) => ({ 'aws:TagKeys': keys })
    expect(holds({ 'ForAllValues:StringEquals': { 'aws:TagKeys': ['a', 'b'] } }, tags('a'))).toBe(
      true,
    )
    expect(
      holds({ 'ForAllValues:StringEquals': { 'aws:TagKeys': ['a', 'b'] } }, tags('a', 'c')),
    ).toBe(false)
    expect(holds({ 'ForAnyValue:StringEquals': { 'aws:TagKeys': ['a'] } }, tags('c', 'a'))).toBe(
      true,
    )
    expect(holds({ 'ForAnyValue:StringNotEquals': { 'aws:TagKeys': ['a'] } }, tags('a'))).toBe(
      false,
    )
    expect(
      holds({ 'ForAllValues:StringNotLike': { 'aws:TagKeys': ['secret*'] } }, tags('a', 'b')),
    ).toBe(true)
    expect(() => holds({ 'ForSomeValues:StringEquals': { 'aws:TagKeys': 'a' } })).toThrow(
      'Unknown set operator',
    )
  })

  it('substitutes policy variables in values; a variable value is never a wildcard', () => {
    const own = { StringLike: { 's3:prefix': 'home/${aws:username}/*' } }
    expect(holds(own, { 'aws:username': 'ana', 's3:prefix': 'home/ana/docs' })).toBe(true)
    expect(holds(own, { 'aws:username': 'ana', 's3:prefix': 'home/bob/docs' })).toBe(false)
    expect(holds(own, { 'aws:username': '*', 's3:prefix': 'home/bob/docs' })).toBe(false)
    expect(
      holds(
        { ArnEquals: { 'aws:SourceArn': 'arn:aws:sns:${aws:RequestedRegion}:1:t' } },
        { 'aws:RequestedRegion': 'eu-west-1', 'aws:SourceArn': 'arn:aws:sns:eu-west-1:1:t' },
      ),
    ).toBe(true)
    // An old policy version has no variables: the text is compared as it stands.
    expect(
      holds(
        { StringEquals: { 'aws:username': '${aws:username}' } },
        { 'aws:username': 'ana' },
        false,
      ),
    ).toBe(false)
  })
})
