/**
 * The local server's control paths, beside the API under `/v1` (local/control-plane-handler.ts
 * serves them; the keys CLI in ops/ calls them): here so an operator tool never imports the
 * development server.
 */
export const LOCAL_CONTROL_PREFIX = '/_local'
/** The part of API Gateway's management API the local control plane serves. */
export const MANAGEMENT_API_PATH = `${LOCAL_CONTROL_PREFIX}/apigateway`
