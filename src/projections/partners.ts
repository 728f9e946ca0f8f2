import type { PartnerEvent } from '../domain/partners/partner';
import type { Projection } from './projection';

/** Partners and their API keys (secrets only as slow hashes), for authenticating partner calls. */
export const partnersProjection: Projection = {
  name: 'partners',
  version: 1,
  tables: ['rm_partners', 'rm_partner_keys'],
  eventTypes: ['PartnerCreated', 'PartnerApiKeyCreated', 'PartnerApiKeyRevoked'],
  createTables: (t) => `
    CREATE TABLE ${t.rm_partners} (
      partner_id  uuid PRIMARY KEY,
      name        text NOT NULL,
      sandbox     boolean NOT NULL,
      created_at  timestamptz NOT NULL
    );
    CREATE TABLE ${t.rm_partner_keys} (
      api_key      text PRIMARY KEY,
      partner_id   uuid NOT NULL,
      secret_hash  text NOT NULL,
      created_at   timestamptz NOT NULL,
      revoked_at   timestamptz
    );
    CREATE INDEX ${t.rm_partner_keys}_partner ON ${t.rm_partner_keys} (partner_id);`,
  async apply(tx, events, t) {
    for (const recorded of events) {
      const e = { type: recorded.type, data: recorded.data } as PartnerEvent;
      switch (e.type) {
        case 'PartnerCreated':
          await tx.query(`INSERT INTO ${t.rm_partners} (partner_id, name, sandbox, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, [
            e.data.partnerId,
            e.data.name,
            e.data.sandbox,
            recorded.recordedAt,
          ]);
          break;
        case 'PartnerApiKeyCreated':
          await tx.query(`INSERT INTO ${t.rm_partner_keys} (api_key, partner_id, secret_hash, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, [
            e.data.apiKey,
            e.data.partnerId,
            e.data.secretHash,
            recorded.recordedAt,
          ]);
          break;
        case 'PartnerApiKeyRevoked':
          await tx.query(`UPDATE ${t.rm_partner_keys} SET revoked_at = $2 WHERE api_key = $1`, [e.data.apiKey, recorded.recordedAt]);
          break;
      }
    }
  },
};
