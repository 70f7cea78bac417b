import { Tracer } from '@aws-lambda-powertools/tracer'

/**
 * One X-Ray tracer per process. It traces only inside Lambda with active tracing: outside Lambda
 * (tests, the local server) or with POWERTOOLS_TRACE_ENABLED=false every call is a no-op and
 * nothing tries to reach an X-Ray daemon.
 */
export const tracer = new Tracer({ serviceName: 'petstore' })
