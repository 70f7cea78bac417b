import * as z from 'zod/mini'
import type { KeyUsageRepository } from './key-usage-repository.ts'

/**
 * The keys CLI's reads and the lift of the rate limiter's items, as one request each: what the
 * local control plane serves at KEY_USAGE_PATH (the CLI reaches a deployed stage's table with
 * DynamoDB calls instead). Both sides run the same KeyUsageRepository.
 */
export const KEY_USAGE_PATH = '/_local/key-usage'

const keyId = z.string().check(z.minLength(1), z.maxLength(128))
const day = z.string().check(z.regex(/^\d{4}-\d{2}-\d{2}$/))

export const keyUsageRequestSchema = z.discriminatedUnion('op', [
  z.object({ op: z.literal('days'), keyId, from: day, to: day }),
  z.object({ op: z.literal('countsOn'), keyIds: z.array(keyId).check(z.maxLength(10_000)), day }),
  z.object({ op: z.literal('month'), month: z.string().check(z.regex(/^\d{4}-\d{2}$/)) }),
  z.object({ op: z.literal('state'), keyId }),
  z.object({
    op: z.literal('suspensions'),
    keyIds: z.array(keyId).check(z.maxLength(10_000)),
  }),
  z.object({ op: z.literal('lift'), keyId }),
])
export type KeyUsageRequest = z.infer<typeof keyUsageRequestSchema>

/** What the CLI needs of the repository, wherever it runs. */
export type KeyUsageReader = Pick<
  KeyUsageRepository,
  'days' | 'countsOn' | 'month' | 'state' | 'suspensions' | 'lift'
>

/** Runs one request against the repository; the answer is plain JSON. */
export const answerKeyUsageRequest = async (
  repository: KeyUsageReader,
  request: KeyUsageRequest,
): Promise<unknown> => {
  switch (request.op) {
    case 'days':
      return repository.days(request.keyId, request.from, request.to)
    case 'countsOn':
      return repository.countsOn(request.keyIds, request.day)
    case 'month':
      return repository.month(request.month)
    case 'state':
      return repository.state(request.keyId)
    case 'suspensions':
      return repository.suspensions(request.keyIds)
    case 'lift':
      return { liftedUntil: (await repository.lift(request.keyId)) ?? null }
  }
}
