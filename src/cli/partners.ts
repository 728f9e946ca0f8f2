import type { Config } from '../config';
import { requirePartnerId } from './args';
import { type CliIo, operatorContext, withProjections, withTally } from './context';

const SECRET_NOTE = 'The secret is shown only now (only its hash is stored): keep it.\n';

/** `tally partners create <name>`: a partner with its first key pair. */
export async function createPartner(config: Config, name: string, options: { sandbox?: boolean }, io: CliIo) {
  return withTally(config, io, async (tally) => {
    const sandbox = options.sandbox ?? config.sandbox;
    const created = await withProjections(tally, io, () => tally.partners.create(name, { sandbox, ctx: operatorContext() }));
    io.out(`id: ${created.id}`);
    io.out(`name: ${created.name}`);
    io.out(`sandbox: ${sandbox}`);
    io.out(`apiKey: ${created.apiKey}`);
    io.out(`apiSecret: ${created.apiSecret}`);
    io.err?.(SECRET_NOTE);
    return created;
  });
}

/** `tally partners list`: every partner with its id (what `partners keys` commands take). */
export async function listPartners(config: Config, io: CliIo) {
  return withTally(config, io, async (tally) => {
    const partners = await tally.partners.list();
    const rows = [
      ['ID', 'NAME', 'SANDBOX', 'ACTIVE KEYS', 'CREATED'],
      ...partners.map((p) => [p.id, p.name, String(p.sandbox), String(p.activeKeys), p.createdAt]),
    ];
    const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => r[i]?.length ?? 0))) ?? [];
    for (const r of rows) io.out(r.map((cell, i) => (i < r.length - 1 ? cell.padEnd(widths[i] ?? 0) : cell)).join('  '));
    return partners;
  });
}

/** `tally partners keys create <partnerId>`: another key pair, for rotation. */
export async function createPartnerKey(config: Config, partnerId: string, io: CliIo) {
  const id = requirePartnerId(partnerId);
  return withTally(config, io, async (tally) => {
    const created = await withProjections(tally, io, () => tally.partners.createKey(id, operatorContext()));
    io.out(`apiKey: ${created.apiKey}`);
    io.out(`apiSecret: ${created.apiSecret}`);
    io.err?.(SECRET_NOTE);
    return created;
  });
}

/** `tally partners keys revoke <partnerId> <apiKey>`: the key stops authenticating at once. */
export async function revokePartnerKey(config: Config, partnerId: string, apiKey: string, io: CliIo): Promise<void> {
  const id = requirePartnerId(partnerId);
  await withTally(config, io, async (tally) => {
    await withProjections(tally, io, () => tally.partners.revokeKey(id, apiKey, operatorContext()));
    io.out(`Revoked ${apiKey} of partner ${id}`);
  });
}
