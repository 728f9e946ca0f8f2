import { auditorDecider } from '../../domain/audit';
import { cardDecider } from '../../domain/cards';
import { partnerDecider, userDecider } from '../../domain/identity';
import { accountDecider } from '../../domain/ledger';
import type { Decider, DomainEvent } from '../../platform/decider';

/**
 * How a stream's events are shown with its aggregate's state, as of an instant: by auditors
 * (GET /audit/v1/streams/{stream}) and by `tally events read`, from the same folds.
 */
export interface StreamFolder {
  /** Streams whose name starts with this belong to the aggregate. */
  prefix: string;
  aggregate: string;
  fold(events: DomainEvent[]): unknown;
}

/** A stream's state from its first event on, for tools that read the log (not the service's decisions). */
export function foldEvents<State, Event extends DomainEvent>(
  decider: Pick<Decider<State, unknown, Event>, 'initialState' | 'evolve'>,
  events: DomainEvent[],
): State {
  let state = decider.initialState();
  // evolve has no default branch: an event type this code does not know leaves the state as it was.
  for (const e of events) state = decider.evolve(state, e as Event) ?? state;
  return state;
}

function folder<State, Event extends DomainEvent>(
  prefix: string,
  aggregate: string,
  decider: Pick<Decider<State, unknown, Event>, 'initialState' | 'evolve'>,
): StreamFolder {
  return {
    prefix,
    aggregate,
    fold: (events) => foldEvents(decider, events),
  };
}

/** Add an aggregate here to have its streams shown with their state. */
export const streamFolders: StreamFolder[] = [
  folder('partner-', 'partner', partnerDecider),
  folder('user-', 'user', userDecider),
  // A card's history: issuing, moves, limit and PIN changes (never the PIN), and its spends.
  folder('card-', 'card', cardDecider),
  // An account's money out and holds; its money in is the stream accountin-<id>, folded by the same decider.
  folder('account-', 'account', accountDecider),
  folder('accountin-', 'account credits', accountDecider),
  folder('auditor-', 'auditor', auditorDecider),
];

/** The folder of the longest matching prefix (so `user-` never shadows a later, longer one). */
export function folderFor(stream: string, folders: StreamFolder[] = streamFolders): StreamFolder | undefined {
  return folders.filter((f) => stream.startsWith(f.prefix)).sort((a, b) => b.prefix.length - a.prefix.length)[0];
}
