/** The email port: sends transactional emails (login codes). Adapters: sandbox outbox, SMTP. */
export interface EmailMessage {
  to: string;
  subject: string;
  text: string;
  /** Structured payload kept by the sandbox outbox (e.g. the login code), never logged. */
  tags?: Record<string, string>;
}

export interface EmailSender {
  readonly name: string;
  /** Throws on failure or timeout. */
  send(message: EmailMessage): Promise<void>;
}
