import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url))

/** Folders at the top that hold no source of the project's own. */
const NOT_ROOMS = new Set(['node_modules', 'cdk.out', 'coverage', 'docs', 'client'])

/** A TypeScript file of the project: its path from the repository root, and its parsed text. */
export interface SourceFile {
  path: string
  room: string
  lines: number
  ast: ts.SourceFile
}

const isSource = (name: string) => name.endsWith('.ts') && !name.includes('node_modules')

/** The top folders that hold TypeScript (the rooms of docs/layout.md). */
export const roomsOnDisk = (): string[] =>
  readdirSync(REPO_ROOT, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && !entry.name.startsWith('.'))
    .map((entry) => entry.name)
    .filter((name) => !NOT_ROOMS.has(name))
    .filter((name) =>
      readdirSync(join(REPO_ROOT, name), { recursive: true, encoding: 'utf8' }).some(isSource),
    )
    .sort()

/** Every TypeScript file of every room, parsed once. */
export const sourceFiles = (): SourceFile[] =>
  roomsOnDisk().flatMap((room) =>
    readdirSync(join(REPO_ROOT, room), { recursive: true, encoding: 'utf8' })
      .filter(isSource)
      .map((name) => {
        const path = `${room}/${name}`
        const text = readFileSync(join(REPO_ROOT, path), 'utf8')
        return {
          path,
          room,
          lines: text.split('\n').length - (text.endsWith('\n') ? 1 : 0),
          ast: ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true),
        }
      }),
  )

/** Each file's specifiers, found once: the layout rules ask for them once per file and path. */
const specifiersByFile = new WeakMap<ts.SourceFile, string[]>()

/** The module specifiers a file names: imports, re-exports and dynamic imports of a literal. */
const specifiers = (ast: ts.SourceFile): string[] => {
  const kept = specifiersByFile.get(ast)
  if (kept) return kept
  const found: string[] = []
  const visit = (node: ts.Node) => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      found.push(node.moduleSpecifier.text)
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      found.push(node.arguments[0].text)
    }
    ts.forEachChild(node, visit)
  }
  visit(ast)
  specifiersByFile.set(ast, found)
  return found
}

/**
 * The rooms a file imports from: `#room/…` aliases (package.json "imports") and relative paths,
 * resolved to the file they name (`target`, from the repository root) and the top folder it is
 * in. Packages are not rooms.
 */
export const roomsImported = (
  file: SourceFile,
): { room: string; target: string; specifier: string }[] =>
  specifiers(file.ast).flatMap((specifier) => {
    const target = specifier.startsWith('#')
      ? specifier.slice(1)
      : specifier.startsWith('.')
        ? relative(REPO_ROOT, resolve(REPO_ROOT, dirname(file.path), specifier))
        : undefined
    return target === undefined ? [] : [{ room: target.split('/')[0] as string, target, specifier }]
  })

/** A function-like node with a body: its name as a reader would look for it, and its lines. */
export interface FunctionSpan {
  name: string
  line: number
  lines: number
}

const nameOf = (node: ts.Node): string => {
  const named = node as { name?: ts.Node }
  if (named.name) return named.name.getText()
  const parent = node.parent
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) {
    return parent.name.getText()
  }
  if (ts.isPropertyDeclaration(parent)) return parent.name.getText()
  return '(anonymous)'
}

/** Every function, method, constructor, accessor and arrow function of a file, with its length. */
export const functionSpans = ({ ast }: SourceFile): FunctionSpan[] => {
  const spans: FunctionSpan[] = []
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const start = ast.getLineAndCharacterOfPosition(node.getStart(ast)).line
      const end = ast.getLineAndCharacterOfPosition(node.getEnd()).line
      spans.push({
        name: ts.isConstructorDeclaration(node)
          ? `${node.parent.name?.getText() ?? '(class)'} constructor`
          : nameOf(node),
        line: start + 1,
        lines: end - start + 1,
      })
    }
    ts.forEachChild(node, visit)
  }
  visit(ast)
  return spans
}
