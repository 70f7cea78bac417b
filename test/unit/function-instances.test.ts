import { describe, expect, it } from 'vitest'
import {
  FunctionInstances,
  LOCAL_INSTANCES_PER_FUNCTION,
} from '#local/gateway/function-instances.ts'

/**
 * The local gateway's instances: at most so many invocations of a function run at once, the
 * others wait their turn, and an invocation starts (its context, so its deadline, is made) only
 * when an instance takes it.
 */
const held = () => {
  let release: () => void = () => undefined
  const done = new Promise<void>((resolve) => {
    release = resolve
  })
  return { done, release }
}
const settle = () => new Promise((resolve) => setImmediate(resolve))

describe('the local instances of a function', () => {
  it('runs at most their number at once; the rest start in arrival order as instances free', async () => {
    const instances = new FunctionInstances(2)
    const started: number[] = []
    const holds = Array.from({ length: 5 }, held)
    const runs = holds.map((hold, index) =>
      instances.run('getPet', async () => {
        started.push(index)
        await hold.done
        return index
      }),
    )
    await settle()
    expect(started).toEqual([0, 1])
    expect(instances.load('getPet')).toEqual({ running: 2, waiting: 3 })
    holds[1]?.release()
    await settle()
    expect(started).toEqual([0, 1, 2])
    for (const hold of holds) hold.release()
    expect(await Promise.all(runs)).toEqual([0, 1, 2, 3, 4])
    expect(instances.load('getPet')).toEqual({ running: 0, waiting: 0 })
  })

  it("keeps each function's instances apart, and frees one whose invocation failed", async () => {
    const instances = new FunctionInstances(1)
    const hold = held()
    const getPet = instances.run('getPet', () => hold.done)
    let listed = false
    await instances.run('listPets', async () => {
      listed = true
    })
    expect(listed).toBe(true)
    await expect(
      instances.run('createPet', async () => {
        throw new Error('failed')
      }),
    ).rejects.toThrow('failed')
    await instances.run('createPet', async () => undefined)
    hold.release()
    await getPet
  })

  it('starts a waiting invocation only when an instance takes it (its deadline starts then)', async () => {
    const instances = new FunctionInstances(1)
    const hold = held()
    const first = instances.run('createPet', () => hold.done)
    let startedAt: number | undefined
    const second = instances.run('createPet', async () => {
      startedAt = Date.now()
    })
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(startedAt).toBeUndefined()
    const released = Date.now()
    hold.release()
    await Promise.all([first, second])
    expect(startedAt).toBeGreaterThanOrEqual(released)
  })

  it('are as many per function as a fresh account may run', () => {
    expect(LOCAL_INSTANCES_PER_FUNCTION).toBe(10)
    expect(() => new FunctionInstances(0)).toThrow('positive integer')
  })
})
