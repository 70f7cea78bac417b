import type { AttributeValue } from '@aws-sdk/client-dynamodb'
import type { NativeAttributeValue } from '@aws-sdk/util-dynamodb'
import { unmarshall } from '@aws-sdk/util-dynamodb'
import {
  isServerError,
  isThrottlingError,
  isTransientError,
} from '@smithy/service-error-classification'

// Which DynamoDB errors are an outage (503) and which a misconfiguration (500).

type SdkError = Parameters<typeof isTransientError>[0]

/**
 * DynamoDB's server-fault exception names, also matched without `$metadata`: the SDK classifies
 * 5xx by status code only, and an error that lost its metadata would otherwise become a 500.
 */
const SERVER_FAULT_NAMES = new Set(['InternalServerError', 'ServiceUnavailable'])

/**
 * Failures of the datastore that a retry may cure: throttling, DynamoDB's own 5xx, timeouts and
 * lost connections. They become 503 service_unavailable with Retry-After, not 500. The SDK's own
 * retry classification decides: throttling names and 429, TimeoutError, Node's connection and DNS
 * error codes (ECONNREFUSED, ECONNRESET, ETIMEDOUT, EPIPE, ENOTFOUND, EAI_AGAIN, ...), 5xx.
 */
export const isDatastoreUnavailable = (error: unknown): boolean => {
  if (typeof error !== 'object' || error === null) return false
  const sdkError = error as SdkError
  return (
    isThrottlingError(sdkError) ||
    isTransientError(sdkError) ||
    isServerError(sdkError) ||
    SERVER_FAULT_NAMES.has(sdkError.name)
  )
}

/**
 * Failures that no retry cures because the deployment itself is wrong: a missing table, a role
 * without the permission, credentials DynamoDB refuses, a request the table's schema rejects.
 * Matched by the exception names DynamoDB and STS return.
 */
const CONFIGURATION_ERROR_NAMES = new Set([
  'ResourceNotFoundException',
  'AccessDeniedException',
  'UnrecognizedClientException',
  'InvalidSignatureException',
  'MissingAuthenticationTokenException',
  'ExpiredTokenException',
  'ValidationException',
])

export const isDatastoreConfigurationError = (error: unknown): boolean =>
  typeof error === 'object' &&
  error !== null &&
  CONFIGURATION_ERROR_NAMES.has((error as { name?: string }).name ?? '')

/** A conditional write refused by its condition: an expected outcome the caller decides about. */
export const isConditionFailure = (
  error: unknown,
): error is { name: 'ConditionalCheckFailedException'; Item?: Record<string, AttributeValue> } =>
  (error as { name?: unknown } | null)?.name === 'ConditionalCheckFailedException'

/**
 * The item a refused conditional write found (ReturnValuesOnConditionCheckFailure: ALL_OLD), in
 * the document client's shape. The document client does not unmarshall an exception's Item: it
 * arrives as raw AttributeValues (`{ S: ... }`), as AWS and DynamoDB Local send it. Undefined
 * when the backend returned none (dynalite): callers read the item instead.
 */
export const oldItemOf = (error: {
  Item?: Record<string, AttributeValue>
}): Record<string, NativeAttributeValue> | undefined =>
  error.Item ? unmarshall(error.Item, { wrapNumbers: true }) : undefined
