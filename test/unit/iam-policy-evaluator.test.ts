// biome-ignore-all lint/suspicious/noTemplateCurlyInString: IAM policy variables are written ${name} in policies
import { describe, expect, it } from 'vitest'
import {
  compilePolicies,
  evaluate,
  type PolicyDocument,
  type PolicySet,
} from '#local/iam/iam-policy-evaluator.ts'

/**
 * The evaluator on AWS's own documented examples: each policy below is the one the cited page of
 * the IAM User Guide shows, and each expectation is the outcome the page states.
 */
const decision = (set: PolicySet, action: string, resource: string, extra = {}) =>
  evaluate({ action, resource, ...extra }, set).decision

describe('"Policy evaluation logic", example identity-based and resource-based policy evaluation', () => {
  // Carlos (user carlossalazar) and the bucket policy of his bucket.
  const identity: PolicyDocument = {
    Version: '2012-10-17',
    Statement: [
      {
        Sid: 'AllowS3ListRead',
        Effect: 'Allow',
        Action: [
          's3:GetBucketLocation',
          's3:GetAccountPublicAccessBlock',
          's3:ListAccessPoints',
          's3:ListAllMyBuckets',
        ],
        Resource: 'arn:aws:s3:::*',
      },
      {
        Sid: 'AllowS3Self',
        Effect: 'Allow',
        Action: 's3:*',
        Resource: ['arn:aws:s3:::carlossalazar/*', 'arn:aws:s3:::carlossalazar'],
      },
      { Sid: 'DenyS3Logs', Effect: 'Deny', Action: 's3:*', Resource: 'arn:aws:s3:::*log*' },
    ],
  }
  const bucketPolicy: PolicyDocument = {
    Version: '2012-10-17',
    Statement: [
      {
        Effect: 'Allow',
        Principal: { AWS: 'arn:aws:iam::123456789012:user/carlossalazar' },
        Action: 's3:*',
        Resource: ['arn:aws:s3:::carlossalazar/*', 'arn:aws:s3:::carlossalazar'],
      },
    ],
  }
  const carlos = { principal: 'arn:aws:iam::123456789012:user/carlossalazar' }

  it('denies saving to carlossalazar-logs: the identity policy explicitly denies any *log* bucket', () => {
    const result = evaluate(
      { action: 's3:PutObject', resource: 'arn:aws:s3:::carlossalazar-logs/file.txt', ...carlos },
      { identityPolicies: [identity] },
    )
    expect(result.decision).toBe('explicit-deny')
    expect(result.statement?.sid).toBe('DenyS3Logs')
  })

  it('allows saving to carlossalazar: both policies allow it, and either alone would', () => {
    const object = 'arn:aws:s3:::carlossalazar/file.txt'
    const both = { identityPolicies: [identity], resourcePolicy: bucketPolicy }
    expect(decision(both, 's3:PutObject', object, carlos)).toBe('allow')
    expect(decision({ identityPolicies: [identity] }, 's3:PutObject', object, carlos)).toBe('allow')
    expect(
      decision(
        { identityPolicies: [], resourcePolicy: bucketPolicy },
        's3:PutObject',
        object,
        carlos,
      ),
    ).toBe('allow')
    // The bucket policy names Carlos only: another user gets nothing from it.
    expect(
      decision({ identityPolicies: [], resourcePolicy: bucketPolicy }, 's3:PutObject', object, {
        principal: 'arn:aws:iam::123456789012:user/someone-else',
      }),
    ).toBe('implicit-deny')
  })
})

describe('"Policy evaluation logic", the difference between explicit and implicit denies', () => {
  const policy: PolicyDocument = {
    Version: '2012-10-17',
    Statement: [
      { Sid: 'AllowGetList', Effect: 'Allow', Action: ['iam:Get*', 'iam:List*'], Resource: '*' },
      { Sid: 'DenyReports', Effect: 'Deny', Action: 'iam:*Report', Resource: '*' },
    ],
  }
  const set = { identityPolicies: [policy] }

  it('allows Get and List actions, implicitly denies iam:CreatePolicy, explicitly denies reports', () => {
    expect(decision(set, 'iam:GetRole', '*')).toBe('allow')
    expect(decision(set, 'iam:ListUsers', '*')).toBe('allow')
    expect(decision(set, 'iam:CreatePolicy', '*')).toBe('implicit-deny')
    expect(decision(set, 'iam:GetOrganizationsAccessReport', '*')).toBe('explicit-deny')
  })

  it('keeps a report denied when another policy grants it (iam:GenerateCredentialReport)', () => {
    const grant: PolicyDocument = {
      Version: '2012-10-17',
      Statement: { Effect: 'Allow', Action: 'iam:GenerateCredentialReport', Resource: '*' },
    }
    const result = evaluate(
      { action: 'iam:GenerateCredentialReport', resource: '*' },
      { identityPolicies: [grant, policy] },
    )
    expect(result).toMatchObject({ decision: 'explicit-deny', statement: { sid: 'DenyReports' } })
  })

  it('matches actions case-insensitively ("Action element": prefix and name are case insensitive)', () => {
    expect(decision(set, 'IAM:getrole', '*')).toBe('allow')
    expect(decision(set, 'iam:getorganizationsaccessREPORT', '*')).toBe('explicit-deny')
  })
})

describe('"Permissions boundaries for IAM entities"', () => {
  it('limits ShirleyRodriguez to S3, CloudWatch and EC2: her iam:CreateUser policy grants nothing', () => {
    const boundary: PolicyDocument = {
      Version: '2012-10-17',
      Statement: [{ Effect: 'Allow', Action: ['s3:*', 'cloudwatch:*', 'ec2:*'], Resource: '*' }],
    }
    const createUser: PolicyDocument = {
      Version: '2012-10-17',
      Statement: { Effect: 'Allow', Action: 'iam:CreateUser', Resource: '*' },
    }
    const shirley = { identityPolicies: [createUser], permissionsBoundary: boundary }
    const result = evaluate({ action: 'iam:CreateUser', resource: '*' }, shirley)
    expect(result.decision).toBe('implicit-deny')
    expect(result.reason).toContain('permissions boundary')
    // The boundary alone grants nothing either.
    expect(
      decision({ identityPolicies: [], permissionsBoundary: boundary }, 's3:GetObject', '*'),
    ).toBe('implicit-deny')
    const s3: PolicyDocument = {
      Version: '2012-10-17',
      Statement: { Effect: 'Allow', Action: 's3:*', Resource: '*' },
    }
    expect(
      decision({ identityPolicies: [s3], permissionsBoundary: boundary }, 's3:GetObject', '*'),
    ).toBe('allow')
  })

  // María delegates user creation to Zhang: DelegatedUserBoundary is his boundary,
  // DelegatedUserPermissions (iam:* and CloudWatch reads) his permissions policy.
  const delegatedUserBoundary: PolicyDocument = {
    Version: '2012-10-17',
    Statement: [
      {
        Sid: 'CreateOrChangeOnlyWithBoundary',
        Effect: 'Allow',
        Action: [
          'iam:CreateUser',
          'iam:DeleteUserPolicy',
          'iam:AttachUserPolicy',
          'iam:DetachUserPolicy',
          'iam:PutUserPermissionsBoundary',
        ],
        Resource: '*',
        Condition: {
          StringEquals: {
            'iam:PermissionsBoundary': 'arn:aws:iam::111122223333:policy/XCompanyBoundaries',
          },
        },
      },
      {
        Sid: 'CloudWatchAndOtherIAMTasks',
        Effect: 'Allow',
        Action: ['cloudwatch:*', 'iam:GetUser', 'iam:ListUsers', 'iam:CreatePolicy'],
        Resource: '*',
      },
      {
        Sid: 'NoBoundaryPolicyEdit',
        Effect: 'Deny',
        Action: [
          'iam:CreatePolicyVersion',
          'iam:DeletePolicy',
          'iam:DeletePolicyVersion',
          'iam:SetDefaultPolicyVersion',
        ],
        Resource: [
          'arn:aws:iam::123456789012:policy/XCompanyBoundaries',
          'arn:aws:iam::123456789012:policy/DelegatedUserBoundary',
        ],
      },
      {
        Sid: 'NoBoundaryUserDelete',
        Effect: 'Deny',
        Action: 'iam:DeleteUserPermissionsBoundary',
        Resource: '*',
      },
    ],
  }
  const delegatedUserPermissions: PolicyDocument = {
    Version: '2012-10-17',
    Statement: [
      { Sid: 'IAM', Effect: 'Allow', Action: 'iam:*', Resource: '*' },
      {
        Sid: 'CloudWatchLimited',
        Effect: 'Allow',
        Action: ['cloudwatch:GetDashboard', 'cloudwatch:GetMetricData'],
        Resource: '*',
      },
    ],
  }
  const zhang = compilePolicies({
    identityPolicies: [delegatedUserPermissions],
    permissionsBoundary: delegatedUserBoundary,
  })
  const withBoundary = (arn: string) => ({ 'iam:PermissionsBoundary': arn })

  it('lets Zhang create a user only with XCompanyBoundaries as its boundary', () => {
    const user = 'arn:aws:iam::111122223333:user/new-hire'
    const create = (context: Record<string, string>) =>
      zhang.evaluate({ action: 'iam:CreateUser', resource: user, context }).decision
    expect(create(withBoundary('arn:aws:iam::111122223333:policy/XCompanyBoundaries'))).toBe(
      'allow',
    )
    expect(create(withBoundary('arn:aws:iam::111122223333:policy/AdministratorAccess'))).toBe(
      'implicit-deny',
    )
    expect(create({})).toBe('implicit-deny')
  })

  it('never lets Zhang edit the boundary policies or delete a boundary, whatever iam:* says', () => {
    const edit = zhang.evaluate({
      action: 'iam:CreatePolicyVersion',
      resource: 'arn:aws:iam::123456789012:policy/XCompanyBoundaries',
    })
    expect(edit).toMatchObject({
      decision: 'explicit-deny',
      statement: { sid: 'NoBoundaryPolicyEdit', policy: 'permissions-boundary' },
    })
    expect(
      zhang.evaluate({
        action: 'iam:DeleteUserPermissionsBoundary',
        resource: 'arn:aws:iam::111122223333:user/zhang',
      }).decision,
    ).toBe('explicit-deny')
    // Both policies allow CloudWatch reads; only the boundary names cloudwatch:PutMetricData.
    expect(zhang.evaluate({ action: 'cloudwatch:GetDashboard', resource: '*' }).decision).toBe(
      'allow',
    )
    expect(zhang.evaluate({ action: 'cloudwatch:PutMetricData', resource: '*' }).decision).toBe(
      'implicit-deny',
    )
  })

  it('reads ${aws:username} in XCompanyBoundaries: a user manages only their own access keys', () => {
    const xCompanyBoundaries: PolicyDocument = {
      Version: '2012-10-17',
      Statement: [
        {
          Sid: 'AllowManageOwnPasswordAndAccessKeys',
          Effect: 'Allow',
          Action: ['iam:*AccessKey*', 'iam:ChangePassword', 'iam:GetUser'],
          Resource: ['arn:aws:iam::*:user/${aws:username}'],
        },
      ],
    }
    const iamAll: PolicyDocument = {
      Version: '2012-10-17',
      Statement: { Effect: 'Allow', Action: 'iam:*', Resource: '*' },
    }
    const user = compilePolicies({
      identityPolicies: [iamAll],
      permissionsBoundary: xCompanyBoundaries,
    })
    const createKey = (resource: string, context: Record<string, string>) =>
      user.evaluate({ action: 'iam:CreateAccessKey', resource, context }).decision
    const mine = 'arn:aws:iam::111122223333:user/new-hire'
    expect(createKey(mine, { 'aws:username': 'new-hire' })).toBe('allow')
    expect(createKey('arn:aws:iam::111122223333:user/zhang', { 'aws:username': 'new-hire' })).toBe(
      'implicit-deny',
    )
    // No user name in the request: the element with the variable matches nothing.
    expect(createKey(mine, {})).toBe('implicit-deny')
    // Condition keys and variables are case-insensitive.
    expect(createKey(mine, { 'AWS:UserName': 'new-hire' })).toBe('allow')
  })
})

describe('"Policy evaluation logic", resource-based policies and implicit denies (same account)', () => {
  const boundary: PolicyDocument = {
    Version: '2012-10-17',
    Statement: { Effect: 'Allow', Action: 'dynamodb:*', Resource: '*' },
  }
  const queue = 'arn:aws:sqs:us-east-1:111122223333:jobs'
  const grantTo = (principal: string): PolicyDocument => ({
    Version: '2012-10-17',
    Statement: { Effect: 'Allow', Principal: { AWS: principal }, Action: 'sqs:SendMessage' },
  })
  const session = 'arn:aws:sts::111122223333:assumed-role/examplerole/examplerolesessionname'

  it("limits a grant to the role's ARN by the boundary's implicit deny", () => {
    const set = {
      identityPolicies: [],
      permissionsBoundary: boundary,
      resourcePolicy: grantTo('arn:aws:iam::111122223333:role/examplerole'),
    }
    expect(decision(set, 'sqs:SendMessage', queue, { principal: session })).toBe('implicit-deny')
    expect(
      decision({ ...set, permissionsBoundary: undefined }, 'sqs:SendMessage', queue, {
        principal: session,
      }),
    ).toBe('allow')
  })

  it("does not limit a grant to the role session's own ARN", () => {
    const set = {
      identityPolicies: [],
      permissionsBoundary: boundary,
      resourcePolicy: grantTo(session),
    }
    expect(decision(set, 'sqs:SendMessage', queue, { principal: session })).toBe('allow')
  })

  it('takes an account principal as delegation to that account, not as a grant of its own', () => {
    const set = { identityPolicies: [], resourcePolicy: grantTo('111122223333') }
    expect(decision(set, 'sqs:SendMessage', queue, { principal: session })).toBe('implicit-deny')
  })
})

describe('"IAM JSON policy elements: NotAction" and "NotResource"', () => {
  it('allows every S3 action but DeleteBucket on S3 resources, and nothing of other services', () => {
    const set = {
      identityPolicies: [
        {
          Version: '2012-10-17',
          Statement: { Effect: 'Allow', NotAction: 's3:DeleteBucket', Resource: 'arn:aws:s3:::*' },
        },
      ],
    }
    expect(decision(set, 's3:GetObject', 'arn:aws:s3:::bucket/key')).toBe('allow')
    expect(decision(set, 's3:DeleteBucket', 'arn:aws:s3:::bucket')).toBe('implicit-deny')
    expect(decision(set, 'dynamodb:GetItem', 'arn:aws:dynamodb:us-east-1:1:table/t')).toBe(
      'implicit-deny',
    )
  })

  it('denies HRPayroll every S3 resource but the Payroll folder', () => {
    const deny: PolicyDocument = {
      Version: '2012-10-17',
      Statement: {
        Effect: 'Deny',
        Action: 's3:*',
        NotResource: ['arn:aws:s3:::HRBucket/Payroll', 'arn:aws:s3:::HRBucket/Payroll/*'],
      },
    }
    const all: PolicyDocument = {
      Version: '2012-10-17',
      Statement: { Effect: 'Allow', Action: 's3:*', Resource: '*' },
    }
    const set = { identityPolicies: [all, deny] }
    expect(decision(set, 's3:GetObject', 'arn:aws:s3:::HRBucket/Payroll/june.csv')).toBe('allow')
    expect(decision(set, 's3:GetObject', 'arn:aws:s3:::HRBucket/Other/june.csv')).toBe(
      'explicit-deny',
    )
    // ARNs are case-sensitive.
    expect(decision(set, 's3:GetObject', 'arn:aws:s3:::HRBucket/payroll/june.csv')).toBe(
      'explicit-deny',
    )
  })
})

describe('"Condition operators", ...IfExists and Null', () => {
  const runInstances = (operator: string): PolicySet => ({
    identityPolicies: [
      {
        Version: '2012-10-17',
        Statement: {
          Effect: 'Allow',
          Action: 'ec2:RunInstances',
          Resource: '*',
          Condition: { [operator]: { 'ec2:InstanceType': ['t1.*', 't2.*', 'm3.*'] } },
        },
      },
    ],
  })

  it('fails THISPOLICYDOESNOTWORK on the resources without ec2:InstanceType; StringLikeIfExists passes them', () => {
    const image = 'arn:aws:ec2:us-east-1::image/ami-1'
    expect(decision(runInstances('StringLike'), 'ec2:RunInstances', image)).toBe('implicit-deny')
    expect(decision(runInstances('StringLikeIfExists'), 'ec2:RunInstances', image)).toBe('allow')
    const instance = 'arn:aws:ec2:us-east-1:1:instance/*'
    const large = { context: { 'ec2:InstanceType': 'c5.large' } }
    expect(decision(runInstances('StringLikeIfExists'), 'ec2:RunInstances', instance, large)).toBe(
      'implicit-deny',
    )
    const small = { context: { 'ec2:InstanceType': 't2.micro' } }
    expect(decision(runInstances('StringLike'), 'ec2:RunInstances', instance, small)).toBe('allow')
  })

  it('allows EC2 only without temporary credentials (Null on aws:TokenIssueTime)', () => {
    const set: PolicySet = {
      identityPolicies: [
        {
          Version: '2012-10-17',
          Statement: {
            Action: 'ec2:*',
            Effect: 'Allow',
            Resource: '*',
            Condition: { Null: { 'aws:TokenIssueTime': 'true' } },
          },
        },
      ],
    }
    expect(decision(set, 'ec2:DescribeInstances', '*')).toBe('allow')
    expect(
      decision(set, 'ec2:DescribeInstances', '*', {
        context: { 'aws:TokenIssueTime': '2026-07-01T00:00:00Z' },
      }),
    ).toBe('implicit-deny')
  })
})

describe('"Creating a condition that tests multiple key values (set operations)"', () => {
  const thread = 'arn:aws:dynamodb:us-east-1:111122223333:table/Thread'
  const set: PolicySet = {
    identityPolicies: [
      {
        Version: '2012-10-17',
        Statement: [
          {
            Effect: 'Allow',
            Action: ['dynamodb:GetItem', 'dynamodb:PutItem'],
            Resource: thread,
            Condition: {
              'ForAllValues:StringLike': {
                'dynamodb:requestedAttributes': ['PostDateTime', 'Message', 'Tags', 'UserName'],
              },
            },
          },
          {
            Effect: 'Deny',
            Action: 'dynamodb:PutItem',
            Resource: thread,
            Condition: {
              'ForAnyValue:StringLike': { 'dynamodb:requestedAttributes': ['ID', 'PostDateTime'] },
            },
          },
        ],
      },
    ],
  }
  const attributes = (...names: string[]) => ({
    context: { 'dynamodb:requestedAttributes': names },
  })

  it('allows GetItem of PostDateTime and Message, not of ID (ForAllValues)', () => {
    expect(decision(set, 'dynamodb:GetItem', thread, attributes('PostDateTime', 'Message'))).toBe(
      'allow',
    )
    expect(decision(set, 'dynamodb:GetItem', thread, attributes('PostDateTime', 'ID'))).toBe(
      'implicit-deny',
    )
  })

  it('denies a PutItem that names PostDateTime, not one of UserName alone (ForAnyValue)', () => {
    expect(
      decision(set, 'dynamodb:PutItem', thread, attributes('UserName', 'Message', 'PostDateTime')),
    ).toBe('explicit-deny')
    expect(decision(set, 'dynamodb:PutItem', thread, attributes('UserName'))).toBe('allow')
  })

  it('takes an empty set as true for ForAllValues and false for ForAnyValue', () => {
    expect(decision(set, 'dynamodb:PutItem', thread, attributes())).toBe('allow')
    expect(decision(set, 'dynamodb:PutItem', thread)).toBe('allow')
  })
})

describe('the statement that decided', () => {
  it('names the policy, its index and the statement, and refuses what it cannot read', () => {
    const result = evaluate(
      { action: 'dynamodb:GetItem', resource: 'arn:aws:dynamodb:eu-west-1:1:table/t' },
      {
        identityPolicies: [
          { Statement: { Effect: 'Allow', Action: 'sqs:*', Resource: '*' } },
          {
            Statement: [
              { Sid: 'Read', Effect: 'Allow', Action: 'dynamodb:GetItem', Resource: '*' },
            ],
          },
        ],
      },
    )
    expect(result).toMatchObject({
      decision: 'allow',
      statement: { policy: 'identity', policyIndex: 1, statementIndex: 0, sid: 'Read' },
      reason: 'allowed by identity policy 1, statement Read',
    })
    expect(() =>
      compilePolicies({
        identityPolicies: [
          {
            Statement: {
              Effect: 'Allow',
              Action: '*',
              Resource: '*',
              Condition: { StringSortOf: { 'aws:username': 'x' } },
            },
          },
        ],
      }),
    ).toThrow('Unknown condition operator StringSortOf')
    expect(() =>
      compilePolicies({ identityPolicies: [{ Statement: { Effect: 'allow', Action: '*' } }] }),
    ).toThrow('Effect must be Allow or Deny')
  })
})
