import { KeyAdminError } from './key-admin-error.ts'

/**
 * The keys CLI's requests to the local control plane carry its secret: a redirect is refused, not
 * followed, so no answer (a proxy, another program on the port) can send the secret elsewhere.
 * fetch keeps custom headers across a redirect, even to another host.
 */
export const refusingRedirects =
  (fetchImpl: typeof fetch): typeof fetch =>
  async (input, init) => {
    const response = await fetchImpl(input, { ...init, redirect: 'manual' })
    if (response.status >= 300 && response.status < 400) {
      await response.body?.cancel()
      const url = input instanceof Request ? input.url : String(input)
      throw new KeyAdminError(
        `${new URL(url).origin} answered a redirect (HTTP ${response.status}) where the local server answers: the keys CLI follows none, as its requests carry the control plane's secret. Is another program on that port? Give the server's own address with --url`,
      )
    }
    return response
  }
