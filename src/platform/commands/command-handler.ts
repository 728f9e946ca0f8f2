import { type Decider, DomainError, type DomainEvent, invariant } from '../decider';
import {
  type AppendResult,
  type EventMetadata,
  comparePositions,
  EventIdConflictError,
  type EventStore,
  type ExpectedRevision,
  OverloadedError,
  type StreamAppend,
  WrongExpectedRevisionError,
} from '../../eventstore/port';
import { type CommandContext, eventMetadata, type Loaded, load, type StateCache, toNewEvents } from './commands';
import { LIMITS } from '../limits';

/** Decisions made again after a concurrent write to a stream they read, before the caller gets a 409. */
export const MAX_ATTEMPTS = LIMITS.commands.maxAttempts;

type Evolving = Pick<Decider<unknown, unknown, DomainEvent>, 'initialState' | 'evolve' | 'snapshot'>;

/** The expected revision of an append to a stream read at `loaded`. */
export const at = (loaded: { revision: number }): ExpectedRevision => (loaded.revision === -1 ? 'no_stream' : loaded.revision);

/**
 * The streams one decision reads. A stream's state in the cache is trusted (taken without reading)
 * unless the command distrusts it: on its first attempt none, after a conflicting append the stream
 * that conflicted (another writer moved it), after a refusal or an event id found stored all of
 * them. A stale state of a stream the command appends to at its revision fails that append; any
 * refusal decided on a trusted state is decided again on what is stored. Streams read only for
 * facts are safe as well: an account's owner never changes once opened, credits only ever add, and
 * a KYC approval is final, so a stale fact can only refuse, never allow more.
 */
export class Reads {
  private readonly loaded = new Map<string, { decider: object; loading: Promise<Loaded<unknown>> }>();
  /** True once a state was taken from the cache without reading: a refusal is then decided again. */
  usedCache = false;

  constructor(
    private readonly store: EventStore,
    private readonly cache: StateCache | undefined,
    /** The streams whose cached state is not taken as it is ('all': none is). */
    private readonly distrust: ReadonlySet<string> | 'all',
  ) {}

  /** A stream's state; `cached: false` for streams read once (a transaction's), kept out of the cache. */
  stream<State>(
    stream: string,
    decider: Pick<Decider<State, unknown, DomainEvent>, 'initialState' | 'evolve' | 'snapshot'>,
    options: { cached?: boolean } = {},
  ): Promise<Loaded<State>> {
    const known = this.loaded.get(stream);
    if (known) {
      invariant(known.decider === decider, `${stream} is read with one decider in one decision`);
      return known.loading as Promise<Loaded<State>>;
    }
    const cache = options.cached === false ? undefined : this.cache;
    // A trusted state in the cache is taken as it is (load would answer it the same, a step later).
    const trusted = cache !== undefined && this.distrust !== 'all' && !this.distrust.has(stream) ? cache.get<State>(cache.key(decider, stream)) : undefined;
    if (trusted) this.usedCache = true;
    const loading = trusted ? Promise.resolve(trusted) : (load(this.store, stream, decider as Evolving, { cache }) as Promise<Loaded<State>>);
    this.loaded.set(stream, { decider, loading });
    return loading;
  }
}

/** Events for one stream, at an expected revision; `ctx`: whose command they are (the run's by default). */
export interface Append {
  stream: string;
  events: DomainEvent[];
  expected: ExpectedRevision;
  ctx?: CommandContext;
  /** When the expected revision does not hold, the command is refused with this instead of decided again. */
  refuseOnConflict?: DomainError;
  /** The stream's cached state folds these events in once they are stored. */
  cached?: Pick<Decider<unknown, unknown, DomainEvent>, 'evolve' | 'snapshot'>;
}

/** What a decision returns: the appends (none: nothing to store) and the command's result. */
export interface Decision<Result> {
  appends: Append[];
  result: Result;
  /** A refusal was decided: on a state trusted from the cache it is decided again on the stored one. */
  refused?: boolean;
}

export interface Done<Result> {
  result: Result;
  /** Where the appended events are in the log; undefined when nothing was appended. */
  position: string | undefined;
}

/**
 * The one way commands are carried out: load what the decision needs, decide (pure, in the domain),
 * append every stream at the revision it was decided at in one atomic append, and on a concurrent
 * write decide again on the fresh state (bounded). Commands on one key can be batched (`batches`).
 */
export class CommandHandler {
  /** Per key whose lane is taken, the works waiting their turn in arrival order (see `inLane`). */
  private readonly lanes = new Map<string, Array<() => void>>();

  constructor(
    private readonly store: EventStore,
    private readonly cache?: StateCache,
  ) {}

  /**
   * `cache: false` for commands whose streams are read once (a session's, a login's) or that call a
   * provider that is not idempotent before they append (a KYC inquiry: a state trusted from the
   * cache could make it ask for one it does not need). A concurrent write decides the command again:
   * a conflicting revision, or an event id already stored (the same keyed command made meanwhile by
   * another node: the next decision finds it and answers with it).
   */
  async run<Result>(ctx: CommandContext, decide: (reads: Reads) => Promise<Decision<Result>>, options: { cache?: boolean } = {}): Promise<Done<Result>> {
    const cache = options.cache === false ? undefined : this.cache;
    let distrust: ReadonlySet<string> | 'all' = cache === undefined ? 'all' : new Set();
    for (let attempt = 1; ; attempt++) {
      const reads = new Reads(this.store, cache, distrust);
      let decision: Decision<Result>;
      try {
        decision = await decide(reads);
      } catch (error) {
        if (!(reads.usedCache && error instanceof DomainError)) throw error;
        distrust = 'all';
        continue;
      }
      if (reads.usedCache && decision.refused) {
        distrust = 'all';
        continue;
      }
      if (decision.appends.length === 0) return { result: decision.result, position: undefined };
      try {
        const results = await this.append(ctx, decision.appends);
        return { result: decision.result, position: lastPosition(results) };
      } catch (error) {
        if (error instanceof EventIdConflictError && attempt < MAX_ATTEMPTS) {
          distrust = 'all';
          continue;
        }
        if (!(error instanceof WrongExpectedRevisionError)) throw error;
        const refusal = decision.appends.find((a) => a.stream === error.stream)?.refuseOnConflict;
        if (refusal) throw refusal;
        if (attempt >= MAX_ATTEMPTS) throw error;
        // Another writer moved that stream: it is read again; the others' cached states still hold.
        distrust = distrust === 'all' ? 'all' : new Set([...distrust, error.stream]);
      }
    }
  }

  /** A command on one stream's decider (`extra`: other streams appended with it, atomically). */
  async decide<State, Command, Event extends DomainEvent>(
    ctx: CommandContext,
    stream: string,
    decider: Decider<State, Command, Event>,
    command: Command,
    extra: (events: Event[], state: State) => Append[] = () => [],
  ): Promise<Done<{ events: Event[]; state: State }>> {
    return this.run(ctx, async (reads) => {
      const loaded = await reads.stream(stream, decider);
      const events = decider.decide(command, loaded.state);
      const state = events.reduce(decider.evolve, loaded.state);
      const own: Append = { stream, events, expected: at(loaded), cached: decider as Append['cached'] };
      return { appends: events.length ? [own, ...extra(events, loaded.state)] : [], result: { events, state } };
    });
  }

  /** Commands on one key decided and appended together (see Batches). */
  batches<Request, Result>(process: BatchProcess<Request, Result>, limits?: { maxBatch?: number; maxQueued?: number }): Batches<Request, Result> {
    return new Batches(this, process, limits);
  }

  /**
   * Runs `work` once every earlier work on `key` has ended, in arrival order: batches of different
   * kinds on one account (transfers, payout holds, card authorizations) take turns instead of
   * appending at the same revision, where all but one would fail and be decided again.
   */
  async inLane<T>(key: string, work: () => Promise<T>): Promise<T> {
    const waiting = this.lanes.get(key);
    // The key's entry is the sign its lane is taken; a work arriving meanwhile waits its turn in it.
    if (waiting) await new Promise<void>((turn) => waiting.push(turn));
    else this.lanes.set(key, []);
    try {
      return await work();
    } finally {
      // The lane passes to the next in line, or is free.
      const next = this.lanes.get(key)?.shift();
      if (next) next();
      else this.lanes.delete(key);
    }
  }

  private async append(ctx: CommandContext, appends: Append[]): Promise<AppendResult[]> {
    const merged = mergeByStream(ctx, appends);
    const results = await this.store.appendMany(merged.map((m) => m.append));
    merged.forEach(({ append, events, cached }, i) => {
      const result = results[i];
      if (cached && result && this.cache) this.cache.advance(cached, append.stream, events, result.nextRevision);
    });
    return results;
  }
}

/** One append per stream, events in the order decided, each with the ids and metadata of its command. */
function mergeByStream(ctx: CommandContext, appends: Append[]) {
  const byStream = new Map<string, { append: StreamAppend; events: DomainEvent[]; cached: Append['cached']; merged: boolean }>();
  /**
   * Events already given to a keyed command on a stream: a second append of it there goes on from
   * them (its event ids derive from the command, the stream and the index; an unkeyed command's are new).
   */
  const given = new Map<string, number>();
  /** One metadata object per command, shared by its events: an append serializes it once (postgres.ts). */
  const metadataOf = new Map<CommandContext, EventMetadata>();
  for (const a of appends) {
    if (a.events.length === 0) continue;
    const command = a.ctx ?? ctx;
    let offset = 0;
    if (!command.unkeyed) {
      const key = `${command.commandId}|${a.stream}`;
      offset = given.get(key) ?? 0;
      given.set(key, offset + a.events.length);
    }
    let metadata = metadataOf.get(command);
    if (!metadata) {
      metadata = eventMetadata(command);
      metadataOf.set(command, metadata);
    }
    const events = toNewEvents(command, a.stream, a.events, offset, metadata);
    const known = byStream.get(a.stream);
    if (!known) {
      // The decision's own list, copied only if a second append to the stream joins it.
      byStream.set(a.stream, { append: { stream: a.stream, events, expectedRevision: a.expected }, events: a.events, cached: a.cached, merged: false });
      continue;
    }
    invariant(known.append.expectedRevision === a.expected, `appends to ${a.stream} in one command expect one revision`);
    known.append.events.push(...events);
    if (!known.merged) {
      known.events = known.events.slice();
      known.merged = true;
    }
    known.events.push(...a.events);
  }
  return [...byStream.values()];
}

function lastPosition(results: AppendResult[]): string | undefined {
  return results.reduce<string | undefined>((max, r) => (!max || comparePositions(r.position, max) > 0 ? r.position : max), undefined);
}

/** Decides a batch of requests at once: per request, its result or the DomainError refusing it. */
export type BatchProcess<Request, Result> = (requests: Request[], reads: Reads) => Promise<Decision<Array<Result | DomainError>>>;

interface Waiting<Request, Result> {
  request: Request;
  resolve: (done: Done<Result>) => void;
  reject: (error: unknown) => void;
}

/**
 * Requests on one key (an account's stream) that arrive while the previous batch is being written
 * wait, then go together: one decision over the state in memory and one append for all of them,
 * each request getting its own result or refusal. Correctness rests on the expected revision of
 * the append, across nodes too; batching only turns N round trips into one, and stops hot accounts
 * racing themselves into conflicts. Bounded: past `maxQueued` waiting on a key, OverloadedError (503).
 */
export class Batches<Request, Result> {
  private readonly waiting = new Map<string, Array<Waiting<Request, Result>>>();
  private readonly maxBatch: number;
  private readonly maxQueued: number;

  constructor(
    private readonly handler: CommandHandler,
    private readonly process: BatchProcess<Request, Result>,
    limits: { maxBatch?: number; maxQueued?: number } = {},
  ) {
    this.maxBatch = limits.maxBatch ?? 100;
    this.maxQueued = limits.maxQueued ?? 10_000;
  }

  submit(key: string, ctx: CommandContext, request: Request): Promise<Done<Result>> {
    return new Promise((resolve, reject) => {
      const queue = this.waiting.get(key);
      if (queue && queue.length >= this.maxQueued) throw new OverloadedError(`${queue.length} commands wait on ${key}`);
      if (queue) queue.push({ request, resolve, reject });
      else {
        this.waiting.set(key, [{ request, resolve, reject }]);
        void this.drain(key, ctx);
      }
    });
  }

  /** Runs batches on `key` until nobody waits (the key's entry is the sign a drain is running). */
  private async drain(key: string, ctx: CommandContext): Promise<void> {
    const queue = this.waiting.get(key) as Array<Waiting<Request, Result>>;
    // The batch is taken once the key's lane is free: what arrived meanwhile goes with it.
    while (queue.length > 0) await this.handler.inLane(key, () => this.runBatch(queue, ctx));
    this.waiting.delete(key);
  }

  /** The first `maxBatch` waiting, decided and appended together; each told its result or refusal. */
  private async runBatch(queue: Array<Waiting<Request, Result>>, ctx: CommandContext): Promise<void> {
    const batch = queue.slice(0, this.maxBatch);
    try {
      const done = await this.run(batch, ctx);
      batch.forEach((b, i) => {
        const outcome = done.result[i];
        if (outcome instanceof DomainError) b.reject(outcome);
        else b.resolve({ result: outcome as Result, position: done.position });
      });
    } catch (error) {
      for (const b of batch) b.reject(error);
    }
    queue.splice(0, batch.length);
  }

  private run(batch: Array<Waiting<Request, Result>>, ctx: CommandContext): Promise<Done<Array<Result | DomainError>>> {
    return this.handler.run(ctx, async (reads) => {
      const decision = await this.process(
        batch.map((b) => b.request),
        reads,
      );
      // The batch's requests are commands of their own: each append says whose it is (its ids derive from it).
      invariant(
        decision.appends.every((a) => a.ctx !== undefined),
        'every append of a batch names its command',
      );
      return { ...decision, refused: decision.refused || decision.result.some((r) => r instanceof DomainError) };
    });
  }
}
