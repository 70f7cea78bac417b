import { isWellFormedApiKey } from './bearer-token.ts'

/**
 * What a message shows in place of text that could be an API key value: any text of a key's
 * shape (20 to 128 token characters, bearer-token.ts). Key ids (10 lower-case letters and digits)
 * and the names the tools make never have it, so they are still shown.
 */
export const MASKED_KEY_VALUE = '<not shown: shaped like a key value>'

/** `text` as a message may repeat it: masked when it could be a key value. */
export const shownArgument = (text: string): string =>
  isWellFormedApiKey(text) ? MASKED_KEY_VALUE : text

/**
 * A writer that masks every occurrence of the key-value-shaped arguments of a command line
 * (`--key <value>`, `--key=<value>`, a value typed where an id belongs), whatever message repeats
 * them: the command's own, a parser's, a remote service's.
 */
export const maskingArguments = (
  argv: readonly string[],
  write: (text: string) => void,
): ((text: string) => void) => {
  const secrets = [
    ...new Set(
      argv
        .flatMap((argument) => [argument, argument.slice(argument.indexOf('=') + 1)])
        .filter((argument) => isWellFormedApiKey(argument)),
    ),
  ].sort((a, b) => b.length - a.length)
  if (secrets.length === 0) return write
  return (text) => {
    let masked = text
    for (const secret of secrets) masked = masked.replaceAll(secret, MASKED_KEY_VALUE)
    write(masked)
  }
}
