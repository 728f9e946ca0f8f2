import {
  type EventStore,
  type NewEvent,
  type ReadAllOptions,
  type RecordedEvent,
  readAllWithHead,
  type StreamAppend,
  type SubscribeOptions,
} from '../../eventstore/port';
import type { ErasedAs, PersonalData } from './personal-data';

/**
 * The event store as the service uses it: personal fields sealed on every append, opened on every
 * read (streams, the log, subscriptions), so the adapters store, hash and chain only the sealed form
 * and know nothing of it. Audit reads take the store underneath: they serve the log as stored.
 * Appends and reads of events with no personal fields (transfers, card spends) go straight through.
 */
export function sealedStore(store: EventStore, personal: PersonalData, erasedAs: ErasedAs = null): EventStore {
  const opened = (events: RecordedEvent[]) => (personal.concerns(events) ? personal.open(events, erasedAs) : events);
  // A head carries no data: nothing to open.
  const openedRead = (options: ReadAllOptions | undefined, events: RecordedEvent[]) => (options?.headsOnly ? events : opened(events));
  const sealedAppends = async (appends: StreamAppend[]) =>
    Promise.all(appends.map(async (a) => (personal.concerns(a.events) ? { ...a, events: await personal.seal(a.stream, a.events) } : a)));
  return {
    kind: store.kind,
    append(stream, events: NewEvent[], expectedRevision) {
      if (!personal.concerns(events)) return store.append(stream, events, expectedRevision);
      return personal.seal(stream, events).then((sealed) => store.append(stream, sealed, expectedRevision));
    },
    appendMany(appends) {
      if (!appends.some((a) => personal.concerns(a.events))) return store.appendMany(appends);
      return sealedAppends(appends).then((sealed) => store.appendMany(sealed));
    },
    readStream: (stream, options) => store.readStream(stream, options).then(opened),
    readAll: (options?: ReadAllOptions) => store.readAll(options).then((events) => openedRead(options, events)),
    subscribe: (options: SubscribeOptions) => store.subscribe({ ...options, onEvents: async (events) => options.onEvents(await opened(events)) }),
    headPosition: () => store.headPosition(),
    readAllWithHead: async (options?: ReadAllOptions) => {
      const read = await readAllWithHead(store, options);
      return { head: read.head, events: await openedRead(options, read.events) };
    },
    waitForAppend: (timeoutMs) => store.waitForAppend(timeoutMs),
    ping: () => store.ping(),
    close: () => store.close(),
  };
}
