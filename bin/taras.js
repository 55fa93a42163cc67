#!/usr/bin/env node
// Entry point of the `taras` command (CommonJS: bin/package.json says so).
//
// It runs the CLI, bundled at build time into dist/src/cli/main.bundle.cjs
// (npm install builds it through the "prepare" script: tsc, then
// scripts/bundle-cli.mjs), as a script through node:vm, so that V8 can reuse
// the code it compiled in an earlier run of the same command: a per-user code
// cache, one file per command, under $XDG_CACHE_HOME/taras (else
// ~/.cache/taras). From the second run of a command on, V8 skips compiling
// the functions that command runs (about 10 ms of `taras submit`). Node 20
// has no compile cache of its own (module.enableCompileCache came with Node
// 22); this one works as Node's does:
// - the file name carries a CRC-32 of the install's path and one of the
//   bundle's identity (device, inode, size and modification time to the
//   nanosecond, as Python's .pyc files do), so a rebuilt or edited CLI never
//   meets an old cache, and two installs never delete each other's (hashing
//   the code itself cost every command 2 to 3 ms);
// - each file starts with a CRC-32 of its data, checked before V8 sees it (V8
//   itself checks only a header, and damaged code data can crash it);
// - a cache is used only from a folder and a file that belong to the user
//   running the command and that no one else may write (so `sudo -E taras`
//   never runs code another user could have planted);
// - a missing, damaged or rejected cache is written when a command exits
//   with 0, atomically (a file of its own, then a rename).
// Nothing about the cache ever fails a command. TARAS_CLI_CACHE=off turns it off.
'use strict';

// bin/taras (the installed command) starts this file without NODE_EXTRA_CA_CERTS, which
// costs Node tens of milliseconds at every start and nothing here uses: give it back to
// the environment, which a submission exports to the job.
if (process.env.TARAS_NODE_EXTRA_CA_CERTS !== undefined) {
  process.env.NODE_EXTRA_CA_CERTS = process.env.TARAS_NODE_EXTRA_CA_CERTS;
  delete process.env.TARAS_NODE_EXTRA_CA_CERTS;
}

// bin/squeue, bin/sinfo... start this file with `--slurm-command NAME` first: the CLI then runs as that
// Slurm command (src/cli/slurm/), which it reads from process.argv[1].
const SLURM_COMMANDS = ['sbatch', 'squeue', 'scancel', 'sinfo', 'sacct', 'scontrol', 'srun', 'salloc'];
if (process.argv[2] === '--slurm-command' && SLURM_COMMANDS.includes(process.argv[3])) {
  process.argv.splice(1, 3, require('node:path').join(__dirname, process.argv[3]));
}
const slurmCommand = SLURM_COMMANDS.includes(require('node:path').basename(process.argv[1])) ? require('node:path').basename(process.argv[1]) : undefined;

const fs = require('node:fs');
const path = require('node:path');
const vm = require('node:vm');
const { crc32 } = require('node:zlib');
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
const code = `(function (exports, require, module, __filename, __dirname, __tarasImport) {${source}\n})`;

const hex = (n) => n.toString(16).padStart(8, '0');
const euid = typeof process.geteuid === 'function' ? process.geteuid() : -1;
/** Ours alone: owned by the effective user, writable by no one else. */
const ours = (stats) => stats.uid === euid && (stats.mode & 0o022) === 0;

const cache = (() => {
  // zlib.crc32 came with Node 20.15: on an older Node 20 the command runs without a cache.
  if (process.env.TARAS_CLI_CACHE === 'off' || euid < 0 || typeof crc32 !== 'function') return undefined;
  const root = process.env.XDG_CACHE_HOME || (process.env.HOME ? path.join(process.env.HOME, '.cache') : undefined);
  if (root === undefined || !path.isAbsolute(root)) return undefined;
  // One cache per command: each holds the functions its command ran.
  const first = slurmCommand ?? process.argv.slice(2).find((arg) => !arg.startsWith('-'));
  const command = first !== undefined && /^[a-z]{1,16}$/.test(first) ? first : 'other';
  const install = hex(crc32(file));
  const folder = path.join(root, 'taras');
  let build;
  try {
    const stats = fs.statSync(file, { bigint: true });
    build = hex(crc32(`${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeNs}:${stats.ctimeNs}`));
  } catch {
    return undefined;
  }
  return { root, folder, install, path: path.join(folder, `cli-${install}-${build}-${process.version}-${process.arch}-${command}.v8`) };
})();

/** The cached code data, if there is one we may trust; undefined otherwise. */
function readCache(target) {
  let fd;
  try {
    const folder = fs.lstatSync(target.folder);
    if (!folder.isDirectory() || !ours(folder)) return undefined;
    fd = fs.openSync(target.path, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
    if (!ours(fs.fstatSync(fd))) return undefined;
    const bytes = fs.readFileSync(fd);
    if (bytes.length <= 4) return undefined;
    const data = bytes.subarray(4);
    return bytes.readUInt32LE(0) === crc32(data) ? data : undefined;
  } catch {
    return undefined; // none yet: this run writes it
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

const cachedData = cache === undefined ? undefined : readCache(cache);
const script = new vm.Script(code, { filename: file, cachedData });

if (cache !== undefined && (cachedData === undefined || script.cachedDataRejected === true)) {
  process.once('exit', (exitCode) => {
    // A failed run (a typo, the controller down) has run little of its command: keep waiting for a good one.
    if (exitCode === 0) saveCache(cache, script);
  });
}

const bundleModule = { exports: {} };
const importSeparate = (specifier) => import(require('node:url').pathToFileURL(path.join(dir, specifier)).href);
script.runInThisContext()(bundleModule.exports, createRequire(file), bundleModule, file, dir, importSeparate);

/** Writes the cache (a new file of its own, then a rename) and removes this install's caches of other builds. */
function saveCache(target, compiled) {
  const temporary = `${target.path}.${process.pid}-${Math.random().toString(36).slice(2)}.tmp`;
  try {
    // Only in a cache folder of our own (never create one in someone else's home).
    if (!fs.existsSync(target.root)) {
      if (!ours(fs.statSync(path.dirname(target.root)))) return;
      fs.mkdirSync(target.root, { mode: 0o700 });
    }
    if (!fs.existsSync(target.folder)) {
      if (!ours(fs.lstatSync(target.root))) return;
      fs.mkdirSync(target.folder, { mode: 0o700 });
    }
    const folder = fs.lstatSync(target.folder);
    if (!folder.isDirectory() || !ours(folder)) return;
    const data = compiled.createCachedData();
    const header = Buffer.alloc(4);
    header.writeUInt32LE(crc32(data), 0);
    fs.writeFileSync(temporary, Buffer.concat([header, data]), { mode: 0o600, flag: 'wx' });
    fs.renameSync(temporary, target.path);
    const current = path.basename(target.path).split('-')[2];
    for (const name of fs.readdirSync(target.folder)) {
      const [prefix, install, build] = name.split('-');
      if (prefix === 'cli' && install === target.install && build !== current && name.endsWith('.v8')) fs.rmSync(path.join(target.folder, name), { force: true });
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
