import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import { makeLogger } from '../../src/server';
import { createPartner, type PartnerCredentials, startTestApp, uniqueEmail } from '../support/app';
import { COMPLETE_PROFILE, latestCode } from '../support/identity';
import { issuedCard } from '../support/cards';

type App = Awaited<ReturnType<typeof startTestApp>>;

/** A user's personal data, each value distinctive enough that finding it in the log can only mean it leaked. */
const PERSON = {
  phoneNumber: '+573014445566',
  kycPhone: '+573017778899',
  firstName: 'Zenobia',
  lastName: 'Quillfeather',
  dateOfBirth: '1987-03-14',
  governmentIdNumber: 'ZX9876543',
  addressLine1: 'Carrera Falsa 742',
  annualSalary: '123456.78',
};

describe('logs carry no personal data or secrets', function () {
  this.timeout(120_000);
  let app: App;
  let partner: PartnerCredentials;
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });

  before(async () => {
    // The service's own logger (makeLogger, as `npm start` builds it), at its most talkative level.
    app = await startTestApp({}, makeLogger('trace', sink));
    partner = await createPartner(app.http, 'Logs');
  });

  after(async () => {
    await app.close();
  });

  it('logs none of a user’s email, phone, names, birth date, document, address, salary, login code, tokens, API secret, card number, CVC or PIN', async () => {
    const email = uniqueEmail('zenobia');
    const secrets: Record<string, string> = { ...PERSON, apiSecret: partner.apiSecret, email };
    const http = app.http;
    const registered = await http.post('/api/v1/partner/users').set(partner.headers).send({ email: email, countryCode: 'CO', phoneNumber: PERSON.phoneNumber });
    expect(registered.status).to.equal(201);
    const userId = registered.body.data.user.id as string;

    // A request refused by validation, personal data in its body.
    const invalid = await http
      .post('/api/v1/user/profile')
      .set(partner.headers)
      .send({
        userId,
        ...COMPLETE_PROFILE,
        ...pick(PERSON, 'firstName', 'lastName', 'governmentIdNumber', 'addressLine1', 'annualSalary'),
        dateOfBirth: 'not a date',
      });
    expect(invalid.status).to.equal(400);

    const profile = await http
      .post('/api/v1/user/profile')
      .set(partner.headers)
      .send({ userId, ...COMPLETE_PROFILE, ...pick(PERSON, 'firstName', 'lastName', 'dateOfBirth', 'governmentIdNumber', 'addressLine1', 'annualSalary') });
    expect(profile.status, JSON.stringify(profile.body)).to.equal(201);
    const kyc = await http.post('/api/v1/partner/kyc').set(partner.headers).send({ userId, phone: PERSON.kycPhone });
    expect(kyc.status, JSON.stringify(kyc.body)).to.equal(200);
    expect((await http.post(`/sandbox/v1/kyc/${kyc.body.inquiryId}/complete`).set(partner.headers).send({ outcome: 'approved' })).status).to.equal(202);

    expect((await http.post('/api/v1/partner/auth/send').set(partner.headers).send({ email: email })).status).to.equal(200);
    secrets.loginCode = await latestCode(http, partner, email);
    const wrongCode = await http.post('/api/v1/partner/auth/verify').set(partner.headers).send({ email: email, code: '000000' });
    expect(wrongCode.status).to.equal(401);
    const verified = await http.post('/api/v1/partner/auth/verify').set(partner.headers).send({ email: email, code: secrets.loginCode });
    expect(verified.status).to.equal(200);
    secrets.accessToken = verified.body.accessToken;
    secrets.refreshToken = verified.body.refreshToken;
    const bearer = { Authorization: `Bearer ${secrets.accessToken}` };

    const key = () => ({ 'x-idempotency-key': randomUUID() });
    await issuedCard(http, partner, bearer, key());
    secrets.pin = '8642';
    expect((await http.put('/api/v1/cards/pin').set(bearer).set(key()).send({ pin: secrets.pin })).status).to.equal(200);
    const revealed = await http.get('/api/v1/cards/secrets').set(bearer);
    expect(revealed.status).to.equal(200);
    secrets.cardNumber = revealed.body.data.cardNumber;
    secrets.cvc = revealed.body.data.cvc;

    // A forced 500: the error quotes the user's email and phone in its message and, as a Postgres
    // error does, the row's values in `detail` and the query's parameters.
    const get = app.tally.users.get;
    app.tally.users.get = async () => {
      throw Object.assign(new Error(`duplicate key value for ${email} (${PERSON.phoneNumber})`), {
        code: '23505',
        detail: `Key (email)=(${email}) already exists.`,
        parameters: [email, PERSON.firstName],
      });
    };
    let failed: { status: number };
    try {
      failed = await http.get(`/api/v1/partner/users/${userId}`).set(partner.headers);
    } finally {
      app.tally.users.get = get;
    }
    expect(failed.status).to.equal(500);

    const log = lines.join('');
    expect(
      lines.some((l) => l.includes('"msg":"request failed"') && l.includes('"code":"23505"')),
      'the 500 was logged, with its code',
    ).to.equal(true);
    expect(lines.filter((l) => l.includes('"msg":"request"')).length, 'every request has its line').to.be.greaterThan(15);
    // A few digits (the CVC, the PIN, the login code; strings in the API) are sought as a value of
    // their own: inside a longer run of digits or hex (a timestamp, a uuid) or as a bare JSON number
    // (a status, a duration) they are only a coincidence.
    const shows = (value: string) => (/^\d{1,7}$/.test(value) ? new RegExp(`(?<![0-9a-fA-F])(?<!":)${value}(?![0-9a-fA-F])`).test(log) : log.includes(value));
    for (const [name, value] of Object.entries(secrets)) expect(shows(value), `the log shows the ${name}`).to.equal(false);
    expect(log.includes(email.split('@')[0] ?? email), 'the local part of the email').to.equal(false);
    expect(log.includes(PERSON.phoneNumber.slice(1)), 'the phone without its +').to.equal(false);
  });
});

function pick<T extends object, K extends keyof T>(from: T, ...keys: K[]): Pick<T, K> {
  return Object.fromEntries(keys.map((k) => [k, from[k]])) as Pick<T, K>;
}
