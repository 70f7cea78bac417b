import { vi } from 'vitest'
import type { AppLogger } from '#shared/observability/logger.ts'

/** A logger whose calls tests can inspect (and which prints nothing). */
export const fakeLogger = () =>
  ({ debug: vi.fn(), info: vi.fn(), warn: vi.fn(), error: vi.fn() }) satisfies AppLogger
