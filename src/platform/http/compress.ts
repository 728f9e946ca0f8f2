import { brotliCompress, brotliCompressSync, constants, gzip, gzipSync } from 'node:zlib';

/** Bodies smaller than this go as they are: compressing them costs more than it saves. */
export const COMPRESS_FROM_BYTES = 8 * 1024;
/** Compressed copies of public (cacheable) bodies kept, by their text: the reference script and page. */
const KEPT_MAX = 8;

const kept = new Map<string, { br?: Buffer | 'pending'; gzip?: Buffer | 'pending' }>();

/**
 * The body compressed for a client that accepts it (brotli before gzip), or undefined: too small, or
 * no encoding accepted. A public body (the same for everyone: static assets, megabytes) is compressed
 * once, off the event loop, and kept: until its copy is ready it goes as it is. Any other is
 * compressed for this answer, at a quick level (answers are made per request, and small).
 */
export function compressFor(acceptEncoding: string | undefined, body: string, isPublic: boolean): { encoding: 'br' | 'gzip'; bytes: Buffer } | undefined {
  if (!acceptEncoding || body.length < COMPRESS_FROM_BYTES) return undefined;
  const encoding = accepts(acceptEncoding, 'br') ? 'br' : accepts(acceptEncoding, 'gzip') ? 'gzip' : undefined;
  if (!encoding) return undefined;
  if (!isPublic) return { encoding, bytes: compress(encoding, body) };
  let copies = kept.get(body);
  if (!copies) {
    if (kept.size >= KEPT_MAX) kept.clear();
    copies = {};
    kept.set(body, copies);
  }
  const ready = copies[encoding];
  if (ready instanceof Buffer) return { encoding, bytes: ready };
  if (ready === undefined) {
    const own = copies;
    own[encoding] = 'pending';
    const done = (error: Error | null, bytes: Buffer) => {
      if (error) delete own[encoding];
      else own[encoding] = bytes;
    };
    if (encoding === 'gzip') gzip(body, { level: 9 }, done);
    else brotliCompress(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 6, [constants.BROTLI_PARAM_SIZE_HINT]: Buffer.byteLength(body) } }, done);
  }
  return undefined;
}

function compress(encoding: 'br' | 'gzip', body: string): Buffer {
  if (encoding === 'gzip') return gzipSync(body, { level: 4 });
  return brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 4, [constants.BROTLI_PARAM_SIZE_HINT]: Buffer.byteLength(body) } });
}

/** Whether an Accept-Encoding value accepts the encoding (named, or `*`, with a q above 0). */
function accepts(header: string, encoding: string): boolean {
  for (const part of header.toLowerCase().split(',')) {
    const [name, ...params] = part.trim().split(';');
    if (name !== encoding && name !== '*') continue;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  }
  return false;
}
