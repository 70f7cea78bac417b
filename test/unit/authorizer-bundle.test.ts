import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { AUTHORIZER_ENTRY } from '#functions/function-entries.ts'
import { ROOT } from '#test/support/local-server.ts'
import { moduleGraph } from '#test/support/module-graph.ts'

/**
 * The authorizer reads; nothing it bundles writes. Its project modules (the key mirror's and the
 * store key table's readers, never their writers) use no DynamoDB command that changes a table.
 */
const WRITE_COMMANDS =
  /\b(PutCommand|UpdateCommand|DeleteCommand|BatchWriteCommand|TransactWriteCommand|PutItemCommand|UpdateItemCommand|DeleteItemCommand|BatchWriteItemCommand)\b/

describe("the authorizer's bundle", () => {
  it('holds no write code: no writer module and no write command', () => {
    const modules = Object.keys(moduleGraph(join(ROOT, AUTHORIZER_ENTRY), ROOT).inputs)
    expect(modules).toContain('shared/data/key-mirror-reader.ts')
    expect(modules).toContain('shared/data/store-key-reader.ts')
    expect(modules.filter((path) => /writer|repository|keys\//.test(path))).toEqual([])
    const writing = modules.filter((path) =>
      WRITE_COMMANDS.test(readFileSync(join(ROOT, path), 'utf8')),
    )
    expect(writing).toEqual([])
  })
})
