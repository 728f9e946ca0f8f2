import { randomUUID } from 'node:crypto';
import { decideAuthorizations } from '../src/domain/cards/authorization';
import { type CardState, cardDecider } from '../src/domain/cards/card';
import type { CardEvent } from '../src/domain/cards/card';
import { type AccountEvent, type AccountState, accountDecider } from '../src/domain/ledger/account';
import { envNumber, fmtInt, printTable } from './support';

/**
 * `npm run bench -- card-history`: what deciding and folding one authorization costs the main thread
 * on a card that has kept a year of spends, by how many it keeps (and holds on its account, the
 * ones still pending). No database and no HTTP: the domain's decision (decideAuthorizations, its
 * limit windows and the account's invariants) and the folds the command path makes of its events.
 * BENCH_CARD_SPENDS (default 10,100,1000,10000): the spends kept; BENCH_PENDING_SHARE (default 0.1):
 * the share of them still pending (each one a hold on the account); BENCH_SPENDS_TODAY (default 0):
 * pending spends made earlier the same day (a busy card's: a fleet's, a marketplace's); BENCH_SECONDS
 * (default 1 per size).
 */
const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const YEAR_MS = 365 * 86_400_000;

interface Books {
  card: CardState;
  account: AccountState;
}

function authorize(books: Books, at: string, ledgerId: number): Books {
  const request = { transactionId: randomUUID(), amount: '1.00', at, ledgerId, currency: 'USD', merchantName: 'Bench', merchantCategoryCode: '5411' };
  const { outcomes, cards, account } = decideAuthorizations(new Map([['card-1', books.card]]), books.account, [
    { cardId: 'card-1', request: request as Parameters<typeof decideAuthorizations>[2][number]['request'] },
  ]);
  if (outcomes[0]?.outcome !== 'approved') throw new Error(`the bench's authorization was ${outcomes[0]?.outcome}`);
  return { card: cards.get('card-1') as CardState, account };
}

/**
 * A card with `spends` authorizations spread over the year before `at`, all but `pendingShare` of them
 * cleared, and `today` more, pending, between the start of `at`'s day and `at`.
 */
function cardWithHistory(spends: number, pendingShare: number, today: number, at: number): Books {
  const issued: CardEvent = {
    type: 'CardIssued',
    data: {
      cardId: 'card-1',
      userId: 'user-1',
      partnerId: 'partner-1',
      accountId: 1,
      applicationId: 'application-1',
      type: 'virtual',
      status: 'active',
      last4: '4242',
      expirationMonth: '01',
      expirationYear: '30',
      issuer: 'bench',
      issuerRef: 'bench',
      limit: { amount: '100000000.00000000', frequency: 'per30DayPeriod' },
      at: new Date(T0).toISOString(),
    } as never,
  };
  const opened: AccountEvent[] = [
    {
      type: 'AccountOpened',
      data: { accountId: 1, userId: 'user-1', partnerId: 'partner-1', asset: 'USDC', type: 'LIABILITY', at: new Date(T0).toISOString() },
    },
    { type: 'FundsCredited', data: { accountId: 1, transactionId: 'deposit-1', amount: '100000000', reason: 'deposit', at: new Date(T0).toISOString() } },
  ];
  let books: Books = {
    card: cardDecider.evolve(cardDecider.initialState(), issued),
    account: opened.reduce(accountDecider.evolve, accountDecider.initialState()),
  };
  const step = YEAR_MS / Math.max(spends, 1);
  for (let i = 0; i < spends; i++) {
    const at = new Date(T0 + i * step).toISOString();
    books = authorize(books, at, i);
    if (i / spends < 1 - pendingShare) books = clearLast(books, at);
  }
  const dayStart = at - (at % 86_400_000);
  for (let i = 0; i < today; i++) books = authorize(books, new Date(dayStart + Math.floor((i * (at - dayStart)) / today)).toISOString(), spends + i);
  return books;
}

function clearLast(books: Books, at: string): Books {
  const event = books.card.spends.days.at(-1)?.spends.at(-1);
  if (!event) return books;
  const cleared: CardEvent = {
    type: 'CardSpendCleared',
    data: { cardId: 'card-1', transactionId: event.transactionId, authorizedAmount: event.amount, amount: event.amount, at },
  };
  const posted: AccountEvent = { type: 'HoldPosted', data: { accountId: 1, transactionId: event.transactionId, amount: event.amount, at } };
  return { card: cardDecider.evolve(books.card, cleared), account: accountDecider.evolve(books.account, posted) };
}

export async function runCardHistoryBench(): Promise<void> {
  const sizes = (process.env.BENCH_CARD_SPENDS ?? '10,100,1000,10000').split(',').map(Number);
  const pendingShare = envNumber('BENCH_PENDING_SHARE', 0.1, { zero: true });
  const seconds = envNumber('BENCH_SECONDS', 1);
  const today = envNumber('BENCH_SPENDS_TODAY', 0, { zero: true });
  console.log(
    `Tally card-history bench: one authorization decided and folded on a card with a year of spends (${Math.round(pendingShare * 100)}% still pending)${today > 0 ? ` and ${fmtInt(today)} more earlier today` : ''}, node ${process.version}`,
  );
  const rows: string[][] = [];
  for (const size of sizes) {
    // Late in the day, after the day's earlier spends (T0 is a midnight).
    const atMs = T0 + YEAR_MS + 20 * 3_600_000;
    const books = cardWithHistory(size, pendingShare, today, atMs);
    const at = new Date(atMs).toISOString();
    // Warm: the first size would otherwise pay for compiling the code it runs.
    for (let warm = performance.now(); performance.now() - warm < 500; ) authorize(books, at, 0);
    let n = 0;
    const start = performance.now();
    while (performance.now() - start < seconds * 1_000) authorize(books, at, size + n++);
    const us = ((performance.now() - start) * 1_000) / n;
    rows.push([fmtInt(size), fmtInt(books.account.holds.size), fmtInt(n), us.toFixed(1)]);
  }
  printTable(['spends kept', 'holds', 'authorizations', 'us per authorization'], rows);
}
