/**
 * The numbers of an API Gateway usage plan as API Gateway accepts them. ThrottleSettings'
 * burstLimit is an Integer and its rateLimit a Double
 * (https://docs.aws.amazon.com/apigateway/latest/api/API_ThrottleSettings.html); QuotaSettings'
 * limit and offset are Integers
 * (https://docs.aws.amazon.com/apigateway/latest/api/API_QuotaSettings.html). The API model's
 * Integer is 32-bit signed (the SDKs' int), and CloudFormation documents a minimum of 0 for all
 * four (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-properties-apigateway-usageplan-throttlesettings.html,
 * .../aws-properties-apigateway-usageplan-quotasettings.html). The local control plane refuses
 * what API Gateway would refuse, and the keys CLI checks a plan's derived numbers before it asks.
 */
export const INT32_MAX = 2_147_483_647

export interface UsagePlanNumbers {
  rateLimit?: unknown
  burstLimit?: unknown
  quotaLimit?: unknown
  quotaOffset?: unknown
}

const isInt32 = (value: unknown) =>
  typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= INT32_MAX
const isRate = (value: unknown) => typeof value === 'number' && Number.isFinite(value) && value >= 0

const RULES: [keyof UsagePlanNumbers, string, (value: unknown) => boolean, string][] = [
  ['rateLimit', 'throttle.rateLimit', isRate, 'a finite number of at least 0'],
  ['burstLimit', 'throttle.burstLimit', isInt32, `an integer from 0 to ${INT32_MAX}`],
  ['quotaLimit', 'quota.limit', isInt32, `an integer from 0 to ${INT32_MAX}`],
  ['quotaOffset', 'quota.offset', isInt32, `an integer from 0 to ${INT32_MAX}`],
]

/** What is wrong with the numbers given (absent ones are not checked), or undefined. */
export const usagePlanNumbersProblem = (numbers: UsagePlanNumbers): string | undefined => {
  for (const [field, name, valid, expected] of RULES) {
    if (field in numbers && numbers[field] !== undefined && !valid(numbers[field])) {
      return `${name} must be ${expected}, as API Gateway accepts it`
    }
  }
  return undefined
}

/** Throws `fail(problem)` when a number is one API Gateway would refuse. */
export const checkUsagePlanNumbers = (
  numbers: UsagePlanNumbers,
  fail: (message: string) => Error,
): void => {
  const problem = usagePlanNumbersProblem(numbers)
  if (problem) throw fail(problem)
}
