import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda'
import type { KeySyncResult } from '#functions/key-sync/key-sync-handler.ts'
import type { KeyMirrorItem } from '#shared/data/key-mirror-item.ts'
import type { KeyMirrorRepository } from '#shared/data/key-mirror-repository.ts'

/** What the key mirror grants a key: what its next request is authorized with. */
export type MirrorView = Pick<
  KeyMirrorItem,
  'keyId' | 'plan' | 'perMinute' | 'perDay' | 'usagePlanId'
>

/**
 * A stage's key sync and key mirror, as the keys CLI uses them after a change: run the sync now
 * (rather than wait for its schedule), then read what the mirror says about the key.
 */
export interface StageSync {
  run(): Promise<KeySyncResult>
  /** The mirror's item for a key hash; undefined means the key gets 401. */
  mirrored(keyHash: string): Promise<MirrorView | undefined>
}

const viewOf = (item: KeyMirrorItem): MirrorView => ({
  keyId: item.keyId,
  plan: item.plan,
  perMinute: item.perMinute,
  perDay: item.perDay,
  usagePlanId: item.usagePlanId,
})

/** The local server's stand-ins: POST /_local/key-sync and GET /_local/key-mirror/{keyHash}. */
export class LocalStageSync implements StageSync {
  readonly #origin: string
  readonly #fetch: typeof fetch

  constructor(origin: string, fetchImpl: typeof fetch = fetch) {
    this.#origin = origin
    this.#fetch = fetchImpl
  }

  async run(): Promise<KeySyncResult> {
    const response = await this.#fetch(`${this.#origin}/_local/key-sync`, { method: 'POST' })
    const body = (await response.json()) as KeySyncResult & { message?: string }
    if (response.status !== 200) {
      throw new Error(`The local key sync failed: ${body.message ?? response.status}`)
    }
    return body
  }

  async mirrored(keyHash: string): Promise<MirrorView | undefined> {
    const response = await this.#fetch(`${this.#origin}/_local/key-mirror/${keyHash}`)
    if (response.status === 404) {
      await response.arrayBuffer()
      return undefined
    }
    if (response.status !== 200) throw new Error(`Reading the local key mirror: ${response.status}`)
    return viewOf((await response.json()) as KeyMirrorItem)
  }
}

/**
 * The event the CLI invokes the key-sync function with: any detail-type but a CloudTrail one
 * runs a full sync at once (key-sync-handler.ts); the name shows in the function's log.
 */
export const CLI_SYNC_EVENT = { 'detail-type': 'petstore keys CLI', source: 'petstore.keys-cli' }

export interface AwsStageSyncOptions {
  lambda: LambdaClient
  /** The stack output KeySyncFunctionName. */
  functionName: string
  /** The repository over the stack output KeyMirrorTableName. */
  mirror: Pick<KeyMirrorRepository, 'get'>
}

/**
 * A deployed stage: a synchronous Invoke of the key-sync function (its answer is the run's
 * KeySyncResult), and a GetItem on the key mirror table. The operator's credentials need
 * lambda:InvokeFunction on the one and dynamodb:GetItem on the other.
 */
export class AwsStageSync implements StageSync {
  readonly #options: AwsStageSyncOptions

  constructor(options: AwsStageSyncOptions) {
    this.#options = options
  }

  async run(): Promise<KeySyncResult> {
    const { FunctionError, Payload } = await this.#options.lambda.send(
      new InvokeCommand({
        FunctionName: this.#options.functionName,
        InvocationType: 'RequestResponse',
        Payload: new TextEncoder().encode(JSON.stringify(CLI_SYNC_EVENT)),
      }),
    )
    const text = Payload ? new TextDecoder().decode(Payload) : ''
    if (FunctionError) {
      let message = FunctionError
      try {
        message = (JSON.parse(text) as { errorMessage?: string }).errorMessage ?? message
      } catch {
        // The function's answer was not JSON: its error type is all there is.
      }
      throw new Error(`The key sync failed: ${message}`)
    }
    return JSON.parse(text) as KeySyncResult
  }

  async mirrored(keyHash: string): Promise<MirrorView | undefined> {
    const item = await this.#options.mirror.get(keyHash)
    return item ? viewOf(item) : undefined
  }
}
