import { expect } from 'chai';
import type { JsonObject } from '../../src/eventstore/port';
import { userStream } from '../../src/domain/identity';
import { keyOwner } from '../../src/platform/sealing/sealer';
import { createPartner, type PartnerCredentials, startTwoNodes, type TestApp } from '../support/app';
import { issuedCard } from '../support/cards';
import { balanceOf, type Customer, customer, fund } from '../support/ledger';
import { within } from '../support/wait';

type Node = TestApp;

/** A node's time to live of a data key (DataKeys' default): what held a destroyed key on another node before the signal. */
const TTL_MS = 30_000;

/**
 * The node-wide forget signal, with two nodes on one Postgres: a node that holds a user's data key
 * (it opened the user's sealed events, and remembers the card holder's names) drops both as soon as
 * another node's erasure commits, far within the key's time to live; its next open of the user's
 * sealed values gives null, and its next card authorization of the user names nobody. A node whose
 * listening connection is cut listens again and forgets every key it held.
 */
describe('erasure heard by every node at once (the forget signal)', () => {
  let first: Node;
  let second: Node;
  let nodes: Awaited<ReturnType<typeof startTwoNodes>>;
  let acme: PartnerCredentials;
  let ada: Customer;
  let cardId: string;
  /** The card transaction of the authorization made after the erasure. */
  let declinedAfterErasure: string;

  before(async () => {
    nodes = await startTwoNodes();
    ({ first, second } = nodes);
    acme = await createPartner(first.http, 'Acme');
    ada = await customer(first.http, acme);
    cardId = (await issuedCard(first.http, acme, ada.bearer)).id;
  });
  after(() => nodes?.close());

  /** The user's own events as the node's sealed view of the log opens them: the registration's email. */
  const emailSeenBy = async (node: Node, userId: string) => {
    const events = await node.tally.events.readStream(userStream(userId));
    return (events.find((e) => e.type === 'UserRegistered')?.data as JsonObject | undefined)?.email;
  };
  /** An authorization on Ada's card through `node` (declined: her account holds nothing, so erasure is not refused for a hold). */
  const authorize = (node: Node) =>
    node.http
      .post(`/sandbox/v1/cards/${cardId}/authorizations`)
      .set(acme.headers)
      .send({ amount: '5.00', currency: 'USD', merchantName: 'Cafe', merchantCategoryCode: '5814' });
  const holderOf = (spend: Record<string, unknown>) => [spend.userFirstName, spend.userLastName, spend.userEmail];

  it('the other node forgets the user’s key and the card holder’s names as soon as the erasure commits, and shows null', async () => {
    const owner = keyOwner.user(ada.id);
    const before = await authorize(second);
    expect(before.status, before.text).to.equal(201);
    expect([before.body.data.spend.status, ...holderOf(before.body.data.spend)]).to.deep.equal(['declined', 'Ada', 'Lovelace', ada.email]);
    expect(await emailSeenBy(second, ada.id)).to.equal(ada.email);
    const heldAt = Date.now();
    expect(second.tally.sealer.keys.holds(owner), 'the second node holds the key').to.equal(true);

    const erased = await first.http.post(`/api/v1/partner/users/${ada.id}/erase`).set(acme.headers).send();
    expect(erased.status, erased.text).to.equal(200);
    await within(2_000, 'the second node forgets the key', () => !second.tally.sealer.keys.holds(owner));
    expect(Date.now() - heldAt, 'well within the key’s time to live: only the signal explains it').to.be.below(TTL_MS / 3);

    expect(await emailSeenBy(second, ada.id), 'its sealed view opens the email as erased').to.equal(null);
    const after = await authorize(second);
    expect(after.status, after.text).to.equal(201);
    expect([after.body.data.spend.status, after.body.data.spend.declinedReason]).to.deep.equal(['declined', 'CARD_NOT_ACTIVE']);
    expect(holderOf(after.body.data.spend), 'the authorization answer names nobody').to.deep.equal([null, null, null]);
    expect(JSON.stringify(after.body)).to.not.contain(ada.email);
    declinedAfterErasure = after.body.data.id;
  });

  it('notifies a card transaction of an erased holder with null names and email (the read model’s join), not empty strings', async () => {
    let created: { data: { spend: Record<string, unknown> } } | undefined;
    // Built from the cards read model, joined with identity's, after the erasure.
    await within(10_000, 'the notification of the authorization after the erasure', async () => {
      const res = await first.http.get('/api/v1/partner/events?type=card.transaction.created&limit=100').set(acme.headers);
      created = res.body.data?.items?.find((n: { data: { id: string } }) => n.data.id === declinedAfterErasure);
      return created !== undefined;
    });
    expect(holderOf(created?.data.spend ?? {})).to.deep.equal([null, null, null]);
  });

  it('names nobody once the holder’s key is destroyed, even where the read models still show the holder (they lag the erasure)', async () => {
    // The state of a node between an erasure's destroying the key and its read models folding the
    // erasure: the key destroyed, the users and profiles read models unchanged.
    const carol = await customer(first.http, acme);
    const card = (await issuedCard(first.http, acme, carol.bearer)).id;
    const authorizeCarol = () =>
      second.http
        .post(`/sandbox/v1/cards/${card}/authorizations`)
        .set(acme.headers)
        .send({ amount: '1.00', currency: 'USD', merchantName: 'Cafe', merchantCategoryCode: '5814' });
    expect(holderOf((await authorizeCarol()).body.data.spend)).to.deep.equal(['Ada', 'Lovelace', carol.email]);
    await first.tally.sealer.keys.destroy(keyOwner.user(carol.id));
    await within(2_000, 'the second node forgets the key', () => !second.tally.sealer.keys.holds(keyOwner.user(carol.id)));
    expect((await first.http.get(`/api/v1/partner/users/${carol.id}`).set(acme.headers)).status, 'the users read model still has her').to.equal(200);
    expect(holderOf((await authorizeCarol()).body.data.spend)).to.deep.equal([null, null, null]);
  });

  it('a node whose listening connection is cut listens again and forgets every key it held', async () => {
    const bob = await customer(first.http, acme);
    const owner = keyOwner.user(bob.id);
    expect(await emailSeenBy(second, bob.id)).to.equal(bob.email);
    expect(second.tally.sealer.keys.holds(owner)).to.equal(true);
    const listening = () =>
      first.tally.sql.query<{ pid: number }>(
        `SELECT pid FROM pg_stat_activity WHERE application_name = 'tally-data-keys' AND datname = current_database() ORDER BY pid`,
      );
    const cut = (await listening()).map((r) => r.pid);
    expect(cut, 'one listening connection per node').to.have.length(2);

    await first.tally.sql.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [cut]);
    await within(5_000, 'both nodes listen again', async () => {
      const now = (await listening()).map((r) => r.pid);
      return now.length === 2 && now.every((pid) => !cut.includes(pid));
    });
    await within(2_000, 'the second node forgets what it held', () => !second.tally.sealer.keys.holds(owner));
    expect(await emailSeenBy(second, bob.id), 'read again, the key opens what it sealed').to.equal(bob.email);
  });
});

/**
 * A node that had an erased user's account open in its state cache (a transfer's first attempt trusts
 * the cache, and a credit is appended at any revision, so nothing would correct it) drops its cached
 * states when it hears of the destroyed key: its next transfer to the account is refused.
 */
describe('a transfer on another node to the account of a user erased meanwhile', () => {
  let first: Node;
  let second: Node;
  let nodes: Awaited<ReturnType<typeof startTwoNodes>>;
  let acme: PartnerCredentials;

  before(async () => {
    nodes = await startTwoNodes();
    ({ first, second } = nodes);
    acme = await createPartner(first.http, 'Acme');
  });
  after(() => nodes?.close());

  const transfer = (node: Node, from: Customer, to: Customer) =>
    node.http
      .post('/api/v1/transactions/transfer')
      .set(from.bearer)
      .send({ fromAccountId: from.accountId, toAccountId: to.accountId, amount: '1', description: 'to an erased user?' });

  it('is refused as to an unknown account, and moves nothing', async () => {
    const ada = await customer(first.http, acme);
    const bob = await customer(first.http, acme);
    await fund(first.http, acme, bob, '10');
    // The second node decides transfers to and from Ada's account: its state cache has it open.
    expect((await transfer(second, bob, ada)).status).to.equal(201);
    expect((await transfer(second, ada, bob)).status).to.equal(201);
    const erased = await first.http.post(`/api/v1/partner/users/${ada.id}/erase`).set(acme.headers).send();
    expect(erased.status, erased.text).to.equal(200);
    const owner = keyOwner.user(ada.id);
    await within(2_000, 'the second node hears of the destroyed key', () => !second.tally.sealer.keys.holds(owner));
    const refused = await transfer(second, bob, ada);
    expect([refused.status, refused.body.code]).to.deep.equal([400, 'accounts_not_found']);
    const { credits, debits } = await balanceOf(second.http, bob);
    expect([credits, debits], 'Bob: funded 10, sent 1 to Ada, who sent it back').to.deep.equal(['11.00000000', '1.00000000']);
  });
});
