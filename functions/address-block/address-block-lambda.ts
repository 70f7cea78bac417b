import { addressBlockDependencies } from './address-block-dependencies.ts'
import { addressBlockHandler } from './address-block-handler.ts'

// Module scope: the WAF and DynamoDB clients live as long as the instance.
export const handler = addressBlockHandler(addressBlockDependencies())
