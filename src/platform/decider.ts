import type { JsonObject } from '../eventstore/port';

/** A domain event before it is stored: its type and data. Ids and metadata are added on append. */
export interface DomainEvent<Type extends string = string, Data extends JsonObject = JsonObject> {
  type: Type;
  data: Data;
}

/**
 * The decider pattern (as in Emmett): pure functions, no I/O. `decide` returns the events a command
 * produces from the current state, or throws a DomainError; `evolve` folds one event into the state.
 */
export interface Decider<State, Command, Event extends DomainEvent> {
  initialState(): State;
  evolve(state: State, event: Event): State;
  decide(command: Command, state: State): Event[];
  /**
   * For aggregates whose streams grow long: how a folded state is written as JSON and read back,
   * so that a load can start from a snapshot. `kind` names the format: change it whenever `evolve`
   * or the state's shape changes, and older snapshots are ignored.
   */
  snapshot?: SnapshotCodec<State>;
}

export interface SnapshotCodec<State> {
  kind: string;
  encode(state: State): JsonObject;
  decode(json: JsonObject): State;
}

export type DomainErrorKind = 'invalid' | 'unauthenticated' | 'not_found' | 'forbidden' | 'conflict' | 'unprocessable' | 'gone';

/** A rule the command broke. The HTTP layer maps `kind` to a status; `message` is shown as is. */
export class DomainError extends Error {
  constructor(
    readonly kind: DomainErrorKind,
    message: string,
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

/** A broken invariant: a bug, never a 4xx (TigerBeetle style). */
export function invariant(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`Invariant violated: ${message}`);
}
