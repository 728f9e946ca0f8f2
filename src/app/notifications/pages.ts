import { NOTIFICATION_REFUSALS } from '../../domain/notifications';

/** The cursor is the last sequence of a page, opaque to partners. */
export const encodeCursor = (sequence: number) => Buffer.from(`s:${sequence}`).toString('base64url');

export function decodeCursor(cursor: string): number {
  const match = /^s:(\d{1,18})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!match?.[1]) throw NOTIFICATION_REFUSALS.invalidCursor();
  return Number(match[1]);
}

/**
 * The WHERE of a partner's list, newest first by sequence: the partner's rows, below the cursor's
 * sequence, and each filter given (`add('type = ?', type)`), with numbered parameters.
 */
export class PageFilter {
  readonly params: unknown[];
  readonly where: string[];

  constructor(partnerClause: string, partnerId: string, sequenceColumn: string, cursor: string | undefined) {
    this.params = [partnerId];
    this.where = [partnerClause];
    if (cursor !== undefined) this.add(`${sequenceColumn} < ?`, decodeCursor(cursor));
  }

  add(clause: string, value: unknown): void {
    this.params.push(value);
    this.where.push(clause.replace('?', `$${this.params.length}`));
  }

  /** `WHERE ... ORDER BY <sequence> DESC LIMIT <limit + 1>` (the extra row says whether a next page exists). */
  tail(sequenceColumn: string, limit: number): string {
    this.params.push(limit + 1);
    return `WHERE ${this.where.join(' AND ')} ORDER BY ${sequenceColumn} DESC LIMIT $${this.params.length}`;
  }
}

/** A page of at most `limit` items from `limit + 1` rows, and the cursor of the next page (null on the last). */
export function pageOf<Row, Item>(
  rows: Row[],
  limit: number,
  item: (row: Row) => Item,
  sequenceOf: (item: Item) => number,
): { items: Item[]; nextCursor: string | null } {
  const items = rows.slice(0, limit).map(item);
  const last = items[items.length - 1];
  return { items, nextCursor: rows.length > limit && last !== undefined ? encodeCursor(sequenceOf(last)) : null };
}
