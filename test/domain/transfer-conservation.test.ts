import { expect } from 'chai';
import { type AccountCommand, accountDecider } from '../../src/domain/ledger/account';
import { DomainError } from '../../src/platform/decider';
import { transactionDecider } from '../../src/domain/ledger/transaction';
import { decideTransfer, decideTransfers } from '../../src/domain/ledger/transfer';
import { account, credited, opened, ROOMY, transferRequest, withCredits } from './ledger-support';

const request = transferRequest();
const ada = () => withCredits(account(opened(7)), account(credited(7, '100')));
const bob = account(opened(8, 'bob'));

const unitMore = (amount: string) => (Number(amount) + 1).toFixed(8);

/**
 * A decider made wrong for one part of a transfer: the account decider's credit or debit moves a
 * unit more than asked, or the transaction decider records a unit more than asked.
 */
function withWrongDecider<T>(wrong: AccountCommand['type'] | 'Record', fn: () => T): T {
  const [decideAccount, decideTransaction] = [accountDecider.decide, transactionDecider.decide];
  if (wrong === 'Record')
    transactionDecider.decide = (command, state) =>
      decideTransaction(command.type === 'Create' ? { ...command, data: { ...command.data, amount: unitMore(command.data.amount) } } : command, state);
  else
    accountDecider.decide = (command, state) =>
      decideAccount(command.type === wrong && 'amount' in command ? { ...command, amount: unitMore(command.amount) } : command, state);
  try {
    return fn();
  } finally {
    accountDecider.decide = decideAccount;
    transactionDecider.decide = decideTransaction;
  }
}

/** What `fn` threw: a broken invariant is an Error (a bug), never a DomainError (a refusal). */
function thrownBy(fn: () => unknown): Error {
  try {
    fn();
  } catch (error) {
    expect(error).to.be.instanceOf(Error);
    expect(error).not.to.be.instanceOf(DomainError);
    return error as Error;
  }
  expect.fail('expected a broken invariant');
}

describe('a transfer conserves money (the assert behind every transfer)', () => {
  for (const [wrong, part] of [
    ['Credit', 'the credit'],
    ['Debit', 'the debit'],
    ['Record', 'the recorded transaction'],
  ] as const)
    it(`throws, as a bug and not a refusal, when ${part} is of another amount than the rest of the transfer`, () => {
      const error = thrownBy(() => withWrongDecider(wrong, () => decideTransfer(ada(), request, { destination: bob, limits: ROOMY })));
      expect(error.message).to.equal('Invariant violated: a transfer credits and records what it debits');
    });

  it('throws out of a batch too: the broken transfer is not refused alone while the others go through', () => {
    const batch = [
      { request, facts: { destination: bob, limits: ROOMY } },
      { request: { ...request, uuid: 't-2', id: 42 }, facts: { destination: bob, limits: ROOMY } },
    ];
    const error = thrownBy(() => withWrongDecider('Credit', () => decideTransfers(ada(), batch)));
    expect(error.message).to.equal('Invariant violated: a transfer credits and records what it debits');
    // Control: the right decider decides both.
    expect(decideTransfers(ada(), batch).outcomes.every((o) => !(o instanceof DomainError))).to.equal(true);
  });
});
