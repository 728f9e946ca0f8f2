import { type AccountEvent, type AccountState, accountCreditStream, accountDecider, accountStream, type Limits } from '../../domain/accounts/account';
import { DomainError } from '../../domain/decider';
import { fixed, money } from '../../domain/ledger/money';
import type { StreamAppend } from '../../eventstore/port';
import { type CommandContext, load, toNewEvents } from '../commands';
import type { Tally } from '../tally';

/** Appends retried after a concurrent write to the same stream. */
export const MAX_ATTEMPTS = 8;
const ID_BLOCK = 200;
const OWNERS_CACHE_MAX = 100_000;
/** KYC limits change rarely (approval, expiry after a year); a few seconds of staleness is harmless. */
const LIMITS_TTL_MS = 5_000;

/** A payment or payout provider failed or timed out: 502, with nothing half-done. */
export class LedgerProviderFailure extends Error {}

export interface AccountRow {
  id: number;
  asset: string;
  type: string;
  credits: string;
  debits: string;
}

/** What every ledger command needs of accounts: who owns them, their limits, their state, ids. */
export class LedgerAccounts {
  private readonly idBlock: number[] = [];
  private idBlockLoading: Promise<void> | undefined;
  /** Who owns an account never changes: remembered after the first read. */
  private readonly owners = new Map<number, { userId: string; partnerId: string }>();
  private readonly limitsCache = new Map<string, { limits: Limits; until: number }>();

  constructor(private readonly tally: Tally) {}

  get cache() {
    return this.tally.stateCache;
  }

  async accountsOf(userId: string): Promise<AccountRow[]> {
    const rows = await this.tally.sql.query<{ account_id: string; asset: string; type: string; credits: string; debits: string }>(
      'SELECT account_id::text, asset, type, credits::text, debits::text FROM rm_accounts WHERE user_id = $1 ORDER BY account_id',
      [userId],
    );
    return rows.map((r) => ({ id: Number(r.account_id), asset: r.asset, type: r.type, credits: fixed(money(r.credits)), debits: fixed(money(r.debits)) }));
  }

  /**
   * An account the token user may act on: 404 when unknown or another partner's (its existence is
   * not theirs to learn), 403 when another user's of the same partner.
   */
  async ownAccount(userId: string, partnerId: string, accountId: number): Promise<number> {
    const owner = await this.ownerOf(accountId);
    if (!owner || owner.partnerId !== partnerId) throw new DomainError('not_found', 'Account not found');
    if (owner.userId !== userId) throw new DomainError('forbidden', 'Account does not belong to the authenticated user');
    return accountId;
  }

  /** The owner when already known, without waiting (ownerOf reads it otherwise). */
  knownOwner(accountId: number): { userId: string; partnerId: string } | undefined {
    return this.owners.get(accountId);
  }

  /** The limits when remembered and fresh, without waiting (limitsOf reads them otherwise). */
  knownLimits(userId: string): Limits | undefined {
    const cached = this.limitsCache.get(userId);
    return cached && cached.until > Date.now() ? cached.limits : undefined;
  }

  async ownerOf(accountId: number): Promise<{ userId: string; partnerId: string } | null> {
    const known = this.owners.get(accountId);
    if (known) return known;
    const [row] = await this.tally.sql.query<{ user_id: string; partner_id: string }>(
      'SELECT user_id::text, partner_id::text FROM rm_accounts WHERE account_id = $1',
      [accountId],
    );
    if (!row) return null;
    const owner = { userId: row.user_id, partnerId: row.partner_id };
    if (this.owners.size >= OWNERS_CACHE_MAX) this.owners.clear();
    this.owners.set(accountId, owner);
    return owner;
  }

  async primaryAccount(userId: string): Promise<number> {
    const [row] = await this.tally.sql.query<{ account_id: string }>(
      'SELECT account_id::text FROM rm_accounts WHERE user_id = $1 ORDER BY account_id LIMIT 1',
      [userId],
    );
    if (!row) throw new DomainError('not_found', 'Account not found');
    return Number(row.account_id);
  }

  /** The derived operating limits of the KYC state (0 before approval). */
  async limitsOf(userId: string): Promise<Limits> {
    const known = this.knownLimits(userId);
    if (known) return known;
    const limits = await this.readLimits(userId);
    if (this.limitsCache.size >= OWNERS_CACHE_MAX) this.limitsCache.clear();
    this.limitsCache.set(userId, { limits, until: Date.now() + LIMITS_TTL_MS });
    return limits;
  }

  private async readLimits(userId: string): Promise<Limits> {
    const [latest] = await this.tally.sql.query<{ status: string; expires_at: string | null }>(
      'SELECT status, expires_at::text FROM rm_kyc_verifications WHERE user_id = $1 ORDER BY created_at DESC, verification_id DESC LIMIT 1',
      [userId],
    );
    const approved = latest?.status === 'approved' && (!latest.expires_at || Date.parse(latest.expires_at) > Date.now());
    const { maxTransactionAmount, dailyTransactionLimit } = this.tally.config.kycLimits;
    return approved
      ? { maxTransactionAmount: String(maxTransactionAmount), dailyTransactionLimit: String(dailyTransactionLimit) }
      : { maxTransactionAmount: '0', dailyTransactionLimit: '0' };
  }

  /**
   * Ids come from the sequence a block at a time (unique, not gap-free: a restart skips the rest of a
   * block). The next block is fetched when half of the current one is used, so requests rarely wait.
   */
  async nextTransactionId(): Promise<number> {
    while (this.idBlock.length === 0) await this.loadIdBlock();
    return this.takeTransactionId() as number;
  }

  /** The next id when the current block has one, without waiting (nextTransactionId fetches a block otherwise). */
  takeTransactionId(): number | undefined {
    const id = this.idBlock.shift();
    if (id === undefined) return undefined;
    if (this.idBlock.length < ID_BLOCK / 2) {
      // Ahead of need: a failure here only means the next caller that finds the block empty fetches again.
      this.loadIdBlock().catch((error) => this.tally.log.warn({ err: error }, 'prefetching transaction ids failed'));
    }
    return id;
  }

  private loadIdBlock(): Promise<void> {
    this.idBlockLoading ??= this.tally.sql
      .query<{ id: string }>(`SELECT nextval('transaction_id_seq')::text AS id FROM generate_series(1, ${ID_BLOCK})`)
      .then((rows) => {
        this.idBlock.push(...rows.map((r) => Number(r.id)));
        this.idBlock.sort((a, b) => a - b);
      })
      .finally(() => {
        this.idBlockLoading = undefined;
      });
    return this.idBlockLoading;
  }

  accountAppend(ctx: CommandContext, accountId: number, events: AccountEvent[], expected: number | 'any'): StreamAppend {
    return { stream: accountStream(accountId), events: toNewEvents(ctx, accountStream(accountId), events), expectedRevision: expected };
  }

  creditAppend(ctx: CommandContext, accountId: number, events: AccountEvent[]): StreamAppend {
    return { stream: accountCreditStream(accountId), events: toNewEvents(ctx, accountCreditStream(accountId), events), expectedRevision: 'any' };
  }

  /**
   * The account's state from both its streams as the cache holds them, without reading or waiting:
   * for a caller that appends at the returned revision (a stale state then fails that append).
   * Undefined when either stream is not in memory (loadAccount reads them then).
   */
  cachedAccount(accountId: number): { state: AccountState; revision: number } | undefined {
    const main = this.cache.get<AccountState>(this.cache.key(accountDecider, accountStream(accountId)));
    const credits = main && this.cache.get<AccountState>(this.cache.key(accountDecider, accountCreditStream(accountId)));
    if (!main || !credits) return undefined;
    return { state: { ...main.state, creditsPosted: main.state.creditsPosted.plus(credits.state.creditsPosted) }, revision: main.revision };
  }

  /** The account's state from both its streams; `revision` is the account stream's, where debits are decided. */
  async loadAccount(accountId: number, options: { untilTime?: Date; trustCache?: boolean } = {}): Promise<{ state: AccountState; revision: number }> {
    const cache = options.untilTime ? undefined : this.cache;
    const [main, credits] = await Promise.all([
      load(this.tally.store, accountStream(accountId), accountDecider, { cache, untilTime: options.untilTime, trustCache: options.trustCache }),
      load(this.tally.store, accountCreditStream(accountId), accountDecider, { cache, untilTime: options.untilTime, trustCache: options.trustCache }),
    ]);
    return { state: { ...main.state, creditsPosted: main.state.creditsPosted.plus(credits.state.creditsPosted) }, revision: main.revision };
  }

  /** A balance as it was at an instant, folded from the account's streams (not a read model). */
  async balanceAt(accountId: number, at: Date): Promise<{ credits: string; debits: string }> {
    const { state } = await this.loadAccount(accountId, { untilTime: at });
    return { credits: fixed(state.creditsPosted), debits: fixed(state.debitsPosted.plus(state.debitsPending)) };
  }
}
