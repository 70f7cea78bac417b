import { authorizerDependencies } from './authorizer-dependencies.ts'
import { authorizerHandler } from './authorizer-handler.ts'

// The authorizer's Lambda entry: its handler, built once per instance.

export const handler = authorizerHandler(authorizerDependencies())
