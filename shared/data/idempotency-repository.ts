import { createHash, randomUUID } from 'node:crypto'
import {
  type DynamoDBDocumentClient,
  GetCommand,
  type NativeAttributeValue,
  PutCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb'
import { IDEMPOTENCY_WINDOW_SECONDS } from '#shared/domain/idempotency-schema.ts'
import { isConditionFailure, oldItemOf } from '#shared/errors/datastore-errors.ts'
import { type Clock, systemClock } from '#shared/time/clock.ts'
import { IDEMPOTENCY_TABLE } from './table-keys.ts'

/**
 * Why not @aws-lambda-powertools/idempotency: its IN_PROGRESS record cannot carry the pet id, so
 * a crash between the pet write and the "completed" save lets a retry after the in-progress
 * expiry run the creation again and make a second pet. Here the record claims the id before the
 * pet is written, and whoever takes over a dead attempt writes the same id, which a put never
 * overwrites. Single-item conditional writes only: dynalite has no transactions.
 */

/** Where a (key, Idempotency-Key) pair stands after a claim. */
export type IdempotencyClaim =
  /** This request owns the record: write pet `petId` (a crashed attempt may have already). */
  | { kind: 'claimed'; recordKey: string; petId: number; takeover: boolean }
  /** The first request finished: answer with its response body. */
  | { kind: 'replay'; petId: number; response: string }
  /** The first request is still running: retry after its lease. */
  | { kind: 'in_progress'; retryAfterMs: number }
  /** The key was used with a different body. */
  | { kind: 'mismatch' }

export interface ClaimRequest {
  /** Whose key it is: the API key's id, so two clients never share an Idempotency-Key. */
  scope: string
  idempotencyKey: string
  /** SHA-256 of the canonical request body (see requestHash). */
  requestHash: string
  /** The id to create the pet under if this request is the first. */
  petId: number
  /** How long the claim holds before another request may take it over. */
  leaseMs: number
}

export interface IdempotencyRepositoryOptions {
  client: DynamoDBDocumentClient
  tableName: string
  clock?: Clock
}

type Item = Record<string, NativeAttributeValue>

const STATE = { inProgress: 'IN_PROGRESS', completed: 'COMPLETED' } as const

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex')

/** A canonical text's SHA-256: equal bodies hash alike whatever their member order or spacing. */
export const requestHash = (canonical: string): string => sha256(canonical)

/** The record's key: a hash, so neither the API key id nor the client's string is stored. */
export const idempotencyRecordKey = (scope: string, idempotencyKey: string): string =>
  sha256(`${scope}\n${idempotencyKey}`)

/** Numbers arrive wrapped (see dynamo-client). */
const numberOf = (value: unknown): number => Number(String(value ?? Number.NaN))

/** Owns the idempotency records table: keys, conditions, leases and TTL. */
export class IdempotencyRepository {
  readonly #client: DynamoDBDocumentClient
  readonly #tableName: string
  readonly #clock: Clock

  constructor({ client, tableName, clock = systemClock }: IdempotencyRepositoryOptions) {
    this.#client = client
    this.#tableName = tableName
    this.#clock = clock
  }

  /**
   * One conditional put claims a new or expired record (TTL deletes lazily, so an expired item
   * counts as absent). Otherwise the old item, returned by the failed condition on AWS (read
   * again where the backend does not return it), says what this request gets.
   */
  async claim(request: ClaimRequest): Promise<IdempotencyClaim> {
    const recordKey = idempotencyRecordKey(request.scope, request.idempotencyKey)
    // Marks this request's own claim: when the SDK retries a put whose answer was lost after
    // DynamoDB applied it, the record found is this request's, not another's in flight.
    const attemptId = randomUUID()
    // A record can vanish or change between the failed put and the read: look again, boundedly.
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const now = this.#clock()
      try {
        await this.#client.send(
          new PutCommand({
            TableName: this.#tableName,
            Item: {
              [IDEMPOTENCY_TABLE.partitionKey]: recordKey,
              state: STATE.inProgress,
              requestHash: request.requestHash,
              petId: request.petId,
              attemptId,
              leaseUntil: now + request.leaseMs,
              [IDEMPOTENCY_TABLE.ttlAttribute]: Math.floor(now / 1000) + IDEMPOTENCY_WINDOW_SECONDS,
            },
            ConditionExpression: 'attribute_not_exists(#pk) OR #expiresAt < :nowSeconds',
            ExpressionAttributeNames: {
              '#pk': IDEMPOTENCY_TABLE.partitionKey,
              '#expiresAt': IDEMPOTENCY_TABLE.ttlAttribute,
            },
            ExpressionAttributeValues: { ':nowSeconds': Math.floor(now / 1000) },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        )
        return { kind: 'claimed', recordKey, petId: request.petId, takeover: false }
      } catch (error) {
        if (!isConditionFailure(error)) throw error
        const existing = oldItemOf(error) ?? (await this.#read(recordKey))
        if (!existing) continue
        if (existing.attemptId === attemptId) {
          return { kind: 'claimed', recordKey, petId: request.petId, takeover: false }
        }
        const outcome = await this.#settle(recordKey, existing, { ...request, attemptId }, now)
        if (outcome) return outcome
      }
    }
    // Three races lost in a row: as good as a request still in flight.
    return { kind: 'in_progress', retryAfterMs: 1_000 }
  }

  /** Marks the record done with the response every repeat will get. */
  async complete(recordKey: string, petId: number, response: string): Promise<void> {
    await this.#client.send(
      new UpdateCommand({
        TableName: this.#tableName,
        Key: { [IDEMPOTENCY_TABLE.partitionKey]: recordKey },
        UpdateExpression: 'SET #state = :completed, #response = :response REMOVE #leaseUntil',
        // Only the record that names this pet: never overwrite a newer use of an expired key.
        ConditionExpression: '#petId = :petId',
        ExpressionAttributeNames: {
          '#state': 'state',
          '#response': 'response',
          '#leaseUntil': 'leaseUntil',
          '#petId': 'petId',
        },
        ExpressionAttributeValues: {
          ':completed': STATE.completed,
          ':response': response,
          ':petId': petId,
        },
      }),
    )
  }

  /**
   * Ends the lease of a failed attempt at once, so the client's retry takes over (with the same
   * pet id) instead of waiting for the lease. Best effort: when it fails the lease runs out.
   */
  async release(recordKey: string, petId: number): Promise<void> {
    await this.#client.send(
      new UpdateCommand({
        TableName: this.#tableName,
        Key: { [IDEMPOTENCY_TABLE.partitionKey]: recordKey },
        UpdateExpression: 'SET #leaseUntil = :zero',
        ConditionExpression: '#state = :inProgress AND #petId = :petId',
        ExpressionAttributeNames: {
          '#leaseUntil': 'leaseUntil',
          '#state': 'state',
          '#petId': 'petId',
        },
        ExpressionAttributeValues: { ':zero': 0, ':inProgress': STATE.inProgress, ':petId': petId },
      }),
    )
  }

  async #settle(
    recordKey: string,
    existing: Item,
    request: ClaimRequest & { attemptId: string },
    now: number,
  ): Promise<IdempotencyClaim | undefined> {
    if (numberOf(existing[IDEMPOTENCY_TABLE.ttlAttribute]) < Math.floor(now / 1000))
      return undefined
    if (existing.requestHash !== request.requestHash) return { kind: 'mismatch' }
    const petId = numberOf(existing.petId)
    if (existing.state === STATE.completed) {
      return { kind: 'replay', petId, response: String(existing.response) }
    }
    const leaseUntil = numberOf(existing.leaseUntil)
    if (leaseUntil > now) return { kind: 'in_progress', retryAfterMs: leaseUntil - now }
    // The first attempt died (or failed and released): take over its record and its pet id. The
    // takeover names this attempt, so the SDK's retry of a takeover DynamoDB applied but answered
    // late finds its own lease (not a live one to wait for: a 409 for the whole lease).
    try {
      await this.#client.send(
        new UpdateCommand({
          TableName: this.#tableName,
          Key: { [IDEMPOTENCY_TABLE.partitionKey]: recordKey },
          UpdateExpression: 'SET #leaseUntil = :newLease, #attemptId = :attemptId',
          ConditionExpression:
            '#state = :inProgress AND (#leaseUntil = :oldLease OR #attemptId = :attemptId)',
          ExpressionAttributeNames: {
            '#leaseUntil': 'leaseUntil',
            '#state': 'state',
            '#attemptId': 'attemptId',
          },
          ExpressionAttributeValues: {
            ':newLease': now + request.leaseMs,
            ':oldLease': leaseUntil,
            ':inProgress': STATE.inProgress,
            ':attemptId': request.attemptId,
          },
        }),
      )
    } catch (error) {
      if (isConditionFailure(error)) return undefined // someone else moved first: look again
      throw error
    }
    return { kind: 'claimed', recordKey, petId, takeover: true }
  }

  async #read(recordKey: string): Promise<Item | undefined> {
    const { Item } = await this.#client.send(
      new GetCommand({
        TableName: this.#tableName,
        Key: { [IDEMPOTENCY_TABLE.partitionKey]: recordKey },
        ConsistentRead: true,
      }),
    )
    return Item
  }
}
