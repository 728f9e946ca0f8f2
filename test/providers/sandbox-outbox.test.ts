import { expect } from 'chai';
import { PgliteSql } from '../../src/eventstore/sql';
import { SandboxOutbox } from '../../src/providers/identity/email/sandbox';

describe('sandbox email outbox', () => {
  let sql: PgliteSql;
  let outbox: SandboxOutbox;

  before(async () => {
    sql = await PgliteSql.open();
    outbox = new SandboxOutbox({ sql });
    await outbox.prepare();
  });
  after(async () => {
    await sql.close();
  });

  it('prepares its table idempotently', async () => {
    await outbox.prepare();
    await new SandboxOutbox({ sql }).prepare();
    const rows = await sql.query<{ n: string }>(`SELECT count(*)::text AS n FROM information_schema.tables WHERE table_name = 'sandbox_emails'`);
    expect(rows[0]?.n).to.equal('1');
  });

  it('stores a sent message and lists it with its code', async () => {
    await outbox.send({ to: 'ada@example.com', subject: 'Your login code', text: 'Your code is 123456', tags: { code: '123456' } });
    const list = await outbox.list('ada@example.com');
    expect(list).to.have.length(1);
    const [mail] = list;
    expect(mail).to.include({ to: 'ada@example.com', subject: 'Your login code', text: 'Your code is 123456', code: '123456' });
    expect(mail!.id).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(mail!.createdAt).to.match(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(Math.abs(Date.parse(mail!.createdAt) - Date.now())).to.be.lessThan(60_000);
  });

  it('answers code null for a message without a code tag', async () => {
    await outbox.send({ to: 'nocode@example.com', subject: 'Welcome', text: 'Hello' });
    await outbox.send({ to: 'nocode@example.com', subject: 'Other', text: 'Hi', tags: { kind: 'notice' } });
    const list = await outbox.list('nocode@example.com');
    expect(list.map((m) => m.code)).to.deep.equal([null, null]);
  });

  it('matches addresses case-insensitively and stores them lower-cased', async () => {
    await outbox.send({ to: '  Grace.Hopper@Example.COM ', subject: 'Code', text: 'x', tags: { code: '000111' } });
    const list = await outbox.list('GRACE.HOPPER@example.com');
    expect(list).to.have.length(1);
    expect(list[0]!.to).to.equal('grace.hopper@example.com');
  });

  it('lists newest first, even for messages sent back to back', async () => {
    for (let i = 1; i <= 5; i += 1) await outbox.send({ to: 'order@example.com', subject: `Code ${i}`, text: `code ${i}`, tags: { code: `00000${i}` } });
    const list = await outbox.list('order@example.com');
    expect(list.map((m) => m.code)).to.deep.equal(['000005', '000004', '000003', '000002', '000001']);
  });

  it('honours the limit and keeps it within 1..200', async () => {
    expect(await outbox.list('order@example.com', 2)).to.have.length(2);
    expect(await outbox.list('order@example.com', 0)).to.have.length(1);
    expect(await outbox.list('order@example.com', 10_000)).to.have.length(5);
  });

  it('shows nothing of other addresses', async () => {
    expect(await outbox.list('nobody@example.com')).to.deep.equal([]);
    const list = await outbox.list('ada@example.com');
    expect(list.every((m) => m.to === 'ada@example.com')).to.equal(true);
  });

  it('refuses a message without a recipient', async () => {
    let failure: unknown = null;
    await outbox.send({ to: '  ', subject: 's', text: 't' }).catch((error: unknown) => {
      failure = error;
    });
    expect(failure).to.be.instanceOf(Error);
  });
});
