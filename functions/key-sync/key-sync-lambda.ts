import { keySyncDependencies } from './key-sync-dependencies.ts'
import { createKeySyncHandler } from './key-sync-handler.ts'

// Module scope: clients, pacer and the last-run time live as long as the instance.
const dependencies = keySyncDependencies()

export const handler = createKeySyncHandler(dependencies).use(dependencies.middlewares)
