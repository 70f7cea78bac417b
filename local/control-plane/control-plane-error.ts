/** What the management API answers for a refused call: its status and exception name. */
export class ControlPlaneError extends Error {
  override name = 'ControlPlaneError'
  constructor(
    readonly status: number,
    readonly type:
      | 'AccessDeniedException'
      | 'BadRequestException'
      | 'ConflictException'
      | 'LimitExceededException'
      | 'NotFoundException'
      | 'UnauthorizedException'
      | 'UnsupportedMediaTypeException',
    message: string,
  ) {
    super(message)
  }
}
