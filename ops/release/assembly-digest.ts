// What identifies a cloud assembly: a versioned digest of the files `cdk deploy --app <dir>` reads.
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { isAbsolute, join, relative, resolve, sep } from 'node:path'

/**
 * The release pipeline synthesizes once, tests the bundles of that assembly and hands the very
 * same directory to each deploy. The digest is how a deploy job knows it got that directory. A
 * rebuilt assembly, even of the same commit, may differ (a dependency's install, a bundler's
 * output), and then it is not the one that was tested.
 *
 * The digest says which version of the rule made it, so a release tagged under an older rule
 * still verifies after the rule grew:
 * - version 1 (`sha256:<hex>`): every stack's template and every file asset's content. It missed
 *   `manifest.json` (stack names, Region, termination protection, notification ARNs) and the
 *   asset manifests (destinations): a copy deploying a template as another stack elsewhere kept
 *   the same digest.
 * - version 2 (`v2:sha256:<hex>`, what is made today): every file of the directory, names and
 *   bytes, so whatever the CLI reads is covered: `manifest.json`, the templates, the asset
 *   manifests, the metadata and tree files, the assets. Only the CLI's own lock files are left
 *   out (`synth.lock`, `read.<pid>.<n>.lock`: it makes and removes them while it reads). An
 *   assembly the CLI would read outside of (a path leaving the directory, a symbolic link) or
 *   run a command from (an asset built by an `executable`) has no version 2 digest.
 */
export type DigestVersion = 1 | 2
export const CURRENT_DIGEST_VERSION: DigestVersion = 2

export interface AssemblyDigest {
  version: DigestVersion
  /** `sha256:<hex>` (version 1) or `v<n>:sha256:<hex>`. */
  digest: string
  /** What it covers, each part's sha256 by a name a message can show (a file's path, from 2). */
  parts: Record<string, string>
}

const DIGEST = /^(?:v(\d+):)?sha256:([0-9a-f]{64})$/

/** The version a digest was made with; throws on anything that is not a digest of a known one. */
export const digestVersion = (digest: string): DigestVersion => {
  const match = DIGEST.exec(digest)
  if (!match) {
    throw new Error(
      `${JSON.stringify(digest)} is not an assembly digest (sha256:<64 hex> or v2:sha256:<64 hex>)`,
    )
  }
  const version = match[1] === undefined ? 1 : Number(match[1])
  if (version !== 1 && version !== 2) {
    throw new Error(
      `${digest} is a version ${version} digest; this checkout knows versions 1 and 2`,
    )
  }
  return version
}

interface Artifact {
  type: string
  properties?: { templateFile?: string; file?: string; directoryName?: string }
  additionalMetadataFile?: string
}
interface Manifest {
  artifacts?: Record<string, Artifact>
}
interface AssetSource {
  path?: string
  directory?: string
  executable?: string[]
}
interface AssetsManifest {
  files?: Record<string, { source: AssetSource }>
  dockerImages?: Record<string, { source: AssetSource }>
}

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex')
const readJson = <T>(path: string): T => JSON.parse(readFileSync(path, 'utf8')) as T

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

const stackArtifacts = (manifest: Manifest) =>
  Object.entries(manifest.artifacts ?? {}).filter(
    ([, artifact]) => artifact.type === 'aws:cloudformation:stack',
  )

/** Version 1, as the releases tagged before version 2 were digested: kept byte for byte. */
const digestV1 = (root: string): AssemblyDigest => {
  const manifest = readJson<Manifest>(join(root, 'manifest.json'))
  const templates: Record<string, string> = {}
  const assets: Record<string, string> = {}
  for (const [name, artifact] of Object.entries(manifest.artifacts ?? {})) {
    if (artifact.type === 'aws:cloudformation:stack' && artifact.properties?.templateFile) {
      templates[name] = sha256(readFileSync(join(root, artifact.properties.templateFile)))
    }
    if (artifact.type === 'cdk:asset-manifest' && artifact.properties?.file) {
      const files = readJson<AssetsManifest>(join(root, artifact.properties.file)).files
      for (const [hash, { source }] of Object.entries(files ?? {})) {
        assets[hash] = contentDigest(join(root, source.path ?? ''))
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
  const parts: Record<string, string> = {}
  for (const [name, value] of Object.entries(templates)) parts[`template of ${name}`] = value
  for (const [name, value] of Object.entries(assets)) parts[`asset ${name}`] = value
  return { version: 1, digest, parts }
}

/** The CLI's read and write locks (aws-cdk's RWLock), made and removed as it reads the directory. */
const LOCK_FILE = /^(synth|read\.\d+\.\d+)\.lock$/

/** Throws unless `path` (as a manifest names it) stays inside `root`. */
const inside = (root: string, base: string, path: string | undefined, what: string): string => {
  if (path === undefined) throw new Error(`${what} names no path`)
  const full = resolve(base, path)
  const rest = relative(root, full)
  if (isAbsolute(path) || rest === '..' || rest.startsWith(`..${sep}`) || isAbsolute(rest)) {
    throw new Error(`${what} is ${path}, outside the assembly: the digest cannot cover it`)
  }
  return full
}

/** Every path an assembly's manifests name, checked to stay inside it; nested assemblies too. */
const checkReferences = (root: string, dir: string): number => {
  const manifest = readJson<Manifest>(join(dir, 'manifest.json'))
  let stacks = stackArtifacts(manifest).length
  for (const [name, artifact] of Object.entries(manifest.artifacts ?? {})) {
    const props = artifact.properties ?? {}
    for (const path of [props.templateFile, artifact.additionalMetadataFile]) {
      if (path !== undefined) inside(root, dir, path, `${name}'s file`)
    }
    if (artifact.type === 'cdk:cloud-assembly') {
      stacks += checkReferences(root, inside(root, dir, props.directoryName, name))
    }
    if (artifact.type !== 'cdk:asset-manifest' && artifact.type !== 'cdk:tree') continue
    const file = inside(root, dir, props.file, `${name}'s file`)
    if (artifact.type === 'cdk:tree') continue
    const assets = readJson<AssetsManifest>(file)
    for (const [hash, { source }] of [
      ...Object.entries(assets.files ?? {}),
      ...Object.entries(assets.dockerImages ?? {}),
    ]) {
      if (source.executable) {
        throw new Error(`asset ${hash} is built by running ${source.executable.join(' ')}`)
      }
      inside(root, dir, source.path ?? source.directory, `asset ${hash}`)
    }
  }
  return stacks
}

/** Version 2: every file of the directory by its path (with `/`), the CLI's locks aside. */
const digestV2 = (root: string): AssemblyDigest => {
  if (checkReferences(root, root) === 0)
    throw new Error(`${root} holds no stack: not a cloud assembly`)
  const parts: Record<string, string> = {}
  for (const entry of readdirSync(root, { recursive: true, withFileTypes: true })) {
    const path = relative(root, join(entry.parentPath, entry.name)).split(sep).join('/')
    if (entry.isSymbolicLink())
      throw new Error(`${path} is a symbolic link: the CLI would follow it`)
    if (!entry.isFile() || LOCK_FILE.test(entry.name)) continue
    parts[path] = sha256(readFileSync(join(root, path)))
  }
  const listing = Object.keys(parts)
    .sort()
    .map((path) => `${path}\0${parts[path]}\n`)
    .join('')
  return { version: 2, digest: `v2:sha256:${sha256(`v2\n${listing}`)}`, parts }
}

/** The digest of the cloud assembly in `dir`, by the given version's rule (today's by default). */
export const assemblyDigest = (
  dir: string,
  version: DigestVersion = CURRENT_DIGEST_VERSION,
): AssemblyDigest => (version === 1 ? digestV1 : digestV2)(resolve(dir))

/** What differs between two digests' parts, for a message; empty when they are the same. */
export const digestDifferences = (expected: AssemblyDigest, actual: AssemblyDigest): string[] => {
  if (expected.version !== actual.version) {
    return [`digest versions differ: ${expected.version} and ${actual.version}`]
  }
  const names = new Set([...Object.keys(expected.parts), ...Object.keys(actual.parts)])
  const differences: string[] = []
  for (const name of [...names].sort()) {
    if (expected.parts[name] === actual.parts[name]) continue
    if (expected.parts[name] === undefined) differences.push(`${name}: not in the tested assembly`)
    else if (actual.parts[name] === undefined) differences.push(`${name}: missing`)
    else differences.push(`${name}: content differs`)
  }
  return differences
}

/**
 * The assembly in `dir` against the digest it must have, computed by that digest's own version
 * (a release tagged under version 1 still verifies). An empty or malformed expectation throws: it
 * would accept any assembly.
 */
export const verifyAssembly = (
  dir: string,
  expected: string,
): { matches: boolean; actual: AssemblyDigest } => {
  const digest = expected.trim()
  if (digest === '') {
    throw new Error(
      "the expected digest is empty, which would accept any assembly: pass the tested assembly's digest",
    )
  }
  const actual = assemblyDigest(dir, digestVersion(digest))
  return { matches: actual.digest === digest, actual }
}
