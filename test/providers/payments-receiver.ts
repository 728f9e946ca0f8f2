import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** Helpers shared by the mock payment and payout provider tests. */

export interface Received {
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/** A local webhook receiver on 127.0.0.1; `answer` decides the status of each request (by 1-based attempt). */
export async function startReceiver(path: string, answer: (attempt: number, request: Received) => number | Promise<number>) {
  const requests: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      const request = { headers: req.headers, body: Buffer.concat(chunks) };
      requests.push(request);
      try {
        res.statusCode = await answer(requests.length, request);
      } catch {
        res.statusCode = 401;
      }
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${path}`,
    requests,
    bodies: () => requests.map((r) => JSON.parse(r.body.toString('utf8'))),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A port nothing listens on: bound once, then released. */
export async function closedPort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof Error) return error;
    throw new Error(`rejected with a non-Error: ${String(error)}`);
  }
  throw new Error('expected the promise to reject');
}
