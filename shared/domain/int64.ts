/** The int64 range of categoryId and of path ids (docs/api.md): plain values, no zod. */
export const INT64_MIN = -(2n ** 63n)
export const INT64_MAX = 2n ** 63n - 1n
