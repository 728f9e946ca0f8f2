import { expect } from 'chai';
import jwt from 'jsonwebtoken';
import { ADMIN_TOKEN, createPartner, type PartnerCredentials, startTestApp, uniqueEmail } from '../support/app';
import { activeUser, latestCode, login, registerUser } from '../support/identity';

const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };

describe('identity: login codes and tokens over HTTP', () => {
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let acme: PartnerCredentials;
  let globex: PartnerCredentials;
  before(async () => {
    app = await startTestApp();
    acme = await createPartner(app.http, 'Acme');
    globex = await createPartner(app.http, 'Globex');
  });
  after(async () => {
    await app.close();
  });

  const send = (partner: PartnerCredentials, email: string) => app.http.post('/api/v1/partner/auth/send').set(partner.headers).send({ email });
  const verify = (partner: PartnerCredentials, email: string, code: string) =>
    app.http.post('/api/v1/partner/auth/verify').set(partner.headers).send({ email, code });
  const wrong = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, '0');

  describe('auth/send', () => {
    it('answers the same 200 for a registered, an unknown and another partner’s email', async () => {
      const user = await activeUser(app.http, acme);
      const answers = [await send(acme, user.email), await send(acme, uniqueEmail('nobody')), await send(globex, user.email)];
      for (const res of answers) {
        expect(res.status).to.equal(200);
        expect(res.body).to.deep.equal({ success: true, message: 'If the email is registered, a code has been sent' });
      }
    });

    it('answers the sixth send within an hour with 429, for unknown emails too', async () => {
      for (const email of [(await registerUser(app.http, acme)).email, uniqueEmail('ghost')]) {
        const statuses: number[] = [];
        for (let i = 0; i < 6; i++) statuses.push((await send(acme, email)).status);
        expect(statuses).to.deep.equal([200, 200, 200, 200, 200, 429]);
      }
    });

    it('validates the email', async () => {
      const res = await app.http.post('/api/v1/partner/auth/send').set(acme.headers).send({ email: 'nope' });
      expect(res.status).to.equal(400);
      expect(res.body.error).to.equal('email must be a valid email address');
    });

    it('keeps codes out of the event log and read models in clear', async () => {
      const user = await activeUser(app.http, acme);
      await send(acme, user.email);
      const code = await latestCode(app.http, acme, user.email);
      const [row] = await app.tally.sql.query<{ n: string }>(
        `SELECT count(*)::text AS n FROM es_events WHERE stream_id = $1 AND (data::text LIKE $2 OR metadata::text LIKE $2)`,
        [`login-${user.id}`, `%"${code}"%`],
      );
      expect(row?.n).to.equal('0');
    });
  });

  describe('auth/verify', () => {
    it('answers 401 "Invalid or expired code" for a wrong code, an unknown email and another partner’s user', async () => {
      const user = await activeUser(app.http, acme);
      await send(acme, user.email);
      const code = await latestCode(app.http, acme, user.email);
      for (const res of [await verify(acme, user.email, wrong(code)), await verify(acme, uniqueEmail('x'), code), await verify(globex, user.email, code)]) {
        expect(res.status).to.equal(401);
        expect(res.body).to.include({ success: false, error: 'Invalid or expired code', code: 'invalid_login_code' });
      }
      expect((await verify(acme, user.email, code)).status).to.equal(200);
    });

    it('accepts a code once only', async () => {
      const user = await activeUser(app.http, acme);
      await send(acme, user.email);
      const code = await latestCode(app.http, acme, user.email);
      expect((await verify(acme, user.email, code)).status).to.equal(200);
      const again = await verify(acme, user.email, code);
      expect(again.status).to.equal(401);
      expect(again.body.error).to.equal('Invalid or expired code');
    });

    it('burns the code after 5 wrong tries: the sixth guess fails even when right', async () => {
      const user = await activeUser(app.http, acme);
      await send(acme, user.email);
      const code = await latestCode(app.http, acme, user.email);
      for (let i = 0; i < 5; i++) expect((await verify(acme, user.email, wrong(code))).status).to.equal(401);
      const right = await verify(acme, user.email, code);
      expect(right.status).to.equal(401);
      expect(right.body.error).to.equal('Invalid or expired code');
    });

    it('replaces the code on a new send', async () => {
      const user = await activeUser(app.http, acme);
      await send(acme, user.email);
      const first = await latestCode(app.http, acme, user.email);
      await send(acme, user.email);
      const second = await latestCode(app.http, acme, user.email);
      if (first !== second) expect((await verify(acme, user.email, first)).status).to.equal(401);
      expect((await verify(acme, user.email, second)).status).to.equal(200);
    });

    it('answers 401 "User account is <status>" for a right code of a user who is not active', async () => {
      const pending = await registerUser(app.http, acme);
      await send(acme, pending.email);
      const pendingRes = await verify(acme, pending.email, await latestCode(app.http, acme, pending.email));
      expect(pendingRes.status).to.equal(401);
      expect(pendingRes.body).to.include({ success: false, error: 'User account is pending', code: 'user_not_active' });
      const suspended = await activeUser(app.http, acme);
      await app.http.post(`/admin/v1/users/${suspended.id}/suspend`).set(admin).send({});
      await send(acme, suspended.email);
      const suspendedRes = await verify(acme, suspended.email, await latestCode(app.http, acme, suspended.email));
      expect(suspendedRes.status).to.equal(401);
      expect(suspendedRes.body.error).to.equal('User account is suspended');
      expect(await app.tally.sql.query('SELECT 1 FROM rm_accounts WHERE user_id = $1', [pending.id])).to.have.length(0);
    });

    it('validates the code format', async () => {
      for (const code of ['12345', '1234567', 'abcdef']) {
        const res = await verify(acme, 'a@example.com', code);
        expect(res.status).to.equal(400);
        expect(res.body.error).to.equal('code must be a string of 6 digits');
      }
    });
  });

  describe('access tokens', () => {
    let user: { id: string; email: string };
    let tokens: { accessToken: string; refreshToken: string };
    before(async () => {
      user = await activeUser(app.http, acme);
      tokens = await login(app.http, acme, user.email);
    });
    const profile = (authorization?: string) => {
      const req = app.http.get('/api/v1/auth/profile');
      if (authorization !== undefined) req.set('Authorization', authorization);
      return req;
    };
    /** One message for every refused token; the code tells missing, invalid and expired apart, and the challenge is RFC 6750's. */
    const expect401 = async (authorization?: string, code = 'token_invalid') => {
      const res = await profile(authorization);
      expect(res.status, authorization).to.equal(401);
      expect(res.body, authorization).to.include({ success: false, error: 'Invalid or expired token', code, requestId: res.headers['x-request-id'] });
      expect(res.headers['www-authenticate'], authorization).to.equal(code === 'token_missing' ? 'Bearer' : 'Bearer error="invalid_token"');
    };

    it('accepts the issued token, carrying kid, iss, aud and a 15-minute lifetime', async () => {
      expect((await profile(`Bearer ${tokens.accessToken}`)).status).to.equal(200);
      const decoded = jwt.decode(tokens.accessToken, { complete: true });
      if (!decoded || typeof decoded.payload === 'string') throw new Error('not a JWT');
      expect(decoded.header.alg).to.equal('HS256');
      expect(decoded.header.kid).to.be.a('string');
      expect(decoded.payload).to.include({ sub: user.id, iss: 'tally', aud: 'tally-partner-api' });
      expect((decoded.payload.exp ?? 0) - (decoded.payload.iat ?? 0)).to.equal(900);
    });

    it('refuses no token, garbage, partner credentials, a tampered signature, alg none, an unknown kid and an expired token', async () => {
      await expect401(undefined, 'token_missing');
      await expect401('Bearer', 'token_missing');
      await expect401('Bearer not.a.jwt');
      await expect401(tokens.accessToken, 'token_missing');
      const res = await app.http.get('/api/v1/auth/profile').set(acme.headers);
      expect(res.status).to.equal(401);
      const [header, payload, signature] = tokens.accessToken.split('.');
      const flipped = `${signature?.slice(0, -2)}${signature?.endsWith('AA') ? 'BB' : 'AA'}`;
      await expect401(`Bearer ${header}.${payload}.${flipped}`);
      const claims = JSON.parse(Buffer.from(payload ?? '', 'base64url').toString());
      const noneHeader = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT', kid: jwt.decode(tokens.accessToken, { complete: true })?.header.kid })).toString(
        'base64url',
      );
      await expect401(`Bearer ${noneHeader}.${payload}.`);
      const key = app.tally.keys.signing.at(-1);
      if (!key) throw new Error('no key');
      const unknownKid = jwt.sign(claims, key.secret, { algorithm: 'HS256', keyid: 'not-a-key', noTimestamp: true });
      await expect401(`Bearer ${unknownKid}`);
      const now = Math.floor(Date.now() / 1000);
      const expired = jwt.sign({ ...claims, iat: now - 1000, exp: now - 10 }, key.secret, { algorithm: 'HS256', keyid: key.kid });
      await expect401(`Bearer ${expired}`, 'token_expired');
      // Expired and forged: the signature is checked first, so it is invalid, not expired.
      await expect401(`Bearer ${jwt.sign({ ...claims, iat: now - 1000, exp: now - 10 }, 'guessed-secret', { algorithm: 'HS256', keyid: key.kid })}`);
      const otherAudience = jwt.sign({ ...claims, aud: 'someone-else' }, key.secret, { algorithm: 'HS256', keyid: key.kid });
      await expect401(`Bearer ${otherAudience}`);
      const forged = jwt.sign(claims, 'guessed-secret', { algorithm: 'HS256', keyid: key.kid, noTimestamp: true });
      await expect401(`Bearer ${forged}`);
    });

    it('stops a token at once when its user is suspended, and for good: it stays dead after reinstatement', async () => {
      const other = await activeUser(app.http, acme);
      const session = await login(app.http, acme, other.email);
      expect((await profile(`Bearer ${session.accessToken}`)).status).to.equal(200);
      // The second use is answered from the node's memory of the session (no query): the suspension
      // below must still stop it at once.
      const hits = app.tally.sessionGate.stats.hits;
      expect((await profile(`Bearer ${session.accessToken}`)).status).to.equal(200);
      expect(app.tally.sessionGate.stats.hits).to.equal(hits + 1);
      await app.http.post(`/admin/v1/users/${other.id}/suspend`).set(admin).send({});
      await expect401(`Bearer ${session.accessToken}`);
      await app.http.post(`/admin/v1/users/${other.id}/reinstate`).set(admin).send({});
      await expect401(`Bearer ${session.accessToken}`);
      const again = await login(app.http, acme, other.email);
      expect((await profile(`Bearer ${again.accessToken}`)).status).to.equal(200);
      await app.http.post(`/admin/v1/users/${other.id}/ban`).set(admin).send({});
      await expect401(`Bearer ${again.accessToken}`);
    });
  });

  describe('refresh and logout', () => {
    it('rotates the refresh token; a reused spent one revokes the whole session', async () => {
      const user = await activeUser(app.http, acme);
      const first = await login(app.http, acme, user.email);
      const refreshed = await app.http.post('/api/v1/partner/auth/refresh').set(acme.headers).send({ refreshToken: first.refreshToken });
      expect(refreshed.status).to.equal(200);
      expect(refreshed.body).to.include({ success: true, tokenType: 'Bearer' });
      expect(refreshed.body.user).to.deep.equal({ id: user.id, email: user.email, status: 'active' });
      expect(refreshed.body.refreshToken).to.not.equal(first.refreshToken);
      expect((await app.http.get('/api/v1/auth/profile').set('Authorization', `Bearer ${refreshed.body.accessToken}`)).status).to.equal(200);
      const reuse = await app.http.post('/api/v1/partner/auth/refresh').set(acme.headers).send({ refreshToken: first.refreshToken });
      expect(reuse.status).to.equal(401);
      expect(reuse.body).to.include({ error: 'Invalid or expired token', code: 'refresh_token_invalid' });
      // The whole session is gone: the newest refresh token and the access tokens too.
      const newest = await app.http.post('/api/v1/partner/auth/refresh').set(acme.headers).send({ refreshToken: refreshed.body.refreshToken });
      expect(newest.status).to.equal(401);
      expect((await app.http.get('/api/v1/auth/profile').set('Authorization', `Bearer ${refreshed.body.accessToken}`)).status).to.equal(401);
    });

    it('refuses another partner’s refresh token and a malformed one', async () => {
      const user = await activeUser(app.http, acme);
      const tokens = await login(app.http, acme, user.email);
      for (const [partner, refreshToken] of [
        [globex, tokens.refreshToken],
        [acme, 'rt_garbage'],
        [acme, `${tokens.refreshToken.slice(0, -3)}abc`],
      ] as const) {
        const res = await app.http.post('/api/v1/partner/auth/refresh').set(partner.headers).send({ refreshToken });
        expect(res.status).to.equal(401);
        expect(res.body).to.include({ error: 'Invalid or expired token', code: 'refresh_token_invalid' });
      }
      expect((await app.http.post('/api/v1/partner/auth/refresh').set(acme.headers).send({ refreshToken: tokens.refreshToken })).status).to.equal(200);
    });

    it('logs out: the refresh token and the session’s access tokens stop working', async () => {
      const user = await activeUser(app.http, acme);
      const tokens = await login(app.http, acme, user.email);
      // Used twice before the logout: the node remembers the session as active.
      for (let i = 0; i < 2; i++)
        expect((await app.http.get('/api/v1/auth/profile').set('Authorization', `Bearer ${tokens.accessToken}`)).status).to.equal(200);
      const out = await app.http.post('/api/v1/partner/auth/logout').set(acme.headers).send({ refreshToken: tokens.refreshToken });
      expect(out.status).to.equal(200);
      expect(out.body).to.deep.equal({ success: true, message: 'Logged out' });
      expect((await app.http.post('/api/v1/partner/auth/refresh').set(acme.headers).send({ refreshToken: tokens.refreshToken })).status).to.equal(401);
      expect((await app.http.get('/api/v1/auth/profile').set('Authorization', `Bearer ${tokens.accessToken}`)).status).to.equal(401);
    });
  });

  describe('retired routes', () => {
    it('answers the deprecated client-SDK login with 410 and the way forward', async () => {
      const res = await app.http.post('/api/v1/partner/auth/login').set(acme.headers).send({});
      expect(res.status).to.equal(410);
      expect(res.body).to.include({
        success: false,
        error: 'This endpoint is deprecated. Use /api/v1/partner/auth/send and /api/v1/partner/auth/verify',
        code: 'login_deprecated',
      });
    });
  });
  describe('two nodes on one database', () => {
    it('stops a token at once on both nodes, whichever node suspends or logs out, and for good; only the projections’ owner answers from memory', async () => {
      const second = await startTestApp({ databaseUrl: app.config.databaseUrl });
      try {
        const use = (node: typeof app, token: string) => node.http.get('/api/v1/auth/profile').set('Authorization', `Bearer ${token}`);
        const user = await activeUser(app.http, acme);
        const session = await login(app.http, acme, user.email);
        const hitsOnSecond = second.tally.sessionGate.stats.hits;
        for (const node of [app, second, app, second]) expect((await use(node, session.accessToken)).status).to.equal(200);
        // The first node holds the projection leases; the second asks the database every time.
        expect(second.tally.sessionGate.stats.hits).to.equal(hitsOnSecond);
        await second.http.post(`/admin/v1/users/${user.id}/suspend`).set(admin).send({});
        for (const node of [app, second]) expect((await use(node, session.accessToken)).status).to.equal(401);
        await app.http.post(`/admin/v1/users/${user.id}/reinstate`).set(admin).send({});
        for (const node of [app, second, app]) expect((await use(node, session.accessToken)).status).to.equal(401);
        const again = await login(app.http, acme, user.email);
        for (const node of [app, second, app, second]) expect((await use(node, again.accessToken)).status).to.equal(200);
        const out = await second.http.post('/api/v1/partner/auth/logout').set(acme.headers).send({ refreshToken: again.refreshToken });
        expect(out.status).to.equal(200);
        for (const node of [app, second]) expect((await use(node, again.accessToken)).status).to.equal(401);
      } finally {
        await second.close();
      }
    });
  });
});
