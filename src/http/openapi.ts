import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { RouteSpec } from './route';
import { ErrorBody } from './schemas';

const SECURITY: Record<string, Array<Record<string, string[]>>> = {
  partner: [{ partnerKey: [], partnerSecret: [] }],
  bearer: [{ userToken: [] }],
  admin: [{ adminToken: [] }],
  signed: [{ providerSignature: [] }],
  public: [],
};

/** What each error status means when a route does not say more. */
const ERROR_TEXT: Record<number, string> = {
  400: 'Invalid request: the message names the field or the rule',
  401: 'Missing or invalid credentials',
  403: 'The resource belongs to another user or partner',
  404: 'Not found',
  409: 'Conflict with the current state',
  410: 'Gone',
  413: 'Request body too large',
  415: 'Content-Type must be application/json',
  422: 'Unprocessable',
  429: 'Too many requests (Retry-After says when to retry)',
  502: 'The provider refused the request',
  503: 'Service unavailable (Retry-After says when to retry)',
};

/** The error statuses every route of its kind can answer, besides those it declares. */
function commonErrors(r: RouteSpec): number[] {
  const statuses = [429];
  if (r.body || r.query || r.params || r.headers) statuses.push(400);
  if (r.auth !== 'public') statuses.push(401);
  if (r.params || r.auth !== 'public') statuses.push(404);
  if (r.body) statuses.push(413, 415);
  if (r.auth !== 'public' || r.tag !== 'Operations') statuses.push(503);
  return statuses;
}

/** Strips TypeBox's symbol keys and our `x-*` validation keys stay (they are valid OpenAPI extensions). */
function plain(schema: unknown): unknown {
  return JSON.parse(JSON.stringify(schema));
}

/**
 * Named schemas (a TypeBox `$id`) go once under components.schemas and are referenced with $ref
 * wherever they appear; two different schemas under one name are a programming error.
 */
class Components {
  readonly schemas: Record<string, unknown> = {};
  private readonly json = new Map<string, string>();

  /** The schema as the document carries it: plain JSON, named parts referenced. */
  use(schema: unknown): unknown {
    return this.hoist(plain(schema));
  }

  private hoist(node: unknown): unknown {
    if (Array.isArray(node)) return node.map((n) => this.hoist(n));
    if (!node || typeof node !== 'object') return node;
    const { $id, ...rest } = node as Record<string, unknown>;
    const out = Object.fromEntries(Object.entries(rest).map(([k, v]) => [k, this.hoist(v)]));
    if (typeof $id !== 'string') return out;
    const text = JSON.stringify(out);
    const known = this.json.get($id);
    if (known !== undefined && known !== text) throw new Error(`OpenAPI: two different schemas are named ${$id}`);
    this.json.set($id, text);
    this.schemas[$id] = out;
    return { $ref: `#/components/schemas/${$id}` };
  }
}

/** JSON, unless the schema is a string of another media type (HTML pages, Prometheus text). */
function mediaType(schema: unknown): string {
  const s = schema as { type?: string; contentMediaType?: string };
  return s.type === 'string' && s.contentMediaType ? s.contentMediaType : 'application/json';
}

function parameters(schema: RouteSpec['query'], where: 'query' | 'path' | 'header', components: Components) {
  const s = schema as { properties?: Record<string, unknown>; required?: string[] } | undefined;
  // TypeBox lists a property with a default in `required`, but the request may leave it out (the default applies).
  return Object.entries(s?.properties ?? {}).map(([name, sub]) => ({
    name,
    in: where,
    required: where === 'path' || ((s?.required ?? []).includes(name) && (sub as { default?: unknown }).default === undefined),
    schema: components.use(sub),
  }));
}

/** OpenAPI 3.1 of every route, from the same schemas that validate requests. */
/** A notification the service sends to partners: documented in the `webhooks` section of OpenAPI 3.1. */
export interface WebhookSpec {
  name: string;
  summary: string;
  body: unknown;
}

export function buildOpenApi(routes: RouteSpec[], serverUrl: string, webhooks: WebhookSpec[] = []) {
  const paths: Record<string, Record<string, unknown>> = {};
  const components = new Components();
  const errorRef = components.use(ErrorBody);
  for (const r of routes) {
    const responses: Record<string, unknown> = {};
    const declared = r.responses as Record<number, { description: string; schema?: unknown }>;
    const statuses = [...new Set([...Object.keys(declared).map(Number), ...commonErrors(r)])].sort((a, b) => a - b);
    for (const status of statuses) {
      const res = declared[status];
      const schema = res?.schema ?? (status >= 400 ? ErrorBody : undefined);
      const description = res?.description ?? ERROR_TEXT[status] ?? 'Error';
      responses[status] = schema ? { description, content: { [mediaType(schema)]: { schema: components.use(schema) } } } : { description };
    }
    responses.default = { description: 'Unexpected error', content: { 'application/json': { schema: errorRef } } };
    const operation: Record<string, unknown> = {
      operationId: `${r.method}${r.path.replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string | undefined) => (c ? c.toUpperCase() : ''))}`,
      summary: r.summary,
      tags: [r.tag],
      security: SECURITY[r.auth],
      'x-credentials': r.auth,
      parameters: [...parameters(r.params, 'path', components), ...parameters(r.query, 'query', components), ...parameters(r.headers, 'header', components)],
      responses,
    };
    if (r.description) operation.description = r.description;
    if (r.deprecated) operation.deprecated = true;
    if (r.body) operation.requestBody = { required: true, content: { 'application/json': { schema: components.use(r.body) } } };
    paths[r.path] ??= {};
    (paths[r.path] as Record<string, unknown>)[r.method] = operation;
  }
  const webhookItems = Object.fromEntries(
    webhooks.map((w) => [
      w.name,
      {
        post: {
          operationId: `webhook${w.name.replace(/(^|\.)(.)/g, (_, _dot: string, c: string) => c.toUpperCase())}`,
          summary: w.summary,
          tags: ['Webhooks'],
          // What the partner's receiver checks: our signature over the body.
          security: [{ notificationSignature: [] }],
          requestBody: { required: true, content: { 'application/json': { schema: components.use(w.body) } } },
          responses: { '200': { description: 'Any 2xx answer within 10 s acknowledges the notification; anything else is retried' } },
        },
      },
    ]),
  );
  return {
    openapi: '3.1.0',
    ...(webhooks.length > 0 ? { webhooks: webhookItems } : {}),
    info: { title: 'Tally partner API', version: '1.0.0', description: 'Partner financial and card service: users, identity, ledger, cards.' },
    servers: [{ url: serverUrl }],
    components: {
      schemas: Object.fromEntries(Object.entries(components.schemas).sort(([a], [b]) => a.localeCompare(b))),
      securitySchemes: {
        partnerKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key' },
        partnerSecret: { type: 'apiKey', in: 'header', name: 'X-Api-Secret' },
        userToken: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
        adminToken: { type: 'http', scheme: 'bearer' },
        providerSignature: { type: 'apiKey', in: 'header', name: 'X-Signature' },
        notificationSignature: {
          type: 'apiKey',
          in: 'header',
          name: 'X-Webhook-Signature',
          description:
            'Sent by Tally on every notification: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" keyed with the endpoint secret>` (two v1 during a rotation); the Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature) carry the same proof in that scheme.',
        },
      },
    },
    paths,
  };
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Where the reference renderer's script is served, from the @scalar/api-reference package itself. */
export const REFERENCE_SCRIPT_PATH = '/docs/reference.js';

/** The renderer's browser bundle, read once from the installed package (nothing from a CDN at run time). */
export function referenceScript(): Buffer {
  const entry = createRequire(__filename).resolve('@scalar/api-reference');
  return readFileSync(join(dirname(entry), 'browser', 'standalone.js'));
}

/**
 * The API reference page: Scalar renders the OpenAPI document (navigation, search, schemas,
 * examples) with its own script served from here, and everything that would call elsewhere off. Without scripts, the list of operations is still there.
 */
export function renderDocs(doc: ReturnType<typeof buildOpenApi>): string {
  // Off: what would call Scalar's services (fonts, telemetry, the AI agent, MCP, the request proxy) and
  // the toolbar of their hosted products; the API client stays (it sends requests from the browser).
  const configuration = {
    withDefaultFonts: false,
    telemetry: false,
    agent: { disabled: true },
    mcp: { disabled: true },
    showToolbar: 'never',
    showDeveloperTools: 'never',
    documentDownloadType: 'json',
    theme: 'default',
  };
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(doc.info.title)}</title></head>
<body><noscript>${operationList(doc)}</noscript>
<script id="api-reference" data-url="/api/v1/openapi.json" data-configuration="${escapeHtml(JSON.stringify(configuration))}"></script>
<script src="${REFERENCE_SCRIPT_PATH}"></script></body></html>`;
}

/** Every operation as a plain list: the page for readers without scripts. */
function operationList(doc: ReturnType<typeof buildOpenApi>): string {
  const sections = Object.entries(doc.paths)
    .flatMap(([path, ops]) =>
      Object.entries(ops).map(([method, op]) => {
        const o = op as {
          summary: string;
          tags: string[];
          'x-credentials': string;
          deprecated?: boolean;
          parameters: unknown[];
          requestBody?: unknown;
          description?: string;
        };
        const body = o.requestBody
          ? `<details><summary>Request body schema</summary><pre>${escapeHtml(JSON.stringify(o.requestBody, null, 2))}</pre></details>`
          : '';
        const params = o.parameters.length
          ? `<details><summary>Parameters</summary><pre>${escapeHtml(JSON.stringify(o.parameters, null, 2))}</pre></details>`
          : '';
        return `<section class="${o.deprecated ? 'deprecated' : ''}"><h3><span class="m ${method}">${method.toUpperCase()}</span> <code>${escapeHtml(path)}</code></h3>
<p>${escapeHtml(o.summary)} <em>(${escapeHtml(o['x-credentials'])}${o.deprecated ? ', deprecated' : ''})</em></p>${o.description ? `<p>${escapeHtml(o.description)}</p>` : ''}${params}${body}</section>`;
      }),
    )
    .join('\n');
  return `<h1>${escapeHtml(doc.info.title)} <small>${escapeHtml(doc.info.version)}</small></h1><p>${escapeHtml(doc.info.description)} Machine-readable: <a href="/api/v1/openapi.json">/api/v1/openapi.json</a>.</p>
${sections}`;
}
