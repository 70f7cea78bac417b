import { Logger } from '@aws-lambda-powertools/logger'

/**
 * One structured JSON logger per process. The service name comes from POWERTOOLS_SERVICE_NAME
 * when set (each function sets its own), so every line says which operation wrote it.
 * Never log an API key: log its fingerprint (key-store.ts) or the key id.
 */
export const logger = new Logger({ serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? 'petstore' })

export type AppLogger = Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>
