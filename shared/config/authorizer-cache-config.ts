/**
 * How long each stage's API Gateway caches an authorizer answer, in seconds (API Gateway accepts
 * 0 to 3600; its default is 300). Staging's is short so key changes made by hand show quickly;
 * production keeps API Gateway's default. The local gateway caches as staging does. On every
 * stage the key sync flushes the cache after a change to the keys, so the TTL bounds only what
 * nothing told the sync about.
 */
export const AUTHORIZER_CACHE_TTL_SECONDS = {
  staging: 60,
  production: 300,
} as const
