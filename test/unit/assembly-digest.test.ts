import {
  appendFileSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  assemblyDigest,
  digestDifferences,
  digestVersion,
  verifyAssembly,
} from '#ops/release/assembly-digest.ts'

/** A small cloud assembly as `cdk synth` lays one out: manifest, a template, an assets manifest. */
let dir: string
let tested: string

const ASSETS_MANIFEST = 'petstore-staging-api.assets.json'

const writeAssembly = (root: string) => {
  mkdirSync(join(root, 'asset.abc'), { recursive: true })
  writeFileSync(join(root, 'asset.abc', 'index.mjs'), 'export const handler = async () => 1\n')
  writeFileSync(join(root, 'asset.abc', 'index.mjs.map'), '{}\n')
  writeFileSync(join(root, 'petstore-staging-api.template.json'), '{"Resources":{}}\n')
  writeFileSync(
    join(root, ASSETS_MANIFEST),
    JSON.stringify({ files: { abc: { source: { path: 'asset.abc', packaging: 'zip' } } } }),
  )
  writeFileSync(
    join(root, 'manifest.json'),
    JSON.stringify({
      artifacts: {
        'petstore-staging-api.assets': {
          type: 'cdk:asset-manifest',
          properties: { file: ASSETS_MANIFEST },
        },
        'petstore-staging-api': {
          type: 'aws:cloudformation:stack',
          properties: { templateFile: 'petstore-staging-api.template.json' },
        },
      },
    }),
  )
}

/**
 * The version 1 digest of that assembly, as the code that made the first release tags computed
 * it (taken from that code before version 2 existed): a tag made then must still verify.
 */
const TAGGED_UNDER_VERSION_1 =
  'sha256:9ae0338727e20ebfc790e89a7e8d0695b32b9e859044868a4886eb5b978ad89f'

let copies = 0
/** A copy of the tested assembly, changed by `change`. */
const copyWith = (change: (root: string) => void): string => {
  copies += 1
  const copy = join(dir, `copy-${copies}`)
  cpSync(tested, copy, { recursive: true })
  change(copy)
  return copy
}

const editJson = (path: string, edit: (json: Record<string, unknown>) => void) => {
  const json = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>
  edit(json)
  writeFileSync(path, JSON.stringify(json))
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'assembly-digest-'))
  tested = join(dir, 'tested')
  writeAssembly(tested)
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe("a cloud assembly's digest", () => {
  it('is the same for a copy of the assembly, wherever it lies, and says its version', () => {
    const copy = copyWith(() => {})
    expect(assemblyDigest(copy).digest).toBe(assemblyDigest(tested).digest)
    expect(assemblyDigest(tested).digest).toMatch(/^v2:sha256:[0-9a-f]{64}$/)
    expect(digestVersion(assemblyDigest(tested).digest)).toBe(2)
  })

  it("changes with a bundle's bytes, and names the file that differs", () => {
    const changed = copyWith((root) =>
      appendFileSync(join(root, 'asset.abc', 'index.mjs'), '// rebuilt\n'),
    )
    expect(assemblyDigest(changed).digest).not.toBe(assemblyDigest(tested).digest)
    expect(digestDifferences(assemblyDigest(tested), assemblyDigest(changed))).toEqual([
      'asset.abc/index.mjs: content differs',
    ])
  })

  it('changes with a template, and names it', () => {
    const changed = copyWith((root) =>
      writeFileSync(join(root, 'petstore-staging-api.template.json'), '{"Resources":{"X":{}}}\n'),
    )
    expect(digestDifferences(assemblyDigest(tested), assemblyDigest(changed))).toEqual([
      'petstore-staging-api.template.json: content differs',
    ])
  })

  it('changes with manifest.json: another stack name, Region or termination protection', () => {
    // The hole of version 1: the same template deployed as another stack, unprotected.
    const changed = copyWith((root) =>
      editJson(join(root, 'manifest.json'), (manifest) => {
        const artifacts = manifest.artifacts as Record<string, Record<string, unknown>>
        artifacts['petstore-staging-api'] = {
          ...artifacts['petstore-staging-api'],
          environment: 'aws://unknown-account/ap-southeast-2',
          properties: {
            templateFile: 'petstore-staging-api.template.json',
            stackName: 'petstore-production-api',
            terminationProtection: false,
          },
        }
      }),
    )
    expect(assemblyDigest(changed, 1).digest).toBe(assemblyDigest(tested, 1).digest)
    expect(digestDifferences(assemblyDigest(tested), assemblyDigest(changed))).toEqual([
      'manifest.json: content differs',
    ])
  })

  it("changes with an asset manifest's destinations", () => {
    const changed = copyWith((root) =>
      editJson(join(root, ASSETS_MANIFEST), (assets) => {
        const files = assets.files as Record<string, Record<string, unknown>>
        files.abc = { ...files.abc, destinations: { elsewhere: { bucketName: 'someone-else' } } }
      }),
    )
    expect(assemblyDigest(changed, 1).digest).toBe(assemblyDigest(tested, 1).digest)
    expect(digestDifferences(assemblyDigest(tested), assemblyDigest(changed))).toEqual([
      `${ASSETS_MANIFEST}: content differs`,
    ])
  })

  it("counts a file the manifests name nowhere, but not the CLI's own lock files", () => {
    const added = copyWith((root) => writeFileSync(join(root, 'extra.json'), '{}'))
    expect(digestDifferences(assemblyDigest(tested), assemblyDigest(added))).toEqual([
      'extra.json: not in the tested assembly',
    ])
    const locked = copyWith((root) => {
      writeFileSync(join(root, 'synth.lock'), '123')
      writeFileSync(join(root, 'read.123.1.lock'), '123')
    })
    expect(assemblyDigest(locked).digest).toBe(assemblyDigest(tested).digest)
  })

  it('refuses an assembly the CLI would read outside of, or run a command for', () => {
    const outside = copyWith((root) =>
      editJson(join(root, ASSETS_MANIFEST), (assets) => {
        assets.files = { abc: { source: { path: '../tested/asset.abc', packaging: 'zip' } } }
      }),
    )
    expect(() => assemblyDigest(outside)).toThrow(
      'asset abc is ../tested/asset.abc, outside the assembly',
    )
    const built = copyWith((root) =>
      editJson(join(root, ASSETS_MANIFEST), (assets) => {
        assets.files = { abc: { source: { executable: ['sh', '-c', 'curl example.com'] } } }
      }),
    )
    expect(() => assemblyDigest(built)).toThrow('asset abc is built by running sh -c')
    const linked = copyWith((root) => symlinkSync('/etc/hostname', join(root, 'asset.abc', 'x')))
    expect(() => assemblyDigest(linked)).toThrow('asset.abc/x is a symbolic link')
  })

  it('refuses a directory that holds no stack', () => {
    const empty = join(dir, 'empty')
    mkdirSync(empty)
    writeFileSync(join(empty, 'manifest.json'), '{"artifacts":{}}')
    expect(() => assemblyDigest(empty)).toThrow('holds no stack: not a cloud assembly')
    expect(() => assemblyDigest(empty, 1)).toThrow('holds no stack: not a cloud assembly')
  })
})

describe('verifying an assembly against the digest it must have', () => {
  it('accepts the tested assembly and refuses any other', () => {
    const { digest } = assemblyDigest(tested)
    expect(
      verifyAssembly(
        copyWith(() => {}),
        digest,
      ).matches,
    ).toBe(true)
    const changed = copyWith((root) => appendFileSync(join(root, 'manifest.json'), ' '))
    expect(verifyAssembly(changed, digest)).toMatchObject({ matches: false })
  })

  it('still verifies a digest made under version 1, by version 1', () => {
    expect(verifyAssembly(tested, TAGGED_UNDER_VERSION_1)).toMatchObject({
      matches: true,
      actual: { version: 1, digest: TAGGED_UNDER_VERSION_1 },
    })
    const rebuilt = copyWith((root) =>
      appendFileSync(join(root, 'asset.abc', 'index.mjs'), '// rebuilt\n'),
    )
    expect(verifyAssembly(rebuilt, TAGGED_UNDER_VERSION_1).matches).toBe(false)
    expect(digestDifferences(assemblyDigest(tested, 1), assemblyDigest(rebuilt, 1))).toEqual([
      'asset abc: content differs',
    ])
  })

  it.each(['', '   '])('refuses an empty expectation (%j): it would accept anything', (empty) => {
    expect(() => verifyAssembly(tested, empty)).toThrow('the expected digest is empty')
  })

  it.each([
    'sha256:abc',
    'v3:sha256:9ae0338727e20ebfc790e89a7e8d0695b32b9e859044868a4886eb5b978ad89f',
    'md5:9ae0338727e20ebfc790e89a7e8d0695',
  ])('refuses %s, which is no digest this checkout can make', (digest) => {
    expect(() => verifyAssembly(tested, digest)).toThrow(/not an assembly digest|knows versions/)
  })
})
