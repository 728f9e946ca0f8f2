import type { PartnerEvent } from '../../domain/identity/partner';
import { rowProjection } from '../../platform/consumers/rows';

/** Partners and their API keys (secrets only as slow hashes), for authenticating partner calls. */
export const partnersProjection = rowProjection({
  name: 'partners',
  version: 2,
  eventTypes: ['PartnerCreated', 'PartnerApiKeyCreated', 'PartnerApiKeyRevoked'],
  tables: {
    rm_partners: {
      key: 'partner_id',
      columns: {
        partner_id: { type: 'uuid' },
        name: { type: 'text', notNull: true },
        sandbox: { type: 'boolean', notNull: true },
        created_at: { type: 'timestamptz', notNull: true },
      },
    },
    rm_partner_keys: {
      key: 'api_key',
      columns: {
        api_key: { type: 'text' },
        partner_id: { type: 'uuid', notNull: true },
        secret_hash: { type: 'text', notNull: true },
        created_at: { type: 'timestamptz', notNull: true },
        revoked_at: { type: 'timestamptz' },
      },
      indexes: [['partner_id']],
    },
  },
  creates: ['PartnerCreated', 'PartnerApiKeyCreated'],
  touches(recorded) {
    const e = recorded as unknown as PartnerEvent;
    return e.type === 'PartnerCreated' ? [{ table: 'rm_partners', key: e.data.partnerId }] : [{ table: 'rm_partner_keys', key: e.data.apiKey }];
  },
  apply(rows, recorded) {
    const e = recorded as unknown as PartnerEvent;
    switch (e.type) {
      case 'PartnerCreated':
        if (!rows.get('rm_partners', e.data.partnerId)) {
          rows.put('rm_partners', { partner_id: e.data.partnerId, name: e.data.name, sandbox: e.data.sandbox, created_at: recorded.recordedAt });
        }
        break;
      case 'PartnerApiKeyCreated':
        if (!rows.get('rm_partner_keys', e.data.apiKey)) {
          rows.put('rm_partner_keys', {
            api_key: e.data.apiKey,
            partner_id: e.data.partnerId,
            secret_hash: e.data.secretHash,
            created_at: recorded.recordedAt,
            revoked_at: null,
          });
        }
        break;
      case 'PartnerApiKeyRevoked': {
        const key = rows.get('rm_partner_keys', e.data.apiKey);
        if (key) rows.put('rm_partner_keys', { ...key, revoked_at: recorded.recordedAt });
        break;
      }
    }
  },
});
