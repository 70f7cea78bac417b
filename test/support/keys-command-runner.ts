import { CONTROL_SECRET_VARIABLE } from '#keys/local-control-config.ts'
import { runKeysCommand } from '#ops/keys/keys-command.ts'

export interface KeysCommandResult {
  code: number
  stdout: string
  stderr: string
}

/**
 * `npm run keys -- --url <origin> ...` run in this process (runKeysCommand, what the CLI runs)
 * against a local server, with its control-plane secret: exit code and what it wrote.
 */
export const keysCommandOn =
  (server: { baseUrl: string; controlSecret: string }) =>
  async (...args: string[]): Promise<KeysCommandResult> => {
    let stdout = ''
    let stderr = ''
    const code = await runKeysCommand(['--url', new URL(server.baseUrl).origin, ...args], {
      stdout: (text) => {
        stdout += text
      },
      stderr: (text) => {
        stderr += text
      },
      env: { [CONTROL_SECRET_VARIABLE]: server.controlSecret },
    })
    return { code, stdout, stderr }
  }
