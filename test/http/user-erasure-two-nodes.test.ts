import { expect } from 'chai';
import { ADMIN_TOKEN, createPartner, type PartnerCredentials, startTwoNodes, type TestApp } from '../support/app';
import { issuedCard } from '../support/cards';
import { type Customer, customer } from '../support/ledger';

/**
 * Erasure on one node, with another node that holds the user's data key in memory (it revealed the
 * card's secrets a moment before): the second node stops at once, without waiting for its key's time
 * to live. Every use of the key there is behind the user's session (ended: the users read model has
 * passed the erasure before it answered) or the card (canceled in its stream before it answered).
 */
describe('erasure on two nodes', () => {
  let first: TestApp;
  let second: TestApp;
  let nodes: Awaited<ReturnType<typeof startTwoNodes>>;
  let acme: PartnerCredentials;
  let ada: Customer;
  let cardId: string;

  before(async () => {
    nodes = await startTwoNodes();
    ({ first, second } = nodes);
    acme = await createPartner(first.http, 'Acme');
    ada = await customer(first.http, acme);
    cardId = (await issuedCard(first.http, acme, ada.bearer)).id;
  });
  after(() => nodes?.close());

  it('the other node, which used the key a moment before, refuses every use of it as soon as the erasure answered', async () => {
    const reveal = (node: typeof first) => node.http.get('/api/v1/cards/secrets').set(ada.bearer);
    const before = await reveal(second);
    expect(before.status, before.text).to.equal(200);
    expect(before.body.data.cardNumber).to.match(/^\d{16}$/);

    const erased = await first.http.post(`/api/v1/partner/users/${ada.id}/erase`).set(acme.headers).send();
    expect(erased.status, erased.text).to.equal(200);

    const after = await reveal(second);
    expect([after.status, after.body.code]).to.deep.equal([401, 'token_invalid']);
    expect(JSON.stringify(after.body)).to.not.contain(before.body.data.cardNumber);
    for (const path of [`/api/v1/partner/users/${ada.id}`, `/api/v1/partner/users/${ada.id}/export`]) {
      const res = await second.http.get(path).set(acme.headers);
      expect([res.status, res.body.error], path).to.deep.equal([404, 'User not found']);
    }
    const cancel = await second.http.post(`/admin/v1/cards/${cardId}/cancel`).set('Authorization', `Bearer ${ADMIN_TOKEN}`).send();
    expect([cancel.status, cancel.body.error]).to.deep.equal([409, 'Cannot cancel a card in status canceled']);
    // The key itself: destroyed in the table both nodes read.
    const [row] = await second.tally.sql.query<{ destroyed: boolean; wrapped: string | null }>(
      'SELECT destroyed_at IS NOT NULL AS destroyed, wrapped FROM data_keys WHERE owner = $1',
      [`user:${ada.id}`],
    );
    expect(row).to.deep.equal({ destroyed: true, wrapped: null });
  });
});
