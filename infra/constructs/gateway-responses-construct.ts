import { ResponseType, type RestApi } from 'aws-cdk-lib/aws-apigateway'
import { ERROR_STATUS } from '#shared/errors/error-codes.ts'
import { corsHeaders } from '#shared/http/cors-headers.ts'
import {
  GATEWAY_RESPONSES,
  gatewayHeaderValue,
  gatewayResponseBody,
} from '#shared/http/gateway-responses-config.ts'

/**
 * API Gateway's own errors (requests that never reach a function) in the API's Error body, with
 * the stage's CORS headers so a browser page can read a 401 or a 429: gateway responses get no
 * CORS headers unless they are configured on them ("CORS for REST APIs in API Gateway",
 * https://docs.aws.amazon.com/apigateway/latest/developerguide/how-to-cors.html; "Set up a gateway
 * response", https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-gateway-response-using-the-console.html).
 */
export const addGatewayResponses = (api: RestApi, corsAllowOrigin: string): void => {
  for (const response of GATEWAY_RESPONSES) {
    api.addGatewayResponse(`GatewayResponse${response.type}`, {
      type: ResponseType.of(response.type),
      statusCode: String(ERROR_STATUS[response.code]),
      responseHeaders: Object.fromEntries(
        Object.entries({ ...corsHeaders(corsAllowOrigin), ...response.headers }).map(
          ([name, value]) => [name, gatewayHeaderValue(value)],
        ),
      ),
      templates: { 'application/json': gatewayResponseBody(response.code) },
    })
  }
}
