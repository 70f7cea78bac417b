import { authorizerDependencies } from './authorizer-dependencies.ts'
import { createAuthorizerHandler } from './authorizer-handler.ts'

export const handler = createAuthorizerHandler(authorizerDependencies())
