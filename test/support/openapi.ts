import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

type Schema = Record<string, unknown>;

/** Every object that lists its properties gets additionalProperties: false unless it says otherwise: undocumented fields fail. */
export function strict(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(strict);
  if (!schema || typeof schema !== 'object') return schema;
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema))
    out[key] = key === 'properties' ? Object.fromEntries(Object.entries(value as Schema).map(([k, v]) => [k, strict(v)])) : strict(value);
  if (out.properties && out.additionalProperties === undefined) out.additionalProperties = false;
  return out;
}

/** The validator the OpenAPI tests check documents and answers with (the app's own email rule is checked by the request tests). */
export function openApiAjv(): Ajv2020 {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addFormat('trimmed-email', (value: string) => value.includes('@'));
  return ajv;
}
