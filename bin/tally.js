#!/usr/bin/env node
// The `tally` operator CLI: runs the TypeScript sources through tsx, so no build step is needed.
require('tsx/cjs');
require('../src/cli/index.ts');
