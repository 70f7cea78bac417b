import { describe, expect, it } from 'vitest'
import { type ContextReader, stageContext } from '#infra/config/stage-context-reader.ts'

const contextOf =
  (values: Record<string, unknown>): ContextReader =>
  (key) =>
    values[key]

describe('stage context reader', () => {
  it('takes -c <stage>.<setting> over the cdk.json object', () => {
    // Prepare
    const context = contextOf({
      petstore: { production: { alarmEmail: 'file@example.com' } },
      'production.alarmEmail': 'flag@example.com',
    })

    // Act
    const alarmEmail = stageContext(context, 'production').text('alarmEmail')

    // Assess
    expect(alarmEmail).toBe('flag@example.com')
  })

  it('reads the cdk.json object of its own stage only', () => {
    // Prepare
    const context = contextOf({ petstore: { production: { alarmEmail: 'ops@example.com' } } })

    // Act
    const alarmEmail = stageContext(context, 'staging').text('alarmEmail')

    // Assess
    expect(alarmEmail).toBeUndefined()
  })

  it('lets an app-wide switch (-c waf=...) stand for every stage, below -c <stage>.waf', () => {
    // Prepare
    const context = contextOf({ waf: 'false', 'production.waf': 'true' })

    // Act
    const flags = {
      staging: stageContext(context, 'staging').flag('waf', true),
      production: stageContext(context, 'production').flag('waf', false),
    }

    // Assess
    expect(flags).toEqual({ staging: false, production: true })
  })

  it('never takes an app-wide value for a setting that is not a switch', () => {
    // Prepare
    const context = contextOf({ alarmEmail: 'ops@example.com' })

    // Act
    const alarmEmail = stageContext(context, 'staging').text('alarmEmail')

    // Assess
    expect(alarmEmail).toBeUndefined()
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
      'Invalid context staging.throttleRateLimit="5": expected an integer from 10 to 20 (a reason)',
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

  it('refuses a switch that is neither true nor false, naming the key it came from', () => {
    // Prepare
    const settings = stageContext(contextOf({ waf: 'on' }), 'staging')

    // Act & Assess
    expect(() => settings.flag('waf', false)).toThrow(
      'Invalid context waf="on": expected true or false',
    )
  })

  it('refuses a text setting that is not text', () => {
    // Prepare
    const settings = stageContext(contextOf({ 'staging.region': 42 }), 'staging')

    // Act & Assess
    expect(() => settings.text('region')).toThrow(
      'Invalid context staging.region=42: expected a string',
    )
  })
})
