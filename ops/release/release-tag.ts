// The release tag: which commit and which assembly reached production, once, however often a run is re-run.
import { execFileSync } from 'node:child_process'
import { digestVersion } from './assembly-digest.ts'

/**
 * The release pipeline's last step, once production is deployed and smoked: an annotated tag
 * `release-<UTC date>-<commit>` on the commit the assembly was built from, its message naming the
 * assembly's digest, pushed to the remote. A re-run of that step (GitHub re-runs `tag` with any
 * job it depends on) adds nothing when a `release-*` tag on the remote, or here, already names the
 * same commit and digest, whatever day it was made. The same commit released with another
 * assembly (a rebuild) is another release: it gets its own tag, `-2`, `-3`… when the day's name is
 * taken. The checkout may be shallow and tagless (`actions/checkout`'s default): the remote's
 * tags are listed, and a candidate's message read from the remote.
 */
export interface ReleaseTagOptions {
  /** The deployed assembly's digest (any version this checkout knows). */
  digest: string
  /** The repository (default: the current directory). */
  cwd?: string
  remote?: string
  now?: Date
  /** Print the commands that would write (tag, push), pasteable, and run none of them. */
  dryRun?: boolean
  /** Where the dry run's commands go (default stdout). */
  print?: (line: string) => void
}

export interface ReleaseTagResult {
  tag: string
  /** False when a tag already named this commit and assembly: nothing was added. */
  created: boolean
}

const RELEASE_TAG = /^release-\d{8}-[0-9a-f]{12}(?:-\d+)?$/
const ASSEMBLY_LINE = /^Cloud assembly (\S+)$/m

/** The pipeline's own identity: a tag says which run made it, not a person. */
const TAGGER = [
  '-c',
  'user.name=petstore release pipeline',
  '-c',
  'user.email=release-pipeline@users.noreply.github.com',
]

export const releaseTagName = (commit: string, now: Date, attempt = 1): string =>
  `release-${now.toISOString().slice(0, 10).replaceAll('-', '')}-${commit.slice(0, 12)}${attempt > 1 ? `-${attempt}` : ''}`

export const releaseTagMessage = (digest: string): string =>
  `Deployed to staging and production\n\nCloud assembly ${digest}`

/** An argument as a POSIX shell reads it back: bare when safe, else single-quoted. */
export const shellQuote = (arg: string): string =>
  /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'"'"'`)}'`

const gitIn =
  (cwd: string) =>
  (args: string[]): string =>
    execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim()

/** `release-*` tags on the remote and here that name `commit` (annotated ones by their commit). */
const tagsOnCommit = (git: (args: string[]) => string, remote: string, commit: string) => {
  const onRemote = new Set<string>()
  const local = new Map<string, string>()
  const names = new Set<string>()
  for (const line of git(['ls-remote', '--tags', remote, 'refs/tags/release-*']).split('\n')) {
    const [sha, ref] = line.split('\t')
    if (!sha || !ref) continue
    const name = ref.replace(/^refs\/tags\//, '').replace(/\^\{\}$/, '')
    names.add(name)
    if (sha === commit) onRemote.add(name)
  }
  const format = '%(refname:strip=2)%00%(objectname)%00%(*objectname)'
  for (const line of git(['for-each-ref', `--format=${format}`, 'refs/tags/release-*']).split(
    '\n',
  )) {
    const [name, object, peeled] = line.split('\0')
    if (!name || !object) continue
    names.add(name)
    if ((peeled || object) === commit) local.set(name, object)
  }
  return { onRemote, local, names }
}

/** The message of an annotated tag object (the text after its header). */
const messageOf = (git: (args: string[]) => string, object: string): string =>
  git(['cat-file', 'tag', object]).split('\n\n').slice(1).join('\n\n')

/** The message of an annotated tag, here or else fetched from the remote (into FETCH_HEAD only). */
const tagMessage = (git: (args: string[]) => string, remote: string, tag: string): string => {
  try {
    return messageOf(git, `refs/tags/${tag}`)
  } catch {
    git(['fetch', '--no-tags', '--quiet', remote, `refs/tags/${tag}`])
  }
  try {
    return messageOf(git, 'FETCH_HEAD')
  } catch {
    throw new Error(`${tag} is not an annotated tag`)
  }
}

/** The assembly digest a release tag names (here, or read from the remote). */
export const releaseTagDigest = (
  tag: string,
  { cwd = process.cwd(), remote = 'origin' }: { cwd?: string; remote?: string } = {},
): string => {
  if (!RELEASE_TAG.test(tag))
    throw new Error(`${tag} is not a release tag (release-<date>-<commit>)`)
  let message: string
  try {
    message = tagMessage(gitIn(cwd), remote, tag)
  } catch (error) {
    throw new Error(`${tag}: ${(error as Error).message.split('\n')[0]}`)
  }
  const digest = ASSEMBLY_LINE.exec(message)?.[1]
  if (digest === undefined) throw new Error(`${tag} names no cloud assembly`)
  digestVersion(digest)
  return digest
}

export const releaseTag = ({
  digest,
  cwd = process.cwd(),
  remote = 'origin',
  now = new Date(),
  dryRun = false,
  print = (line) => process.stdout.write(`${line}\n`),
}: ReleaseTagOptions): ReleaseTagResult => {
  digestVersion(digest)
  const git = gitIn(cwd)
  const write = (args: string[]) => {
    if (dryRun) print(['git', ...args].map(shellQuote).join(' '))
    else git(args)
  }
  const commit = git(['rev-parse', 'HEAD'])
  const { onRemote, local, names } = tagsOnCommit(git, remote, commit)
  const namedDigest = (tag: string): string | undefined => {
    try {
      const object = local.get(tag)
      return ASSEMBLY_LINE.exec(object ? messageOf(git, object) : tagMessage(git, remote, tag))?.[1]
    } catch {
      return undefined // a lightweight tag names no assembly
    }
  }
  for (const tag of [...new Set([...onRemote, ...local.keys()])].sort()) {
    if (namedDigest(tag) !== digest) continue
    // Made here by an attempt whose push failed: push it now rather than tag again.
    if (!onRemote.has(tag)) write(['push', remote, `refs/tags/${tag}`])
    return { tag, created: false }
  }
  let attempt = 1
  while (names.has(releaseTagName(commit, now, attempt))) attempt += 1
  const tag = releaseTagName(commit, now, attempt)
  write([...TAGGER, 'tag', '-a', tag, commit, '-m', releaseTagMessage(digest)])
  write(['push', remote, `refs/tags/${tag}`])
  return { tag, created: true }
}
