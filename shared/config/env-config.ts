/** Read a required environment variable at module scope: a missing one fails the cold start, not a request. */
export const requireEnv = (name: string, env: NodeJS.ProcessEnv = process.env): string => {
  const value = env[name]
  if (value === undefined || value.trim() === '') {
    throw new Error(`Missing required environment variable ${name}`)
  }
  return value
}

export const optionalEnv = (
  name: string,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined => {
  const value = env[name]
  return value === undefined || value.trim() === '' ? undefined : value
}
