import { type OperationId, ROUTES } from './routes-config.ts'

/**
 * Each function's Lambda timeout, in seconds, in one place: the operations' from the route table,
 * the others here. The CDK deploys them, the local gateway reports them to the handlers
 * (`getRemainingTimeInMillis`), and the DynamoDB client limits and the key sync's lease are sized
 * from them.
 */
export const FUNCTION_TIMEOUT_SECONDS = {
  ...(Object.fromEntries(
    ROUTES.map((route) => [route.operationId, route.timeoutSeconds]),
  ) as Record<OperationId, number>),
  /** Small and quick: it hashes a header and reads one item of the key mirror. */
  authorizer: 5,
  /** As long as its schedule's interval: a hung run ends before a second scheduled one queues. */
  keySync: 60,
  /**
   * A delivery of the access log or the minute's reconcile: a few DynamoDB calls and two WAF IP
   * sets read (and written when they change) with WAF's retries; well inside its schedule's minute.
   */
  addressBlock: 30,
} as const
