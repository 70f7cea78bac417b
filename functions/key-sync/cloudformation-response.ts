import { request } from 'node:https'
import type { CloudFormationCustomResourceEvent } from 'aws-lambda'

/**
 * The deploy's own sync: CloudFormation invokes the key-sync function as a custom resource
 * (`KeySyncOnDeploy`) and waits for an answer PUT to the event's pre-signed `ResponseURL`
 * ("Custom resources", AWS CloudFormation User Guide), so a deploy completes with a fresh mirror.
 */
export const isCustomResourceEvent = (event: unknown): event is CloudFormationCustomResourceEvent =>
  typeof event === 'object' &&
  event !== null &&
  typeof (event as { RequestType?: unknown }).RequestType === 'string' &&
  typeof (event as { ResponseURL?: unknown }).ResponseURL === 'string'

/** The one physical id of the resource: a sync has nothing to replace or delete. */
export const KEY_SYNC_RESOURCE_ID = 'petstore-key-sync-on-deploy'

export interface CustomResourceAnswer {
  status: 'SUCCESS' | 'FAILED'
  /** Shown in the stack events when FAILED: never a key value. */
  reason?: string
  data?: Record<string, string | number | boolean>
}

/** PUTs a body to a pre-signed URL; tests pass a recorder. */
export type ResponseSender = (url: string, body: string) => Promise<void>

/** The body CloudFormation expects, for this event. */
export const customResourceResponse = (
  event: CloudFormationCustomResourceEvent,
  { status, reason, data }: CustomResourceAnswer,
): string =>
  JSON.stringify({
    Status: status,
    Reason: (reason ?? status).slice(0, 1_000),
    PhysicalResourceId: KEY_SYNC_RESOURCE_ID,
    StackId: event.StackId,
    RequestId: event.RequestId,
    LogicalResourceId: event.LogicalResourceId,
    ...(data ? { Data: data } : {}),
  })

/** Pre-signed S3 URLs refuse a content type the signature does not name: send none. */
export const httpsPut: ResponseSender = (url, body) =>
  new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'PUT', headers: { 'content-type': '', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        res.resume()
        res.on('end', () =>
          res.statusCode !== undefined && res.statusCode < 300
            ? resolve()
            : reject(new Error(`CloudFormation response PUT answered ${res.statusCode}`)),
        )
      },
    )
    req.setTimeout(10_000, () => req.destroy(new Error('CloudFormation response PUT timed out')))
    req.on('error', reject)
    req.end(body)
  })
