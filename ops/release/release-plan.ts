/**
 * Production as a plan, then an apply (docs/deploying.md, "Production: a plan, then an apply").
 * `prepare` makes the stage's change sets from the tested assembly without executing them (`cdk
 * deploy --method=prepare-change-set`, by an identity that cannot execute), describes them and
 * writes the plan: each stack's change set by its ARN, which no later change set of the same name
 * can take, and the assembly's digest. `apply` executes those very change sets, by ARN, each
 * after checking it is still the one planned and still executable: a change set made stale by
 * another change to its stack (CloudFormation marks it OBSOLETE, or deletes it when another
 * change set of the stack runs: API Reference, "ExecuteChangeSet", "ChangeSetSummary") is refused,
 * never planned again silently.
 */
import {
  type CloudFormationClient,
  DescribeChangeSetCommand,
  type DescribeChangeSetCommandOutput,
  DescribeStacksCommand,
} from '@aws-sdk/client-cloudformation'
import {
  PRODUCTION_APPROVALS,
  type ProductionApproval,
} from '#shared/config/production-approval-config.ts'
import { type ChangeSetDescription, hasNoChanges } from './change-set-summary.ts'

export const PLAN_VERSION = 1

/**
 * How production's plan is applied, as cdk.json says (`petstore.release.productionApproval`,
 * which synthesis has already checked): the workflow reads it from the released commit, so the
 * mode and the roles the release stack makes come from one versioned place.
 */
export const approvalFromCdkJson = (text: string): ProductionApproval => {
  const cdkJson = JSON.parse(text) as {
    context?: { petstore?: { release?: { productionApproval?: unknown } } }
  }
  const value = cdkJson.context?.petstore?.release?.productionApproval
  if (!PRODUCTION_APPROVALS.includes(value as ProductionApproval)) {
    throw new Error(
      `cdk.json's petstore.release.productionApproval is ${JSON.stringify(value ?? null)}: expected ${PRODUCTION_APPROVALS.map((v) => `"${v}"`).join(' or ')} (docs/deploying.md)`,
    )
  }
  return value as ProductionApproval
}

export interface PlannedChangeSet {
  stackName: string
  changeSetName: string
  /** The change set's ARN: what apply executes, and nothing else. */
  changeSetId: string
  /** CloudFormation made it with nothing to do: apply skips it. */
  noChanges: boolean
  /** The stack's last update when planned (absent: never updated since its creation). */
  stackLastUpdated?: string
}

export interface ReleasePlan {
  version: typeof PLAN_VERSION
  stage: string
  /** The digest of the assembly the change sets were made from (release:digest). */
  digest: string
  createdAt: string
  /** Where it was made, e.g. a workflow run's address. */
  origin?: string
  changeSets: PlannedChangeSet[]
}

/** Runs a command (the CDK CLI) and resolves with its exit code. */
export type RunCommand = (command: string, args: string[]) => Promise<number>

/** The stage's stacks in the order they deploy: the data stack before the API stack that imports from it. */
export const deployOrder = (stacks: readonly string[]): string[] =>
  [...stacks].sort((a, b) => Number(!a.endsWith('-data')) - Number(!b.endsWith('-data')))

/** `cdk deploy` that makes the change sets and executes none. */
export const prepareArgs = (app: string, changeSetName: string, stacks: readonly string[]) => [
  'cdk',
  'deploy',
  '--app',
  app,
  '--method=prepare-change-set',
  '--change-set-name',
  changeSetName,
  '--require-approval',
  'never',
  '--progress',
  'events',
  ...deployOrder(stacks),
]

/** `cdk deploy` that executes one prepared change set, by its ARN (no synthesis, no assets). */
export const executeArgs = (app: string, planned: PlannedChangeSet) => [
  'cdk',
  'deploy',
  '--app',
  app,
  '--method=execute-change-set',
  '--change-set-name',
  planned.changeSetId,
  '--require-approval',
  'never',
  '--progress',
  'events',
  planned.stackName,
]

const isNotFound = (error: unknown) =>
  (error as { name?: string }).name === 'ChangeSetNotFoundException' ||
  (error as { name?: string }).name === 'ChangeSetNotFound'

/** DescribeChangeSet, every page of changes; undefined when there is no such change set. */
export const describeChangeSet = async (
  cfn: CloudFormationClient,
  stackName: string,
  changeSet: string,
): Promise<ChangeSetDescription | undefined> => {
  let description: DescribeChangeSetCommandOutput | undefined
  let nextToken: string | undefined
  do {
    let page: DescribeChangeSetCommandOutput
    try {
      page = await cfn.send(
        new DescribeChangeSetCommand({
          StackName: stackName,
          ChangeSetName: changeSet,
          NextToken: nextToken,
        }),
      )
    } catch (error) {
      if (isNotFound(error)) return undefined
      throw error
    }
    description = description
      ? { ...description, Changes: [...(description.Changes ?? []), ...(page.Changes ?? [])] }
      : page
    nextToken = page.NextToken
  } while (nextToken)
  return description as ChangeSetDescription
}

/** The stack's LastUpdatedTime, as an ISO string (undefined: never updated since created). */
export const stackLastUpdated = async (
  cfn: CloudFormationClient,
  stackName: string,
): Promise<string | undefined> => {
  const { Stacks } = await cfn.send(new DescribeStacksCommand({ StackName: stackName }))
  const updated = Stacks?.[0]?.LastUpdatedTime
  return updated ? new Date(updated).toISOString() : undefined
}

/** Why a planned change set must not be executed now; undefined when it may. */
export const applyRefusal = (
  planned: PlannedChangeSet,
  current: ChangeSetDescription | undefined,
  lastUpdated: string | undefined,
): string | undefined => {
  const which = `${planned.stackName}: change set ${planned.changeSetName}`
  const again = 'Nothing more was executed; make a new plan (a new release run) and approve that.'
  if (!current) {
    return `${which} is gone: another change set of the stack ran (CloudFormation then deletes the others) or someone deleted it. ${again}`
  }
  if (current.ChangeSetId !== planned.changeSetId) {
    return `${which} is not the planned one (${current.ChangeSetId ?? '?'}, planned ${planned.changeSetId}). ${again}`
  }
  if (current.ExecutionStatus === 'OBSOLETE' || lastUpdated !== planned.stackLastUpdated) {
    return `${which} is stale: the stack changed after the plan (last updated ${lastUpdated ?? 'never'}, planned against ${planned.stackLastUpdated ?? 'never'}; execution status ${current.ExecutionStatus ?? '?'}). ${again}`
  }
  if (current.Status !== 'CREATE_COMPLETE' || current.ExecutionStatus !== 'AVAILABLE') {
    return `${which} cannot be executed: status ${current.Status ?? '?'}, execution status ${current.ExecutionStatus ?? '?'} (${current.StatusReason ?? 'no reason given'}). ${again}`
  }
  return undefined
}

export interface PrepareOptions {
  cfn: CloudFormationClient
  run: RunCommand
  app: string
  stage: string
  stacks: readonly string[]
  changeSetName: string
  digest: string
  origin?: string
  now?: () => Date
}

/** Makes the change sets (the CDK CLI) and describes them: the plan, and what the summary shows. */
export const preparePlan = async (
  options: PrepareOptions,
): Promise<{ plan: ReleasePlan; descriptions: ChangeSetDescription[] }> => {
  const [command, ...args] = [
    'npx',
    ...prepareArgs(options.app, options.changeSetName, options.stacks),
  ]
  const code = await options.run(command as string, args)
  if (code !== 0) throw new Error(`cdk deploy --method=prepare-change-set exited ${code}`)
  const descriptions: ChangeSetDescription[] = []
  const changeSets: PlannedChangeSet[] = []
  for (const stackName of deployOrder(options.stacks)) {
    const description = await describeChangeSet(options.cfn, stackName, options.changeSetName)
    if (!description?.ChangeSetId) {
      throw new Error(`${stackName}: no change set ${options.changeSetName} after preparing it`)
    }
    descriptions.push({ ...description, StackName: stackName })
    changeSets.push({
      stackName,
      changeSetName: options.changeSetName,
      changeSetId: description.ChangeSetId,
      noChanges: hasNoChanges(description),
      stackLastUpdated: await stackLastUpdated(options.cfn, stackName),
    })
  }
  const plan: ReleasePlan = {
    version: PLAN_VERSION,
    stage: options.stage,
    digest: options.digest,
    createdAt: (options.now ?? (() => new Date()))().toISOString(),
    ...(options.origin ? { origin: options.origin } : {}),
    changeSets,
  }
  return { plan, descriptions }
}

export interface ApplyOptions {
  cfn: CloudFormationClient
  run: RunCommand
  app: string
  plan: ReleasePlan
  /** Where the steps are said (stderr by default). */
  say?: (line: string) => void
}

/**
 * Executes the plan's change sets in deploy order, each checked first; the first refusal or failure
 * stops it (a stack already applied stays applied: its change set is spent).
 */
export const applyPlan = async (options: ApplyOptions): Promise<{ executed: string[] }> => {
  const say = options.say ?? ((line: string) => process.stderr.write(`${line}\n`))
  const executed: string[] = []
  const order = deployOrder(options.plan.changeSets.map((planned) => planned.stackName))
  for (const stackName of order) {
    const planned = options.plan.changeSets.find((set) => set.stackName === stackName)
    if (!planned) continue
    if (planned.noChanges) {
      say(`${stackName}: no changes planned, nothing to execute`)
      continue
    }
    const current = await describeChangeSet(options.cfn, stackName, planned.changeSetId)
    const refusal = applyRefusal(planned, current, await stackLastUpdated(options.cfn, stackName))
    if (refusal) throw new Error(refusal)
    say(`${stackName}: executing ${planned.changeSetName} (${planned.changeSetId})`)
    const code = await options.run('npx', executeArgs(options.app, planned))
    if (code !== 0)
      throw new Error(`${stackName}: cdk deploy --method=execute-change-set exited ${code}`)
    executed.push(stackName)
  }
  return { executed }
}

/** A plan file, checked for what apply relies on. */
export const readPlan = (text: string): ReleasePlan => {
  const plan = JSON.parse(text) as Partial<ReleasePlan>
  if (plan.version !== PLAN_VERSION) {
    throw new Error(
      `not a release plan of version ${PLAN_VERSION} (version ${String(plan.version)})`,
    )
  }
  if (
    !plan.digest ||
    !plan.stage ||
    !Array.isArray(plan.changeSets) ||
    plan.changeSets.length === 0
  ) {
    throw new Error('the plan names no digest, stage or change set')
  }
  for (const set of plan.changeSets) {
    if (!set.stackName || !set.changeSetName || !/^arn:/.test(set.changeSetId ?? '')) {
      throw new Error(`the plan's change set for ${set.stackName ?? '?'} has no ARN`)
    }
  }
  return plan as ReleasePlan
}

/**
 * What the approver's summary says after the changes: who applies the plan, and how. Where GitHub
 * enforces no required reviewers, the commands a person with production rights runs, with their
 * own credentials, from a clone of the repository (docs/deploying.md, "Applying a plan by hand").
 */
export const applyInstructions = (
  approval: ProductionApproval,
  where: { planRun?: string; assemblyRun?: string; digest: string },
): string[] =>
  approval === 'reviewers'
    ? [
        '### How it is applied',
        '',
        "A required reviewer of the `production` environment approves this run's `production` job, which executes exactly these change sets (by ARN) and smokes production. A change to a stack after this plan makes its change set stale: the apply refuses it, and nothing is planned again.",
      ]
    : [
        '### How it is applied',
        '',
        'GitHub enforces no required reviewers here, so no workflow job can execute production: a person with production rights applies this plan with their own credentials, from a clone of the repository, then smokes production. A change to a stack after this plan makes its change set stale: the apply refuses it.',
        '',
        '```sh',
        `gh run download ${where.assemblyRun ?? '<assembly run id>'} -n cloud-assembly -D cdk.out`,
        `gh run download ${where.planRun ?? '<plan run id>'} -n production-plan -D plan`,
        `npm run release:digest -- cdk.out --expect "${where.digest}"`,
        'npm run release:apply -- --plan plan/release-plan.json --app cdk.out',
        'npm run smoke -- --stage production',
        '```',
      ]
