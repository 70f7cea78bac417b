import { isWellFormedApiKey, MAX_KEY_LENGTH } from '#shared/auth/bearer-token.ts'

/**
 * What a message shows in place of text that could be an API key value: any text of a key's
 * shape (20 to 128 token characters, bearer-token.ts). Key ids (10 lower-case letters and digits)
 * and the names the tools make never have it, so they are still shown.
 */
export const MASKED_KEY_VALUE = '<not shown: shaped like a key value>'

/** Runs of the characters a key is made of (with its padding): where a key can sit in text. */
const KEY_RUN = /[A-Za-z0-9._~+/-]+=*/g

/**
 * Whether a run of key characters could be or hold a key value: key-shaped itself, or longer
 * than any key, so that a key sits somewhere inside it (`<key>/<key>/<key>`, where `/` is a key
 * character too) and no part of it can be shown as harmless.
 */
const holdsKey = (run: string): boolean => isWellFormedApiKey(run) || run.length > MAX_KEY_LENGTH

/** `text` as a message may repeat it: masked when it could be or hold a key value. */
export const shownArgument = (text: string): string =>
  isWellFormedApiKey(text) || (text.match(KEY_RUN) ?? []).some(holdsKey) ? MASKED_KEY_VALUE : text

/**
 * `text` with every run of key characters that could be or hold a key masked, the rest shown:
 * `/v1/pets/<key>,` keeps its `,`. `run` says what a run is (a request path's segments end at
 * `/`, so `/v1/pets/` stays readable).
 */
export const maskedKeyRuns = (text: string, run: RegExp = KEY_RUN): string =>
  text.replace(run, (part) => (holdsKey(part) ? MASKED_KEY_VALUE : part))

/**
 * The key-value-shaped parts of one argument, wherever they sit in it: the whole argument, or a
 * run of key characters inside it (`Bearer <key>`, `<key>,`, `Authorization: Bearer <key>`,
 * `--key=<key>`), or a run longer than any key (which holds one: `<key>/<key>`). A web address is read for a key only where one could travel (user, password,
 * query, fragment): its host and path are key characters too, and not secrets.
 */
export const keyValuesIn = (argument: string): string[] => {
  const url = /^https?:\/\//i.test(argument) ? URL.parse(argument) : null
  const searched = url
    ? [url.username, url.password, url.search, url.hash].map(decodeURIComponentSafe).join(' ')
    : argument
  const runs = searched.match(KEY_RUN) ?? []
  return [...new Set([argument].filter(isWellFormedApiKey).concat(runs.filter(holdsKey)))]
}

const decodeURIComponentSafe = (text: string): string => {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

/**
 * A writer that masks every occurrence of the key-value-shaped parts of a command line's
 * arguments (keyValuesIn: `--key <value>`, a value typed where an id belongs, `Bearer <value>`),
 * whatever message repeats them: the command's own, a parser's, a remote service's.
 */
export const maskingArguments = (
  argv: readonly string[],
  write: (text: string) => void,
): ((text: string) => void) => {
  const secrets = [...new Set(argv.flatMap(keyValuesIn))].sort((a, b) => b.length - a.length)
  if (secrets.length === 0) return write
  return (text) => {
    let masked = text
    for (const secret of secrets) masked = masked.replaceAll(secret, MASKED_KEY_VALUE)
    write(masked)
  }
}
