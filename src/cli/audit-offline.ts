import { createReadStream, existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Checkpoint } from '../platform/audit/checkpoint';
import type { PublicJwk } from '../platform/audit/signing';
import { type ExportedEvent, type ExportVerdict, ExportVerifier } from '../platform/audit/verify-export';
import { CliError, type CliIo, EXIT } from './context';

export interface OfflineOptions {
  checkpoint: string;
  events: string;
  key?: string;
}

/**
 * `tally audit verify --checkpoint <file> --events <ndjson> [--key <jwk file>]`: offline, with no
 * database (the configuration's store is never opened on this path). The checkpoint file is what
 * GET /audit/v1/checkpoints/{id} answered (the envelope or its `data`); the events are an export
 * (`tally events export`, GET /audit/v1/events) from the start of the log; the key is a JWK or
 * what GET /audit/v1/keys answered (the key the checkpoint names is taken). Without --key, the
 * `keys.json` beside the checkpoint file: a key must come from the auditor, never from the export.
 * Exit 3 when the signature or the log does not hold, naming the streams.
 */
export async function verifyOffline(options: OfflineOptions, io: CliIo): Promise<ExportVerdict> {
  const checkpoint = readCheckpoint(options.checkpoint);
  const key = readKey(options.key ?? join(dirname(options.checkpoint), 'keys.json'), checkpoint.kid, options.key === undefined);
  const verifier = new ExportVerifier(checkpoint, key);
  const lines = createInterface({ input: createReadStream(options.events, 'utf8'), crlfDelay: Number.POSITIVE_INFINITY });
  let count = 0;
  for await (const line of lines) {
    if (io.signal?.aborted) throw new CliError('Verification interrupted');
    if (!line.trim()) continue;
    count++;
    verifier.add(parseLine(line, count));
  }
  const verdict = verifier.finish();
  report(verdict, checkpoint, count, io);
  if (!verdict.ok) throw new CliError('', EXIT.auditFailed);
  return verdict;
}

function report(verdict: ExportVerdict, checkpoint: Checkpoint, count: number, io: CliIo): void {
  io.out(`Checkpoint ${checkpoint.id} at position ${checkpoint.position}: ${checkpoint.streams} streams, root ${checkpoint.root}`);
  io.out(
    verdict.signature === 'holds'
      ? `OK   signature: Ed25519 by key ${checkpoint.kid}`
      : `FAIL signature: the checkpoint is not signed by the key given (it names key ${checkpoint.kid}): refused`,
  );
  io.out(
    `${verdict.root === checkpoint.root ? 'OK  ' : 'FAIL'} root: the export's ${verdict.streams} stream heads give ${verdict.root} (${count} events read)`,
  );
  for (const f of verdict.findings) io.out(`FAIL stream ${f.stream}: ${f.reason}`);
  if (verdict.unnamed) io.out(`FAIL ${verdict.unnamed}`);
  io.out(
    verdict.ok
      ? 'Verified: the export reproduces every stream head the checkpoint signed.'
      : `Verification FAILED${verdict.findings.length ? `: ${verdict.findings.map((f) => f.stream).join(', ')}` : ''}.`,
  );
}

function readJson(path: string, what: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new CliError(`Cannot read the ${what} ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

function readCheckpoint(path: string): Checkpoint {
  const json = readJson(path, 'checkpoint') as { data?: Checkpoint } & Partial<Checkpoint>;
  const checkpoint = (json.data ?? json) as Checkpoint;
  for (const field of ['id', 'position', 'root', 'createdAt', 'kid', 'signature'] as const) {
    if (typeof checkpoint[field] !== 'string') throw new CliError(`${path} is not a checkpoint: ${field} is missing`);
  }
  if (!Number.isSafeInteger(checkpoint.streams)) throw new CliError(`${path} is not a checkpoint: streams is missing`);
  return checkpoint;
}

function readKey(path: string, kid: string, besideCheckpoint: boolean): PublicJwk {
  if (besideCheckpoint && !existsSync(path)) {
    throw new CliError(`No key: pass --key <jwk file> (GET /audit/v1/keys, kept by the auditor), or put it in ${path}`);
  }
  const json = readJson(path, 'key') as { keys?: PublicJwk[] } & Partial<PublicJwk>;
  const keys = json.keys ?? [json as PublicJwk];
  // A checkpoint naming a key the auditor does not hold is checked against theirs and refused.
  return keys.find((k) => k.kid === kid) ?? (keys[0] as PublicJwk);
}

function parseLine(line: string, n: number): ExportedEvent {
  try {
    return JSON.parse(line) as ExportedEvent;
  } catch {
    throw new CliError(`The events file is not NDJSON: line ${n} is not JSON`);
  }
}
