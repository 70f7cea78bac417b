import {
  type APIGatewayClient,
  FlushStageAuthorizersCacheCommand,
} from '@aws-sdk/client-api-gateway'

/** Drops every cached authorizer decision of the stage, so a mirror change applies at once. */
export interface AuthorizerCacheFlusher {
  flush(): Promise<void>
}

/**
 * FlushStageAuthorizersCache (DELETE /restapis/{id}/stages/{stage}/cache/authorizers): without
 * it, a revoked key keeps working, and a new key tried before its first sync keeps its 401, for
 * up to the authorizer's cache TTL after the mirror changed (300 s in production).
 */
export class ApiGatewayAuthorizerCacheFlusher implements AuthorizerCacheFlusher {
  readonly #client: APIGatewayClient
  readonly #restApiId: string
  readonly #stageName: string

  constructor(client: APIGatewayClient, restApiId: string, stageName: string) {
    this.#client = client
    this.#restApiId = restApiId
    this.#stageName = stageName
  }

  async flush(): Promise<void> {
    await this.#client.send(
      new FlushStageAuthorizersCacheCommand({
        restApiId: this.#restApiId,
        stageName: this.#stageName,
      }),
    )
  }
}
