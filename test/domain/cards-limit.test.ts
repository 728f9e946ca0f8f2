import { expect } from 'chai';
import { inWindow, LIMIT_FREQUENCIES, type LimitFrequency, parseLimit, type Spend, spentInWindow, withinLimit } from '../../src/domain/cards/limit';
import { refusal } from './ledger-support';
import type { CardLimit } from '../../src/domain/cards/limit';

/** Whether `amount` at `at` keeps the window of these spends within the limit. */
const within = (limit: CardLimit, spends: Spend[], amount: string, at: string) => withinLimit(limit, spentInWindow(spends, limit.frequency, at), amount);

/** An injected clock: instants as offsets from one authorization's, never the machine's time. */
const NOW = Date.parse('2026-11-25T12:00:00.000Z');
const ago = (ms: number) => new Date(NOW - ms).toISOString();
const AT = ago(0);
const H = 3_600_000;
const D = 24 * H;
const spend = (amount: string, at: string, status: Spend['status'] = 'completed'): Spend => ({ amount, at, status });

const WINDOWS: Array<[LimitFrequency, number]> = [
  ['per24HourPeriod', D],
  ['per7DayPeriod', 7 * D],
  ['per30DayPeriod', 30 * D],
  ['perYearPeriod', 365 * D],
];

describe('a card spending limit', () => {
  describe('its rolling windows, at their edges', () => {
    for (const [frequency, length] of WINDOWS) {
      it(`${frequency} counts what was authorized in the ${length / D} day(s) before, its first instant excluded`, () => {
        expect(inWindow(frequency, ago(0), AT), 'at the same instant').to.equal(true);
        expect(inWindow(frequency, ago(length - 1), AT), 'one millisecond inside').to.equal(true);
        expect(inWindow(frequency, ago(length), AT), 'exactly one window earlier').to.equal(false);
        expect(inWindow(frequency, ago(length + 1), AT), 'one millisecond before').to.equal(false);
      });
    }

    it('perYearPeriod is 365 days, even across a leap day', () => {
      const at = '2028-03-01T00:00:00.000Z';
      // 2028 has a 29 February: 365 days before 1 March 2028 is 2 March 2027, not 1 March.
      expect(inWindow('perYearPeriod', '2027-03-02T00:00:00.001Z', at)).to.equal(true);
      expect(inWindow('perYearPeriod', '2027-03-02T00:00:00.000Z', at)).to.equal(false);
      expect(inWindow('perYearPeriod', '2027-03-01T12:00:00.000Z', at)).to.equal(false);
    });

    it('allTime counts everything since issuance; perAuthorization counts nothing before', () => {
      expect(inWindow('allTime', '2000-01-01T00:00:00.000Z', AT)).to.equal(true);
      expect(inWindow('perAuthorization', ago(0), AT)).to.equal(false);
    });

    it('never counts what comes after the authorization', () => {
      for (const frequency of LIMIT_FREQUENCIES) expect(inWindow(frequency, ago(-1), AT), frequency).to.equal(false);
    });
  });

  describe('what a window holds', () => {
    const history = [
      spend('100', ago(1 * H)),
      spend('50.25', ago(2 * H), 'pending'),
      spend('500', ago(3 * H), 'declined'),
      spend('70', ago(4 * H), 'reversed'),
      spend('30', ago(D)),
      spend('20', ago(3 * D)),
    ];

    it('sums pending and completed authorizations inside it, never declined or reversed ones', () => {
      expect(spentInWindow(history, 'per24HourPeriod', AT).toFixed()).to.equal('150.25');
      expect(spentInWindow(history, 'per7DayPeriod', AT).toFixed()).to.equal('200.25');
      expect(spentInWindow(history, 'allTime', AT).toFixed()).to.equal('200.25');
      expect(spentInWindow(history, 'perAuthorization', AT).toFixed()).to.equal('0');
    });

    it('allows an authorization that reaches the limit exactly, and refuses one a cent over, in decimals', () => {
      const limit = { amount: '200.30000000', frequency: 'per24HourPeriod' as const };
      expect(within(limit, history, '50.05', AT)).to.equal(true);
      expect(within(limit, history, '50.06', AT)).to.equal(false);
      // 0.1 + 0.2 in floats is 0.30000000000000004: decimals are exact.
      expect(within({ amount: '0.3', frequency: 'allTime' }, [spend('0.1', ago(H))], '0.2', AT)).to.equal(true);
    });

    it('lets an authorization through once the spend that filled the window has left it', () => {
      const limit = { amount: '100', frequency: 'per24HourPeriod' as const };
      const full = [spend('100', ago(D - 1))];
      expect(within(limit, full, '0.01', AT)).to.equal(false);
      expect(within(limit, full, '0.01', new Date(NOW + 1).toISOString())).to.equal(true);
    });

    it('perAuthorization caps one authorization alone, whatever came before', () => {
      const limit = { amount: '25', frequency: 'perAuthorization' as const };
      expect(within(limit, [spend('25', ago(1))], '25', AT)).to.equal(true);
      expect(within(limit, [], '25.00000001', AT)).to.equal(false);
    });
  });

  describe('a limit as asked for', () => {
    it('reads the amount as a decimal (number or string) and keeps it in its canonical form', () => {
      expect(parseLimit(250.5, 'per30DayPeriod')).to.deep.equal({ amount: '250.50000000', frequency: 'per30DayPeriod' });
      expect(parseLimit('0.00000001', 'allTime')).to.deep.equal({ amount: '0.00000001', frequency: 'allTime' });
    });

    it('refuses an amount that is not positive, too precise or too large, and an unknown frequency', () => {
      const cases: Array<[unknown, unknown, string, string]> = [
        [0, 'allTime', 'amount_not_positive', 'Amount must be greater than 0'],
        [-5, 'allTime', 'amount_not_positive', 'Amount must be greater than 0'],
        ['1.000000001', 'allTime', 'amount_too_precise', 'amount must have at most 8 decimal places'],
        ['1000000000000000000', 'allTime', 'amount_too_large', 'amount is too large'],
        ['ten', 'allTime', 'invalid_amount', 'amount must be a number'],
        [
          10,
          'perMonth',
          'invalid_limit_frequency',
          'frequency must be one of per24HourPeriod, per7DayPeriod, per30DayPeriod, perYearPeriod, perAuthorization, allTime',
        ],
      ];
      for (const [amount, frequency, code, message] of cases) {
        const error = refusal(() => parseLimit(amount, frequency));
        expect([error.kind, error.code, error.message, error.param], `${amount} ${frequency}`).to.deep.equal([
          'invalid',
          code,
          message,
          code === 'invalid_limit_frequency' ? 'frequency' : 'amount',
        ]);
      }
    });
  });
});
