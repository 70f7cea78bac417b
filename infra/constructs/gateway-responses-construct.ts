import { ResponseType, type RestApi } from 'aws-cdk-lib/aws-apigateway'
import {
  GATEWAY_RESPONSES,
  gatewayHeaderValue,
  gatewayResponseBody,
} from '#infra/config/gateway-responses-config.ts'
import { ERROR_STATUS } from '#shared/errors/error-codes.ts'

/** API Gateway's own errors (requests that never reach a function) in the API's Error body. */
export const addGatewayResponses = (api: RestApi): void => {
  for (const response of GATEWAY_RESPONSES) {
    api.addGatewayResponse(`GatewayResponse${response.type}`, {
      type: ResponseType.of(response.type),
      statusCode: String(ERROR_STATUS[response.code]),
      responseHeaders: Object.fromEntries(
        Object.entries(response.headers ?? {}).map(([name, value]) => [
          name,
          gatewayHeaderValue(value),
        ]),
      ),
      templates: { 'application/json': gatewayResponseBody(response.code) },
    })
  }
}
