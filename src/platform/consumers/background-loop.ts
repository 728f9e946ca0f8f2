/**
 * A node's background loop (the notifications' dispatcher): rounds until stopped, sleeping between
 * them; wake() cuts a sleep short (a wake during a round makes the next sleep none: what it announced
 * may have come too late for that round), and stop() wakes it and waits for the round in flight.
 */
export class BackgroundLoop {
  private active = false;
  private loop: Promise<void> | undefined;
  private wakeUp: (() => void) | undefined;
  private woken = false;

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
    if (this.wakeUp) this.wakeUp();
    else this.woken = true;
  }

  /** Sleeps `ms`, or less when woken or stopped. */
  sleep(ms: number): Promise<void> {
    if (this.woken || !this.active) {
      this.woken = false;
      return Promise.resolve();
    }
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
