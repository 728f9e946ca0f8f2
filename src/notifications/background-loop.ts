/**
 * A node's background loop (the outbox, the dispatcher): rounds until stopped, sleeping between
 * them; wake() cuts a sleep short, and stop() wakes it and waits for the round in flight.
 */
export class BackgroundLoop {
  private active = false;
  private loop: Promise<void> | undefined;
  private wakeUp: (() => void) | undefined;

  constructor(private readonly body: () => Promise<void>) {}

  get running(): boolean {
    return this.active;
  }

  start(): void {
    if (this.active) return;
    this.active = true;
    this.loop = this.body();
  }

  async stop(): Promise<void> {
    this.active = false;
    this.wakeUp?.();
    await this.loop;
  }

  wake(): void {
    this.wakeUp?.();
  }

  /** Sleeps `ms`, or less when woken or stopped. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        if (this.wakeUp === done) this.wakeUp = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakeUp = done;
    });
  }
}
