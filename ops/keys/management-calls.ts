import {
  type APIGatewayClient,
  type ApiKey,
  BadRequestException,
  GetApiKeyCommand,
  GetApiKeysCommand,
  NotFoundException,
} from '@aws-sdk/client-api-gateway'
import { type CallPacer, unpaced } from '#keys/call-pacer.ts'
import { shownArgument } from '#keys/key-value-mask.ts'
import { PAGE_SIZE, readWholeListing } from '#keys/management-listing.ts'
import type { StageOutputs } from '#ops/stage/stack-outputs-reader.ts'
import type { MacSecrets } from '#shared/auth/project-key.ts'
import { type Clock, systemClock } from '#shared/time/clock.ts'
import { causeOf, Interrupted, isThrottled, KeyAdminError, noSuchKey } from './key-admin-error.ts'
import { permissionAdvice } from './management-permissions-config.ts'
import type { StageSync } from './stage-sync-client.ts'

export interface KeyAdminOptions {
  client: APIGatewayClient
  outputs: StageOutputs
  sync: StageSync
  /** The stage's name in plan names and tags (`local`, `staging`, `production`). */
  stage: string
  /** The Region in the ARNs TagResource takes. */
  region: string
  pacer?: CallPacer
  clock?: Clock
  sleep?: (ms: number) => Promise<void>
  /** How long a command waits for the key mirror to show its change. */
  mirrorWaitMs?: number
  /**
   * The stage's MAC secrets, which every key the CLI makes carries (shared/auth/project-key.ts):
   * read once, when a command first makes a key (Secrets Manager on AWS, the local control plane's
   * `/_local/key-mac` locally).
   */
  macSecrets: () => Promise<MacSecrets>
  /**
   * The keys CLI's command line for this stage, which messages name for a fix by hand
   * (`npm run keys -- --stage production`); default `npm run keys --`.
   */
  keysCommand?: string
  warn?: (message: string) => void
  /**
   * Aborted on Ctrl-C or SIGTERM: a management call under way finishes (its outcome is then
   * known), the command stops at its next step and undoes a change left halfway; the wait for the
   * mirror ends at once.
   */
  signal?: AbortSignal | undefined
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

// A read made at most once (a failed one is tried again on the next call).
const once = <T>(read: () => Promise<T>): (() => Promise<T>) => {
  let pending: Promise<T> | undefined
  return () => {
    pending ??= read().catch((error: unknown) => {
      pending = undefined
      throw error
    })
    return pending
  }
}

/**
 * The stage a keys command works on and what its management calls share, resolved once from
 * KeyAdminOptions: the one record a command's parts read (ManagementCalls.context).
 */
export interface ManagementContext {
  readonly client: APIGatewayClient
  readonly outputs: StageOutputs
  readonly sync: StageSync
  readonly stage: string
  readonly region: string
  readonly pacer: CallPacer
  readonly clock: Clock
  readonly sleep: (ms: number) => Promise<void>
  readonly mirrorWaitMs: number
  readonly macSecrets: () => Promise<MacSecrets>
  /** The keys CLI's command line for this stage (KeyAdminOptions.keysCommand). */
  readonly keysCommand: string
  readonly warn: (message: string) => void
  readonly signal: AbortSignal | undefined
}

const managementContext = (options: KeyAdminOptions): ManagementContext => ({
  client: options.client,
  outputs: options.outputs,
  sync: options.sync,
  stage: options.stage,
  region: options.region,
  pacer: options.pacer ?? unpaced,
  clock: options.clock ?? systemClock,
  sleep: options.sleep ?? defaultSleep,
  mirrorWaitMs: options.mirrorWaitMs ?? 90_000,
  macSecrets: once(options.macSecrets),
  keysCommand: options.keysCommand ?? 'npm run keys --',
  warn: options.warn ?? (() => undefined),
  signal: options.signal,
})

/**
 * The management calls every keys command makes, on its context: paced, counted, interruptible,
 * and clear about a missing permission.
 */
export class ManagementCalls {
  readonly context: ManagementContext
  /** As given, for a KeyAdmin of the same stage (KeyAdmin.withoutSignal). */
  readonly options: KeyAdminOptions

  /** Management API calls made (each one paced). */
  calls = 0

  constructor(options: KeyAdminOptions) {
    this.options = options
    this.context = managementContext(options)
  }

  /** The exact command that revokes a key by hand. */
  revokeCommand(keyId: string): string {
    return `${this.context.keysCommand} revoke ${keyId}`
  }

  /**
   * Every management call goes through here: paced, counted. A refusal for want of a permission
   * ends the command at once with the action and resource to add to the role (retrying cannot
   * cure it). No abort signal reaches the call: one under way finishes, so its outcome is known.
   */
  readonly send = (async (command: Parameters<APIGatewayClient['send']>[0]) => {
    await this.context.pacer.take()
    this.calls += 1
    try {
      return await this.context.client.send(command)
    } catch (error) {
      const { name, $metadata } = (error ?? {}) as {
        name?: string
        $metadata?: { httpStatusCode?: number }
      }
      if (name === 'AccessDeniedException' || $metadata?.httpStatusCode === 403) {
        const operation = command.constructor.name
        throw new KeyAdminError(
          `API Gateway refused ${operation.replace(/Command$/, '')} (${causeOf(error)}): add ${permissionAdvice(operation, command.input as Record<string, unknown>, this.context.region)} to your role (docs/operations.md#iam-permissions)`,
          { cause: error },
        )
      }
      const status = $metadata?.httpStatusCode ?? 0
      if (status >= 300 && status < 400) {
        // The SDK follows no redirect (the local control plane's secret stays here): say so.
        throw new KeyAdminError(
          `${command.constructor.name.replace(/Command$/, '')} was answered with a redirect (HTTP ${status}), which the keys CLI follows none of: ${this.context.keysCommand.includes('--url') ? 'is the --url the local server itself?' : 'check --region and the stage'}`,
          { cause: error },
        )
      }
      throw error
    }
  }) as APIGatewayClient['send']

  /**
   * Every page of a listing. A `position` seen before would start the listing over (or loop): that
   * ends the command, naming the listing, rather than acting on part of it.
   */
  all<Item>(
    listing: string,
    page: (position: string | undefined) => Promise<{ items?: Item[]; position?: string }>,
  ): Promise<Item[]> {
    return readWholeListing(page, (failure) =>
      failure.kind === 'repeated-position'
        ? new KeyAdminError(
            `API Gateway's ${listing} listing answered page ${failure.page} with a position it gave before: stopped rather than act on part of the listing; try again`,
          )
        : new KeyAdminError(
            `API Gateway's ${listing} listing did not end after ${failure.pages} pages of ${PAGE_SIZE}`,
          ),
    )
  }

  /** Throws once the operator interrupted: called between the steps of a change. */
  checkpoint() {
    if (this.context.signal?.aborted) throw new Interrupted()
  }

  /** A pause of the wait that an interruption ends at once. */
  async pause(ms: number) {
    this.checkpoint()
    const signal = this.context.signal
    if (!signal) return this.context.sleep(ms)
    let onAbort: (() => void) | undefined
    const aborted = new Promise<void>((resolve) => {
      onAbort = resolve
      signal.addEventListener('abort', onAbort, { once: true })
    })
    await Promise.race([this.context.sleep(ms), aborted])
    if (onAbort) signal.removeEventListener('abort', onAbort)
    this.checkpoint()
  }

  async regionKeys(): Promise<ApiKey[]> {
    return this.all('API keys (GetApiKeys)', (position) =>
      this.send(new GetApiKeysCommand({ position, limit: PAGE_SIZE, includeValues: false })),
    )
  }

  /** A key by id, or by its name when that names exactly one key; with its value. */
  async key(idOrName: string): Promise<ApiKey & { id: string; value: string }> {
    let key: ApiKey | undefined
    try {
      key = await this.send(new GetApiKeyCommand({ apiKey: idOrName, includeValue: true }))
    } catch (error) {
      if (!(error instanceof NotFoundException) && !(error instanceof BadRequestException)) {
        throw error
      }
      const named = (
        await this.all('API keys by name (GetApiKeys)', (position) =>
          this.send(
            new GetApiKeysCommand({
              position,
              limit: PAGE_SIZE,
              nameQuery: idOrName,
              includeValues: true,
            }),
          ),
        )
      ).filter((candidate) => candidate.name === idOrName)
      if (named.length > 1) {
        throw new KeyAdminError(
          `${named.length} keys are named ${shownArgument(idOrName)}: use an id (${named.map((k) => k.id).join(', ')})`,
        )
      }
      key = named[0]
    }
    if (!key?.id || !key.value) {
      throw noSuchKey(shownArgument(idOrName), this.context.stage, this.context.keysCommand)
    }
    return key as ApiKey & { id: string; value: string }
  }

  /** Interrupted before the first change of a command: nothing to undo. */
  beforeChange() {
    if (this.context.signal?.aborted) {
      throw new KeyAdminError('Interrupted (SIGINT or SIGTERM) before any change: nothing changed')
    }
  }

  /** A read or call that throttling alone made fail, tried again (three tries after the SDK's). */
  async retryingThrottled<T>(call: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await call()
      } catch (error) {
        if (!isThrottled(error) || attempt >= 3) throw error
        await this.context.sleep(1_000 * attempt)
      }
    }
  }

  keyArn(keyId: string) {
    return `arn:aws:apigateway:${this.context.region}::/apikeys/${keyId}`
  }
}
