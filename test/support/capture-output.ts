import { vi } from 'vitest'

/**
 * Captures what the process writes to stdout and stderr, where Powertools writes JSON logs
 * (warnings and errors to stderr) and EMF metrics. Logger and Metrics instances created before
 * the capture are covered too: they hold the process streams, whose write method is replaced.
 */
export const captureOutput = () => {
  const chunks: string[] = []
  const spies = [process.stdout, process.stderr].map((stream) =>
    vi.spyOn(stream, 'write').mockImplementation((chunk: unknown) => {
      chunks.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString())
      return true
    }),
  )
  const text = () => chunks.join('')
  return {
    text,
    /** Every JSON line written so far. */
    records: (): Record<string, unknown>[] =>
      text()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>),
    clear: () => {
      chunks.length = 0
    },
    restore: () => {
      for (const spy of spies) spy.mockRestore()
    },
  }
}
