type Node = { description?: string; properties?: Record<string, Node>; items?: Node; anyOf?: Node[]; allOf?: Node[]; oneOf?: Node[]; $ref?: string };
export type Doc = {
  paths: Record<string, Record<string, { parameters?: Array<{ name: string; in: string; description?: string; schema?: Node }>; description?: string }>>;
  components: { schemas: Record<string, Node> };
};

/** Every field of a schema that has no description (`where.field`), walking into objects, arrays and unions. */
export function undescribedFields(doc: Doc): string[] {
  const missing: string[] = [];
  const walk = (node: Node | undefined, where: string) => {
    if (!node || node.$ref) return;
    for (const branch of [...(node.anyOf ?? []), ...(node.allOf ?? []), ...(node.oneOf ?? [])]) walk(branch, where);
    if (node.items) walk(node.items, `${where}[]`);
    for (const [name, sub] of Object.entries(node.properties ?? {})) {
      // A field that is a named schema is described where that schema is, or by its own description here.
      const described = typeof sub.description === 'string' && sub.description.trim() !== '';
      const named = typeof sub.$ref === 'string' || (sub.items?.$ref !== undefined && sub.description !== undefined);
      if (!described && !named) missing.push(`${where}.${name}`);
      walk(sub, `${where}.${name}`);
    }
  };
  for (const [name, schema] of Object.entries(doc.components.schemas)) walk(schema, name);
  for (const [path, ops] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(ops))
      for (const p of op.parameters ?? []) if (!p.description?.trim()) missing.push(`${method.toUpperCase()} ${path} ${p.in} ${p.name}`);
  return missing;
}
