/** What requestIdOf reads: any middy request, HTTP or authorizer. */
interface RequestWithIds {
  event?: { requestContext?: { requestId?: string } | null } | null
  context?: { awsRequestId?: string } | null
}

/**
 * The id a client can quote: API Gateway's request id (its `x-amzn-RequestId` header), else the
 * Lambda invocation's. Error bodies and the log correlation id both use it.
 */
export const requestIdOf = (request: RequestWithIds): string | undefined =>
  request.event?.requestContext?.requestId ?? request.context?.awsRequestId
