import {
  type AccountState,
  accountCreditStream,
  accountDecider,
  accountStream,
  type Limits,
  limitsAt,
  userAccountDecider,
  userAccountStream,
  withCredits,
} from '../../domain/ledger/account';
import { kycDecider, kycStream } from '../../domain/identity';
import { money } from '../../domain/ledger/money';
import { type TransactionCreatedData, transactionDecider, transactionStream } from '../../domain/ledger/transaction';
import type { Logger } from 'pino';
import type { Config } from '../../config';
import type { EventStore } from '../../eventstore/port';
import type { Sql } from '../../eventstore/sql';
import type { CommandHandler, Decision, Done, Reads } from '../../platform/commands/command-handler';
import { type CommandContext, type Loaded, load, settledFact, type StateCache } from '../../platform/commands/commands';
import type { TransactionView } from '../../projections/ledger';
import { LEDGER_REFUSALS } from '../../domain/ledger/refusals';

/** The limits of an approved user, as configured (docs/decisions.md, "KYC"). */
export const approvedLimits = (config: Pick<Config, 'kycLimits'>): Limits => ({
  maxTransactionAmount: money(String(config.kycLimits.maxTransactionAmount)),
  dailyTransactionLimit: money(String(config.kycLimits.dailyTransactionLimit)),
});

/** The user's limits at `at`, from their KYC stream (the write side). */
export async function limitsOf(reads: Reads, userId: string, at: string, approved: Limits): Promise<Limits> {
  const kyc = await reads.stream(kycStream(userId), kycDecider);
  return limitsAt(kyc.state, at, approved);
}

/** The user's account (reserved at the first login, never changed), from the write side. */
export async function accountOfUser(store: EventStore, cache: StateCache, userId: string): Promise<number> {
  const accountId = await settledFact(store, cache, userAccountStream(userId), userAccountDecider, (state) => state.accountId);
  if (accountId === null) throw LEDGER_REFUSALS.accountNotFound();
  return accountId;
}

/** How a transaction is shown, from the event that created it (a write's answer needs no read model). */
export const viewOf = (created: TransactionCreatedData): TransactionView => ({
  id: created.id,
  uuid: created.uuid,
  description: created.description,
  status: created.status,
  amount: created.amount,
  debitAccountId: created.debitAccountId,
  creditAccountId: created.creditAccountId,
  created: created.at,
});

/**
 * A command that settles a ledger transaction (clears, reverses, completes or fails it), run in the
 * turn of the account the transaction debits (read first: it never changes), so that settling takes
 * turns with the transfers, holds and authorizations on that account (CommandHandler.inLane) instead
 * of refusing their appends, and being refused by them, on a busy account. An unknown transaction
 * runs at once: its decision says it is unknown.
 */
export async function runSettlement<Result>(
  commands: CommandHandler,
  store: EventStore,
  transactionId: string,
  ctx: CommandContext,
  decide: (reads: Reads) => Promise<Decision<Result>>,
): Promise<Done<Result>> {
  const { state } = await load(store, transactionStream(transactionId), transactionDecider);
  const accountId = state.created?.debitAccountId;
  const work = () => commands.run(ctx, decide);
  return accountId === undefined || accountId === null ? work() : commands.inLane(accountStream(accountId), work);
}

/** Transaction numbers fetched at once (TransactionIds). */
const BLOCK = 200;

/**
 * Transaction numbers (the `id` lists order by) come from a sequence a block at a time: unique, not
 * gap-free (a restart skips the rest of a block). The next block is fetched when half of the current
 * one is used, so requests rarely wait.
 */
export class TransactionIds {
  private readonly block: number[] = [];
  private loading: Promise<void> | undefined;

  constructor(
    private readonly sql: Sql,
    private readonly log: Logger,
  ) {}

  async next(): Promise<number> {
    while (this.block.length === 0) await this.load();
    return this.take() as number;
  }

  /** The next id when the current block has one, without waiting (`next` fetches a block otherwise). */
  take(): number | undefined {
    const id = this.block.shift();
    if (id === undefined) return undefined;
    if (this.block.length < BLOCK / 2) {
      // Ahead of need: a failure here only means the next caller that finds the block empty fetches again.
      this.load().catch((error) => this.log.warn({ err: error }, 'prefetching transaction ids failed'));
    }
    return id;
  }

  private load(): Promise<void> {
    this.loading ??= this.sql
      .query<{ id: string }>(`SELECT nextval('transaction_id_seq')::text AS id FROM generate_series(1, ${BLOCK})`)
      .then((rows) => {
        this.block.push(...rows.map((r) => Number(r.id)));
        this.block.sort((a, b) => a - b);
      })
      .finally(() => {
        this.loading = undefined;
      });
    return this.loading;
  }
}

/**
 * An account as debits are decided on it: its stream at its revision, with its credit stream's
 * credits. `credits`: the credit stream as read, for a credit that must not land on an account
 * closed meanwhile (appended at its revision: the closing is appended there too).
 */
export async function readAccount(reads: Reads, accountId: number): Promise<Loaded<AccountState> & { credits: Loaded<AccountState> }> {
  const [main, credits] = await Promise.all([
    reads.stream(accountStream(accountId), accountDecider),
    reads.stream(accountCreditStream(accountId), accountDecider),
  ]);
  return { state: withCredits(main.state, credits.state), revision: main.revision, credits };
}
