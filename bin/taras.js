#!/usr/bin/env node
// Entry point of the `taras` command (CommonJS: bin/package.json says so).
//
// It runs the CLI, bundled at build time into dist/src/cli/main.bundle.cjs
// (npm install builds it through the "prepare" script: tsc, then
// scripts/bundle-cli.mjs), as a script through node:vm, so that V8 can reuse
// the code it compiled in an earlier run of the same command: a per-user code
// cache, one file per command, under $XDG_CACHE_HOME/taras (else
// ~/.cache/taras). From the second run of a command on, V8 skips compiling
// the functions that command runs, about 30 ms of `taras submit`'s 120 ms
// budget. Node 20 has no compile cache of its own (module.enableCompileCache
// came with Node 22). V8 checks every cache file against the source and its
// own version and flags, and ignores one that does not match; the file name
// carries the bundle's content hash, so a rebuilt CLI never meets an old
// cache. A missing or rejected cache is written when the command exits, and
// nothing about the cache ever fails a command. TARAS_CLI_CACHE=off turns it
// off.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const vm = require('node:vm');
const { createRequire } = require('node:module');

const dir = path.join(__dirname, '..', 'dist', 'src', 'cli');
const file = path.join(dir, 'main.bundle.cjs');
let source;
try {
  source = fs.readFileSync(file, 'utf8');
} catch (error) {
  process.stderr.write(`error: cannot read the built CLI ${file} (${error.code}): run \`npm install\` (or \`npm run build\`) in ${path.dirname(__dirname)}\n`);
  process.exit(1);
}

const cachePath = (() => {
  if (process.env.TARAS_CLI_CACHE === 'off') return undefined;
  const bundleId = /^\/\/ taras-cli ([0-9a-f]+)\n/.exec(source)?.[1];
  const root = process.env.XDG_CACHE_HOME || (process.env.HOME ? path.join(process.env.HOME, '.cache') : undefined);
  if (bundleId === undefined || root === undefined || !path.isAbsolute(root)) return undefined;
  // One cache per command: each holds the functions its command ran.
  const first = process.argv.slice(2).find((arg) => !arg.startsWith('-'));
  const command = first !== undefined && /^[a-z]{1,16}$/.test(first) ? first : 'other';
  return path.join(root, 'taras', `cli-${bundleId}-${process.version}-${process.arch}-${command}.v8`);
})();

let cachedData;
if (cachePath !== undefined) {
  try {
    cachedData = fs.readFileSync(cachePath);
  } catch {
    // No cache yet: this run writes it.
  }
}

const script = new vm.Script(`(function (exports, require, module, __filename, __dirname, __tarasImport) {${source}\n})`, {
  filename: file,
  cachedData,
});

if (cachePath !== undefined && (cachedData === undefined || script.cachedDataRejected === true)) {
  process.once('exit', () => saveCache(cachePath, script));
}

const bundleModule = { exports: {} };
const importSeparate = (specifier) => import(require('node:url').pathToFileURL(path.join(dir, specifier)).href);
script.runInThisContext()(bundleModule.exports, createRequire(file), bundleModule, file, dir, importSeparate);

/** Writes the cache (atomically: a temporary file, then a rename) and removes those of other builds. */
function saveCache(target, compiled) {
  const cacheDir = path.dirname(target);
  const temporary = `${target}.${process.pid}.tmp`;
  try {
    fs.mkdirSync(cacheDir, { recursive: true, mode: 0o700 });
    fs.writeFileSync(temporary, compiled.createCachedData(), { mode: 0o600 });
    fs.renameSync(temporary, target);
    const current = path.basename(target).split('-')[1];
    for (const name of fs.readdirSync(cacheDir)) {
      if (name.startsWith('cli-') && name.split('-')[1] !== current && name.endsWith('.v8')) fs.rmSync(path.join(cacheDir, name), { force: true });
    }
  } catch {
    // A cache is only a speed-up: an unwritable home or a full disk must not fail the command.
    try {
      fs.rmSync(temporary, { force: true });
    } catch {
      // Nothing more to do.
    }
  }
}
