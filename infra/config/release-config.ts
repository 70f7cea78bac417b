// The release pipeline's settings: which GitHub repository may deploy which account, and how.
import {
  PLAN_ENVIRONMENT,
  PRODUCTION_APPROVALS,
  type ProductionApproval,
} from '#shared/config/production-approval-config.ts'
import { STAGE_NAMES, type StageName } from '#shared/config/stages-config.ts'
import { CONTEXT_ROOT, type SettingsReader } from './stage-context-reader.ts'

/**
 * `petstore.release` in cdk.json, with each stage's `account` (`petstore.<stage>.account`). With
 * a repository named, the app adds a `petstore-release-<stage>` stack per stage with the role the
 * pipeline's deploy jobs assume (docs/deploying.md, "The release pipeline").
 */
export interface ReleaseConfig {
  /** `owner/name` of the repository whose workflow deploys, as GitHub spells it. */
  githubRepository: string
  /**
   * GitHub's numeric ids of the owner and the repository. GitHub puts them in the OIDC subject of
   * a repository created, renamed or transferred since 15 July 2026 (or opted in), and the roles
   * then trust that immutable subject only: a recycled name no longer matches.
   */
  githubIds?: { owner: string; repository: string }
  /** Which subject forms the roles trust, each matched exactly. */
  subjectForms: readonly SubjectForm[]
  /** Each stage's account, named explicitly. */
  accounts: Record<StageName, string>
  /** Accounts that already have GitHub's OIDC provider: no release stack makes one there. */
  accountsWithGitHubOidcProvider: readonly string[]
  /** The bootstrap qualifier (`cdk bootstrap --qualifier`; CDK's default). */
  bootstrapQualifier: string
  /**
   * Who executes production's prepared change sets: the workflow once a required reviewer
   * approves (`reviewers`: production's release stack makes a role the `production` environment
   * assumes), or a person with production rights (`operator`: no role any workflow job can use
   * to change production).
   */
  productionApproval: ProductionApproval
}

/** A GitHub environment a release job runs in: a stage's, or production's plan. */
export type GitHubEnvironment = StageName | typeof PLAN_ENVIRONMENT

/** `name`: `repo:OWNER/REPO:…`; `immutable`: `repo:OWNER@OWNER_ID/REPO@REPO_ID:…`. */
export type SubjectForm = 'name' | 'immutable'

export const DEFAULT_BOOTSTRAP_QUALIFIER = 'hnb659fds'

/** Every setting `petstore.release` may hold; another name fails synthesis. */
export const RELEASE_SETTINGS = [
  'githubRepository',
  'githubOwnerId',
  'githubRepositoryId',
  'nameSubject',
  'immutableSubjectMigration',
  'oidcSubjectClaimKeys',
  'accountsWithGitHubOidcProvider',
  'oneAccountForBothStages',
  'bootstrapQualifier',
  'productionApproval',
  'oidcProviderArn',
] as const
type ReleaseSetting = (typeof RELEASE_SETTINGS)[number]

/** GitHub's rules for owner and repository names. */
const REPOSITORY = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})\/[A-Za-z0-9._-]{1,100}$/
const QUALIFIER = /^[a-z0-9]{1,10}$/
const ACCOUNT = /^\d{12}$/
const GITHUB_ID = /^[1-9]\d{0,19}$/

/** How an operator reads what the OIDC subject is made of (docs/deploying.md, step 3). */
export const repositoryIdsCommand = (repository: string): string =>
  `gh api repos/${repository} --jq '.full_name, .owner.id, .id'`

/** What puts a repository back on GitHub's default subject template (docs/deploying.md, step 3). */
export const defaultSubjectTemplateCommand = (repository: string): string =>
  `gh api --method PUT repos/${repository}/actions/oidc/customization/sub -F use_default=true`

/** What one account for both stages gives up: the acknowledgment's message and the docs say it. */
export const SHARED_ACCOUNT_COST =
  "the staging job, which no one approves, assumes the same bootstrap roles as production's job, and those can change production's stacks"

const invalid = (name: string, value: unknown, expected: string): never => {
  throw new Error(
    `Invalid cdk.json setting ${CONTEXT_ROOT}.${name}=${JSON.stringify(value)}: expected ${expected}`,
  )
}

/** Reads `petstore.release.<name>` (and the stages' accounts) from cdk.json's settings. */
const releaseReader = (settings: SettingsReader) => {
  const raw = (name: ReleaseSetting): unknown => {
    const value = settings(`release.${name}`)
    return value === null || value === '' ? undefined : value
  }
  const text = (name: ReleaseSetting): string | undefined => {
    const value = raw(name)
    if (value === undefined) return undefined
    return typeof value === 'string' ? value.trim() : invalid(`release.${name}`, value, 'a string')
  }
  const flag = (name: ReleaseSetting): boolean => {
    const value = raw(name)
    if (value === undefined || value === false || value === 'false') return false
    return value === true || value === 'true' ? true : invalid(`release.${name}`, value, 'true')
  }
  /** A GitHub id given as a number or as digits. */
  const id = (name: ReleaseSetting): string | undefined => {
    const value = raw(name)
    if (value === undefined) return undefined
    const digits = String(value).trim()
    return GITHUB_ID.test(digits)
      ? digits
      : invalid(`release.${name}`, value, "GitHub's numeric id (gh api repos/OWNER/REPO)")
  }
  return { raw, text, flag, id }
}

/** Which subject forms to trust: never chosen by default where GitHub's choice is unknown. */
const subjectFormsOf = (
  read: ReturnType<typeof releaseReader>,
  repository: string,
): Pick<ReleaseConfig, 'githubIds' | 'subjectForms'> => {
  const claimKeys = read.raw('oidcSubjectClaimKeys')
  if (claimKeys !== undefined) {
    invalid(
      'release.oidcSubjectClaimKeys',
      claimKeys,
      `no custom OIDC subject template: the roles trust GitHub's default subject exactly. Set the repository back to it (${defaultSubjectTemplateCommand(repository)}) and remove release.oidcSubjectClaimKeys`,
    )
  }
  const owner = read.id('githubOwnerId')
  const repositoryId = read.id('githubRepositoryId')
  const nameSubject = read.flag('nameSubject')
  const migration = read.flag('immutableSubjectMigration')
  const readIds = repositoryIdsCommand(repository)
  if ((owner === undefined) !== (repositoryId === undefined)) {
    invalid(
      `release.${owner === undefined ? 'githubOwnerId' : 'githubRepositoryId'}`,
      null,
      `githubOwnerId and githubRepositoryId together (${readIds})`,
    )
  }
  if (owner === undefined || repositoryId === undefined) {
    if (migration) invalid('release.immutableSubjectMigration', true, `the ids too (${readIds})`)
    if (!nameSubject) {
      invalid(
        'release.githubOwnerId',
        null,
        `GitHub's owner and repository ids (${readIds}): the OIDC subject of a repository created, renamed or transferred since 15 July 2026 carries them. Only for an older repository that has not opted in to immutable subjects, set release.nameSubject to true instead`,
      )
    }
    return { subjectForms: ['name'] }
  }
  if (nameSubject) {
    invalid(
      'release.nameSubject',
      true,
      'nothing with the ids set (the immutable subject alone); both forms only while moving to it: release.immutableSubjectMigration',
    )
  }
  return {
    githubIds: { owner, repository: repositoryId },
    subjectForms: migration ? ['name', 'immutable'] : ['immutable'],
  }
}

/** Both stages' accounts, named, and the acknowledgment one shared account needs. */
const accountsOf = (
  settings: SettingsReader,
  read: ReturnType<typeof releaseReader>,
): Record<StageName, string> => {
  const accounts = {} as Record<StageName, string>
  for (const stage of STAGE_NAMES) {
    const account = settings(`${stage}.account`)
    if (typeof account !== 'string' || !ACCOUNT.test(account.trim())) {
      invalid(
        `${stage}.account`,
        account ?? null,
        "the stage's 12-digit AWS account, in quotes: a release configuration names both stages' accounts",
      )
    }
    accounts[stage] = String(account).trim()
  }
  const shared = accounts.staging === accounts.production
  const acknowledged = read.flag('oneAccountForBothStages')
  if (shared && !acknowledged) {
    invalid(
      'release.oneAccountForBothStages',
      null,
      `true to put both stages in account ${accounts.staging}, acknowledging what that gives up: ${SHARED_ACCOUNT_COST}; the two stages share the account's quotas (10,000 API keys, the API Gateway and Lambda throttles); one credential reaches both. Or give production an account of its own`,
    )
  }
  if (!shared && acknowledged) {
    invalid(
      'release.oneAccountForBothStages',
      true,
      'nothing: the stages have accounts of their own',
    )
  }
  return accounts
}

const providerAccountsOf = (
  read: ReturnType<typeof releaseReader>,
  accounts: Record<StageName, string>,
): string[] => {
  const value = read.raw('accountsWithGitHubOidcProvider') ?? []
  const expected = `a list of the stages' accounts (${[...new Set(Object.values(accounts))].join(', ')}) that already have the token.actions.githubusercontent.com provider (aws iam list-open-id-connect-providers)`
  if (!Array.isArray(value))
    return invalid('release.accountsWithGitHubOidcProvider', value, expected)
  const listed = value.map((account) => String(account).trim())
  for (const account of listed) {
    if (!Object.values(accounts).includes(account)) {
      invalid('release.accountsWithGitHubOidcProvider', value, expected)
    }
  }
  return [...new Set(listed)]
}

/** The release settings, or undefined when no repository is named (no release stacks then). */
export const readReleaseConfig = (settings: SettingsReader): ReleaseConfig | undefined => {
  const read = releaseReader(settings)
  const githubRepository = read.text('githubRepository')
  if (githubRepository === undefined) return undefined
  if (!REPOSITORY.test(githubRepository)) {
    invalid('release.githubRepository', githubRepository, 'owner/name')
  }
  if (read.raw('oidcProviderArn') !== undefined) {
    invalid(
      'release.oidcProviderArn',
      read.raw('oidcProviderArn'),
      'nothing: an account has one provider for GitHub, whose ARN follows from the account. List an account that has it in release.accountsWithGitHubOidcProvider',
    )
  }
  const bootstrapQualifier = read.text('bootstrapQualifier') ?? DEFAULT_BOOTSTRAP_QUALIFIER
  if (!QUALIFIER.test(bootstrapQualifier)) {
    invalid(
      'release.bootstrapQualifier',
      bootstrapQualifier,
      'up to 10 lowercase letters and digits',
    )
  }
  const accounts = accountsOf(settings, read)
  const productionApproval = read.text('productionApproval')
  if (!PRODUCTION_APPROVALS.includes(productionApproval as ProductionApproval)) {
    invalid(
      'release.productionApproval',
      productionApproval ?? null,
      '"reviewers" where GitHub enforces required reviewers on the production environment (public repositories on every plan, private ones on GitHub Enterprise only), or "operator": a person with production rights executes the prepared change sets with their own credentials (npm run release:apply). Never chosen by default: on a plan without required reviewers, "reviewers" would let any run on main change production',
    )
  }
  return {
    githubRepository,
    ...subjectFormsOf(read, githubRepository),
    accounts,
    accountsWithGitHubOidcProvider: providerAccountsOf(read, accounts),
    bootstrapQualifier,
    productionApproval: productionApproval as ProductionApproval,
  }
}

/** The OIDC subjects a job in this GitHub environment presents, one per form the release trusts. */
export const oidcSubjects = (release: ReleaseConfig, environment: GitHubEnvironment): string[] => {
  const [owner, name] = release.githubRepository.split('/') as [string, string]
  return release.subjectForms.map((form) =>
    form === 'name' || !release.githubIds
      ? `repo:${owner}/${name}:environment:${environment}`
      : `repo:${owner}@${release.githubIds.owner}/${name}@${release.githubIds.repository}:environment:${environment}`,
  )
}

/**
 * The GitHub environments whose jobs get a role in a stage's account: a stage's deploy job; for
 * production, the plan job always and the deploy job only where reviewers gate it.
 */
export const releaseEnvironments = (
  release: ReleaseConfig,
  stage: StageName,
): GitHubEnvironment[] =>
  stage === 'production'
    ? release.productionApproval === 'reviewers'
      ? ['production', PLAN_ENVIRONMENT]
      : [PLAN_ENVIRONMENT]
    : [stage]

/**
 * Whether this stage's release stack makes its account's GitHub OIDC provider: an account has one
 * per URL, so never where it exists already, and in an account both stages share only staging's
 * stack makes it (production's stack then needs staging's first).
 */
export const makesOidcProvider = (release: ReleaseConfig, stage: StageName): boolean => {
  const account = release.accounts[stage]
  if (release.accountsWithGitHubOidcProvider.includes(account)) return false
  return stage === 'staging' || release.accounts.staging !== account
}
