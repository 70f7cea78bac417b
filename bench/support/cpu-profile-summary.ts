import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { originalPositionFor, TraceMap } from '@jridgewell/trace-mapping'

/**
 * Where a first invocation's CPU time goes: the V8 CPU profiles the bench's init runs wrote
 * (`BENCH_CPU_PROF_DIR`), each sample's function mapped back through its bundle's source map to
 * the package or project folder it came from. Self time, so a group is what its own code cost;
 * "(program)" is V8 outside JavaScript, mostly parsing and compiling the bundle.
 */

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number }
}
interface CpuProfile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
}

const packageOf = (source: string): string => {
  const inModules = source.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/)
  if (inModules?.[1]) return inModules[1]
  const project = source.match(/(?:^|\/)(functions|shared|keys)\/([^/]+)/)
  return project ? `${project[1]}/${project[2]}` : source
}

const maps = new Map<string, TraceMap | undefined>()
const mapFor = (url: string): TraceMap | undefined => {
  if (!maps.has(url)) {
    try {
      const file = fileURLToPath(url)
      maps.set(url, new TraceMap(readFileSync(`${file}.map`, 'utf8')))
    } catch {
      maps.set(url, undefined)
    }
  }
  return maps.get(url)
}

const groupOf = ({ functionName, url, lineNumber, columnNumber }: ProfileNode['callFrame']) => {
  if (url === '') return functionName.startsWith('(') ? functionName : 'V8 and Node internals'
  if (url.startsWith('node:')) return url
  const map = mapFor(url)
  if (!map) return url.endsWith('bench-child.mjs') ? 'the bench child' : url
  const { source } = originalPositionFor(map, { line: lineNumber + 1, column: columnNumber })
  return source ? packageOf(source) : 'bundle, unmapped'
}

/** Milliseconds of self time per group over every profile whose name starts with `prefix`. */
const selfTimes = (dir: string, prefix: string) => {
  const totals = new Map<string, number>()
  let profiles = 0
  for (const name of readdirSync(dir).filter((file) => file.startsWith(prefix))) {
    profiles += 1
    const profile = JSON.parse(readFileSync(join(dir, name), 'utf8')) as CpuProfile
    const groups = new Map(profile.nodes.map((node) => [node.id, groupOf(node.callFrame)]))
    profile.samples.forEach((id, index) => {
      const group = groups.get(id) ?? '?'
      totals.set(group, (totals.get(group) ?? 0) + (profile.timeDeltas[index] ?? 0) / 1000)
    })
  }
  return { totals, profiles }
}

const perRun = (dir: string, label: string) => {
  const { totals, profiles } = selfTimes(dir, `${profileName(label)}__`)
  totals.delete('(idle)')
  const runs = Math.max(profiles, 1)
  return {
    profiles,
    groups: new Map([...totals].map(([group, ms]) => [group, ms / runs])),
    busy: [...totals.values()].reduce((sum, ms) => sum + ms, 0) / runs,
  }
}

/**
 * Markdown lines: for each function, its first invocation's busy CPU time against its floor's
 * (plus the limiter write), and the groups that make the difference, largest first.
 */
export const cpuProfileSummary = (
  dir: string,
  pairs: { label: string; against: string }[],
  top = 10,
): string[] => {
  const lines = [
    `First invocations under the CPU profiler (${dir}; it slows them, so compare rows, not the tables above): busy ms per run, and the packages that make each function's difference, ms per run:`,
    '',
  ]
  for (const { label, against } of pairs) {
    const own = perRun(dir, label)
    const floor = perRun(dir, against)
    if (own.profiles === 0 || floor.profiles === 0) continue
    const groups = new Set([...own.groups.keys(), ...floor.groups.keys()])
    const extra = [...groups]
      .map(
        (group) => [group, (own.groups.get(group) ?? 0) - (floor.groups.get(group) ?? 0)] as const,
      )
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
    lines.push(
      `- **${label}** ${own.busy.toFixed(1)} ms, ${against} ${floor.busy.toFixed(1)} ms: ${extra
        .map(([group, ms]) => `${group} ${ms >= 0 ? '+' : ''}${ms.toFixed(1)}`)
        .join(', ')}`,
    )
  }
  return lines
}

/** The file name prefix of a subject's profiles. */
export const profileName = (label: string): string => label.replace(/[^A-Za-z0-9]+/g, '-')
