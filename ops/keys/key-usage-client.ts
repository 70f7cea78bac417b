import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb'
import { KeyUsageRepository } from '#keys/key-usage-repository.ts'
import {
  KEY_USAGE_PATH,
  type KeyUsageReader,
  type KeyUsageRequest,
} from '#keys/key-usage-requests.ts'
import { KeyAdminError } from './key-admin-error.ts'
import { refusingRedirects } from './no-redirect-fetch.ts'

/**
 * Where the keys CLI reads the rate limiter's counts and suspensions (and lifts them): a deployed
 * stage's rate-limit table with the operator's credentials (dynamodb:BatchGetItem, Scan,
 * UpdateItem on it), or the local server's control plane, which runs the same repository on its
 * own table.
 */

export type { KeyUsageReader }

export const deployedKeyUsage = (
  client: DynamoDBDocumentClient,
  tableName: string,
): KeyUsageReader => new KeyUsageRepository({ client, tableName })

/** A stage whose table is unknown (an older deploy): every read says so. */
export const unavailableKeyUsage = (why: string): KeyUsageReader => {
  const fail = () => Promise.reject(new KeyAdminError(why))
  return { days: fail, countsOn: fail, month: fail, state: fail, suspensions: fail, lift: fail }
}

export const localKeyUsage = (origin: string, fetchImpl: typeof fetch): KeyUsageReader => {
  const fetchWith = refusingRedirects(fetchImpl)
  const ask = async <Answer>(request: KeyUsageRequest): Promise<Answer> => {
    const response = await fetchWith(`${origin}${KEY_USAGE_PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(request),
    })
    const body = (await response.json().catch(() => ({}))) as { message?: string }
    if (response.status !== 200) {
      throw new KeyAdminError(
        `The local server refused a usage read (HTTP ${response.status}): ${body.message ?? 'no message'}`,
      )
    }
    return body as Answer
  }
  return {
    days: (keyId, from, to) => ask({ op: 'days', keyId, from, to }),
    countsOn: (keyIds, day) => ask({ op: 'countsOn', keyIds, day }),
    month: (month) => ask({ op: 'month', month }),
    suspensions: (keyIds) => ask({ op: 'suspensions', keyIds }),
    state: async (keyId) => {
      const state = await ask<{
        minute: number
        day: number
        suspendedUntil?: number
        lastSeenMinute?: number
      }>({ op: 'state', keyId })
      return {
        minute: state.minute,
        day: state.day,
        suspendedUntil: state.suspendedUntil ?? undefined,
        lastSeenMinute: state.lastSeenMinute ?? undefined,
      }
    },
    lift: async (keyId) =>
      (await ask<{ liftedUntil: number | null }>({ op: 'lift', keyId })).liftedUntil ?? undefined,
  }
}
