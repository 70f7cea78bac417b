/**
 * What CloudFormation may do on the release path's behalf, per resource type of the stage
 * templates: the one table the CloudFormation execution policy is made of (docs/release-permissions.md).
 * A stage template that gains a resource type fails test/infra/release-permissions.test.ts, naming
 * the type and this table: add one entry here, deploy the release stacks (an administrator), then
 * release.
 *
 * Each entry lists the management actions of the type's service that CloudFormation calls to
 * create, read, update, tag and delete it (IAM Service Authorization Reference, per service), on
 * the stage's own resources only: names CloudFormation gives as `<stack>-<logical id>-<suffix>`,
 * the stage's log groups, and the path every role of the stage carries. Where a service's ARNs hold
 * no name (API Gateway's ids, a web ACL or a secret CloudFormation names), the entry says so.
 */
import {
  apiGatewayEntry,
  apigateway,
  apiKeyEntry,
  apiStack,
  usagePlanKeyEntry,
} from './api-gateway-permissions-config.ts'
import {
  type ExecutionStatement,
  type PermissionScope,
  type ResourceTypePermissions,
  roleBoundaryArn,
  stageRoles,
} from './release-permissions-config.ts'

const arn = (s: PermissionScope, service: string, resource: string, region = s.region) =>
  `arn:${s.partition}:${service}:${region}:${s.account}:${resource}`
const dataStack = (s: PermissionScope) => `petstore-${s.stage}-data`
const functions = (s: PermissionScope) => [
  arn(s, 'lambda', `function:${apiStack(s)}-*`),
  arn(s, 'lambda', `function:${apiStack(s)}-*:*`),
]
const logGroups = (s: PermissionScope) =>
  [`/petstore/${s.stage}/*`, 'API-Gateway-Execution-Logs_*'].flatMap((name) => [
    arn(s, 'logs', `log-group:${name}`),
    arn(s, 'logs', `log-group:${name}:*`),
  ])

/**
 * The AWS managed policies a stage's roles have attached (CDK attaches them): the only ones the
 * execution policy lets CloudFormation attach.
 */
export const ATTACHABLE_MANAGED_POLICIES = [
  'service-role/AWSCodeDeployRoleForLambdaLimited',
  'service-role/AmazonAPIGatewayPushToCloudWatchLogs',
] as const

/** The services a stage's roles are for: what iam:PassRole may pass them to. */
export const ROLE_SERVICES = [
  'lambda.amazonaws.com',
  'apigateway.amazonaws.com',
  'codedeploy.amazonaws.com',
] as const

/** One entry per resource type of the stage templates (both stages, with or without a custom domain). */
export const EXECUTION_PERMISSIONS: Record<string, ResourceTypePermissions> = {
  'AWS::DynamoDB::Table': {
    statements: (s) => [
      {
        actions: [
          'dynamodb:CreateTable',
          'dynamodb:DescribeTable',
          'dynamodb:UpdateTable',
          'dynamodb:DeleteTable',
          'dynamodb:DescribeContinuousBackups',
          'dynamodb:UpdateContinuousBackups',
          'dynamodb:DescribeTimeToLive',
          'dynamodb:UpdateTimeToLive',
          'dynamodb:DescribeContributorInsights',
          'dynamodb:UpdateContributorInsights',
          'dynamodb:DescribeKinesisStreamingDestination',
          'dynamodb:ListTagsOfResource',
          'dynamodb:TagResource',
          'dynamodb:UntagResource',
        ],
        // The data stack's tables, and the API stack's address-block table (counts and blocks).
        resources: [
          arn(s, 'dynamodb', `table/${dataStack(s)}-*`),
          arn(s, 'dynamodb', `table/${apiStack(s)}-*`),
        ],
      },
    ],
  },
  'AWS::IAM::Role': {
    statements: (s): ExecutionStatement[] => [
      {
        // A role is created, and given a boundary, only with the stage's boundary.
        actions: ['iam:CreateRole', 'iam:PutRolePermissionsBoundary'],
        resources: [stageRoles(s)],
        condition: { StringEquals: { 'iam:PermissionsBoundary': roleBoundaryArn(s) } },
      },
      {
        actions: ['iam:AttachRolePolicy', 'iam:DetachRolePolicy'],
        resources: [stageRoles(s)],
        condition: {
          ArnEquals: {
            'iam:PolicyARN': ATTACHABLE_MANAGED_POLICIES.map(
              (name) => `arn:${s.partition}:iam::aws:policy/${name}`,
            ),
          },
        },
      },
      {
        actions: [
          'iam:GetRole',
          'iam:DeleteRole',
          'iam:UpdateRole',
          'iam:UpdateRoleDescription',
          'iam:UpdateAssumeRolePolicy',
          'iam:TagRole',
          'iam:UntagRole',
          'iam:ListRoleTags',
          'iam:ListAttachedRolePolicies',
          'iam:ListRolePolicies',
          'iam:GetRolePolicy',
          'iam:PutRolePolicy',
          'iam:DeleteRolePolicy',
        ],
        resources: [stageRoles(s)],
      },
      {
        actions: ['iam:PassRole'],
        resources: [stageRoles(s)],
        condition: { StringEquals: { 'iam:PassedToService': ROLE_SERVICES } },
      },
    ],
  },
  'AWS::IAM::Policy': {
    statements: (s) => [
      {
        actions: ['iam:PutRolePolicy', 'iam:GetRolePolicy', 'iam:DeleteRolePolicy'],
        resources: [stageRoles(s)],
      },
    ],
  },
  'AWS::Lambda::Function': {
    statements: (s) => [
      {
        actions: [
          'lambda:CreateFunction',
          'lambda:GetFunction',
          'lambda:GetFunctionConfiguration',
          'lambda:UpdateFunctionCode',
          'lambda:UpdateFunctionConfiguration',
          'lambda:DeleteFunction',
          'lambda:ListTags',
          'lambda:TagResource',
          'lambda:UntagResource',
          'lambda:GetRuntimeManagementConfig',
          'lambda:PutRuntimeManagementConfig',
          'lambda:GetFunctionCodeSigningConfig',
          'lambda:GetFunctionRecursionConfig',
          'lambda:PutFunctionRecursionConfig',
        ],
        resources: functions(s),
      },
      // The bundles: CloudFormation hands Lambda the bootstrap bucket's objects.
      {
        actions: ['s3:GetObject', 's3:GetObjectVersion'],
        resources: [`arn:${s.partition}:s3:::cdk-*-assets-${s.account}-${s.region}/*`],
      },
    ],
  },
  'AWS::Lambda::Version': {
    statements: (s) => [
      {
        actions: [
          'lambda:PublishVersion',
          'lambda:GetFunction',
          'lambda:DeleteFunction',
          'lambda:ListVersionsByFunction',
        ],
        resources: functions(s),
      },
    ],
  },
  'AWS::Lambda::Alias': {
    statements: (s) => [
      {
        actions: [
          'lambda:CreateAlias',
          'lambda:GetAlias',
          'lambda:UpdateAlias',
          'lambda:DeleteAlias',
        ],
        resources: functions(s),
      },
    ],
  },
  'AWS::Lambda::Permission': {
    statements: (s) => [
      {
        actions: ['lambda:AddPermission', 'lambda:RemovePermission', 'lambda:GetPolicy'],
        resources: functions(s),
      },
    ],
  },
  'AWS::Lambda::EventInvokeConfig': {
    statements: (s) => [
      {
        actions: [
          'lambda:PutFunctionEventInvokeConfig',
          'lambda:UpdateFunctionEventInvokeConfig',
          'lambda:GetFunctionEventInvokeConfig',
          'lambda:DeleteFunctionEventInvokeConfig',
        ],
        resources: functions(s),
      },
    ],
  },
  // CloudFormation invokes the key sync (the custom resource's ServiceToken) itself.
  'Custom::KeySync': {
    statements: (s) => [{ actions: ['lambda:InvokeFunction'], resources: functions(s) }],
  },
  'AWS::Logs::LogGroup': {
    statements: (s) => [
      {
        actions: [
          'logs:CreateLogGroup',
          'logs:DeleteLogGroup',
          'logs:PutRetentionPolicy',
          'logs:DeleteRetentionPolicy',
          'logs:TagResource',
          'logs:UntagResource',
          'logs:ListTagsForResource',
          'logs:TagLogGroup',
          'logs:UntagLogGroup',
          'logs:ListTagsLogGroup',
        ],
        resources: logGroups(s),
      },
      { actions: ['logs:DescribeLogGroups'], resources: [arn(s, 'logs', 'log-group:*')] },
    ],
  },
  // The access log's delivery to the address-block function: a Lambda destination takes no role
  // (no iam:PassRole); CloudWatch Logs may invoke the function through its AWS::Lambda::Permission.
  'AWS::Logs::SubscriptionFilter': {
    statements: (s) => [
      {
        actions: [
          'logs:PutSubscriptionFilter',
          'logs:DescribeSubscriptionFilters',
          'logs:DeleteSubscriptionFilter',
        ],
        resources: logGroups(s),
      },
    ],
  },
  'AWS::ApiGateway::RestApi': apiGatewayEntry('/restapis', '/restapis/*'),
  'AWS::ApiGateway::Resource': apiGatewayEntry('/restapis/*'),
  'AWS::ApiGateway::Method': apiGatewayEntry('/restapis/*'),
  'AWS::ApiGateway::Authorizer': apiGatewayEntry('/restapis/*'),
  'AWS::ApiGateway::Deployment': apiGatewayEntry('/restapis/*'),
  'AWS::ApiGateway::Stage': apiGatewayEntry('/restapis/*'),
  'AWS::ApiGateway::GatewayResponse': apiGatewayEntry('/restapis/*'),
  'AWS::ApiGateway::UsagePlan': apiGatewayEntry('/usageplans', '/usageplans/*'),
  'AWS::ApiGateway::ApiKey': apiKeyEntry,
  'AWS::ApiGateway::UsagePlanKey': usagePlanKeyEntry,
  'AWS::ApiGateway::Account': {
    note: "API Gateway's CloudWatch role is a setting of the account and Region: iam:PassRole lets it name only a role of the stage.",
    statements: (s) => [
      { actions: ['apigateway:GET', 'apigateway:PATCH'], resources: apigateway(s, '/account') },
    ],
  },
  'AWS::ApiGateway::DomainName': apiGatewayEntry('/domainnames', '/domainnames/*'),
  'AWS::ApiGateway::BasePathMapping': apiGatewayEntry('/domainnames/*'),
  'AWS::CloudWatch::Alarm': {
    statements: (s) => [
      {
        actions: [
          'cloudwatch:PutMetricAlarm',
          'cloudwatch:DescribeAlarms',
          'cloudwatch:DeleteAlarms',
          'cloudwatch:TagResource',
          'cloudwatch:UntagResource',
          'cloudwatch:ListTagsForResource',
        ],
        resources: [arn(s, 'cloudwatch', `alarm:${apiStack(s)}-*`)],
      },
    ],
  },
  'AWS::CloudWatch::Dashboard': {
    statements: (s) => [
      {
        actions: [
          'cloudwatch:PutDashboard',
          'cloudwatch:GetDashboard',
          'cloudwatch:DeleteDashboards',
        ],
        resources: [`arn:${s.partition}:cloudwatch::${s.account}:dashboard/petstore-${s.stage}`],
      },
    ],
  },
  'AWS::CloudWatch::InsightRule': {
    statements: (s) => [
      {
        actions: [
          'cloudwatch:PutInsightRule',
          'cloudwatch:DescribeInsightRules',
          'cloudwatch:DeleteInsightRules',
          'cloudwatch:EnableInsightRules',
          'cloudwatch:DisableInsightRules',
          'cloudwatch:TagResource',
          'cloudwatch:UntagResource',
          'cloudwatch:ListTagsForResource',
        ],
        resources: [arn(s, 'cloudwatch', `insight-rule/petstore-${s.stage}-*`)],
      },
    ],
  },
  'AWS::SNS::Topic': {
    statements: (s) => [
      {
        actions: [
          'sns:CreateTopic',
          'sns:DeleteTopic',
          'sns:GetTopicAttributes',
          'sns:SetTopicAttributes',
          'sns:Subscribe',
          'sns:Unsubscribe',
          'sns:ListSubscriptionsByTopic',
          'sns:TagResource',
          'sns:UntagResource',
          'sns:ListTagsForResource',
        ],
        resources: [arn(s, 'sns', `${apiStack(s)}-*`)],
      },
    ],
  },
  'AWS::SNS::Subscription': {
    note: "With an alarm email only. Subscribe names the stage's topic and the email protocol; Unsubscribe and a subscription's attributes take no resource (Service Authorization Reference, Amazon SNS): any subscription of the Region.",
    statements: (s) => [
      {
        actions: ['sns:Subscribe'],
        resources: [arn(s, 'sns', `${apiStack(s)}-*`)],
        condition: { StringEquals: { 'sns:Protocol': 'email' } },
      },
      {
        actions: [
          'sns:Unsubscribe',
          'sns:GetSubscriptionAttributes',
          'sns:SetSubscriptionAttributes',
        ],
        resources: ['*'],
      },
    ],
  },
  'AWS::SNS::TopicPolicy': {
    statements: (s) => [
      {
        actions: ['sns:SetTopicAttributes', 'sns:GetTopicAttributes'],
        resources: [arn(s, 'sns', `${apiStack(s)}-*`)],
      },
    ],
  },
  'AWS::CodeDeploy::Application': {
    statements: (s) => [
      {
        actions: [
          'codedeploy:CreateApplication',
          'codedeploy:GetApplication',
          'codedeploy:DeleteApplication',
          'codedeploy:TagResource',
          'codedeploy:UntagResource',
          'codedeploy:ListTagsForResource',
        ],
        resources: [arn(s, 'codedeploy', `application:${apiStack(s)}-*`)],
      },
    ],
  },
  'AWS::CodeDeploy::DeploymentGroup': {
    statements: (s) => [
      {
        actions: [
          'codedeploy:CreateDeploymentGroup',
          'codedeploy:GetDeploymentGroup',
          'codedeploy:UpdateDeploymentGroup',
          'codedeploy:DeleteDeploymentGroup',
          'codedeploy:TagResource',
          'codedeploy:UntagResource',
        ],
        resources: [arn(s, 'codedeploy', `deploymentgroup:${apiStack(s)}-*/*`)],
      },
      {
        actions: ['codedeploy:GetDeploymentConfig'],
        resources: [arn(s, 'codedeploy', 'deploymentconfig:*')],
      },
    ],
  },
  'AWS::Events::Rule': {
    statements: (s) => [
      {
        actions: [
          'events:PutRule',
          'events:DescribeRule',
          'events:DeleteRule',
          'events:EnableRule',
          'events:DisableRule',
          'events:PutTargets',
          'events:RemoveTargets',
          'events:ListTargetsByRule',
          'events:TagResource',
          'events:UntagResource',
          'events:ListTagsForResource',
        ],
        resources: [arn(s, 'events', `rule/${apiStack(s)}-*`)],
      },
    ],
  },
  'AWS::SecretsManager::Secret': {
    note: 'CloudFormation names a secret after its logical id, without the stack: any secret of the Region. No entry grants secretsmanager:GetSecretValue.',
    statements: (s) => [
      {
        actions: [
          'secretsmanager:CreateSecret',
          'secretsmanager:DescribeSecret',
          'secretsmanager:UpdateSecret',
          'secretsmanager:DeleteSecret',
          'secretsmanager:TagResource',
          'secretsmanager:UntagResource',
        ],
        resources: [arn(s, 'secretsmanager', 'secret:*')],
      },
      { actions: ['secretsmanager:GetRandomPassword'], resources: ['*'] },
    ],
  },
  'AWS::WAFv2::IPSet': {
    statements: (s) => [
      {
        actions: [
          'wafv2:CreateIPSet',
          'wafv2:GetIPSet',
          'wafv2:UpdateIPSet',
          'wafv2:DeleteIPSet',
          'wafv2:TagResource',
          'wafv2:UntagResource',
          'wafv2:ListTagsForResource',
        ],
        resources: [arn(s, 'wafv2', `regional/ipset/petstore-${s.stage}-*/*`)],
      },
    ],
  },
  'AWS::WAFv2::WebACL': {
    note: 'CloudFormation names the web ACL after its logical id: any regional web ACL.',
    statements: (s) => [
      {
        actions: [
          'wafv2:CreateWebACL',
          'wafv2:GetWebACL',
          'wafv2:UpdateWebACL',
          'wafv2:DeleteWebACL',
          'wafv2:TagResource',
          'wafv2:UntagResource',
          'wafv2:ListTagsForResource',
        ],
        resources: [
          arn(s, 'wafv2', 'regional/webacl/*/*'),
          arn(s, 'wafv2', `regional/ipset/petstore-${s.stage}-*/*`),
          arn(s, 'wafv2', 'regional/managedruleset/*/*'),
        ],
      },
    ],
  },
  'AWS::WAFv2::WebACLAssociation': {
    statements: (s) => [
      {
        actions: [
          'wafv2:AssociateWebACL',
          'wafv2:DisassociateWebACL',
          'wafv2:GetWebACLForResource',
        ],
        resources: [
          arn(s, 'wafv2', 'regional/webacl/*/*'),
          ...apigateway(s, '/restapis/*/stages/*'),
        ],
      },
      { actions: ['apigateway:SetWebACL'], resources: apigateway(s, '/restapis/*/stages/*') },
    ],
  },
  'AWS::Route53::RecordSet': {
    note: 'With a custom domain only: the record of the hosted zone the setting names.',
    statements: (s) => [
      {
        actions: [
          'route53:ChangeResourceRecordSets',
          'route53:ListResourceRecordSets',
          'route53:GetHostedZone',
        ],
        resources: [`arn:${s.partition}:route53:::hostedzone/*`],
      },
      { actions: ['route53:GetChange'], resources: [`arn:${s.partition}:route53:::change/*`] },
    ],
  },
}
