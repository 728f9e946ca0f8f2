import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { Webhook } from 'standardwebhooks';
import type supertest from 'supertest';
import { createPartner, type PartnerCredentials } from '../support/app';

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

/** Every hex `v1=` signature of X-Webhook-Signature: the partner-side check of the first scheme of docs/interface.md ("Notifications (webhooks)"). */
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

/** Objects that list their properties allow no others (undocumented fields fail), unless they say so. */
function strictObjects(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(strictObjects);
  if (!schema || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema))
    out[key] =
      key === 'properties' ? Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, strictObjects(v)])) : strictObjects(value);
  if (out.properties && out.additionalProperties === undefined) out.additionalProperties = false;
  return out;
}

/**
 * A check of received bodies against their type's schema in the served document's webhooks section,
 * with no undocumented field: null when the body matches, else what is wrong.
 */
export async function documentedBodies(http: supertest.Agent): Promise<(received: Received) => string | null> {
  const doc = (await http.get('/api/v1/openapi.json')).body;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(strictObjects({ $id: 'doc', components: doc.components }) as object);
  return (received) => {
    const schema = doc.webhooks?.[received.body.type]?.post?.requestBody?.content?.['application/json']?.schema;
    if (!schema) return `${received.body.type} is not documented`;
    const validate = ajv.compile(strictObjects(JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"doc#/components/'))) as object);
    return validate(received.body) ? null : ajv.errorsText(validate.errors);
  };
}

/** A new partner whose endpoint is a fresh receiver (the caller closes it), with its signing secret. */
export async function subscribedPartner(
  http: supertest.Agent,
  name: string,
  events?: string[],
): Promise<{ partner: PartnerCredentials; receiver: Receiver; secret: string }> {
  const receiver = new Receiver();
  await receiver.start();
  const partner = await createPartner(http, name);
  const put = await http
    .put('/api/v1/partner/webhooks')
    .set(partner.headers)
    .send({ url: receiver.url, ...(events ? { events } : {}) });
  if (put.status !== 200) throw new Error(`PUT partner/webhooks answered ${put.status} ${JSON.stringify(put.body)}`);
  return { partner, receiver, secret: put.body.data.secret };
}
