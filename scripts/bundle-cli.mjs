// Bundles the CLI's entry with the client commands (submit, queue, show, ...)
// and commander into one file, dist/src/cli/main.bundle.js, which bin/taras.js
// runs. One file instead of some forty modules saves Node's module loader
// about 10 ms per command, most of what separates `taras submit` from its
// 120 ms target. The daemons, the simulator and the admin commands stay
// separate modules next to it (imported on demand, as before): the agent
// finds the supervisor script relative to its own module, which a bundle
// would move. Run after tsc (npm run build does both).

import { build } from 'esbuild';

const separate = ['./daemons.js', './simulate.js', './workload.js', './demo.js', './admin.js'];

await build({
  entryPoints: ['dist/src/cli/main.js'],
  outfile: 'dist/src/cli/main.bundle.js',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external: ['better-sqlite3', 'cli-progress', ...separate],
  // commander is CommonJS: give the bundle a require for its built-in imports.
  banner: { js: "import { createRequire as __tarasRequire } from 'node:module'; const require = __tarasRequire(import.meta.url);" },
  logLevel: 'warning',
});
