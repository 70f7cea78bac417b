// The local gateway's Lambda instances: each serves one invocation at a time, as on Lambda.

/**
 * How many invocations of one function the local gateway runs at once: the instances a fresh
 * account may run (10 concurrent executions in all: "Lambda quotas", AWS Lambda Developer Guide),
 * each serving one invocation at a time, as Lambda's do. On AWS every instance has a CPU and
 * connections of its own; here the functions share one process with the gateway and the embedded
 * DynamoDB (a bundle: one process per function), and one SDK client whose agent opens 50
 * connections at most. A burst run all at once made its DynamoDB calls wait for a free connection,
 * which the SDK counts against its connection timeout, and each invocation's deadline ran while it
 * waited for the CPU the others held: 100 pipelined requests at a load average of 15 answered 503
 * to 43 to 100 of them (65 "did not establish a connection within 5000 ms", the rest the
 * early-timeout answer at 9.5 s). A bundle's process running 64 creates at once answered its
 * early-timeout 503s too late: its host's hard timeout came first ("Task timed out after 10
 * seconds", the gateway's 500; 57 of 200 creates in one run at a load average of 13). A request
 * beyond the instances waits for one, and its invocation's deadline starts when it runs, as it
 * would on an instance of its own.
 */
export const LOCAL_INSTANCES_PER_FUNCTION = 10

export class FunctionInstances {
  readonly #perFunction: number
  readonly #running = new Map<string, number>()
  /** Invocations waiting for an instance, by function, first come first served. */
  readonly #waiting = new Map<string, (() => void)[]>()

  constructor(perFunction: number = LOCAL_INSTANCES_PER_FUNCTION) {
    if (!Number.isInteger(perFunction) || perFunction < 1) {
      throw new Error('perFunction must be a positive integer')
    }
    this.#perFunction = perFunction
  }

  /** Runs `invoke` on an instance of `functionName` once one is free. */
  async run<Result>(functionName: string, invoke: () => Promise<Result>): Promise<Result> {
    await this.#take(functionName)
    try {
      return await invoke()
    } finally {
      this.#give(functionName)
    }
  }

  /** Invocations running and waiting, by function (what a test or a log may show). */
  load(functionName: string): { running: number; waiting: number } {
    return {
      running: this.#running.get(functionName) ?? 0,
      waiting: this.#waiting.get(functionName)?.length ?? 0,
    }
  }

  async #take(functionName: string): Promise<void> {
    const running = this.#running.get(functionName) ?? 0
    if (running < this.#perFunction) {
      this.#running.set(functionName, running + 1)
      return
    }
    // The instance is handed over by #give: the count stays, one leaves and one enters.
    await new Promise<void>((resolve) => {
      const queue = this.#waiting.get(functionName) ?? []
      queue.push(resolve)
      this.#waiting.set(functionName, queue)
    })
  }

  #give(functionName: string): void {
    const next = this.#waiting.get(functionName)?.shift()
    if (next) {
      next()
      return
    }
    this.#running.set(functionName, (this.#running.get(functionName) ?? 1) - 1)
  }
}
