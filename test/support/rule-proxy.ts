import { createServer, type IncomingMessage, request, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/** What a rule proxy does with a request: forward it, hold it unanswered, or answer itself. */
export type ProxyRule = (
  req: IncomingMessage,
) => 'forward' | 'hold' | { status: number; body: unknown; headers?: Record<string, string> }

export interface RuleProxy {
  origin: string
  baseUrl: string
  /** Every answered request with the status it got. */
  seen: { method: string; path: string; status: number }[]
  /** Resolves when the first request is held. */
  firstHeld: Promise<void>
  close(): Promise<void>
}

/**
 * A proxy in front of the local server (API and control plane) that breaks what `rule` says and
 * forwards the rest, with the server's own Host, as a reverse proxy does (the control plane
 * refuses any other).
 */
export const startRuleProxy = async (targetUrl: string, rule: ProxyRule): Promise<RuleProxy> => {
  const target = new URL(targetUrl)
  const held: ServerResponse[] = []
  let onHeld: () => void = () => undefined
  const firstHeld = new Promise<void>((resolve) => {
    onHeld = resolve
  })
  const seen: RuleProxy['seen'] = []
  const proxy = createServer((req, res) => {
    res.on('finish', () =>
      seen.push({ method: req.method ?? '', path: req.url ?? '', status: res.statusCode }),
    )
    const action = rule(req)
    if (action === 'hold') {
      held.push(res)
      onHeld()
      return
    }
    if (action !== 'forward') {
      req.resume()
      res.writeHead(action.status, { 'content-type': 'application/json', ...action.headers })
      res.end(JSON.stringify(action.body))
      return
    }
    const forward = request(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: target.host },
      },
      (upstream) => {
        res.writeHead(upstream.statusCode ?? 502, upstream.headers)
        upstream.pipe(res)
      },
    )
    req.pipe(forward)
  })
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
  const origin = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
  return {
    origin,
    baseUrl: `${origin}/v1`,
    seen,
    firstHeld,
    close: async () => {
      for (const res of held) res.destroy()
      await new Promise((resolve) => proxy.close(resolve))
    },
  }
}
