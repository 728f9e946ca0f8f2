import type { Readable } from 'node:stream';
import { createGunzip, createInflate } from 'node:zlib';
import express, { type RequestHandler } from 'express';
import { HttpError, MESSAGES, PLATFORM_CODES } from './errors';
import type { HttpRequest, RouteSpec } from './route';
import { LIMITS } from '../limits';

const BODY_LIMIT = '100kb';
const BODY_LIMIT_BYTES = LIMITS.http.bodyBytes;
const JSON_TYPE = /^application\/(?:[^\s;/]+\+)?json\s*(?:;|$)/i;
const FORM_TYPE = /^application\/x-www-form-urlencoded\s*(?:;|$)/i;
const CHARSET = /;\s*charset\s*=\s*"?([^";\s]+)/i;

// The sandbox hosted pages post plain HTML forms.
export const formParser: RequestHandler = express.urlencoded({ limit: BODY_LIMIT, extended: false });

/**
 * A JSON body, read as body-parser's json reads it (any JSON value; empty is {}; a byte order mark
 * dropped; gzip or deflate inflated; at most 100 kB once inflated: 413), its raw bytes kept on the
 * request (provider callbacks are verified over them). Undefined when the request carries no JSON
 * body (none at all, or another type: checkedJsonText then answers 415 where the route needs JSON).
 */
export function readJsonBody(req: HttpRequest): Promise<unknown> | undefined {
  if (!carriesBody(req) || !JSON_TYPE.test(req.headers['content-type'] ?? '')) return undefined;
  const charset = CHARSET.exec(req.headers['content-type'] ?? '')?.[1]?.toLowerCase();
  if (charset !== undefined && charset !== 'utf-8') throw new HttpError(415, 'Unsupported body encoding');
  const declared = Number(req.headers['content-length'] ?? Number.NaN);
  const stream = decoded(req);
  if (stream === req && declared > BODY_LIMIT_BYTES) throw new HttpError(413, MESSAGES.tooLarge);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    stream.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= BODY_LIMIT_BYTES) chunks.push(chunk);
      else {
        // The rest is left unread: node discards it once the answer (413) is sent.
        stream.pause();
        reject(new HttpError(413, MESSAGES.tooLarge));
      }
    });
    stream.on('error', (error) => reject(stream === req ? error : new HttpError(400, 'Invalid request body')));
    stream.on('end', () => {
      if (size > BODY_LIMIT_BYTES) return;
      const raw = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
      req.rawBody = raw;
      const decoded = raw.toString('utf8');
      const text = decoded.charCodeAt(0) === 0xfeff ? decoded.slice(1) : decoded;
      req.jsonText = text;
      try {
        resolve(text.length === 0 ? {} : JSON.parse(text));
      } catch {
        reject(new HttpError(400, MESSAGES.invalidJson, { code: PLATFORM_CODES.invalidJson }));
      }
    });
  });
}

/** The body as sent, or inflated (gzip, deflate); any other content encoding is 415. */
function decoded(req: HttpRequest): Readable {
  const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
  if (encoding === 'identity') return req;
  const inflater = encoding === 'gzip' ? createGunzip() : encoding === 'deflate' ? createInflate() : undefined;
  if (!inflater) throw new HttpError(415, 'Unsupported body encoding');
  // An aborted or failing request fails the inflater, whose error the reader listens for: the
  // request never waits for an end that will not come.
  req.on('error', (error) => inflater.destroy(error));
  req.on('close', () => {
    if (!req.complete) inflater.destroy(new Error('request aborted'));
  });
  return req.pipe(inflater);
}

/**
 * For a route that takes a body, checks the body's type: JSON (read by readJsonBody, which refused
 * other charsets) or a form where the route takes them, else 415. Returns the very text a JSON body
 * was parsed from, for the validation's checks of what JSON.parse hides (duplicate keys, imprecise numbers).
 */
export function checkedJsonText(spec: RouteSpec, req: HttpRequest): string | undefined {
  if (!spec.body || !carriesBody(req)) return undefined;
  const type = req.headers['content-type'] ?? '';
  if (JSON_TYPE.test(type)) return req.jsonText;
  if (spec.forms && FORM_TYPE.test(type)) return undefined;
  throw new HttpError(415, MESSAGES.jsonOnly);
}

/** True when the request says a body follows (whatever it parsed to). */
function carriesBody(req: HttpRequest): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}
