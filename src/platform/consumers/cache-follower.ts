import type { Logger } from 'pino';
import type { EventStore } from '../../eventstore/port';
import type { StateCache } from '../commands/commands';
import { BackgroundLoop } from './background-loop';

/** Most event heads read per round trip. */
const PAGE = 1_000;

/**
 * Keeps a node's cached states in step with other nodes' appends. Nodes sharing one log each keep
 * their own StateCache, and a command's first attempt decides on the cached state without reading:
 * when another node moved the stream meanwhile, the append fails and the command is decided again.
 * With two nodes taking requests in turn, a third of the transfers went that way. This loop reads
 * the log's heads (stream and revision, no data) every `intervalMs` and tells the cache
 * (StateCache.noteStored), so that a command on a stream another node moved reads the events it
 * misses first. It only saves work: a stream moved after the last round still fails its append
 * and is decided again, as without it.
 */
export class CacheFollower {
  private readonly loop = new BackgroundLoop(() => this.run());
  private position = '';
  private failing = false;
  /** Event heads read (tests, diagnostics). */
  readonly stats = { rounds: 0, events: 0 };

  constructor(
    private readonly store: EventStore,
    private readonly cache: StateCache,
    private readonly intervalMs: number,
    private readonly log: Logger,
  ) {}

  /** Follows from the log's head now: the cache learned what came before from its own reads. */
  async start(): Promise<void> {
    this.position = await this.store.headPosition();
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  private async run(): Promise<void> {
    while (this.loop.running) {
      const full = await this.round();
      if (!full) await this.loop.sleep(this.intervalMs);
    }
  }

  /** One page of heads; true when it was full (more may follow at once). */
  private async round(): Promise<boolean> {
    try {
      const page = await this.store.readAll({ fromPosition: this.position || undefined, maxCount: PAGE, headsOnly: true });
      this.stats.rounds++;
      this.stats.events += page.length;
      for (const e of page) this.cache.noteStored(e.stream, e.revision);
      const last = page[page.length - 1];
      if (last) this.position = last.position;
      if (this.failing) this.log.info('state cache follows the log again');
      this.failing = false;
      return page.length === PAGE;
    } catch (error) {
      // The store out of reach: commands fail on their own; this says so once and tries again.
      if (!this.failing) this.log.warn({ err: error }, 'state cache cannot follow the log; trying again');
      this.failing = true;
      return false;
    }
  }
}
