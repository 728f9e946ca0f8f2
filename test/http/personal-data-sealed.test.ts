import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { auditVerify } from '../../src/cli/audit';
import { readEvents } from '../../src/cli/events';
import { keyOwner } from '../../src/platform/sealing/sealer';
import { capture, cliConfig } from '../cli/support';
import { ADMIN_TOKEN, createPartner, lastWrittenPosition, type PartnerCredentials, startTestApp, uniqueEmail } from '../support/app';
import { issuedCard } from '../support/cards';
import { COMPLETE_PROFILE, login } from '../support/identity';
import { fund, PAYOUT_DESTINATION, payoutRequest } from '../support/ledger';

type App = Awaited<ReturnType<typeof startTestApp>>;

/** A user's personal data, each value distinctive enough that finding it in the stored log can only mean it is there in clear. */
const PERSON = {
  phoneNumber: '+573015556677',
  firstName: 'Eudora',
  lastName: 'Thistlewaite',
  dateOfBirth: '1984-07-21',
  governmentIdNumber: 'QK5550123',
  addressLine1: 'Avenida Secreta 1093',
  annualSalary: '97531.24',
  occupation: 'Cartographer',
  /** The bank account a payout goes to, the person's own. */
  bankAccountNumber: '770011223344',
};

const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };
const SEALED = /^v2\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/** docs/personal-data.md: personal fields enter the log sealed under the user's data key, every read opens them, erasing the key leaves null. */
describe('personal data sealed in the log', function () {
  this.timeout(180_000);
  let app: App;
  let partner: PartnerCredentials;

  before(async () => {
    app = await startTestApp();
    partner = await createPartner(app.http, 'Sealed');
  });
  after(() => app?.close());

  /** Registered with a phone, profiled, KYC approved, logged in, with a card issued: every kind of personal data the log takes. */
  async function walkedUser() {
    const email = uniqueEmail('eudora');
    const registered = await app.http.post('/api/v1/partner/users').set(partner.headers).send({ email, countryCode: 'CO', phoneNumber: PERSON.phoneNumber });
    expect(registered.status, registered.text).to.equal(201);
    const userId = registered.body.data.user.id as string;
    const { phoneNumber: _, bankAccountNumber: __, ...fields } = PERSON;
    const profile = await app.http
      .post('/api/v1/user/profile')
      .set(partner.headers)
      .send({ userId, ...COMPLETE_PROFILE, ...fields });
    expect(profile.status, profile.text).to.equal(201);
    const kyc = await app.http.post('/api/v1/partner/kyc').set(partner.headers).send({ userId });
    expect(kyc.status, kyc.text).to.equal(200);
    expect((await app.http.post(`/sandbox/v1/kyc/${kyc.body.inquiryId}/complete`).set(partner.headers).send({ outcome: 'approved' })).status).to.equal(202);
    const bearer = { Authorization: `Bearer ${(await login(app.http, partner, email)).accessToken}` };
    await issuedCard(app.http, partner, bearer, { 'x-idempotency-key': randomUUID() });
    // Money in, and a payout to the person's own bank account, named and numbered as they are.
    const accountId = (await app.http.get('/api/v1/user/accounts').set(bearer)).body.items[0].id as number;
    await fund(app.http, partner, { id: userId, email, token: '', bearer, accountId }, '100');
    const payoutId = randomUUID();
    const payout = await app.http
      .post('/api/v1/user/payout')
      .set(bearer)
      .send(
        payoutRequest({
          transactionId: payoutId,
          destination: {
            ...PAYOUT_DESTINATION,
            accountNumber: PERSON.bankAccountNumber,
            ownerName: `${PERSON.firstName} ${PERSON.lastName}`,
            ownerDocumentNumber: PERSON.governmentIdNumber,
          },
        }),
      );
    expect(payout.status, payout.text).to.equal(200);
    expect((await app.http.post(`/sandbox/v1/payouts/${payout.body.paymentId}/settle`).set(partner.headers).send()).status).to.equal(202);
    return { userId, email, bearer, payoutId };
  }

  const storedRows = (streams: string[]) =>
    app.tally.sql.query<{ stream_id: string; type: string; data: Record<string, unknown>; text: string }>(
      'SELECT stream_id, type, data, data::text || metadata::text AS text FROM es_events WHERE stream_id = ANY($1::text[]) ORDER BY global_position',
      [streams],
    );

  it('stores the email, phone, names, birth date, document, address, salary and IP address only sealed, while every read shows them', async () => {
    const { userId, email, bearer } = await walkedUser();
    const document = await app.http.get('/api/v1/user/kyc/document/me').set(bearer);
    expect(document.status, document.text).to.equal(200);
    const idNumber = document.body.data.document.idNumber as string;
    expect(idNumber).to.match(/^S\d{8}$/);

    const everything = await app.tally.sql.query<{ text: string }>('SELECT data::text || metadata::text AS text FROM es_events');
    const log = everything.map((r) => r.text).join('\n');
    const personal: Record<string, string> = { ...PERSON, email, emailLocalPart: email.split('@')[0] as string, documentNumber: idNumber };
    for (const [name, value] of Object.entries(personal)) expect(log.includes(value), `the stored log shows the ${name}`).to.equal(false);

    const rows = await storedRows([`user-${userId}`, `profile-${userId}`, `kyc-${userId}`]);
    const registered = rows.find((r) => r.type === 'UserRegistered');
    expect(registered?.data.email).to.match(SEALED);
    expect(registered?.data.phoneNumber).to.match(SEALED);
    expect(registered?.data.countryCode, 'not personal data: in clear').to.equal('CO');
    const profile = rows.find((r) => r.type === 'ProfileCreated')?.data.fields as Record<string, string>;
    for (const field of Object.keys(COMPLETE_PROFILE)) expect(profile[field], field).to.match(SEALED);
    const approved = rows.find((r) => r.type === 'KycStatusChanged' && r.data.to === 'approved')?.data.document as Record<string, string>;
    expect(approved.idNumber).to.match(SEALED);
    const [submitted] = await app.tally.sql.query<{ data: Record<string, unknown> }>(
      `SELECT data FROM es_events WHERE type = 'CardApplicationSubmitted' AND data->>'userId' = $1`,
      [userId],
    );
    expect(submitted?.data.ipAddress).to.match(SEALED);
    expect(submitted?.data.annualSalary).to.match(SEALED);
    expect(submitted?.data.cardType, 'not personal data: in clear').to.equal('virtual');

    const user = await app.http.get(`/api/v1/partner/users/${userId}`).set(partner.headers);
    expect(user.body.data.user).to.include({ email, phoneNumber: PERSON.phoneNumber });
    const read = await app.http.get(`/api/v1/user/profile?userId=${userId}`).set(partner.headers);
    expect(read.body.data.profile).to.include({ firstName: PERSON.firstName, lastName: PERSON.lastName, governmentIdNumber: PERSON.governmentIdNumber });
    expect(read.body.data.profile).to.include({ addressLine1: PERSON.addressLine1, annualSalary: PERSON.annualSalary, dateOfBirth: PERSON.dateOfBirth });
    const application = await app.http.get('/api/v1/cards/application/status').set(bearer);
    expect(application.body.data.application).to.include({ occupation: PERSON.occupation, annualSalary: PERSON.annualSalary });
    expect(application.body.data.application.ipAddress).to.be.a('string').and.not.match(SEALED);
    const exported = await app.http.get(`/api/v1/partner/users/${userId}/export`).set(partner.headers);
    expect(exported.body.data.profile.firstName).to.equal(PERSON.firstName);
    expect(exported.body.data.kyc.document.document.idNumber).to.equal(idNumber);

    // The auditor reads the log as stored: sealed.
    const auditor = await app.http
      .post('/admin/v1/auditors')
      .set(admin)
      .send({ name: 'Seal check', expiresAt: new Date(Date.now() + 86_400_000).toISOString() });
    expect(auditor.status, auditor.text).to.equal(201);
    const stream = await app.http.get(`/audit/v1/streams/user-${userId}`).set({ Authorization: `Bearer ${auditor.body.data.token}` });
    expect(stream.status, stream.text).to.equal(200);
    expect(stream.body.data.events[0].data.email).to.equal(registered?.data.email);

    const io = capture();
    const report = await auditVerify(cliConfig({ databaseUrl: app.config.databaseUrl, dataDir: app.config.dataDir }), io);
    expect(report.ok, io.text()).to.equal(true);
  });

  it('reads an erased user’s personal fields as null: projections rebuilt from the log hold null, and none stops', async () => {
    const erased = await walkedUser();
    const kept = await walkedUser();
    expect(await app.tally.sealer.keys.destroy(keyOwner.user(erased.userId))).to.equal(true);
    // A late event about them (a provider's callback, say) is written without what they were.
    const late = { id: randomUUID(), type: 'ProfileUpdated', data: { userId: erased.userId, changes: { lastName: 'Latecomer' } } };
    await app.tally.events.append(`profile-${erased.userId}`, [late], 'stream_exists');
    const [stored] = await app.tally.sql.query<{ data: { changes: Record<string, unknown> } }>('SELECT data FROM es_events WHERE event_id = $1', [late.id]);
    expect(stored?.data.changes).to.deep.equal({ lastName: null });
    for (const name of ['users', 'profiles', 'kyc']) {
      const rebuilt = await app.http.post(`/admin/v1/projections/${name}/rebuild`).set(admin);
      expect(rebuilt.status, `${name}: ${rebuilt.text}`).to.equal(200);
    }
    const projections = await app.http.get('/admin/v1/projections').set(admin);
    for (const p of projections.body.data) expect(p.failure ?? null, p.name).to.equal(null);

    const [user] = await app.tally.sql.query<{ email: string | null; phone_number: string | null; country_code: string }>(
      'SELECT email, phone_number, country_code FROM rm_users WHERE user_id = $1',
      [erased.userId],
    );
    expect(user).to.deep.equal({ email: null, phone_number: null, country_code: 'CO' });
    const [profile] = await app.tally.sql.query<{ fields: Record<string, unknown> }>('SELECT fields FROM rm_profiles WHERE user_id = $1', [erased.userId]);
    for (const field of Object.keys(COMPLETE_PROFILE)) expect(profile?.fields[field], field).to.equal(null);
    const documents = await app.tally.sql.query<{ document: Record<string, unknown> | null }>(
      `SELECT document FROM rm_kyc_verifications WHERE user_id = $1 AND status = 'approved'`,
      [erased.userId],
    );
    expect(documents[0]?.document?.idNumber).to.equal(null);
    expect(documents[0]?.document?.type).to.equal(null);

    // Another user's data is untouched.
    const other = await app.http.get(`/api/v1/partner/users/${kept.userId}`).set(partner.headers);
    expect(other.body.data.user).to.include({ email: kept.email, phoneNumber: PERSON.phoneNumber });
    const otherProfile = await app.http.get(`/api/v1/user/profile?userId=${kept.userId}`).set(partner.headers);
    expect(otherProfile.body.data.profile.lastName).to.equal(PERSON.lastName);

    // The card secrets went with the key: not a 500.
    const secrets = await app.http.get('/api/v1/cards/secrets').set(erased.bearer);
    expect(secrets.status, secrets.text).to.equal(404);
    expect(secrets.body).to.include({ success: false, error: 'Card not found', code: 'card_not_found' });

    // The CLI prints what is gone as [erased].
    const io = capture();
    await readEvents(cliConfig({ databaseUrl: app.config.databaseUrl, dataDir: app.config.dataDir }), `user-${erased.userId}`, {}, io);
    expect(io.text()).to.include('"email":"[erased]"').and.include('"phoneNumber":"[erased]"').and.include('"countryCode":"CO"');
  });

  it('reads events written in clear before sealing as they were, and seals an event appended again the same way (one event stored)', async () => {
    // As an older build wrote them: straight to the store underneath, in clear.
    const userId = randomUUID();
    const email = uniqueEmail('clear');
    await app.tally.store.append(
      `user-${userId}`,
      [
        {
          id: randomUUID(),
          type: 'UserRegistered',
          data: { userId, partnerId: partner.id, email, countryCode: 'CO', phoneNumber: '+573019998877', language: 'en' },
        },
      ],
      'no_stream',
    );
    await app.tally.store.append(
      `profile-${userId}`,
      [{ id: randomUUID(), type: 'ProfileCreated', data: { userId, partnerId: partner.id, fields: { firstName: 'Clementine', lastName: 'Oldlog' } } }],
      'no_stream',
    );
    // Appended beside the API: the reads wait for the read models themselves (users and profiles, each at its own pace).
    await app.tally.reads.waitFor(await lastWrittenPosition(app), ['users', 'profiles']);
    const user = await app.http.get(`/api/v1/partner/users/${userId}`).set(partner.headers);
    expect(user.status, user.text).to.equal(200);
    expect(user.body.data.user).to.include({ email, phoneNumber: '+573019998877' });
    const profile = await app.http.get(`/api/v1/user/profile?userId=${userId}`).set(partner.headers);
    expect(profile.body.data.profile).to.include({ firstName: 'Clementine', lastName: 'Oldlog' });

    // The sealing is a function of the key, the binding and the value: an append sent again is the same content.
    const again = randomUUID();
    const event = {
      id: randomUUID(),
      type: 'UserRegistered',
      data: { userId: again, partnerId: partner.id, email: uniqueEmail('again'), countryCode: 'CO', phoneNumber: null, language: 'en' },
    };
    const first = await app.tally.events.append(`user-${again}`, [event], 'no_stream');
    expect(await app.tally.events.append(`user-${again}`, [event], 'no_stream')).to.deep.equal(first);
    const rows = await storedRows([`user-${again}`]);
    expect(rows.map((r) => r.data.email)).to.have.length(1);
    expect(rows[0]?.data.email).to.match(SEALED);
    expect(rows[0]?.data.phoneNumber, 'a null stays null').to.equal(null);
    const [read] = await app.tally.events.readStream(`user-${again}`);
    expect(read?.data.email).to.equal(event.data.email);
  });
});
