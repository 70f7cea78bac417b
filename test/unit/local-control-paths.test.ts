import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http'
import { describe, expect, it } from 'vitest'
import { isLoopback, withControlPaths } from '#local/control-plane/control-plane-handler.ts'

/**
 * The local control plane shares the server with the API but never answers another machine:
 * with HOST=0.0.0.0 its paths are, for anyone but loopback, an unknown route of the gateway.
 */
const route = (url: string, remoteAddress: string): 'control' | 'gateway' => {
  let reached: 'control' | 'gateway' = 'gateway'
  const control: RequestListener = () => {
    reached = 'control'
  }
  const gateway: RequestListener = () => {
    reached = 'gateway'
  }
  withControlPaths(control, gateway)(
    { url, socket: { remoteAddress } } as unknown as IncomingMessage,
    {} as ServerResponse,
  )
  return reached
}

describe('local control paths', () => {
  it.each([
    ['127.0.0.1', true],
    ['127.8.9.10', true],
    ['::1', true],
    ['::ffff:127.0.0.1', true],
    ['192.168.1.20', false],
    ['::ffff:10.0.0.1', false],
    ['fe80::1', false],
  ])('treat %s as loopback: %s', (address, loopback) => {
    expect(isLoopback(address)).toBe(loopback)
  })

  it('send /_local/ paths from loopback to the control plane, everything else to the gateway', () => {
    expect(route('/_local/apigateway/apikeys', '127.0.0.1')).toBe('control')
    expect(route('/_local/outputs', '::1')).toBe('control')
    expect(route('/_local/apigateway/apikeys', '192.168.1.20')).toBe('gateway')
    expect(route('/v1/pets', '127.0.0.1')).toBe('gateway')
    expect(route('/_localx/apikeys', '127.0.0.1')).toBe('gateway')
    expect(route('/v1/_local/outputs', '127.0.0.1')).toBe('gateway')
  })
})
