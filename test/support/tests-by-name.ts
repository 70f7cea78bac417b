import { existsSync, readFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import ts from 'typescript'
import { ROUTES } from '#shared/config/routes-config.ts'
import { REPO_ROOT, roomsImported, type SourceFile } from './source-files.ts'

/**
 * The rule that makes a file's tests findable by name (docs/layout.md, "Tests by name"): every
 * source file outside test/ has a test file of its own name (`<name>.test.ts` in any test
 * project), or an entry of TESTED_ELSEWHERE (test/support/tested-elsewhere.ts) naming where it
 * is tested: a test file that loads it, or an npm script that runs it. This module holds what the
 * layout test needs to check an entry and to suggest one.
 */

/** The modules a file loads without naming them: through the route table, or a folder by name. */
const dynamicLoads = (path: string): string[] => {
  if (path === 'functions/function-entries.ts') {
    return [
      ...ROUTES.map((route) => `functions/${route.functionName}/${route.functionName}-lambda.ts`),
      'functions/authorizer/authorizer-lambda.ts',
      'functions/key-sync/key-sync-lambda.ts',
    ]
  }
  if (path === 'functions/operation-fixtures.ts') {
    return ROUTES.map(
      (route) => `functions/${route.functionName}/${route.functionName}-fixtures.ts`,
    )
  }
  if (path === 'bench/support/bench-subjects.ts') {
    return [
      ...ROUTES.map((route) => `bench/floors/${route.functionName}-floor.ts`),
      'bench/floors/authorizer-floor.ts',
    ]
  }
  return []
}

/** The files a file loads directly: its imports (`.ts` added where a specifier omits it) and dynamic loads. */
const loadsOf = (file: SourceFile, known: ReadonlySet<string>): string[] => [
  ...roomsImported(file)
    .map(({ target }) => (known.has(target) ? target : `${target}.ts`))
    .filter((target) => known.has(target)),
  ...dynamicLoads(file.path),
]

export interface TestGraph {
  /** Every file a test file loads, directly or through other files. */
  closureOf(testPath: string): ReadonlySet<string>
  /** The test files that load a file, nearest first (fewest steps away). */
  testsLoading(path: string): string[]
  /** Whether a test file names the path literally in its closure (a script it spawns). */
  mentions(testPath: string, path: string): boolean
}

/** The text of a file's string literals (what it spawns or reads by path), comments left out. */
const literalsOf = (file: SourceFile): string => {
  const found: string[] = []
  const visit = (node: ts.Node) => {
    if (
      ts.isStringLiteralLike(node) ||
      ts.isTemplateHead(node) ||
      ts.isTemplateMiddle(node) ||
      ts.isTemplateTail(node)
    ) {
      found.push(node.text)
    }
    ts.forEachChild(node, visit)
  }
  visit(file.ast)
  return found.join('\n')
}

/** The import graph of every file, the tests' included. */
export const testGraph = (files: readonly SourceFile[]): TestGraph => {
  const known = new Set(files.map((file) => file.path))
  const byPath = new Map(files.map((file) => [file.path, file]))
  const edges = new Map(files.map((file) => [file.path, loadsOf(file, known)]))
  const closures = new Map<string, Set<string>>()
  const closureOf = (start: string): Set<string> => {
    const kept = closures.get(start)
    if (kept) return kept
    const seen = new Set<string>([start])
    const queue = [start]
    while (queue.length > 0) {
      for (const next of edges.get(queue.shift() as string) ?? []) {
        if (!seen.has(next)) {
          seen.add(next)
          queue.push(next)
        }
      }
    }
    closures.set(start, seen)
    return seen
  }
  const reverse = new Map<string, string[]>()
  for (const [from, targets] of edges) {
    for (const target of targets) reverse.set(target, [...(reverse.get(target) ?? []), from])
  }
  return {
    closureOf,
    testsLoading: (path) => {
      const found: string[] = []
      const seen = new Set([path])
      let layer = [path]
      while (layer.length > 0) {
        const next: string[] = []
        for (const current of layer) {
          for (const importer of reverse.get(current) ?? []) {
            if (seen.has(importer)) continue
            seen.add(importer)
            next.push(importer)
            if (importer.endsWith('.test.ts')) found.push(importer)
          }
        }
        layer = next
      }
      return found
    },
    mentions: (testPath, path) =>
      [...closureOf(testPath)].some((loaded) => {
        const file = byPath.get(loaded)
        return file !== undefined && literalsOf(file).includes(path)
      }),
  }
}

/** A file's name without its folder and `.ts` (or `.d.ts`): what its test is named after. */
export const testNameOf = (path: string): string =>
  `${basename(path).replace(/\.d\.ts$|\.ts$/, '')}.test.ts`

/** Whether an allow-list key (a path, or a pattern with `*` for one path segment's part) matches. */
export const entryMatches = (key: string, path: string): boolean =>
  new RegExp(
    `^${key
      .split('*')
      .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('[^/]*')}$`,
  ).test(path)

/** The npm scripts of the project, for entries tested by a script rather than a test file. */
export const npmScripts = (): Record<string, string> =>
  (
    JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>
    }
  ).scripts

/**
 * What is wrong with an entry's `where` for a file: a test file that does not exist or neither
 * loads the file nor runs it (names it as a script it spawns); an npm script the project does not
 * have, or whose TypeScript does not load it (`npm run typecheck` for type declarations); or
 * `npx tsx` of another file.
 */
export const entryProblem = (graph: TestGraph, path: string, where: string): string | undefined => {
  const byHand = /^npx tsx (\S+)$/.exec(where)?.[1]
  if (byHand !== undefined) {
    return byHand === path
      ? undefined
      : `${path}: \`${where}\` runs another file: name this one, or a test that loads it`
  }
  const script = /^npm run ([\w:-]+)$/.exec(where)?.[1]
  if (script !== undefined) {
    const command = npmScripts()[script]
    if (command === undefined)
      return `${path}: TESTED_ELSEWHERE names npm run ${script}, which package.json does not have`
    const runs = [...command.matchAll(/[\w./-]+\.ts\b/g)].map((match) => match[0])
    const loads =
      (script === 'typecheck' && path.endsWith('.d.ts')) ||
      runs.some((entry) => graph.closureOf(entry).has(path) || graph.mentions(entry, path))
    return loads
      ? undefined
      : `${path}: npm run ${script} (${command}) does not load it${suggestion(graph, path)}`
  }
  if (!existsSync(join(REPO_ROOT, where))) {
    return `${path}: TESTED_ELSEWHERE names ${where}, which does not exist${suggestion(graph, path)}`
  }
  if (graph.closureOf(where).has(path) || graph.mentions(where, path)) return undefined
  return `${path}: TESTED_ELSEWHERE names ${where}, which neither loads it nor runs it: name a test that does${suggestion(graph, path)}`
}

/** Where a file could be said to be tested: the nearest tests that load it. */
export const suggestion = (graph: TestGraph, path: string): string => {
  const tests = graph.testsLoading(path).slice(0, 3)
  return tests.length > 0 ? ` (the tests that load it, nearest first: ${tests.join(', ')})` : ''
}
