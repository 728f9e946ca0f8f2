/**
 * In-process queue per key (an aggregate's stream): commands on the same hot account wait their
 * turn here instead of all racing to the store and retrying on conflicts. Correctness does not
 * depend on it (the expected revision does, across nodes too); it only removes wasted work.
 */
export class KeyedQueue {
  private readonly tails = new Map<string, Promise<unknown>>();

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release: () => void = () => {};
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = previous.then(() => mine);
    this.tails.set(key, tail);
    try {
      await previous;
      return await fn();
    } finally {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}
