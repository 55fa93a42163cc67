// Bundles the CLI's entry with the client commands (submit, queue, show, ...)
// and commander into one CommonJS file, dist/src/cli/main.bundle.cjs, which
// bin/taras.js runs as a script with V8's code cache (see there). One file
// instead of some forty modules saves Node's module loader about 10 ms per
// command; a script rather than an ES module is what lets V8 reuse the code
// it compiled in an earlier run. The daemons, the simulator and the admin
// commands stay separate ES modules next to it, imported on demand as
// before (the agent finds the supervisor script relative to its own module,
// which a bundle would move). Run after tsc (npm run build does both).
//
// Code in a vm.Script cannot use import() on Node 20 without an experimental
// flag, so the entry's import('./x.js') of those separate modules are
// rewritten to __tarasImport('./x.js'), a function bin/taras.js passes in.
// import() of Node built-ins becomes require() (esbuild does that for CJS).

import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { build } from 'esbuild';

const separate = ['./daemons.js', './simulate.js', './workload.js', './demo.js', './admin.js', './planning.js'];
const outfile = 'dist/src/cli/main.bundle.cjs';

/**
 * A plugin that edits one of tsc's output files before esbuild reads it. `edit` answers the new source,
 * or throws `missing(...)` when the file no longer has what it rewrites, so a change there stops the build
 * instead of leaving a bundle that quietly does the slow or broken thing.
 */
function rewrite(name, file, edit) {
  return {
    name,
    setup(context) {
      context.onLoad({ filter: file }, (args) => ({ contents: edit(readFileSync(args.path, 'utf8'), args.path), loader: 'js' }));
    },
  };
}
function missing(path, what, fix = 'update this plugin') {
  return new Error(`bundle-cli: ${path} no longer has ${what}: ${fix}`);
}

const separateImports = rewrite('separate-imports', /dist[\\/]src[\\/]cli[\\/]main\.js$/, (contents, path) => {
  for (const module of separate) {
    const call = `import('${module}')`;
    if (!contents.includes(call)) throw missing(path, call, 'update the list of separate modules');
    contents = contents.replaceAll(call, `__tarasImport('${module}')`);
  }
  return contents;
});

// commander requires node:child_process as it loads, for subcommands that are separate executables,
// which taras has none of; loading it cost every command about 3 ms. commander gets a stand-in that
// loads the real module on first use.
const lazyChildProcess = {
  name: 'lazy-child-process',
  setup(context) {
    context.onResolve({ filter: /^(node:)?child_process$/ }, (args) => (
      /[\\/]node_modules[\\/]commander[\\/]/.test(args.importer) ? { path: 'child_process', namespace: 'lazy-child-process' } : undefined
    ));
    context.onLoad({ filter: /.*/, namespace: 'lazy-child-process' }, () => ({
      contents: 'let real; module.exports = new Proxy({}, { get: (_, key) => (real ??= require("node:child_process"))[key] });',
      loader: 'js',
    }));
  },
};

// string-width makes an Intl.Segmenter and compiles its Unicode regular expressions as it loads: 15 to 25 ms
// of every command on this machine, though only cells that are not printable ASCII need it (text.ts). In the
// bundle it is required on first use instead (esbuild then runs the module's code at that require).
const stringWidthImport = "import stringWidth from 'string-width';";
const lazyStringWidth = rewrite('lazy-string-width', /dist[\\/]src[\\/]cli[\\/]render[\\/]text\.js$/, (contents, path) => {
  if (!contents.includes(stringWidthImport)) throw missing(path, stringWidthImport);
  return contents.replace(stringWidthImport, "let loadedStringWidth; const stringWidth = (text) => (loadedStringWidth ??= require('string-width').default)(text);");
});

// The native addon (SO_PEERCRED: who listens on a socket the CLI found by itself) is found and loaded from
// its module's own file, fileURLToPath(import.meta.url), which a CommonJS bundle does not have: there it is
// the bundle's file, __filename (bin/taras.js passes it), and the addon's folder is found from it the same way.
const ownFile = 'fileURLToPath(import.meta.url)';
const nativeInBundle = rewrite('native-in-bundle', /dist[\\/]src[\\/]net[\\/]native\.js$/, (contents, path) => {
  if (!contents.includes(ownFile) || contents.replaceAll(ownFile, '').includes('import.meta')) throw missing(path, `${ownFile} as its only use of import.meta`);
  return contents.replaceAll(ownFile, '__filename');
});

const result = await build({
  entryPoints: ['dist/src/cli/main.js'],
  bundle: true,
  write: false,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  // ws's optional native speed-ups (not installed: it falls back to JavaScript).
  external: ['better-sqlite3', 'cli-progress', 'bufferutil', 'utf-8-validate', ...separate],
  plugins: [separateImports, lazyChildProcess, nativeInBundle, lazyStringWidth],
  // Without the spaces, comments and long forms (names are kept, for readable stack traces): Node
  // reads, hashes and compiles half as much source at every command (about 8 ms of `taras jobid`).
  minifyWhitespace: true,
  minifySyntax: true,
  // import('node:fs') and the like become require(): a vm.Script cannot import().
  supported: { 'dynamic-import': false },
  logLevel: 'warning',
});
const code = result.outputFiles[0].text;
const leftover = /\bimport\("[^"]*"\)/.exec(code);
if (leftover) throw new Error(`bundle-cli: the bundle still calls ${leftover[0]}, which a vm.Script cannot run: bundle it or add it to the separate modules`);
writeFileSync(outfile, code);
rmSync('dist/src/cli/main.bundle.js', { force: true });
