import { keySyncDependencies } from './key-sync-dependencies.ts'
import { keySyncHandler } from './key-sync-handler.ts'

// Module scope: clients, pacer and the last-run time live as long as the instance.
export const handler = keySyncHandler(keySyncDependencies())
