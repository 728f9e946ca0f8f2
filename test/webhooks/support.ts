import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface Received {
  headers: IncomingHttpHeaders;
  raw: string;
  body: { id: string; type: string; createdAt: string; sequence: number; data: Record<string, unknown> };
}

/** What the receiver does with a request: answer a status, or never answer (null). */
export type Behaviour = (received: Received) => number | null;

/** A real partner endpoint: a node http server on 127.0.0.1 that records every POST it gets. */
export class Receiver {
  readonly received: Received[] = [];
  behaviour: Behaviour = () => 200;
  private readonly hanging = new Set<ServerResponse>();
  private server!: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const received: Received = { headers: req.headers, raw, body: JSON.parse(raw) };
        this.received.push(received);
        const status = this.behaviour(received);
        if (status === null) {
          this.hanging.add(res);
          return;
        }
        res.writeHead(status).end('ok');
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks`;
  }

  /** Resolves once `predicate` holds for what was received, or rejects after `timeoutMs`. */
  async waitFor(predicate: (all: Received[]) => boolean, timeoutMs = 10_000): Promise<Received[]> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this.received)) {
      if (Date.now() > deadline) throw new Error(`receiver: condition not met in ${timeoutMs} ms; got ${this.received.map((r) => r.body.type).join(', ')}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    return this.received;
  }

  async close(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Every hex `v1=` signature of X-Webhook-Signature: the partner-side check of decisions.md's first scheme. */
export function verifiesXWebhookSignature(received: Received, secret: string): boolean {
  const header = String(received.headers['x-webhook-signature'] ?? '');
  const parts = header.split(',').map((p) => p.split('=', 2) as [string, string]);
  const t = parts.find(([k]) => k === 't')?.[1];
  const expected = createHmac('sha256', secret).update(`${t}.${received.raw}`).digest('hex');
  return parts.some(([k, v]) => k === 'v1' && v.length === expected.length && timingSafeEqual(Buffer.from(v), Buffer.from(expected)));
}

/**
 * The Standard Webhooks check, with the `standardwebhooks` package's own signing: the signature it
 * makes for the received id, timestamp and body must be among those sent (`v1,<base64>` entries,
 * any one of which may match), and the timestamp within the tolerance of `nowSeconds`. (Its
 * `verify` reads the real clock; these tests run on an injected one.)
 */
export function verifiesStandardWebhook(received: Received, secret: string, nowSeconds: number, toleranceSeconds = 300): boolean {
  const id = String(received.headers['webhook-id'] ?? '');
  const timestamp = String(received.headers['webhook-timestamp'] ?? '');
  const signatures = String(received.headers['webhook-signature'] ?? '').split(' ');
  if (!id || !/^\d+$/.test(timestamp) || Math.abs(nowSeconds - Number(timestamp)) > toleranceSeconds) return false;
  const expected = new Webhook(secret).sign(id, new Date(Number(timestamp) * 1000), received.raw);
  return signatures.includes(expected);
}
