import type { OperationId } from './routes-config.ts'

/**
 * listPets, createPet and getPet: the longest path that can still answer makes three DynamoDB
 * calls in a row (limiter, id block, put), each bounded well inside this (dynamo-client.ts).
 */
const PET_OPERATION_SECONDS = 10

/**
 * Each function's Lambda timeout, in seconds, in one place: the CDK deploys them, the local
 * gateway reports them to the handlers (`getRemainingTimeInMillis`), and the DynamoDB client
 * limits and the key sync's lease are sized from them.
 */
export const FUNCTION_TIMEOUT_SECONDS = {
  listPets: PET_OPERATION_SECONDS,
  createPet: PET_OPERATION_SECONDS,
  getPet: PET_OPERATION_SECONDS,
  /** Small and quick: it hashes a header and reads one item of the key mirror. */
  authorizer: 5,
  /** As long as its schedule's interval: a hung run ends before a second scheduled one queues. */
  keySync: 60,
} as const satisfies Record<OperationId | 'authorizer' | 'keySync', number>
