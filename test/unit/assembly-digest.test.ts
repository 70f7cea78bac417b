import { appendFileSync, cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { assemblyDigest, digestDifferences } from '#ops/release/assembly-digest.ts'

/** A small cloud assembly as `cdk synth` lays one out: manifest, a template, an assets manifest. */
let dir: string
let tested: string

const writeAssembly = (root: string) => {
  mkdirSync(join(root, 'asset.abc'), { recursive: true })
  writeFileSync(join(root, 'asset.abc', 'index.mjs'), 'export const handler = async () => 1\n')
  writeFileSync(join(root, 'asset.abc', 'index.mjs.map'), '{}\n')
  writeFileSync(join(root, 'petstore-staging-api.template.json'), '{"Resources":{}}\n')
  writeFileSync(
    join(root, 'petstore-staging-api.assets.json'),
    JSON.stringify({ files: { abc: { source: { path: 'asset.abc', packaging: 'zip' } } } }),
  )
  writeFileSync(
    join(root, 'manifest.json'),
    JSON.stringify({
      artifacts: {
        'petstore-staging-api.assets': {
          type: 'cdk:asset-manifest',
          properties: { file: 'petstore-staging-api.assets.json' },
        },
        'petstore-staging-api': {
          type: 'aws:cloudformation:stack',
          properties: { templateFile: 'petstore-staging-api.template.json' },
        },
      },
    }),
  )
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'assembly-digest-'))
  tested = join(dir, 'tested')
  writeAssembly(tested)
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe("a cloud assembly's digest", () => {
  it('is the same for a copy of the assembly, wherever it lies', () => {
    const copy = join(dir, 'copy')
    cpSync(tested, copy, { recursive: true })
    expect(assemblyDigest(copy).digest).toBe(assemblyDigest(tested).digest)
    expect(assemblyDigest(tested).digest).toMatch(/^sha256:[0-9a-f]{64}$/)
  })

  it("changes with a bundle's bytes, and names the asset that differs", () => {
    const changed = join(dir, 'changed-bundle')
    cpSync(tested, changed, { recursive: true })
    appendFileSync(join(changed, 'asset.abc', 'index.mjs'), '// rebuilt\n')
    expect(assemblyDigest(changed).digest).not.toBe(assemblyDigest(tested).digest)
    expect(digestDifferences(assemblyDigest(tested), assemblyDigest(changed))).toEqual([
      'asset abc: content differs',
    ])
  })

  it('changes with a template, and names the stack', () => {
    const changed = join(dir, 'changed-template')
    cpSync(tested, changed, { recursive: true })
    writeFileSync(join(changed, 'petstore-staging-api.template.json'), '{"Resources":{"X":{}}}\n')
    expect(digestDifferences(assemblyDigest(tested), assemblyDigest(changed))).toEqual([
      'template of petstore-staging-api: content differs',
    ])
  })

  it('refuses a directory that holds no stack', () => {
    const empty = join(dir, 'empty')
    mkdirSync(empty)
    writeFileSync(join(empty, 'manifest.json'), '{"artifacts":{}}')
    expect(() => assemblyDigest(empty)).toThrow('holds no stack: not a cloud assembly')
  })
})
