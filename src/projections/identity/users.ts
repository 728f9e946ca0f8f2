import type { KycEvent } from '../../domain/identity/kyc';
import type { UserEvent } from '../../domain/identity/user';
import { rowProjection } from '../../platform/consumers/rows';

/** The partner-facing user list and record. An erased user's row stays (its status, its session generation) with its personal columns null. */
export const usersProjection = rowProjection({
  name: 'users',
  // 6: email and phone may be null (a destroyed data key, an erased user), UserErased (erased_at).
  version: 6,
  eventTypes: ['UserRegistered', 'UserStatusChanged', 'KycVerificationStarted', 'KycStatusChanged', 'UserErased'],
  tables: {
    rm_users: {
      key: 'user_id',
      columns: {
        user_id: { type: 'uuid' },
        partner_id: { type: 'uuid', notNull: true },
        /** Null once the user is erased (and in a rebuild after, as the log's sealed email no longer opens). */
        email: { type: 'text' },
        status: { type: 'text', notNull: true },
        country_code: { type: 'text', notNull: true },
        phone_number: { type: 'text' },
        language: { type: 'text', notNull: true },
        kyc_status: { type: 'text' },
        /** The user's sessionGeneration (domain/users): sessions started below it are dead. */
        session_generation: { type: 'integer', notNull: true, default: '0' },
        created_at: { type: 'timestamptz', notNull: true },
        updated_at: { type: 'timestamptz', notNull: true },
        /** Set by erasure: every query but the outbox's reads the user as not found from then on. */
        erased_at: { type: 'timestamptz' },
      },
      indexes: [['partner_id', 'created_at DESC', 'user_id'], ['email']],
    },
  },
  creates: ['UserRegistered'],
  touches: (recorded) => [{ table: 'rm_users', key: (recorded.data as { userId: string }).userId }],
  apply(rows, recorded) {
    const e = recorded as unknown as UserEvent | KycEvent;
    const current = rows.get('rm_users', e.data.userId);
    const at = recorded.recordedAt;
    switch (e.type) {
      case 'UserRegistered':
        if (!current) {
          const d = e.data;
          rows.put('rm_users', {
            user_id: d.userId,
            partner_id: d.partnerId,
            email: d.email,
            status: 'pending',
            country_code: d.countryCode,
            phone_number: d.phoneNumber,
            language: d.language,
            kyc_status: null,
            session_generation: 0,
            created_at: at,
            updated_at: at,
            erased_at: null,
          });
        }
        break;
      case 'UserStatusChanged':
        if (current) {
          const endsSessions = e.data.to === 'suspended' || e.data.to === 'banned';
          const generation = Number(current.session_generation) + (endsSessions ? 1 : 0);
          rows.put('rm_users', { ...current, status: e.data.to, session_generation: generation, updated_at: at });
        }
        break;
      case 'KycVerificationStarted':
        if (current) rows.put('rm_users', { ...current, kyc_status: 'created', updated_at: at });
        break;
      case 'KycStatusChanged':
        if (current) rows.put('rm_users', { ...current, kyc_status: e.data.to, updated_at: at });
        break;
      case 'UserErased':
        // Its sessions end with it, as with a suspension: the session gate compares generations.
        if (current)
          rows.put('rm_users', {
            ...current,
            email: null,
            phone_number: null,
            session_generation: Number(current.session_generation) + 1,
            erased_at: e.data.erasedAt,
            updated_at: at,
          });
        break;
    }
  },
});
