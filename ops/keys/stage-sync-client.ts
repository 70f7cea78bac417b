import { InvokeCommand, type InvokeCommandOutput, type LambdaClient } from '@aws-sdk/client-lambda'
import { isThrottlingError } from '@smithy/service-error-classification'
import type { KeySyncResult } from '#keys/key-sync-contract.ts'
import type { HeldRemoval, KeySyncStateRepository } from '#keys/key-sync-state-repository.ts'
import type { KeyMirrorItem } from '#shared/data/key-mirror-item.ts'
import type { KeyMirrorReader } from '#shared/data/key-mirror-reader.ts'
import type { HeldRemovals } from './held-removals-command.ts'
import { refusingRedirects } from './no-redirect-fetch.ts'

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
  /**
   * A run of the stage's sync that reads `ids` (the plan and key ids a change touched) first.
   * `signal` ends a run's wait early (Ctrl-C): a run only reads API Gateway and writes the mirror.
   */
  run(ids: readonly string[], signal?: AbortSignal): Promise<KeySyncResult>
  /** The mirror's item for a key hash; undefined means the key gets 401. */
  mirrored(keyHash: string): Promise<MirrorView | undefined>
}

/**
 * A sync run or mirror read that failed, with what to do about it. `retryable` only for what
 * another try within the CLI's wait can cure: throttling, and the sync's refusal of a read of API
 * Gateway that contradicts itself (its next run reads again). A missing permission, function or
 * table fails the same way every time: the CLI stops at once.
 */
export class SyncFailure extends Error {
  override name = 'SyncFailure'
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super(message)
  }
}

type SdkError = Parameters<typeof isThrottlingError>[0]

const errorParts = (error: unknown) => {
  const { name, message, $metadata } = (error ?? {}) as {
    name?: string
    message?: string
    $metadata?: { httpStatusCode?: number }
  }
  return { name: name ?? 'Error', message: message ?? '', status: $metadata?.httpStatusCode }
}

const isThrottled = (error: unknown): boolean =>
  typeof error === 'object' && error !== null && isThrottlingError(error as SdkError)

/** The key sync's own "read again" (InconsistentKeyReadError in api-gateway-key-source.ts). */
const READ_AGAIN = 'InconsistentKeyReadError'

/** Whether another run within the wait may succeed where this one failed. */
export const isRetryableSyncFailure = (error: unknown): boolean =>
  error instanceof SyncFailure
    ? error.retryable
    : isThrottled(error) || errorParts(error).name === READ_AGAIN

/** Access denied and not found, whichever service said it. */
const isDenied = (error: unknown) => {
  const { name, status } = errorParts(error)
  return name === 'AccessDeniedException' || name === 'AccessDenied' || status === 403
}
const isMissing = (error: unknown) => {
  const { name, status } = errorParts(error)
  return name === 'ResourceNotFoundException' || status === 404
}
const described = (error: unknown) => {
  const { name, message, status } = errorParts(error)
  return `${name}${status === undefined ? '' : `, HTTP ${status}`}${message ? `: ${message}` : ''}`
}

/**
 * Whether a function's answer is a key sync result: a function that answers anything else (the
 * wrong function, a stub) would otherwise leave the CLI waiting for a mirror that never changes.
 */
export const isKeySyncResult = (value: unknown): value is KeySyncResult => {
  const result = value as Partial<Record<keyof KeySyncResult, unknown>> | null
  return (
    typeof result === 'object' &&
    result !== null &&
    (result.skipped === false || typeof result.skipped === 'string') &&
    (['upserted', 'written', 'deleted', 'heldRemovals'] as const).every(
      (field) => typeof result[field] === 'number',
    )
  )
}

const parsedAnswer = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

const viewOf = (item: KeyMirrorItem): MirrorView => ({
  keyId: item.keyId,
  plan: item.plan,
  perMinute: item.perMinute,
  perDay: item.perDay,
  usagePlanId: item.usagePlanId,
})

/** The local server's stand-ins: POST /_local/key-sync and GET /_local/key-mirror/{keyHash}. */
export class LocalStageSync implements StageSync, HeldRemovals {
  readonly #origin: string
  readonly #fetch: typeof fetch

  constructor(origin: string, fetchImpl: typeof fetch = fetch) {
    this.#origin = origin
    this.#fetch = refusingRedirects(fetchImpl)
  }

  /**
   * The local stage's changes name their own ids to its sync (as CloudTrail events do on AWS),
   * so a run need not be told what `ids` name.
   */
  async run(_ids: readonly string[], signal?: AbortSignal): Promise<KeySyncResult> {
    return this.#post(undefined, signal)
  }

  async held(): Promise<Record<string, HeldRemoval>> {
    const response = await this.#fetch(`${this.#origin}/_local/key-sync/held`)
    if (response.status !== 200) {
      throw new SyncFailure(`The local key sync's held removals: HTTP ${response.status}`, false)
    }
    return (await response.json()) as Record<string, HeldRemoval>
  }

  async confirm(keyIds: readonly string[]): Promise<KeySyncResult> {
    return this.#post({ confirmRemovals: keyIds })
  }

  async #post(event: object | undefined, signal?: AbortSignal): Promise<KeySyncResult> {
    const response = await this.#fetch(`${this.#origin}/_local/key-sync`, {
      method: 'POST',
      ...(event
        ? { headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(event) }
        : {}),
      ...(signal ? { signal } : {}),
    })
    const body = (await response.json()) as KeySyncResult & { message?: string }
    if (response.status !== 200) {
      throw new SyncFailure(
        `The local key sync failed: ${body.message ?? response.status}`,
        response.status === 429,
      )
    }
    if (!isKeySyncResult(body)) {
      throw new SyncFailure(
        `${this.#origin}/_local/key-sync answered something other than a key sync result: is it the local server?`,
        false,
      )
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
 * The event the CLI invokes the key-sync function with (its detail names the ids a change
 * touched: the run reads them first, key-sync-handler.ts); the name shows in the function's log.
 */
export const CLI_SYNC_EVENT = { 'detail-type': 'petstore keys CLI', source: 'petstore.keys-cli' }

export interface AwsStageSyncOptions {
  lambda: LambdaClient
  /** The stack output KeySyncFunctionName. */
  functionName: string
  /** The repository over the stack output KeyMirrorTableName. */
  mirror: Pick<KeyMirrorReader, 'get'>
  /** The stack output KeyMirrorTableName (named in errors). */
  tableName: string
  /** The key sync's state in the same table (`keys held`). */
  state?: Pick<KeySyncStateRepository, 'get'>
}

/**
 * A deployed stage: a synchronous Invoke of the key-sync function (its answer is the run's
 * KeySyncResult), and a strongly consistent GetItem on the key mirror table. The operator's
 * credentials need lambda:InvokeFunction on the one and dynamodb:GetItem on the other; a failure
 * says which is missing.
 */
export class AwsStageSync implements StageSync, HeldRemovals {
  readonly #options: AwsStageSyncOptions

  constructor(options: AwsStageSyncOptions) {
    this.#options = options
  }

  async run(ids: readonly string[], signal?: AbortSignal): Promise<KeySyncResult> {
    return this.#invoke({ ...CLI_SYNC_EVENT, detail: { ids } }, signal)
  }

  async held(): Promise<Record<string, HeldRemoval>> {
    if (!this.#options.state) throw new SyncFailure('No key sync state to read', false)
    return (await this.#options.state.get()).heldRemovals ?? {}
  }

  async confirm(keyIds: readonly string[]): Promise<KeySyncResult> {
    return this.#invoke({ confirmRemovals: keyIds })
  }

  async #invoke(event: object, signal?: AbortSignal): Promise<KeySyncResult> {
    const { functionName } = this.#options
    let answer: InvokeCommandOutput
    try {
      answer = await this.#options.lambda.send(
        new InvokeCommand({
          FunctionName: functionName,
          InvocationType: 'RequestResponse',
          Payload: new TextEncoder().encode(JSON.stringify(event)),
        }),
        signal ? { abortSignal: signal } : {},
      )
    } catch (error) {
      if (isThrottled(error)) {
        throw new SyncFailure(`Lambda throttled the key sync (${described(error)})`, true)
      }
      if (isDenied(error)) {
        throw new SyncFailure(
          `Your role may not run the key sync (${described(error)}): add lambda:InvokeFunction on ${functionName} to your role`,
          false,
        )
      }
      if (isMissing(error)) {
        throw new SyncFailure(
          `No key-sync function ${functionName} in this account and Region (${described(error)}): check --region (or AWS_REGION), or deploy the stage`,
          false,
        )
      }
      throw new SyncFailure(`Invoking ${functionName} failed (${described(error)})`, false)
    }
    const { FunctionError, Payload } = answer
    const text = Payload ? new TextDecoder().decode(Payload) : ''
    if (FunctionError) {
      let message = FunctionError
      let errorType = FunctionError
      try {
        const parsed = JSON.parse(text) as { errorMessage?: string; errorType?: string }
        message = parsed.errorMessage ?? message
        errorType = parsed.errorType ?? errorType
      } catch {
        // The function's answer was not JSON: its error type is all there is.
      }
      throw new SyncFailure(
        `The key sync failed: ${message} (${errorType}; see the key-sync log)`,
        errorType === READ_AGAIN || isThrottled({ name: errorType }),
      )
    }
    const result = parsedAnswer(text)
    if (!isKeySyncResult(result)) {
      throw new SyncFailure(
        `${functionName} answered something other than a key sync result: is KeySyncFunctionName the stage's key-sync function?`,
        false,
      )
    }
    return result
  }

  async mirrored(keyHash: string): Promise<MirrorView | undefined> {
    const { tableName } = this.#options
    try {
      // Strongly consistent: "it gets 401 now" must not rest on a replica a moment behind.
      const item = await this.#options.mirror.get(keyHash, { consistent: true })
      return item ? viewOf(item) : undefined
    } catch (error) {
      if (isThrottled(error)) {
        throw new SyncFailure(`Reading the key mirror was throttled (${described(error)})`, true)
      }
      if (isDenied(error)) {
        throw new SyncFailure(
          `Your role may not read the key mirror (${described(error)}): add dynamodb:GetItem on table ${tableName} to your role`,
          false,
        )
      }
      if (isMissing(error)) {
        throw new SyncFailure(
          `No key mirror table ${tableName} in this account and Region (${described(error)}): check --region (or AWS_REGION), or deploy the stage`,
          false,
        )
      }
      throw new SyncFailure(
        `Reading the key mirror ${tableName} failed (${described(error)})`,
        false,
      )
    }
  }
}
