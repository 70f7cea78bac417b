// The release pipeline's settings: which GitHub repository may deploy a stage, and how.
import type { ContextReader } from './stage-context-reader.ts'

/**
 * Set once per account (`-c release.githubRepository=owner/repo`, or `petstore.release` in
 * cdk.json); the app then adds a `petstore-release-<stage>` stack per stage with the role the
 * pipeline's deploy jobs assume (docs/deploying.md, "The release pipeline").
 */
export interface ReleaseConfig {
  /** `owner/name` of the repository whose workflow deploys (GitHub's OIDC `sub` names it). */
  githubRepository: string
  /** An IAM OIDC provider for GitHub the account already has (one per account and URL); else one is made. */
  oidcProviderArn?: string
  /** The bootstrap qualifier (`cdk bootstrap --qualifier`; CDK's default). */
  bootstrapQualifier: string
}

export const DEFAULT_BOOTSTRAP_QUALIFIER = 'hnb659fds'

/** GitHub's rules for owner and repository names. */
const REPOSITORY = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})\/[A-Za-z0-9._-]{1,100}$/
const QUALIFIER = /^[a-z0-9]{1,10}$/
const PROVIDER_ARN =
  /^arn:aws[a-z-]*:iam::\d{12}:oidc-provider\/token\.actions\.githubusercontent\.com$/

const setting = (context: ContextReader, name: string): string | undefined => {
  const flat = context(`release.${name}`)
  const root = context('petstore') as { release?: Record<string, unknown> } | undefined
  const value = flat ?? root?.release?.[name]
  if (value === undefined || value === null || value === '') return undefined
  if (typeof value !== 'string') {
    throw new Error(`Invalid context release.${name}=${JSON.stringify(value)}: expected a string`)
  }
  return value.trim()
}

/** The release settings, or undefined when no repository is named (no release stacks then). */
export const readReleaseConfig = (context: ContextReader): ReleaseConfig | undefined => {
  const githubRepository = setting(context, 'githubRepository')
  if (githubRepository === undefined) return undefined
  if (!REPOSITORY.test(githubRepository)) {
    throw new Error(
      `Invalid context release.githubRepository=${JSON.stringify(githubRepository)}: expected owner/name`,
    )
  }
  const oidcProviderArn = setting(context, 'oidcProviderArn')
  if (oidcProviderArn !== undefined && !PROVIDER_ARN.test(oidcProviderArn)) {
    throw new Error(
      `Invalid context release.oidcProviderArn=${JSON.stringify(oidcProviderArn)}: expected the ARN of the token.actions.githubusercontent.com provider`,
    )
  }
  const bootstrapQualifier = setting(context, 'bootstrapQualifier') ?? DEFAULT_BOOTSTRAP_QUALIFIER
  if (!QUALIFIER.test(bootstrapQualifier)) {
    throw new Error(
      `Invalid context release.bootstrapQualifier=${JSON.stringify(bootstrapQualifier)}: expected up to 10 lowercase letters and digits`,
    )
  }
  return { githubRepository, bootstrapQualifier, ...(oidcProviderArn ? { oidcProviderArn } : {}) }
}
