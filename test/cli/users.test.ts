import { expect } from 'chai';
import { auditVerify } from '../../src/cli/audit';
import { CliError } from '../../src/cli/context';
import { buildProgram } from '../../src/cli/index';
import { eraseUser } from '../../src/cli/users';
import { createPartner, type PartnerCredentials, startTestApp } from '../support/app';
import { issuedCard } from '../support/cards';
import { customer, fund } from '../support/ledger';
import { capture, cliConfig, registerUser } from './support';

/** `tally users erase <userId>`: the operator's erasure, on the running server's Postgres. */
describe('tally users erase', () => {
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let acme: PartnerCredentials;
  let config: ReturnType<typeof cliConfig>;

  before(async () => {
    app = await startTestApp();
    acme = await createPartner(app.http, 'Acme');
    config = cliConfig({ databaseUrl: app.config.databaseUrl, dataDir: app.config.dataDir });
  });
  after(() => app.close());

  it('erases the user and prints its id and when; the server then answers 404 for it', async () => {
    const userId = await registerUser(app.http, acme);
    const io = capture();
    await buildProgram({ config: () => config, io }).parseAsync(['node', 'tally', 'users', 'erase', userId]);
    expect(io.lines[0]).to.equal(`userId: ${userId}`);
    expect(Number.isNaN(Date.parse(io.lines[1]?.replace('erasedAt: ', '') ?? ''))).to.equal(false);
    const res = await app.http.get(`/api/v1/partner/users/${userId}`).set(acme.headers);
    expect([res.status, res.body.error]).to.deep.equal([404, 'User not found']);
  });

  it('leaves a log and read models that `tally audit verify` passes (hash chains, folds, books, card holds)', async () => {
    const who = await customer(app.http, acme);
    await issuedCard(app.http, acme, who.bearer);
    await eraseUser(config, who.id, capture());
    const io = capture();
    const report = await auditVerify(config, io);
    expect(report.ok, io.text()).to.equal(true);
  });

  it('reports a refusal as the API words it, and erases nothing: money left, an erased user, a malformed id', async () => {
    const funded = await customer(app.http, acme);
    await fund(app.http, acme, funded, '1');
    const erased = await registerUser(app.http, acme);
    await eraseUser(config, erased, capture());
    for (const [userId, message] of <Array<[string, string]>>[
      [funded.id, 'User has a non-zero balance'],
      [erased, 'User not found'],
      ['nope', 'Not a user id (a UUID): nope'],
    ]) {
      const io = capture();
      const failure = await eraseUser(config, userId, io).then(
        () => null,
        (error: unknown) => error,
      );
      expect(failure, userId).to.be.instanceOf(CliError);
      expect((failure as CliError).message).to.equal(message);
      expect(io.lines).to.deep.equal([]);
    }
    expect((await app.http.get(`/api/v1/partner/users/${funded.id}`).set(acme.headers)).status).to.equal(200);
  });
});
