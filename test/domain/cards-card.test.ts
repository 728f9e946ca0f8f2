import { expect } from 'chai';
import {
  CARD_ACTIONS,
  type Card,
  type CardAction,
  type CardEvent,
  type CardStatus,
  cardDecider,
  checkPin,
  requireCard,
  requireCardOfPartner,
  requireOwnedCard,
  requireRevealable,
  userCardsDecider,
} from '../../src/domain/cards/card';
import { answeredUnderKey, cardRequestDecider, type CardRequestAnswered } from '../../src/domain/cards/keyed';
import { DEFAULT_CARD_LIMIT } from '../../src/domain/cards/limit';
import { activated, AT, canceled, cardDeciderSpec, issued, issuedCard, LATER, locked, refused, unlocked } from './cards-support';

const spec = cardDeciderSpec(cardDecider);
const change = (action: CardAction) => ({ type: 'ChangeStatus' as const, action, at: LATER });
const moved = (action: CardAction, from: CardStatus) => [
  { type: CARD_ACTIONS[action].event, data: { cardId: 'card-1', from, to: CARD_ACTIONS[action].to, at: LATER } },
];

describe('a card, decided', () => {
  describe('issuing', () => {
    it('starts a virtual card active, with the default limit of 1000 per 24 hours and only last4 and expiry of its secrets', () => {
      spec
        .given([])
        .when({ type: 'Issue', card: issuedCard() })
        .then([{ type: 'CardIssued', data: { ...issuedCard(), status: 'active', limit: { amount: '1000.00000000', frequency: 'per24HourPeriod' } } }]);
    });

    it('starts a physical card notActivated', () => {
      spec
        .given([])
        .when({ type: 'Issue', card: issuedCard({ type: 'physical' }) })
        .then([issued('physical')]);
    });

    it('is refused on a stream that holds a card already', () => {
      spec.given([issued()]).when({ type: 'Issue', card: issuedCard() }).thenRefuses('conflict', 'card_already_issued', 'Card already issued');
    });
  });

  describe('moving between statuses', () => {
    it('activates a physical card', () => {
      spec
        .given([issued('physical')])
        .when(change('activate'))
        .then(moved('activate', 'notActivated'));
    });

    it('locks an active card and unlocks a locked one', () => {
      spec.given([issued()]).when(change('lock')).then(moved('lock', 'active'));
      spec.given([issued(), locked()]).when(change('unlock')).then(moved('unlock', 'locked'));
    });

    it('cancels a card in any status but canceled', () => {
      spec
        .given([issued('physical')])
        .when(change('cancel'))
        .then(moved('cancel', 'notActivated'));
      spec.given([issued()]).when(change('cancel')).then(moved('cancel', 'active'));
      spec.given([issued(), locked()]).when(change('cancel')).then(moved('cancel', 'locked'));
    });

    const refused: Array<[string, Parameters<typeof spec.given>[0], CardAction, string]> = [
      ['activates a card that is active (every virtual card)', [issued()], 'activate', 'Cannot activate a card in status active'],
      ['activates a locked card', [issued(), locked()], 'activate', 'Cannot activate a card in status locked'],
      ['locks a card not activated yet', [issued('physical')], 'lock', 'Cannot lock a card in status notActivated'],
      ['locks a locked card', [issued(), locked()], 'lock', 'Cannot lock a card in status locked'],
      ['unlocks an active card', [issued(), locked(), unlocked()], 'unlock', 'Cannot unlock a card in status active'],
      ['unlocks a card not activated yet', [issued('physical')], 'unlock', 'Cannot unlock a card in status notActivated'],
    ];
    for (const [what, given, action, message] of refused) {
      it(`refuses (409) when it ${what}`, () => {
        spec.given(given).when(change(action)).thenRefuses('conflict', 'card_status_forbids', message);
      });
    }

    it('never moves a canceled card again: every action is 409', () => {
      for (const action of Object.keys(CARD_ACTIONS) as CardAction[]) {
        spec.given([issued(), canceled()]).when(change(action)).thenRefuses('conflict', 'card_status_forbids', `Cannot ${action} a card in status canceled`);
      }
      spec
        .given([issued(), canceled()])
        .when({ type: 'SetLimit', limit: DEFAULT_CARD_LIMIT, at: LATER })
        .thenRefuses('conflict', 'card_status_forbids', 'Cannot update the limit of a card in status canceled');
      spec
        .given([issued(), canceled()])
        .when({ type: 'ChangePin', pin: '1234', at: LATER })
        .thenRefuses('conflict', 'card_status_forbids', 'Cannot set the PIN of a card in status canceled');
    });

    it('is 404 on a card that does not exist', () => {
      spec.given([]).when(change('lock')).thenRefuses('not_found', 'card_not_found', 'Card not found');
    });
  });

  describe('the limit and the PIN', () => {
    const limit = { amount: '250.50000000', frequency: 'per7DayPeriod' as const };

    it('sets a new limit on an active, locked or not yet activated card', () => {
      const changed = [{ type: 'CardLimitChanged' as const, data: { cardId: 'card-1', limit, at: LATER } }];
      spec.given([issued()]).when({ type: 'SetLimit', limit, at: LATER }).then(changed);
      spec.given([issued(), locked()]).when({ type: 'SetLimit', limit, at: LATER }).then(changed);
      spec
        .given([issued('physical')])
        .when({ type: 'SetLimit', limit, at: LATER })
        .then(changed);
    });

    it('records that the PIN changed, never the PIN itself', () => {
      const events = cardDecider.decide({ type: 'ChangePin', pin: '2580', at: LATER }, [issued()].reduce(cardDecider.evolve, cardDecider.initialState()));
      expect(events).to.deep.equal([{ type: 'CardPinChanged', data: { cardId: 'card-1', at: LATER } }]);
      expect(JSON.stringify(events)).not.to.contain('2580');
    });

    it('takes a PIN of exactly four digits', () => {
      expect(checkPin('0000')).to.equal('0000');
      for (const pin of ['123', '12345', '12a4', ' 1234', '١٢٣٤', 1234, null]) {
        expect(
          refused(() => checkPin(pin)),
          String(pin),
        ).to.deep.equal({ kind: 'invalid', code: 'invalid_pin', message: 'pin must be exactly 4 digits' });
      }
      spec.given([issued()]).when({ type: 'ChangePin', pin: '12', at: LATER }).thenRefuses('invalid', 'invalid_pin', 'pin must be exactly 4 digits');
    });
  });

  describe('the state it folds to', () => {
    it('follows the moves, the limit and whether a PIN was set', () => {
      const limit = { amount: '50.00000000', frequency: 'perAuthorization' as const };
      const state = [
        issued('physical'),
        activated(),
        locked(),
        { type: 'CardLimitChanged' as const, data: { cardId: 'card-1', limit, at: LATER } },
        { type: 'CardPinChanged' as const, data: { cardId: 'card-1', at: LATER } },
      ].reduce(cardDecider.evolve, cardDecider.initialState());
      expect(state.card).to.include({ status: 'locked', pinSet: true, createdAt: AT, updatedAt: LATER });
      expect(state.card?.limit).to.deep.equal(limit);
    });

    it("hides another user's card as not found", () => {
      const state = [issued()].reduce(cardDecider.evolve, cardDecider.initialState());
      expect(requireCard(state, 'ada').cardId).to.equal('card-1');
      expect(refused(() => requireCard(state, 'bob'))).to.deep.equal({ kind: 'not_found', code: 'card_not_found', message: 'Card not found' });
    });

    it("names a card of another user of the partner as not theirs (403), another partner's or none as not found", () => {
      const card = [issued()].reduce(cardDecider.evolve, cardDecider.initialState()).card as Card;
      expect(requireOwnedCard(card, { userId: 'ada', partnerId: 'acme' }).cardId).to.equal('card-1');
      expect(refused(() => requireOwnedCard(card, { userId: 'bob', partnerId: 'acme' }))).to.deep.equal({
        kind: 'forbidden',
        code: 'card_not_owned',
        message: 'Card does not belong to the authenticated user',
      });
      for (const [named, user] of [
        [card, { userId: 'ada', partnerId: 'globex' }],
        [null, { userId: 'ada', partnerId: 'acme' }],
      ] as const)
        expect(refused(() => requireOwnedCard(named, user)).code).to.equal('card_not_found');
      expect(requireCardOfPartner(card, 'acme').cardId).to.equal('card-1');
      expect(refused(() => requireCardOfPartner(card, 'globex')).code).to.equal('card_not_found');
    });
  });

  describe('revealing the secrets and the PIN', () => {
    const cardIn = (...events: CardEvent[]) => events.reduce(cardDecider.evolve, cardDecider.initialState()).card as Card;

    it('reveals them on an active or not yet activated card', () => {
      for (const card of [cardIn(issued()), cardIn(issued('physical'))]) {
        expect(requireRevealable(card, 'revealSecrets')).to.equal(card);
        expect(requireRevealable(card, 'revealPin')).to.equal(card);
      }
    });

    it('never while the card is locked or canceled: the PIN as the secrets (409)', () => {
      for (const [card, status] of [
        [cardIn(issued(), locked()), 'locked'],
        [cardIn(issued(), canceled()), 'canceled'],
      ] as const) {
        expect(refused(() => requireRevealable(card, 'revealSecrets'))).to.deep.equal({
          kind: 'conflict',
          code: 'card_status_forbids',
          message: `Cannot reveal the secrets of a card in status ${status}`,
        });
        expect(refused(() => requireRevealable(card, 'revealPin'))).to.deep.equal({
          kind: 'conflict',
          code: 'card_status_forbids',
          message: `Cannot reveal the PIN of a card in status ${status}`,
        });
      }
    });
  });
});

describe("a user's cards", () => {
  const users = cardDeciderSpec(userCardsDecider);
  const assigned = (cardId: string) => ({ type: 'UserCardAssigned' as const, data: { userId: 'ada', cardId, at: AT } });
  const assign = (cardId: string, latestStatus: CardStatus | null) => ({ type: 'Assign' as const, userId: 'ada', cardId, latestStatus, at: AT });

  it('takes a first card, and a new one once the latest is canceled', () => {
    users
      .given([])
      .when(assign('card-1', null))
      .then([assigned('card-1')]);
    users
      .given([assigned('card-1')])
      .when(assign('card-2', 'canceled'))
      .then([assigned('card-2')]);
  });

  it('refuses a second card while the latest is not canceled', () => {
    for (const status of ['notActivated', 'active', 'locked'] as const) {
      users
        .given([assigned('card-1')])
        .when(assign('card-2', status))
        .thenRefuses('conflict', 'card_already_issued', 'Card already issued');
    }
  });

  it('takes the same card again as done (a retried issue)', () => {
    users
      .given([assigned('card-1')])
      .when(assign('card-1', 'active'))
      .thenNothingHappens();
  });
});

describe('a keyed card request', () => {
  const keyed = cardDeciderSpec(cardRequestDecider);
  const answer = (over: Partial<CardRequestAnswered> = {}): CardRequestAnswered => ({
    uuid: 'k-1',
    kind: 'lock',
    requestHash: 'h1',
    userId: 'ada',
    cardId: 'card-1',
    answer: { id: 'card-1', status: 'locked' },
    at: AT,
    ...over,
  });
  const answered = (over: Partial<CardRequestAnswered> = {}) => ({ type: 'CardRequestAnswered' as const, data: answer(over) });

  it('keeps the first answer under its key, once', () => {
    keyed.given([]).when({ type: 'Answer', data: answer() }).then([answered()]);
    keyed
      .given([answered()])
      .when({ type: 'Answer', data: answer({ at: LATER }) })
      .thenNothingHappens();
  });

  it('answers the same request with the first answer, and another request under the key with 422', () => {
    const state = { answered: answer() };
    expect(answeredUnderKey(state, { kind: 'lock', requestHash: 'h1', userId: 'ada' })?.answer).to.deep.equal({ id: 'card-1', status: 'locked' });
    expect(answeredUnderKey({ answered: null }, { kind: 'lock', requestHash: 'h1', userId: 'ada' })).to.equal(null);
    for (const other of [
      { kind: 'unlock' as const, requestHash: 'h1', userId: 'ada' },
      { kind: 'lock' as const, requestHash: 'h2', userId: 'ada' },
      { kind: 'lock' as const, requestHash: 'h1', userId: 'bob' },
    ]) {
      expect(refused(() => answeredUnderKey(state, other))).to.deep.equal({
        kind: 'unprocessable',
        code: 'idempotency_key_reused',
        message: 'Idempotency key reused with different parameters',
      });
    }
  });
});
