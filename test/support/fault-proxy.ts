import { createServer, request, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

/**
 * DynamoDB with faults: an HTTP proxy in front of a real DynamoDB endpoint (dynalite or DynamoDB
 * Local) that, for the calls a rule picks, answers what a struggling DynamoDB answers instead of
 * forwarding: throttling (400 ThrottlingException), a 500, a stall (no answer: the SDK's request
 * timeout fires), a dropped connection, or the worst case, a write that DynamoDB applied but
 * whose answer was lost (the connection dropped once DynamoDB answered) or came late (held past the
 * client's request timeout, then sent). The SDK under test runs its real retries against it.
 */
export type FaultKind =
  | 'throttle'
  | 'server-error'
  | 'stall'
  | 'drop'
  | 'lost-answer'
  | 'late-answer'

export interface FaultRule {
  /** DynamoDB operation, e.g. PutItem. */
  operation: string
  /** Matches the request body (table name, a key). */
  matches?: (body: string) => boolean
  kind: FaultKind
  /** How many matching calls fail (the SDK retries; more than maxAttempts fails the call). */
  times: number
  /** late-answer: how long DynamoDB's answer is held (past the client's request timeout). */
  delayMs?: number
}

export interface FaultProxy {
  endpoint: string
  /** Faults injected so far, by kind. */
  injected: Map<FaultKind, number>
  /** Calls the current rule matched, faulted or not (a retry of a faulted call is one more). */
  matched(): number
  setRule(rule: FaultRule | undefined): void
  close(): Promise<void>
}

const ERROR_BODIES: Record<'throttle' | 'server-error', { status: number; type: string }> = {
  throttle: { status: 400, type: 'com.amazonaws.dynamodb.v20120810#ThrottlingException' },
  'server-error': { status: 500, type: 'com.amazonaws.dynamodb.v20120810#InternalServerError' },
}

export const startFaultProxy = async (target: string): Promise<FaultProxy> => {
  const upstream = new URL(target)
  let rule: FaultRule | undefined
  let remaining = 0
  let matched = 0
  const late = new Set<NodeJS.Timeout>()
  const injected = new Map<FaultKind, number>()
  const stalled = new Set<import('node:http').ServerResponse>()

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const body = Buffer.concat(chunks)
      const operation = String(req.headers['x-amz-target'] ?? '')
        .split('.')
        .at(-1)
      const matches =
        rule !== undefined &&
        operation === rule.operation &&
        (rule.matches?.(body.toString()) ?? true)
      if (matches) matched += 1
      const fault = matches && remaining > 0 ? rule?.kind : undefined
      if (fault) {
        remaining -= 1
        injected.set(fault, (injected.get(fault) ?? 0) + 1)
      }
      if (fault === 'throttle' || fault === 'server-error') {
        const { status, type } = ERROR_BODIES[fault]
        res.writeHead(status, { 'Content-Type': 'application/x-amz-json-1.0' })
        res.end(JSON.stringify({ __type: type, message: `injected ${fault}` }))
        return
      }
      if (fault === 'stall') {
        stalled.add(res)
        return
      }
      if (fault === 'drop') {
        req.socket.destroy()
        return
      }
      const forward = request(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: req.method,
          path: req.url,
          headers: req.headers,
        },
        (answer) => {
          const answerChunks: Buffer[] = []
          answer.on('data', (chunk: Buffer) => answerChunks.push(chunk))
          answer.on('end', () => {
            // Applied by DynamoDB, answer lost on the way back.
            if (fault === 'lost-answer') return req.socket.destroy()
            const send = () => {
              if (res.destroyed || res.socket?.destroyed) return
              res.writeHead(answer.statusCode ?? 500, answer.headers)
              res.end(Buffer.concat(answerChunks))
            }
            if (fault !== 'late-answer') return send()
            // Applied by DynamoDB, answered after the client gave up on it (and retried).
            const timer = setTimeout(() => {
              late.delete(timer)
              send()
            }, rule?.delayMs ?? 1_500)
            late.add(timer)
          })
        },
      )
      forward.on('error', () => req.socket.destroy())
      forward.end(body)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    endpoint: `http://127.0.0.1:${port}`,
    injected,
    matched: () => matched,
    setRule: (next) => {
      rule = next
      remaining = next?.times ?? 0
      matched = 0
    },
    close: async () => {
      for (const timer of late) clearTimeout(timer)
      for (const res of stalled) res.socket?.destroy()
      server.closeAllConnections()
      await new Promise((resolve) => server.close(() => resolve(undefined)))
    },
  }
}
