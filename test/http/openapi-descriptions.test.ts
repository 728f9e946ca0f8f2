import { expect } from 'chai';
import { allRoutes } from '../../src/http/app';
import { notificationWebhooks } from '../../src/http/notifications';
import { buildOpenApi } from '../../src/http/openapi';
import { type Doc, undescribedFields } from '../support/openapi-descriptions';

describe('OpenAPI document: a description for every field and parameter', () => {
  it('describes every field of every named schema (the notifications’ too), and every parameter', () => {
    const doc = buildOpenApi(allRoutes(), 'http://localhost:3000', notificationWebhooks) as unknown as Doc;
    const missing = undescribedFields(doc);
    expect(missing, `${missing.length} undescribed (npx tsx test/support/undescribed-cli.ts lists them)`).to.deep.equal([]);
    // Not vacuous: the walk sees the fields (a document whose fields lost their descriptions fails).
    const bare = JSON.parse(JSON.stringify(doc, (key, value) => (key === 'description' ? undefined : value))) as Doc;
    expect(undescribedFields(bare).length).to.be.greaterThan(500);
  });
});
