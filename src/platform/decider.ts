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

/** The code of a refusal that names none of its own (a stable snake_case word per kind). */
export const KIND_CODE: Record<DomainErrorKind, string> = {
  invalid: 'invalid_request',
  unauthenticated: 'unauthenticated',
  not_found: 'not_found',
  forbidden: 'forbidden',
  conflict: 'conflict',
  unprocessable: 'unprocessable',
  gone: 'gone',
};

/**
 * A rule the command broke. The HTTP layer maps `kind` to a status; `message` is shown as is; `code`
 * is the stable word a client switches on (platform/refusals.ts makes them from a catalogue); `param`
 * names the refused field, where one was.
 */
export class DomainError extends Error {
  readonly code: string;
  constructor(
    readonly kind: DomainErrorKind,
    message: string,
    code?: string,
    readonly param?: string,
  ) {
    super(message);
    this.name = 'DomainError';
    this.code = code ?? KIND_CODE[kind];
  }
}

/** A broken invariant: a bug, never a 4xx (TigerBeetle style). */
export function invariant(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`Invariant violated: ${message}`);
}
