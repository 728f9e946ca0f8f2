import { randomUUID } from 'node:crypto';
import net from 'node:net';
import os from 'node:os';
import type tls from 'node:tls';
import nodemailer from 'nodemailer';
import type { EmailMessage, EmailSender } from './port';

/**
 * Email through SMTP with nodemailer: one connection per message (login codes are few, and a fresh
 * session has no state to go stale), bounded in time, retried when the session failed transiently
 * before the message was handed over. Nothing here logs, and errors carry server replies and
 * command names only, never the message, credentials or codes.
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

// Deliberately strict (ASCII, no quoting, no comments): addresses come from our own validation.
const ADDRESS = /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?$/;
const MAX_ERROR_TEXT = 200;
/** nodemailer's codes for a connection that failed or was cut: worth another session. */
const NETWORK_CODES = new Set(['ECONNECTION', 'ESOCKET', 'ETIMEDOUT', 'EDNS']);

function isValidAddress(address: string): boolean {
  return address.length <= 254 && ADDRESS.test(address);
}

/** `addr@example.com` or `Display Name <addr@example.com>`, checked as strictly as recipients. */
function parseFrom(value: string): { name: string; address: string } {
  const match = /^(.*?)\s*<([^<>]+)>$/.exec(value.trim());
  const name = match ? (match[1] as string).replace(/^"(.*)"$/, '$1').trim() : '';
  const address = match ? (match[2] as string).trim() : value.trim();
  if (!isValidAddress(address) || /[\r\n]/.test(name)) throw new Error('invalid email address');
  return { name, address };
}

interface NodemailerError extends Error {
  code?: string;
  responseCode?: number;
  response?: string;
  command?: string;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export class SmtpEmailSender implements EmailSender {
  readonly name = 'smtp';
  private readonly from: { name: string; address: string };
  private readonly timeoutMs: number;
  private readonly maxAttempts: number;
  private readonly retryDelayMs: number;
  private readonly clientName: string;

  constructor(private readonly options: SmtpOptions) {
    if (!options.host) throw new Error('SMTP host is required');
    if (!Number.isInteger(options.port) || options.port < 1 || options.port > 65535) throw new Error('SMTP port must be 1..65535');
    if ((options.user === undefined) !== (options.password === undefined)) throw new Error('SMTP user and password go together');
    this.from = parseFrom(options.from);
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
    if (/[\r\n]/.test(message.subject)) throw new SmtpError('email subject must be one line', null, false);
    const deadline = Date.now() + this.timeoutMs;
    for (let attempt = 1; ; attempt += 1) {
      try {
        await this.deliver(to, message, deadline - Date.now());
        return;
      } catch (error) {
        const failure = this.smtpError(error);
        // After DATA the server may have queued the message: a retry could send it twice.
        const handedOver = (error as NodemailerError).command === 'DATA';
        if (!failure.transient || handedOver || attempt >= this.maxAttempts || deadline - Date.now() <= this.retryDelayMs) throw failure;
      }
      await sleep(this.retryDelayMs);
    }
  }

  private async deliver(to: string, message: EmailMessage, budgetMs: number): Promise<void> {
    const { host, port, user, password } = this.options;
    const budget = Math.max(budgetMs, 1);
    const transport = nodemailer.createTransport({
      host,
      port,
      secure: this.options.secure === true,
      requireTLS: this.tlsRequired(),
      ignoreTLS: this.options.ignoreTls === true,
      name: this.clientName,
      ...(user !== undefined && password !== undefined ? { auth: { user, pass: password } } : {}),
      tls: { ...(net.isIP(host) === 0 ? { servername: host } : {}), ...this.options.tls },
      connectionTimeout: budget,
      greetingTimeout: budget,
      socketTimeout: budget,
      disableFileAccess: true,
      disableUrlAccess: true,
    });
    // The whole send within the budget: the abort cuts the session wherever it is.
    const deadline = AbortSignal.timeout(budget);
    try {
      await transport.sendMail({
        from: this.from.name ? { name: this.from.name, address: this.from.address } : this.from.address,
        to,
        subject: message.subject,
        text: message.text,
        messageId: `<${randomUUID()}@${this.from.address.split('@')[1]}>`,
        signal: deadline,
      });
    } catch (error) {
      if (deadline.aborted) throw new SmtpError(`SMTP ${host}:${port} timed out after ${this.timeoutMs} ms`, null, true, { cause: error });
      throw error;
    }
  }

  /**
   * STARTTLS is required (nodemailer then asks for it even where the server does not offer it) when
   * the settings say so, and whenever credentials go over a plain connection, unless a local test
   * server is allowed to have them unencrypted.
   */
  private tlsRequired(): boolean {
    const { requireTls, user, allowInsecureAuth, secure } = this.options;
    return requireTls === true || (user !== undefined && !allowInsecureAuth && !secure);
  }

  /** What went wrong, as an SmtpError: the step and the server's reply, transient when worth another session. */
  private smtpError(error: unknown): SmtpError {
    if (error instanceof SmtpError) return error;
    const e = error as NodemailerError;
    const replyCode = typeof e.responseCode === 'number' ? e.responseCode : null;
    if (this.tlsRequired() && !this.options.secure && (e.command === 'STARTTLS' || /certificate|TLS|SSL|STARTTLS/i.test(e.message ?? ''))) {
      const why = this.options.requireTls ? 'requireTls is set' : 'refusing to send SMTP credentials over an unencrypted connection';
      return new SmtpError(`SMTP STARTTLS failed (${why}): ${(e.message ?? '').slice(0, MAX_ERROR_TEXT)}`, null, false, { cause: e });
    }
    if (replyCode !== null) {
      const text = (e.response ?? '').slice(0, MAX_ERROR_TEXT);
      return new SmtpError(`SMTP ${e.command ?? 'session'} rejected: ${text}`, replyCode, replyCode >= 400 && replyCode < 500, { cause: e });
    }
    if (e.code === 'ETIMEDOUT')
      return new SmtpError(`SMTP ${this.options.host}:${this.options.port} timed out after ${this.timeoutMs} ms (${e.message})`, null, true, { cause: e });
    // Certificate and TLS failures will not pass by themselves: only network failures are retried.
    const transient = NETWORK_CODES.has(e.code ?? '') && !/certificate|TLS|SSL/i.test(e.message ?? '');
    return new SmtpError(`SMTP ${this.options.host}:${this.options.port}: ${(e.message ?? String(error)).slice(0, MAX_ERROR_TEXT)}`, null, transient, {
      cause: e,
    });
  }
}
