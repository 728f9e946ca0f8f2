import net from 'node:net';
import os from 'node:os';
import tls from 'node:tls';
import type { EmailMessage, EmailSender } from './port';
import { buildData, isValidAddress, type Mailbox, parseMailbox } from './smtp-message';

/**
 * A minimal SMTP client (RFC 5321) on node:net / node:tls: EHLO (HELO fallback), STARTTLS, AUTH
 * PLAIN or LOGIN, MAIL FROM, RCPT TO, DATA with dot-stuffing, QUIT. One connection per message:
 * login codes are few, and a fresh session has no state to go stale. Nothing here logs, and errors
 * carry server replies and command names only, never the message, credentials or codes.
 */
export interface SmtpOptions {
  host: string;
  port: number;
  /** Implicit TLS from the first byte (usually port 465). Default false. */
  secure?: boolean;
  /** Refuse to send unless the session is encrypted (implicit TLS or STARTTLS). Default false. */
  requireTls?: boolean;
  /** Do not upgrade with STARTTLS even when offered (local catchers with broken TLS). Default false. */
  ignoreTls?: boolean;
  user?: string;
  password?: string;
  /** `addr@example.com` or `Name <addr@example.com>`. */
  from: string;
  /** Budget of one send, retries included: connect to the server's acceptance. Default 10000. */
  timeoutMs?: number;
  /** Attempts when the session failed transiently before the message was handed over. Default 2. */
  maxAttempts?: number;
  retryDelayMs?: number;
  /** Name given in EHLO. Default: this host's name. */
  clientName?: string;
  /** Extra TLS settings, e.g. the CA of a private relay. */
  tls?: tls.ConnectionOptions;
  /** Allow AUTH on an unencrypted session: local test servers only. Default false. */
  allowInsecureAuth?: boolean;
}

export class SmtpError extends Error {
  constructor(
    message: string,
    /** The server's reply code, null for connection-level failures. */
    readonly replyCode: number | null,
    /** 4xx replies, network failures and timeouts: worth another attempt later. */
    readonly transient: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'SmtpError';
  }
}

interface Reply {
  code: number;
  lines: string[];
}

/** Longest reply line we accept; RFC 5321 allows 512 octets, servers are often longer. */
const MAX_REPLY_BUFFER = 64 * 1024;
const MAX_ERROR_TEXT = 200;

/** Network failures that may pass; TLS and certificate errors will not, so they are not retried. */
const TRANSIENT_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'EAI_AGAIN']);

function isTransient(error: Error): boolean {
  const code: unknown = Reflect.get(error, 'code');
  return typeof code === 'string' && TRANSIENT_CODES.has(code);
}

/** Reads SMTP replies (multi-line `250-...` then `250 ...`) from whichever socket is attached. */
class Session {
  private buffer = '';
  private partial: string[] = [];
  private readonly queue: Reply[] = [];
  private waiting: { resolve: (reply: Reply) => void; reject: (error: Error) => void } | null = null;
  private failure: Error | null = null;
  encrypted: boolean;

  constructor(
    public socket: net.Socket,
    encrypted: boolean,
  ) {
    this.encrypted = encrypted;
    this.listen(socket);
  }

  private readonly onData = (chunk: Buffer) => this.feed(chunk.toString('utf8'));

  /** Also used for the TLS socket after STARTTLS; the plain one keeps its error/close listeners. */
  listen(socket: net.Socket): void {
    socket.on('data', this.onData);
    socket.on('error', (error: Error) => this.fail(new SmtpError(`SMTP connection error: ${error.message}`, null, isTransient(error), { cause: error })));
    socket.on('close', () => this.fail(new SmtpError('SMTP connection closed by the server', null, true)));
  }

  /** Hands the socket over to TLS. Anything already buffered would be plaintext injected before the handshake. */
  upgrade(options: tls.ConnectionOptions): void {
    this.socket.removeListener('data', this.onData);
    if (this.buffer !== '' || this.queue.length > 0) throw new SmtpError('SMTP server sent data after the STARTTLS reply', null, false);
    this.socket = tls.connect({ ...options, socket: this.socket });
    this.listen(this.socket);
    this.encrypted = true;
  }

  fail(error: Error): void {
    if (this.failure !== null) return;
    this.failure = error;
    const waiting = this.waiting;
    this.waiting = null;
    waiting?.reject(error);
  }

  write(line: string): void {
    this.socket.write(`${line}\r\n`);
  }

  next(): Promise<Reply> {
    const ready = this.queue.shift();
    if (ready !== undefined) return Promise.resolve(ready);
    if (this.failure !== null) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
    });
  }

  private feed(text: string): void {
    this.buffer += text;
    if (this.buffer.length > MAX_REPLY_BUFFER) {
      this.fail(new SmtpError('SMTP reply too long', null, false));
      return;
    }
    for (let end = this.buffer.indexOf('\n'); end >= 0; end = this.buffer.indexOf('\n')) {
      const line = this.buffer.slice(0, end).replace(/\r$/, '');
      this.buffer = this.buffer.slice(end + 1);
      const match = /^(\d{3})([ -]?)(.*)$/.exec(line);
      if (match === null) {
        this.fail(new SmtpError('Malformed SMTP reply', null, false));
        return;
      }
      this.partial.push(match[3]!);
      if (match[2] === '-') continue;
      const reply = { code: Number(match[1]), lines: this.partial };
      this.partial = [];
      const waiting = this.waiting;
      this.waiting = null;
      if (waiting) waiting.resolve(reply);
      else this.queue.push(reply);
    }
  }
}

function replyError(step: string, reply: Reply): SmtpError {
  const text = reply.lines.join(' ').slice(0, MAX_ERROR_TEXT);
  return new SmtpError(`SMTP ${step} rejected: ${reply.code} ${text}`, reply.code, reply.code >= 400 && reply.code < 500);
}

async function exchange(session: Session, step: string, codes: readonly number[], line?: string): Promise<Reply> {
  if (line !== undefined) session.write(line);
  const reply = await session.next();
  if (!codes.includes(reply.code)) throw replyError(step, reply);
  return reply;
}

/** EHLO keywords (upper-cased) with their parameters. */
function extensions(reply: Reply): Map<string, string[]> {
  const map = new Map<string, string[]>();
  for (const line of reply.lines.slice(1)) {
    const [keyword, ...params] = line.trim().split(/\s+/);
    if (keyword)
      map.set(
        keyword.toUpperCase(),
        params.map((p) => p.toUpperCase()),
      );
  }
  return map;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export class SmtpEmailSender implements EmailSender {
  readonly name = 'smtp';
  private readonly from: Mailbox;
  private readonly timeoutMs: number;
  private readonly maxAttempts: number;
  private readonly retryDelayMs: number;
  private readonly clientName: string;

  constructor(private readonly options: SmtpOptions) {
    if (!options.host) throw new Error('SMTP host is required');
    if (!Number.isInteger(options.port) || options.port < 1 || options.port > 65535) throw new Error('SMTP port must be 1..65535');
    if ((options.user === undefined) !== (options.password === undefined)) throw new Error('SMTP user and password go together');
    this.from = parseMailbox(options.from);
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.maxAttempts = options.maxAttempts ?? 2;
    this.retryDelayMs = options.retryDelayMs ?? 500;
    if (!(this.timeoutMs > 0)) throw new Error('SMTP timeoutMs must be > 0');
    if (!Number.isInteger(this.maxAttempts) || this.maxAttempts < 1 || this.maxAttempts > 5) throw new Error('SMTP maxAttempts must be 1..5');
    // EHLO wants a domain or address literal; a hostname with odd characters falls back to one.
    const host = options.clientName ?? os.hostname();
    this.clientName = /^[A-Za-z0-9.-]+$/.test(host) ? host : '[127.0.0.1]';
  }

  async send(message: EmailMessage): Promise<void> {
    const to = message.to.trim();
    if (!isValidAddress(to)) throw new SmtpError('invalid recipient address', null, false);
    const data = buildData({ from: this.from, to, subject: message.subject, text: message.text });
    const deadline = Date.now() + this.timeoutMs;
    for (let attempt = 1; ; attempt += 1) {
      const state = { handedOver: false };
      try {
        await this.deliver(to, data, deadline - Date.now(), state);
        return;
      } catch (error) {
        const retryable = error instanceof SmtpError && error.transient && !state.handedOver;
        // After DATA went out the server may have queued the message: a retry could send it twice.
        if (!retryable || attempt >= this.maxAttempts || deadline - Date.now() <= this.retryDelayMs) throw error;
      }
      await sleep(this.retryDelayMs);
    }
  }

  private async deliver(to: string, data: string, budgetMs: number, state: { handedOver: boolean }): Promise<void> {
    const { host, port } = this.options;
    const tlsOptions: tls.ConnectionOptions = { host, ...(net.isIP(host) === 0 ? { servername: host } : {}), ...this.options.tls };
    const socket = this.options.secure ? tls.connect({ ...tlsOptions, port }) : net.connect({ host, port });
    const session = new Session(socket, this.options.secure === true);
    const timer = setTimeout(
      () => {
        session.fail(new SmtpError(`SMTP ${host}:${port} timed out after ${this.timeoutMs} ms`, null, true));
        session.socket.destroy();
      },
      Math.max(budgetMs, 1),
    );
    try {
      await exchange(session, 'greeting', [220]);
      let ehlo = await this.hello(session);
      if (!session.encrypted && !this.options.ignoreTls && ehlo.has('STARTTLS')) {
        await exchange(session, 'STARTTLS', [220], 'STARTTLS');
        session.upgrade(tlsOptions);
        ehlo = await this.hello(session);
      }
      if (this.options.requireTls && !session.encrypted) throw new SmtpError('SMTP server does not offer STARTTLS and requireTls is set', null, false);
      if (this.options.user !== undefined && this.options.password !== undefined) {
        await this.authenticate(session, ehlo.get('AUTH') ?? [], this.options.user, this.options.password);
      }
      await exchange(session, 'MAIL FROM', [250], `MAIL FROM:<${this.from.address}>`);
      await exchange(session, 'RCPT TO', [250, 251], `RCPT TO:<${to}>`);
      await exchange(session, 'DATA', [354], 'DATA');
      state.handedOver = true;
      session.socket.write(data);
      await exchange(session, 'message', [250]);
      // Accepted. QUIT is a courtesy: the socket is ended at once, its 221 is not awaited.
      session.socket.end('QUIT\r\n');
    } finally {
      clearTimeout(timer);
      if (!session.socket.writableEnded) session.socket.destroy();
      else setTimeout(() => session.socket.destroy(), 1_000).unref();
    }
  }

  private async hello(session: Session): Promise<Map<string, string[]>> {
    session.write(`EHLO ${this.clientName}`);
    const reply = await session.next();
    if (reply.code === 250) return extensions(reply);
    // RFC 5321 4.1.4: a server that does not know EHLO gets HELO, and then offers no extensions.
    if (reply.code >= 500) {
      await exchange(session, 'HELO', [250], `HELO ${this.clientName}`);
      return new Map();
    }
    throw replyError('EHLO', reply);
  }

  private async authenticate(session: Session, mechanisms: string[], user: string, password: string): Promise<void> {
    if (!session.encrypted && !this.options.allowInsecureAuth) {
      throw new SmtpError('refusing to send SMTP credentials over an unencrypted connection', null, false);
    }
    const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
    if (mechanisms.includes('PLAIN')) {
      await exchange(session, 'AUTH PLAIN', [235], `AUTH PLAIN ${b64(`\u0000${user}\u0000${password}`)}`);
    } else if (mechanisms.includes('LOGIN')) {
      await exchange(session, 'AUTH LOGIN', [334], 'AUTH LOGIN');
      await exchange(session, 'AUTH LOGIN user', [334], b64(user));
      await exchange(session, 'AUTH LOGIN password', [235], b64(password));
    } else {
      throw new SmtpError(`SMTP server offers no supported AUTH mechanism (${mechanisms.join(' ') || 'none'})`, null, false);
    }
  }
}
