import express, { type Request, type RequestHandler, type Response } from 'express';
import { HttpError, MESSAGES } from './errors';
import type { HttpRequest, RouteSpec } from './route';

const BODY_LIMIT = '100kb';
const JSON_TYPE = /^application\/(?:[^\s;/]+\+)?json\s*(?:;|$)/i;
const FORM_TYPE = /^application\/x-www-form-urlencoded\s*(?:;|$)/i;
const CHARSET = /;\s*charset\s*=\s*"?([^";\s]+)/i;

/** Provider callbacks are verified over their raw bytes, so the JSON parser keeps them. */
function keepRaw(req: Request, _res: Response, buf: Buffer): void {
  (req as HttpRequest).rawBody = buf;
}

const jsonParser = express.json({ limit: BODY_LIMIT, strict: false, type: ['application/json', 'application/*+json'], verify: keepRaw });
// The sandbox hosted pages post plain HTML forms.
const formParser = express.urlencoded({ limit: BODY_LIMIT, extended: false });

/**
 * The body parsers a route runs before its handler: none where it takes no body (what is sent is
 * not read), JSON where it takes one, and forms too where it takes them (RouteSpec.forms).
 */
export function bodyParsers(spec: RouteSpec): RequestHandler[] {
  if (!spec.body) return [];
  return spec.forms ? [jsonParser, formParser] : [jsonParser];
}

/**
 * For a route that takes a body, checks the body's type: JSON in UTF-8 (or a form where the route
 * takes them), else 415. Returns the very text a JSON body was parsed from (both parsers drop a byte
 * order mark), for the validation's checks of what JSON.parse hides (duplicate keys, imprecise numbers).
 */
export function checkedJsonText(spec: RouteSpec, req: HttpRequest): string | undefined {
  if (!spec.body || !carriesBody(req)) return undefined;
  const type = req.headers['content-type'] ?? '';
  if (JSON_TYPE.test(type)) {
    const charset = CHARSET.exec(type)?.[1];
    if (charset && charset.toLowerCase() !== 'utf-8') throw new HttpError(415, 'Unsupported body encoding');
    return req.rawBody?.toString('utf8').replace(/^\uFEFF/, '');
  }
  if (spec.forms && FORM_TYPE.test(type)) return undefined;
  throw new HttpError(415, MESSAGES.jsonOnly);
}

/** True when the request says a body follows (whatever it parsed to). */
function carriesBody(req: HttpRequest): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}
