import client from 'prom-client';

export interface HttpMetrics {
  registry: client.Registry;
  requests: client.Counter<'method' | 'route' | 'status'>;
  duration: client.Histogram<'method' | 'route'>;
}

/** The HTTP figures (requests by route and status, their duration) and the process's defaults. */
export function httpMetrics(): HttpMetrics {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
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

/** The admission queue's figures: requests in progress, waiting for their turn, and shed after waiting too long. */
export function registerAdmissionMetrics(registry: client.Registry, admission: { inProgress: number; queued: number; shedCount: number }): void {
  new client.Gauge({
    name: 'tally_http_requests_in_progress',
    help: 'HTTP requests being worked on (bounded: LIMITS.http.requestsInProgress)',
    registers: [registry],
    collect() {
      this.set(admission.inProgress);
    },
  });
  new client.Gauge({
    name: 'tally_http_requests_waiting',
    help: 'HTTP requests waiting for their turn, none of their work begun',
    registers: [registry],
    collect() {
      this.set(admission.queued);
    },
  });
  new client.Counter({
    name: 'tally_http_requests_shed_total',
    help: 'HTTP requests answered 503 after waiting longer than LIMITS.http.queuedRequestMs for their turn',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(admission.shedCount);
    },
  });
}
