/**
 * RFC 8785 (JSON Canonicalization Scheme) for the values checkpoints hold: strings, integers,
 * booleans, null, arrays and objects. Object members are sorted by their keys' UTF-16 code units and
 * primitives are written as ECMAScript's JSON.stringify writes them, which is what RFC 8785 asks.
 * Unlike the hash chain's lenient canonicalJson (src/eventstore/hash.ts, frozen as the chain's
 * definition), this one refuses what RFC 8785 cannot represent, so an auditor's own JCS library
 * always writes the same bytes: non-finite or non-integer numbers, lone surrogates, undefined.
 */
export function jcs(value: unknown): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isSafeInteger(value)) throw new TypeError(`canonical JSON: ${value} is not a safe integer`);
      return String(value);
    case 'string':
      if (LONE_SURROGATE.test(value)) throw new TypeError('canonical JSON: a string holds a lone surrogate');
      return JSON.stringify(value);
    case 'object':
      return Array.isArray(value) ? `[${value.map(jcs).join(',')}]` : objectText(value as Record<string, unknown>);
    default:
      throw new TypeError(`canonical JSON: a ${typeof value} has no JSON form`);
  }
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function objectText(object: Record<string, unknown>): string {
  // Array.prototype.sort without a comparator orders by UTF-16 code units, as RFC 8785 3.2.3 says.
  const members = Object.keys(object)
    .sort()
    .map((key) => `${jcs(key)}:${jcs(object[key])}`);
  return `{${members.join(',')}}`;
}
