import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda'
import { mockClient } from 'aws-sdk-client-mock'
import { describe, expect, it } from 'vitest'
import type { KeySyncState } from '#keys/key-sync-state-repository.ts'
import { runKeysCommand } from '#ops/keys/keys-command.ts'
import { AwsStageSync } from '#ops/keys/stage-sync-client.ts'
import type { StageTarget } from '#ops/keys/stage-target-resolver.ts'

/**
 * `keys held` and `keys confirm` against a deployed stage (the key-sync function and its state
 * item stubbed), and the CLI's check that the function it invokes answers a key sync result.
 */
const FUNCTION = 'petstore-staging-api-KeySync1234'
const PRO_KEYS = ['prok000001', 'prok000002', 'prok000003']
const HELD: KeySyncState = {
  heldRemovals: {
    ppro01: {
      digest: 'd',
      count: 3,
      firstSeenAt: Date.parse('2027-03-05T02:06:00Z'),
      cause: 'plan-lost',
      keyIds: PRO_KEYS,
    },
  },
}

const stageWith = (answer: unknown) => {
  const lambda = new LambdaClient({ region: 'eu-west-1' })
  const mock = mockClient(lambda)
    .on(InvokeCommand)
    .resolves({
      StatusCode: 200,
      Payload: new TextEncoder().encode(JSON.stringify(answer)) as never,
    })
  const sync = new AwsStageSync({
    lambda,
    functionName: FUNCTION,
    mirror: { get: async () => undefined },
    tableName: 'petstore-staging-key-mirror',
    state: { get: async () => HELD },
  })
  return { sync, mock }
}

const keys = async (argv: string[], sync: AwsStageSync) => {
  const out: string[] = []
  const err: string[] = []
  const target = {
    stage: 'staging',
    admin: { keysCommand: 'npm run keys -- --stage staging' },
    heldRemovals: sync,
    close: () => undefined,
  } as unknown as StageTarget
  const code = await runKeysCommand(
    argv,
    { stdout: (text) => out.push(text), stderr: (text) => err.push(text), env: {} },
    async () => target,
  )
  return { code, out: out.join(''), err: err.join('') }
}

const RESULT = { skipped: false, upserted: 10, written: 0, deleted: 3, heldRemovals: 0 }

describe('held removals in the keys CLI', () => {
  it('lists each held group with its keys and the command that confirms it', async () => {
    const { sync } = stageWith(RESULT)
    const { code, out } = await keys(['--stage', 'staging', 'held'], sync)
    expect(code).toBe(0)
    expect(out).toContain(
      'usage plan ppro01: 3 key(s) held since 2027-03-05T02:06:00.000Z (plan-lost)',
    )
    expect(out).toContain(PRO_KEYS.join(' '))
    expect(out).toContain('npm run keys -- --stage staging confirm ppro01')
  })

  it('confirms a held plan by its id: the function is asked to remove every key it lists', async () => {
    const { sync, mock } = stageWith(RESULT)
    const { code, err } = await keys(['--stage', 'staging', 'confirm', 'ppro01'], sync)
    expect(code).toBe(0)
    expect(err).toContain('the key sync removed 3 key(s)')
    const payload = mock.commandCalls(InvokeCommand)[0]?.args[0].input.Payload as Uint8Array
    expect(JSON.parse(new TextDecoder().decode(payload))).toEqual({ confirmRemovals: PRO_KEYS })
  })

  it('fails (exit 1) on an id the sync does not hold, and removes nothing, even beside a held one', async () => {
    for (const ids of [['prok000009'], ['ppro01', 'ppro02']]) {
      const { sync, mock } = stageWith(RESULT)
      const { code, err } = await keys(['--stage', 'staging', 'confirm', ...ids], sync)
      expect(code).toBe(1)
      expect(err).toContain(`the key sync holds no removal of ${ids.at(-1)}: nothing was removed`)
      expect(err).toContain('npm run keys -- --stage staging held lists what it holds')
      expect(mock.commandCalls(InvokeCommand)).toHaveLength(0)
    }
  })

  it('fails at once, naming the function, when it answers anything but a sync result', async () => {
    const { sync } = stageWith({ statusCode: 200, body: 'hello' })
    await expect(sync.run(['k1'])).rejects.toMatchObject({
      name: 'SyncFailure',
      retryable: false,
      message: expect.stringContaining(
        `${FUNCTION} answered something other than a key sync result`,
      ),
    })
  })
})
