import type { Logger } from 'pino';
import type { Sql } from '../../eventstore/sql';

const BLOCK = 200;

/**
 * Transaction numbers (the `id` lists order by) come from a sequence a block at a time: unique, not
 * gap-free (a restart skips the rest of a block). The next block is fetched when half of the current
 * one is used, so requests rarely wait.
 */
export class TransactionIds {
  private readonly block: number[] = [];
  private loading: Promise<void> | undefined;

  constructor(
    private readonly sql: Sql,
    private readonly log: Logger,
  ) {}

  async next(): Promise<number> {
    while (this.block.length === 0) await this.load();
    return this.take() as number;
  }

  /** The next id when the current block has one, without waiting (`next` fetches a block otherwise). */
  take(): number | undefined {
    const id = this.block.shift();
    if (id === undefined) return undefined;
    if (this.block.length < BLOCK / 2) {
      // Ahead of need: a failure here only means the next caller that finds the block empty fetches again.
      this.load().catch((error) => this.log.warn({ err: error }, 'prefetching transaction ids failed'));
    }
    return id;
  }

  private load(): Promise<void> {
    this.loading ??= this.sql
      .query<{ id: string }>(`SELECT nextval('transaction_id_seq')::text AS id FROM generate_series(1, ${BLOCK})`)
      .then((rows) => {
        this.block.push(...rows.map((r) => Number(r.id)));
        this.block.sort((a, b) => a - b);
      })
      .finally(() => {
        this.loading = undefined;
      });
    return this.loading;
  }
}
