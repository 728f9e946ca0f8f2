import { expect } from 'chai';
import { allRoutes } from '../../src/http/app';
import { buildOpenApi } from '../../src/http/openapi';

type Parameter = { name: string; in: string; required: boolean; schema: { default?: unknown } };
type Operation = { parameters: Parameter[] };

describe('OpenAPI document: parameters', () => {
  const doc = buildOpenApi(allRoutes(), 'http://localhost');
  const operations = Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({ key: `${method.toUpperCase()} ${path}`, op: op as Operation })),
  );

  it('marks query parameters with a default, or not in the schema’s required list, as not required', () => {
    const wrong: string[] = [];
    for (const { key, op } of operations) {
      const route = allRoutes().find((r) => `${r.method.toUpperCase()} ${r.path}` === key);
      const required = ((route?.query as { required?: string[] } | undefined)?.required ?? []) as string[];
      for (const p of op.parameters.filter((q) => q.in === 'query')) {
        const expected = required.includes(p.name) && p.schema.default === undefined;
        if (p.required !== expected) wrong.push(`${key} ${p.name}: required ${p.required}`);
      }
    }
    expect(wrong).to.deep.equal([]);
  });

  it('documents page and limit as optional and the account id of GET /api/v1/transactions as required', () => {
    const params = (path: string) => (doc.paths[path] as Record<string, Operation>).get?.parameters ?? [];
    for (const path of ['/api/v1/partner/users', '/api/v1/transactions', '/api/v1/user/balance']) {
      for (const name of ['page', 'limit'])
        expect(
          params(path).find((p) => p.name === name),
          `${path} ${name}`,
        ).to.include({ required: false });
    }
    expect(params('/api/v1/transactions').find((p) => p.name === 'accountId')).to.include({ required: true });
    expect(params('/api/v1/user/profile').find((p) => p.name === 'userId')).to.include({ required: true });
    expect(params('/api/v1/partner/users/{userId}').find((p) => p.name === 'userId')).to.include({ in: 'path', required: true });
  });
});
