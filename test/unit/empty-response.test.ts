import { describe, expect, it } from 'vitest'
import { emptyResponse } from '#shared/http/http-response.ts'
import { httpPipeline } from '#shared/middleware/http-pipeline.ts'
import { lambdaContext, restEvent } from '#test/support/api-gateway-events.ts'
import { fakeLogger } from '#test/support/fake-logger.ts'

describe('an answer without a body', () => {
  it('leaves the pipeline as a 204 with no body and no Content-Type, and keeps every header of every answer', async () => {
    const handler = httpPipeline<never>({
      logger: fakeLogger(),
      responseHeaders: { 'Access-Control-Allow-Origin': '*' },
    }).handler(async () => {
      return emptyResponse(204, { 'X-RateLimit-Remaining': '59' })
    })
    const response = await handler(restEvent({ method: 'DELETE' }), lambdaContext('petstore-test'))
    expect(response.statusCode).toBe(204)
    expect(response.body).toBe('')
    expect(Object.keys(response.headers ?? {}).map((name) => name.toLowerCase())).not.toContain(
      'content-type',
    )
    expect(response.headers).toMatchObject({
      'Access-Control-Allow-Origin': '*',
      'X-RateLimit-Remaining': '59',
    })
  })
})
