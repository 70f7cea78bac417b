/**
 * The permissions boundary of every role the stage's stacks create (docs/release-permissions.md):
 * the release stack makes it as a managed policy, and the local server evaluates each function's
 * role under it, as IAM does (local/deployed-iam/), since the API template only names it.
 */

/** The boundary's managed policy name in the stage's account. */
export const roleBoundaryName = (stage: string): string => `petstore-${stage}-role-boundary`

/**
 * Every action a role of the stage's stacks may ever hold: its permissions boundary, exactly the
 * actions those roles' policies name today. A role whose policy names another action fails
 * test/infra/release-permissions.test.ts, naming the action and this list (as does an action here
 * no role names). Nothing here creates, changes or assumes an IAM entity, writes a stack, or makes
 * an API key; the key sync reads keys (apigateway:GET) by design.
 */
export const ROLE_BOUNDARY_ACTIONS: Record<string, readonly string[]> = {
  'the functions: logs and traces': [
    'logs:CreateLogStream',
    'logs:PutLogEvents',
    'xray:PutTelemetryRecords',
    'xray:PutTraceSegments',
  ],
  'the functions: their tables': [
    'dynamodb:GetItem',
    'dynamodb:Query',
    'dynamodb:Scan',
    'dynamodb:PutItem',
    'dynamodb:UpdateItem',
    'dynamodb:BatchWriteItem',
    // The address block ends a block by deleting it.
    'dynamodb:DeleteItem',
  ],
  'the address block: the automatic block lists': ['wafv2:GetIPSet', 'wafv2:UpdateIPSet'],
  'the key sync: reads keys and plans, flushes the authorizer cache': [
    'apigateway:GET',
    'apigateway:DELETE',
  ],
  // AWS managed policy AWSCodeDeployRoleForLambdaLimited (AWS Managed Policy Reference).
  'CodeDeploy: shifting an alias': [
    'cloudwatch:DescribeAlarms',
    'lambda:UpdateAlias',
    'lambda:GetAlias',
    'lambda:GetProvisionedConcurrencyConfig',
    'lambda:InvokeFunction',
    's3:GetObject',
    's3:GetObjectVersion',
  ],
  // AWS managed policy AmazonAPIGatewayPushToCloudWatchLogs (AWS Managed Policy Reference).
  'API Gateway: execution and access logs': [
    'logs:CreateLogGroup',
    'logs:DescribeLogGroups',
    'logs:DescribeLogStreams',
    'logs:GetLogEvents',
    'logs:FilterLogEvents',
  ],
}

/**
 * Groups of ROLE_BOUNDARY_ACTIONS the boundary also holds to resources: a function may change the
 * automatic block lists (`petstore-<stage>-auto-blocked-ipv4|ipv6`) and no other IP set, so no
 * release can give a stage role the operator's block list, another stage's or anyone else's.
 */
export const ROLE_BOUNDARY_RESOURCES: Record<string, readonly string[]> = {
  'the address block: the automatic block lists': [
    'arn:*:wafv2:*:*:regional/ipset/petstore-*-auto-blocked-ipv4/*',
    'arn:*:wafv2:*:*:regional/ipset/petstore-*-auto-blocked-ipv6/*',
  ],
}

/** The boundary as IAM reads it: the actions above, nothing else. */
export const roleBoundaryDocument = (): {
  Version: '2012-10-17'
  Statement: { Effect: 'Allow'; Action: string[]; Resource: string[] }[]
} => {
  const groups = Object.entries(ROLE_BOUNDARY_ACTIONS)
  const anywhere = groups.filter(([group]) => !(group in ROLE_BOUNDARY_RESOURCES))
  return {
    Version: '2012-10-17',
    Statement: [
      {
        Effect: 'Allow',
        Action: [...new Set(anywhere.flatMap(([, actions]) => actions))].sort(),
        Resource: ['*'],
      },
      ...groups
        .filter(([group]) => group in ROLE_BOUNDARY_RESOURCES)
        .map(([group, actions]) => ({
          Effect: 'Allow' as const,
          Action: [...actions].sort(),
          Resource: [...(ROLE_BOUNDARY_RESOURCES[group] ?? [])],
        })),
    ],
  }
}
