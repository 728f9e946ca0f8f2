/**
 * The layout src/ is being moved into, as test/architecture.test.ts enforces it (the checker is
 * test/support/architecture.ts). Edit here to change the layering; then regenerate or trim
 * known-violations.txt beside this file.
 *
 * Layers, low to high: a file may import files of its own layer and of lower ranks only; two
 * layers of the same rank (projections, providers) stand side by side and import neither way.
 * Inside a layer with capabilities, `<layer folder>/<capability>/` holds one capability; other
 * files of the layer are its root files. A file outside a capability (another capability in any
 * layer, or a root file of any layer) may import only the capability's `index.ts`; the
 * capability's own files in other layers may reach its internals. Composition may import anything.
 */
import type { Layout } from '../support/architecture';

export const layout: Layout = {
  srcDir: 'src',
  layers: [
    { name: 'platform', rank: 0, paths: ['src/platform/**', 'src/eventstore/**', 'src/config.ts'], selfContained: true },
    { name: 'domain', rank: 1, paths: ['src/domain/**'], capabilities: true },
    { name: 'projections', rank: 2, paths: ['src/projections/**'], capabilities: true },
    { name: 'providers', rank: 2, paths: ['src/providers/**'], capabilities: true },
    { name: 'app', rank: 3, paths: ['src/app/**'], capabilities: true },
    { name: 'http', rank: 4, paths: ['src/http/**'], capabilities: true },
    { name: 'composition', rank: 5, paths: ['src/main.ts', 'src/server.ts', 'src/compose/**', 'src/cli/**'], importsAnything: true },
  ],
  capabilities: ['identity', 'ledger', 'cards', 'notifications', 'audit'],
  /** Rule `long-function`: a function, method or arrow spanning more lines than this. */
  maxFunctionLines: 70,
  /** Rule `domain-error`: DomainError is thrown by the domain only. */
  domainErrorFolder: 'src/domain',
};
