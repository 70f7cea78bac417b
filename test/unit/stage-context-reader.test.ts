import { describe, expect, it } from 'vitest'
import { settingsReader } from '#infra/config/cdk-json-settings.ts'
import { type SettingsReader, stageContext } from '#infra/config/stage-context-reader.ts'

/** Settings by their dotted names under cdk.json's `petstore` (`staging.waf`). */
const contextOf =
  (values: Record<string, unknown>): SettingsReader =>
  (key) =>
    values[key]

describe('stage context reader', () => {
  it("reads cdk.json's object of its own stage only", () => {
    // Prepare
    const settings = settingsReader({ production: { alarmEmail: 'ops@example.com' } })

    // Act
    const alarmEmail = {
      production: stageContext(settings, 'production').text('alarmEmail'),
      staging: stageContext(settings, 'staging').text('alarmEmail'),
    }

    // Assess
    expect(alarmEmail).toEqual({ production: 'ops@example.com', staging: undefined })
  })

  it('has no app-wide value: a stage reads its own settings alone', () => {
    // Prepare
    const settings = settingsReader({ staging: { waf: false } })

    // Act
    const waf = stageContext(settings, 'production').flag('waf', true)

    // Assess
    expect(waf).toBe(true)
  })

  it.each([null, ''])('treats %j as unset: the default applies', (value) => {
    // Prepare
    const settings = stageContext(contextOf({ 'staging.logRetentionDays': value }), 'staging')

    // Act
    const days = settings.integer('logRetentionDays', { fallback: 14, min: 1 })

    // Assess
    expect(days).toBe(14)
  })

  it('reads integers given as numbers or text, trimmed', () => {
    // Prepare
    const settings = stageContext(
      contextOf({ 'staging.throttleRateLimit': ' 250 ', 'staging.throttleBurstLimit': 500 }),
      'staging',
    )

    // Act
    const read = {
      rate: settings.integer('throttleRateLimit', { fallback: 1, min: 1 }),
      burst: settings.integer('throttleBurstLimit', { fallback: 1, min: 1 }),
    }

    // Assess
    expect(read).toEqual({ rate: 250, burst: 500 })
  })

  it('names the key, the value, the range and the reason when an integer is out of bounds', () => {
    // Prepare
    const settings = stageContext(contextOf({ 'staging.throttleRateLimit': '5' }), 'staging')

    // Act & Assess
    expect(() =>
      settings.integer('throttleRateLimit', { fallback: 10, min: 10, max: 20, why: 'a reason' }),
    ).toThrow(
      'Invalid cdk.json setting petstore.staging.throttleRateLimit="5": expected an integer from 10 to 20 (a reason)',
    )
  })

  it.each([
    ['a fraction', 1.5],
    ['text', 'ten'],
  ])('refuses %s where an integer belongs', (_label, value) => {
    // Prepare
    const settings = stageContext(contextOf({ 'staging.throttleBurstLimit': value }), 'staging')

    // Act & Assess
    expect(() => settings.integer('throttleBurstLimit', { fallback: 1, min: 1 })).toThrow(
      /staging\.throttleBurstLimit=.*expected an integer of at least 1/,
    )
  })

  it.each([
    [true, true],
    ['true', true],
    [false, false],
    ['false', false],
  ])('reads the switch %j as %s', (value, expected) => {
    // Prepare
    const settings = stageContext(contextOf({ 'staging.waf': value }), 'staging')

    // Act & Assess
    expect(settings.flag('waf', !expected)).toBe(expected)
  })

  it('refuses a switch that is neither true nor false, naming where cdk.json holds it', () => {
    // Prepare
    const settings = stageContext(contextOf({ 'staging.waf': 'on' }), 'staging')

    // Act & Assess
    expect(() => settings.flag('waf', false)).toThrow(
      'Invalid cdk.json setting petstore.staging.waf="on": expected true or false',
    )
  })

  it('refuses a text setting that is not text', () => {
    // Prepare
    const settings = stageContext(contextOf({ 'staging.region': 42 }), 'staging')

    // Act & Assess
    expect(() => settings.text('region')).toThrow(
      'Invalid cdk.json setting petstore.staging.region=42: expected a string',
    )
  })
})
