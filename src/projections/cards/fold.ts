import type { CardSpendData, CardSpendEvent } from '../../domain/cards/spend';
import { CARD_SPEND_EVENT_TYPES } from '../../domain/cards/spend';
import { fixed, money } from '../../domain/ledger';
import type { Projection } from '../../platform/consumers/projection';
import { rowProjection } from '../../platform/consumers/rows';

const created = (d: CardSpendData, position: string, status: 'pending' | 'declined', declinedReason: string | null) => ({
  id: d.transactionId,
  position,
  card_id: d.cardId,
  user_id: d.userId,
  partner_id: d.partnerId,
  card_type: d.cardType,
  status,
  declined_reason: declinedReason,
  amount: fixed(money(d.amount)),
  authorized_amount: fixed(money(d.amount)),
  currency: d.currency,
  local_amount: d.localAmount === null ? null : fixed(money(d.localAmount)),
  local_currency: d.localCurrency,
  merchant_name: d.merchantName,
  merchant_category_code: d.merchantCategoryCode,
  authorization_method: d.authorizationMethod,
  authorized_at: d.at,
  posted_at: null,
});

/**
 * Card transactions (docs/interface.md, "Resources"), one row per authorization, approved or declined. `position` is
 * the log position of the authorization: the projection applies events in log order and never sees
 * one below a position it has passed, so a newest-first walk keyed on it sees every row exactly once,
 * however many arrive meanwhile (they arrive above where the walk is).
 */
const rowCards = rowProjection({
  name: 'cards',
  version: 1,
  eventTypes: [...CARD_SPEND_EVENT_TYPES],
  tables: {
    rm_card_transactions: {
      key: 'id',
      columns: {
        id: { type: 'uuid' },
        position: { type: 'text', notNull: true },
        card_id: { type: 'uuid', notNull: true },
        user_id: { type: 'uuid', notNull: true },
        partner_id: { type: 'uuid', notNull: true },
        card_type: { type: 'text', notNull: true },
        status: { type: 'text', notNull: true },
        declined_reason: { type: 'text' },
        amount: { type: 'numeric', notNull: true },
        authorized_amount: { type: 'numeric', notNull: true },
        currency: { type: 'text', notNull: true },
        local_amount: { type: 'numeric' },
        local_currency: { type: 'text' },
        merchant_name: { type: 'text', notNull: true },
        merchant_category_code: { type: 'text', notNull: true },
        authorization_method: { type: 'text' },
        authorized_at: { type: 'timestamptz', notNull: true },
        posted_at: { type: 'timestamptz' },
      },
      // Positions compare as bytes (comparePositions): the "C" collation orders them so.
      indexes: [
        ['user_id', 'position COLLATE "C" DESC'],
        ['card_id', 'position COLLATE "C" DESC'],
      ],
    },
  },
  creates: ['CardSpendAuthorized', 'CardSpendDeclined'],
  touches: (recorded) => [{ table: 'rm_card_transactions', key: (recorded.data as { transactionId: string }).transactionId }],
  apply(rows, recorded) {
    const e = recorded as unknown as CardSpendEvent;
    const current = rows.get('rm_card_transactions', e.data.transactionId);
    switch (e.type) {
      case 'CardSpendAuthorized':
        if (!current) rows.put('rm_card_transactions', created(e.data, recorded.position, 'pending', null));
        break;
      case 'CardSpendDeclined':
        if (!current) rows.put('rm_card_transactions', created(e.data, recorded.position, 'declined', e.data.declinedReason));
        break;
      case 'CardSpendCleared':
        if (current) rows.put('rm_card_transactions', { ...current, status: 'completed', amount: fixed(money(e.data.amount)), posted_at: e.data.at });
        break;
      case 'CardSpendReversed':
        if (current) rows.put('rm_card_transactions', { ...current, status: 'reversed' });
        break;
    }
  },
});

export const cardsProjection: Projection = rowCards;
