import type { EventStore, SubscribeOptions, Subscription } from './port';
import { LIMITS } from '../platform/limits';

const DEFAULT_POLL_INTERVAL_MS = LIMITS.store.subscriptionPollMs;
const ERROR_BACKOFF_MS = LIMITS.store.subscriptionErrorBackoffMs;

/**
 * Catch-up then live, for any adapter that can `readAll` from a position: read batches until the
 * log is exhausted, then wait for a local append (or the poll interval, for appends made by other
 * processes) and read again. `onEvents` is awaited before the next read, so a slow consumer applies
 * back-pressure instead of buffering without bound.
 */
export function runSubscription(store: EventStore, options: SubscribeOptions): Subscription {
  let running = true;
  let position = options.fromPosition;
  const pollIntervalMs = options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
  const loop = (async () => {
    while (running) {
      try {
        const events = await store.readAll({ fromPosition: position, filter: options.filter, maxCount: options.maxCount ?? 500 });
        if (!running) break;
        if (events.length > 0) {
          await options.onEvents(events);
          position = events[events.length - 1]?.position;
          continue;
        }
        await store.waitForAppend(pollIntervalMs);
      } catch (error) {
        options.onError?.(error);
        await new Promise((r) => setTimeout(r, ERROR_BACKOFF_MS));
      }
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
    },
  };
}
