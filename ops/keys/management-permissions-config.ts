/**
 * The IAM permission each API Gateway management call of the keys CLI needs. API Gateway
 * authorizes a management call as `apigateway:<HTTP verb>` on
 * `arn:aws:apigateway:<region>::<resource path>` ("Control access for managing an API",
 * https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-control-access-using-iam-policies-to-create-and-manage-api.html);
 * CreateApiKey and CreateUsagePlan with tags also need `apigateway:PUT` on the tags
 * (https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonapigatewaymanagement.html).
 * docs/operations.md#iam-permissions lists them per command; a test compares the two.
 */
interface ManagementPermission {
  verb: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE'
  /** The resource path, `{name}` standing for the call's input field of that name. */
  path: string
  /** Tags on create: also `apigateway:PUT` on `/tags/*`. */
  tagsOnCreate?: true
}

export const MANAGEMENT_PERMISSIONS: Record<string, ManagementPermission> = {
  GetApiKeysCommand: { verb: 'GET', path: '/apikeys' },
  GetApiKeyCommand: { verb: 'GET', path: '/apikeys/{apiKey}' },
  CreateApiKeyCommand: { verb: 'POST', path: '/apikeys', tagsOnCreate: true },
  UpdateApiKeyCommand: { verb: 'PATCH', path: '/apikeys/{apiKey}' },
  DeleteApiKeyCommand: { verb: 'DELETE', path: '/apikeys/{apiKey}' },
  GetUsagePlansCommand: { verb: 'GET', path: '/usageplans' },
  CreateUsagePlanCommand: { verb: 'POST', path: '/usageplans', tagsOnCreate: true },
  GetUsagePlanKeysCommand: { verb: 'GET', path: '/usageplans/{usagePlanId}/keys' },
  CreateUsagePlanKeyCommand: { verb: 'POST', path: '/usageplans/{usagePlanId}/keys' },
  DeleteUsagePlanKeyCommand: { verb: 'DELETE', path: '/usageplans/{usagePlanId}/keys/{keyId}' },
  GetUsageCommand: { verb: 'GET', path: '/usageplans/{usagePlanId}/usage' },
  // The tagged resource's ARN is one path segment (URL-encoded): /tags/* covers every resource.
  TagResourceCommand: { verb: 'PUT', path: '/tags/*' },
  UntagResourceCommand: { verb: 'DELETE', path: '/tags/*' },
}

/** `apigateway:VERB /path/*` as the docs table writes it, ids as `*`. */
export const permissionPattern = (commandName: string): string[] => {
  const permission = MANAGEMENT_PERMISSIONS[commandName]
  if (!permission) return []
  const main = `apigateway:${permission.verb} ${permission.path.replace(/\{\w+\}/g, '*')}`
  return permission.tagsOnCreate ? [main, 'apigateway:PUT /tags/*'] : [main]
}

/** What to add to a role a call was refused for: actions on the call's own resource ARN. */
export const permissionAdvice = (
  commandName: string,
  input: Record<string, unknown>,
  region: string,
): string => {
  const permission = MANAGEMENT_PERMISSIONS[commandName]
  if (!permission) return `the apigateway action ${commandName} needs`
  const path = permission.path.replace(/\{(\w+)\}/g, (_, name: string) =>
    String(input[name] ?? '*'),
  )
  const arn = (resource: string) => `arn:aws:apigateway:${region}::${resource}`
  return permission.tagsOnCreate
    ? `apigateway:${permission.verb} on ${arn(path)} and apigateway:PUT on ${arn('/tags/*')}`
    : `apigateway:${permission.verb} on ${arn(path)}`
}
