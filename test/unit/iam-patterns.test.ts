// biome-ignore-all lint/suspicious/noTemplateCurlyInString: IAM policy variables are written ${name} in policies
import { describe, expect, it } from 'vitest'
import {
  actionMatcher,
  arnLike,
  normalizeContext,
  resourceMatcher,
  stringLike,
  substituteVariables,
} from '#local/iam/iam-patterns.ts'

/** Wildcards, ARN parts and policy variables, as the IAM User Guide describes them. */
describe('IAM patterns', () => {
  it('matches ARNs part by part: a * never crosses a colon ("ARN condition operators")', () => {
    // The page's own example: StringLike matches, ArnLike does not.
    const pattern = 'arn:aws:someservice:*:111122223333:finance/*'
    const value =
      'arn:aws:someservice:us-east-2:999999999999:store/abc:111122223333:finance/document.txt'
    expect(stringLike(pattern)(value)).toBe(true)
    expect(arnLike(pattern)(value)).toBe(false)
    expect(arnLike(pattern)('arn:aws:someservice:us-east-2:111122223333:finance/a/b.txt')).toBe(
      true,
    )
    // The resource part keeps its own colons, and ? is one character.
    expect(
      arnLike('arn:aws:logs:eu-west-1:1:log-group:/petstore/*:*')(
        'arn:aws:logs:eu-west-1:1:log-group:/petstore/x:log-stream:y',
      ),
    ).toBe(true)
    expect(arnLike('arn:aws:s3:::bucket-?')('arn:aws:s3:::bucket-ab')).toBe(false)
  })

  it('matches actions without regard to case, resources with it', () => {
    const actions = actionMatcher(['dynamodb:Get*', 'sqs:SendMessage'])
    expect(actions('DynamoDB:GetItem')).toBe(true)
    expect(actions('sqs:sendmessage')).toBe(true)
    expect(actions('dynamodb:PutItem')).toBe(false)
    const resources = resourceMatcher(['arn:aws:dynamodb:*:*:table/Pets'], true)
    expect(resources('arn:aws:dynamodb:eu-west-1:1:table/Pets', new Map())).toBe(true)
    expect(resources('arn:aws:dynamodb:eu-west-1:1:table/pets', new Map())).toBe(false)
  })

  it('substitutes variables, defaults and escapes ("IAM policy elements: Variables and tags")', () => {
    const context = normalizeContext({ 'aws:username': 'ana', 'aws:TagKeys': ['a', 'b'] })
    expect(substituteVariables('home/${aws:username}/*', context)).toBe('home/ana/*')
    expect(substituteVariables("${aws:PrincipalTag/team, 'none'}", context)).toBe('none')
    expect(substituteVariables('${aws:PrincipalTag/team}', context)).toBeUndefined()
    // A multivalued key has no one value to put in a string.
    expect(substituteVariables('${aws:TagKeys}', context)).toBeUndefined()
    expect(substituteVariables('a${*}b', context)).toBe('a*b')
    // A variable's value and ${*} are text in a resource, never a wildcard.
    const resources = resourceMatcher(
      ['arn:aws:s3:::home/${aws:username}', 'arn:aws:s3:::star-${*}'],
      true,
    )
    const star = normalizeContext({ 'aws:username': '*' })
    expect(resources('arn:aws:s3:::home/*', star)).toBe(true)
    expect(resources('arn:aws:s3:::home/bob', star)).toBe(false)
    expect(resources('arn:aws:s3:::star-*', star)).toBe(true)
    expect(resources('arn:aws:s3:::star-x', star)).toBe(false)
    // Without Version 2012-10-17, ${...} is plain text.
    expect(
      resourceMatcher(['arn:aws:s3:::home/${aws:username}'], false)(
        'arn:aws:s3:::home/${aws:username}',
        star,
      ),
    ).toBe(true)
  })
})
