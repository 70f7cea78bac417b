import * as z from 'zod/mini'
import { ERROR_STATUS, type ErrorCode } from './error-codes.ts'

const ERROR_CODES = Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]]

export const ErrorDetailSchema = z.object({ field: z.string(), message: z.string() })
export type ErrorDetail = z.infer<typeof ErrorDetailSchema>

/**
 * The Error body every error response carries (docs/api.md, "Errors"): the type of what
 * http-response renders, and the OpenAPI document's Error schema.
 */
export const ErrorSchema = z.object({
  code: z.enum(ERROR_CODES),
  message: z.string(),
  status: z.int(),
  details: z.optional(z.array(ErrorDetailSchema)),
  requestId: z.optional(z.string()),
})
export type ErrorBody = z.infer<typeof ErrorSchema>
