import { expect } from 'chai';
import pino from 'pino';
import { CheckpointService } from '../../src/app/audit';
import { comparePositions } from '../../src/eventstore/port';
import { AuditQueries } from '../../src/projections/audit';
import { type Checkpoint, type CheckpointProof, signedText } from '../../src/platform/audit/checkpoint';
import { BlockedTree, leafInput } from '../../src/platform/audit/merkle-stream';
import { CheckpointerThread } from '../../src/app/audit/checkpointer-thread';
import { leafHash, verifyInclusion } from '../../src/platform/audit/merkle';
import { type PublicJwk, verifyText } from '../../src/platform/audit/signing';
import { ADMIN_TOKEN, createPartner, type PartnerCredentials, startTestApp } from '../support/app';
import { registerUser } from '../cli/support';

const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };

const proves = (proof: CheckpointProof, root: string) =>
  verifyInclusion(
    leafHash(leafInput(proof.leaf)),
    proof.index,
    proof.treeSize,
    proof.path.map((p) => Buffer.from(p, 'hex')),
    Buffer.from(root, 'hex'),
  );

/** POST /admin/v1/checkpoints, GET /audit/v1/keys and the auditors' checkpoint reads (docs/decisions.md, "Auditors"). */
describe('audit checkpoints over HTTP', () => {
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let acme: PartnerCredentials;
  let auditor: { Authorization: string };

  before(async () => {
    app = await startTestApp();
    acme = await createPartner(app.http, 'Acme');
    await registerUser(app.http, acme);
    const made = await app.http
      .post('/admin/v1/auditors')
      .set(admin)
      .send({ name: 'Ledger & Co.', expiresAt: new Date(Date.now() + 86_400_000).toISOString() });
    auditor = { Authorization: `Bearer ${made.body.data.token}` };
  });
  after(() => app.close());

  /** Another node's checkpoint service beside the app's, over the same log and audit read model. */
  const otherNode = (intervalMs?: number): CheckpointService =>
    new CheckpointService({
      store: app.tally.store,
      keys: app.tally.keys.audit,
      log: pino({ level: 'silent' }),
      queries: new AuditQueries(app.tally.sql),
      readYourWrites: (position, names) => app.tally.reads.waitFor(position, names),
      ...(intervalMs === undefined ? {} : { intervalMs }),
    });

  const take = async (): Promise<Checkpoint> => {
    const res = await app.http.post('/admin/v1/checkpoints').set(admin);
    expect(res.status, res.text).to.equal(201);
    return res.body.data;
  };

  it('signs a checkpoint an auditor verifies with the published key, over every stream head', async () => {
    const keys = await app.http.get('/audit/v1/keys');
    expect(keys.status).to.equal(200);
    const [key] = keys.body.keys as PublicJwk[];
    expect(Object.keys(keys.body)).to.deep.equal(['keys']);
    expect(key).to.include({ kty: 'OKP', crv: 'Ed25519' });
    const checkpoint = await take();
    expect(Object.keys(checkpoint).sort()).to.deep.equal(['createdAt', 'id', 'kid', 'position', 'root', 'signature', 'streams']);
    expect(checkpoint.kid).to.equal(key?.kid);
    expect(checkpoint.root).to.match(/^[0-9a-f]{64}$/);
    expect(checkpoint.signature).to.match(/^[A-Za-z0-9_-]{86}$/);
    expect(verifyText(key as PublicJwk, signedText(checkpoint), checkpoint.signature)).to.equal(true);
    expect(verifyText(key as PublicJwk, signedText({ ...checkpoint, streams: checkpoint.streams + 1 }), checkpoint.signature)).to.equal(false);
    const [log] = await app.tally.sql.query<{ n: string }>(
      'SELECT count(DISTINCT stream_id)::text AS n FROM es_events WHERE (transaction_id::text, global_position) <= ($1, $2)',
      [String(BigInt(checkpoint.position.split(':')[0] as string)), Number(checkpoint.position.split(':')[1])],
    );
    expect(checkpoint.streams).to.equal(Number(log?.n));
  });

  it('serves checkpoints newest first with a cursor, and one by id', async () => {
    const first = await take();
    await registerUser(app.http, acme);
    const second = await take();
    const page = await app.http.get('/audit/v1/checkpoints?limit=1').set(auditor);
    expect(page.status, page.text).to.equal(200);
    expect(page.body.data.items).to.deep.equal([second]);
    const next = await app.http.get(`/audit/v1/checkpoints?limit=1&cursor=${page.body.data.nextCursor}`).set(auditor);
    expect(next.body.data.items).to.deep.equal([first]);
    const one = await app.http.get(`/audit/v1/checkpoints/${first.id}`).set(auditor);
    expect(one.body).to.deep.equal({ success: true, data: first });
    const unknown = await app.http.get('/audit/v1/checkpoints/0190a1b2-0000-7000-8000-000000000000').set(auditor);
    expect(unknown.status).to.equal(404);
    expect(unknown.body).to.include({ success: false, error: 'Checkpoint not found', code: 'checkpoint_not_found' });
    const bad = await app.http.get('/audit/v1/checkpoints?cursor=nonsense').set(auditor);
    expect(bad.status).to.equal(400);
    expect(bad.body).to.include({ code: 'invalid_cursor', param: 'cursor' });
    expect((await app.http.get('/audit/v1/checkpoints')).status).to.equal(401);
  });

  it('proves a stream head in an earlier checkpoint, and no head that is not in it', async () => {
    const partnerStream = `partner-${acme.id}`;
    const before = await take();
    const later = await registerUser(app.http, acme);
    await take();
    const res = await app.http.get(`/audit/v1/checkpoints/${before.id}/proof`).query({ stream: partnerStream }).set(auditor);
    expect(res.status, res.text).to.equal(200);
    const proof: CheckpointProof = res.body.data;
    expect(proof).to.include({ checkpointId: before.id, treeSize: before.streams });
    expect(proof.leaf.stream).to.equal(partnerStream);
    expect(proves(proof, before.root)).to.equal(true);
    expect(proves({ ...proof, leaf: { ...proof.leaf, revision: proof.leaf.revision + 1 } }, before.root)).to.equal(false);
    const missing = await app.http
      .get(`/audit/v1/checkpoints/${before.id}/proof`)
      .query({ stream: `user-${later}` })
      .set(auditor);
    expect(missing.status).to.equal(404);
    expect(missing.body).to.include({ error: 'Stream not in checkpoint', code: 'stream_not_in_checkpoint' });
  });

  it('signs on its timer only when the log grew by other than checkpoints, and two nodes never fork the chain', async () => {
    // Rounds of 0 ms: each call is a round after the last checkpoint's (the minute between them is not waited here).
    const a = otherNode(0);
    const b = otherNode(0);
    await a.now();
    expect(await a.checkpointer.checkpointIfGrown()).to.equal(null);
    // A node started later starts from the audit read model's heads: nothing new either.
    expect(await b.checkpointer.checkpointIfGrown()).to.equal(null);
    await registerUser(app.http, acme);
    const [one, two] = await Promise.all([a.now(), b.now()]);
    expect(one.id).to.not.equal(two.id);
    // Each node has read the other's checkpoint: the growth is signed for.
    expect(await a.checkpointer.checkpointIfGrown()).to.equal(null);
    expect(await b.checkpointer.checkpointIfGrown()).to.equal(null);
    // An auditor's read is recorded in the log: growth the next round signs.
    for (const c of [one, two]) {
      const proof = await app.http
        .get(`/audit/v1/checkpoints/${c.id}/proof`)
        .query({ stream: `partner-${acme.id}` })
        .set(auditor);
      expect(proves(proof.body.data, c.root), c.id).to.equal(true);
    }
    expect(await a.checkpointer.checkpointIfGrown()).to.include({ kid: one.kid });
  });

  it("holds only the heads that moved since the read model's last checkpoint, however many streams the tree has", async () => {
    for (let i = 0; i < 5; i++) await registerUser(app.http, acme);
    const first = await app.tally.checkpoints.now();
    await registerUser(app.http, acme);
    const second = await app.tally.checkpoints.now();
    expect(second.streams).to.be.greaterThan(first.streams);
    expect(first.streams).to.be.greaterThan(20);
    // The first checkpoint's heads are in the read model: this node keeps only what moved after it
    // (the new user's streams and the checkpoint stream's own head).
    expect(app.tally.checkpoints.checkpointer.held).to.be.lessThan(8);
    const proof = await app.http
      .get(`/audit/v1/checkpoints/${second.id}/proof`)
      .query({ stream: `partner-${acme.id}` })
      .set(auditor);
    expect(proves(proof.body.data, second.root)).to.equal(true);
  });

  it('follows the log between its rounds: what moved is read before the round comes', async () => {
    const node = otherNode(60_000);
    await app.tally.checkpoints.now();
    node.start();
    try {
      await registerUser(app.http, acme);
      const until = Date.now() + 5_000;
      while (node.checkpointer.held === 0 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 50));
      // The new user's streams are held, read a second after they moved, and no round has come.
      expect(node.checkpointer.held).to.be.greaterThan(1);
      expect(node.checkpointer.appendedAt).to.equal('');
    } finally {
      await node.stop();
    }
  });

  it("folds its tree in a thread of its own on Postgres, and the node proves from the tree that thread told it, with no pass of the node's own", async () => {
    expect(app.tally.checkpoints.checkpointer).to.be.instanceOf(CheckpointerThread);
    const fold = BlockedTree.fold;
    let folds = 0;
    BlockedTree.fold = (...args) => {
      folds++;
      return fold.apply(BlockedTree, args);
    };
    try {
      await registerUser(app.http, acme);
      const checkpoint = await take();
      expect(app.tally.checkpoints.checkpointer.appendedAt).to.not.equal('');
      const proof = await app.http
        .get(`/audit/v1/checkpoints/${checkpoint.id}/proof`)
        .query({ stream: `partner-${acme.id}` })
        .set(auditor);
      expect(proof.status, proof.text).to.equal(200);
      expect(proves(proof.body.data, checkpoint.root)).to.equal(true);
      expect(folds).to.equal(0);
    } finally {
      BlockedTree.fold = fold;
    }
  });

  /** Runs `fn` with one leaf hash of the audit read model's current heads changed, then puts it back. */
  const withTamperedLeaf = async (fn: () => Promise<void>): Promise<void> => {
    await app.tally.checkpoints.now();
    const [row] = await app.tally.sql.query<{ stream: string; leaf: string }>(
      `SELECT stream, encode(leaf, 'hex') AS leaf FROM rm_audit_heads WHERE stream = $1`,
      [`partner-${acme.id}`],
    );
    expect(row).to.not.equal(undefined);
    // The leaf hashes are what a root is folded from.
    await app.tally.sql.query(`UPDATE rm_audit_heads SET leaf = decode($2, 'hex') WHERE stream = $1`, [row?.stream, 'f'.repeat(64)]);
    try {
      await fn();
    } finally {
      await app.tally.sql.query(`UPDATE rm_audit_heads SET leaf = decode($2, 'hex') WHERE stream = $1`, [row?.stream, row?.leaf]);
    }
  };

  it('signs nothing over a read model whose heads do not give the signed root of its checkpoint', async () => {
    await withTamperedLeaf(async () => {
      let refused: unknown;
      await otherNode()
        .now()
        .catch((error: unknown) => {
          refused = error;
        });
      expect(String(refused)).to.match(/do not give its signed root/);
    });
  });

  it('checks such heads once per round, not at each second it follows the log', async () => {
    await withTamperedLeaf(async () => {
      const node = otherNode(60_000);
      const fold = BlockedTree.fold;
      let folds = 0;
      BlockedTree.fold = (...args) => {
        folds++;
        return fold.apply(BlockedTree, args);
      };
      node.start();
      try {
        await new Promise((resolve) => setTimeout(resolve, 3_500));
        // The first look folded the heads to check them, found them wrong, and left the rest to the round.
        expect(folds).to.equal(1);
        expect(node.checkpointer.held).to.equal(0);
      } finally {
        await node.stop();
        BlockedTree.fold = fold;
      }
    });
  });

  it('skips a timer round while another node signed within it: one pass over the streams per minute, not one per node', async () => {
    const [a, b] = [otherNode(60_000), otherNode(60_000)];
    await registerUser(app.http, acme);
    const signed = await a.now();
    await registerUser(app.http, acme);
    // The log grew since, but a's checkpoint is seconds old: b's round leaves the minute to it.
    expect(await b.checkpointer.checkpointIfGrown()).to.equal(null);
    // On demand, b signs whatever the age.
    expect(comparePositions((await b.now()).position, signed.position)).to.equal(1);
  });
});
