import { allRoutes } from '../../src/http/app';
import { notificationWebhooks } from '../../src/http/notifications';
import { buildOpenApi } from '../../src/http/openapi';
import { answers } from './answers';

type Doc = { paths: Record<string, Record<string, { responses: Record<string, { 'x-error-codes'?: string[] }> }>> };

/**
 * After the whole suite: every error code a test was answered is documented for that operation and
 * status (the reference's `x-error-codes`), and every refusal some route documents (its `refuses`)
 * was answered to some test at least once. Problems, one a line; none is an empty list.
 */
export function errorCodeProblems(): string[] {
  const routes = allRoutes();
  const doc = buildOpenApi(routes, 'http://localhost:3000', notificationWebhooks) as unknown as Doc;
  const templates = Object.keys(doc.paths)
    .map((path) => ({
      path,
      re: new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}/?$`, 'i'),
      literal: !path.includes('{'),
    }))
    .sort((a, b) => Number(b.literal) - Number(a.literal));
  const problems = new Set<string>();
  const reached = new Set<string>();
  for (const a of answers()) {
    if (typeof a.code !== 'string') continue;
    reached.add(a.code);
    const method = a.method.toLowerCase() === 'head' ? 'get' : a.method.toLowerCase();
    const op = templates.find((t) => t.re.test(a.path) && doc.paths[t.path]?.[method]);
    // Unknown paths and methods (404, 405) belong to no operation.
    if (!op) continue;
    const responses = doc.paths[op.path]?.[method]?.responses;
    // A status the operation does not list is its `default` answer (500, a bug).
    const documented = (responses?.[String(a.status)] ?? responses?.default)?.['x-error-codes'];
    if (!documented?.includes(a.code))
      problems.add(`${a.method} ${op.path} ${a.status} answered code ${a.code}, documented ${documented?.join(', ') ?? 'none'}`);
  }
  for (const r of routes)
    for (const refusal of r.refuses ?? [])
      if (!reached.has(refusal.code)) problems.add(`${r.method.toUpperCase()} ${r.path} documents ${refusal.code}, which no test was answered`);
  return [...problems].sort();
}
