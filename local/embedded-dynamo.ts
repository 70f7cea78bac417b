import { mkdir } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { Worker } from 'node:worker_threads'
import {
  CreateTableCommand,
  type CreateTableCommandInput,
  DescribeTableCommand,
  type DynamoDBClient,
  ResourceInUseException,
  ResourceNotFoundException,
} from '@aws-sdk/client-dynamodb'
import type dynalite from 'dynalite'
import { IN_MEMORY } from '#keys/local-control-config.ts'

// The embedded DynamoDB of `npm start`: dynalite in a worker thread.

export { IN_MEMORY }

export interface EmbeddedDynamo {
  endpoint: string
  close(): Promise<void>
}

/**
 * What runs in the worker thread: dynalite on a random loopback port, announced to the server
 * with `{ port }`; a `close` message closes it (and its database) and answers `{ closed, error }`.
 * Plain CommonJS source, run with `eval`: a worker gets no TypeScript loader under vitest.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const dynalite = require(workerData.dynalite)
const server = dynalite(workerData.options)
// No idle timeout: Node's 5 s closed idle keep-alive connections just as an SDK client reused
// them ("socket hang up", ECONNRESET), a failure no DynamoDB call had earned (see below).
server.keepAliveTimeout = 0
server.once('error', (error) => parentPort.postMessage({ error: String(error) }))
server.listen(0, '127.0.0.1', () => parentPort.postMessage({ port: server.address().port }))
parentPort.on('message', (message) => {
  if (message !== 'close') return
  server.close((error) => parentPort.postMessage({ closed: true, error: error ? String(error) : undefined }))
  server.closeIdleConnections()
})
`

type WorkerMessage = { port: number } | { error: string } | { closed: true; error?: string }

const nextMessage = (worker: Worker): Promise<WorkerMessage> =>
  new Promise((resolve, reject) => {
    const onExit = (code: number) => reject(new Error(`The embedded DynamoDB exited (${code})`))
    worker.once('error', reject)
    worker.once('exit', onExit)
    worker.once('message', (message: WorkerMessage) => {
      worker.off('error', reject)
      worker.off('exit', onExit)
      resolve(message)
    })
  })

/**
 * dynalite (DynamoDB's API on LevelDB) on a random loopback port, in a worker thread of this
 * process. Its HTTP server never closes an idle connection itself: the SDK keeps connections alive
 * and reuses the idle ones, and a server that closes one (Node's default: after 5 s idle) as a
 * request goes out on it fails that request without DynamoDB having refused it. A counting write
 * of the rate limiter failed so is ambiguous, and admitted uncounted (its failure policy): at a
 * load average of 20 a Free key got 62 to 80 requests a minute instead of 60. Connections close
 * with their client, or when the server stops.
 * In a worker thread: the functions reach it over HTTP through the SDK, as they reach DynamoDB
 * on AWS, and its work (expression parsing, LevelDB) runs beside theirs on a second core rather
 * than between their requests (`npm run bench`'s local server figures). With a data directory every
 * acknowledged write is in LevelDB's log before the response (dynalite answers PutItem and
 * UpdateItem from the put's callback; LevelDB writes each log record to the file before it calls
 * back), so it survives a killed process; not a power cut (no fsync). One gap, from dynalite's
 * code: a put writes the GSI entries first, then the item, as separate writes, so a kill between
 * them can leave an unacknowledged pet in its status list without the item.
 */
export const startEmbeddedDynamo = async (dataDir: string): Promise<EmbeddedDynamo> => {
  let path: string | undefined
  if (dataDir !== IN_MEMORY) {
    path = join(dataDir, 'dynamodb')
    await mkdir(path, { recursive: true })
  }
  const options: Parameters<typeof dynalite>[0] = {
    ...(path ? { path } : {}),
    createTableMs: 0,
    deleteTableMs: 0,
    updateTableMs: 0,
  }
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: {
      dynalite: createRequire(import.meta.url).resolve('dynalite'),
      options,
    },
  })
  const started = await nextMessage(worker).catch(async (error: unknown) => {
    await worker.terminate()
    throw error
  })
  if (!('port' in started)) {
    await worker.terminate()
    throw new Error(
      `The embedded DynamoDB did not start: ${'error' in started ? started.error : ''}`,
    )
  }
  // As dynalite in the main thread would: a failure of the datastore ends the process, named.
  worker.on('error', (error) => {
    throw new Error(`The embedded DynamoDB (dynalite) failed: ${error.message}`, { cause: error })
  })
  return {
    endpoint: `http://127.0.0.1:${started.port}`,
    close: async () => {
      // SDK clients keep connections alive; the worker closes them as they fall idle.
      const closed = nextMessage(worker)
      worker.postMessage('close')
      const answer = await closed.finally(() => worker.terminate())
      if ('error' in answer && answer.error) throw new Error(answer.error)
    },
  }
}

/** Creates a table if it does not exist yet (local and test tables only; CDK owns AWS tables). */
export const ensureTable = async (
  client: DynamoDBClient,
  definition: CreateTableCommandInput,
): Promise<void> => {
  try {
    await client.send(new DescribeTableCommand({ TableName: definition.TableName }))
  } catch (error) {
    if (!(error instanceof ResourceNotFoundException)) throw error
    try {
      await client.send(new CreateTableCommand(definition))
    } catch (createError) {
      // Another server or test on the same DynamoDB created it first: wait for it all the same.
      if (!(createError instanceof ResourceInUseException)) throw createError
    }
    // dynalite (createTableMs 0) shows a new table ACTIVE within milliseconds, DynamoDB Local and
    // AWS after a while: the first looks come soon, then every 100 ms (a fixed 100 ms wait per
    // table made every start 0.3 to 0.4 s longer).
    for (let attempt = 0; attempt < 100; attempt += 1) {
      const { Table } = await client.send(
        new DescribeTableCommand({ TableName: definition.TableName }),
      )
      if (Table?.TableStatus === 'ACTIVE') return
      await new Promise((resolve) => setTimeout(resolve, Math.min(100, 2 ** attempt)))
    }
    throw new Error(`Table ${definition.TableName} did not become active`)
  }
}
