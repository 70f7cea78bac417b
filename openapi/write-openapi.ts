import { fileURLToPath } from 'node:url'
import {
  CLIENT_PACKAGE_FILE,
  OPENAPI_DOCUMENT_FILE,
  OPENAPI_TYPES_FILE,
  writeOpenApiArtifacts,
} from './openapi-artifacts.ts'

// `npm run openapi`: writes the OpenAPI document, its types and the client's package settings.

await writeOpenApiArtifacts()
console.log(`wrote ${fileURLToPath(OPENAPI_DOCUMENT_FILE)}`)
console.log(`wrote ${fileURLToPath(OPENAPI_TYPES_FILE)}`)
console.log(`wrote ${fileURLToPath(CLIENT_PACKAGE_FILE)}`)
