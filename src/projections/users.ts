import type { KycEvent } from '../domain/kyc/kyc';
import type { UserEvent } from '../domain/users/user';
import type { Projection } from './projection';

/** The partner-facing user list and record. */
export const usersProjection: Projection = {
  name: 'users',
  version: 2,
  tables: ['rm_users'],
  eventTypes: ['UserRegistered', 'UserStatusChanged', 'KycVerificationStarted', 'KycStatusChanged'],
  createTables: (t) => `
    CREATE TABLE ${t.rm_users} (
      user_id       uuid PRIMARY KEY,
      partner_id    uuid NOT NULL,
      email         text NOT NULL,
      status        text NOT NULL,
      country_code  text NOT NULL,
      phone_number  text,
      language      text NOT NULL,
      kyc_status    text,
      created_at    timestamptz NOT NULL,
      updated_at    timestamptz NOT NULL
    );
    CREATE INDEX ${t.rm_users}_partner_created ON ${t.rm_users} (partner_id, created_at DESC, user_id);
    CREATE INDEX ${t.rm_users}_email ON ${t.rm_users} (email);`,
  async apply(tx, events, t) {
    for (const recorded of events) {
      const e = { type: recorded.type, data: recorded.data } as UserEvent | KycEvent;
      switch (e.type) {
        case 'UserRegistered':
          await tx.query(
            `INSERT INTO ${t.rm_users} (user_id, partner_id, email, status, country_code, phone_number, language, created_at, updated_at)
             VALUES ($1, $2, $3, 'pending', $4, $5, $6, $7, $7) ON CONFLICT DO NOTHING`,
            [e.data.userId, e.data.partnerId, e.data.email, e.data.countryCode, e.data.phoneNumber, e.data.language, recorded.recordedAt],
          );
          break;
        case 'UserStatusChanged':
          await tx.query(`UPDATE ${t.rm_users} SET status = $2, updated_at = $3 WHERE user_id = $1`, [e.data.userId, e.data.to, recorded.recordedAt]);
          break;
        case 'KycVerificationStarted':
          await tx.query(`UPDATE ${t.rm_users} SET kyc_status = 'created', updated_at = $2 WHERE user_id = $1`, [e.data.userId, recorded.recordedAt]);
          break;
        case 'KycStatusChanged':
          await tx.query(`UPDATE ${t.rm_users} SET kyc_status = $2, updated_at = $3 WHERE user_id = $1`, [e.data.userId, e.data.to, recorded.recordedAt]);
          break;
      }
    }
  },
};
