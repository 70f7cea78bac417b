import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import {
  CDK_JSON_PATH,
  petstoreSettings,
  readCdkJsonSettings,
  settingsReader,
} from '#infra/config/cdk-json-settings.ts'

/**
 * Settings come from cdk.json alone (infra/config/cdk-json-settings.ts): what the CDK CLI puts in
 * the app's context from `-c` is refused when the file does not hold it, so the pipeline, which
 * synthesizes from the repository's cdk.json, never drops a setting a hand deploy used.
 */
const FILE = { production: { alarmEmail: 'ops@example.com', waf: false } }

describe("cdk.json's petstore settings", () => {
  it('are read from the file, by dotted name', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cdk-json-'))
    try {
      const path = join(dir, 'cdk.json')
      writeFileSync(path, JSON.stringify({ app: 'x', context: { petstore: FILE, other: 1 } }))
      const read = settingsReader(readCdkJsonSettings(path))
      expect(read('production.alarmEmail')).toBe('ops@example.com')
      expect(read('staging.alarmEmail')).toBeUndefined()
      writeFileSync(path, JSON.stringify({ app: 'x' }))
      expect(readCdkJsonSettings(path)).toEqual({})
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("are the repository's own cdk.json by default", () => {
    expect(CDK_JSON_PATH.endsWith('/cdk.json')).toBe(true)
    expect(() => petstoreSettings({}, readCdkJsonSettings())).not.toThrow()
  })

  it('hold only stages and the release, each only its own settings', () => {
    expect(() => petstoreSettings({}, { prod: {} })).toThrow(
      'cdk.json: petstore.prod is neither a stage nor release (expected staging, production, release)',
    )
    expect(() => petstoreSettings({}, { staging: { alarmEmial: 'x' } })).toThrow(
      /cdk\.json: petstore\.staging\.alarmEmial is not a setting \(staging's settings: account, region/,
    )
    expect(() => petstoreSettings({}, { release: { githubRepo: 'a/b' } })).toThrow(
      /petstore\.release\.githubRepo is not a setting/,
    )
    expect(() => petstoreSettings({}, { staging: 'waf' })).toThrow(
      'cdk.json: petstore.staging must be an object of settings',
    )
  })
})

describe('a setting given with -c', () => {
  it('is refused when cdk.json does not hold it, with what to write there', () => {
    expect(() => petstoreSettings({ 'production.domainName': 'api.example.com' }, FILE)).toThrow(
      '-c production.domainName=api.example.com: cdk.json does not hold that (petstore.production.domainName). Settings are read from cdk.json only, so a hand deploy and the release pipeline deploy the same thing: write it in cdk.json, under "context": {"petstore": {"production": {"domainName": "api.example.com"}}}, and commit it',
    )
    expect(() =>
      petstoreSettings({ 'production.alarmEmail': 'someone@example.com' }, FILE),
    ).toThrow(/-c production\.alarmEmail=someone@example\.com: cdk\.json does not hold that/)
    expect(() => petstoreSettings({ 'release.githubRepository': 'acme/petstore' }, FILE)).toThrow(
      /-c release\.githubRepository=acme\/petstore: cdk\.json does not hold that/,
    )
  })

  it('is refused in the form that once switched every stage (-c waf=false)', () => {
    expect(() => petstoreSettings({ gradualDeployment: 'false' }, FILE)).toThrow(
      /-c gradualDeployment=false: cdk\.json does not hold that \(petstore\.<stage>\.gradualDeployment\)/,
    )
  })

  it('is shown as cdk.json would hold it: a switch a boolean, a count a number', () => {
    expect(() => petstoreSettings({ 'staging.waf': 'true' }, FILE)).toThrow(
      '{"petstore": {"staging": {"waf": true}}}',
    )
    expect(() => petstoreSettings({ 'staging.throttleRateLimit': '800' }, FILE)).toThrow(
      '{"petstore": {"staging": {"throttleRateLimit": 800}}}',
    )
  })

  it('is refused as a whole petstore object that differs from the file', () => {
    expect(() => petstoreSettings({ petstore: { staging: { waf: false } } }, FILE)).toThrow(
      /-c petstore=… differs from cdk\.json's "petstore"/,
    )
    // The CDK CLI passes cdk.json's own context to the app: the same object is no override.
    expect(petstoreSettings({ petstore: FILE }, FILE)).toBe(FILE)
  })

  it('is taken when it says what cdk.json holds, as the CLI passes it (a string)', () => {
    const context = {
      'production.alarmEmail': 'ops@example.com',
      'production.waf': 'false',
      stage: 'production',
      '@aws-cdk/core:enablePartitionLiterals': true,
    }
    expect(petstoreSettings(context, FILE)).toBe(FILE)
  })
})
