import { GetSecretValueCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager'
import {
  KEY_MAC_PATH,
  STORE_KEYS_PATH,
  type StoreKeyRequest,
  type StoreKeyStore,
} from '#keys/store-key-requests.ts'
import { type MacSecrets, parseMacSecrets } from '#shared/auth/project-key.ts'
import type { StoreKeyItem } from '#shared/data/store-key-item.ts'
import { KeyAdminError } from './key-admin-error.ts'
import { refusingRedirects } from './no-redirect-fetch.ts'

/**
 * Where the keys CLI reaches a stage's store keys and MAC secret: on a deployed stage the store
 * key table itself (keys/store-key-repository.ts, the operator's DynamoDB credentials) and the
 * current MAC secret in Secrets Manager (GetSecretValue on the data stack's KeyMacSecretArn);
 * locally the control plane, which runs the same repository on its own table.
 */

/** The current MAC secret of a deployed stage: one GetSecretValue, once per command. */
export const deployedMacSecrets =
  (client: SecretsManagerClient, secretArn: string, version: number) =>
  async (): Promise<MacSecrets> => {
    try {
      const { SecretString } = await client.send(new GetSecretValueCommand({ SecretId: secretArn }))
      return parseMacSecrets(`${version}:${SecretString ?? ''}`)
    } catch (error) {
      const { name, message } = error as Error
      throw new KeyAdminError(
        `The stage's key MAC secret could not be read (${name}: ${message}): your role needs secretsmanager:GetSecretValue on ${secretArn} (docs/operations.md#iam-permissions)`,
        { cause: error },
      )
    }
  }

/** A stage whose outputs name no store key table or MAC secret (deployed before store keys). */
export const unavailableMacSecrets = (why: string) => async (): Promise<MacSecrets> => {
  throw new KeyAdminError(why)
}

const post = async <Answer>(
  fetchWith: typeof fetch,
  url: string,
  body: unknown,
): Promise<Answer> => {
  const response = await fetchWith(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  const answer = (await response.json().catch(() => ({}))) as Answer & { message?: string }
  if (response.status !== 200) {
    throw new KeyAdminError(
      `The local server refused a store key call (HTTP ${response.status}): ${answer.message ?? 'no message'}`,
    )
  }
  return answer
}

/** The local control plane's store key table, through POST /_local/store-keys. */
export const localStoreKeys = (origin: string, fetchImpl: typeof fetch): StoreKeyStore => {
  const fetchWith = refusingRedirects(fetchImpl)
  const ask = <Answer>(request: StoreKeyRequest) =>
    post<Answer>(fetchWith, `${origin}${STORE_KEYS_PATH}`, request)
  return {
    put: async (item) => {
      await ask({ op: 'put', item })
    },
    get: async (keyId) =>
      (await ask<{ item: StoreKeyItem | null }>({ op: 'get', keyId })).item ?? undefined,
    change: async (keyId, change) =>
      (await ask<{ item: StoreKeyItem }>({ op: 'change', keyId, change })).item,
    delete: async (keyId) => (await ask<{ existed: boolean }>({ op: 'delete', keyId })).existed,
    page: (options) => ask({ op: 'page', ...options }),
  }
}

/** The local stage's MAC secrets, through GET /_local/key-mac. */
export const localMacSecrets =
  (origin: string, fetchImpl: typeof fetch) => async (): Promise<MacSecrets> => {
    const response = await refusingRedirects(fetchImpl)(`${origin}${KEY_MAC_PATH}`)
    const body = (await response.json().catch(() => ({}))) as { secrets?: string; message?: string }
    if (response.status !== 200 || typeof body.secrets !== 'string') {
      throw new KeyAdminError(
        `The local server refused its key MAC secret (HTTP ${response.status}): ${body.message ?? 'no message'}`,
      )
    }
    return parseMacSecrets(body.secrets)
  }
