import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

interface CdkJson {
  app: string
  watch: { include: string[]; exclude: string[] }
  context: Record<string, unknown>
}

export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url))

export const CDK_JSON = JSON.parse(
  readFileSync(new URL('../../../cdk.json', import.meta.url), 'utf8'),
) as CdkJson
