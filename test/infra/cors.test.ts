import type { Template } from 'aws-cdk-lib/assertions'
import { describe, expect, it } from 'vitest'
import { readStageConfig } from '#infra/config/stage-config.ts'
import { API_VERSION_PATH, ROUTES } from '#shared/config/routes-config.ts'
import { CORS_EXPOSED_HEADERS } from '#shared/http/cors-headers.ts'
import { appStage, envOf, functionByService, propsOf, resourcesOf } from './support/synth-app.ts'

/**
 * CORS on AWS (docs/api.md, "Browsers"): each resource's preflight is answered without a key, the
 * functions add the headers to their own answers, and every gateway response (401, 429, 404, ...)
 * carries them too, or a browser page could not read why it was refused.
 */
const stages = { staging: appStage('staging').api, production: appStage('production').api }

const preflights = (template: Template) =>
  resourcesOf(template, 'AWS::ApiGateway::Method')
    .map(([, method]) => propsOf(method))
    .filter((props) => props.HttpMethod === 'OPTIONS')

describe('CORS on the deployed API', () => {
  it.each(Object.entries(stages))(
    '%s answers a preflight on each resource without a key',
    (_, api) => {
      const resources = new Set(ROUTES.map((route) => route.path))
      const found = preflights(api)
      expect(found).toHaveLength(resources.size)
      for (const props of found) {
        expect(props).toMatchObject({
          AuthorizationType: 'NONE',
          ApiKeyRequired: false,
          Integration: { Type: 'MOCK' },
        })
        const parameters = (
          props.Integration as {
            IntegrationResponses: { ResponseParameters: Record<string, string> }[]
          }
        ).IntegrationResponses[0]?.ResponseParameters
        expect(parameters?.['method.response.header.Access-Control-Allow-Origin']).toBe("'*'")
        expect(parameters?.['method.response.header.Access-Control-Allow-Headers']).toContain(
          'Authorization',
        )
      }
    },
  )

  it.each(Object.entries(stages))(
    '%s puts the CORS headers on every gateway response',
    (_, api) => {
      const responses = resourcesOf(api, 'AWS::ApiGateway::GatewayResponse').map(([, response]) =>
        propsOf(response),
      )
      expect(responses.map((response) => response.ResponseType)).toEqual(
        expect.arrayContaining(['UNAUTHORIZED', 'THROTTLED', 'QUOTA_EXCEEDED', 'DEFAULT_4XX']),
      )
      for (const response of responses) {
        const headers = response.ResponseParameters as Record<string, string>
        expect(headers['gatewayresponse.header.Access-Control-Allow-Origin']).toBe("'*'")
        // Retry-After on a 429 is readable by the page only when exposed.
        expect(headers['gatewayresponse.header.Access-Control-Expose-Headers']).toBe(
          `'${CORS_EXPOSED_HEADERS.join(', ')}'`,
        )
      }
    },
  )

  it.each(Object.entries(stages))(
    '%s tells each function the origin for its own answers',
    (_, api) => {
      for (const route of ROUTES) {
        const [, fn] = functionByService(api, route.operationId)
        expect(
          envOf(fn).CORS_ALLOW_ORIGIN,
          `${route.method} ${API_VERSION_PATH}${route.path}`,
        ).toBe('*')
      }
    },
  )

  it('takes one origin per stage from context, and refuses a list or a path', () => {
    const context = (values: Record<string, unknown>) => (key: string) => values[key]
    expect(
      readStageConfig(
        context({ 'production.corsAllowOrigin': 'https://app.example.com' }),
        'production',
      ).corsAllowOrigin,
    ).toBe('https://app.example.com')
    expect(readStageConfig(context({}), 'staging').corsAllowOrigin).toBe('*')
    for (const bad of [
      'https://a.example, https://b.example',
      'https://app.example.com/',
      'app.example.com',
    ]) {
      expect(() => readStageConfig(context({ 'staging.corsAllowOrigin': bad }), 'staging')).toThrow(
        /staging\.corsAllowOrigin/,
      )
    }
  })
})
