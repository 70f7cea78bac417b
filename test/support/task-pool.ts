/**
 * Runs the tasks with at most `limit` in flight, each started as soon as one finishes: the load
 * a client pool puts on a service. Results keep the tasks' order.
 */
export const pool = async <T>(tasks: (() => Promise<T>)[], limit: number): Promise<T[]> => {
  const results: T[] = new Array(tasks.length)
  let next = 0
  const worker = async () => {
    while (next < tasks.length) {
      const index = next
      next += 1
      results[index] = await (tasks[index] as () => Promise<T>)()
    }
  }
  await Promise.all(Array.from({ length: limit }, worker))
  return results
}
