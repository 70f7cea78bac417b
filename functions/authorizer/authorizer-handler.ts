import middy from '@middy/core'
import type {
  APIGatewayAuthorizerResult,
  APIGatewayTokenAuthorizerEvent,
  Context,
} from 'aws-lambda'
import { isWellFormedApiKey, parseBearerToken, UNAUTHORIZED } from '#shared/auth/bearer-token.ts'
import { toAuthorizerContext } from '#shared/auth/key-context.ts'
import type { KeyStore } from '#shared/auth/key-store.ts'
import type { AuthorizerMiddleware } from '#shared/http/http-types.ts'
import type { AppLogger } from '#shared/observability/logger.ts'

export interface AuthorizerDependencies {
  keyStore: KeyStore
  /**
   * The key API Gateway meters a valid key under (usageIdentifierKey): the pool usage-plan key for
   * a store key, which API Gateway does not know; the key itself otherwise.
   */
  usageKeyOf?: (key: string) => string
  logger: AppLogger
  /** Observability (logger context, metrics, tracing): outermost, sees every outcome. */
  observability?: AuthorizerMiddleware[]
}

/**
 * `arn:aws:execute-api:{region}:{account}:{api}/{stage}/{method}/{path}` → the whole stage, so a
 * cached decision is valid for every route of the API, not just the first one called.
 */
export const stageWildcardArn = (methodArn: string): string => {
  // The first '/' follows the API id: `…:{account}:{api}` / `{stage}` / ….
  const [arnThroughApiId, stage] = methodArn.split('/')
  return `${arnThroughApiId}/${stage}/*`
}

/**
 * TOKEN authorizer: validates `Authorization: Bearer <key>` against the key store and returns
 * the key API Gateway meters it under as `usageIdentifierKey` (the key itself; the pool key for a
 * store key) with the caller (key id, plan and limits) as context. A bad key throws exactly
 * "Unauthorized" (401); a store failure throws anything else (API Gateway answers 500).
 */
export const authorizerHandler = ({
  keyStore,
  usageKeyOf = (key) => key,
  logger,
  observability = [],
}: AuthorizerDependencies) =>
  middy<APIGatewayTokenAuthorizerEvent, APIGatewayAuthorizerResult, Error, Context>()
    .use(observability)
    .handler(async (event) => {
      const key = parseBearerToken(event.authorizationToken)
      // API Gateway key values are 20+ characters: shorter tokens never reach the store.
      if (!key || !isWellFormedApiKey(key)) {
        logger.info('Rejected authorization header', { reason: 'malformed' })
        throw new Error(UNAUTHORIZED)
      }
      // The store logs why it refused (forged, unknown, disabled), with the key's fingerprint.
      const caller = await keyStore.lookup(key)
      if (!caller) throw new Error(UNAUTHORIZED)
      return {
        principalId: caller.keyId,
        usageIdentifierKey: usageKeyOf(key),
        context: { ...toAuthorizerContext(caller) },
        policyDocument: {
          Version: '2012-10-17',
          Statement: [
            {
              Action: 'execute-api:Invoke',
              Effect: 'Allow',
              Resource: stageWildcardArn(event.methodArn),
            },
          ],
        },
      }
    })
