import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { REPO_ROOT, roomsImported, roomsOnDisk, sourceFiles } from '#test/support/source-files.ts'

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

  it('keeps the folders of shared/ free of loops: no folder imports one that imports it back', () => {
    const edges = new Map<string, Set<string>>()
    for (const file of files.filter(({ room }) => room === 'shared')) {
      const from = file.path.split('/')[1] as string
      for (const { target } of roomsImported(file)) {
        const [room, to] = target.split('/')
        if (room === 'shared' && to !== undefined && to !== from && !to.endsWith('.ts')) {
          edges.set(from, (edges.get(from) ?? new Set()).add(to))
        }
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

  it('keeps every import within what its room may import', () => {
    const crossings = files.flatMap((file) =>
      roomsImported(file)
        .filter(({ room }) => room !== file.room && !MAY_IMPORT[file.room]?.includes(room))
        .map(({ specifier }) => `${file.path} imports ${specifier}`),
    )
    expect(crossings).toEqual([])
  })
})
