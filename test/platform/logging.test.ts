import { Writable } from 'node:stream';
import { expect } from 'chai';
import pino from 'pino';
import { loggerOptions, maskText, redactFields, serializeError } from '../../src/platform/logging';

describe('what the logger keeps out of the logs', () => {
  it('redacts personal and secret fields by name at any depth, in arrays too, and leaves the logged object as it was', () => {
    const logged = {
      requestId: 'r1',
      body: { email: 'ada@example.com', profile: { firstName: 'Ada', nested: [{ cvc: '123' }] } },
      headers: { authorization: 'Bearer x' },
    };
    const copy = structuredClone(logged);
    expect(redactFields(logged)).to.deep.equal({
      requestId: 'r1',
      body: { email: '[redacted]', profile: { firstName: '[redacted]', nested: [{ cvc: '[redacted]' }] } },
      headers: { authorization: '[redacted]' },
    });
    expect(logged, 'not changed in place').to.deep.equal(copy);
    const clean = { requestId: 'r1', method: 'GET', route: '/x', status: 200, ms: 3 };
    expect(redactFields(clean), 'an object with nothing to redact is the same object (no copy)').to.equal(clean);
  });

  it('logs of an error its type, masked message and stack and descriptive fields only, through its causes', () => {
    const cause = Object.assign(new Error('no route to smtp for bob@example.org'), { code: 'EHOSTUNREACH', response: 'RCPT TO:<bob@example.org>' });
    const error = Object.assign(new Error('send to ada@example.com (+57 300 123 4567) failed', { cause }), {
      code: '23505',
      constraint: 'users_email_key',
      detail: 'Key (email)=(ada@example.com) already exists.',
      parameters: ['ada@example.com'],
    });
    const out = serializeError(error) as Record<string, unknown>;
    expect(out).to.include({ type: 'Error', message: 'send to [email] ([number]) failed', code: '23505', constraint: 'users_email_key' });
    expect(out).not.to.have.any.keys('detail', 'parameters');
    expect(JSON.stringify(out)).not.to.contain('example.com').and.not.to.contain('123 4567');
    expect(out.cause).to.deep.include({ type: 'Error', message: 'no route to smtp for [email]', code: 'EHOSTUNREACH' });
    expect(out.cause).not.to.have.property('response');
  });

  it('masks emails and long numbers but not dates, times, ids or short numbers', () => {
    expect(maskText('at 2026-11-27T10:00:00Z for 01934b7e-1234-7abc-9def-0123456789ab on port 5432')).to.equal(
      'at 2026-11-27T10:00:00Z for 01934b7e-1234-7abc-9def-0123456789ab on port 5432',
    );
    expect(maskText('card 4000001234567899, phone +573001234567, mail a.b+c@d.co')).to.equal('card [number], phone [number], mail [email]');
  });

  it('is what a logger built with loggerOptions writes', () => {
    const lines: string[] = [];
    const log = pino(
      loggerOptions('info'),
      new Writable({
        write(chunk, _encoding, done) {
          lines.push(String(chunk));
          done();
        },
      }),
    );
    log.info({ user: { email: 'ada@example.com', id: 'u1' }, err: new Error('for ada@example.com') }, 'something');
    const line = JSON.parse(lines[0] ?? '{}');
    expect(line.user).to.deep.equal({ email: '[redacted]', id: 'u1' });
    expect(line.err.message).to.equal('for [email]');
  });
});
