import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { STAGE_SETTINGS } from '#infra/config/stage-context-reader.ts'

/** Claims of the README and docs a newcomer acts on, kept true by reading what they rely on. */
const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8')
const packageJson = JSON.parse(read('package.json')) as {
  engines: { node: string }
  scripts: Record<string, string>
}

describe('the first hour, as the docs print it', () => {
  it('names the Node version package.json requires', () => {
    const major = /^>=(\d+)/.exec(packageJson.engines.node)?.[1]
    expect(read('README.md')).toContain(`Node ${major} `)
    expect(read('README.md')).not.toMatch(/Node ≥ ?(1\d|2[0-3])\b/)
  })

  it('links the API reference and the command that renders it', () => {
    expect(packageJson.scripts.docs).toBeDefined()
    expect(read('README.md')).toContain('http://127.0.0.1:3000/docs')
    expect(read('README.md')).toContain('npm run docs')
  })

  it('says AWS CLI v2 wherever it prints aws logs tail', () => {
    for (const path of ['README.md', 'docs/deploying.md']) {
      const text = read(path)
      if (text.includes('aws logs tail')) expect(text, path).toContain('AWS CLI v2')
    }
  })

  it('gives every aws command against the local control plane a Region', () => {
    for (const line of read('docs/local-server.md').split('\n')) {
      if (/aws\s*$|apigateway get-api-keys/.test(line) && line.includes('get-api-keys')) {
        expect(line).toContain('--region')
      }
    }
  })

  it('documents x-amzn-RequestId, CORS and every stage setting', () => {
    expect(read('docs/api.md')).toContain('x-amzn-RequestId')
    expect(read('docs/api.md')).toContain('## Browsers (CORS)')
    const operations = read('docs/operations.md')
    for (const setting of STAGE_SETTINGS.filter((name) => name === 'corsAllowOrigin')) {
      expect(operations).toContain(`\`${setting}\``)
    }
  })

  it('covers IAM, a first deploy, rollbacks and the first hour in deploying.md', () => {
    const deploying = read('docs/deploying.md')
    for (const heading of [
      '## IAM',
      '## The first deploy',
      '## Rolling back',
      '## The first hour',
    ]) {
      expect(deploying).toContain(heading)
    }
  })
})
