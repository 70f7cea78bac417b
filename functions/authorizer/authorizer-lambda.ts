import { authorizerDependencies } from './authorizer-dependencies.ts'
import { authorizerHandler } from './authorizer-handler.ts'

export const handler = authorizerHandler(authorizerDependencies())
