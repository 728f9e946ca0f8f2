import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { personalData } from '../src/compose/personal-data';
import type { EventStore, NewEvent } from '../src/eventstore/port';
import { PostgresEventStore } from '../src/eventstore/postgres';
import { PgSql } from '../src/eventstore/sql';
import { generateKeys } from '../src/platform/keys';
import { DataKeys } from '../src/platform/sealing/data-keys';
import { Keks } from '../src/platform/sealing/keks';
import { PersonalData } from '../src/platform/sealing/personal-data';
import { sealedStore } from '../src/platform/sealing/sealed-store';
import { startTestCluster } from '../test/support/postgres';
import { envNumber, fmtInt, printTable } from './support';

const SECONDS = envNumber('BENCH_SECONDS', 2);
const ROUNDS = envNumber('BENCH_ROUNDS', 5, { integer: true });

/** A profile as a partner sends it: every field personal. */
const profileFields = (i: number) => ({
  firstName: `First${i}`,
  lastName: `Last${i}`,
  dateOfBirth: '1990-01-01',
  nationality: 'CO',
  gender: 'F',
  governmentIdType: 'CC',
  governmentIdNumber: `${1_000_000 + i}`,
  governmentIdCountry: 'CO',
  addressLine1: `Calle ${i}`,
  addressLine2: 'Apto 1',
  city: 'Bogota',
  state: 'DC',
  postalCode: '110111',
  country: 'CO',
  occupation: 'Engineer',
  annualSalary: '50000',
  accountPurpose: 'savings',
  expectedMonthlyVolume: '1000',
});

interface Op {
  name: string;
  /** One operation through `store`; `i` counts them. */
  run(store: EventStore, i: number): Promise<void>;
}

/** A transfer's TransactionCreated: a declared type without a value at its personal paths. */
const transferCreated = (userId: string): NewEvent => ({
  id: randomUUID(),
  type: 'TransactionCreated',
  data: {
    uuid: randomUUID(),
    id: 1,
    kind: 'TRANSFER',
    status: 'COMPLETED',
    amount: '1',
    debitAccountId: 1,
    creditAccountId: 2,
    description: 'bench',
    userId,
    partnerId: randomUUID(),
    requestHash: null,
    details: {},
    at: new Date().toISOString(),
  },
});

/**
 * `npm run bench -- personal-data`: what sealing personal data at the source costs, on the store
 * port as the service uses it, against the same store unwrapped, in alternating rounds on one
 * throwaway durable Postgres: a profile written (a new user: its data key made), a profile written
 * for a user whose key is held, a profile read back, and a transfer's TransactionCreated (no
 * personal value: the hot path).
 */
export async function runPersonalDataBench(): Promise<void> {
  const cluster = await startTestCluster({ durable: true });
  process.once('exit', () => cluster.stop());
  const sql = new PgSql(await cluster.freshDatabase(), { max: 8, applicationName: 'tally-bench-personal-data' });
  try {
    const raw = await PostgresEventStore.create(sql);
    const keys = new DataKeys(sql, new Keks(generateKeys().keks));
    await keys.prepare();
    const sealed = sealedStore(raw, new PersonalData(keys, personalData));
    const known = randomUUID();
    const profiles: string[] = [];
    const ops: Op[] = [
      {
        name: 'profile written, new user',
        async run(store) {
          const userId = randomUUID();
          await store.append(`profile-${userId}`, [{ id: randomUUID(), type: 'ProfileCreated', data: { userId, fields: profileFields(1) } }], 'no_stream');
          // Read back below through both stores: the profiles as the sealed store wrote them.
          if (store === sealed) profiles.push(`profile-${userId}`);
        },
      },
      {
        name: 'profile written, key held',
        async run(store, i) {
          await store.append(
            `profile-${randomUUID()}`,
            [{ id: randomUUID(), type: 'ProfileCreated', data: { userId: known, fields: profileFields(i) } }],
            'no_stream',
          );
        },
      },
      {
        name: 'profile read',
        async run(store, i) {
          await store.readStream(profiles[i % profiles.length] as string);
        },
      },
      {
        name: "transfer's TransactionCreated",
        async run(store) {
          await store.append(`txn-${randomUUID()}`, [transferCreated(known)], 'no_stream');
        },
      },
    ];
    console.log(`personal data: sealed store against the store unwrapped, ${ROUNDS} alternating rounds of ${SECONDS} s per operation, one caller`);
    const rows: string[][] = [];
    for (const op of ops) {
      const totals = { raw: { ops: 0, ms: 0, cpu: 0 }, sealed: { ops: 0, ms: 0, cpu: 0 } };
      for (let round = 0; round < ROUNDS; round++) {
        const order: Array<'raw' | 'sealed'> = round % 2 === 0 ? ['raw', 'sealed'] : ['sealed', 'raw'];
        for (const which of order) {
          const t = totals[which];
          const cpu0 = process.cpuUsage();
          const started = performance.now();
          while (performance.now() - started < SECONDS * 1_000) await op.run(which === 'raw' ? raw : sealed, t.ops++);
          t.ms += performance.now() - started;
          const cpu = process.cpuUsage(cpu0);
          t.cpu += (cpu.user + cpu.system) / 1_000;
        }
      }
      const rate = (t: { ops: number; ms: number }) => (t.ops / t.ms) * 1_000;
      const cpuUs = (t: { ops: number; cpu: number }) => (t.cpu / t.ops) * 1_000;
      rows.push([
        op.name,
        fmtInt(rate(totals.raw)),
        fmtInt(rate(totals.sealed)),
        `${(rate(totals.sealed) / rate(totals.raw)).toFixed(3)}x`,
        `${fmtInt(cpuUs(totals.raw))} / ${fmtInt(cpuUs(totals.sealed))}`,
      ]);
    }
    printTable(['operation', 'unwrapped/s', 'sealed/s', 'sealed/unwrapped', 'node CPU us per op (unwrapped / sealed)'], rows);
  } finally {
    await sql.close();
    cluster.stop();
  }
}
