/**
 * The architecture check: the layering of src/ (test/architecture/layout.ts) and a few code rules,
 * read with the TypeScript parser rather than regexes over code, so comments, strings and type-only
 * imports are told apart. Why: the tree is being moved into layers and capabilities; this lists
 * what breaks them, one stable line per violation, and test/architecture.test.ts holds a shrinking
 * baseline of those lines. Pure functions apart from reading the files under the root given.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, posix, sep } from 'node:path';
import * as ts from 'typescript';

export interface LayerSpec {
  name: string;
  /** Lower ranks are imported by higher ones, never the other way; equal ranks not at all. */
  rank: number;
  /** `src/x/**`: the folder and all under it; anything else: that one file. */
  paths: string[];
  /** Its files may belong to a capability: the first folder under the layer's folder. */
  capabilities?: boolean;
  /** May import its own files only (rule `platform`). */
  selfContained?: boolean;
  /** May import any file, a capability's internals included (composition). */
  importsAnything?: boolean;
}

export interface Layout {
  srcDir: string;
  layers: LayerSpec[];
  capabilities: string[];
  maxFunctionLines: number;
  /** Only files under this folder may throw DomainError. */
  domainErrorFolder: string;
}

/** `key` is what the baseline holds: without line numbers or counts, so moving code does not churn it. */
export interface Violation {
  rule: string;
  key: string;
  message: string;
}

export interface Placement {
  layer?: LayerSpec;
  capability?: string;
  /** `src/app/ledger` for a file of app/ledger. */
  capabilityFolder?: string;
}

interface FunctionSpan {
  name: string;
  line: number;
  lines: number;
}

/** What one file says, gathered in a single walk of its syntax tree. */
export interface FileFacts {
  file: string;
  /** Files of src it imports, resolved; packages, `node:` and unresolved specifiers left out. */
  imports: string[];
  /** Text of each string literal and each literal part of a template. */
  literals: string[];
  createdTables: string[];
  functions: FunctionSpan[];
  domainErrorThrows: number;
}

export type ImportGraph = ReadonlyMap<string, readonly string[]>;

const FUNCTION_KINDS = new Set([
  ts.SyntaxKind.FunctionDeclaration,
  ts.SyntaxKind.MethodDeclaration,
  ts.SyntaxKind.ArrowFunction,
  ts.SyntaxKind.FunctionExpression,
  ts.SyntaxKind.Constructor,
  ts.SyntaxKind.GetAccessor,
  ts.SyntaxKind.SetAccessor,
]);

// The name must follow literally: tables whose names are built at run time (`${t.rm_users}`,
// `${this.kind.table}`) are not seen; a substitution of a top-level `const X = 'name'` of the same
// file is read as that name.
const CREATE_TABLE = /\bCREATE\s+(?:UNLOGGED\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(?!IF\s)([A-Za-z_][A-Za-z0-9_]*)/gi;
const UNKNOWN_SUBSTITUTION = '\u0000';

/** Every violation of the layout under rootDir, sorted by key. */
export function checkArchitecture(rootDir: string, layout: Layout): Violation[] {
  const facts = readAllFacts(rootDir, layout.srcDir);
  const place = (file: string) => placeFile(file, layout);
  const violations = [
    ...unplacedViolations(facts, place),
    ...importViolations(facts, place),
    ...cycleViolations(importGraph(facts)),
    ...tableViolations(facts, place),
    ...longFunctionViolations(facts, layout.maxFunctionLines),
    ...domainErrorViolations(facts, layout.domainErrorFolder),
  ];
  return violations.sort((a, b) => compareText(a.key, b.key));
}

export function readAllFacts(rootDir: string, srcDir: string): FileFacts[] {
  const files = listSourceFiles(rootDir, srcDir);
  const known = new Set(files);
  return files.map((file) => fileFacts(file, readFileSync(join(rootDir, file), 'utf8'), known));
}

export function importGraph(facts: readonly FileFacts[]): ImportGraph {
  return new Map(facts.map((f) => [f.file, f.imports]));
}

/** The shortest chain of imports from one file to another, both ends included; undefined if none. */
export function findImportPath(graph: ImportGraph, from: string, to: string): string[] | undefined {
  const cameFrom = new Map<string, string | undefined>([[from, undefined]]);
  const queue = [from];
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
    if (file === to) return chainBack(cameFrom, to);
    for (const next of graph.get(file) ?? []) {
      if (cameFrom.has(next)) continue;
      cameFrom.set(next, file);
      queue.push(next);
    }
  }
  return undefined;
}

function chainBack(cameFrom: ReadonlyMap<string, string | undefined>, end: string): string[] {
  const chain: string[] = [];
  for (let file: string | undefined = end; file !== undefined; file = cameFrom.get(file)) chain.unshift(file);
  return chain;
}

export function placeFile(file: string, layout: Layout): Placement {
  for (const layer of layout.layers) {
    for (const pattern of layer.paths) {
      const folder = pattern.endsWith('/**') ? pattern.slice(0, -3) : undefined;
      if (folder === undefined ? file === pattern : file.startsWith(`${folder}/`)) return { layer, ...capabilityOf(file, folder, layer, layout) };
    }
  }
  return {};
}

function capabilityOf(file: string, folder: string | undefined, layer: LayerSpec, layout: Layout): Placement {
  if (folder === undefined || !layer.capabilities) return {};
  const rest = file.slice(folder.length + 1);
  const name = rest.includes('/') ? rest.slice(0, rest.indexOf('/')) : undefined;
  return name !== undefined && layout.capabilities.includes(name) ? { capability: name, capabilityFolder: `${folder}/${name}` } : {};
}

function listSourceFiles(rootDir: string, srcDir: string): string[] {
  return readdirSync(join(rootDir, srcDir), { recursive: true, encoding: 'utf8' })
    .map((entry) => posix.join(srcDir, entry.split(sep).join('/')))
    .filter((file) => file.endsWith('.ts'))
    .sort(compareText);
}

export function fileFacts(file: string, text: string, known: ReadonlySet<string>): FileFacts {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const constants = stringConstants(source);
  const facts: FileFacts = { file, imports: [], literals: [], createdTables: [], functions: [], domainErrorThrows: 0 };
  const visit = (node: ts.Node): void => {
    const specifier = moduleSpecifier(node);
    const target = specifier === undefined ? undefined : resolveImport(file, specifier, known);
    if (target !== undefined && !facts.imports.includes(target)) facts.imports.push(target);
    const whole = literalText(node, constants);
    if (whole !== undefined) facts.createdTables.push(...tablesCreatedIn(whole));
    facts.createdTables.push(...tablesDeclaredIn(node));
    if (ts.isStringLiteral(node) || ts.isTemplateLiteralToken(node)) facts.literals.push(node.text);
    if (FUNCTION_KINDS.has(node.kind)) addFunction(facts, node as ts.FunctionLikeDeclaration, source);
    if (ts.isThrowStatement(node) && throwsDomainError(node.expression)) facts.domainErrorThrows++;
    ts.forEachChild(node, visit);
  };
  visit(source);
  return facts;
}

function moduleSpecifier(node: ts.Node): string | undefined {
  if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
    return node.moduleSpecifier.text;
  }
  if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) return stringText(node.moduleReference.expression);
  if (ts.isCallExpression(node) && isImportOrRequire(node.expression) && node.arguments.length === 1) return stringText(node.arguments[0]);
  if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) return stringText(node.argument.literal);
  return undefined;
}

function isImportOrRequire(callee: ts.Expression): boolean {
  return callee.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(callee) && callee.text === 'require');
}

function stringText(node: ts.Node | undefined): string | undefined {
  return node !== undefined && ts.isStringLiteralLike(node) ? node.text : undefined;
}

/** `./x` or `../x` to `x.ts` or `x/index.ts` when that file is in src (a `.js` ending read as `.ts`). */
export function resolveImport(fromFile: string, specifier: string, known: ReadonlySet<string>): string | undefined {
  if (!specifier.startsWith('./') && !specifier.startsWith('../')) return undefined;
  const stem = posix.normalize(posix.join(posix.dirname(fromFile), specifier)).replace(/\.js$/, '');
  return [stem, `${stem}.ts`, `${stem}/index.ts`].find((candidate) => candidate.endsWith('.ts') && known.has(candidate));
}

/** Top-level `const NAME = 'text'` of a file, to read `${NAME}` in its templates. */
function stringConstants(source: ts.SourceFile): Map<string, string> {
  const constants = new Map<string, string>();
  for (const statement of source.statements) {
    if (!ts.isVariableStatement(statement) || !(statement.declarationList.flags & ts.NodeFlags.Const)) continue;
    for (const declaration of statement.declarationList.declarations) {
      const value = stringText(declaration.initializer);
      if (ts.isIdentifier(declaration.name) && value !== undefined) constants.set(declaration.name.text, value);
    }
  }
  return constants;
}

/** The whole text of a string or template literal, each substitution read if it is a known constant. */
function literalText(node: ts.Node, constants: ReadonlyMap<string, string>): string | undefined {
  if (ts.isStringLiteralLike(node)) return node.text;
  if (!ts.isTemplateExpression(node)) return undefined;
  const parts = node.templateSpans.map((span) => {
    const known = ts.isIdentifier(span.expression) ? constants.get(span.expression.text) : undefined;
    return (known ?? UNKNOWN_SUBSTITUTION) + span.literal.text;
  });
  return node.head.text + parts.join('');
}

/**
 * Read models declared to the row projections: the keys of a `tables: { rm_x: {...} }` object (their
 * CREATE TABLE is made at run time from the declaration, so no literal names them).
 */
function tablesDeclaredIn(node: ts.Node): string[] {
  if (!ts.isPropertyAssignment(node) || !ts.isIdentifier(node.name) || node.name.text !== 'tables') return [];
  if (!ts.isObjectLiteralExpression(node.initializer)) return [];
  return node.initializer.properties.flatMap((p) =>
    p.name !== undefined && (ts.isIdentifier(p.name) || ts.isStringLiteral(p.name)) ? [p.name.text.toLowerCase()] : [],
  );
}

function tablesCreatedIn(text: string): string[] {
  return [...text.matchAll(CREATE_TABLE)].map((match) => (match[1] ?? '').toLowerCase());
}

function throwsDomainError(thrown: ts.Expression): boolean {
  const callee = ts.isNewExpression(thrown) || ts.isCallExpression(thrown) ? thrown.expression : thrown;
  return ts.isIdentifier(callee) && callee.text === 'DomainError';
}

function addFunction(facts: FileFacts, node: ts.FunctionLikeDeclaration, source: ts.SourceFile): void {
  if (node.body === undefined) return;
  const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
  const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
  facts.functions.push({ name: functionName(node), line: first + 1, lines: last - first + 1 });
}

/** `Class.member` for a class member, else its own name or the name it is assigned to. */
function functionName(node: ts.FunctionLikeDeclaration): string {
  const parent = node.parent;
  const owner = ts.isClassLike(parent) && parent.name ? `${parent.name.text}.` : '';
  if (ts.isConstructorDeclaration(node)) return `${owner}constructor`;
  const prefix = ts.isGetAccessor(node) ? 'get ' : ts.isSetAccessor(node) ? 'set ' : '';
  const assignedTo = ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent) ? parent.name : undefined;
  const name = node.name ?? assignedTo;
  return name === undefined ? '(anonymous)' : `${owner}${prefix}${name.getText()}`;
}

type Place = (file: string) => Placement;

function unplacedViolations(facts: readonly FileFacts[], place: Place): Violation[] {
  return facts.filter((f) => place(f.file).layer === undefined).map((f) => same('unplaced', f.file));
}

function importViolations(facts: readonly FileFacts[], place: Place): Violation[] {
  return facts.flatMap((f) => f.imports.flatMap((target) => edgeViolations(f.file, target, place)));
}

/** Rules `platform`, `layer` and `surface` for one import. */
export function edgeViolations(from: string, to: string, place: Place): Violation[] {
  const [source, target] = [place(from), place(to)];
  const edge = `${from} -> ${to}`;
  const found: Violation[] = [];
  if (source.layer?.selfContained && target.layer !== source.layer) found.push(same('platform', edge));
  if (breaksLayering(source.layer, target.layer)) found.push(same('layer', edge));
  if (reachesIntoCapability(source, target, to)) found.push(same('surface', edge));
  return found;
}

/** Upward, or sideways into another layer of the same rank. A self-contained importer is rule `platform`'s. */
function breaksLayering(source: LayerSpec | undefined, target: LayerSpec | undefined): boolean {
  if (source === undefined || target === undefined || source === target) return false;
  if (source.selfContained || source.importsAnything) return false;
  return target.rank >= source.rank;
}

function reachesIntoCapability(source: Placement, target: Placement, to: string): boolean {
  if (target.capability === undefined || source.layer?.importsAnything) return false;
  return source.capability !== target.capability && to !== `${target.capabilityFolder}/index.ts`;
}

function cycleViolations(graph: ImportGraph): Violation[] {
  const importsItself = (file: string) => (graph.get(file) ?? []).includes(file);
  const cycles = stronglyConnected(graph).filter((files) => files.length > 1 || importsItself(files[0]!));
  return cycles.map((files) => same('cycle', [...files].sort(compareText).join(', ')));
}

/** Tarjan's strongly connected components, each a list of files (a lone file too). */
export function stronglyConnected(graph: ImportGraph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const components: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (!index.has(next)) visit(next);
      if (stack.includes(next)) low.set(file, Math.min(low.get(file)!, low.get(next)!));
    }
    if (low.get(file) !== index.get(file)) return;
    components.push(stack.splice(stack.indexOf(file)));
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return components;
}

function tableViolations(facts: readonly FileFacts[], place: Place): Violation[] {
  const owners = tableOwners(facts, place);
  if (owners.size === 0) return [];
  const names = new RegExp(`\\b(${[...owners.keys()].join('|')})\\b`, 'gi');
  return facts.flatMap((f) => {
    const named = new Set(f.literals.flatMap((text) => [...text.matchAll(names)].map((match) => (match[1] ?? '').toLowerCase())));
    const foreign = [...named].filter((table) => !f.file.startsWith(`${owners.get(table)}/`));
    return foreign.map((table) => same('table', `${f.file} names ${table} (owned by ${owners.get(table)})`));
  });
}

/** Table -> the folder of the file that creates it: its capability's folder, else its own folder. */
function tableOwners(facts: readonly FileFacts[], place: Place): Map<string, string> {
  const owners = new Map<string, string>();
  for (const f of facts) {
    const folder = place(f.file).capabilityFolder ?? posix.dirname(f.file);
    for (const table of f.createdTables) if (!owners.has(table)) owners.set(table, folder);
  }
  return owners;
}

function longFunctionViolations(facts: readonly FileFacts[], maxLines: number): Violation[] {
  return facts.flatMap((f) => {
    const seen = new Map<string, number>();
    return f.functions.flatMap((fn) => {
      if (fn.lines <= maxLines) return [];
      const count = (seen.get(fn.name) ?? 0) + 1;
      seen.set(fn.name, count);
      const name = count === 1 ? fn.name : `${fn.name}#${count}`;
      return [{ rule: 'long-function', key: `long-function: ${f.file} ${name}`, message: `long-function: ${f.file}:${fn.line} ${name} ${fn.lines} lines` }];
    });
  });
}

function domainErrorViolations(facts: readonly FileFacts[], domainFolder: string): Violation[] {
  return facts
    .filter((f) => f.domainErrorThrows > 0 && !f.file.startsWith(`${domainFolder}/`))
    .map((f) => ({
      rule: 'domain-error',
      key: `domain-error: ${f.file}`,
      message: `domain-error: ${f.file} throws DomainError ${f.domainErrorThrows} time(s)`,
    }));
}

function same(rule: string, detail: string): Violation {
  const text = `${rule}: ${detail}`;
  return { rule, key: text, message: text };
}

/** Code-unit order: the same on every machine and locale. */
export function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

// The baseline: one key per line, `#` comments and blank lines ignored.

export function parseBaseline(text: string): string[] {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

export function formatBaseline(header: readonly string[], keys: readonly string[]): string {
  const sorted = [...new Set(keys)].sort(compareText);
  return [...header.map((line) => `# ${line}`), ...sorted].join('\n') + '\n';
}

/** `added`: violations the baseline does not hold; `fixed`: baseline lines that no longer occur. */
export function compareWithBaseline(current: readonly string[], baseline: readonly string[]): { added: string[]; fixed: string[] } {
  const [now, before] = [new Set(current), new Set(baseline)];
  return { added: [...now].filter((key) => !before.has(key)), fixed: [...before].filter((key) => !now.has(key)) };
}

/** The rule of a key or baseline line: the text before the first colon. */
export function ruleOf(key: string): string {
  return key.slice(0, key.indexOf(':'));
}
