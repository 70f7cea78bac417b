// biome-ignore-all lint/suspicious/noTemplateCurlyInString: GitHub expressions are written ${{ … }}
import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { CONTROL_SECRET_VARIABLE } from '#keys/local-control-config.ts'
import { runSmokeCommand, SMOKE_KEY_VARIABLE } from '#ops/smoke/smoke-command.ts'
import { type InProcessServer, startInProcessServer } from '#test/support/local-server.ts'

/**
 * The release pipeline's smoke test: the stage's dedicated key comes from PETSTORE_SMOKE_KEY (a
 * GitHub environment secret), never from the command line, and the run makes and revokes no key,
 * so the release role needs no key management (docs/release-permissions.md).
 */
const KEY = 'smoke-dedicated-key-0123456789abcdef'
let server: InProcessServer

beforeAll(async () => {
  server = await startInProcessServer({ PETSTORE_API_KEYS: `free:${KEY}` })
})
afterAll(async () => {
  await server?.stop()
})

const smoke = async (argv: string[], env: Record<string, string>) => {
  let output = ''
  const write = (text: string) => {
    output += text
  }
  const code = await runSmokeCommand(argv, {
    stdout: write,
    stderr: write,
    env: { [CONTROL_SECRET_VARIABLE]: server.controlSecret, ...env },
  })
  return { code, output }
}

describe('the smoke test with the stage’s dedicated key', () => {
  it('calls with the key from PETSTORE_SMOKE_KEY, makes no key, and never prints it', async () => {
    const result = await smoke(['--base-url', server.baseUrl], { [SMOKE_KEY_VARIABLE]: KEY })
    expect(result.code, result.output).toBe(0)
    expect(result.output).toContain('  ok    the key works')
    expect(result.output).not.toContain('temporary key')
    expect(result.output).not.toContain(KEY)
  })

  it('stops before any request when the secret is missing (set but empty), or given twice', async () => {
    const empty = await smoke(['--base-url', server.baseUrl], { [SMOKE_KEY_VARIABLE]: '' })
    expect(empty.code).toBe(2)
    expect(empty.output).toContain('PETSTORE_SMOKE_KEY is set but empty')
    expect(empty.output).toContain('SMOKE_API_KEY')
    const twice = await smoke(['--base-url', server.baseUrl, '--key', KEY], {
      [SMOKE_KEY_VARIABLE]: KEY,
    })
    expect(twice.code).toBe(2)
    expect(twice.output).not.toContain(KEY)
    const nowhere = await smoke([], { [SMOKE_KEY_VARIABLE]: KEY })
    expect(nowhere.code).toBe(2)
    expect(nowhere.output).toContain('PETSTORE_SMOKE_KEY needs --base-url or --stage')
  })
})

describe('the release workflow', () => {
  it("gives every deploy job's smoke step the stage's secret, and nothing else a key", () => {
    const workflow = parse(
      readFileSync(new URL('../../.github/workflows/release.yml', import.meta.url), 'utf8'),
    ) as {
      jobs: Record<
        string,
        { environment?: string; steps: { run?: string; env?: Record<string, string> }[] }
      >
    }
    const smokeSteps = Object.values(workflow.jobs).flatMap((job) =>
      job.steps
        .filter((step) => step.run?.includes('npm run smoke'))
        .map((step) => ({ job, step })),
    )
    expect(smokeSteps.map(({ job }) => job.environment).sort()).toEqual(['production', 'staging'])
    for (const { step } of smokeSteps) {
      expect(step.env).toEqual({ [SMOKE_KEY_VARIABLE]: '${{ secrets.SMOKE_API_KEY }}' })
      expect(step.run).not.toContain('--key')
    }
  })
})
