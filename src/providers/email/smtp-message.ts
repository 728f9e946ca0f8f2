import { randomUUID } from 'node:crypto';

/**
 * Builds the DATA section of a plain-text email (RFC 5322 headers, RFC 2047 encoded words,
 * MIME text/plain) and applies SMTP dot-stuffing (RFC 5321 4.5.2). Pure: no I/O.
 */

/** RFC 5321 4.5.3.1.6: 998 characters per line plus CRLF. */
const MAX_LINE = 998;
/** RFC 2047: an encoded word is at most 75 characters; 45 bytes -> 60 base64 characters + 12. */
const ENCODED_WORD_BYTES = 45;

export interface Mailbox {
  name: string | null;
  address: string;
}

// Deliberately strict (ASCII, no quoting, no comments): addresses come from our own validation.
const ADDRESS = /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?$/;

export function isValidAddress(address: string): boolean {
  return address.length <= 254 && ADDRESS.test(address);
}

/** Parses `addr@example.com` or `Display Name <addr@example.com>`. */
export function parseMailbox(value: string): Mailbox {
  const trimmed = value.trim();
  const match = /^(.*?)\s*<([^<>]+)>$/.exec(trimmed);
  const name = match ? match[1]!.replace(/^"(.*)"$/, '$1').trim() : '';
  const address = match ? match[2]!.trim() : trimmed;
  if (!isValidAddress(address)) throw new Error('invalid email address');
  if (/[\r\n]/.test(name)) throw new Error('invalid display name');
  return { name: name === '' ? null : name, address };
}

function isPrintableAscii(text: string): boolean {
  return /^[\x20-\x7e]*$/.test(text);
}

/** One or more RFC 2047 `=?UTF-8?B?...?=` words, split on character boundaries. */
export function encodeHeaderWords(text: string): string {
  if (isPrintableAscii(text)) return text;
  const words: string[] = [];
  let chunk: Buffer[] = [];
  let size = 0;
  for (const char of text) {
    const bytes = Buffer.from(char, 'utf8');
    if (size + bytes.length > ENCODED_WORD_BYTES) {
      words.push(`=?UTF-8?B?${Buffer.concat(chunk).toString('base64')}?=`);
      chunk = [];
      size = 0;
    }
    chunk.push(bytes);
    size += bytes.length;
  }
  if (chunk.length > 0) words.push(`=?UTF-8?B?${Buffer.concat(chunk).toString('base64')}?=`);
  // Folding whitespace between encoded words is dropped by readers (RFC 2047 6.2).
  return words.join('\r\n ');
}

function formatMailbox(mailbox: Mailbox): string {
  if (mailbox.name === null) return mailbox.address;
  const name = isPrintableAscii(mailbox.name) ? `"${mailbox.name.replace(/(["\\])/g, '\\$1')}"` : encodeHeaderWords(mailbox.name);
  return `${name} <${mailbox.address}>`;
}

function toCrlf(text: string): string {
  return text.replace(/\r\n|\r|\n/g, '\r\n');
}

/** Base64 in lines of 76 characters (RFC 2045 6.8). */
function base64Lines(text: string): string {
  return (
    Buffer.from(text, 'utf8')
      .toString('base64')
      .match(/.{1,76}/g) ?? []
  ).join('\r\n');
}

/** A line starting with "." gets another one, so the server never sees an early end of data. */
export function dotStuff(data: string): string {
  return data.replace(/(^|\r\n)\./g, '$1..');
}

export interface OutgoingMessage {
  from: Mailbox;
  to: string;
  subject: string;
  text: string;
  date?: Date;
}

/** The message as it goes after DATA: headers, blank line, body, dot-stuffed, ending CRLF.CRLF. */
export function buildData(message: OutgoingMessage): string {
  if (/[\r\n]/.test(message.subject)) throw new Error('email subject must be one line');
  const body = toCrlf(message.text);
  // 7bit: ASCII only (UTF-8 length equals character count), no NUL, no line over the SMTP limit.
  const sevenBit = Buffer.byteLength(body, 'utf8') === body.length && !body.includes('\u0000') && body.split('\r\n').every((line) => line.length <= MAX_LINE);
  const domain = message.from.address.split('@')[1] ?? 'localhost';
  const headers = [
    `From: ${formatMailbox(message.from)}`,
    `To: ${message.to}`,
    `Subject: ${encodeHeaderWords(message.subject)}`,
    `Date: ${(message.date ?? new Date()).toUTCString()}`,
    `Message-ID: <${randomUUID()}@${domain}>`,
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    `Content-Transfer-Encoding: ${sevenBit ? '7bit' : 'base64'}`,
  ];
  const content = `${headers.join('\r\n')}\r\n\r\n${sevenBit ? body : base64Lines(body)}`;
  const stuffed = dotStuff(content);
  return `${stuffed}${stuffed.endsWith('\r\n') ? '' : '\r\n'}.\r\n`;
}
