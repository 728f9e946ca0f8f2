import { expect } from 'chai';
import { allRoutes } from '../../src/http/app';
import { buildOpenApi } from '../../src/http/openapi';
import { OPERATION_NAMES } from '../../src/http/operation-ids';

const OPERATION_IDS = Object.fromEntries(Object.entries(OPERATION_NAMES).map(([key, [id]]) => [key, id]));

describe('OpenAPI: operation ids an SDK generator can use', () => {
  const keys = allRoutes().map((r) => `${r.method.toUpperCase()} ${r.path}`);

  it('gives every route one short camelCase id, no two alike, and keeps none for a route that is gone', () => {
    expect(keys.filter((k) => OPERATION_IDS[k] === undefined)).to.deep.equal([]);
    expect(Object.keys(OPERATION_IDS).filter((k) => !keys.includes(k))).to.deep.equal([]);
    const ids = Object.values(OPERATION_IDS);
    expect(new Set(ids).size).to.equal(ids.length);
    for (const id of ids) expect(id).to.match(/^[a-z][A-Za-z0-9]{2,40}$/);
    // Titles are the sidebar's entries: short, no sentence.
    for (const [, title] of Object.values(OPERATION_NAMES)) {
      expect(title.length, title).to.be.within(4, 40);
      expect(title, title).to.not.match(/\.$/);
    }
  });

  it('puts them in the document, and groups the partner API apart from sandbox, callbacks, operator and auditor routes', () => {
    const doc = buildOpenApi(allRoutes(), 'http://localhost:3000') as unknown as {
      paths: Record<string, Record<string, { operationId: string }>>;
      'x-tagGroups': Array<{ name: string; tags: string[] }>;
      tags: Array<{ name: string }>;
    };
    // A tag in no group would vanish from the navigation of renderers that honour groups.
    expect(doc['x-tagGroups'].flatMap((g) => g.tags).sort()).to.deep.equal(doc.tags.map((t) => t.name).sort());
    expect(doc.paths['/api/v1/transactions/transfer']?.post?.operationId).to.equal('createTransfer');
    const groups = doc['x-tagGroups'];
    expect(groups.map((g) => g.name)).to.deep.equal(['Partner API', 'Testing and integration', 'Operating Tally', 'Auditing']);
    expect(groups[0]?.tags).to.not.include.members(['Sandbox', 'Operator', 'Provider callbacks', 'Operations', 'Audit']);
  });
});
