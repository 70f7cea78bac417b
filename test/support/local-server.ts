import { type ChildProcess, spawn } from 'node:child_process'
import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { APIGatewayClient } from '@aws-sdk/client-api-gateway'
import { controlSecretCredentials } from '#keys/local-control-config.ts'
import type { LocalKeys } from '#local/control-plane/control-plane-bootstrap.ts'
import type { LocalServer as LocalServerOf, StartLocalOptions } from '#local/local-server.ts'
import { assertKeepsContract } from '#openapi/contract-validator.ts'

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')

/**
 * This process's environment before any in-process server ran. startLocal writes the functions'
 * environment (DYNAMODB_ENDPOINT among it) into process.env, and a child must not inherit it:
 * a spawned `npm start` would use that server's DynamoDB instead of its own.
 */
const BASE_ENV = { ...process.env }

/**
 * The environment of a local server in tests: a free port on loopback, data in memory. When the
 * run sets PETSTORE_BUNDLES (`npm run test:bundles`, .ci/run), the functions are the bundles of
 * that cloud assembly instead of the sources, on the run's DYNAMODB_ENDPOINT when it has one
 * (DynamoDB Local in .ci/dynamodb-local.sh; each server gets tables of its own there).
 */
const TEST_ENV = {
  PORT: '0',
  HOST: '127.0.0.1',
  PETSTORE_DATA_DIR: ':memory:',
  ...(BASE_ENV.PETSTORE_BUNDLES
    ? Object.fromEntries(
        ['PETSTORE_BUNDLES', 'PETSTORE_BUNDLES_STAGE', 'DYNAMODB_ENDPOINT'].flatMap((name) =>
          BASE_ENV[name] ? [[name, BASE_ENV[name]]] : [],
        ),
      )
    : {}),
}

export interface SpawnedScript {
  process: ChildProcess
  /** stdout and stderr so far, interleaved as they arrived. */
  output(): string
  /** stdout alone (what a script prints for other programs to read). */
  stdout(): string
  /** The exit code, once the process ended and its output was read. */
  exited: Promise<number | null>
}

/**
 * The one way tests start a project script as a child process (`node --import tsx <script>`, as
 * the npm scripts do), for what only a process shows: the CLI's output, exit codes and signals.
 */
export const spawnScript = (
  script: string,
  args: string[] = [],
  env: Record<string, string> = {},
): SpawnedScript => {
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], {
    cwd: ROOT,
    env: { ...BASE_ENV, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  let stdout = ''
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString()
    stdout += chunk.toString()
  })
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString()
  })
  // 'close', not 'exit': the exit can come before the last output is read from the pipes.
  const exited = new Promise<number | null>((resolveExit) =>
    child.once('close', (code) => resolveExit(code)),
  )
  return { process: child, output: () => output, stdout: () => stdout, exited }
}

/**
 * The local server in this test process: the same `startLocal` that `npm start` runs, with
 * function instances of its own (a worker's test files share one module graph). stop() puts
 * process.env back as it was.
 */
export interface InProcessServer {
  baseUrl: string
  /** What this start did with the keys (what `npm start` prints in its banner). */
  keys: LocalKeys
  /** The local control plane's management API (an APIGatewayClient endpoint). */
  managementEndpoint: string
  /** The control plane's secret: SDK credentials (controlSecretCredentials) or the CLI's env. */
  controlSecret: string
  /** Runs the local key sync now and waits for it (tests drive the syncs: no schedule runs). */
  syncKeys(): Promise<unknown>
  /** Waits for the sync runs the control plane's own changes started (its change trigger). */
  keySyncSettled(): Promise<void>
  /** The local edge's automatic block: its IP sets, the access log's delivery, its runs. */
  addressBlock: LocalServerOf['addressBlock']
  /** The DynamoDB requests the functions' deployed roles refused so far, each with its fix. */
  iamDenials(): readonly string[]
  /** Stops the server; fails if any function made a request its deployed role would refuse. */
  stop(): Promise<void>
}

export const startInProcessServer = async (
  env: Record<string, string> = {},
  options: StartLocalOptions = {},
): Promise<InProcessServer> => {
  const { readLocalConfig } = await import('#local/local-config.ts')
  const { startLocal } = await import('#local/local-server.ts')
  const before = { ...process.env }
  const restoreEnv = () => {
    for (const name of Object.keys(process.env)) if (!(name in before)) delete process.env[name]
    Object.assign(process.env, before)
  }
  try {
    const local = await startLocal(readLocalConfig({ ...TEST_ENV, ...env }), {
      keySyncIntervalMs: 0,
      ...options,
    })
    return {
      baseUrl: local.baseUrl,
      keys: local.keys,
      managementEndpoint: local.managementEndpoint,
      controlSecret: local.controlSecret,
      syncKeys: () => local.syncKeys(),
      keySyncSettled: () => local.keySyncSettled(),
      addressBlock: local.addressBlock,
      iamDenials: () => local.iamDenials(),
      stop: async () => {
        await local.stop().finally(restoreEnv)
        // Every file's server, whatever its subject: a request the deployed role would refuse
        // fails the file that made it, with the fix (local/deployed-iam/denial-fix.ts).
        const denials = local.iamDenials()
        if (denials.length > 0) {
          throw new Error(
            `the functions' deployed roles would refuse ${denials.length} DynamoDB request(s) this server's functions made:\n- ${[...new Set(denials)].join('\n- ')}`,
          )
        }
      },
    }
  } catch (error) {
    restoreEnv()
    throw error
  }
}

export interface LocalServer {
  baseUrl: string
  process: ChildProcess
  output(): string
  /** Sends a signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>
}

/** Runs the local API exactly as `npm start` does, as a child process on a random port. */
export const startLocalServer = (env: Record<string, string> = {}): Promise<LocalServer> => {
  const started = spawnScript('local/start-local.ts', [], { ...TEST_ENV, ...env })
  const child = started.process
  return new Promise((resolveStart, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`local server did not start in time:\n${started.output()}`))
    }, 45_000)
    const onData = () => {
      const match = /listening at (\S+)/.exec(started.output())
      if (!match?.[1]) return
      clearTimeout(timer)
      child.stdout?.off('data', onData)
      resolveStart({
        baseUrl: match[1],
        process: child,
        output: started.output,
        stop: (signal = 'SIGTERM') => {
          if (child.exitCode === null) child.kill(signal)
          return started.exited
        },
      })
    }
    child.stdout?.on('data', onData)
    started.exited.then((code) => {
      clearTimeout(timer)
      reject(new Error(`local server exited with ${code} before listening:\n${started.output()}`))
    })
  })
}

/** Runs a script to completion (start-up failures, the keys CLI); killed after 45 s. */
export const runScriptToExit = async (
  script: string,
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; output: string; stdout: string }> => {
  const run = spawnScript(script, args, env)
  const timer = setTimeout(() => run.process.kill('SIGKILL'), 45_000)
  const code = await run.exited
  clearTimeout(timer)
  return { code, output: run.output(), stdout: run.stdout() }
}

/** Runs the start command to completion (for start-up failures). */
export const runLocalServerToExit = (env: Record<string, string>) =>
  runScriptToExit('local/start-local.ts', [], {
    HOST: '127.0.0.1',
    PETSTORE_DATA_DIR: ':memory:',
    ...env,
  })

export interface ApiResponse<T = unknown> {
  status: number
  headers: Headers
  text: string
  json: T
}

export interface ApiClientOptions {
  /**
   * Check every response against openapi/openapi.json (default). Only tests of the gateway in
   * front of stub functions, which answer nothing like the service, turn it off.
   */
  contract?: boolean
}

/**
 * A small HTTP client over fetch that keeps the raw text (int64 digits) and parsed JSON, and
 * fails on any response that breaks the published OpenAPI contract.
 */
export const apiClient = (baseUrl: string, key?: string, clientOptions: ApiClientOptions = {}) => {
  const request = async <T = unknown>(
    method: string,
    path: string,
    options: { body?: string | object; headers?: Record<string, string>; key?: string | null } = {},
  ): Promise<ApiResponse<T>> => {
    const headers: Record<string, string> = { ...options.headers }
    const useKey = options.key === undefined ? key : options.key
    if (useKey) headers.Authorization = `Bearer ${useKey}`
    let body: string | undefined
    if (options.body !== undefined) {
      body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body)
      headers['Content-Type'] ??= 'application/json'
    }
    const url = path.startsWith('http') ? path : `${baseUrl}${path}`
    const response = await fetch(url, { method, headers, ...(body !== undefined ? { body } : {}) })
    const text = await response.text()
    // Every response the end-to-end suites receive must keep the published contract.
    if (clientOptions.contract !== false) {
      assertKeepsContract({ method, url, status: response.status, headers: response.headers, text })
    }
    let json: unknown
    try {
      json = text ? JSON.parse(text) : undefined
    } catch {
      json = undefined
    }
    return { status: response.status, headers: response.headers, text, json: json as T }
  }
  return {
    request,
    get: <T = unknown>(path: string, options?: Parameters<typeof request>[2]) =>
      request<T>('GET', path, options),
    post: <T = unknown>(
      path: string,
      body?: string | object,
      options?: Parameters<typeof request>[2],
    ) => request<T>('POST', path, { ...options, ...(body !== undefined ? { body } : {}) }),
  }
}

/** Parses `Link: <url>; rel="next"`. */
export const nextLink = (headers: Headers): string | undefined =>
  /<([^>]+)>;\s*rel="next"/.exec(headers.get('link') ?? '')?.[1]

/** The SDK's API Gateway client on a local server's management API, with its secret. */
export const managementClient = (server: {
  managementEndpoint: string
  controlSecret: string
}): APIGatewayClient =>
  new APIGatewayClient({
    endpoint: server.managementEndpoint,
    region: 'eu-west-1',
    credentials: controlSecretCredentials(server.controlSecret),
  })

/** The status a key gets for `GET /pets?limit=1` now. */
export const statusOf = async (baseUrl: string, key: string): Promise<number> =>
  (await apiClient(baseUrl, key).get('/pets?limit=1')).status
