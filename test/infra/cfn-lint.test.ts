import { spawnSync } from 'node:child_process'
import { accessSync, constants, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { STAGE_NAMES } from '#shared/config/stages-config.ts'
import { releaseTemplate } from './support/release-path.ts'
import { appAssemblyDir } from './support/synth-app.ts'

/**
 * AWS's CloudFormation linter checks every template against CloudFormation's own resource
 * schemas: an independent reading of what CloudFormation accepts. It is a Python tool, not a
 * project dependency: used where installed (CI requires it: PETSTORE_REQUIRE_CFN_LINT=1).
 */
const cfnLint = (): string | undefined => {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), join(homedir(), '.pyenv', 'shims')]
  for (const dir of dirs.filter(Boolean)) {
    const file = join(dir, 'cfn-lint')
    try {
      accessSync(file, constants.X_OK)
      return file
    } catch {}
  }
  return undefined
}

const TEMPLATES = ['staging', 'production'].flatMap((stage) => [
  `petstore-${stage}-data.template.json`,
  `petstore-${stage}-api.template.json`,
])

interface Finding {
  Rule: { Id: string }
  Message: string
  Filename: string
  Location: { Path: (string | number)[] }
}

const linter = cfnLint()

describe('cfn-lint on the synthesized templates and the release stacks', () => {
  it('every rule switched off for a resource says why', () => {
    const dir = appAssemblyDir()
    for (const file of TEMPLATES) {
      const template = JSON.parse(readFileSync(join(dir, file), 'utf8')) as {
        Resources: Record<string, { Metadata?: Record<string, unknown> }>
      }
      for (const [id, { Metadata }] of Object.entries(template.Resources)) {
        const ignored =
          (Metadata?.['cfn-lint'] as { config?: { ignore_checks?: string[] } } | undefined)?.config
            ?.ignore_checks ?? []
        const reasons = (Metadata?.['petstore:cfnLintReasons'] ?? {}) as Record<string, string>
        for (const rule of ignored) {
          expect(reasons[rule], `${file} ${id}: ${rule} is ignored without a reason`).toMatch(
            /.{40,}/,
          )
        }
      }
    }
  })
  if (!linter) {
    it('is installed where it is required', () => {
      expect(
        process.env.PETSTORE_REQUIRE_CFN_LINT,
        'cfn-lint is not on PATH or in ~/.pyenv/shims',
      ).not.toBe('1')
    })
    return
  }

  // 5 s on an idle machine, over 60 s at a load average of 15: the limit only guards a hang.
  it('finds no error and no warning in either stage', { timeout: 300_000 }, () => {
    const dir = appAssemblyDir()
    // The release stacks too: W3037 checks every IAM action of their policies against AWS's list.
    const releaseDir = mkdtempSync(join(tmpdir(), 'petstore-release-'))
    const releaseFiles = STAGE_NAMES.map((stage) => {
      const file = join(releaseDir, `petstore-release-${stage}.template.json`)
      writeFileSync(file, JSON.stringify(releaseTemplate(stage).toJSON()))
      return file
    })
    const result = spawnSync(linter, ['--format', 'json', ...TEMPLATES, ...releaseFiles], {
      cwd: dir,
      encoding: 'utf8',
    })
    // Exit codes are a bit mask of error (2), warning (4) and informational (8) findings.
    expect(result.error).toBeUndefined()
    const findings = JSON.parse(result.stdout || '[]') as Finding[]
    const lines = findings.map(
      ({ Rule, Message, Filename, Location }) =>
        `${Rule.Id} ${Filename} ${Location.Path.join('/')}: ${Message}`,
    )
    expect(lines).toEqual([])
    expect(result.status, result.stderr).toBe(0)
  })
})
