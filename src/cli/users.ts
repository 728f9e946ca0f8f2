import type { Command } from 'commander';
import type { Config } from '../config';
import { DomainError } from '../platform/decider';
import { CliError, type CliIo, operatorContext, withProjections, withTally } from './context';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * `tally users erase <userId>`: the operator's erasure of a user's personal data, as
 * POST /admin/v1/users/:userId/erase does it (refused while money is on or on its way to or from
 * the user's accounts). Prints the user's id and when it was erased.
 */
export async function eraseUser(config: Config, userId: string, io: CliIo): Promise<{ userId: string; erasedAt: string }> {
  if (!UUID_RE.test(userId)) throw new CliError(`Not a user id (a UUID): ${userId}`);
  return withTally(config, io, async (tally) => {
    try {
      const erased = await withProjections(tally, io, () => tally.erasure.erase(userId.toLowerCase(), 'operator', operatorContext()));
      io.out(`userId: ${erased.userId}`);
      io.out(`erasedAt: ${erased.erasedAt}`);
      return erased;
    } catch (error) {
      // A refusal is the operator's answer (User not found, a balance or pending transactions left), not a crash.
      if (error instanceof DomainError) throw new CliError(error.message);
      throw error;
    }
  });
}

/** `tally users ...`: the operator's commands on a user. */
export function addUserCommands(program: Command, config: () => Config, io: CliIo): void {
  const users = program.command('users').description("act on a user's personal data");
  users
    .command('erase <userId>')
    .description("erase a user's personal data for good (destroys its data key; refused while money is left or pending)")
    .action(async (userId: string) => {
      await eraseUser(config(), userId, io);
    });
}
