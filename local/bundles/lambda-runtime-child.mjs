// The runtime of one local Lambda execution environment: loads a bundle as Lambda's Node.js
// runtime does and runs the invocations its host (lambda-process.ts) sends over IPC.
// Plain JavaScript, run by plain `node` with only the template's NODE_OPTIONS: no TypeScript
// loader, no project module, nothing the deployed code would not have on Lambda.
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

const [codeDir, handlerSetting] = process.argv.slice(2)
const dot = handlerSetting.lastIndexOf('.')
const moduleName = handlerSetting.slice(0, dot)
const exportName = handlerSetting.slice(dot + 1)

// Lambda's Node.js runtime looks for the handler's module as .js, .mjs, then .cjs.
const file = ['.js', '.mjs', '.cjs']
  .map((extension) => join(codeDir, `${moduleName}${extension}`))
  .find((candidate) => existsSync(candidate))

/**
 * The host sends its clock with every invocation. A test that moved the host's time (a sunset, a
 * new minute) moves the function's too, as when the sources run in the host's process; at the
 * real time (within a second) Date is the machine's, untouched.
 */
const RealDate = Date
let offsetMs = 0
class HostDate extends RealDate {
  constructor(...args) {
    if (args.length === 0) super(RealDate.now() + offsetMs)
    else super(...args)
  }
  static now() {
    return RealDate.now() + offsetMs
  }
}
const followHostClock = (hostNow) => {
  const offset = hostNow - RealDate.now()
  offsetMs = Math.abs(offset) > 1_000 ? offset : 0
  globalThis.Date = offsetMs === 0 ? RealDate : HostDate
}

const plainError = (error) => ({
  name: error?.name ?? 'Error',
  message: error?.message ?? String(error),
  stack: error?.stack,
})

let handler
try {
  if (!file) throw new Error(`Cannot find module '${moduleName}' in ${codeDir}`)
  const module = await import(pathToFileURL(file).href)
  handler = module[exportName]
  if (typeof handler !== 'function') {
    throw new Error(`${moduleName}.${exportName} is undefined or not exported`)
  }
  process.send({ type: 'ready' })
} catch (error) {
  process.send({ type: 'init-error', error: plainError(error) }, () => process.exit(1))
}

process.on('message', async ({ id, event, context, hostNow, deadline }) => {
  followHostClock(hostNow)
  const lambdaContext = {
    ...context,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  }
  try {
    const result = await handler(event, lambdaContext)
    process.send({ type: 'result', id, result })
  } catch (error) {
    process.send({ type: 'error', id, error: plainError(error) })
  }
})
