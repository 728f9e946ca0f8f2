import { get, type IncomingHttpHeaders } from 'node:http';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { expect } from 'chai';
import { startTestApp } from '../support/app';

interface RawAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  rawHeaders: string[];
  body: Buffer;
}
/** An answer's bytes as sent, undecoded (supertest would inflate a compressed body for us). */
const raw = (res: RawAnswer) => res.body;

describe('HTTP: the reference page’s static assets (one long-lived Cache-Control, compressed when accepted)', () => {
  let app: Awaited<ReturnType<typeof startTestApp>>;
  before(async () => {
    app = await startTestApp();
  });
  const fetchRaw = (path: string, acceptEncoding: string) =>
    new Promise<RawAnswer>((resolve, reject) => {
      get(`${app.url}${path}`, { headers: { 'Accept-Encoding': acceptEncoding } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, rawHeaders: res.rawHeaders, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      }).on('error', reject);
    });
  after(async () => {
    await app.close();
  });

  it('names the script by its version and lets browsers keep it, with exactly one Cache-Control', async () => {
    const page = await app.http.get('/docs');
    const src = /<script src="(\/docs\/reference\.js\?v=[0-9a-f]{16})"><\/script>/.exec(page.text)?.[1];
    expect(src, 'the page names its script with ?v=').to.be.a('string');
    const res = await fetchRaw(src as string, 'identity');
    expect(res.status).to.equal(200);
    expect(res.headers['cache-control']).to.equal('public, max-age=31536000, immutable');
    expect(res.headers['content-encoding']).to.equal(undefined);
    // The headers node sent, one by one: a second Cache-Control (no-store) must not be among them.
    const names = res.rawHeaders.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
    expect(names.filter((n) => n === 'cache-control')).to.have.length(1);
    expect(page.headers['cache-control']).to.equal('no-store');
  });

  it('sends the script brotli- or gzip-compressed to a client that accepts it, the same bytes once decoded', async () => {
    const plain = raw(await fetchRaw('/docs/reference.js', 'identity'));
    expect(plain.length).to.be.greaterThan(1_000_000);
    // The first asks start the compression off the event loop; the answer is compressed once it is ready.
    const until = async (encoding: string) => {
      for (let i = 0; i < 200; i++) {
        const res = await fetchRaw('/docs/reference.js', encoding);
        if (res.headers['content-encoding']) return res;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`never compressed for ${encoding}`);
    };
    const br = await until('gzip, deflate, br');
    expect(br.headers['content-encoding']).to.equal('br');
    expect(br.headers.vary).to.equal('Accept-Encoding');
    expect(raw(br).length).to.be.lessThan(plain.length / 3);
    expect(brotliDecompressSync(raw(br)).equals(plain)).to.equal(true);
    const gz = await until('gzip');
    expect(gz.headers['content-encoding']).to.equal('gzip');
    expect(gunzipSync(raw(gz)).equals(plain)).to.equal(true);
  });

  it('compresses a large JSON answer (the OpenAPI document) too, and leaves small ones as they are', async () => {
    const doc = await fetchRaw('/api/v1/openapi.json', 'gzip');
    expect(doc.headers['content-encoding']).to.equal('gzip');
    expect(JSON.parse(gunzipSync(raw(doc)).toString('utf8')).openapi).to.equal('3.1.0');
    const small = await fetchRaw('/healthz', 'gzip, br');
    expect(small.headers['content-encoding']).to.equal(undefined);
    expect(JSON.parse(raw(small).toString('utf8'))).to.deep.equal({ status: 'ok' });
  });
});
