/**
 * How every function is bundled: one minified ESM file per function for Node 24, the AWS SDK
 * inside (a pinned version, not whatever the runtime ships), a source map beside it without the
 * sources. One place for the facts: the CDK function construct hands them to NodejsFunction and
 * `npm run bench` bundles its floor handlers with exactly the same esbuild options.
 */
export const BUNDLE_TARGET = 'node24'

/**
 * esbuild's ESM output has no `require`; a CommonJS dependency that requires a Node built-in
 * would fail at runtime with "Dynamic require is not supported" without this shim.
 */
export const ESM_REQUIRE_BANNER =
  "import { createRequire as __petstoreCreateRequire } from 'node:module'; const require = __petstoreCreateRequire(import.meta.url);"

/**
 * Imports of `node:http` (the SDK's HTTP handler) resolve to `node-http-require.cjs`, which hands
 * over the built-in module object instead: an ESM import of it loads undici at a cold start (see
 * that file, and test/unit/bundling-config.test.ts, which runs a bundled DynamoDB call over HTTP).
 * A path from the repository root, esbuild's working directory.
 */
export const NODE_HTTP_ALIAS = { 'node:http': './infra/config/node-http-require.cjs' } as const

export const FUNCTION_BUNDLING = {
  format: 'esm',
  platform: 'node',
  target: BUNDLE_TARGET,
  mainFields: ['module', 'main'],
  banner: ESM_REQUIRE_BANNER,
  minify: true,
  sourcemap: true,
  sourcesContent: false,
  alias: NODE_HTTP_ALIAS,
} as const

/** What the entry file of a bundle is called (NodejsFunction's choice for ESM output). */
export const BUNDLE_FILE = 'index.mjs'
