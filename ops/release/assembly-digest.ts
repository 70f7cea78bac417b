// What identifies a cloud assembly: a digest of its templates and the content of its assets.
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'

/**
 * The release pipeline synthesizes once, tests the bundles of that assembly and hands the very
 * same directory to each deploy. The digest is how a deploy job knows it got that directory: every
 * stack's template and every asset's files (names and bytes) as the manifests list them. A rebuilt
 * assembly, even of the same commit, may differ (a dependency's install, a bundler's output), and
 * then it is not the one that was tested.
 */
export interface AssemblyDigest {
  /** sha256 over everything below, in a fixed order. */
  digest: string
  /** Each stack's template, by stack name. */
  templates: Record<string, string>
  /** Each asset's content, by the asset hash its manifest declares. */
  assets: Record<string, string>
}

interface Manifest {
  artifacts?: Record<
    string,
    { type: string; properties?: { templateFile?: string; file?: string } }
  >
}

interface AssetsManifest {
  files?: Record<string, { source: { path: string } }>
}

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex')

/** A file's bytes, or a directory's files: each relative name and its bytes, sorted by name. */
const contentDigest = (path: string): string => {
  if (!statSync(path).isDirectory()) return sha256(readFileSync(path))
  const hash = createHash('sha256')
  const files = readdirSync(path, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name))
    .sort()
  for (const file of files) hash.update(`${relative(path, file)}\0${sha256(readFileSync(file))}\0`)
  return hash.digest('hex')
}

export const assemblyDigest = (dir: string): AssemblyDigest => {
  const root = resolve(dir)
  const manifest = JSON.parse(readFileSync(join(root, 'manifest.json'), 'utf8')) as Manifest
  const templates: Record<string, string> = {}
  const assets: Record<string, string> = {}
  for (const [name, artifact] of Object.entries(manifest.artifacts ?? {})) {
    if (artifact.type === 'aws:cloudformation:stack' && artifact.properties?.templateFile) {
      templates[name] = sha256(readFileSync(join(root, artifact.properties.templateFile)))
    }
    if (artifact.type === 'cdk:asset-manifest' && artifact.properties?.file) {
      const files = (
        JSON.parse(readFileSync(join(root, artifact.properties.file), 'utf8')) as AssetsManifest
      ).files
      for (const [hash, { source }] of Object.entries(files ?? {})) {
        assets[hash] = contentDigest(join(root, source.path))
      }
    }
  }
  if (Object.keys(templates).length === 0)
    throw new Error(`${root} holds no stack: not a cloud assembly`)
  const sorted = (record: Record<string, string>) =>
    Object.keys(record)
      .sort()
      .map((key) => `${key}=${record[key]}`)
      .join('\n')
  const digest = `sha256:${sha256(`templates\n${sorted(templates)}\nassets\n${sorted(assets)}\n`)}`
  return { digest, templates, assets }
}

/** What differs between two digests' parts, for a message; empty when they are the same. */
export const digestDifferences = (expected: AssemblyDigest, actual: AssemblyDigest): string[] => {
  const differences: string[] = []
  for (const kind of ['templates', 'assets'] as const) {
    const names = new Set([...Object.keys(expected[kind]), ...Object.keys(actual[kind])])
    for (const name of [...names].sort()) {
      if (expected[kind][name] === actual[kind][name]) continue
      const label = kind === 'templates' ? `template of ${name}` : `asset ${name}`
      if (expected[kind][name] === undefined)
        differences.push(`${label}: not in the tested assembly`)
      else if (actual[kind][name] === undefined) differences.push(`${label}: missing`)
      else differences.push(`${label}: content differs`)
    }
  }
  return differences
}
