import { emailReservationDecider, userDecider, userStream } from '../../domain/identity/user';
import { IDENTITY_REFUSALS } from '../../domain/identity/refusals';
import { type AccountState, accountCreditStream, accountDecider, accountStream, userAccountDecider, userAccountStream } from '../../domain/ledger';
import type { EventStore } from '../../eventstore/port';
import { type Append, at, type CommandHandler } from '../../platform/commands/command-handler';
import { type CommandContext, load } from '../../platform/commands/commands';
import type { ReadModels, WaitForReadModels } from '../../platform/consumers/read-your-writes';
import { ProviderUnavailable } from '../../platform/failures';
import { keyOwner } from '../../platform/sealing/sealer';
import { readAccount } from '../ledger';
import { emailStream } from './users';

/** The read models that fold UserErased (personal columns to null, the user "not found"): waited for before the answer. */
const ERASED_IN = ['users', 'profiles', 'kyc'];

/** Whom erasure is done for: a partner (its own users only), or the operator (any user). */
export type EraseScope = { partnerId: string } | 'operator';

/** The user whose erasure is being finished: `email` is null when the log no longer gives it. */
export interface ErasedUser {
  userId: string;
  partnerId: string;
  email: string | null;
}

export interface ErasureDeps {
  commands: CommandHandler;
  store: EventStore;
  readYourWrites: WaitForReadModels;
  readModels: Pick<ReadModels, 'waitFor'>;
  dataKeys: { destroy(owner: string): Promise<boolean> };
  /** Whether a transaction of the account is still pending in the ledger read model (deposits live nowhere else before they settle). */
  pendingInLedger(accountId: number): Promise<boolean>;
  /**
   * What else erasure does outside the user's stream, each idempotent: cancel the user's cards,
   * drop personal data from the tables that are no read model (notifications, sandbox providers).
   */
  followUps: Array<(user: ErasedUser, ctx: CommandContext) => Promise<void>>;
  /** How long the ledger read model may take to reach the log's head before erasure answers 503. */
  ledgerWaitMs: number;
}

/**
 * The account of a user being erased is closed in the same append, on both of its streams at the
 * revisions its balance, holds and expected deposits were read at: a debit, hold, deposit or
 * deposit's credit decided before the closing conflicts with it (one of the two is decided again:
 * either the money moved and erasure is refused, or the account is closed and the money does not
 * move). A transfer's credit, appended at any revision, conflicts only when it lands first
 * (docs/privacy.md, "Not covered yet").
 */
function closeAccount(accountId: number, read: Awaited<ReturnType<typeof readAccount>>, closedAt: string): Append[] {
  const closed = accountDecider.decide({ type: 'Close', reason: 'user_erased', at: closedAt }, read.state);
  return [
    { stream: accountStream(accountId), events: closed, expected: at(read), cached: accountDecider },
    { stream: accountCreditStream(accountId), events: closed, expected: at(read.credits), cached: accountDecider },
  ];
}

/** Credits equal debits (holds counted as debits, as the API shows them). */
const settled = (account: AccountState) => account.creditsPosted.eq(account.debitsPosted.plus(account.debitsPending));

/** Money held on the account, or a deposit to it awaiting its provider. */
const onItsWay = (account: AccountState) => account.holds.size > 0 || Object.keys(account.deposits).length > 0;

/** The ledger read model did not reach the log's head in time: whether a deposit is pending is unknown, so nothing is erased (503). */
class PendingUnknown extends ProviderUnavailable {
  constructor() {
    super('the ledger read model is behind the log: pending deposits cannot be ruled out');
  }
}

/**
 * Erasure of a user's personal data (docs/privacy.md): refused while money is on, or on its way to
 * or from, the user's accounts; otherwise UserErased, the email's release and the account's closing
 * are appended at the revisions read, and then, in order, the card is canceled, the tables outside
 * the read models are scrubbed and the user's data key is destroyed. Each later step is idempotent: a crash after the
 * append is finished by erasing again (which answers 404, the user being erased already).
 */
export class UserErasure {
  constructor(private readonly deps: ErasureDeps) {}

  async erase(userId: string, scope: EraseScope, ctx: CommandContext): Promise<{ userId: string; erasedAt: string }> {
    const { state } = await load(this.deps.store, userStream(userId), userDecider);
    if (!state.exists || !state.partnerId || (scope !== 'operator' && state.partnerId !== scope.partnerId)) throw IDENTITY_REFUSALS.userNotFound();
    const user: ErasedUser = { userId, partnerId: state.partnerId, email: state.email };
    if (state.erased) {
      await this.closeLeftOpen(userId, ctx);
      await this.finish(user, ctx);
      throw IDENTITY_REFUSALS.userNotFound();
    }
    const pendingDeposit = await this.pendingDeposit(userId);
    const done = await this.deps.commands.run(
      ctx,
      async (reads) => {
        const loaded = await reads.stream(userStream(userId), userDecider);
        const reservation = await reads.stream(userAccountStream(userId), userAccountDecider);
        const accountId = reservation.state.accountId;
        const read = accountId === null ? null : await readAccount(reads, accountId);
        const account = read?.state ?? null;
        const money = {
          unsettled: account !== null && !settled(account),
          pending: pendingDeposit || (account !== null && onItsWay(account)),
        };
        const erasedAt = new Date().toISOString();
        const events = userDecider.decide({ type: 'Erase', erasedAt, money }, loaded.state);
        const appends: Append[] = [{ stream: userStream(userId), events, expected: at(loaded) }];
        if (read !== null && accountId !== null) appends.push(...closeAccount(accountId, read, erasedAt));
        const email = loaded.state.email;
        if (email !== null) {
          const held = await reads.stream(emailStream(email), emailReservationDecider, { cached: false });
          const released = emailReservationDecider.decide({ type: 'Release', userId }, held.state);
          if (released.length > 0) appends.push({ stream: emailStream(email), events: released, expected: at(held) });
        }
        return { appends, result: erasedAt };
      },
      { cache: false },
    );
    await this.finish(user, ctx);
    await this.deps.readYourWrites(done.position, ERASED_IN);
    return { userId, erasedAt: done.result };
  }

  /**
   * The account of a user erased before erasure closed accounts: closed now, when nothing is on it
   * or on its way (money a transfer put there since stays, on an open account, for the operator).
   */
  private async closeLeftOpen(userId: string, ctx: CommandContext): Promise<void> {
    await this.deps.commands.run(
      ctx,
      async (reads) => {
        const { accountId } = (await reads.stream(userAccountStream(userId), userAccountDecider)).state;
        const read = accountId === null ? null : await readAccount(reads, accountId);
        const closable = read !== null && accountId !== null && !read.state.closed && settled(read.state) && !onItsWay(read.state);
        return { appends: closable ? closeAccount(accountId, read, new Date().toISOString()) : [], result: undefined };
      },
      { cache: false },
    );
  }

  /** After the append: the follow-ups, then the data key (last, so nothing still needs it to scrub). */
  private async finish(user: ErasedUser, ctx: CommandContext): Promise<void> {
    for (const followUp of this.deps.followUps) await followUp(user, ctx);
    await this.deps.dataKeys.destroy(keyOwner.user(user.userId));
  }

  /**
   * A deposit is pending from its creation until its provider decides. The account's credit stream
   * expects the deposits made since accounts close (DepositExpected, read with the account in the
   * decision); one made before is listed by the ledger read model alone: it is read once it has
   * reached the log's head, never lagging. (A deposit made meanwhile is one the account expects.)
   */
  private async pendingDeposit(userId: string): Promise<boolean> {
    const { state } = await load(this.deps.store, userAccountStream(userId), userAccountDecider);
    if (state.accountId === null) return false;
    const head = await this.deps.store.headPosition();
    if (!(await this.deps.readModels.waitFor(head, { names: ['ledger'], timeoutMs: this.deps.ledgerWaitMs }))) throw new PendingUnknown();
    return this.deps.pendingInLedger(state.accountId);
  }
}
