/**
 * The operator tools' Ctrl-C and SIGTERM: the first aborts the signal returned, so the command
 * stops at its next step and cleans up after itself (`first` says how); a second ends the process
 * at once with exit code 130 (`again` says what is left, if anything).
 */
export const interruptOnSignals = (
  tool: string,
  { first, again }: { first: string; again: () => string },
): AbortSignal => {
  const interrupt = new AbortController()
  const onSignal = (signal: NodeJS.Signals) => {
    if (interrupt.signal.aborted) {
      process.stderr.write(`${tool}: ${signal} again: stopped at once${again()}\n`)
      process.exit(130)
    }
    process.stderr.write(`${tool}: ${signal}: ${first}\n`)
    interrupt.abort()
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  return interrupt.signal
}
