import * as z from 'zod/mini'
import { ERROR_STATUS, type ErrorCode } from '#shared/errors/error-codes.ts'

const ERROR_CODES = Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]]

/** The Error body every error response carries (interface section 7, decisions.md "Errors"). */
export const ErrorSchema = z.object({
  code: z.enum(ERROR_CODES),
  message: z.string(),
  status: z.int(),
  details: z.optional(z.array(z.object({ field: z.string(), message: z.string() }))),
  requestId: z.optional(z.string()),
})
export type ErrorBody = z.infer<typeof ErrorSchema>
