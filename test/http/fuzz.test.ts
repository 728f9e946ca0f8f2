import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import fc from 'fast-check';
import { KYC_STATUSES } from '../../src/domain/identity/kyc-statuses';
import { allRoutes } from '../../src/http/app';
import type { RouteSpec } from '../../src/platform/http/route';
import { signPayload } from '../../src/providers/signature';
import { ADMIN_TOKEN, lastWrittenPosition } from '../support/app';
import { customer } from '../support/ledger';
import {
  type Answer,
  asCurl,
  buildWorld,
  fillPath,
  type LoggedApp,
  pathParamNames,
  routeKey,
  type SentRequest,
  sendRaw,
  ROUTES_TXT,
  servedContractRoutes,
  startLoggedApp,
  type World,
  writtenSince,
} from '../support/route-table';
import {
  asText,
  deepText,
  type Hints,
  hugeString,
  invalid,
  jsonText,
  NUMBERISH_TEXT,
  nastyString,
  nastyValue,
  percentEncode,
  RAW_PERCENT,
  RawJson,
  type Schema,
  valid,
} from '../support/schema-gen';

/**
 * Proof on every route, generated (issue 13, item 4): walks the route table and, from each route's
 * own schemas, sends valid requests and mutants of them (text from all of Unicode with U+0000, lone
 * surrogates and C0/C1 controls; numbers at the edges; missing, extra and mistyped fields; huge and
 * deep bodies; path parameters of every shape; other content types; non-finite numbers in queries;
 * X-Forwarded-For values that are no address, behind a trusted proxy; signatures longer in UTF-8 bytes
 * than in characters), with the credentials the route takes so the handlers are reached. Never a 5xx; never a write after a 4xx (the log's head does not
 * move across it: requests go one at a time); afterwards every projection has caught up.
 *
 * Seeded: FUZZ_SEED=<n> replays a run (the seed is printed); FUZZ_RUNS=<n> requests per route
 * (default 16) for longer runs.
 */

const SEED = process.env.FUZZ_SEED !== undefined ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);
const RUNS = Math.max(8, Number(process.env.FUZZ_RUNS ?? 16));
/** Each route gets at least this many requests, or the coverage test fails. */
const MIN_PER_ROUTE = 8;

type Family = 'valid' | 'body' | 'query' | 'params' | 'raw' | 'headers' | 'signed' | 'forwarded' | 'signature';

interface Draft {
  family: Family;
  note: string;
  params: Record<string, string>;
  query: string;
  headers: Record<string, string>;
  body?: string | Buffer;
  /** Sign the body with the route's provider secret just before sending (signed routes). */
  sign?: boolean;
}

interface Finding {
  kind: '5xx' | 'write after 4xx' | 'no answer' | 'forwarded value echoed';
  route: string;
  family: Family;
  note: string;
  request: SentRequest;
  status: number;
  answer: string;
  written?: string[];
  logs?: unknown[];
}

/**
 * Known, reported findings in src that are not fixed yet: each is matched against the finding's
 * route, request and log, and printed on every run. Empty: every finding fails the test.
 */
const KNOWN_FINDINGS: Array<{ kind: Finding['kind']; route: RegExp; match: RegExp; report: string }> = [];

/**
 * Writes that docs/decisions.md makes part of a 4xx answer, by route and the exact events written; any
 * other write after a 4xx is a finding. "Login and tokens": 5 wrong tries burn a code (so a wrong try
 * is recorded: 401 + LoginCodeAttemptFailed); a spent refresh token presented again revokes the whole
 * session (reuse detection: 401 + SessionRevoked).
 */
const DECIDED_WRITES: Array<{ route: string; status: number; events: RegExp; why: string }> = [
  { route: 'POST /api/v1/partner/auth/verify', status: 401, events: /^login-[0-9a-f-]{36}:LoginCodeAttemptFailed$/, why: '5 wrong tries burn the code' },
  { route: 'POST /api/v1/partner/auth/refresh', status: 401, events: /^session-[0-9a-f-]{36}:SessionRevoked$/, why: 'refresh token reuse revokes the session' },
  {
    route: 'POST /api/v1/user/payout',
    status: 400,
    events: /^txn-[0-9a-f-]{36}:TransactionRejected$/,
    why: 'a payout the ledger refuses (limits, balance) keeps that first answer under its transactionId',
  },
  ...[
    'GET /audit/v1/streams/{stream}',
    'GET /audit/v1/events',
    'GET /audit/v1/accounts/{accountId}/balance',
    'GET /audit/v1/checkpoints',
    'GET /audit/v1/checkpoints/{id}',
    'GET /audit/v1/checkpoints/{id}/proof',
  ].flatMap((route) =>
    [400, 404].map((status) => ({
      route,
      status,
      events: /^auditor-[0-9a-f-]{36}:AuditorUsed$/,
      why: 'every request an auditor token is accepted for is recorded before the route answers, refused ones included',
    })),
  ),
];

/** An auditor token of the fuzz's app (made in its before hook), for the /audit/v1 routes. */
let auditorToken = '';

const schemaOf = (s: unknown) => s as Schema | undefined;

/** Query numbers no finite type holds: ajv coerces them to numbers and skips its range checks for them. */
const NON_FINITE_TEXT = ['Infinity', '-Infinity', '1e400', '-1e400', 'NaN', '+Infinity'];

/**
 * X-Forwarded-For values that are no IP address (the fuzz app trusts its loopback proxy, so they
 * reach the client-address resolver): markup, a long header, C1 and other non-ASCII bytes.
 */
const ECHO_CHECKED = ['<script>alert(1)</script>', 'x'.repeat(8_000), '1.2.3.4.5', '::ffff:999.1.1.1'];
const forwardedFor: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...ECHO_CHECKED, 'é\u0085', 'unknown', '127.0.0.1, <b>'),
  nastyString.map((v) => [...v].filter((c) => /^[\x20-\x7e\xa0-\xff]$/.test(c)).join('') || '-'),
);

/**
 * Signature text as long in characters as a real one once the service reads the header (latin1:
 * each byte one character) but not in UTF-8 bytes. A client sends U+0080-U+00FF (the most a header
 * may carry) as two bytes each, so 22 of them arrive as the 44 characters of a Standard Webhooks
 * signature, 32 as the 64 of a hex one.
 */
const multiByteText: fc.Arbitrary<string> = fc.oneof(
  fc.array(fc.integer({ min: 0x80, max: 0xff }), { minLength: 22, maxLength: 22 }).map((cs) => String.fromCodePoint(...cs)),
  fc.array(fc.integer({ min: 0x80, max: 0xff }), { minLength: 32, maxLength: 32 }).map((cs) => String.fromCodePoint(...cs)),
  fc.constantFrom(`${'A'.repeat(42)}é`, `${'0'.repeat(62)}é`, 'é'.repeat(8)),
);

const INBOX_PATH = '/sandbox/v1/webhook-inbox';
/** A delivery of the world's partner to the sandbox inbox: the inbox then reaches its signature check. */
let inboxDeliveryId = '';

/** Webhook envelopes of the providers, as schemas, so the generator can make and break them. */
function webhookSchema(path: string): Schema {
  const str: Schema = { type: 'string', minLength: 1, maxLength: 40 };
  const iso: Schema = { type: 'string', format: 'date-time' };
  const envelope = (types: string[], data: Schema): Schema => ({
    type: 'object',
    required: ['id', 'type', 'createdAt', 'data'],
    properties: { id: str, type: { type: 'string', enum: types }, createdAt: iso, data },
  });
  if (path.includes('/identity/'))
    return envelope(
      KYC_STATUSES.map((s) => `inquiry.${s}`),
      {
        type: 'object',
        required: ['inquiryId', 'status'],
        properties: {
          inquiryId: str,
          referenceId: str,
          status: { type: 'string', enum: [...KYC_STATUSES] },
          snapshot: {
            type: 'object',
            properties: {
              inquiryId: str,
              status: { type: 'string', enum: [...KYC_STATUSES] },
              riskLevel: str,
              riskScore: { type: 'number' },
              reasons: { type: 'array', items: str },
              document: { type: 'object', additionalProperties: true, properties: {} },
              updatedAt: iso,
            },
          },
        },
      },
    );
  const kind = path.includes('/payments/') ? 'payment' : 'payout';
  return envelope(kind === 'payment' ? ['payment.confirmed', 'payment.failed'] : ['payout.settled', 'payout.failed'], {
    type: 'object',
    required: ['paymentId', 'transactionId'],
    properties: { paymentId: str, transactionId: { type: 'string', format: 'uuid' }, amount: str, currency: str, reason: str },
  });
}

const webhookSecretName = (path: string) => path.replace('/webhooks/', '');
const webhookHeader = (path: string) => (path.endsWith('/persona') ? 'persona-signature' : 'x-signature');

/** Real things a field can name, so generated requests get past "not found" into the handlers. */
function hintsFor(route: RouteSpec, w: World): Hints {
  const admin = route.auth === 'admin';
  const pick = (...values: unknown[]) => fc.constantFrom(...values);
  return (name) => {
    switch (name) {
      case 'userId':
        // The operator may suspend or ban only the fuzzer's victims (and the other partner's user).
        return admin ? pick(...w.victims, w.carol.id) : pick(w.ada.id, w.bob.id, w.carol.id, w.suspended.id, ...w.victims);
      case 'id':
        if (route.path.startsWith('/admin/v1/partners')) return pick(w.spare.id, w.globex.id);
        return pick(w.adaDeposit, w.adaPendingDeposit, w.adaPayout, w.bobTransfer, w.carolDeposit, w.adaDeposit.toUpperCase());
      case 'apiKey':
        return pick(w.spare.apiKey, w.globex.apiKey);
      case 'name':
        return route.path.includes('/projections/') ? pick(...w.projections) : undefined;
      case 'inquiryId':
        return pick(w.adaInquiryId, w.carolInquiryId);
      case 'transactionId':
        return route.path.startsWith('/api/v1/user/payout')
          ? pick(w.adaPayout, randomUUID())
          : pick(w.adaPendingDeposit, w.adaDeposit, w.carolDeposit, w.adaPayout);
      case 'paymentId':
        return pick(w.adaPendingPaymentId, w.adaPaymentId, w.adaPayoutPaymentId, w.carolPaymentId);
      case 'accountId':
      case 'toAccountId':
      case 'fromAccountId':
        return pick(w.ada.accountId, w.bob.accountId, w.carol.accountId, String(w.ada.accountId));
      case 'email':
      case 'to':
        return pick(w.ada.email, w.bob.email, w.carol.email, w.ada.email.toUpperCase(), ` ${w.bob.email} `);
      case 'refreshToken':
        return pick(w.refreshOfBob, `rt_${randomUUID()}_${'A'.repeat(43)}`);
      case 'code':
        return pick('000000', '123456');
      case 'amount':
      case 'fromAmount':
        return pick(1, '1', 0.5, '0.01', 1000, '2500.5', 10);
      case 'asset':
      case 'currency':
      case 'fromAsset':
      case 'toAsset':
        return pick('USDC', 'COP', 'USD', 'EUR', 'BTC', 'usdc');
      case 'provider':
        return pick('mock');
      case 'x-idempotency-key':
        return fc.uuid();
      default:
        return undefined;
    }
  };
}

const sample = <T>(arb: fc.Arbitrary<T>, seed: number, n: number): T[] => (n <= 0 ? [] : fc.sample(arb, { seed, numRuns: n }));

/** A query string of generated values (each value percent-encoded, lone surrogates included). */
function queryText(value: unknown): string {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || value instanceof RawJson) return percentEncode(asText(value));
  const parts: string[] = [];
  for (const [k, v] of Object.entries(value)) {
    if (v === undefined) continue;
    if (Array.isArray(v)) for (const item of v) parts.push(`${percentEncode(k)}=${percentEncode(asText(item))}`);
    else parts.push(`${percentEncode(k)}=${percentEncode(asText(v))}`);
  }
  return parts.join('&');
}

/** Path parameter texts of every shape (already percent-encoded, never empty). */
const paramShape: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: nastyString.filter((s) => s.length > 0).map(percentEncode) },
  { weight: 2, arbitrary: fc.constantFrom(...RAW_PERCENT) },
  { weight: 1, arbitrary: fc.constantFrom(...NUMBERISH_TEXT).map(percentEncode) },
  { weight: 1, arbitrary: fc.uuid() },
  {
    weight: 1,
    arbitrary: fc
      .uuid()
      .map((u) => `{${u.toUpperCase()}}`)
      .map(percentEncode),
  },
  { weight: 1, arbitrary: fc.constantFrom('..', '.', '%2E%2E', 'a%2Fb', '__proto__', 'constructor', 'null', 'undefined', 'a;b', 'a,b', '*', '~') },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 5_000 }).map((n) => 'a'.repeat(n)) },
);

const CONTENT_TYPES = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/json; charset=latin1',
  'application/json; charset=utf-16',
  'application/merge-patch+json',
  'application/JSON',
  'application/json;;',
  'json',
  '*/*',
];

/** Body texts that are not what any route takes: broken JSON, other shapes, deep, huge, odd bytes. */
const rawBody: fc.Arbitrary<{ note: string; body: string | Buffer; contentType?: string }> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc
      .constantFrom(
        '',
        '{',
        '}',
        '{"a":}',
        '{"a":1,}',
        "{'a':1}",
        'nul',
        'null',
        'true',
        '1',
        '-0',
        '1e400',
        '"text"',
        '[]',
        '[{}]',
        '{}',
        '\ufeff{}',
        '{"a":1,"a":2}',
        '{"__proto__":{"isAdmin":true}}',
        '{"constructor":{"prototype":{"isAdmin":true}}}',
        '{"a":"\u0000"}',
        '{"a":"\u0001\u001f"}',
        '{"a":"\\ud800"}',
        '{"\\u0000":1}',
        '{"a":NaN}',
        '{"a":Infinity}',
        '{"a":0x10}',
        '{"a":01}',
        '{"a":1}garbage',
        '{"a":1}{"b":2}',
        ' \n\t{} \n',
      )
      .map((body) => ({ note: `raw ${JSON.stringify(body).slice(0, 60)}`, body })),
  },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.constantFrom(17, 100, 1_000, 5_000, 20_000, 49_000), fc.constantFrom<'array' | 'object'>('array', 'object'), fc.boolean())
      .map(([depth, kind, wrapped]) => ({
        note: `deep ${kind} ${depth}${wrapped ? ' inside an object' : ''}`,
        body: wrapped ? `{"x":${deepText(depth, kind)}}` : deepText(depth, kind),
      })),
  },
  {
    weight: 2,
    arbitrary: hugeString.map((s) => {
      const body = `{"x":${JSON.stringify(s)}}`;
      return { note: `huge ${body.length} bytes`, body };
    }),
  },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 2_000, max: 12_000 }).map((n) => ({
      note: `${n} keys`,
      body: `{${Array.from({ length: n }, (_, i) => `"k${i}":${i}`).join(',')}}`,
    })),
  },
  {
    weight: 1,
    arbitrary: fc.uint8Array({ minLength: 1, maxLength: 64 }).map((bytes) => ({ note: 'random bytes', body: Buffer.from(bytes) })),
  },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(
        [0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d],
        [0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x7d],
        [0xc0, 0x80],
      )
      .map((bytes) => ({ note: 'invalid UTF-8', body: Buffer.from(bytes) })),
  },
  {
    weight: 2,
    arbitrary: fc.tuple(fc.constantFrom(...CONTENT_TYPES), fc.constantFrom('{"a":1}', 'a=1&b=%00', '')).map(([contentType, body]) => ({
      note: `content-type ${contentType}`,
      body,
      contentType,
    })),
  },
);

/** The generated requests of one route, family by family. */
function draftsFor(route: RouteSpec, w: World, seed: number): Draft[] {
  const hints = hintsFor(route, w);
  const paramNames = pathParamNames(route.path);
  const bodySchema = route.auth === 'signed' ? webhookSchema(route.path) : schemaOf(route.body);
  const querySchema = schemaOf(route.query);
  const headerSchema = schemaOf(route.headers);
  const hasBody = route.method !== 'get' && route.method !== 'delete';
  const paramsSchema: Schema = schemaOf(route.params) ?? { type: 'object', properties: {}, required: [] };
  const validParams = valid(paramsSchema, hints).map((p) => {
    const out: Record<string, string> = {};
    for (const name of paramNames) out[name] = percentEncode(asText((p as Record<string, unknown>)[name] ?? 'x')) || 'x';
    return out;
  });
  const validQuery = querySchema ? valid(querySchema, hints).map(queryText) : fc.constant('');
  const validHeaders = headerSchema
    ? valid(headerSchema, hints).map((h) => {
        const out: Record<string, string> = {};
        for (const [k, v] of Object.entries(h as Record<string, unknown>)) if (v !== undefined) out[k] = asText(v);
        return out;
      })
    : fc.constant({} as Record<string, string>);
  const validBody = bodySchema ? valid(bodySchema, hints).map(jsonText) : fc.constant(undefined);
  const base = fc.record({ params: validParams, query: validQuery, headers: validHeaders, body: validBody });
  const json = (headers: Record<string, string>) => ({ 'Content-Type': 'application/json', ...headers });
  const signed = route.auth === 'signed';

  const families: Array<[Family, number, fc.Arbitrary<Draft>]> = [];
  families.push([
    'valid',
    3,
    base.map((b) => ({
      family: 'valid',
      note: 'valid by the schemas',
      params: b.params,
      query: b.query,
      headers: hasBody && b.body !== undefined ? json(b.headers) : b.headers,
      body: hasBody ? b.body : undefined,
      sign: signed,
    })),
  ]);
  if (bodySchema && hasBody)
    families.push([
      'body',
      4,
      fc.tuple(base, invalid(bodySchema, hints), fc.boolean()).map(([b, m, sign]) => ({
        family: 'body',
        note: `body mutant (${m.mutation})`,
        params: b.params,
        query: b.query,
        headers: json(b.headers),
        body: jsonText(m.value),
        sign: signed && sign,
      })),
    ]);
  if (querySchema)
    families.push([
      'query',
      3,
      fc
        .tuple(
          base,
          fc.oneof(
            invalid(querySchema, hints).map((m) => ({ note: `query mutant (${m.mutation})`, text: queryText(m.value) })),
            fc
              .tuple(fc.constantFrom(...Object.keys(querySchema.properties ?? {})), fc.constantFrom(...RAW_PERCENT, ...NUMBERISH_TEXT.map(percentEncode)))
              .map(([k, v]) => ({ note: `query ${k} raw`, text: `${k}=${v}` })),
            fc.constantFrom(...Object.keys(querySchema.properties ?? {})).map((k) => ({ note: `query ${k} twice`, text: `${k}=1&${k}=2` })),
            fc.constantFrom(...Object.keys(querySchema.properties ?? {})).map((k) => ({ note: `query ${k}[] bracket`, text: `${k}[a]=1&${k}[]=2` })),
          ),
        )
        .map(([b, q]) => ({
          family: 'query',
          note: q.note,
          params: b.params,
          query: `${b.query}${b.query && q.text ? '&' : ''}${q.text}`,
          headers: b.headers,
        })),
    ]);
  const numericKeys = Object.entries(querySchema?.properties ?? {})
    .filter(([, p]) => p.type === 'integer' || p.type === 'number')
    .map(([k]) => k);
  if (numericKeys.length)
    families.push([
      'query',
      2,
      fc.tuple(base, fc.constantFrom(...numericKeys), fc.constantFrom(...NON_FINITE_TEXT)).map(([b, k, v]) => ({
        family: 'query',
        note: `query ${k}=${v} (not finite)`,
        params: b.params,
        // In place of the valid value (a key sent twice is an array, refused before its value is read).
        query: [...b.query.split('&').filter((pair) => pair && pair.split('=')[0] !== k), `${k}=${encodeURIComponent(v)}`].join('&'),
        headers: b.headers,
      })),
    ]);
  if (paramNames.length)
    families.push([
      'params',
      4,
      fc.tuple(base, fc.constantFrom(...paramNames), paramShape).map(([b, name, shape]) => ({
        family: 'params',
        note: `path ${name} shape`,
        params: { ...b.params, [name]: shape },
        query: b.query,
        headers: hasBody && b.body !== undefined ? json(b.headers) : b.headers,
        body: hasBody ? b.body : undefined,
      })),
    ]);
  if (hasBody)
    families.push([
      'raw',
      3,
      fc.tuple(base, rawBody, fc.boolean()).map(([b, raw, sign]) => ({
        family: 'raw',
        note: raw.note,
        params: b.params,
        query: b.query,
        headers: { 'Content-Type': raw.contentType ?? 'application/json', ...b.headers },
        body: raw.body,
        sign: signed && sign,
      })),
    ]);
  if (headerSchema)
    families.push([
      'headers',
      2,
      fc
        .tuple(base, fc.constantFrom(...Object.keys(headerSchema.properties ?? {})), fc.oneof(nastyString, fc.constantFrom(...NUMBERISH_TEXT)))
        .map(([b, name, value]) => ({
          family: 'headers',
          // Node sends header values as latin1 and refuses control characters in them.
          note: `header ${name}`,
          params: b.params,
          query: b.query,
          headers: json({ ...b.headers, [name]: [...value].filter((c) => /^[\x20-\x7e\xa0-\xff]$/.test(c)).join('') || '-' }),
          body: b.body,
        })),
    ]);
  if (signed)
    families.push([
      'signed',
      3,
      fc
        .tuple(base, nastyValue, fc.constantFrom('garbage', 't=1,v1=00', 't=abc,v1=zz', 'v1=', `t=${'9'.repeat(20)},v1=${'a'.repeat(64)}`))
        .map(([b, junk, header]) => ({
          family: 'signed',
          note: `badly signed (${header.slice(0, 12)})`,
          params: b.params,
          query: b.query,
          headers: json({ [webhookHeader(route.path)]: header }),
          body: b.body ?? jsonText(junk),
        })),
    ]);
  families.push([
    'forwarded',
    2,
    fc.tuple(base, forwardedFor).map(([b, value]) => ({
      family: 'forwarded',
      note: `X-Forwarded-For ${value.slice(0, 16)}`,
      params: b.params,
      query: b.query,
      headers: { ...(hasBody && b.body !== undefined ? json(b.headers) : b.headers), 'X-Forwarded-For': value },
      body: hasBody ? b.body : undefined,
    })),
  ]);
  const inbox = route.method === 'post' && route.path === INBOX_PATH;
  if (signed || inbox)
    families.push([
      'signature',
      2,
      fc.tuple(base, multiByteText).map(([b, wide]) => ({
        family: 'signature',
        note: `multi-byte signature (${wide.length} characters)`,
        params: b.params,
        query: b.query,
        headers: json(
          inbox
            ? { 'webhook-id': inboxDeliveryId, 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': `v1,${wide}` }
            : { [webhookHeader(route.path)]: `t=${Math.floor(Date.now() / 1000)},v1=${wide}` },
        ),
        body: b.body ?? '{"id":"x"}',
      })),
    ]);
  const total = families.reduce((n, [, weight]) => n + weight, 0);
  const drafts: Draft[] = [];
  families.forEach(([, weight, arb], i) => {
    drafts.push(...sample(arb, seed * 31 + i, Math.max(1, Math.ceil((RUNS * weight) / total))));
  });
  return drafts;
}

function credentialsFor(route: RouteSpec, w: World): Record<string, string> {
  switch (route.auth) {
    case 'partner':
      return w.acme.headers;
    case 'bearer':
      return w.ada.bearer;
    case 'admin':
      return { Authorization: `Bearer ${ADMIN_TOKEN}` };
    case 'auditor':
      return { Authorization: `Bearer ${auditorToken}` };
    default:
      // /metrics is public but behind the operator token when one is set.
      return route.responses[401] ? { Authorization: `Bearer ${ADMIN_TOKEN}` } : {};
  }
}

describe(`fuzz: every route from its own schemas (FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS})`, function () {
  this.timeout(Math.max(60_000, RUNS * 4_000));
  const routes = allRoutes();
  let app: LoggedApp;
  let w: World;
  const tried = new Map<string, number>();
  const byStatus = new Map<number, number>();
  const byFamily = new Map<string, number>();
  const findings: Finding[] = [];
  let fiveXx = 0;
  let writesAfter4xx = 0;
  let decidedWrites = 0;
  let total = 0;
  let started = 0;

  before(async () => {
    started = Date.now();
    console.log(`    fuzz seed ${SEED} (replay: FUZZ_SEED=${SEED}), ${RUNS} requests per route (FUZZ_RUNS)`);
    // A trusted proxy in front (loopback), so X-Forwarded-For reaches the client-address resolver.
    app = await startLoggedApp({ trustProxy: 'loopback' });
    w = await buildWorld(app);
    inboxDeliveryId = await deliveryToInbox(app, w);
    const auditor = await app.http
      .post('/admin/v1/auditors')
      .set({ Authorization: `Bearer ${ADMIN_TOKEN}` })
      .send({ name: 'Fuzz auditors', expiresAt: new Date(Date.now() + 86_400_000).toISOString() });
    expect(auditor.status, auditor.text).to.equal(201);
    auditorToken = auditor.body.data.token;
  });
  after(() => app?.close());

  async function fire(route: RouteSpec, draft: Draft): Promise<void> {
    const query = draft.query ? `?${draft.query}` : '';
    const request: SentRequest = {
      method: route.method,
      url: `${fillPath(route.path, draft.params)}${query}`,
      headers: { ...credentialsFor(route, w), ...draft.headers },
      body: typeof draft.body === 'string' || draft.body === undefined ? draft.body : `<bytes ${draft.body.toString('hex')}>`,
    };
    if (draft.sign && typeof draft.body === 'string') {
      const secret = app.tally.keys.webhooks[webhookSecretName(route.path)];
      if (secret) request.headers[webhookHeader(route.path)] = signPayload(secret, draft.body);
    }
    const logsBefore = app.problems.length;
    // The last event written, not the readers' head: an open transaction can hold the head below a write answered before.
    const before = await lastWrittenPosition(app);
    let answer: Answer;
    try {
      // Buffers go as bytes (invalid UTF-8 included), everything else as text.
      answer = Buffer.isBuffer(draft.body) ? await sendBytes(request, draft.body) : await sendRaw(app.http, request);
    } catch (error) {
      answer = { status: 0, text: String(error), body: null };
    }
    const after = await lastWrittenPosition(app);
    total++;
    tried.set(routeKey(route), (tried.get(routeKey(route)) ?? 0) + 1);
    byStatus.set(answer.status, (byStatus.get(answer.status) ?? 0) + 1);
    const fam = `${draft.family} ${Math.floor(answer.status / 100)}xx`;
    byFamily.set(fam, (byFamily.get(fam) ?? 0) + 1);
    const base = { route: routeKey(route), family: draft.family, note: draft.note, request, status: answer.status, answer: answer.text.slice(0, 500) };
    if (answer.status === 0) findings.push({ ...base, kind: 'no answer' });
    // A forwarded value that is no IP address is never taken for the client's address, so never shown back.
    const forwarded = draft.family === 'forwarded' ? draft.headers['X-Forwarded-For'] : undefined;
    if (forwarded && ECHO_CHECKED.includes(forwarded) && answer.status < 300 && answer.text.includes(forwarded))
      findings.push({ ...base, kind: 'forwarded value echoed' });
    if (answer.status >= 500) {
      fiveXx++;
      findings.push({
        ...base,
        kind: '5xx',
        logs: app.problems.slice(logsBefore).map((p) => ({ msg: p.msg, err: (p.err as { stack?: string })?.stack ?? p.err })),
      });
    }
    if (answer.status >= 400 && answer.status < 500 && after !== before) {
      const written = await writtenSince(app, before);
      const decided = DECIDED_WRITES.find((d) => d.route === base.route && d.status === answer.status && written.every((e) => d.events.test(e)));
      if (decided) decidedWrites++;
      else {
        writesAfter4xx++;
        findings.push({ ...base, kind: 'write after 4xx', written });
      }
    }
  }

  /** Points the world's partner at the sandbox inbox and waits for one of its deliveries. */
  async function deliveryToInbox(logged: LoggedApp, world: World): Promise<string> {
    const put = await logged.http
      .put('/api/v1/partner/webhooks')
      .set(world.acme.headers)
      .send({ url: `${logged.url}${INBOX_PATH}` });
    expect(put.status, JSON.stringify(put.body)).to.equal(200);
    // A customer of its own (not one of the world's) makes a notification: a KYC decision.
    await customer(logged.http, world.acme);
    const deadline = Date.now() + 20_000;
    for (;;) {
      const [row] = await logged.tally.sql.query<{ id: string }>('SELECT id::text FROM webhook_deliveries WHERE partner_id = $1 LIMIT 1', [world.acme.id]);
      if (row) return row.id;
      if (Date.now() > deadline) throw new Error('no delivery to the sandbox inbox');
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async function sendBytes(request: SentRequest, bytes: Buffer): Promise<Answer> {
    let test = app.http[request.method as 'post'](request.url);
    for (const [k, v] of Object.entries(request.headers)) test = test.set(k, v);
    const res = await test.send(bytes);
    return { status: res.status, text: res.text ?? '', body: res.body };
  }

  routes.forEach((route, index) => {
    it(`${routeKey(route)} (${route.auth})`, async () => {
      const drafts = draftsFor(route, w, SEED + index);
      for (const draft of drafts) await fire(route, draft);
      const mine = findings.filter((f) => f.route === routeKey(route) && !isKnown(f));
      expect(mine.map(describeFinding), `findings on ${routeKey(route)}`).to.deep.equal([]);
    });
  });

  const isKnown = (f: Finding) =>
    KNOWN_FINDINGS.some(
      (k) => k.kind === f.kind && k.route.test(f.route) && k.match.test(`${f.note} ${f.request.url} ${f.request.body ?? ''} ${JSON.stringify(f.logs ?? [])}`),
    );
  const describeFinding = (f: Finding) =>
    `${f.kind}: ${f.route} [${f.family}: ${f.note}] -> ${f.status} ${f.answer}\n      ${asCurl(f.request)}${f.written ? `\n      written: ${f.written.join(', ')}` : ''}${
      f.logs?.length ? `\n      log: ${JSON.stringify(f.logs).slice(0, 1500)}` : ''
    }`;

  it('leaves every projection caught up with the log, none stuck', async () => {
    const head = await lastWrittenPosition(app);
    const caughtUp = await app.tally.engine.waitFor(head, { timeoutMs: 20_000 });
    expect(caughtUp, JSON.stringify(await app.tally.engine.status())).to.equal(true);
    const ready = await app.http.get('/readyz');
    expect(ready.status).to.equal(200);
  });

  it('covered every route of the table (at least MIN_PER_ROUTE requests each), and prints the figures', () => {
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    console.log(
      `    fuzz figures (seed ${SEED}): ${total} requests in ${seconds} s, 5xx seen: ${fiveXx}, writes after a 4xx: ${writesAfter4xx} (and ${decidedWrites} decided ones: ${DECIDED_WRITES.map((d) => `${d.route} ${d.status}, ${d.why}`).join('; ')})`,
    );
    console.log(
      `    statuses: ${[...byStatus.entries()]
        .sort((a, b) => a[0] - b[0])
        .map(([s, n]) => `${s}x${n}`)
        .join(' ')}`,
    );
    console.log(
      `    by family: ${[...byFamily.entries()]
        .sort()
        .map(([f, n]) => `${f}=${n}`)
        .join(', ')}`,
    );
    console.log(`    per route: ${routes.map((r) => `${routeKey(r)}=${tried.get(routeKey(r)) ?? 0}`).join(', ')}`);
    if (KNOWN_FINDINGS.length)
      console.log(`    KNOWN_FINDINGS (reported, not fixed here): ${KNOWN_FINDINGS.map((k) => `${k.route} ${k.kind}: ${k.report}`).join('; ')}`);
    const known = findings.filter(isKnown);
    if (known.length) console.log(`    known findings seen: ${known.length}\n${known.map(describeFinding).join('\n')}`);
    const uncovered = routes.filter((r) => (tried.get(routeKey(r)) ?? 0) < MIN_PER_ROUTE).map(routeKey);
    expect(uncovered, `routes with fewer than ${MIN_PER_ROUTE} fuzz requests`).to.deep.equal([]);
  });

  it(`covered every route of the contract's route list that the app serves (${ROUTES_TXT})`, function () {
    const contract = servedContractRoutes(routes);
    if (!contract) {
      console.log(`    the contract's route list is not at ${ROUTES_TXT} (set TALLY_ROUTES_TXT): cross-check skipped`);
      this.skip();
    }
    const contractUncovered = contract.served.filter((r) => (tried.get(routeKey(r)) ?? 0) < MIN_PER_ROUTE).map(routeKey);
    expect(contractUncovered, "routes of the contract's route list the app serves without fuzz coverage").to.deep.equal([]);
    console.log(
      `    contract's route list: ${contract.served.length} served and fuzzed; not served by the app (nothing to fuzz): ${contract.missing.length} (${contract.missing.map(routeKey).join(', ')})`,
    );
  });
});
