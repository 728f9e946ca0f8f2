import { expect } from 'chai';
import { allRoutes } from '../../src/http/app';
import { buildOpenApi } from '../../src/http/openapi';
import { notificationWebhooks } from '../../src/http/notifications/webhooks';
import { openApiAjv, strict } from '../support/openapi';

type Schema = Record<string, unknown>;
type MediaType = { schema?: Schema; example?: unknown; examples?: Record<string, { value: unknown; summary?: string; 'x-message'?: string }> };
type Parameter = { name: string; in: string; schema: Schema; example?: unknown };
type Operation = {
  tags: string[];
  parameters: Parameter[];
  requestBody?: { content: Record<string, MediaType> };
  responses: Record<string, { content?: Record<string, MediaType> }>;
};

describe('OpenAPI document: examples and names', () => {
  const doc = buildOpenApi(allRoutes(), 'http://localhost:3000', notificationWebhooks) as unknown as {
    paths: Record<string, Record<string, Operation>>;
    components: { schemas: Record<string, Schema & { examples?: unknown[] }>; securitySchemes: Record<string, { description?: string }> };
    tags: Array<{ name: string; description: string }>;
  };
  const operations = Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({ key: `${method.toUpperCase()} ${path}`, op })),
  );
  const ajv = openApiAjv();
  const components = strict(doc.components);
  /** The example's schema errors, undocumented fields included; empty when it conforms. */
  const problems = (schema: Schema | undefined, value: unknown): string => {
    const validate = ajv.compile({ ...(strict(schema) as Schema), components });
    return validate(value) ? '' : ajv.errorsText(validate.errors);
  };

  it('gives every operation a request example, a success example and an example of each error it answers', () => {
    const missing: string[] = [];
    for (const { key, op } of operations) {
      if (op.requestBody && op.requestBody.content['application/json']?.example === undefined) missing.push(`${key}: request`);
      for (const [status, res] of Object.entries(op.responses)) {
        const json = res.content?.['application/json'];
        if (!json) continue;
        const examples = json.example !== undefined ? 1 : Object.keys(json.examples ?? {}).length;
        if (examples === 0) missing.push(`${key}: ${status}`);
      }
    }
    expect(missing).to.deep.equal([]);
  });

  it('writes every error message as the answer carries it: the Error schema, with its template', () => {
    const messages = operations.flatMap(({ op }) =>
      Object.entries(op.responses)
        .filter(([status]) => Number(status) >= 400)
        .flatMap(([, res]) => Object.values(res.content?.['application/json']?.examples ?? {})),
    );
    expect(messages.length).to.be.greaterThan(400);
    for (const example of messages) {
      expect(example.value).to.include({ success: false, error: example.summary });
      expect(example['x-message'], example.summary).to.be.a('string');
    }
    const transfer = doc.paths['/api/v1/transactions/transfer']?.post?.responses['400']?.content?.['application/json']?.examples ?? {};
    expect(Object.values(transfer).map((e) => e['x-message'])).to.include.members([
      'Insufficient balance in account <accountId>',
      'One or both accounts do not exist',
    ]);
  });

  it('has every example conform to its schema, with no field the schema does not document', () => {
    const wrong: string[] = [];
    const check = (where: string, schema: Schema | undefined, value: unknown) => {
      const errors = problems(schema, value);
      if (errors) wrong.push(`${where}: ${errors}`);
    };
    for (const { key, op } of operations) {
      for (const p of op.parameters) if (p.example !== undefined) check(`${key} parameter ${p.name}`, p.schema, p.example);
      const body = op.requestBody?.content['application/json'];
      if (body?.example !== undefined) check(`${key} request`, body.schema, body.example);
      for (const [status, res] of Object.entries(op.responses)) {
        const json = res.content?.['application/json'];
        if (json?.example !== undefined) check(`${key} ${status}`, json.schema, json.example);
        for (const [name, example] of Object.entries(json?.examples ?? {})) check(`${key} ${status} ${name}`, json?.schema, example.value);
      }
    }
    for (const [name, schema] of Object.entries(doc.components.schemas))
      for (const example of schema.examples ?? []) check(`components.schemas.${name}`, { $ref: `#/components/schemas/${name}` }, example);
    expect(wrong, wrong.slice(0, 30).join('\n')).to.deep.equal([]);
  });

  it('names every request and response body in components.schemas (no anonymous shape for SDK generators)', () => {
    const anonymous: string[] = [];
    for (const { key, op } of operations) {
      const bodies: Array<[string, MediaType | undefined]> = [
        ['request', op.requestBody?.content['application/json']],
        ...Object.entries(op.responses).map(([status, res]): [string, MediaType | undefined] => [status, res.content?.['application/json']]),
      ];
      for (const [where, media] of bodies) if (media?.schema && typeof media.schema.$ref !== 'string') anonymous.push(`${key} ${where}`);
    }
    // The one exception: /readyz's 503 is its own shape, an Error with the readiness figures.
    expect(anonymous).to.deep.equal(['GET /readyz 503']);
    expect(doc.components.schemas).to.include.keys(
      'RegisterUserRequest',
      'TransferRequest',
      'PayoutRequest',
      'UserResponse',
      'ProfileResponse',
      'CardStatusResponse',
    );
  });

  it('describes every credential scheme and every area (tag) that an operation uses', () => {
    for (const [name, scheme] of Object.entries(doc.components.securitySchemes)) expect(scheme.description, name).to.be.a('string').and.not.equal('');
    const used = new Set(operations.flatMap(({ op }) => op.tags));
    expect(doc.tags.map((t) => t.name)).to.have.members([...used]);
    for (const tag of doc.tags) expect(tag.description, tag.name).to.not.equal('');
  });
});
