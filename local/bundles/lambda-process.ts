// One Lambda execution environment on this machine: a bundle in a Node process of its own.
import { type ChildProcess, spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Context } from 'aws-lambda'

const RUNTIME = join(dirname(fileURLToPath(import.meta.url)), 'lambda-runtime-child.mjs')

export interface LambdaProcessSettings {
  /** The function's name in messages (its service). */
  name: string
  /** The unpacked asset and the template's handler (index.handler). */
  codeDir: string
  handler: string
  /** The whole environment of the process, NODE_OPTIONS included: nothing of the host's leaks in. */
  environment: Record<string, string>
  timeoutSeconds: number
}

/** A failure the function threw, as the host's gateway sees it (its name and message). */
export class FunctionError extends Error {
  constructor(name: string, message: string, stack?: string) {
    super(message)
    this.name = name
    if (stack) this.stack = stack
  }
}

interface Pending {
  resolve: (result: unknown) => void
  reject: (error: Error) => void
  timer: NodeJS.Timeout
}

type ChildMessage =
  | { type: 'ready' }
  | { type: 'init-error'; error: { name: string; message: string; stack?: string } }
  | { type: 'result'; id: string; result: unknown }
  | { type: 'error'; id: string; error: { name: string; message: string; stack?: string } }

/** The plain fields of a context: what crosses to the process (its methods are rebuilt there). */
const contextFields = (context: Context) => ({
  callbackWaitsForEmptyEventLoop: context.callbackWaitsForEmptyEventLoop,
  functionName: context.functionName,
  functionVersion: context.functionVersion,
  invokedFunctionArn: context.invokedFunctionArn,
  memoryLimitInMB: context.memoryLimitInMB,
  awsRequestId: context.awsRequestId,
  logGroupName: context.logGroupName,
  logStreamName: context.logStreamName,
})

/**
 * A function's bundle in a `node` process of its own, as Lambda runs it: the template's
 * environment and NODE_OPTIONS only, an ESM import of the handler's module (lambda-runtime-child.mjs),
 * its output on this terminal. A process that exits (a crash, an init failure) is started again
 * at the next invocation, as Lambda starts a new execution environment; invocations past the
 * template's timeout fail with Lambda's message. One process serves concurrent invocations
 * (Lambda would start more environments: module state is shared here, as in the sources mode).
 */
export class LambdaProcess {
  #child: ChildProcess | undefined
  #ready: Promise<void> | undefined
  readonly #pending = new Map<string, Pending>()
  #stopped = false

  constructor(private readonly settings: LambdaProcessSettings) {}

  /** Starts the process and waits for its init (a cold start); rejects on an init failure. */
  start(): Promise<void> {
    this.#ready ??= this.#spawn()
    return this.#ready
  }

  #spawn(): Promise<void> {
    const { codeDir, handler, environment, name } = this.settings
    const child = spawn(process.execPath, [RUNTIME, codeDir, handler], {
      cwd: codeDir,
      env: environment,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    this.#child = child
    return new Promise<void>((resolveReady, rejectReady) => {
      child.on('message', (message: ChildMessage) => {
        if (message.type === 'ready') resolveReady()
        else if (message.type === 'init-error') {
          rejectReady(
            new FunctionError(
              message.error.name,
              `${name}: init failed: ${message.error.message}`,
              message.error.stack,
            ),
          )
        } else this.#settle(message)
      })
      child.on('error', rejectReady)
      child.on('exit', (code, signal) => {
        const reason = new Error(`${name}: the function's process exited (${signal ?? code})`)
        rejectReady(reason)
        for (const [id, pending] of this.#pending) {
          clearTimeout(pending.timer)
          pending.reject(reason)
          this.#pending.delete(id)
        }
        if (this.#child === child) {
          this.#child = undefined
          this.#ready = undefined
        }
      })
    })
  }

  #settle(message: Extract<ChildMessage, { id: string }>): void {
    const pending = this.#pending.get(message.id)
    if (!pending) return
    this.#pending.delete(message.id)
    clearTimeout(pending.timer)
    if (message.type === 'result') pending.resolve(message.result)
    else {
      const { name, message: text, stack } = message.error
      pending.reject(new FunctionError(name, text, stack))
    }
  }

  /** Invokes the function with an event and a context, as Lambda's Invoke does. */
  async invoke<Result>(event: unknown, context: Context): Promise<Result> {
    if (this.#stopped) throw new Error(`${this.settings.name}: stopped`)
    await this.start()
    const child = this.#child
    if (!child) throw new Error(`${this.settings.name}: the function's process is gone`)
    const id = randomUUID()
    const timeoutMs = this.settings.timeoutSeconds * 1000
    return new Promise<Result>((resolveResult, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id)
        reject(
          new FunctionError(
            'TimeoutError',
            `Task timed out after ${this.settings.timeoutSeconds} seconds`,
          ),
        )
      }, timeoutMs)
      this.#pending.set(id, { resolve: (result) => resolveResult(result as Result), reject, timer })
      child.send({
        id,
        event,
        context: contextFields(context),
        hostNow: Date.now(),
        deadline: Date.now() + timeoutMs,
      })
    })
  }

  /** Ends the process (and fails what is still in flight). */
  async stop(): Promise<void> {
    this.#stopped = true
    const child = this.#child
    if (!child || child.exitCode !== null) return
    const exited = new Promise<void>((resolveExit) => child.once('exit', () => resolveExit()))
    child.kill('SIGTERM')
    await exited
  }
}
