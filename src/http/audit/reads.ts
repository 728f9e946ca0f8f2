import { type Static, Type } from '@sinclair/typebox';
import { AUDIT_REFUSALS as R } from '../../domain/audit';
import { LEDGER_REFUSALS } from '../../domain/ledger';
import { routeFor } from '../../platform/http/route';
import { instantOf, Success } from '../schemas';
import type { AppServices } from '../services';
import { Instant } from './instant';

/** The services these routes use. */
const USES = ['auditReads'] as const;
const route = routeFor<AppServices>()(USES);

const At = Type.Object({
  at: Type.Optional(
    Instant('at', 'The instant to read as of: events recorded at or before it count; an ISO 8601 date-time or a date alone (00:00 UTC). Now when left out'),
  ),
});
const StreamParams = Type.Object({
  stream: Type.String({
    minLength: 1,
    maxLength: 300,
    description: 'The stream’s name as the log has it (`user-<id>`, `account-<id>`, `card-<id>`, `auditor-<id>`, ...)',
  }),
});
const AccountParams = Type.Object({
  accountId: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'The account’s number; an unknown one is 404 `Account not found`' }),
});
const Range = Type.Object({
  from: Type.Optional(
    Instant('from', 'Inclusive lower bound of the events’ record times: an ISO 8601 date-time or a date alone (00:00 UTC); the log’s start when left out'),
  ),
  to: Type.Optional(
    Instant(
      'to',
      'Exclusive upper bound of the events’ record times (so adjacent ranges share no event): an ISO 8601 date-time or a date alone (00:00 UTC); now when left out',
    ),
  ),
});

const Hex64 = (description: string) => Type.String({ pattern: '^[0-9a-f]{64}$', description });
const AuditEvent = Type.Object(
  {
    stream: Type.String({ description: 'The stream the event belongs to' }),
    revision: Type.Integer({ description: 'Its place in the stream, from 0' }),
    position: Type.String({ description: 'Its place in the whole log: opaque, ordered as text' }),
    id: Type.String({ description: 'The event’s id (a UUID)' }),
    type: Type.String({ description: 'The event’s type' }),
    data: Type.Object({}, { additionalProperties: true, description: 'What happened, as stored (personal data as stored)' }),
    metadata: Type.Object({}, { additionalProperties: true, description: 'Who caused it and why, as stored: correlation and causation ids, the actor' }),
    recordedAt: Type.String({ format: 'date-time', description: 'When the log recorded it (ISO 8601, UTC, milliseconds)' }),
    hash: Hex64('The stream’s hash chain after it: SHA-256 hex of previousHash followed by the digest of [stream, id, type, data, metadata] as canonical JSON'),
    previousHash: Hex64('The stream’s hash chain before it: the previous event’s hash, 64 zeros for revision 0'),
  },
  { $id: 'AuditEvent' },
);

export const auditReadRoutes = [
  route<unknown, Static<typeof At>, Static<typeof StreamParams>>({
    method: 'get',
    path: '/audit/v1/streams/{stream}',
    auth: 'auditor',
    tag: 'Audit',
    summary: 'A stream as of an instant: its events recorded up to it, each with its hash chain links, and the state its aggregate folds from them.',
    params: StreamParams,
    query: At,
    responses: {
      200: {
        description: 'The stream as of the instant (no events when it was not created yet)',
        schema: Success(
          Type.Object(
            {
              stream: Type.String({ description: 'The stream’s name' }),
              at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'The instant asked (ISO 8601, UTC), or null for now' }),
              events: Type.Array(AuditEvent, { description: 'Its events up to the instant, in revision order' }),
              aggregate: Type.Union([Type.String(), Type.Null()], {
                description: 'The aggregate whose state is folded (`user`, `account`, ...); null when none is known for the stream: events only',
              }),
              state: Type.Unknown({
                description: 'The aggregate’s state folded from those events (its initial state when there are none); null when no aggregate is known',
              }),
            },
            { $id: 'StreamAtInstant' },
          ),
        ),
      },
    },
    refuses: [R.streamNotFound],
    async handler({ services, params, query }) {
      const at = query.at === undefined ? undefined : new Date(instantOf(query.at, 'at'));
      return { status: 200, body: { success: true, data: await services.auditReads.requireStreamAt(params.stream, at) } };
    },
  }),
  route<unknown, Static<typeof Range>>({
    method: 'get',
    path: '/audit/v1/events',
    auth: 'auditor',
    tag: 'Audit',
    summary: 'The whole log recorded in a time range, in log order, as NDJSON (one AuditEvent a line, as `tally events export` writes it), streamed: any size.',
    query: Range,
    responses: {
      200: {
        description: 'The events, one JSON object (an AuditEvent) a line, each line ending with a newline; nothing when the range holds none',
        schema: Type.String({ contentMediaType: 'application/x-ndjson', description: 'Newline-delimited JSON: one AuditEvent a line' }),
      },
    },
    async handler({ services, query, res }) {
      const from = new Date(query.from === undefined ? 0 : instantOf(query.from, 'from'));
      const to = query.to === undefined ? new Date() : new Date(instantOf(query.to, 'to'));
      const stop = new AbortController();
      res.once('close', () => stop.abort());
      const pages = services.auditReads.eventsBetween(from, to, stop.signal);
      return { status: 200, contentType: 'application/x-ndjson', stream: ndjson(pages) };
    },
  }),
  route<unknown, Static<typeof At>, Static<typeof AccountParams>>({
    method: 'get',
    path: '/audit/v1/accounts/{accountId}/balance',
    auth: 'auditor',
    tag: 'Audit',
    summary: 'An account’s balance as of an instant, folded from its events in the log (not from a read model).',
    params: AccountParams,
    query: At,
    responses: {
      200: {
        description: 'The balance as of the instant',
        schema: Success(
          Type.Object(
            {
              accountId: Type.Integer({ description: 'The account’s number' }),
              asset: Type.String({ description: 'The account’s asset (`USDC`)' }),
              credits: Type.String({ description: 'Money in up to the instant, a decimal string' }),
              debits: Type.String({ description: 'Money out up to the instant, holds (pending debits) included, a decimal string' }),
              balance: Type.String({ description: 'credits - debits, a decimal string' }),
              at: Type.String({ format: 'date-time', description: 'The instant (ISO 8601, UTC): the one asked, or now' }),
              position: Type.Union([Type.String(), Type.Null()], {
                description: 'The log position of the last event counted; null when the account had none yet',
              }),
            },
            { $id: 'AuditBalance' },
          ),
        ),
      },
    },
    refuses: [LEDGER_REFUSALS.accountNotFound],
    async handler({ services, params, query }) {
      const at = query.at === undefined ? new Date() : new Date(instantOf(query.at, 'at'));
      return { status: 200, body: { success: true, data: await services.auditReads.balanceAt(params.accountId, at) } };
    },
  }),
];

/** Pages of events as NDJSON text, a chunk per page. */
async function* ndjson(pages: AsyncIterable<Array<object>>): AsyncGenerator<string> {
  for await (const page of pages) {
    let text = '';
    for (const e of page) text += `${JSON.stringify(e)}\n`;
    yield text;
  }
}
