import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import fc from 'fast-check';
import jwt from 'jsonwebtoken';
import { allRoutes } from '../../src/http/app';
import type { RouteSpec } from '../../src/platform/http/route';
import { signPayload } from '../../src/providers/signature';
import { ADMIN_TOKEN, lastWrittenPosition } from '../support/app';
import {
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
import { asText, jsonText, percentEncode, type Schema, valid } from '../support/schema-gen';

/**
 * The authorization matrix (issue 13, item 4), built from the route table: every route x every wrong
 * caller that applies to its credential type. Only the decided 401/403/404 (docs/decisions.md: "Errors",
 * "Login and tokens", "Sandbox", "Operator API"), and nothing written (the log's head does not move).
 *
 * Cases by credential type:
 * - partner: none, a user's bearer token, the operator token (401 `Invalid partner credentials`);
 *   another partner's key on a route naming one of partner A's users or resources (reads 404, writes
 *   naming a user in the body or query 403 `User does not belong to this partner`, sandbox resources
 *   404; auth/send answers its decided 200 whatever the email, and writes nothing).
 * - bearer: none, a partner key, the operator token, a suspended user's token, an expired token, and
 *   tampered ones (payload changed, signature changed, alg none, signed with another key): 401 with the
 *   route's message; another user's token on a route naming ada's resource: 403 (same partner) or
 *   403/404 (another partner's user).
 * - admin: none, a partner key, a bearer token, an expired and a tampered token: 401 `Invalid admin token`.
 * - signed (provider callbacks): unsigned, garbage signature, signed with another secret, a stale
 *   signature, and the other credentials instead of a signature: 401 and nothing changes.
 * - public: no credential is needed; each credential must change nothing (same status as without),
 *   except a public route that declares a 401 (`/metrics`, behind the operator token when it is set).
 * - auditor (the read-only /audit/v1 routes): none, a partner key, a bearer token, the operator token,
 *   an expired and a revoked auditor token: 401 `Invalid or expired token`, and no use recorded.
 * - the auditor column: a live auditor token opens no route of any other credential type (partner,
 *   bearer, admin, signed: 401 as each answers a wrong credential; public: as without it).
 */

const SEED = process.env.FUZZ_SEED !== undefined ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);

type Case =
  | 'none'
  | 'partner-key'
  | 'bearer-token'
  | 'operator-token'
  | 'other-partner'
  | 'other-user'
  | 'other-partner-user'
  | 'suspended-user'
  | 'expired-token'
  | 'tampered-payload'
  | 'tampered-signature'
  | 'alg-none'
  | 'forged-key'
  | 'garbage-signature'
  | 'wrong-secret'
  | 'stale-signature'
  | 'auditor-token'
  | 'expired-auditor'
  | 'revoked-auditor';

interface Cell {
  route: string;
  case: Case;
  request: SentRequest;
  expected: number[];
  message?: string;
  status: number;
  answer: string;
  written: string[];
}

/** Request fields that name a user or a resource of someone. */
const RESOURCE_FIELD = /(^id$|Id$|^email$|^to$|Token$)/;

function fieldNames(route: RouteSpec): string[] {
  const props = (s: unknown) => Object.keys((s as Schema | undefined)?.properties ?? {});
  return [...pathParamNames(route.path), ...props(route.query), ...props(route.body)];
}

const namesResource = (route: RouteSpec) => fieldNames(route).some((n) => RESOURCE_FIELD.test(n));

/** The cases of a route's credential type (the coverage test holds every route to them). */
function casesOf(route: RouteSpec): Case[] {
  switch (route.auth) {
    case 'partner':
      return ['none', 'bearer-token', 'operator-token', 'expired-token', 'auditor-token', ...(namesResource(route) ? (['other-partner'] as Case[]) : [])];
    case 'bearer':
      return [
        'none',
        'partner-key',
        'operator-token',
        'suspended-user',
        'expired-token',
        'tampered-payload',
        'tampered-signature',
        'alg-none',
        'forged-key',
        'auditor-token',
        ...(namesResource(route) ? (['other-user', 'other-partner-user'] as Case[]) : []),
      ];
    case 'admin':
      return ['none', 'partner-key', 'bearer-token', 'expired-token', 'tampered-signature', 'auditor-token'];
    case 'signed':
      return ['none', 'garbage-signature', 'wrong-secret', 'stale-signature', 'partner-key', 'bearer-token', 'operator-token', 'auditor-token'];
    case 'public':
      return ['none', 'partner-key', 'bearer-token', 'operator-token', 'auditor-token'];
    case 'auditor':
      return ['none', 'partner-key', 'bearer-token', 'operator-token', 'expired-auditor', 'revoked-auditor'];
    default:
      return [];
  }
}

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

describe(`authorization matrix: every route x every wrong caller (FUZZ_SEED=${SEED})`, function () {
  this.timeout(60_000);
  const routes = allRoutes();
  let app: LoggedApp;
  let w: World;
  const cells: Cell[] = [];
  let tokens: Record<string, string>;
  let started = 0;

  before(async () => {
    started = Date.now();
    app = await startLoggedApp();
    w = await buildWorld(app);
    const claims = jwt.decode(w.ada.token, { complete: true }) as jwt.Jwt;
    const payload = claims.payload as jwt.JwtPayload;
    const key = app.tally.keys.signing[app.tally.keys.signing.length - 1];
    if (!key) throw new Error('no signing key');
    const sign = (exp: number, secret = key.secret, kid = key.kid) =>
      jwt.sign({ pid: payload.pid, sid: payload.sid, sub: payload.sub, iss: payload.iss, aud: payload.aud, iat: exp - 900, exp }, secret, {
        algorithm: 'HS256',
        keyid: kid,
      });
    const now = Math.floor(Date.now() / 1000);
    const [h, p, s] = w.ada.token.split('.') as [string, string, string];
    const flipped = `${s.slice(0, 10)}${s[10] === 'A' ? 'B' : 'A'}${s.slice(11)}`;
    tokens = {
      // The same claims as ada's live token, signed with the service's own key: valid but for exp.
      expired: sign(now - 60),
      fresh: sign(now + 600),
      tamperedPayload: `${h}.${b64({ ...payload, sub: w.bob.id })}.${s}`,
      tamperedSignature: `${h}.${p}.${flipped}`,
      algNone: `${b64({ alg: 'none', typ: 'JWT', kid: claims.header.kid })}.${p}.`,
      forged: sign(now + 600, 'not-the-service-key-not-the-service-key'),
    };
    const auditorToken = async (expiresAt: string) => {
      const res = await app.http.post('/admin/v1/auditors').set(bearer(ADMIN_TOKEN)).send({ name: 'Matrix auditors', expiresAt });
      if (res.status !== 201) throw new Error(`auditor creation failed: ${res.status} ${res.text}`);
      return res.body.data as { id: string; token: string };
    };
    const live = await auditorToken(new Date(Date.now() + 86_400_000).toISOString());
    const expiring = await auditorToken(new Date(Date.now() + 1_000).toISOString());
    const revoked = await auditorToken(new Date(Date.now() + 86_400_000).toISOString());
    await app.http.delete(`/admin/v1/auditors/${revoked.id}`).set(bearer(ADMIN_TOKEN));
    Object.assign(tokens, { auditor: live.token, expiredAuditor: expiring.token, revokedAuditor: revoked.token });
    await new Promise((resolve) => setTimeout(resolve, 1_100));
  });
  after(() => app?.close());

  it('the crafted tokens differ from a valid one only where intended (control: the same claims, fresh, are accepted)', async () => {
    const res = await app.http.get('/api/v1/user/accounts').set('Authorization', `Bearer ${tokens.fresh}`);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
  });

  /** The values a request names: partner A's (ada's) things; public routes get ids that do not exist. */
  function subject(route: RouteSpec): (name: string) => unknown {
    return (name) => {
      if (route.auth === 'public') return /Id$|^id$/.test(name) ? `nope-${randomUUID()}` : undefined;
      switch (name) {
        case 'userId':
          return w.ada.id;
        case 'id':
          if (route.path.startsWith('/sandbox/v1/card-transactions/')) return w.adaCardTransaction;
          return route.path.startsWith('/admin/v1/partners') ? w.acme.id : w.adaDeposit;
        case 'cardId':
          return w.adaCard;
        case 'apiKey':
          return w.acme.apiKey;
        case 'name':
          return route.path.includes('/projections/') ? w.projections[0] : 'Evil Corp';
        case 'inquiryId':
          return w.adaInquiryId;
        case 'transactionId':
          return route.path.startsWith('/api/v1/user/payout') ? w.adaPayout : w.adaPendingDeposit;
        case 'paymentId':
          return route.path.includes('/payouts/') ? w.adaPayoutPaymentId : w.adaPendingPaymentId;
        case 'accountId':
        case 'fromAccountId':
          return w.ada.accountId;
        case 'toAccountId':
          // A transfer's destination is anyone's of the partner; its source names ada's account.
          return route.path.endsWith('/transfer') ? w.bob.accountId : w.ada.accountId;
        case 'email':
          return w.ada.email;
        case 'to':
          return route.path === '/sandbox/v1/emails' ? w.ada.email : undefined;
        case 'refreshToken':
          return w.refreshOfBob;
        case 'code':
          return '123456';
        case 'countryCode':
          // Two characters are not enough: only a code ISO 3166-1 has assigned registers a user.
          return 'CO';
        case 'amount':
        case 'fromAmount':
          return '1';
        case 'currency':
          if (route.path.startsWith('/sandbox/v1/cards/')) return 'USD';
          return route.path.includes('payout') ? 'COP' : 'USDC';
        case 'asset':
        case 'fromAsset':
          return route.path.includes('payout') ? 'COP' : 'USDC';
        case 'toAsset':
          return 'COP';
        case 'provider':
          return 'mock';
        case 'outcome':
          return 'approved';
        case 'description':
          return 'matrix';
        default:
          return undefined;
      }
    };
  }

  /** A request the right caller could make, aimed at ada's (partner A's) things. */
  function requestFor(route: RouteSpec, index: number): SentRequest {
    const pinned = subject(route);
    const hints = (name: string) => {
      const v = pinned(name);
      return v === undefined ? undefined : fc.constant(v);
    };
    const one = (schema: unknown, salt: number) => {
      // Pinned fields always: the generator mixes hints 3:1, so draw until every pinned field is pinned.
      const draws = fc.sample(valid(schema as Schema, hints), { seed: SEED + index * 7 + salt, numRuns: 50 }) as Array<Record<string, unknown>>;
      const pinnedOk = (d: Record<string, unknown>) => Object.entries(d).every(([k, v]) => pinned(k) === undefined || v === pinned(k));
      const draw = { ...(draws.find(pinnedOk) ?? draws[0] ?? {}) };
      // Only what is required or pinned: an optional field's random value must not decide the answer.
      const required = new Set((schema as Schema).required ?? []);
      for (const k of Object.keys(draw)) if (!required.has(k) && pinned(k) === undefined) delete draw[k];
      for (const k of Object.keys((schema as Schema).properties ?? {})) if (draw[k] === undefined && pinned(k) !== undefined) draw[k] = pinned(k);
      return draw;
    };
    const params: Record<string, string> = {};
    for (const name of pathParamNames(route.path)) params[name] = percentEncode(asText(pinned(name) ?? randomUUID()));
    const query = route.query ? one(route.query, 1) : {};
    const qs = Object.entries(query)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${percentEncode(k)}=${percentEncode(asText(v))}`)
      .join('&');
    const hasBody = route.method !== 'get' && route.method !== 'delete';
    const body =
      route.auth === 'signed'
        ? JSON.stringify({
            id: `evt_${randomUUID()}`,
            type: 'payment.confirmed',
            createdAt: new Date().toISOString(),
            data: { paymentId: w.adaPendingPaymentId, transactionId: w.adaPendingDeposit, inquiryId: w.adaInquiryId, status: 'approved' },
          })
        : route.body
          ? jsonText(one(route.body, 2))
          : undefined;
    const headers: Record<string, string> = {};
    if (route.headers) for (const [k, v] of Object.entries(one(route.headers, 3))) if (v !== undefined) headers[k] = asText(v);
    if (hasBody && body !== undefined) headers['Content-Type'] = 'application/json';
    return { method: route.method, url: `${fillPath(route.path, params)}${qs ? `?${qs}` : ''}`, headers, body: hasBody ? body : undefined };
  }

  const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
  const webhookHeader = (path: string) => (path.endsWith('/persona') ? 'persona-signature' : 'x-signature');

  /** The credentials of a case (for signed routes: the signature header, or another credential). */
  function credentials(route: RouteSpec, c: Case, body: string): Record<string, string> {
    switch (c) {
      case 'none':
        return {};
      case 'partner-key':
        return w.acme.headers;
      case 'bearer-token':
        return w.ada.bearer;
      case 'operator-token':
        return bearer(ADMIN_TOKEN);
      case 'other-partner':
        return w.globex.headers;
      case 'other-user':
        return w.bob.bearer;
      case 'other-partner-user':
        return w.carol.bearer;
      case 'suspended-user':
        return w.suspended.bearer;
      case 'expired-token':
        return bearer(tokens.expired as string);
      case 'tampered-payload':
        return bearer(tokens.tamperedPayload as string);
      case 'tampered-signature':
        return bearer(tokens.tamperedSignature as string);
      case 'alg-none':
        return bearer(tokens.algNone as string);
      case 'forged-key':
        return bearer(tokens.forged as string);
      case 'garbage-signature':
        return { [webhookHeader(route.path)]: `t=${Math.floor(Date.now() / 1000)},v1=${'ab'.repeat(32)}` };
      case 'wrong-secret':
        return { [webhookHeader(route.path)]: signPayload('not-the-provider-secret', body) };
      case 'auditor-token':
        return bearer(tokens.auditor as string);
      case 'expired-auditor':
        return bearer(tokens.expiredAuditor as string);
      case 'revoked-auditor':
        return bearer(tokens.revokedAuditor as string);
      case 'stale-signature': {
        const secret = app.tally.keys.webhooks[route.path.replace('/webhooks/', '')] ?? 'unknown-provider';
        return { [webhookHeader(route.path)]: signPayload(secret, body, Math.floor(Date.now() / 1000) - 3_600) };
      }
    }
  }

  const UNAUTHENTICATED: Record<string, string> = {
    partner: 'Invalid partner credentials',
    admin: 'Invalid admin token',
    signed: 'Invalid webhook signature',
    auditor: 'Invalid or expired token',
  };

  /** The decided answer of a case on a route: statuses, and the exact message when decided. */
  function decided(route: RouteSpec, c: Case, baseline: number | undefined): { expected: number[]; message?: string } {
    if (route.auth === 'public') {
      // The sandbox's webhook receiver keeps only notifications this service signed: any credential is no signature.
      if (route.path === '/sandbox/v1/webhook-inbox') return { expected: [401], message: 'Invalid webhook signature' };
      if (route.responses[401]) return c === 'operator-token' ? { expected: [200] } : { expected: [401], message: 'Invalid admin token' };
      return { expected: [baseline ?? -1] };
    }
    if (route.auth === 'signed') {
      const provider = route.path.split('/')[3] ?? '';
      const kind = route.path.split('/')[2] ?? '';
      const configured =
        kind === 'identity'
          ? app.tally.providers.identity.get(provider)
          : kind === 'payments'
            ? app.tally.providers.payments.get(provider)
            : kind === 'cards'
              ? app.tally.providers.cards.get(provider)
              : app.tally.providers.payouts.get(provider);
      // A provider the service has no adapter for: the route answers Not found, whoever calls.
      return configured ? { expected: [401], message: UNAUTHENTICATED.signed } : { expected: [404] };
    }
    if (c === 'other-partner') {
      // Decided 409 (Errors): the email is taken anywhere in the service.
      if (route.method === 'post' && route.path === '/api/v1/partner/users') return { expected: [409], message: 'User with this email already exists' };
      // A list filtered by another partner's user's email: the partner's own (none); checked empty below.
      if (route.method === 'get' && route.path === '/api/v1/partner/users') return { expected: [200] };
      // Decided (Login and tokens): always 200, whatever the email; no account enumeration.
      if (route.path === '/api/v1/partner/auth/send') return { expected: [200] };
      // Partner notifications: a delivery list filtered by another partner's event id is the partner's own
      // (none; checked empty below), and another partner's delivery does not exist for the caller.
      if (route.method === 'get' && route.path === '/api/v1/partner/webhooks/deliveries') return { expected: [200] };
      if (route.path === '/api/v1/partner/webhooks/deliveries/{id}/redeliver') return { expected: [404], message: 'Delivery not found' };
      if (route.path.startsWith('/api/v1/partner/auth/')) return { expected: [401] };
      // Decided (Personal data): erasing another partner's user is 404 `User not found`, its id in the path as on a read.
      if (route.path === '/api/v1/partner/users/{userId}/erase') return { expected: [404], message: 'User not found' };
      if (route.method === 'get') return { expected: [404] };
      if (route.path.startsWith('/sandbox/')) return { expected: [404] };
      return { expected: [403], message: 'User does not belong to this partner' };
    }
    // A payout's transactionId is its idempotency key: another's is "already used" (decided 409).
    if ((c === 'other-user' || c === 'other-partner-user') && route.path === '/api/v1/user/payout')
      return { expected: [409], message: 'transactionId already used with different parameters' };
    if (c === 'other-user') return { expected: [403] };
    // A transfer between partners is decided as 400 `One or both accounts do not exist` (Accounts...).
    if (c === 'other-partner-user' && route.path.endsWith('/transfer')) return { expected: [400, 403, 404] };
    if (c === 'other-partner-user') return { expected: [403, 404] };
    if (route.auth === 'bearer') return { expected: [401], message: route.bearerError ?? 'Invalid or expired token' };
    return { expected: [401], message: UNAUTHENTICATED[route.auth] };
  }

  routes.forEach((route, index) => {
    it(`${routeKey(route)} (${route.auth}): ${casesOf(route).join(', ')}`, async () => {
      const base = requestFor(route, index);
      let baseline: number | undefined;
      const failures: string[] = [];
      for (const c of casesOf(route)) {
        const request: SentRequest = { ...base, headers: { ...base.headers, ...credentials(route, c, base.body ?? '') } };
        // The last event written, not the readers' head: an open transaction can hold the head below a write answered before.
        const before = await lastWrittenPosition(app);
        const res = await sendRaw(app.http, request);
        const after = await lastWrittenPosition(app);
        const written = after === before ? [] : await writtenSince(app, before);
        if (c === 'none') baseline = res.status;
        const { expected, message } = decided(route, c, baseline);
        const error = (res.body as { error?: unknown } | null)?.error;
        cells.push({ route: routeKey(route), case: c, request, expected, message, status: res.status, answer: res.text.slice(0, 300), written });
        const leaked = c === 'other-partner' && res.status === 200 && ((res.body as { data?: { items?: unknown[] } })?.data?.items?.length ?? 0) > 0;
        const wrong = !expected.includes(res.status) || (message !== undefined && error !== message) || written.length > 0 || leaked;
        if (wrong)
          failures.push(
            `${c}: ${res.status} ${res.text.slice(0, 200)} (decided ${expected.join('/')}${message ? ` "${message}"` : ''}${written.length ? `; WROTE ${written.join(', ')}` : ''})\n        ${asCurl(request)}`,
          );
      }
      expect(failures, `${routeKey(route)}`).to.deep.equal([]);
    });
  });

  it('covers every route of the table with every case of its credential type (a new route or credential type without cases fails)', () => {
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    const byCase = new Map<string, number>();
    for (const cell of cells) byCase.set(cell.case, (byCase.get(cell.case) ?? 0) + 1);
    const wrong = cells.filter((c) => !c.expected.includes(c.status) || c.written.length > 0);
    console.log(
      `    matrix figures (seed ${SEED}): ${cells.length} cells over ${routes.length} routes in ${seconds} s; wrong: ${wrong.length}; with a write: ${cells.filter((c) => c.written.length).length}`,
    );
    console.log(`    cells by case: ${[...byCase.entries()].map(([c, n]) => `${c}=${n}`).join(', ')}`);
    const missing: string[] = [];
    for (const route of routes) {
      const cases = casesOf(route);
      if (cases.length === 0) missing.push(`${routeKey(route)}: no cases for credential type ${route.auth}`);
      for (const c of cases) if (!cells.some((cell) => cell.route === routeKey(route) && cell.case === c)) missing.push(`${routeKey(route)}: ${c}`);
    }
    expect(missing, 'routes without matrix coverage').to.deep.equal([]);
  });

  it(`covers every route of the contract's route list that the app serves, with the credential type the contract's route list gives it (${ROUTES_TXT})`, function () {
    const contract = servedContractRoutes(routes);
    if (!contract) {
      console.log(`    the contract's route list not found at ${ROUTES_TXT} (set TALLY_ROUTES_TXT): cross-check skipped`);
      this.skip();
    }
    const uncovered = contract.served.filter((r) => !cells.some((cell) => cell.route === routeKey(r) && cell.case === 'none')).map(routeKey);
    expect(uncovered, "routes of the contract's route list the app serves without matrix coverage").to.deep.equal([]);
    const differing = contract.served
      .filter((r) => routes.find((s) => routeKey(s) === routeKey(r))?.auth !== r.auth)
      .map((r) => `${routeKey(r)}: the contract's route list ${r.auth}`);
    expect(differing, "routes whose credential type differs from the contract's route list").to.deep.equal([]);
    console.log(`    the contract's route list: ${contract.served.length} served and in the matrix; not served by the app: ${contract.missing.length}`);
  });
});
