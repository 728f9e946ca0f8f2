import client from 'prom-client';

export interface HttpMetrics {
  registry: client.Registry;
  requests: client.Counter<'method' | 'route' | 'status'>;
  duration: client.Histogram<'method' | 'route'>;
}

/**
 * How often the event loop's delay is sampled (prom-client's `nodejs_eventloop_lag_*`), in ms. Each
 * sample is a timer that wakes the main thread, and a wake-up of an idle thread costs about 100 us of
 * CPU on a virtual machine (docs/performance.md, session 34): prom-client's default of 10 ms cost a
 * lightly loaded server 100 wake-ups a second. At 100 ms a stall of 100 ms or more is always seen.
 */
const EVENT_LOOP_SAMPLE_MS = 100;

/** The HTTP figures (requests by route and status, their duration) and the process's defaults. */
export function httpMetrics(): HttpMetrics {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  return {
    registry,
    requests: new client.Counter({
      name: 'tally_http_requests_total',
      help: 'HTTP requests',
      labelNames: ['method', 'route', 'status'],
      registers: [registry],
    }),
    duration: new client.Histogram({
      name: 'tally_http_request_duration_seconds',
      help: 'HTTP request duration',
      labelNames: ['method', 'route'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
  };
}
