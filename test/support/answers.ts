import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import type supertest from 'supertest';

/** An error answer some test received: what the request asked and the code it got. */
interface Answered {
  method: string;
  path: string;
  status: number;
  code: unknown;
}

const answered: Answered[] = [];

/**
 * Records every error answer the agent receives (method, path, status, code), for the check at the
 * end of a whole run (errorCodesAnswered): each code answered is documented for its operation, and
 * each refusal a route documents was answered by some test.
 */
export function recordingAnswers(agent: supertest.Agent): supertest.Agent {
  return agent.use((request: unknown) => {
    const req = request as unknown as {
      method: string;
      url: string;
      on(event: 'response', listener: (res: { status: number; body?: { code?: unknown } }) => void): void;
    };
    req.on('response', (res: { status: number; body?: { code?: unknown } }) => {
      if (res.status >= 400) answered.push({ method: req.method, path: new URL(req.url).pathname, status: res.status, code: res.body?.code });
    });
  });
}

export const answers = (): readonly Answered[] => answered;

/** Whether the run loaded every test file under test/ (the whole suite, as npm test runs it). */
export function wholeSuiteLoaded(loaded: Set<string>): boolean {
  const root = join(__dirname, '..');
  const all = (readdirSync(root, { recursive: true }) as string[]).filter((f) => f.endsWith('.test.ts')).map((f) => join(root, f));
  return all.length > 0 && all.every((f) => loaded.has(f) || loaded.has(relative(process.cwd(), f)));
}
