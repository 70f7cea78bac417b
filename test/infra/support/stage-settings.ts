import type { PetstoreSettings } from '#infra/config/cdk-json-settings.ts'

/**
 * Settings as cdk.json's `petstore` object holds them, from dotted names: `{'production.waf':
 * false}` is `{"production": {"waf": false}}`. Tests hand these to the app in place of the file
 * (the settings source is a parameter), so no test writes cdk.json.
 */
export const settingsOf = (flat: Record<string, unknown>): PetstoreSettings => {
  const settings: Record<string, Record<string, unknown>> = {}
  for (const [key, value] of Object.entries(flat)) {
    const dot = key.indexOf('.')
    const scope = key.slice(0, dot)
    settings[scope] = { ...settings[scope], [key.slice(dot + 1)]: value }
  }
  return settings
}

/** Whether a dotted name is a setting's (a stage's or the release's), not plain CDK context. */
export const isSettingName = (key: string): boolean => /^(staging|production|release)\./.test(key)

/**
 * A complete release configuration, by dotted names: a repository with GitHub's ids (a
 * repository made today), one account for both stages, acknowledged, and production's plans
 * applied once a required reviewer approves.
 */
export const RELEASE_SETTINGS: Readonly<Record<string, unknown>> = {
  'release.githubRepository': 'acme/petstore',
  'release.githubOwnerId': 1234567,
  'release.githubRepositoryId': 987654321,
  'staging.account': '111111111111',
  'production.account': '111111111111',
  'release.oneAccountForBothStages': true,
  'release.productionApproval': 'reviewers',
}
