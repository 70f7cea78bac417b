import {
  CloudFormationClient,
  DescribeChangeSetCommand,
  DescribeStacksCommand,
} from '@aws-sdk/client-cloudformation'
import { mockClient } from 'aws-sdk-client-mock'
import { beforeEach, describe, expect, it } from 'vitest'
import {
  applyInstructions,
  applyPlan,
  approvalFromCdkJson,
  deployOrder,
  type PlannedChangeSet,
  preparePlan,
  type ReleasePlan,
  readPlan,
} from '#ops/release/release-plan.ts'

/**
 * Production's plan and apply against CloudFormation's answers (aws-sdk-client-mock): the apply
 * executes exactly the planned change sets, by ARN, in deploy order, and refuses one that is gone,
 * replaced or stale before running anything for it.
 */
const cfnMock = mockClient(CloudFormationClient)
const cfn = new CloudFormationClient({ region: 'eu-west-1' })
const arn = (stack: string, id: string) =>
  `arn:aws:cloudformation:eu-west-1:222222222222:changeSet/petstore-9-1/${stack}-${id}`
const API = 'petstore-production-api'
const DATA = 'petstore-production-data'
const UPDATED = '2026-11-01T10:00:00.000Z'

const planned = (stackName: string, extra: Partial<PlannedChangeSet> = {}): PlannedChangeSet => ({
  stackName,
  changeSetName: 'petstore-9-1',
  changeSetId: arn(stackName, 'one'),
  noChanges: false,
  stackLastUpdated: UPDATED,
  ...extra,
})
const PLAN: ReleasePlan = {
  version: 1,
  stage: 'production',
  digest: `v2:sha256:${'0'.repeat(64)}`,
  createdAt: '2026-11-02T00:00:00.000Z',
  changeSets: [planned(API), planned(DATA)],
}

/** CloudFormation as it stands: each stack's current change set (by ARN) and last update. */
const standing = (
  sets: Record<
    string,
    { id?: string; execution?: string; status?: string; reason?: string } | 'gone'
  >,
  updated: Record<string, string | undefined> = { [API]: UPDATED, [DATA]: UPDATED },
) => {
  cfnMock.on(DescribeChangeSetCommand).callsFake(({ StackName }) => {
    const set = sets[StackName as string]
    if (set === 'gone' || !set) {
      throw Object.assign(new Error('ChangeSet does not exist'), {
        name: 'ChangeSetNotFoundException',
      })
    }
    return {
      StackName,
      ChangeSetName: 'petstore-9-1',
      ChangeSetId: set.id ?? arn(StackName as string, 'one'),
      Status: set.status ?? 'CREATE_COMPLETE',
      StatusReason: set.reason,
      ExecutionStatus: set.execution ?? 'AVAILABLE',
      Changes:
        set.status === 'FAILED' ? [] : [{ Type: 'Resource', ResourceChange: { Action: 'Modify' } }],
    }
  })
  cfnMock.on(DescribeStacksCommand).callsFake(({ StackName }) => ({
    Stacks: [
      {
        StackName,
        StackStatus: 'UPDATE_COMPLETE',
        CreationTime: new Date('2026-01-01'),
        LastUpdatedTime: updated[StackName as string]
          ? new Date(updated[StackName as string] as string)
          : undefined,
      },
    ],
  }))
}

const recorder = () => {
  const runs: string[][] = []
  return {
    runs,
    run: async (command: string, args: string[]) => {
      runs.push([command, ...args])
      return 0
    },
  }
}

beforeEach(() => cfnMock.reset())

describe('apply', () => {
  it('executes the planned change sets by ARN, the data stack first, with no synthesis', async () => {
    standing({ [API]: {}, [DATA]: {} })
    const { runs, run } = recorder()
    const { executed } = await applyPlan({ cfn, run, app: 'cdk.out', plan: PLAN, say: () => {} })
    expect(executed).toEqual([DATA, API])
    expect(runs).toEqual([
      [
        'npx',
        'cdk',
        'deploy',
        '--app',
        'cdk.out',
        '--method=execute-change-set',
        '--change-set-name',
        arn(DATA, 'one'),
        '--require-approval',
        'never',
        '--progress',
        'events',
        DATA,
      ],
      expect.arrayContaining(['--method=execute-change-set', arn(API, 'one'), API]),
    ])
  })

  it('refuses a change set made stale by another change to its stack, running nothing for it', async () => {
    standing(
      { [DATA]: {}, [API]: { execution: 'OBSOLETE' } },
      { [DATA]: UPDATED, [API]: '2026-11-03T00:00:00.000Z' },
    )
    const { runs, run } = recorder()
    await expect(
      applyPlan({ cfn, run, app: 'cdk.out', plan: PLAN, say: () => {} }),
    ).rejects.toThrow(
      /petstore-production-api: change set petstore-9-1 is stale: the stack changed after the plan .*make a new plan/,
    )
    // The data stack's, still valid, ran; the API stack's did not.
    expect(runs.map((r) => r.at(-1))).toEqual([DATA])
  })

  it('refuses a stack updated since the plan even if CloudFormation still offers the change set', async () => {
    standing({ [DATA]: {}, [API]: {} }, { [DATA]: '2026-11-05T00:00:00.000Z', [API]: UPDATED })
    const { runs, run } = recorder()
    await expect(
      applyPlan({ cfn, run, app: 'cdk.out', plan: PLAN, say: () => {} }),
    ).rejects.toThrow(/petstore-production-data: .* is stale/)
    expect(runs).toEqual([])
  })

  it('refuses a change set that is gone, or one of the same name that is not the planned one', async () => {
    const { runs, run } = recorder()
    standing({ [DATA]: 'gone', [API]: {} })
    await expect(
      applyPlan({ cfn, run, app: 'cdk.out', plan: PLAN, say: () => {} }),
    ).rejects.toThrow(/petstore-production-data: change set petstore-9-1 is gone/)
    standing({ [DATA]: { id: arn(DATA, 'remade') }, [API]: {} })
    await expect(
      applyPlan({ cfn, run, app: 'cdk.out', plan: PLAN, say: () => {} }),
    ).rejects.toThrow(/is not the planned one/)
    standing({ [DATA]: { status: 'FAILED', execution: 'UNAVAILABLE' }, [API]: {} })
    await expect(
      applyPlan({ cfn, run, app: 'cdk.out', plan: PLAN, say: () => {} }),
    ).rejects.toThrow(/cannot be executed: status FAILED/)
    expect(runs).toEqual([])
  })

  it('skips a stack planned with nothing to do', async () => {
    standing({ [API]: {} })
    const { runs, run } = recorder()
    const plan = { ...PLAN, changeSets: [planned(API), planned(DATA, { noChanges: true })] }
    expect((await applyPlan({ cfn, run, app: 'cdk.out', plan, say: () => {} })).executed).toEqual([
      API,
    ])
    expect(runs).toHaveLength(1)
  })

  it('stops at the first failed execution', async () => {
    standing({ [API]: {}, [DATA]: {} })
    const run = async () => 1
    await expect(
      applyPlan({ cfn, run, app: 'cdk.out', plan: PLAN, say: () => {} }),
    ).rejects.toThrow(/petstore-production-data: cdk deploy --method=execute-change-set exited 1/)
  })
})

describe('prepare', () => {
  it('makes the change sets without executing them, then records each by ARN with its stack’s last update', async () => {
    const nothing = "The submitted information didn't contain changes."
    standing(
      { [API]: {}, [DATA]: { status: 'FAILED', execution: 'UNAVAILABLE', reason: nothing } },
      { [API]: UPDATED, [DATA]: undefined },
    )
    const { runs, run } = recorder()
    const { plan, descriptions } = await preparePlan({
      cfn,
      run,
      app: 'cdk.out',
      stage: 'production',
      stacks: [API, DATA],
      changeSetName: 'petstore-9-1',
      digest: PLAN.digest,
      now: () => new Date('2026-11-02T00:00:00Z'),
    })
    expect(runs).toEqual([
      [
        'npx',
        'cdk',
        'deploy',
        '--app',
        'cdk.out',
        '--method=prepare-change-set',
        '--change-set-name',
        'petstore-9-1',
        '--require-approval',
        'never',
        '--progress',
        'events',
        DATA,
        API,
      ],
    ])
    expect(descriptions.map((d) => d.StackName)).toEqual([DATA, API])
    expect(plan).toEqual({
      ...PLAN,
      changeSets: [
        { ...planned(DATA), noChanges: true, stackLastUpdated: undefined },
        planned(API),
      ],
    })
    // What prepare writes, apply reads.
    expect(readPlan(JSON.stringify(plan))).toEqual(JSON.parse(JSON.stringify(plan)))
  })

  it('fails when the CDK CLI does', async () => {
    await expect(
      preparePlan({
        cfn,
        run: async () => 1,
        app: 'cdk.out',
        stage: 'production',
        stacks: [API],
        changeSetName: 'x',
        digest: PLAN.digest,
      }),
    ).rejects.toThrow(/prepare-change-set exited 1/)
  })
})

describe('the plan file', () => {
  it('refuses a plan apply could not hold to its change sets', () => {
    expect(() => readPlan(JSON.stringify({ ...PLAN, version: 2 }))).toThrow(/version 1/)
    expect(() => readPlan(JSON.stringify({ ...PLAN, digest: '' }))).toThrow(/no digest/)
    expect(() =>
      readPlan(
        JSON.stringify({ ...PLAN, changeSets: [{ ...planned(API), changeSetId: 'name-only' }] }),
      ),
    ).toThrow(/has no ARN/)
  })

  it('orders a stage’s stacks data first', () => {
    expect(deployOrder([API, DATA])).toEqual([DATA, API])
  })
})

describe('how production is applied', () => {
  const cdkJson = (release: unknown) =>
    JSON.stringify({ app: 'x', context: { petstore: { release } } })

  it('is what cdk.json says, one of the two modes, never assumed', () => {
    expect(approvalFromCdkJson(cdkJson({ productionApproval: 'reviewers' }))).toBe('reviewers')
    expect(approvalFromCdkJson(cdkJson({ productionApproval: 'operator' }))).toBe('operator')
    expect(() => approvalFromCdkJson(cdkJson({}))).toThrow(
      /productionApproval is null: expected "reviewers" or "operator"/,
    )
    expect(() => approvalFromCdkJson(JSON.stringify({ context: {} }))).toThrow(/is null/)
    expect(() => approvalFromCdkJson(cdkJson({ productionApproval: 'yes' }))).toThrow(/is "yes"/)
  })
})

describe('what the summary says about applying', () => {
  it('names the approving environment where reviewers gate it, and the commands where a person applies', () => {
    const where = { planRun: '42', assemblyRun: '7', digest: PLAN.digest }
    expect(applyInstructions('reviewers', where).join('\n')).toContain(
      "A required reviewer of the `production` environment approves this run's `production` job",
    )
    expect(applyInstructions('operator', where)).toEqual(
      expect.arrayContaining([
        'gh run download 7 -n cloud-assembly -D cdk.out',
        'gh run download 42 -n production-plan -D plan',
        `npm run release:digest -- cdk.out --expect "${PLAN.digest}"`,
        'npm run release:apply -- --plan plan/release-plan.json --app cdk.out',
      ]),
    )
  })
})
