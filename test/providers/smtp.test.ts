import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import { expect } from 'chai';
import { SmtpEmailSender, SmtpError, type SmtpOptions } from '../../src/providers/identity/email/smtp';

// A self-signed certificate for 127.0.0.1/localhost, valid 2000-2100, used by these tests only.
const CERT = readFileSync(path.join(__dirname, 'fixtures', 'smtp-test-cert.pem'));
const KEY = readFileSync(path.join(__dirname, 'fixtures', 'smtp-test-key.pem'));

interface FakeSession {
  commands: string[];
  auth: { mechanism: string; user: string; password: string } | null;
  mailFrom: string | null;
  rcptTo: string[];
  /** DATA exactly as received (still dot-stuffed), up to but excluding the final ".". */
  data: string | null;
  tls: boolean;
  errors: string[];
  /** Settles when the connection is gone (whichever side closed it). */
  closed: Promise<void>;
}

interface FakeOptions {
  implicitTls?: boolean;
  startTls?: boolean;
  auth?: string[];
  /** Accept connections but never say anything. */
  silent?: boolean;
  greeting?: (session: number) => string;
  rcptReply?: string;
}

const decode = (b64: string) => Buffer.from(b64, 'base64').toString('utf8');

/** Quoted-printable (=XX escapes) as bytes. */
function qpBytes(text: string): Buffer {
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '=' && /^[0-9A-F]{2}$/i.test(text.slice(i + 1, i + 3))) {
      bytes.push(Number.parseInt(text.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(text.charCodeAt(i));
  }
  return Buffer.from(bytes);
}

/** A tiny SMTP server on 127.0.0.1 that records the envelope and the data of every session. */
async function startFakeSmtp(options: FakeOptions = {}) {
  const sessions: FakeSession[] = [];
  const sockets = new Set<net.Socket>();
  const onConnection = (socket: net.Socket) => {
    sockets.add(socket);
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    const session: FakeSession = { commands: [], auth: null, mailFrom: null, rcptTo: [], data: null, tls: options.implicitTls === true, errors: [], closed };
    sessions.push(session);
    const number = sessions.length;
    socket.on('error', (error) => session.errors.push(error.message));
    if (options.silent) return;
    let current = socket;
    let buffer = '';
    let mode: 'command' | 'data' | 'login-user' | 'login-password' = 'command';
    let loginUser = '';
    const send = (line: string) => current.write(`${line}\r\n`);

    const handle = (line: string) => {
      if (mode === 'login-user') {
        loginUser = decode(line);
        mode = 'login-password';
        return send('334 UGFzc3dvcmQ6');
      }
      if (mode === 'login-password') {
        session.auth = { mechanism: 'LOGIN', user: loginUser, password: decode(line) };
        mode = 'command';
        return send('235 2.7.0 Authentication successful');
      }
      const [verb = '', ...args] = line.split(' ');
      // Credentials are never recorded in the command log, as a real server's log would not show them.
      session.commands.push(verb.toUpperCase() === 'AUTH' ? `AUTH ${args[0]}` : line);
      switch (verb.toUpperCase()) {
        case 'EHLO': {
          const ext = [
            ...(options.startTls && !session.tls ? ['STARTTLS'] : []),
            ...(options.auth?.length ? [`AUTH ${options.auth.join(' ')}`] : []),
            '8BITMIME',
          ];
          return send(['250-fake.smtp.test greets you', ...ext.map((e, i) => `250${i === ext.length - 1 ? ' ' : '-'}${e}`)].join('\r\n'));
        }
        case 'STARTTLS': {
          send('220 2.0.0 Ready to start TLS');
          current.removeListener('data', onData);
          const secure = new tls.TLSSocket(current, { isServer: true, key: KEY, cert: CERT });
          secure.on('data', onData);
          secure.on('error', (error) => session.errors.push(`tls: ${error.message}`));
          current = secure;
          session.tls = true;
          return;
        }
        case 'AUTH': {
          if (args[0] === 'PLAIN') {
            const [, user = '', password = ''] = decode(args[1] ?? '').split('\u0000');
            session.auth = { mechanism: 'PLAIN', user, password };
            return send('235 2.7.0 Authentication successful');
          }
          mode = 'login-user';
          return send('334 VXNlcm5hbWU6');
        }
        case 'MAIL':
          session.mailFrom = line;
          return send('250 2.1.0 Ok');
        case 'RCPT':
          session.rcptTo.push(line);
          return send(options.rcptReply ?? '250 2.1.5 Ok');
        case 'DATA':
          mode = 'data';
          return send('354 End data with <CR><LF>.<CR><LF>');
        case 'QUIT':
          send('221 2.0.0 Bye');
          return current.end();
        default:
          return send('502 5.5.2 Error: command not recognized');
      }
    };

    const onData = (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      for (;;) {
        if (mode === 'data') {
          const end = buffer.indexOf('\r\n.\r\n');
          if (end < 0) return;
          session.data = buffer.slice(0, end + 2);
          buffer = buffer.slice(end + 5);
          mode = 'command';
          send('250 2.0.0 Ok: queued as 4BvQ1c2Xz');
          continue;
        }
        const newline = buffer.indexOf('\r\n');
        if (newline < 0) return;
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 2);
        handle(line);
      }
    };
    socket.on('data', onData);
    const greeting = options.greeting?.(number) ?? '220 fake.smtp.test ESMTP';
    send(greeting);
    if (!greeting.startsWith('220')) socket.end();
  };
  const server = options.implicitTls ? tls.createServer({ key: KEY, cert: CERT }, onConnection) : net.createServer(onConnection);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    port,
    sessions,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof Error) return error;
    throw new Error(`rejected with a non-Error: ${String(error)}`);
  }
  throw new Error('expected the promise to reject');
}

/** Splits DATA into headers and body, undoing the dot-stuffing. */
function unstuff(data: string): { headers: string; body: string } {
  const plain = data.replace(/(^|\r\n)\.\./g, '$1.');
  const split = plain.indexOf('\r\n\r\n');
  return { headers: plain.slice(0, split), body: plain.slice(split + 4) };
}

const MESSAGE = { to: 'user@example.com', subject: 'Your Tally login code', text: 'Your code is 482913\n.\n..two dots\n.end\nBye', tags: { code: '482913' } };

describe('SMTP email sender', () => {
  let fake: Awaited<ReturnType<typeof startFakeSmtp>> | null = null;
  afterEach(async () => {
    await fake?.close();
    fake = null;
  });

  function sender(options: Partial<SmtpOptions> = {}): SmtpEmailSender {
    return new SmtpEmailSender({
      host: '127.0.0.1',
      port: fake?.port ?? 1,
      from: 'Tally <no-reply@tally.test>',
      timeoutMs: 2_000,
      retryDelayMs: 10,
      ...options,
    });
  }

  it('delivers the envelope and a text/plain message', async () => {
    fake = await startFakeSmtp();
    await sender({ clientName: 'api-1.tally.test' }).send(MESSAGE);
    const session = fake.sessions[0]!;
    // nodemailer closes the connection once the message is accepted, without a QUIT.
    expect(session.commands).to.deep.equal(['EHLO api-1.tally.test', 'MAIL FROM:<no-reply@tally.test>', 'RCPT TO:<user@example.com>', 'DATA']);
    const { headers, body } = unstuff(session.data!);
    expect(headers).to.contain('From: Tally <no-reply@tally.test>');
    expect(headers).to.contain('To: user@example.com');
    expect(headers).to.contain('Subject: Your Tally login code');
    expect(headers).to.contain('Content-Type: text/plain; charset=utf-8');
    expect(headers).to.match(/\r\nMessage-ID: <[0-9a-f-]{36}@tally\.test>/);
    expect(headers).to.match(/\r\nDate: \w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} (GMT|\+0000)/);
    expect(body).to.equal('Your code is 482913\r\n.\r\n..two dots\r\n.end\r\nBye\r\n');
  });

  it('dot-stuffs every line that starts with a dot, so the message does not end early', async () => {
    fake = await startFakeSmtp();
    await sender().send(MESSAGE);
    const raw = fake.sessions[0]!.data!;
    expect(raw).to.contain('\r\n..\r\n...two dots\r\n..end\r\nBye\r\n');
  });

  it('never puts tags (the login code) in the headers', async () => {
    fake = await startFakeSmtp();
    await sender().send({ ...MESSAGE, text: 'hello' });
    expect(fake.sessions[0]!.data).to.not.contain('482913');
  });

  it('authenticates with AUTH PLAIN when offered and allowed on a plain connection', async () => {
    fake = await startFakeSmtp({ auth: ['LOGIN', 'PLAIN'] });
    await sender({ user: 'mailer@tally.test', password: 's3cret pass', allowInsecureAuth: true }).send(MESSAGE);
    const session = fake.sessions[0]!;
    expect(session.auth).to.deep.equal({ mechanism: 'PLAIN', user: 'mailer@tally.test', password: 's3cret pass' });
    expect(session.commands.slice(1, 3)).to.deep.equal(['AUTH PLAIN', 'MAIL FROM:<no-reply@tally.test>']);
  });

  it('falls back to AUTH LOGIN when PLAIN is not offered', async () => {
    fake = await startFakeSmtp({ auth: ['LOGIN'] });
    await sender({ user: 'mailer', password: 'pw', allowInsecureAuth: true }).send(MESSAGE);
    expect(fake.sessions[0]!.auth).to.deep.equal({ mechanism: 'LOGIN', user: 'mailer', password: 'pw' });
  });

  it('refuses to send credentials over an unencrypted connection by default', async () => {
    fake = await startFakeSmtp({ auth: ['PLAIN'] });
    const error = await rejection(sender({ user: 'mailer', password: 'pw' }).send(MESSAGE));
    expect(error).to.be.instanceOf(SmtpError);
    expect(error.message).to.contain('unencrypted');
    // nodemailer asks for STARTTLS even though it is not offered; the session ends there, untrusted.
    expect(fake.sessions[0]!.commands.some((c) => c.startsWith('AUTH') || c.startsWith('MAIL'))).to.equal(false);
  });

  it('upgrades with STARTTLS when offered, then greets again and authenticates inside TLS', async () => {
    fake = await startFakeSmtp({ startTls: true, auth: ['PLAIN'] });
    await sender({ requireTls: true, user: 'mailer', password: 'pw', tls: { ca: CERT } }).send(MESSAGE);
    const session = fake.sessions[0]!;
    expect(session.tls).to.equal(true);
    expect(session.commands.map((c) => c.split(' ')[0])).to.deep.equal(['EHLO', 'STARTTLS', 'EHLO', 'AUTH', 'MAIL', 'RCPT', 'DATA']);
    expect(session.auth?.user).to.equal('mailer');
    expect(unstuff(session.data!).body).to.contain('Your code is 482913');
  });

  it('fails, before any envelope and without retrying, when the STARTTLS certificate is not trusted', async () => {
    fake = await startFakeSmtp({ startTls: true });
    const error = await rejection(sender().send(MESSAGE));
    expect(error).to.be.instanceOf(SmtpError);
    expect(error.message).to.match(/certificate/i);
    expect(fake.sessions).to.have.length(1);
    expect(fake.sessions[0]!.mailFrom).to.equal(null);
  });

  it('fails when requireTls is set and the server offers no STARTTLS', async () => {
    fake = await startFakeSmtp();
    const error = await rejection(sender({ requireTls: true }).send(MESSAGE));
    expect(error.message).to.contain('STARTTLS');
    expect(fake.sessions[0]!.mailFrom).to.equal(null);
  });

  it('speaks implicit TLS from the first byte when secure is set', async () => {
    fake = await startFakeSmtp({ implicitTls: true, auth: ['PLAIN'] });
    await sender({ secure: true, user: 'mailer', password: 'pw', tls: { ca: CERT } }).send(MESSAGE);
    expect(fake.sessions[0]!.auth?.mechanism).to.equal('PLAIN');
    expect(fake.sessions[0]!.data).to.contain('Your code is 482913');
  });

  it('encodes a non-ASCII subject as an RFC 2047 word and the body as base64', async () => {
    fake = await startFakeSmtp();
    await sender().send({ to: 'zoe@example.com', subject: 'Código de acceso · Tally', text: 'Tu código es 123456 ✓' });
    const { headers, body } = unstuff(fake.sessions[0]!.data!);
    const subject = /Subject: ((?:.|\r\n )+)/.exec(headers)![1]!;
    // RFC 2047 words, base64 (B) or quoted-printable (Q), folded over lines.
    const words = subject.split(/\r\n\s+|\s+/).map((w) => /^=\?UTF-8\?([BQ])\?(.*)\?=$/i.exec(w)!);
    const decodeWord = ([, kind, text]: RegExpExecArray) => (kind!.toUpperCase() === 'B' ? Buffer.from(text!, 'base64') : qpBytes(text!.replace(/_/g, ' ')));
    expect(Buffer.concat(words.map(decodeWord)).toString('utf8')).to.equal('Código de acceso · Tally');
    const encoding = /Content-Transfer-Encoding: (\S+)/.exec(headers)![1];
    const text = encoding === 'base64' ? Buffer.from(body.replace(/\r\n/g, ''), 'base64') : qpBytes(body.replace(/=\r\n/g, ''));
    expect(encoding).to.be.oneOf(['base64', 'quoted-printable']);
    expect(text.toString('utf8').trimEnd()).to.equal('Tu código es 123456 ✓');
  });

  it('rejects with the reply code when the recipient is refused, without retrying', async () => {
    fake = await startFakeSmtp({ rcptReply: '550 5.1.1 <user@example.com>: Recipient address rejected' });
    const error = await rejection(sender().send(MESSAGE));
    expect(error).to.be.instanceOf(SmtpError);
    expect((error as SmtpError).replyCode).to.equal(550);
    expect(error.message).to.contain('RCPT TO').and.not.contain('482913');
    expect(fake.sessions).to.have.length(1);
  });

  it('retries once when the server turns the session away with a 4xx greeting', async () => {
    fake = await startFakeSmtp({ greeting: (n) => (n === 1 ? '421 4.3.2 Service not available, try later' : '220 fake.smtp.test ESMTP') });
    await sender().send(MESSAGE);
    expect(fake.sessions).to.have.length(2);
    expect(fake.sessions[1]!.data).to.contain('482913');
  });

  it('gives up after maxAttempts when the server keeps turning the session away', async () => {
    fake = await startFakeSmtp({ greeting: () => '421 4.3.2 Service not available, try later' });
    const error = await rejection(sender({ maxAttempts: 3 }).send(MESSAGE));
    expect((error as SmtpError).replyCode).to.equal(421);
    expect(fake.sessions).to.have.length(3);
  });

  it('times out against a server that never greets, dropping the connection and not trying again past the deadline', async () => {
    fake = await startFakeSmtp({ silent: true });
    // A sender that ignored its timeout would hang here until mocha's own timeout fails the test.
    const error = await rejection(sender({ timeoutMs: 150 }).send(MESSAGE));
    expect(error).to.be.instanceOf(SmtpError);
    expect(error.message).to.match(/timed out after 150 ms/);
    expect((error as SmtpError).transient).to.equal(true);
    expect(fake.sessions).to.have.length(1);
    await fake.sessions[0]!.closed;
  });

  it('fails with the connection error when nothing listens, after the bounded attempts', async () => {
    const probe = net.createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const address = probe.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const error = await rejection(sender({ port, maxAttempts: 2 }).send(MESSAGE));
    expect(error).to.be.instanceOf(SmtpError);
    expect(error.message).to.contain('ECONNREFUSED');
    expect((error as SmtpError).transient).to.equal(true);
  });

  it('refuses a subject with a line break (header injection) before connecting', async () => {
    fake = await startFakeSmtp();
    const error = await rejection(sender().send({ ...MESSAGE, subject: 'Hi\r\nBcc: victim@example.com' }));
    expect(error.message).to.contain('one line');
    expect(fake.sessions).to.have.length(0);
  });

  it('refuses an invalid recipient before connecting', async () => {
    fake = await startFakeSmtp();
    const error = await rejection(sender().send({ ...MESSAGE, to: 'user@example.com>\r\nRCPT TO:<x@y.z' }));
    expect(error.message).to.contain('recipient');
    expect(fake.sessions).to.have.length(0);
  });
});
