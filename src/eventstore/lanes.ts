import { OverloadedError } from './port';

/**
 * One lane per stream: work on a stream waits for the work before it on that stream, in arrival
 * order. Work on several streams takes their lanes in name order, so two of them never wait on each
 * other. Bounded: past `maxQueuedPerStream` waiting on one stream, OverloadedError (nothing done).
 */
export class StreamLanes {
  private readonly lanes = new Map<string, { tail: Promise<void>; queued: number }>();

  constructor(private readonly maxQueuedPerStream: number) {}

  async run<T>(streams: readonly string[], work: () => Promise<T>): Promise<T> {
    const releases: Array<() => void> = [];
    try {
      for (const stream of [...new Set(streams)].sort()) releases.push(await this.take(stream));
      return await work();
    } finally {
      for (const release of releases) release();
    }
  }

  /** How many are in or waiting for `stream`'s lane (for tests and metrics). */
  queued(stream: string): number {
    return this.lanes.get(stream)?.queued ?? 0;
  }

  private async take(stream: string): Promise<() => void> {
    let lane = this.lanes.get(stream);
    if (lane && lane.queued >= this.maxQueuedPerStream) throw new OverloadedError(`${lane.queued} appends wait for stream ${stream}`);
    if (!lane) {
      lane = { tail: Promise.resolve(), queued: 0 };
      this.lanes.set(stream, lane);
    }
    const current = lane;
    current.queued++;
    const before = current.tail;
    let release = () => {};
    current.tail = new Promise<void>((resolve) => {
      release = resolve;
    });
    await before;
    return () => {
      current.queued--;
      if (current.queued === 0 && this.lanes.get(stream) === current) this.lanes.delete(stream);
      release();
    };
  }
}
