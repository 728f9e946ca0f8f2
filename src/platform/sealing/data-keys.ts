import { randomBytes } from 'node:crypto';
import type { Sql } from '../../eventstore/sql';
import { uuidV7 } from '../ids';
import { openWith, parseSealed, sealWith } from './cipher';
import type { Keks } from './keks';

/**
 * Data keys (DEKs): 32 random bytes each, one per owner (a user: their personal data and card
 * secrets; a partner: its webhook secrets), kept here and not in the log, wrapped (sealed) under a
 * key-encryption key whose id the row names. The table is not a read model: no rebuild drops it, and
 * losing a row loses every value sealed under its key. Destroying a key (erasure) clears `wrapped`
 * and `kek_id` and keeps the row, so the owner never gets a new key and its values stay unopenable.
 */
export const DATA_KEYS_SCHEMA = `
CREATE TABLE IF NOT EXISTS data_keys (
  id           text PRIMARY KEY,
  owner        text NOT NULL UNIQUE,
  kek_id       text,
  wrapped      text,
  created_at   timestamptz NOT NULL DEFAULT now(),
  destroyed_at timestamptz,
  CHECK ((destroyed_at IS NULL) = (wrapped IS NOT NULL AND kek_id IS NOT NULL))
);
CREATE INDEX IF NOT EXISTS data_keys_kek ON data_keys (kek_id) WHERE kek_id IS NOT NULL;`;

export interface DataKey {
  id: string;
  key: Buffer;
}

/** Sealing for an owner whose key is destroyed: a bug of the caller (an erased user writes nothing). */
export class ErasedKeyError extends Error {
  constructor(owner: string) {
    super(`the data key of ${owner} is destroyed`);
    this.name = 'ErasedKeyError';
  }
}

export interface DataKeysOptions {
  /** Most keys held in memory (least recently used go first). */
  maxEntries: number;
  /**
   * A key held longer is read again: the bound on how long another node may still open values
   * of a key destroyed here (this node forgets it at once). See docs/operations.md.
   */
  ttlMs: number;
}

interface Row {
  id: string;
  owner: string;
  kek_id: string | null;
  wrapped: string | null;
}

/** A key in memory; `key` null: destroyed. */
interface Entry {
  id: string;
  owner: string;
  key: Buffer | null;
  readAtMs: number;
}

const COLUMNS = 'id, owner, kek_id, wrapped';
/** The channel a destroyed key's owner is told on (pg_notify, at its commit): see destroyed-keys.ts. */
export const DESTROYED_KEYS_CHANNEL = 'tally_data_keys';
/**
 * What `forget` is given to drop every key held, and what its listeners then hear (so the projection
 * thread's DataKeys drops all of its own too). Owners are `user:<id>` or `partner:<id>`, never this.
 */
export const EVERY_OWNER = '*';
/** A wrapped key is bound to its row: it cannot be moved to another owner. */
const wrapBinding = (id: string, owner: string) => `data-key:${id}:${owner}`;

export class DataKeys {
  /** Insertion order is recency: the first entry is the least recently used. */
  private readonly entries = new Map<string, Entry>();
  private readonly idOfOwner = new Map<string, string>();
  /** One read (or making) per owner at a time on this node. */
  private readonly reading = new Map<string, Promise<Entry>>();
  private readonly forgetListeners: Array<(owner: string) => void> = [];
  /**
   * Moves at every forget: a read of a row that started before it does not keep what it read (the
   * row may predate a destroy whose notice was the forget), it only hands it to its caller.
   */
  private generation = 0;

  constructor(
    private readonly sql: Sql,
    private readonly keks: Keks,
    private readonly options: DataKeysOptions = { maxEntries: 10_000, ttlMs: 30_000 },
  ) {}

  /** Creates the table; idempotent, serialised so several nodes can start at once. */
  async prepare(): Promise<void> {
    await this.sql.transaction(async (tx) => {
      await tx.query(`SELECT pg_advisory_xact_lock(hashtext('tally.data_keys'))`);
      for (const statement of DATA_KEYS_SCHEMA.split(';').filter((s) => s.trim())) await tx.query(statement);
    });
  }

  /** The owner's key, made on first need (race-safe across nodes: the first insert wins, every node reads it back). */
  async forOwner(owner: string): Promise<DataKey> {
    const id = this.idOfOwner.get(owner);
    const entry = (id !== undefined && this.fresh(id)) || (await this.once(owner, () => this.readOrMake(owner)));
    if (!entry.key) throw new ErasedKeyError(owner);
    return { id: entry.id, key: entry.key };
  }

  /** The key a sealed value names; 'erased' once destroyed. Throws for an id no row has (a value from elsewhere). */
  async byId(id: string): Promise<DataKey | 'erased'> {
    const found = await this.find(id);
    if (!found) throw new Error(`no data key ${id}`);
    return found;
  }

  /** As byId, undefined for an id no row has (a text that only looks sealed: see personal-data.ts). */
  async find(id: string): Promise<DataKey | 'erased' | undefined> {
    const entry = this.fresh(id) || (await this.once(`id:${id}`, () => this.read('id', id)));
    if (!entry) return undefined;
    return entry.key ? { id: entry.id, key: entry.key } : 'erased';
  }

  /**
   * `listener` hears each owner forgotten here (EVERY_OWNER when all were): a projection thread's own
   * DataKeys forgets it at once too, and so does what keeps anything read under the key (the card
   * holders' names).
   */
  onForget(listener: (owner: string) => void): void {
    this.forgetListeners.push(listener);
  }

  /**
   * Drops the owner's key (every key for EVERY_OWNER) from this node's memory: its next use reads
   * the row again. The node that destroys a key calls it through destroy; every other node on the
   * database when told by the destroy's notice (destroyed-keys.ts), and all of them when it may have
   * missed one. A node told nothing (the notice lost with its connection) reads the row within `ttlMs`.
   */
  forget(owner: string): void {
    this.generation++;
    this.reading.clear();
    if (owner === EVERY_OWNER) {
      this.entries.clear();
      this.idOfOwner.clear();
    } else {
      const id = this.idOfOwner.get(owner);
      this.idOfOwner.delete(owner);
      if (id !== undefined) this.entries.delete(id);
    }
    for (const listener of this.forgetListeners) listener(owner);
  }

  /** Whether this node holds the owner's key (or the news it is destroyed) in memory, within its time to live. */
  holds(owner: string): boolean {
    const id = this.idOfOwner.get(owner);
    const entry = id === undefined ? undefined : this.entries.get(id);
    return entry !== undefined && Date.now() - entry.readAtMs < this.options.ttlMs;
  }

  /**
   * Destroys the owner's key (crypto-shredding): every value sealed under it is unopenable from now
   * on, and the owner never gets another. The same transaction notifies DESTROYED_KEYS_CHANNEL with
   * the owner, which Postgres delivers to every listening node at the commit, and not before (each
   * then forgets the key); a repeated call notifies again. Idempotent; true when this call destroyed it.
   */
  async destroy(owner: string): Promise<boolean> {
    const rows = await this.sql.transaction(async (tx) => {
      const destroyed = await tx.query<{ id: string }>(
        `INSERT INTO data_keys (id, owner, destroyed_at) VALUES ($1, $2, now())
         ON CONFLICT (owner) DO UPDATE SET wrapped = NULL, kek_id = NULL, destroyed_at = now() WHERE data_keys.destroyed_at IS NULL
         RETURNING id`,
        [uuidV7(), owner],
      );
      await tx.query('SELECT pg_notify($1, $2)', [DESTROYED_KEYS_CHANNEL, owner]);
      return destroyed;
    });
    this.forget(owner);
    return rows.length > 0;
  }

  /**
   * Re-wraps every key wrapped under another KEK than the current one, `batchSize` keys per
   * transaction (rows locked, others' locked rows skipped): idempotent, and a run cut short is
   * finished by running it again. The log is not touched: values name their data key, not a KEK.
   */
  async rewrap(batchSize = 500): Promise<number> {
    const current = this.keks.current;
    let total = 0;
    for (;;) {
      const count = await this.sql.transaction(async (tx) => {
        const rows = await tx.query<Row>(`SELECT ${COLUMNS} FROM data_keys WHERE kek_id <> $1 ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED`, [
          current.kid,
          batchSize,
        ]);
        if (rows.length === 0) return 0;
        const wrapped = rows.map((row) => sealWith(current.key, current.kid, this.unwrap(row), wrapBinding(row.id, row.owner)));
        await tx.query(`UPDATE data_keys d SET kek_id = $1, wrapped = u.wrapped FROM unnest($2::text[], $3::text[]) AS u(id, wrapped) WHERE d.id = u.id`, [
          current.kid,
          rows.map((r) => r.id),
          wrapped,
        ]);
        return rows.length;
      });
      total += count;
      if (count < batchSize) return total;
    }
  }

  /**
   * Copies every key, destroyed ones too (their owners stay erased), into `target`'s data_keys (made
   * if absent), `batchSize` rows per statement; a row already there is kept. For a copy of the log
   * into another database (`tally events seal`): what is sealed there opens with the same keys.
   */
  async copyTo(target: Sql, batchSize = 1_000): Promise<number> {
    await new DataKeys(target, this.keks).prepare();
    let copied = 0;
    let after = '';
    for (;;) {
      const rows = await this.sql.query<Row & { created_at: string; destroyed_at: string | null }>(
        `SELECT ${COLUMNS}, created_at::text, destroyed_at::text FROM data_keys WHERE id > $1 ORDER BY id LIMIT $2`,
        [after, batchSize],
      );
      if (rows.length === 0) return copied;
      const column = <K extends keyof (typeof rows)[number]>(key: K) => rows.map((r) => r[key]);
      const inserted = await target.query<{ id: string }>(
        `INSERT INTO data_keys (id, owner, kek_id, wrapped, created_at, destroyed_at)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::timestamptz[])
         ON CONFLICT DO NOTHING RETURNING id`,
        [column('id'), column('owner'), column('kek_id'), column('wrapped'), column('created_at'), column('destroyed_at')],
      );
      copied += inserted.length;
      after = rows[rows.length - 1]?.id ?? after;
    }
  }

  /** The ids of `kids` that some data key is still wrapped under (the others can be removed from the keys). */
  async kekIdsNamed(kids: readonly string[]): Promise<string[]> {
    const named: string[] = [];
    for (const kid of kids) {
      const rows = await this.sql.query<{ named: boolean }>('SELECT EXISTS (SELECT 1 FROM data_keys WHERE kek_id = $1) AS named', [kid]);
      if (rows[0]?.named) named.push(kid);
    }
    return named;
  }

  private fresh(id: string): Entry | undefined {
    const entry = this.entries.get(id);
    if (!entry) return undefined;
    this.entries.delete(id);
    if (Date.now() - entry.readAtMs >= this.options.ttlMs) return undefined;
    this.entries.set(id, entry);
    return entry;
  }

  private async once<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const pending = this.reading.get(key) as Promise<T> | undefined;
    if (pending) return pending;
    const started = fn().finally(() => {
      // A forget meanwhile may have let a newer read of the same key start: that one stays.
      if (this.reading.get(key) === started) this.reading.delete(key);
    });
    this.reading.set(key, started as Promise<never>);
    return started;
  }

  private async readOrMake(owner: string): Promise<Entry> {
    const known = await this.read('owner', owner);
    if (known) return known;
    const id = uuidV7();
    const kek = this.keks.current;
    const wrapped = sealWith(kek.key, kek.kid, randomBytes(32), wrapBinding(id, owner));
    await this.sql.query('INSERT INTO data_keys (id, owner, kek_id, wrapped) VALUES ($1, $2, $3, $4) ON CONFLICT (owner) DO NOTHING', [
      id,
      owner,
      kek.kid,
      wrapped,
    ]);
    const made = await this.read('owner', owner);
    if (!made) throw new Error(`the data key of ${owner} vanished`);
    return made;
  }

  private async read(by: 'id' | 'owner', value: string): Promise<Entry | undefined> {
    const generation = this.generation;
    const rows = await this.sql.query<Row>(`SELECT ${COLUMNS} FROM data_keys WHERE ${by === 'id' ? 'id' : 'owner'} = $1`, [value]);
    const row = rows[0];
    if (!row) return undefined;
    const entry: Entry = { id: row.id, owner: row.owner, key: row.wrapped === null ? null : this.unwrap(row), readAtMs: Date.now() };
    return generation === this.generation ? this.remember(entry) : entry;
  }

  private remember(entry: Entry): Entry {
    this.entries.delete(entry.id);
    this.entries.set(entry.id, entry);
    this.idOfOwner.set(entry.owner, entry.id);
    while (this.entries.size > this.options.maxEntries) {
      const [oldest] = this.entries.values();
      if (!oldest) break;
      this.entries.delete(oldest.id);
      if (this.idOfOwner.get(oldest.owner) === oldest.id) this.idOfOwner.delete(oldest.owner);
    }
    return entry;
  }

  private unwrap(row: Row): Buffer {
    const parts = row.wrapped === null ? null : parseSealed(row.wrapped);
    if (!parts || parts.keyId !== row.kek_id) throw new Error(`data key ${row.id} is not wrapped as it should be`);
    const kek = this.keks.find(parts.keyId);
    if (!kek) throw new Error(`data key ${row.id} is wrapped under key-encryption key ${parts.keyId}, which the service keys do not have: put it back`);
    return openWith(kek, parts, wrapBinding(row.id, row.owner));
  }
}
