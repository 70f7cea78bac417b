import { connect } from 'node:net'

/**
 * HTTP/1.1 by hand, for requests no client library sends (no Host, CONNECT, unusual request
 * targets and Expect values, bodies sent in parts): what the server writes back, byte for byte.
 */
export interface RawAnswer {
  /** Everything received, interim responses included. */
  text: string
  /** The final (non-1xx) response. */
  status: number
  headers: Record<string, string>
  body: string
}

/** Splits off the first response in text, or undefined while it is still incomplete. */
const firstResponse = (text: string) => {
  const end = text.indexOf('\r\n\r\n')
  if (end < 0) return undefined
  const [statusLine = '', ...lines] = text.slice(0, end).split('\r\n')
  const headers: Record<string, string> = {}
  for (const line of lines) {
    const colon = line.indexOf(':')
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
  }
  const status = Number(statusLine.split(' ')[1])
  const length = status < 200 ? 0 : Number(headers['content-length'] ?? 0)
  const bodyStart = end + 4
  if (Buffer.byteLength(text.slice(bodyStart)) < length) return undefined
  const body = Buffer.from(text.slice(bodyStart)).subarray(0, length).toString('utf8')
  return { status, headers, body, rest: text.slice(bodyStart + body.length) }
}

/** The final response once complete, skipping interim (1xx) ones. */
const finalResponse = (text: string) => {
  let rest = text
  for (;;) {
    const response = firstResponse(rest)
    if (!response) return undefined
    if (response.status >= 200) return response
    rest = response.rest
  }
}

export interface RawExchangeOptions {
  /** Written once the server's first bytes arrive (e.g. a body after `100 Continue`). */
  afterFirstAnswer?: string
  /** Give up after this long and return what arrived (a status of 0 if nothing complete). */
  timeoutMs?: number
}

/**
 * Writes request as given (text as UTF-8, or exact bytes) to base's host and port, and reads until a
 * final response is whole.
 */
export const rawExchange = (
  base: URL,
  request: string | Buffer,
  { afterFirstAnswer, timeoutMs = 5_000 }: RawExchangeOptions = {},
): Promise<RawAnswer> =>
  new Promise((resolve, reject) => {
    const socket = connect(Number(base.port), base.hostname)
    let text = ''
    let answered = false
    const finish = () => {
      clearTimeout(timer)
      socket.destroy()
      const response = finalResponse(text)
      resolve({
        text,
        status: response?.status ?? 0,
        headers: response?.headers ?? {},
        body: response?.body ?? '',
      })
    }
    const timer = setTimeout(finish, timeoutMs)
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => {
      text += chunk
      if (!answered && afterFirstAnswer !== undefined) socket.write(afterFirstAnswer)
      answered = true
      if (finalResponse(text)) finish()
    })
    socket.on('close', finish)
    socket.on('error', (error) => {
      clearTimeout(timer)
      reject(error)
    })
    socket.write(request)
  })

/**
 * Writes requests back to back on one connection (HTTP/1.1 pipelining) in a single write, and
 * reads until every request has its final response or the server closes: the answers in order.
 * No clock: the server's own answers end it (its function timeout answers 503 in time).
 */
export const rawPipeline = (base: URL, requests: string[]): Promise<Omit<RawAnswer, 'text'>[]> =>
  new Promise((resolve, reject) => {
    const socket = connect(Number(base.port), base.hostname)
    let received = ''
    const answers: Omit<RawAnswer, 'text'>[] = []
    const finish = () => {
      socket.destroy()
      resolve(answers)
    }
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => {
      received += chunk
      for (let response = firstResponse(received); response; response = firstResponse(received)) {
        received = response.rest
        if (response.status < 200) continue
        answers.push({ status: response.status, headers: response.headers, body: response.body })
      }
      if (answers.length >= requests.length) finish()
    })
    socket.on('close', finish)
    socket.on('error', reject)
    socket.write(requests.join(''))
  })
