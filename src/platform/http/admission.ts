/**
 * The requests a node works on at once, bounded. Past the bound a request waits, first come first
 * served, holding only what node's HTTP parser made for it (its request and response objects): its
 * body is read, its credentials checked and its work begun when a request in progress is answered.
 *
 * Why: under an open arrival rate near capacity, a stall of the node (a collection, a checkpoint, the
 * disk's writeback) leaves a backlog; without a bound every request of the backlog is begun at once,
 * each holding its state, its query and its promises while it waits on the store. The young
 * generation's collections copy what is alive, so each request then costs more CPU than the closed
 * loop's, the backlog grows faster than it drains and the node does not recover while the rate holds
 * (docs/performance.md, session 28). With the bound, a backlog waits as cheap objects and the
 * requests in progress cost what they cost in the closed loop.
 *
 * A request that waited longer than `maxWaitMs` is shed (answered 503 with Retry-After by `shed`,
 * none of its work done: safe to send again), when its turn comes or when the queue is swept, so
 * that past capacity the node answers the rest within a bounded wait instead of all of them ever later.
 * A request whose client went away while it waited is dropped without its work (`gone`).
 */
export interface AdmissionOptions {
  /** Requests in progress at most. */
  limit: number;
  /** The longest a request waits for its turn before it is shed. */
  maxWaitMs: number;
  /** The clock (ms), for tests. */
  now?: () => number;
}

/** A request waiting for its turn: its work, its refusal, whether its client is still there, when it came. */
interface Waiting {
  work: () => Promise<void>;
  shed: () => void;
  gone: () => boolean;
  since: number;
}

export class Admission {
  private running = 0;
  /** FIFO as an array and the index of its head (shift() is O(n) on a long queue). */
  private waiting: Waiting[] = [];
  private head = 0;
  private sweeper: NodeJS.Timeout | undefined;
  private readonly now: () => number;
  /** Requests shed since start (the metrics read it). */
  shedCount = 0;

  constructor(private readonly options: AdmissionOptions) {
    if (!(options.limit >= 1)) throw new Error(`admission: a limit of at least 1 request in progress (got ${options.limit})`);
    this.now = options.now ?? (() => performance.now());
  }

  get maxWaitMs(): number {
    return this.options.maxWaitMs;
  }

  get inProgress(): number {
    return this.running;
  }

  get queued(): number {
    return this.waiting.length - this.head;
  }

  /**
   * Runs `work` now when fewer than `limit` requests are in progress, else when its turn comes;
   * `shed` instead when it waited longer than maxWaitMs; neither when `gone` says its client left.
   * `work` must settle once the request is answered (its rejection is the caller's to handle first).
   */
  enter(work: () => Promise<void>, shed: () => void, gone: () => boolean): void {
    if (this.running < this.options.limit && this.queued === 0) {
      this.run(work);
      return;
    }
    this.waiting.push({ work, shed, gone, since: this.now() });
    this.sweeper ??= setInterval(() => this.sweep(), Math.max(1, Math.ceil(this.options.maxWaitMs / 4))).unref();
  }

  /** Stops the sweeper (a server closing); what waits stays waiting. */
  close(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  private run(work: () => Promise<void>): void {
    this.running++;
    work().finally(() => {
      this.running--;
      this.next();
    });
  }

  /** Whoever waits longest goes next, while there is room; on the way, the expired are shed and the gone dropped. */
  private next(): void {
    while (this.running < this.options.limit && this.queued > 0) {
      const turn = this.take();
      if (turn.gone()) continue;
      if (this.now() - turn.since > this.options.maxWaitMs) this.refuse(turn);
      else this.run(turn.work);
    }
  }

  /** Sheds the expired at the head of the queue, though no place frees (the requests in progress are all slow). */
  private sweep(): void {
    const deadline = this.now() - this.options.maxWaitMs;
    while (this.queued > 0) {
      const first = this.waiting[this.head] as Waiting;
      if (first.gone()) this.take();
      else if (first.since < deadline) this.refuse(this.take());
      else break;
    }
    if (this.queued === 0) this.close();
  }

  private take(): Waiting {
    const turn = this.waiting[this.head] as Waiting;
    this.waiting[this.head++] = undefined as unknown as Waiting;
    if (this.head === this.waiting.length) {
      this.waiting = [];
      this.head = 0;
    } else if (this.head >= 1_024 && this.head * 2 >= this.waiting.length) {
      this.waiting = this.waiting.slice(this.head);
      this.head = 0;
    }
    return turn;
  }

  private refuse(turn: Waiting): void {
    this.shedCount++;
    turn.shed();
  }
}
