/**
 * Commands on one key (a hot account) that arrive while an earlier batch is being written wait,
 * then go together: one decision pass over the in-memory state and one append for all of them.
 * Each request gets its own outcome (a result or its own error). Correctness still rests on the
 * expected revision of the append; batching only turns N round trips into one.
 */
export class KeyedBatcher<Request, Result> {
  private readonly pending = new Map<string, Array<{ request: Request; resolve: (r: Result) => void; reject: (e: unknown) => void }>>();
  private readonly busy = new Set<string>();

  constructor(
    private readonly process: (key: string, requests: Request[]) => Promise<Array<Result | Error>>,
    private readonly maxBatch = 100,
  ) {}

  submit(key: string, request: Request): Promise<Result> {
    return new Promise<Result>((resolve, reject) => {
      const queue = this.pending.get(key) ?? [];
      queue.push({ request, resolve, reject });
      this.pending.set(key, queue);
      if (!this.busy.has(key)) void this.drain(key);
    });
  }

  private async drain(key: string): Promise<void> {
    this.busy.add(key);
    try {
      while (true) {
        const queue = this.pending.get(key) ?? [];
        if (queue.length === 0) break;
        const batch = queue.splice(0, this.maxBatch);
        if (queue.length === 0) this.pending.delete(key);
        try {
          const outcomes = await this.process(
            key,
            batch.map((b) => b.request),
          );
          batch.forEach((b, i) => {
            const outcome = outcomes[i];
            if (outcome instanceof Error) b.reject(outcome);
            else b.resolve(outcome as Result);
          });
        } catch (error) {
          for (const b of batch) b.reject(error);
        }
      }
    } finally {
      this.busy.delete(key);
    }
  }
}
