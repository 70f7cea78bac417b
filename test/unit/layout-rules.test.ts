import { readFileSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'
import { AUTHORIZER_ENTRY, functionEntry } from '#functions/function-entries.ts'
import { ROUTES } from '#shared/config/routes-config.ts'
import {
  REPO_ROOT,
  roomsImported,
  roomsOnDisk,
  type SourceFile,
  sourceFiles,
} from '#test/support/source-files.ts'
import { TESTED_ELSEWHERE } from '#test/support/tested-elsewhere.ts'
import {
  entryMatches,
  entryProblem,
  suggestion,
  testGraph,
  testNameOf,
} from '#test/support/tests-by-name.ts'

/**
 * Which top folder may import which (besides itself): the one statement of the rule. Lower rooms
 * never import higher ones: shared/ is the floor every Lambda stands on; keys/ is what the key
 * sync, the keys CLI, the local control plane and the CDK share; the operator tools (ops/) load
 * nothing from a Lambda's folder, the CDK, the development server or the tests. docs/layout.md
 * shows the same table (checked below).
 */
const MAY_IMPORT: Record<string, readonly string[]> = {
  shared: [],
  keys: ['shared'],
  openapi: ['shared'],
  functions: ['keys', 'shared'],
  infra: ['functions', 'keys', 'shared'],
  local: ['functions', 'keys', 'shared'],
  ops: ['keys', 'openapi', 'shared'],
  bench: ['functions', 'infra', 'keys', 'local', 'shared', 'test'],
  test: ['bench', 'functions', 'infra', 'keys', 'local', 'openapi', 'ops', 'shared'],
  types: [],
}

const files = sourceFiles()

/** The keys wing: what the key sync, the keys CLI and the local control plane are made of. */
const KEYS_WING = ['keys/', 'ops/keys/', 'local/control-plane/', 'functions/key-sync/']

/** The rooms table of docs/layout.md: room, what it holds, the rooms it may import. */
const layoutTable = (): Record<string, string[]> => {
  const doc = readFileSync(join(REPO_ROOT, 'docs/layout.md'), 'utf8')
  const section =
    doc.split('\n## ').find((part) => part.startsWith('Rooms and their imports')) ?? ''
  const rows = section.split('\n').filter((line) => /^\| `[a-z]+\/` \|/.test(line))
  return Object.fromEntries(
    rows.map((row) => {
      const cells = row.split('|').map((cell) => cell.trim())
      const room = (cells[1] as string).slice(1, -2)
      const imports = [...(cells[3] as string).matchAll(/`([a-z]+)\/`/g)].map((m) => m[1] as string)
      return [room, imports.sort()]
    }),
  )
}

/** Rooms whose code reads a config table at run or deploy time: the CDK, the local server, the tools. */
const CONFIG_READERS = ['infra', 'local', 'ops']

/**
 * A config table no Lambda loads may stay in shared/ when it is one: a `-config.ts` module that
 * exports values (not types alone), read by the CDK, the local server or a tool outside the keys
 * wing. The name alone is not enough, and neither is a reader among the tests or the bench.
 */
const isConfigTableOutsideTheWing = (file: SourceFile, readers: SourceFile[]): boolean =>
  file.path.endsWith('-config.ts') &&
  exportsValues(file) &&
  readers.some(
    (reader) =>
      CONFIG_READERS.includes(reader.room) &&
      !KEYS_WING.some((wing) => reader.path.startsWith(wing)),
  )

/** Whether a module exports anything that exists at run time (a const, function or class). */
const exportsValues = ({ ast }: SourceFile): boolean =>
  ast.statements.some(
    (statement) =>
      (ts.isVariableStatement(statement) ||
        ts.isFunctionDeclaration(statement) ||
        ts.isClassDeclaration(statement) ||
        ts.isEnumDeclaration(statement)) &&
      (ts.getModifiers(statement) ?? []).some(({ kind }) => kind === ts.SyntaxKind.ExportKeyword),
  )

describe('the layout', () => {
  it('has a rule for every top folder that holds TypeScript, and no rule for a folder that is gone', () => {
    expect(roomsOnDisk()).toEqual(Object.keys(MAY_IMPORT).sort())
  })

  it('is the one docs/layout.md shows: the same rooms, each allowed the same imports', () => {
    const sorted = Object.fromEntries(
      Object.entries(MAY_IMPORT).map(([room, allowed]) => [room, [...allowed].sort()]),
    )
    expect(layoutTable()).toEqual(sorted)
  })

  it('has no folder loop anywhere: no folder imports one that imports it back', () => {
    const edges = new Map<string, Set<string>>()
    for (const file of files) {
      const from = dirname(file.path)
      for (const { target } of roomsImported(file)) {
        const to = dirname(target)
        if (to !== from) edges.set(from, (edges.get(from) ?? new Set()).add(to))
      }
    }
    const loops: string[] = []
    const walk = (path: string[]) => {
      for (const next of edges.get(path.at(-1) as string) ?? []) {
        if (next === path[0]) loops.push([...path, next].join(' -> '))
        else if (!path.includes(next) && next > (path[0] as string)) walk([...path, next])
      }
    }
    for (const folder of edges.keys()) walk([folder])
    expect(loops).toEqual([])
  })

  it('holds shared/ to what the API’s Lambdas load; the rest of the keys wing lives in keys/', () => {
    const byPath = new Map(files.map((file) => [file.path, file]))
    const loaded = new Set<string>()
    const visit = (path: string) => {
      const file = byPath.get(path)
      if (loaded.has(path) || !file) return
      loaded.add(path)
      for (const { target } of roomsImported(file)) visit(target)
    }
    for (const entry of [...ROUTES.map(functionEntry), AUTHORIZER_ENTRY]) visit(entry)
    const importers = (path: string) =>
      files.filter((file) => roomsImported(file).some(({ target }) => target === path))
    const misplaced = files
      .filter(({ room, path }) => room === 'shared' && !loaded.has(path))
      .filter((file) => !isConfigTableOutsideTheWing(file, importers(file.path)))
      .map(
        ({ path }) =>
          `${path}: no Lambda of the API loads it; move it to keys/ (or beside the one tool that uses it; types only the tests and the bench read go beside what they describe, as functions/operation-fixture-types.ts)`,
      )
    expect(misplaced).toEqual([])
  })

  it('opens each file with a comment that says what it is', () => {
    const exported = (node: ts.Node) =>
      ts.canHaveModifiers(node) &&
      (ts.getModifiers(node) ?? []).some(({ kind }) => kind === ts.SyntaxKind.ExportKeyword)
    const unsaid = files
      .filter(({ room, path }) => room !== 'test' && !path.endsWith('openapi-types.ts'))
      .flatMap(({ path, ast }) => {
        const text = ast.getFullText()
        for (const [index, statement] of ast.statements.entries()) {
          const [first] = ts.getLeadingCommentRanges(text, statement.getFullStart()) ?? []
          if (!first) continue
          // A file note: above everything, a plain comment, or one set apart by a blank line; a
          // doc comment on the first export says what the file offers. One on a private helper
          // describes the helper, not the file.
          const note =
            index === 0 ||
            !text.startsWith('/**', first.pos) ||
            /\n\s*\n/.test(text.slice(first.end, statement.getStart())) ||
            exported(statement)
          return note ? [] : [`${path}: its first comment describes a private declaration`]
        }
        return [`${path}: no comment says what it is`]
      })
    expect(unsaid).toEqual([])
  })

  it('keeps every import within what its room may import', () => {
    const crossings = files.flatMap((file) =>
      roomsImported(file)
        .filter(({ room }) => room !== file.room && !MAY_IMPORT[file.room]?.includes(room))
        .map(({ specifier }) => `${file.path} imports ${specifier}`),
    )
    expect(crossings).toEqual([])
  })
})

describe('tests by name', () => {
  const graph = testGraph(files)
  const product = files.filter(({ room }) => room !== 'test')
  const testNames = new Set(
    files.filter(({ path }) => path.endsWith('.test.ts')).map(({ path }) => basename(path)),
  )
  const entriesOf = (path: string) =>
    Object.entries(TESTED_ELSEWHERE).filter(([key]) => entryMatches(key, path))

  it('gives every source file a test of its name, or an entry of TESTED_ELSEWHERE naming where it is tested', () => {
    const untested = product
      .filter(({ path }) => !testNames.has(testNameOf(path)) && entriesOf(path).length === 0)
      .map(
        ({ path }) =>
          `${path} has no test of its name: add test/<unit|integration|e2e|infra>/${testNameOf(path)}, or, if a test already covers it, the line '${path}': '<that test>', to TESTED_ELSEWHERE in test/support/tested-elsewhere.ts${suggestion(graph, path)}`,
      )
    expect(untested).toEqual([])
  })

  it('holds TESTED_ELSEWHERE to the truth: each entry names a test that loads or runs its files, and no file with a test of its name', () => {
    const problems = Object.entries(TESTED_ELSEWHERE).flatMap(([key, where]) => {
      const matched = product.filter(({ path }) => entryMatches(key, path))
      if (matched.length === 0) {
        return [
          `TESTED_ELSEWHERE's '${key}' names no source file: take it out of test/support/tested-elsewhere.ts`,
        ]
      }
      return matched.flatMap(({ path }) => {
        if (testNames.has(testNameOf(path)) && !key.includes('*')) {
          return [
            `${path} has a test of its name (${testNameOf(path)}): take its line out of test/support/tested-elsewhere.ts`,
          ]
        }
        const problem = entryProblem(graph, path, where)
        return problem ? [problem] : []
      })
    })
    expect(problems).toEqual([])
  })
})
