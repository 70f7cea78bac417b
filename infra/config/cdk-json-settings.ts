// Stage and release settings come from cdk.json alone: what a hand deploy reads is what the pipeline reads.
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { STAGE_NAMES } from '#shared/config/stages-config.ts'
import { RELEASE_SETTINGS } from './release-config.ts'
import { CONTEXT_ROOT, type SettingsReader, STAGE_SETTINGS } from './stage-context-reader.ts'

/**
 * The `petstore` object of cdk.json's `context`: `{ staging?, production?, release? }`, each an
 * object of settings. The pipeline synthesizes from the repository's cdk.json, so a setting given
 * on a command line (`-c production.alarmEmail=…`) would be dropped by the next release: removed
 * alarm subscriptions, a custom domain gone. The app therefore reads this file itself, and refuses
 * a stage or release setting in the CDK context that the file does not hold. Tests hand the app
 * settings of their own (`addPetstoreStacks(app, settings)`): the source is a parameter.
 */
export type PetstoreSettings = Readonly<Record<string, unknown>>

export const CDK_JSON_PATH = fileURLToPath(new URL('../../cdk.json', import.meta.url))

/** The `petstore` settings of a cdk.json file (none: `{}`). */
export const readCdkJsonSettings = (path: string = CDK_JSON_PATH): PetstoreSettings => {
  const json = JSON.parse(readFileSync(path, 'utf8')) as { context?: Record<string, unknown> }
  const settings = json.context?.[CONTEXT_ROOT]
  return settings && typeof settings === 'object' ? (settings as PetstoreSettings) : {}
}

/** `production.alarmEmail` → `petstore.production.alarmEmail` of these settings. */
export const settingsReader =
  (settings: PetstoreSettings): SettingsReader =>
  (key) => {
    const dot = key.indexOf('.')
    const scope = settings[key.slice(0, dot)]
    return scope && typeof scope === 'object'
      ? (scope as Record<string, unknown>)[key.slice(dot + 1)]
      : undefined
  }

const KNOWN: Record<string, readonly string[]> = {
  ...Object.fromEntries(STAGE_NAMES.map((stage) => [stage, STAGE_SETTINGS])),
  release: RELEASE_SETTINGS,
}

/** Throws on a scope or setting cdk.json's `petstore` may not hold: a typo never goes unread. */
const checkNames = (settings: PetstoreSettings): void => {
  for (const [scope, values] of Object.entries(settings)) {
    const known = KNOWN[scope]
    if (!known) {
      throw new Error(
        `cdk.json: ${CONTEXT_ROOT}.${scope} is neither a stage nor release (expected ${Object.keys(KNOWN).join(', ')})`,
      )
    }
    if (!values || typeof values !== 'object' || Array.isArray(values)) {
      throw new Error(`cdk.json: ${CONTEXT_ROOT}.${scope} must be an object of settings`)
    }
    for (const name of Object.keys(values)) {
      if (!known.includes(name)) {
        throw new Error(
          `cdk.json: ${CONTEXT_ROOT}.${scope}.${name} is not a setting (${scope}'s settings: ${known.join(', ')})`,
        )
      }
    }
  }
}

/** The same setting: equal JSON, or a command line's text for the file's number or boolean. */
const same = (given: unknown, held: unknown): boolean =>
  JSON.stringify(given) === JSON.stringify(held) ||
  (typeof given === 'string' &&
    ['number', 'boolean'].includes(typeof held) &&
    given === String(held))

/** A command line's text as cdk.json would hold it: `false` a boolean, `300` a number. */
const asJson = (value: unknown): string => {
  if (typeof value === 'string' && /^(true|false|-?\d{1,15})$/.test(value)) return value
  return JSON.stringify(value)
}

/** Stage settings once also read from the context for every stage (`-c waf=false`). */
const FORMER_APP_WIDE_SWITCHES = ['waf', 'gradualDeployment']

/**
 * The settings for the app: cdk.json's (`fileSettings`), checked, after refusing every stage or
 * release setting of the CDK context (`-c <stage>.<setting>=…`, `-c release.…`, `-c petstore=…`,
 * `-c waf=…`) that the file does not hold, with a message naming cdk.json and what to write in it.
 */
export const petstoreSettings = (
  context: Record<string, unknown>,
  fileSettings: PetstoreSettings,
): PetstoreSettings => {
  checkNames(fileSettings)
  const read = settingsReader(fileSettings)
  for (const [key, value] of Object.entries(context)) {
    const scope = key.split('.')[0] as string
    if (key === CONTEXT_ROOT) {
      if (!same(value, fileSettings)) {
        throw new Error(
          `-c ${CONTEXT_ROOT}=… differs from cdk.json's "${CONTEXT_ROOT}": settings are read from cdk.json only, so a hand deploy and the release pipeline deploy the same thing. Edit cdk.json instead`,
        )
      }
      continue
    }
    const isSetting = key.includes('.') && scope in KNOWN
    if (!isSetting && !FORMER_APP_WIDE_SWITCHES.includes(key)) continue
    if (isSetting && same(value, read(key))) continue
    const [where, name] = isSetting ? [scope, key.slice(scope.length + 1)] : ['<stage>', key]
    throw new Error(
      `-c ${key}=${String(value)}: cdk.json does not hold that (${CONTEXT_ROOT}.${isSetting ? key : `<stage>.${key}`}). Settings are read from cdk.json only, so a hand deploy and the release pipeline deploy the same thing: write it in cdk.json, under "context": {"${CONTEXT_ROOT}": {"${where}": {"${name}": ${asJson(value)}}}}, and commit it`,
    )
  }
  return fileSettings
}
