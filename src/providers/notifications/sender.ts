import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { guardedLookup, hostOf, isBlockedAddress, type Resolver } from './address-guard';

export interface AttemptResult {
  ok: boolean;
  httpStatus: number | null;
  error: string | null;
  durationMs: number;
}

/** A receiver's answer is drained, never kept: only its status matters. */
const MAX_ANSWER_BYTES = 64 * 1024;

/**
 * POSTs one notification. Outside sandbox mode the connection may only go to a public address:
 * names are resolved through guardedLookup (the address checked is the address connected to, so
 * DNS rebinding between a check and the connect cannot reach the service's network), literal
 * addresses are checked here. Redirects are not followed (a 3xx is a failed attempt).
 */
export function postNotification(
  target: string,
  body: string,
  headers: Record<string, string>,
  options: { timeoutMs: number; publicOnly: boolean; resolve?: Resolver },
): Promise<AttemptResult> {
  const started = process.hrtime.bigint();
  const elapsed = () => Number((process.hrtime.bigint() - started) / 1_000_000n);
  return new Promise((resolve) => {
    const finish = (httpStatus: number | null, error: string | null) =>
      resolve({ ok: httpStatus !== null && httpStatus >= 200 && httpStatus < 300, httpStatus, error, durationMs: elapsed() });
    const url = new URL(target);
    if (options.publicOnly) {
      const host = hostOf(url);
      if (isIP(host) && isBlockedAddress(host)) return finish(null, `refused: ${host} is not a public address`);
    }
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(body)), 'User-Agent': 'Tally-Webhooks/1', ...headers },
      lookup: options.publicOnly ? guardedLookup(options.resolve) : undefined,
      // One connection per attempt: a receiver's keep-alive socket never outlives its delivery.
      agent: false,
    });
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${options.timeoutMs} ms`)), options.timeoutMs);
    req.on('response', (res) => {
      let seen = 0;
      res.on('data', (chunk: Buffer) => {
        seen += chunk.length;
        if (seen > MAX_ANSWER_BYTES) res.destroy();
      });
      res.on('close', () => {
        clearTimeout(timer);
        finish(res.statusCode ?? null, null);
      });
      // A body cut short (too long, or the receiver hung up) changes nothing: the status is the answer, and 'close' follows.
      res.on('error', () => {});
    });
    req.on('error', (error) => {
      clearTimeout(timer);
      finish(null, error.message.slice(0, 500));
    });
    req.end(body);
  });
}
