import type { RouteDefinition } from '#shared/config/routes-config.ts'

/**
 * Where each Lambda's entry module lives, relative to the repository root. Read by the CDK
 * (what to bundle) and the local server (what to import); no function imports it, so build
 * paths never end up in a bundle.
 */
export const functionEntry = (route: Pick<RouteDefinition, 'functionName'>): string =>
  `functions/${route.functionName}/${route.functionName}-lambda.ts`

export const AUTHORIZER_ENTRY = 'functions/authorizer/authorizer-lambda.ts'

export const KEY_SYNC_ENTRY = 'functions/key-sync/key-sync-lambda.ts'

export const ADDRESS_BLOCK_ENTRY = 'functions/address-block/address-block-lambda.ts'
