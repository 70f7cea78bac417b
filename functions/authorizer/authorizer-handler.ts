import middy from '@middy/core'
import type {
  APIGatewayAuthorizerResult,
  APIGatewayTokenAuthorizerEvent,
  Context,
} from 'aws-lambda'
import { isWellFormedApiKey, parseBearerToken, UNAUTHORIZED } from '#shared/auth/bearer-token.ts'
import { toAuthorizerContext } from '#shared/auth/key-context.ts'
import { type KeyStore, keyFingerprint } from '#shared/auth/key-store.ts'
import type { AuthorizerMiddleware } from '#shared/http/http-types.ts'
import type { AppLogger } from '#shared/observability/logger.ts'

export interface AuthorizerDependencies {
  keyStore: KeyStore
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
 * the key as `usageIdentifierKey` (so API Gateway meters it against its usage plan) with the
 * key id, plan and limits as context. A bad key throws exactly "Unauthorized" (401); a store
 * failure throws anything else (API Gateway answers 500).
 */
export const authorizerHandler = ({
  keyStore,
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
      const record = await keyStore.lookup(key)
      if (!record) {
        logger.info('Rejected API key', { reason: 'unknown', keyFingerprint: keyFingerprint(key) })
        throw new Error(UNAUTHORIZED)
      }
      return {
        principalId: record.id,
        usageIdentifierKey: key,
        context: { ...toAuthorizerContext(record) },
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
