import { randomInt } from 'node:crypto';
import type { ApplicationStatus, CardType } from '../../domain/cards/application';
import type { CardLimit } from '../../domain/cards/limit';
import { deliveryFor, type SandboxWebhookOptions, throughStore, type WebhookDelivery } from '../delivery';
import { isoOrNull, objectAt, parseJson, stringAt } from '../json';
import { ProviderError } from '../errors';
import { currentUnixSeconds, DEFAULT_TOLERANCE_SECONDS, headerValue, verifySignature } from '../signature';
import { randomId } from '../random-id';
import type { CardIssuer, CardIssuerWebhookEvent, CardSecrets, IssuedCard, IssuerApplication, IssuerApplicationRequest } from './port';
import { luhnCheckDigit } from './port';
import type { CardVault } from './vault';

/**
 * The sandbox card issuer. It simulates an external party: applications and cards live in its own
 * tables (not in our event log), a tester decides applications (the sandbox routes), and each
 * decision comes back as a signed webhook POSTed over real HTTP, as a real issuer's would. Card
 * numbers are Luhn-valid under a test BIN; number, CVC and PIN are kept sealed (AES-256-GCM).
 */
export const SANDBOX_BIN = '400000';
/** Its own status words, as a real issuer has its own: `denied` is our `declined`. */
export type SandboxApplicationStatus = 'pending' | 'approved' | 'denied';
export const DEFAULT_DECLINE_REASON = 'Declined by the sandbox issuer';
const PROVIDER = 'sandbox';
const APPLICATIONS = 'sandbox_card_applications';
const CARDS = 'sandbox_cards';
const CARD_LIFETIME_YEARS = 3;

export const localStatusOf = (external: string): ApplicationStatus => (external === 'approved' ? 'approved' : external === 'denied' ? 'declined' : 'pending');

export interface SandboxApplication {
  issuerApplicationId: string;
  applicationId: string;
  userId: string;
  status: SandboxApplicationStatus;
  reason: string | null;
}

/** The JSON body the sandbox POSTs to /webhooks/cards/sandbox. */
export interface SandboxCardWebhookBody {
  id: string;
  type: `application.${'approved' | 'denied'}`;
  createdAt: string;
  data: { issuerApplicationId: string; referenceId: string; status: SandboxApplicationStatus; reason: string | null };
}

export class SandboxCardNotFoundError extends ProviderError {
  constructor(what: string) {
    super(`Sandbox card issuer: ${what} not found`, PROVIDER);
    this.name = 'SandboxCardNotFoundError';
  }
}

/** A decided application asked for another outcome (the route answers 409). */
export class SandboxApplicationConflictError extends ProviderError {
  constructor(
    readonly applicationId: string,
    readonly status: SandboxApplicationStatus,
  ) {
    super(`Card application ${applicationId} is already ${status}`, PROVIDER);
    this.name = 'SandboxApplicationConflictError';
  }
}

interface ApplicationRow {
  issuer_application_id: string;
  reference_id: string;
  user_id: string;
  status: SandboxApplicationStatus;
  reason: string | null;
}

interface CardRow {
  reference: string;
  user_id: string;
  last4: string;
  exp_month: string;
  exp_year: string;
  /** Null once the holder was erased. */
  pan_sealed: string | null;
  cvc_sealed: string | null;
  pin_sealed: string | null;
}

const APPLICATION_COLUMNS = 'issuer_application_id, reference_id::text, user_id::text, status, reason';
const toApplication = (row: ApplicationRow): IssuerApplication => ({
  issuerApplicationId: row.issuer_application_id,
  externalStatus: row.status,
  status: localStatusOf(row.status),
  reason: row.reason,
});

/** A new card number: the test BIN, random digits, Luhn's check digit (16 digits). */
export function sandboxPan(): string {
  let body = SANDBOX_BIN;
  while (body.length < 15) body += String(randomInt(10));
  return body + luhnCheckDigit(body);
}

export class SandboxCardIssuer implements CardIssuer {
  readonly name = PROVIDER;
  private readonly delivery: WebhookDelivery;
  private readonly nowSeconds: () => number;

  constructor(private readonly options: SandboxWebhookOptions & { vault: CardVault }) {
    this.nowSeconds = options.nowSeconds ?? currentUnixSeconds;
    this.delivery = deliveryFor(
      { provider: PROVIDER, label: 'Sandbox card issuer', userAgent: 'tally-sandbox-cards/1' },
      { ...options, nowSeconds: this.nowSeconds },
    );
  }

  /** Creates its tables. Idempotent; serialised so several nodes can start at once. */
  async prepare(): Promise<void> {
    await this.options.sql.transaction(async (tx) => {
      await tx.query(`SELECT pg_advisory_xact_lock(hashtext('tally.${CARDS}'))`);
      await tx.query(`CREATE TABLE IF NOT EXISTS ${APPLICATIONS} (
        issuer_application_id text PRIMARY KEY,
        reference_id uuid NOT NULL UNIQUE,
        user_id uuid NOT NULL,
        card_type text NOT NULL,
        status text NOT NULL CHECK (status IN ('pending', 'approved', 'denied')),
        reason text,
        created_at timestamptz NOT NULL DEFAULT now(),
        decided_at timestamptz,
        last_event_id text,
        last_event text)`);
      await tx.query(`CREATE TABLE IF NOT EXISTS ${CARDS} (
        reference text PRIMARY KEY,
        card_id uuid NOT NULL UNIQUE,
        user_id uuid NOT NULL,
        issuer_application_id text NOT NULL,
        type text NOT NULL,
        status text NOT NULL,
        limit_amount numeric NOT NULL,
        limit_frequency text NOT NULL,
        last4 text NOT NULL,
        exp_month text NOT NULL,
        exp_year text NOT NULL,
        pan_sealed text,
        cvc_sealed text,
        pin_sealed text,
        created_at timestamptz NOT NULL DEFAULT now())`);
      // Erasure drops a card's secrets (forgetUser): a table made before that kept them NOT NULL.
      await tx.query(`ALTER TABLE ${CARDS} ALTER COLUMN pan_sealed DROP NOT NULL, ALTER COLUMN cvc_sealed DROP NOT NULL`);
    });
  }

  /** Takes the application, pending (or answers the one made before under the same reference). */
  async submitApplication(request: IssuerApplicationRequest): Promise<IssuerApplication> {
    const rows = await this.store(async () => {
      await this.options.sql.query(
        `INSERT INTO ${APPLICATIONS} (issuer_application_id, reference_id, user_id, card_type, status) VALUES ($1, $2, $3, $4, 'pending')
         ON CONFLICT (reference_id) DO NOTHING`,
        [randomId('iss_app_'), request.applicationId, request.userId, request.cardType],
      );
      return this.options.sql.query<ApplicationRow>(`SELECT ${APPLICATION_COLUMNS} FROM ${APPLICATIONS} WHERE reference_id = $1`, [request.applicationId]);
    });
    const row = rows[0];
    if (!row || row.user_id !== request.userId) throw new ProviderError('Sandbox card application reference reused for another user', PROVIDER);
    return toApplication(row);
  }

  async getApplication(issuerApplicationId: string): Promise<IssuerApplication> {
    const rows = await this.store(() =>
      this.options.sql.query<ApplicationRow>(`SELECT ${APPLICATION_COLUMNS} FROM ${APPLICATIONS} WHERE issuer_application_id = $1`, [issuerApplicationId]),
    );
    if (!rows[0]) throw new SandboxCardNotFoundError(`application ${issuerApplicationId}`);
    return toApplication(rows[0]);
  }

  /** The application made under our id, or null (the sandbox routes check whose it is). */
  async findApplication(applicationId: string): Promise<SandboxApplication | null> {
    const rows = await this.store(() =>
      this.options.sql.query<ApplicationRow>(`SELECT ${APPLICATION_COLUMNS} FROM ${APPLICATIONS} WHERE reference_id::text = $1`, [applicationId.toLowerCase()]),
    );
    const row = rows[0];
    return row
      ? { issuerApplicationId: row.issuer_application_id, applicationId: row.reference_id, userId: row.user_id, status: row.status, reason: row.reason }
      : null;
  }

  /**
   * The tester's decision, then its signed webhook; resolves with the event id. The same decision
   * again re-delivers it (a new event id); another one once decided is SandboxApplicationConflictError.
   */
  async decideApplication(applicationId: string, outcome: 'approved' | 'denied', reason?: string | null): Promise<string> {
    const why = outcome === 'denied' ? (reason?.trim() ? reason.trim() : DEFAULT_DECLINE_REASON) : null;
    const body = await this.store(() =>
      this.options.sql.transaction(async (tx) => {
        const rows = await tx.query<ApplicationRow>(`SELECT ${APPLICATION_COLUMNS} FROM ${APPLICATIONS} WHERE reference_id::text = $1 FOR UPDATE`, [
          applicationId.toLowerCase(),
        ]);
        const current = rows[0];
        if (!current) throw new SandboxCardNotFoundError(`application ${applicationId}`);
        if (current.status !== 'pending' && current.status !== outcome) throw new SandboxApplicationConflictError(applicationId, current.status);
        const first = current.status === 'pending';
        const event: SandboxCardWebhookBody = {
          id: randomId('evt_card_'),
          type: `application.${outcome}`,
          createdAt: new Date().toISOString(),
          data: {
            issuerApplicationId: current.issuer_application_id,
            referenceId: current.reference_id,
            status: outcome,
            reason: first ? why : current.reason,
          },
        };
        await tx.query(
          `UPDATE ${APPLICATIONS} SET status = $2, reason = CASE WHEN status = 'pending' THEN $3 ELSE reason END,
             decided_at = COALESCE(decided_at, now()), last_event_id = $4, last_event = $5 WHERE reference_id = $1`,
          [current.reference_id, outcome, why, event.id, JSON.stringify(event)],
        );
        return event;
      }),
    );
    await this.delivery.deliver(body.id, JSON.stringify(body));
    return body.id;
  }

  /** A card on an approved application, its secrets sealed; the same cardId again answers the same card. */
  async issueCard(request: { cardId: string; userId: string; issuerApplicationId: string; type: CardType; limit: CardLimit }): Promise<IssuedCard> {
    const application = await this.getApplication(request.issuerApplicationId);
    if (application.externalStatus !== 'approved') throw new ProviderError(`Sandbox card application ${request.issuerApplicationId} is not approved`, PROVIDER);
    const reference = randomId('iss_card_');
    const pan = sandboxPan();
    const expiry = new Date();
    expiry.setUTCFullYear(expiry.getUTCFullYear() + CARD_LIFETIME_YEARS);
    const month = String(expiry.getUTCMonth() + 1).padStart(2, '0');
    const year = String(expiry.getUTCFullYear() % 100).padStart(2, '0');
    const cvc = String(randomInt(1000)).padStart(3, '0');
    const vault = this.options.vault;
    const [panSealed, cvcSealed] = [await vault.seal(request.userId, pan, `${reference}:pan`), await vault.seal(request.userId, cvc, `${reference}:cvc`)];
    const rows = await this.store(async () => {
      await this.options.sql.query(
        `INSERT INTO ${CARDS} (reference, card_id, user_id, issuer_application_id, type, status, limit_amount, limit_frequency, last4, exp_month, exp_year, pan_sealed, cvc_sealed)
         VALUES ($1, $2, $3, $4, $5, $6, $7::numeric, $8, $9, $10, $11, $12, $13) ON CONFLICT (card_id) DO NOTHING`,
        [
          reference,
          request.cardId,
          request.userId,
          request.issuerApplicationId,
          request.type,
          request.type === 'virtual' ? 'active' : 'notActivated',
          request.limit.amount,
          request.limit.frequency,
          pan.slice(-4),
          month,
          year,
          panSealed,
          cvcSealed,
        ],
      );
      return this.options.sql.query<CardRow>(`SELECT reference, last4, exp_month, exp_year FROM ${CARDS} WHERE card_id = $1`, [request.cardId]);
    });
    const row = rows[0];
    if (!row) throw new ProviderError(`Sandbox card ${request.cardId} vanished`, PROVIDER);
    return { reference: row.reference, last4: row.last4, expirationMonth: row.exp_month, expirationYear: row.exp_year };
  }

  async updateCard(reference: string, change: { status?: 'active' | 'locked' | 'canceled'; limit?: CardLimit }): Promise<void> {
    const rows = await this.store(() =>
      this.options.sql.query<{ reference: string }>(
        `UPDATE ${CARDS} SET status = COALESCE($2, status), limit_amount = COALESCE($3::numeric, limit_amount), limit_frequency = COALESCE($4, limit_frequency)
         WHERE reference = $1 RETURNING reference`,
        [reference, change.status ?? null, change.limit?.amount ?? null, change.limit?.frequency ?? null],
      ),
    );
    if (!rows[0]) throw new SandboxCardNotFoundError(`card ${reference}`);
  }

  /** Erasure: the user's card numbers, CVCs and PINs are dropped (their cards are canceled first: never revealed again). */
  async forgetUser(userId: string): Promise<void> {
    await this.store(() => this.options.sql.query(`UPDATE ${CARDS} SET pan_sealed = NULL, cvc_sealed = NULL, pin_sealed = NULL WHERE user_id = $1`, [userId]));
  }

  async revealSecrets(reference: string): Promise<CardSecrets> {
    const row = await this.card(reference);
    if (row.pan_sealed === null || row.cvc_sealed === null) throw new SandboxCardNotFoundError(`card ${reference} (its holder was erased)`);
    const vault = this.options.vault;
    return {
      cardNumber: await vault.open(row.pan_sealed, `${reference}:pan`),
      cvc: await vault.open(row.cvc_sealed, `${reference}:cvc`),
      expirationMonth: row.exp_month,
      expirationYear: row.exp_year,
    };
  }

  async revealPin(reference: string): Promise<string | null> {
    const row = await this.card(reference);
    return row.pin_sealed === null ? null : this.options.vault.open(row.pin_sealed, `${reference}:pin`);
  }

  async setPin(reference: string, pin: string): Promise<void> {
    const sealed = await this.options.vault.seal((await this.card(reference)).user_id, pin, `${reference}:pin`);
    const rows = await this.store(() =>
      this.options.sql.query<{ reference: string }>(`UPDATE ${CARDS} SET pin_sealed = $2 WHERE reference = $1 RETURNING reference`, [reference, sealed]),
    );
    if (!rows[0]) throw new SandboxCardNotFoundError(`card ${reference}`);
  }

  parseWebhook(rawBody: Buffer, headers: Record<string, string | string[] | undefined>): CardIssuerWebhookEvent {
    verifySignature(this.options.webhookSecret, rawBody, headerValue(headers, 'x-signature'), {
      toleranceSeconds: this.options.webhookToleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS,
      nowSeconds: this.nowSeconds(),
    });
    const body = parseJson(rawBody.toString('utf8'));
    const data = objectAt(body, 'data');
    const eventId = stringAt(body, 'id');
    const occurredAt = isoOrNull(stringAt(body, 'createdAt'));
    const issuerApplicationId = stringAt(data, 'issuerApplicationId');
    const status = stringAt(data, 'status');
    const reason = data?.reason;
    if (
      !eventId ||
      !occurredAt ||
      !issuerApplicationId ||
      (status !== 'approved' && status !== 'denied' && status !== 'pending') ||
      (reason !== null && typeof reason !== 'string')
    )
      throw new ProviderError('Malformed sandbox card issuer webhook', PROVIDER);
    return { eventId, issuerApplicationId, externalStatus: status, status: localStatusOf(status), reason, occurredAt };
  }

  private async card(reference: string): Promise<CardRow> {
    const rows = await this.store(() =>
      this.options.sql.query<CardRow>(
        `SELECT reference, user_id::text, last4, exp_month, exp_year, pan_sealed, cvc_sealed, pin_sealed FROM ${CARDS} WHERE reference = $1`,
        [reference],
      ),
    );
    if (!rows[0]) throw new SandboxCardNotFoundError(`card ${reference}`);
    return rows[0];
  }

  private store<T>(fn: () => Promise<T>): Promise<T> {
    return throughStore(PROVIDER, 'Sandbox card issuer', fn);
  }
}
