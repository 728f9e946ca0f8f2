import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { MESSAGES, PLATFORM_CODES as C, STATUS_OF } from '../platform/http/errors';
import { OPERATIONS, type OperationExamples, PARAMETER_EXAMPLES, PLACEHOLDERS, SAMPLE, SCHEMA_EXAMPLES } from './openapi-examples';
import type { RouteSpec } from '../platform/http/route';
import { OPERATION_NAMES } from './operation-ids';
import { ErrorBody } from './schemas';
import { AUDIT_REFUSALS } from '../domain/audit';

const SECURITY: Record<string, Array<Record<string, string[]>>> = {
  partner: [{ partnerKey: [], partnerSecret: [] }],
  bearer: [{ userToken: [] }],
  admin: [{ adminToken: [] }],
  signed: [{ providerSignature: [] }],
  auditor: [{ auditorToken: [] }],
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
  if (switchable(r)) statuses.push(404);
  if (r.body) statuses.push(413, 415);
  if (r.auth !== 'public' || r.tag !== 'Operations') statuses.push(503);
  return statuses;
}

/** Routes that answer 404 `Not found` while they are off (the sandbox without SANDBOX, the operator API without ADMIN_TOKEN). */
const switchable = (r: RouteSpec) => r.path.startsWith('/sandbox/') || r.path.startsWith('/admin/');

/** What the area of each tag holds: the reference's navigation shows it. */
const TAGS: Array<{ name: string; description: string }> = [
  { name: 'Users', description: 'Register end-users and read them (partner credentials). A partner sees only the users it created.' },
  { name: 'Profile', description: 'The personal profile that must exist, complete, before KYC: partner credentials with `userId`, or the user’s token.' },
  { name: 'KYC', description: 'Identity verification with the identity provider; approval makes the user `active` with no partner call.' },
  { name: 'Login', description: 'Email one-time code login: send, verify, refresh, logout. The answer carries the user’s access and refresh tokens.' },
  { name: 'Accounts', description: 'The user’s USDC account (opened at first login) and its balance: credits minus debits, decimal strings.' },
  { name: 'Transactions', description: 'Deposits through a hosted payment link, transfers, payouts to a bank account, and the transaction history.' },
  { name: 'Exchange', description: 'Assets and exchange quotes (30 seconds).' },
  { name: 'Cards', description: 'The user’s payment card: application, issuance, status, PIN, lock and unlock, spending limit, balance and transactions.' },
  {
    name: 'Webhooks',
    description:
      'Partner notifications: the endpoint, its signing secret and the delivery log. The notifications themselves are under Webhooks in the navigation.',
  },
  { name: 'Sandbox', description: 'Only while SANDBOX is on: the test providers’ decisions (KYC, payments, payouts, cards) and the emails sent.' },
  {
    name: 'Provider callbacks',
    description: 'Signed calls from identity, payment, payout and card providers; unsigned or badly signed ones are 401 and change nothing.',
  },
  {
    name: 'Operator',
    description: 'The operator API (`Authorization: Bearer <ADMIN_TOKEN>`): partners and keys, user actions, projections. Off while ADMIN_TOKEN is unset.',
  },
  { name: 'Operations', description: 'Health, readiness, metrics and this reference.' },
  {
    name: 'Audit',
    description:
      'The auditors’ read-only API (`Authorization: Bearer <auditor token>` from POST /admin/v1/auditors): streams and balances as of an instant, and the log as NDJSON, read from the log itself. Every use is recorded in the log.',
  },
];

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

  /**
   * The operation's own shape under a name (SDK generators make a type of each): the name the
   * examples module gives, else one derived from the named schemas inside, else the fallback.
   */
  name(node: unknown, given: string | undefined, fallback: string): unknown {
    const n = node as { $ref?: string; type?: string; contentMediaType?: string };
    if (!n || n.$ref || (n.type !== 'object' && n.type !== 'array')) return node;
    const text = JSON.stringify(node);
    const same = given ? undefined : [...this.json].find(([, known]) => known === text)?.[0];
    for (const name of [given, same, derivedName(node), fallback]) {
      if (!name) continue;
      const known = this.json.get(name);
      if (known !== undefined && known !== text) {
        if (name === given) throw new Error(`OpenAPI: two different schemas are named ${name}`);
        continue;
      }
      this.json.set(name, text);
      this.schemas[name] = node;
      return { $ref: `#/components/schemas/${name}` };
    }
    return node;
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

const refName = (node: unknown) => ((node as { $ref?: string })?.$ref ?? '').replace('#/components/schemas/', '') || undefined;

/** `{success, data: X}`, `{success, data: [X]}`, `{success, data: {x: X}}`, `{..., data: {items: [X], meta}}`, `[X]` named after X. */
function derivedName(node: unknown): string | undefined {
  const n = node as { type?: string; items?: unknown; properties?: Record<string, { type?: string; items?: unknown; properties?: Record<string, unknown> }> };
  if (n.type === 'array') return refName(n.items) && `${refName(n.items)}List`;
  const data = n.properties?.data;
  if (!data || Object.keys(n.properties ?? {}).length !== 2 || !n.properties?.success) return undefined;
  if (refName(data)) return `${refName(data)}Response`;
  if (data.type === 'array') return refName(data.items) && `${refName(data.items)}ListResponse`;
  const inner = Object.entries(data.properties ?? {});
  if (inner.length === 1) return refName(inner[0]?.[1]) && `${refName(inner[0]?.[1])}Response`;
  const items = (data.properties?.items as { items?: unknown } | undefined)?.items;
  if (inner.length === 2 && data.properties?.meta && refName(items)) return `${refName(items)}PageResponse`;
  return undefined;
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
    // What the parameter is, on the parameter itself (where renderers and SDK generators read it).
    ...(typeof (sub as { description?: unknown }).description === 'string' ? { description: (sub as { description: string }).description } : {}),
    schema: components.use(sub),
  }));
}

type SchemaNode = {
  $ref?: string;
  type?: string;
  const?: unknown;
  enum?: unknown[];
  default?: unknown;
  anyOf?: SchemaNode[];
  items?: SchemaNode;
  required?: string[];
  properties?: Record<string, SchemaNode & { 'x-required-error'?: string }>;
  'x-required-error'?: unknown;
};

/** An error message as the examples module writes it, each `<name>` filled in (PLACEHOLDERS, else the name itself). */
const filled = (template: string) => template.replace(/<([^>]+)>/g, (_, name: string) => PLACEHOLDERS[name] ?? name);

/** The validation message of a request without its first required field, else one any text field can get. */
function validationExample(r: RouteSpec): { error: string; code: string; details: Array<{ field: string; rule: string }> } | undefined {
  const schemas = [r.body, r.query, r.headers].map((x) => x as SchemaNode | undefined);
  for (const s of schemas) {
    const name = (s?.required ?? []).find((n) => s?.properties?.[n]?.default === undefined);
    if (!s || !name) continue;
    const own = s.properties?.[name]?.['x-required-error'];
    const error = own ?? (typeof s['x-required-error'] === 'string' ? s['x-required-error'] : `${name} is required`);
    return { error, code: 'validation_error', details: [{ field: name, rule: 'required' }] };
  }
  for (const s of [...schemas, r.params as SchemaNode | undefined]) {
    const text = Object.entries(s?.properties ?? {}).find(([, sub]) => sub.type === 'string');
    if (text) return { error: `${text[0]} contains characters that are not allowed`, code: 'validation_error', details: [{ field: text[0], rule: 'text' }] };
  }
  return undefined;
}

/** An error an operation documents: its message (`<name>` for what varies), its code, the field it names. */
interface Documented {
  template: string;
  code: string;
  param?: string;
}

/** The errors every route of its kind answers with a status, besides the operation's own. */
function commonErrorsOf(r: RouteSpec, status: number): Documented[] {
  const one = (template: string, code: string): Documented => ({ template, code });
  switch (status) {
    case 400:
      return r.body ? [one(MESSAGES.invalidJson, C.invalidJson), one('Invalid request body', 'invalid_request')] : [];
    case 401:
      if (r.auth === 'bearer') {
        const message = r.bearerError ?? MESSAGES.invalidToken;
        return [one(message, C.tokenMissing), one(message, C.tokenInvalid), one(message, C.tokenExpired)];
      }
      if (r.auth === 'partner') return [one(MESSAGES.invalidPartner, C.invalidPartner)];
      if (r.auth === 'admin') return [one('Invalid admin token', C.invalidAdminToken)];
      if (r.auth === 'auditor')
        return [
          one(MESSAGES.invalidToken, C.auditorTokenMissing),
          ...[AUDIT_REFUSALS.tokenInvalid, AUDIT_REFUSALS.tokenExpired].map((t) => one(t.template, t.code)),
        ];
      return r.auth === 'signed' ? [one('Invalid webhook signature', 'invalid_webhook_signature')] : [];
    case 404:
      return switchable(r) ? [one(MESSAGES.notFound, C.notFound)] : [];
    case 413:
      return [one(MESSAGES.tooLarge, C.tooLarge)];
    case 415:
      return [one(MESSAGES.jsonOnly, C.unsupportedMediaType), one('Unsupported body encoding', C.unsupportedMediaType)];
    case 429:
      return [one(MESSAGES.tooManyRequests, C.rateLimited)];
    case 503:
      return [one(MESSAGES.unavailable, C.unavailable)];
    default:
      return [];
  }
}

/**
 * The operation's own errors of a status: its route's refusals (their catalogue's codes), then those its
 * examples list (a bare message is a validation message of its schemas, code `validation_error`).
 */
function ownErrorsOf(r: RouteSpec, status: number, listed: Array<string | readonly [string, string]>): Documented[] {
  const refusals = (r.refuses ?? [])
    .filter((x) => STATUS_OF[x.kind] === status)
    .map((x) => ({ template: x.template, code: x.code, ...(x.param ? { param: x.param } : {}) }));
  const own = listed.map((e) => (typeof e === 'string' ? { template: e, code: C.validation } : { template: e[0], code: e[1] }));
  return [...refusals, ...own];
}

/** The statuses of the route's refusals. */
const refusalStatuses = (r: RouteSpec) => (r.refuses ?? []).map((x) => STATUS_OF[x.kind]);

/**
 * The examples of one error status: each error the operation can answer with it (its template,
 * `<name>` for what varies, kept as `x-message` for the tests; its code), and a validation failure for 400.
 */
function errorExamples(r: RouteSpec, status: number, own: Documented[]): { examples: Record<string, unknown>; codes: string[] } {
  const examples: Record<string, unknown> = {};
  const codes = new Set<string>();
  const validation = status === 400 ? validationExample(r) : undefined;
  if (validation) {
    const value = { success: false, ...validation, requestId: SAMPLE.requestId, param: validation.details[0]?.field };
    examples.validation = { summary: validation.error, value, 'x-message': validation.error };
    codes.add(validation.code);
  }
  const seen = new Set<string>();
  for (const e of [...own, ...commonErrorsOf(r, status)]) {
    if (seen.has(`${e.code} ${e.template}`)) continue;
    seen.add(`${e.code} ${e.template}`);
    codes.add(e.code);
    let key = e.template
      .replace(/<[^>]+>/g, 'x')
      .replace(/[^A-Za-z0-9]+/g, '-')
      .replace(/^-|-$/g, '')
      .slice(0, 60);
    if (examples[key] !== undefined) key = `${key}-${e.code}`;
    const value = { success: false, error: filled(e.template), code: e.code, requestId: SAMPLE.requestId, ...(e.param ? { param: e.param } : {}) };
    examples[key] = { summary: filled(e.template), value, 'x-message': e.template };
  }
  return { examples, codes: [...codes] };
}

/** An example of a schema, made of the named schemas' examples; undefined where a value would be made up. */
function exampleOf(node: SchemaNode | undefined, schemas: Record<string, unknown>): unknown {
  if (!node) return undefined;
  const name = refName(node);
  if (name) return SCHEMA_EXAMPLES[name] ?? exampleOf(schemas[name] as SchemaNode, schemas);
  if (node.const !== undefined) return node.const;
  if (node.type === 'null') return null;
  if (node.anyOf) return node.anyOf.map((branch) => exampleOf(branch, schemas)).find((value) => value !== undefined);
  if (node.type === 'array') {
    const item = exampleOf(node.items, schemas);
    return item === undefined ? undefined : [item];
  }
  if (node.type !== 'object' || !node.properties) return undefined;
  const out: Record<string, unknown> = {};
  for (const [key, sub] of Object.entries(node.properties)) {
    const value = exampleOf(sub, schemas);
    if (value === undefined && (node.required ?? []).includes(key)) return undefined;
    if (value !== undefined) out[key] = value;
  }
  return out;
}

/** OpenAPI 3.1 of every route, from the same schemas that validate requests. */
/** A notification the service sends to partners: documented in the `webhooks` section of OpenAPI 3.1. */
export interface WebhookSpec {
  name: string;
  summary: string;
  body: unknown;
}

/** The credentials operations name (`security`), each described for the reference's authentication section. */
const SECURITY_SCHEMES = {
  partnerKey: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Api-Key',
    description: 'The partner’s API key, sent with X-Api-Secret on every operation before the user logs in (users, profile, KYC, login, sandbox).',
  },
  partnerSecret: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Api-Secret',
    description: 'The secret of the key pair, shown once when the pair is made. If it is lost or leaked, make a new pair and revoke the old key.',
  },
  userToken: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description:
      'The user’s access token from POST /api/v1/partner/auth/verify or /refresh (15 minutes), for everything after login: accounts, transactions, payouts, cards. It stops working at once when the user leaves `active`.',
  },
  adminToken: { type: 'http', scheme: 'bearer', description: 'The operator token (ADMIN_TOKEN); the operator API is off while it is unset.' },
  auditorToken: {
    type: 'http',
    scheme: 'bearer',
    description:
      'An auditor token (`ta_...`) from POST /admin/v1/auditors, for the read-only /audit/v1 routes only, until it expires or is revoked. Every use is recorded in the log.',
  },
  providerSignature: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Signature',
    description: 'The provider’s HMAC-SHA256 signature of the raw body with the callback secret; an unsigned or badly signed call is 401 and changes nothing.',
  },
  notificationSignature: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Webhook-Signature',
    description:
      'Sent by Tally on every notification: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" keyed with the endpoint secret>` (two v1 during a rotation); the Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature) carry the same proof in that scheme.',
  },
};

/** The reference's opening: what the service is, how to authenticate, what errors look like. */
const INFO_DESCRIPTION =
  'Partner financial and card service: users, identity, ledger, cards.\n\n' +
  '**Authentication.** Each operation takes exactly one kind of credential. Before the user logs in, the partner ' +
  'sends its key pair (`X-Api-Key` and `X-Api-Secret`); after login, the user’s access token ' +
  '(`Authorization: Bearer <accessToken>` from POST /api/v1/partner/auth/verify) identifies the user and the partner, ' +
  'with no key, secret or userId.\n\n' +
  '**Errors** are `{"success": false, "error": "<message>", "code": "<code>", "requestId": "<X-Request-Id>"}` with the exact messages ' +
  'shown in each operation’s examples; switch on `code` (each error response lists its codes), never on the message. ' +
  'A refused field is named in `param`; validation errors add `details`. Amounts are decimals (strings in accounts and transactions), never smallest units.';

/** The operation's stable id and short title (operation-ids.ts); a route without them is a programming error. */
function namesOf(r: RouteSpec): readonly [id: string, title: string] {
  const names = OPERATION_NAMES[`${r.method.toUpperCase()} ${r.path}`];
  if (!names) throw new Error(`OpenAPI: no operationId for ${r.method.toUpperCase()} ${r.path} (src/http/operation-ids.ts)`);
  return names;
}
const operationIdOf = (r: RouteSpec) => namesOf(r)[0];

/** The reference's navigation: what partners call first, the rest (sandbox, callbacks, operator, operations) apart. */
const TAG_GROUPS = [
  { name: 'Partner API', tags: ['Users', 'Login', 'Profile', 'KYC', 'Accounts', 'Transactions', 'Exchange', 'Cards', 'Webhooks'] },
  { name: 'Testing and integration', tags: ['Sandbox', 'Provider callbacks'] },
  { name: 'Operating Tally', tags: ['Operator', 'Operations'] },
  { name: 'Auditing', tags: ['Audit'] },
];

/** Every answer of the route: its declared statuses, those of its kind, and those its examples name, each with its examples. */
function responsesOf(r: RouteSpec, examples: OperationExamples, components: Components): Record<string, unknown> {
  const responses: Record<string, unknown> = {};
  const declared = r.responses as Record<number, { description: string; schema?: unknown }>;
  const own = examples.errors ?? {};
  const statuses = [...new Set([...Object.keys(declared), ...Object.keys(own)].map(Number).concat(commonErrors(r), refusalStatuses(r)))].sort((a, b) => a - b);
  const Id = operationIdOf(r).replace(/^./, (c) => c.toUpperCase());
  for (const status of statuses) {
    const res = declared[status];
    const schema = res?.schema ?? (status >= 400 ? ErrorBody : undefined);
    const description = res?.description ?? ERROR_TEXT[status] ?? 'Error';
    if (!schema) {
      responses[status] = { description };
      continue;
    }
    const media = mediaType(schema);
    const named =
      status < 400 && media === 'application/json'
        ? components.name(components.use(schema), examples.names?.response, `${Id}Response`)
        : components.use(schema);
    const content: Record<string, unknown> = { schema: named };
    let codes: string[] = [];
    if (examples.errorBodies?.[status] !== undefined) {
      content.example = examples.errorBodies[status];
      const code = (content.example as { code?: unknown }).code;
      if (typeof code === 'string') codes = [code];
    } else if (status >= 400) ({ examples: (content.examples as unknown), codes } = errorExamples(r, status, ownErrorsOf(r, status, own[status] ?? [])));
    else {
      const example = examples.response ?? exampleOf(named as SchemaNode, components.schemas);
      if (example !== undefined) content.example = example;
    }
    // The codes a client may switch on for this status, listed for people and for generated clients.
    const said = codes.length > 0 ? `${description}. Codes: ${codes.map((c) => `\`${c}\``).join(', ')}` : description;
    responses[status] = { description: said, ...(codes.length > 0 ? { 'x-error-codes': codes } : {}), content: { [media]: content } };
  }
  return responses;
}

/** The route's parameters, each with its example (the operation's own, else the shared one of its name). */
function parametersOf(r: RouteSpec, examples: OperationExamples, components: Components) {
  const all = [...parameters(r.params, 'path', components), ...parameters(r.query, 'query', components), ...parameters(r.headers, 'header', components)];
  return all.map((p) => {
    const example = examples.parameters?.[p.name] ?? PARAMETER_EXAMPLES[p.name];
    return example === undefined ? p : { ...p, example };
  });
}

function operationOf(r: RouteSpec, components: Components, errorRef: unknown): Record<string, unknown> {
  const examples = OPERATIONS[`${r.method.toUpperCase()} ${r.path}`] ?? {};
  const responses = responsesOf(r, examples, components);
  responses.default = {
    description: 'Unexpected error',
    'x-error-codes': [C.internal],
    content: { 'application/json': { schema: errorRef, example: { success: false, error: MESSAGES.internal, code: C.internal, requestId: SAMPLE.requestId } } },
  };
  const operation: Record<string, unknown> = {
    operationId: operationIdOf(r),
    // The sidebar's entry is the short title; the route's own sentence (and more, where it has it) describes it.
    summary: namesOf(r)[1],
    description: r.description ? `${r.summary}\n\n${r.description}` : r.summary,
    tags: [r.tag],
    security: SECURITY[r.auth],
    'x-credentials': r.auth,
    parameters: parametersOf(r, examples, components),
    responses,
  };
  if (r.deprecated) operation.deprecated = true;
  if (r.body) {
    const Id = operationIdOf(r).replace(/^./, (c) => c.toUpperCase());
    const schema = components.name(components.use(r.body), examples.names?.request, `${Id}Request`);
    const content: Record<string, unknown> = { schema };
    if (examples.request !== undefined) content.example = examples.request;
    operation.requestBody = { required: true, content: { 'application/json': content } };
  }
  return operation;
}

export function buildOpenApi(routes: RouteSpec[], serverUrl: string, webhooks: WebhookSpec[] = []) {
  const paths: Record<string, Record<string, unknown>> = {};
  const components = new Components();
  const errorRef = components.use(ErrorBody);
  for (const r of routes) {
    paths[r.path] ??= {};
    (paths[r.path] as Record<string, unknown>)[r.method] = operationOf(r, components, errorRef);
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
    info: {
      title: 'Tally partner API',
      version: '1.0.0',
      description: INFO_DESCRIPTION,
      // Partners reach us through their integration contact; the reference is where this document is served.
      contact: { name: 'Tally partner integration', url: `${serverUrl.replace(/\/$/, '')}/docs` },
    },
    servers: [{ url: serverUrl }],
    tags: TAGS.filter((t) => routes.some((r) => r.tag === t.name)),
    'x-tagGroups': TAG_GROUPS.map((g) => ({ ...g, tags: g.tags.filter((t) => routes.some((r) => r.tag === t)) })).filter((g) => g.tags.length > 0),
    components: {
      schemas: Object.fromEntries(
        Object.entries(components.schemas)
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([name, schema]) => [name, SCHEMA_EXAMPLES[name] === undefined ? schema : { ...(schema as object), examples: [SCHEMA_EXAMPLES[name]] }]),
      ),
      securitySchemes: SECURITY_SCHEMES,
    },
    paths,
  };
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Where the reference renderer's script is served, from the @scalar/api-reference package itself. */
export const REFERENCE_SCRIPT_PATH = '/docs/reference.js';

let script: { bytes: Buffer; version: string } | undefined;

/** The renderer's browser bundle, read once from the installed package (nothing from a CDN at run time). */
export function referenceScript(): Buffer {
  return loadedScript().bytes;
}

/** The bundle and a hash of it: the page names the script by it, so a browser may keep it for good. */
function loadedScript(): { bytes: Buffer; version: string } {
  if (!script) {
    const entry = createRequire(__filename).resolve('@scalar/api-reference');
    const bytes = readFileSync(join(dirname(entry), 'browser', 'standalone.js'));
    script = { bytes, version: createHash('sha256').update(bytes).digest('hex').slice(0, 16) };
  }
  return script;
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
<script src="${REFERENCE_SCRIPT_PATH}?v=${loadedScript().version}"></script></body></html>`;
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
