import { expect } from 'chai';
import { ADMIN_TOKEN, createPartner, type PartnerCredentials, startTestApp } from '../support/app';

const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };

describe('partner keys remembered by the node that runs the partners projection', function () {
  this.timeout(60_000);
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let second: Awaited<ReturnType<typeof startTestApp>>;
  let acme: PartnerCredentials & { id: string };

  before(async () => {
    app = await startTestApp();
    second = await startTestApp({ databaseUrl: app.config.databaseUrl });
    acme = (await createPartner(app.http, 'Keys')) as PartnerCredentials & { id: string };
  });
  after(async () => {
    await second?.close();
    await app?.close();
  });

  const use = (node: typeof app, headers: Record<string, string>) => node.http.get('/api/v1/partner/users').set(headers);

  it('answers a known key from memory on the owner only, and refuses it at once on both nodes once revoked on either', async () => {
    const created = await second.http.post(`/admin/v1/partners/${acme.id}/keys`).set(admin).send({});
    expect(created.status).to.equal(201);
    const other = { 'X-Api-Key': created.body.apiKey, 'X-Api-Secret': created.body.apiSecret };
    const [ownerHits, secondHits] = [app.tally.partners.keys.hits, second.tally.partners.keys.hits];
    for (const node of [app, second, app, second]) for (const headers of [acme.headers, other]) expect((await use(node, headers)).status).to.equal(200);
    expect(app.tally.partners.keys.hits).to.be.above(ownerHits);
    expect(second.tally.partners.keys.hits).to.equal(secondHits);

    // Revoked through the node that does not run the projection: the owner forgets it when it applies the revocation.
    expect((await second.http.delete(`/admin/v1/partners/${acme.id}/keys/${acme.apiKey}`).set(admin)).status).to.equal(204);
    for (const node of [app, second]) expect((await use(node, acme.headers)).status).to.equal(401);
    // Revoked through the owner.
    expect((await app.http.delete(`/admin/v1/partners/${acme.id}/keys/${created.body.apiKey}`).set(admin)).status).to.equal(204);
    for (const node of [app, second]) expect((await use(node, other)).status).to.equal(401);
  });
});
