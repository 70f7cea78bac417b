/**
 * Who executes production's prepared change sets (docs/deploying.md, "Production: a plan, then an
 * apply"): `reviewers`, the workflow's `production` job once a required reviewer of the GitHub
 * environment approves it (GitHub enforces required reviewers for public repositories on every
 * plan and for private ones on GitHub Enterprise only: GitHub Docs, "Reviewing deployments"), or
 * `operator`, a person with production rights, with their own credentials (`npm run
 * release:apply`), where GitHub enforces none. The CDK app (`petstore.release.productionApproval`:
 * which roles the production release stack makes) and the release tools read them here.
 */
export const PRODUCTION_APPROVALS = ['reviewers', 'operator'] as const

export type ProductionApproval = (typeof PRODUCTION_APPROVALS)[number]

/** The GitHub environment of the job that prepares production's change sets (no reviewers). */
export const PLAN_ENVIRONMENT = 'production-plan'
