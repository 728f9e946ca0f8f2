import { type Decider, invariant } from '../../platform/decider';
import { type KycState, latest } from '../identity';
import { type Amount, fixed, money, moneyUnits, parseAmount, ZERO } from './money';
import { LEDGER_REFUSALS } from './refusals';
import { type BucketMap, bucketMapOf, emptyBucketMap, filledBuckets, getIn, setIn } from '../../platform/bucket-map';

/**
 * The user's USDC account: opened once, at the first successful login; its balance is decided
 * here, at a known revision, so no interleaving of commands can overdraw it.
 * Balance shape (TigerBeetle's): posted credits, posted debits, pending debits (holds).
 * Available = credits - (posted + pending debits); the interface's `debits` counts both.
 */
export const ACCOUNT_ASSET = 'USDC';
export const ACCOUNT_TYPE = 'LIABILITY';

/** What a user may move: per transaction, and per UTC day (outgoing). */
export interface Limits {
  maxTransactionAmount: Amount;
  dailyTransactionLimit: Amount;
}

export const NO_LIMITS_GRANTED: Limits = { maxTransactionAmount: ZERO, dailyTransactionLimit: ZERO };

/** True while the user's latest verification is approved and its approval has not expired at `at`. */
export function isApprovedAt(kyc: KycState, at: string): boolean {
  const current = latest(kyc);
  return current?.status === 'approved' && (current.expiresAt === null || Date.parse(current.expiresAt) > Date.parse(at));
}

/**
 * The operating limits of the KYC state (docs/decisions.md, "KYC"): the approved level's limits while approved,
 * nothing before an approval or once it expired. A stale state can only be less approved than the
 * stored one (statuses only move forward), so a decision on it refuses at worst, never allows more.
 */
export function limitsAt(kyc: KycState, at: string, approved: Limits): Limits {
  return isApprovedAt(kyc, at) ? approved : NO_LIMITS_GRANTED;
}

export type CreditReason = 'deposit' | 'transfer' | 'payout_reversal' | 'card_reversal';
export type DebitReason = 'transfer' | 'payout' | 'card';

export type AccountEvent =
  | { type: 'AccountOpened'; data: { accountId: number; userId: string; partnerId: string; asset: string; type: string; at: string } }
  | { type: 'FundsCredited'; data: { accountId: number; transactionId: string; amount: string; reason: CreditReason; at: string } }
  | { type: 'FundsDebited'; data: { accountId: number; transactionId: string; amount: string; reason: DebitReason; pending: boolean; at: string } }
  | {
      type: 'HoldPosted';
      /**
       * `returnedDay`: the hold's money came back (a failed payout, returned by a REVERSED credit), and
       * this is the UTC day of its debit: that day's outgoing total no longer counts it.
       */
      data: { accountId: number; transactionId: string; amount: string; at: string; returnedDay?: string };
    }
  /**
   * The account takes no money in or out any more (its user was erased): appended to both of its
   * streams, the account stream and the credit stream, each at the revision the closing was decided
   * at, so what is appended there at a revision decided before it conflicts and is decided again.
   */
  | { type: 'AccountClosed'; data: { accountId: number; reason: 'user_erased'; at: string } }
  /**
   * On the credit stream, at its revision: a deposit was made to the account and awaits its provider
   * (credited by its FundsCredited, or dropped by DepositFailed). The account itself knows its money
   * on the way, so a closing decided on it sees the deposit, or conflicts with it.
   */
  | { type: 'DepositExpected'; data: { accountId: number; transactionId: string; amount: string; at: string } }
  | { type: 'DepositFailed'; data: { accountId: number; transactionId: string; at: string } };

/** One per user, appended with "no stream": two concurrent first logins cannot open two accounts. */
export type AccountReservationEvent = { type: 'UserAccountReserved'; data: { userId: string; accountId: number } };

export type AccountCommand =
  | { type: 'OpenAccount'; accountId: number; userId: string; partnerId: string; at: string }
  | { type: 'Credit'; transactionId: string; amount: string; reason: CreditReason; at: string }
  | { type: 'Debit'; transactionId: string; amount: string; reason: DebitReason; pending: boolean; at: string; limits: Limits | null }
  /** `returnedDay`: the money comes back (see HoldPosted), debited on that UTC day. */
  | { type: 'PostHold'; transactionId: string; at: string; returnedDay?: string }
  /** Only an account with nothing on it and nothing held or expected is closed (the caller refuses otherwise; here it is a bug). */
  | { type: 'Close'; reason: 'user_erased'; at: string }
  | { type: 'ExpectDeposit'; transactionId: string; amount: string; at: string }
  /** The deposit failed: no longer expected (a deposit made before deposits were expected on the account: nothing). */
  | { type: 'DropDeposit'; transactionId: string; at: string };

export interface AccountState {
  opened: boolean;
  /** Closed for good: credits and debits are refused as for an unknown account; its history stays. */
  closed: boolean;
  accountId: number | null;
  userId: string | null;
  partnerId: string | null;
  /** Amounts are kept as bignumbers in the folded state (parsed once, never formatted in between). */
  creditsPosted: Amount;
  debitsPosted: Amount;
  debitsPending: Amount;
  /** Pending debits by transaction, to post exactly what was held (a map whose changes copy a 64th of it). */
  holds: BucketMap<string>;
  /** Deposits awaiting their provider, by transaction (on the credit stream). */
  deposits: Record<string, string>;
  /** Outgoing total of one UTC day, for the daily limit. */
  day: string;
  dayOutgoing: Amount;
}

export const accountStream = (accountId: number) => `account-${accountId}`;
/**
 * Money coming in lives in a stream of its own, appended at any revision: a credit can never make
 * a debit unsafe (a debit decided without it saw less money, not more), so credits never conflict
 * with the debits decided at the account stream's exact revision.
 */
export const accountCreditStream = (accountId: number) => `accountin-${accountId}`;
export const userAccountStream = (userId: string) => `useraccount-${userId}`;

function snapshotAmount(value: unknown): Amount {
  const amount = typeof value === 'string' ? parseAmount(value) : null;
  if (!amount) throw new Error(`Snapshot amount is not a plain decimal: ${JSON.stringify(value)}`);
  return amount;
}

/** Amounts by transaction, from a snapshot (none: an empty record). */
const amountsOf = (value: unknown): Record<string, string> =>
  Object.fromEntries(Object.entries((value ?? {}) as Record<string, unknown>).map(([k, v]) => [k, fixed(snapshotAmount(v))]));

const without = (amounts: Record<string, string>, key: string): Record<string, string> => {
  const { [key]: _gone, ...rest } = amounts;
  return rest;
};

const isEmpty = (amounts: Record<string, string>) => Object.keys(amounts).length === 0;

export const available = (s: AccountState) => s.creditsPosted.minus(s.debitsPosted).minus(s.debitsPending);

const utcDay = (iso: string) => iso.slice(0, 10);

export const accountDecider: Decider<AccountState, AccountCommand, AccountEvent> = {
  snapshot: {
    kind: 'account@1',
    // Amounts as plain decimal strings, every digit kept. `closed` and `deposits` only when set: the
    // snapshots written before accounts had them stay the fold of their streams (the audit compares them).
    encode: (s) => ({
      opened: s.opened,
      ...(s.closed ? { closed: true } : {}),
      ...(isEmpty(s.deposits) ? {} : { deposits: s.deposits }),
      accountId: s.accountId,
      userId: s.userId,
      partnerId: s.partnerId,
      creditsPosted: s.creditsPosted.toFixed(),
      debitsPosted: s.debitsPosted.toFixed(),
      debitsPending: s.debitsPending.toFixed(),
      holds: s.holds.toJSON(),
      day: s.day,
      dayOutgoing: s.dayOutgoing.toFixed(),
    }),
    // Strict: anything but plain decimals is refused, and the load then folds from the start.
    decode: (j) => ({
      opened: j.opened === true,
      closed: j.closed === true,
      accountId: typeof j.accountId === 'number' ? j.accountId : null,
      userId: typeof j.userId === 'string' ? j.userId : null,
      partnerId: typeof j.partnerId === 'string' ? j.partnerId : null,
      creditsPosted: snapshotAmount(j.creditsPosted),
      debitsPosted: snapshotAmount(j.debitsPosted),
      debitsPending: snapshotAmount(j.debitsPending),
      holds: bucketMapOf(amountsOf(j.holds)),
      deposits: amountsOf(j.deposits),
      day: typeof j.day === 'string' ? j.day : '',
      dayOutgoing: snapshotAmount(j.dayOutgoing),
    }),
  },

  initialState: () => ({
    opened: false,
    closed: false,
    accountId: null,
    userId: null,
    partnerId: null,
    creditsPosted: ZERO,
    debitsPosted: ZERO,
    debitsPending: ZERO,
    holds: emptyBucketMap(),
    deposits: {},
    day: '',
    dayOutgoing: ZERO,
  }),

  evolve(state, event) {
    switch (event.type) {
      case 'AccountOpened':
        return { ...state, opened: true, accountId: event.data.accountId, userId: event.data.userId, partnerId: event.data.partnerId };
      case 'FundsCredited': {
        const creditsPosted = state.creditsPosted.plus(money(event.data.amount));
        if (event.data.reason !== 'deposit' || !(event.data.transactionId in state.deposits)) return { ...state, creditsPosted };
        return { ...state, creditsPosted, deposits: without(state.deposits, event.data.transactionId) };
      }
      case 'FundsDebited': {
        const day = utcDay(event.data.at);
        const amount = money(event.data.amount);
        const dayOutgoing = (day === state.day ? state.dayOutgoing : ZERO).plus(amount);
        if (event.data.pending) {
          return {
            ...state,
            debitsPending: state.debitsPending.plus(amount),
            holds: setIn(state.holds, event.data.transactionId, event.data.amount),
            day,
            dayOutgoing,
          };
        }
        return { ...state, debitsPosted: state.debitsPosted.plus(amount), day, dayOutgoing };
      }
      case 'HoldPosted': {
        const holds = setIn(state.holds, event.data.transactionId, undefined);
        const amount = money(event.data.amount);
        // Money that came back is not outgoing: its debit's day (when still the day counted) drops it.
        const returnedToday = event.data.returnedDay !== undefined && event.data.returnedDay === state.day;
        return {
          ...state,
          debitsPending: state.debitsPending.minus(amount),
          debitsPosted: state.debitsPosted.plus(amount),
          holds,
          ...(returnedToday ? { dayOutgoing: state.dayOutgoing.lt(amount) ? ZERO : state.dayOutgoing.minus(amount) } : {}),
        };
      }
      case 'AccountClosed':
        return { ...state, closed: true };
      case 'DepositExpected':
        return { ...state, deposits: { ...state.deposits, [event.data.transactionId]: event.data.amount } };
      case 'DepositFailed':
        return { ...state, deposits: without(state.deposits, event.data.transactionId) };
    }
  },

  decide(command, state) {
    if (command.type === 'OpenAccount') {
      if (state.opened) throw LEDGER_REFUSALS.accountAlreadyOpened();
      return [
        {
          type: 'AccountOpened',
          data: {
            accountId: command.accountId,
            userId: command.userId,
            partnerId: command.partnerId,
            asset: ACCOUNT_ASSET,
            type: ACCOUNT_TYPE,
            at: command.at,
          },
        },
      ];
    }
    if (!state.opened || state.accountId === null) throw LEDGER_REFUSALS.accountNotFound();
    const accountId = state.accountId;
    // A closed account is, to whoever would move money on it, an account that is not there.
    if (state.closed && (command.type === 'Credit' || command.type === 'Debit' || command.type === 'ExpectDeposit')) throw LEDGER_REFUSALS.accountNotFound();
    switch (command.type) {
      case 'Close':
        if (state.closed) return [];
        invariant(available(state).eq(0) && state.holds.size === 0 && isEmpty(state.deposits), 'a closed account has no money on it, held or on the way');
        return [{ type: 'AccountClosed', data: { accountId, reason: command.reason, at: command.at } }];
      case 'ExpectDeposit':
        return [{ type: 'DepositExpected', data: { accountId, transactionId: command.transactionId, amount: fixed(money(command.amount)), at: command.at } }];
      case 'DropDeposit':
        if (!(command.transactionId in state.deposits)) return [];
        return [{ type: 'DepositFailed', data: { accountId, transactionId: command.transactionId, at: command.at } }];
      case 'Credit':
        invariant(money(command.amount).gt(0), 'a credit is positive');
        return [
          {
            type: 'FundsCredited',
            data: { accountId, transactionId: command.transactionId, amount: fixed(money(command.amount)), reason: command.reason, at: command.at },
          },
        ];
      case 'Debit': {
        const amount = money(command.amount);
        invariant(amount.gt(0), 'a debit is positive');
        if (command.limits) {
          const { maxTransactionAmount: max, dailyTransactionLimit: daily } = command.limits;
          if (amount.gt(max)) throw LEDGER_REFUSALS.amountExceedsMaximum(max.toFixed());
          const today = utcDay(command.at) === state.day ? state.dayOutgoing : ZERO;
          if (today.plus(amount).gt(daily)) throw LEDGER_REFUSALS.dailyLimitExceeded();
        }
        if (available(state).lt(amount)) throw LEDGER_REFUSALS.insufficientBalance(String(accountId));
        const events: AccountEvent[] = [
          {
            type: 'FundsDebited',
            data: { accountId, transactionId: command.transactionId, amount: fixed(amount), reason: command.reason, pending: command.pending, at: command.at },
          },
        ];
        assertAccount(events.reduce(accountDecider.evolve, state));
        return events;
      }
      case 'PostHold': {
        const held = getIn(state.holds, command.transactionId);
        if (held === undefined) return [];
        const returned = command.returnedDay === undefined ? {} : { returnedDay: command.returnedDay };
        return [{ type: 'HoldPosted', data: { accountId, transactionId: command.transactionId, amount: held, at: command.at, ...returned } }];
      }
    }
  },
};

/**
 * What holds of every account state after a decision that moves money (TigerBeetle style: a broken
 * one is a bug, never a 4xx): nothing spent that was not there, and the holds are the pending debits.
 */
export function assertAccount(state: AccountState): void {
  invariant(available(state).gte(0), 'an account is not overdrawn');
  invariant(state.debitsPending.gte(0) && state.debitsPosted.gte(0) && state.creditsPosted.gte(0), 'an account has no negative total');
  invariant(heldUnits(state.holds) === moneyUnits(state.debitsPending), "an account's holds sum to its pending debits");
}

/** What one bucket of holds sums to, in units (moneyUnits), per bucket object: a bucket is never changed, so its sum holds for every map sharing it. */
const bucketSums = new WeakMap<object, bigint>();

/**
 * What the holds sum to, in units of 10^-8 (moneyUnits), adding the buckets' sums (only a bucket not
 * summed before is read). Whole numbers, not bignumber.js: a decision sums every bucket, and 64
 * additions of BigNumbers cost it about twice as much (docs/performance.md, "Session 31").
 */
export function heldUnits(holds: BucketMap<string>): bigint {
  let total = 0n;
  for (const bucket of filledBuckets(holds)) {
    let sum = bucketSums.get(bucket);
    if (sum === undefined) {
      sum = 0n;
      for (const amount of bucket.values()) sum += moneyUnits(amount);
      bucketSums.set(bucket, sum);
    }
    total += sum;
  }
  return total;
}

/**
 * An account the user may act on: 404 when unknown or another partner's (its existence is not theirs
 * to learn), 403 when another user's of the same partner.
 */
export function requireOwnAccount(account: AccountState, user: { userId: string; partnerId: string }): number {
  if (!account.opened || account.accountId === null || account.partnerId !== user.partnerId) throw LEDGER_REFUSALS.accountNotFound();
  if (account.userId !== user.userId) throw LEDGER_REFUSALS.accountOfAnotherUser();
  return account.accountId;
}

/** The account as it is seen when debits are decided: its stream's state with the credits of its credit stream. */
export const withCredits = (main: AccountState, credits: AccountState): AccountState => ({
  ...main,
  closed: main.closed || credits.closed,
  deposits: credits.deposits,
  creditsPosted: main.creditsPosted.plus(credits.creditsPosted),
});

/** Which account is the user's (reserved once, at the first successful login). */
export const userAccountDecider: Decider<{ accountId: number | null }, { type: 'Reserve'; userId: string; accountId: number }, AccountReservationEvent> = {
  initialState: () => ({ accountId: null }),
  evolve: (state, event) => (state.accountId === null ? { accountId: event.data.accountId } : state),
  decide(command, state) {
    if (state.accountId !== null) throw LEDGER_REFUSALS.userAlreadyHasAccount();
    return [{ type: 'UserAccountReserved', data: { userId: command.userId, accountId: command.accountId } }];
  },
};
