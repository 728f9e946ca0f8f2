import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { EventLog, type NewEvent } from '../../src/app/notifications/events';
import { NOTIFICATIONS_SCHEMA } from '../../src/app/notifications/schema';
import { PgliteSql, PgSql, type Sql } from '../../src/eventstore/sql';
import { sharedCluster } from '../support/postgres';

/**
 * The outbox's insert writes its own array parameters, and sends the notifications' data as one JSON
 * array (EventLog.insert): what a partner reads must be the very text the outbox made, on a server
 * and on PGlite alike.
 */
describe('the notifications log stores each notification as made (EventLog.insert)', () => {
  const tricky = [
    { note: 'with "quotes" and a back\\slash', nested: { list: [1, 'two', null, true], empty: {} } },
    { text: 'naïve ✓ \u{1F600}', lines: 'one\ntwo\ttab', braces: '{a,b}', nothing: null },
    { amount: '0.01000000', comma: 'a,b', blank: '', word: 'NULL' },
  ];

  for (const engine of ['postgres', 'pglite'] as const) {
    it(`on ${engine}: the bodies carry the data's exact texts, in order, and only the delivered ones make deliveries`, async () => {
      const sql: Sql = engine === 'postgres' ? new PgSql(await (await sharedCluster()).freshDatabase()) : await PgliteSql.open();
      try {
        await sql.exec(NOTIFICATIONS_SCHEMA);
        const partnerId = randomUUID();
        const made: NewEvent[] = tricky.map((data, i) => ({
          partnerId,
          eventId: randomUUID(),
          type: 'transfer.completed',
          createdAt: new Date(Date.UTC(2026, 10, 29, 12, 0, i)).toISOString(),
          data: JSON.stringify(data),
          delivered: i !== 1,
        }));
        await sql.transaction((tx) => new EventLog(sql).insert(tx, made));

        const stored = await sql.query<{ event_id: string; body: string }>('SELECT event_id, body FROM notification_events ORDER BY sequence');
        expect(stored.map((r) => r.event_id)).to.deep.equal(made.map((e) => e.eventId));
        stored.forEach((row, i) => {
          const event = made[i] as NewEvent;
          expect(row.body.endsWith(`,"data":${event.data}}`), row.body).to.equal(true);
          expect(JSON.parse(row.body).data).to.deep.equal(tricky[i]);
        });
        const deliveries = await sql.query<{ event_id: string; body: string }>('SELECT event_id, body FROM webhook_deliveries ORDER BY sequence');
        expect(deliveries.map((d) => d.event_id)).to.deep.equal([made[0]?.eventId, made[2]?.eventId]);
        expect(deliveries.map((d) => d.body)).to.deep.equal([stored[0]?.body, stored[2]?.body]);
      } finally {
        await sql.close();
      }
    });
  }
});
