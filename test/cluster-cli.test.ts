// The live-system CLI where no controller is needed or none is running:
// refusals before anything is sent, and clear answers when the controller is down.
// Also how the `taras` command itself starts: bin/taras.js's per-user V8 code
// cache, and a reader that leaves early (`taras queue | head`).

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { crc32 } from 'node:zlib';
import { readClusterConfig } from '../src/config/load.js';
import { startController } from '../src/controller/daemon.js';
import { createApiClient } from '../src/net/client.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const work = mkdtempSync(join(tmpdir(), 'taras-cluster-cli-'));
after(() => rmSync(work, { recursive: true, force: true }));
// A port nothing listens on: the controller is down.
const DOWN = 'http://127.0.0.1:9';

function taras(args: string[], env: Record<string, string> = {}) {
  const run = spawnSync(process.execPath, [join(root, 'bin/taras.js'), ...args], {
    cwd: work, encoding: 'utf8', input: '', env: { ...process.env, TARAS_JOB_ID: '', ...env },
  });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe('taras submit and friends without a controller', () => {
  it('without a terminal, a missing script is named with what gives it, exit 2; a missing time limit is left to the partition (test/requests.test.ts)', () => {
    const run = taras(['submit', '--controller', DOWN]);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /taras submit needs a batch script \(taras submit run\.sh\), --wrap COMMAND, --many FILE for many jobs, or the script on standard input/);
  });

  it('a bad #TARAS line is refused with the file, the line and the option', () => {
    writeFileSync(join(work, 'b.sh'), '#!/bin/sh\n#TARAS --time 10\n#TARAS --cpu-per-task 2\necho hi\n');
    const run = taras(['submit', '--controller', DOWN, 'b.sh']);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /b\.sh:3: --cpu-per-task: .*did you mean --cpus-per-task/);
  });

  it('a valid job with the controller down: one line saying where it looked and how to start it', () => {
    writeFileSync(join(work, 'c.sh'), '#!/bin/sh\n#TARAS --time 10\necho hi\n');
    const run = taras(['submit', '--controller', DOWN, 'c.sh']);
    assert.equal(run.code, 1);
    assert.match(run.stderr, /controller not reachable at http:\/\/127\.0\.0\.1:9/);
    // The other address forms say where they looked too.
    assert.match(taras(['submit', '--controller', '127.0.0.1:9', 'c.sh']).stderr, /controller not reachable at http:\/\/127\.0\.0\.1:9/);
    assert.match(taras(['submit', '--controller', `unix:${join(work, 'none.sock')}`, 'c.sh']).stderr, new RegExp(`controller not reachable at unix:${join(work, 'none.sock')}`));
    assert.match(taras(['submit', 'c.sh'], { TARAS_CONTROLLER: join(work, 'none.sock') }).stderr, /controller not reachable at unix:/);
    // A bare --immediate takes no value: the script that follows is the script (it was taken for the seconds).
    const immediate = taras(['submit', '--controller', DOWN, '--immediate', 'c.sh'], { TARAS_RETRY_SECONDS: '0' });
    assert.equal(immediate.code, 1, immediate.stderr);
    assert.match(immediate.stderr, /controller not reachable at http:\/\/127\.0\.0\.1:9/);
    assert.match(taras(['submit', '--controller', DOWN, '--immediate=x', 'c.sh']).stderr, /--immediate/);
    const status = taras(['status', '--controller', DOWN]);
    assert.equal(status.code, 1);
    assert.match(status.stdout, /down/i);
  });

  it('--file job.toml gives what the script lacks; a bad key is named with its line', () => {
    writeFileSync(join(work, 'd.sh'), '#!/bin/sh\necho hi\n');
    writeFileSync(join(work, 'job.toml'), 'time = 30\njob_name = "from-file"\n');
    const run = taras(['submit', '--file', 'job.toml', '--controller', DOWN, 'd.sh']);
    assert.equal(run.code, 1, run.stderr); // parsed and complete: it got as far as the (down) controller
    assert.match(run.stderr, /controller not reachable/);
    writeFileSync(join(work, 'bad.toml'), 'time = 30\ncpu_per_task = 2\n');
    const bad = taras(['submit', '--file', 'bad.toml', '--controller', DOWN, 'd.sh']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /bad\.toml:2: .*cpu_per_task/);
  });

  it('taras jobid prints the job id inside a job and refuses outside one', () => {
    assert.equal(taras(['jobid'], { TARAS_JOB_ID: '42' }).stdout, '42\n');
    const outside = taras(['jobid']);
    assert.equal(outside.code, 1);
    assert.match(outside.stderr, /not inside a Taras job/);
  });

  it('bad job ids and ports are refused before anything is sent', () => {
    assert.equal(taras(['show', 'x1', '--controller', DOWN]).code, 2);
    assert.match(taras(['controller', '--port', '99999']).stderr, /'--port' got '99999'/);
    assert.match(taras(['agent', '--virtual', '16by8']).stderr, /expected NODESxCPUS/);
  });
});

describe('bin/taras.js: what every command loads', () => {
  it('makes no Intl.Segmenter until a cell is not printable ASCII (string-width made one as the bundle loaded: 15 to 25 ms of every taras submit)', () => {
    const preload = join(work, 'count-segmenters.cjs');
    writeFileSync(preload, [
      'const Real = Intl.Segmenter; let made = 0;',
      'Intl.Segmenter = class extends Real { constructor(...args) { super(...args); made += 1; } };',
      "process.on('exit', () => process.stderr.write(`segmenters made: ${made}\\n`));",
    ].join('\n'));
    const withCount = { NODE_OPTIONS: `--require ${preload}`, TARAS_CLI_CACHE: 'off' };
    const help = taras(['submit', '--help'], withCount);
    assert.equal(help.code, 0);
    assert.match(help.stderr, /segmenters made: 0\n/);
    // (Wide names in squeue's and sacct's tables, through this bundle: test/slurm-commands.test.ts.)
    const queue = taras(['queue', '--help'], withCount);
    assert.equal(queue.code, 0);
    assert.match(queue.stderr, /segmenters made: 0\n/);
  });
});

describe('bin/taras.js: the code cache', () => {
  const bundle = join(root, 'dist/src/cli/main.bundle.cjs');
  const install = crc32(bundle).toString(16).padStart(8, '0');
  const cachesOf = (home: string, command: string) => {
    try {
      return readdirSync(join(home, 'taras')).filter((name) => name.endsWith(`-${command}.v8`));
    } catch {
      return [];
    }
  };

  it('keeps one cache per command under XDG_CACHE_HOME, reuses it, and replaces a damaged one or an older build\'s', () => {
    const home = join(work, 'cache-home');
    mkdirSync(join(home, 'taras'), { recursive: true, mode: 0o700 });
    const olderBuild = `cli-${install}-00000000-${process.version}-${process.arch}-submit.v8`;
    const otherInstall = `cli-ffffffff-00000000-${process.version}-${process.arch}-submit.v8`;
    writeFileSync(join(home, 'taras', olderBuild), 'from an older build');
    writeFileSync(join(home, 'taras', otherInstall), 'from another install');
    const plain = taras(['submit', '--help'], { TARAS_CLI_CACHE: 'off' });
    assert.equal(plain.code, 0);
    assert.match(plain.stdout, /Examples:\n {2}taras submit run\.sh/);

    const first = taras(['submit', '--help'], { XDG_CACHE_HOME: home });
    assert.deepEqual([first.code, first.stdout, first.stderr], [0, plain.stdout, '']);
    const [name] = cachesOf(home, 'submit').filter((n) => n !== otherInstall);
    assert.match(name, new RegExp(`^cli-${install}-[0-9a-f]{8}-`));
    const file = join(home, 'taras', name);
    const written = statSync(file);
    assert.ok(written.size > 10_000, `a real code cache, not ${written.size} bytes`);
    assert.equal(written.mode & 0o777, 0o600);
    assert.deepEqual(cachesOf(home, 'submit').sort(), [name, otherInstall].sort(), 'the older build\'s cache is gone, another install\'s stays');

    // Trusted and accepted by V8: the second run leaves it as it was.
    const second = taras(['submit', '--help'], { XDG_CACHE_HOME: home });
    assert.deepEqual([second.code, second.stdout], [0, plain.stdout]);
    assert.equal(statSync(file).mtimeMs, written.mtimeMs);

    // The name follows the bundle's identity and modification time, not its bytes: a bundle changed
    // in place (as an edit of the same length would be) never meets the old cache, which goes.
    const { atime, mtime } = statSync(bundle);
    utimesSync(bundle, atime, new Date(mtime.getTime() + 1000));
    let current: string;
    try {
      assert.equal(taras(['submit', '--help'], { XDG_CACHE_HOME: home }).code, 0);
      [current] = cachesOf(home, 'submit').filter((n) => n !== otherInstall);
      assert.notEqual(current, name);
      assert.deepEqual(cachesOf(home, 'submit').sort(), [current, otherInstall].sort());
    } finally {
      utimesSync(bundle, atime, mtime);
    }
    assert.equal(taras(['submit', '--help'], { XDG_CACHE_HOME: home }).code, 0);
    [current] = cachesOf(home, 'submit').filter((n) => n !== otherInstall);
    const currentFile = join(home, 'taras', current);

    // Another command gets its own. Damage in the middle of the code data (which V8 would run,
    // or crash on) fails the file's own checksum: the command runs as usual and writes it anew.
    assert.equal(taras(['queue', '--help'], { XDG_CACHE_HOME: home }).code, 0);
    assert.equal(cachesOf(home, 'queue').length, 1);
    const bytes = readFileSync(currentFile);
    bytes.fill(0x5a, bytes.length >> 1, (bytes.length >> 1) + 8);
    writeFileSync(currentFile, bytes);
    const damaged = taras(['submit', '--help'], { XDG_CACHE_HOME: home });
    assert.deepEqual([damaged.code, damaged.stdout, damaged.stderr], [0, plain.stdout, '']);
    assert.notDeepEqual(readFileSync(currentFile), bytes);
    assert.equal(taras(['submit', '--help'], { XDG_CACHE_HOME: home }).code, 0);
  });

  it('never fails a command, and writes nothing after a failed run, with TARAS_CLI_CACHE=off or where others may write', () => {
    const notAFolder = join(work, 'a-file');
    writeFileSync(notAFolder, '');
    const run = taras(['jobid'], { XDG_CACHE_HOME: notAFolder, TARAS_JOB_ID: '7' });
    assert.deepEqual([run.code, run.stdout, run.stderr], [0, '7\n', '']);
    const home = join(work, 'cache-checks');
    mkdirSync(home);
    assert.equal(taras(['jobid'], { XDG_CACHE_HOME: home, TARAS_CLI_CACHE: 'off', TARAS_JOB_ID: '7' }).stdout, '7\n');
    assert.equal(taras(['show', 'x1'], { XDG_CACHE_HOME: home }).code, 2);
    assert.deepEqual(readdirSync(home), [], 'off, or a failed run: nothing written');
    // A cache folder anyone may write to is not used (sudo -E must not run planted code).
    mkdirSync(join(home, 'taras'), { mode: 0o777 });
    chmodSync(join(home, 'taras'), 0o777);
    assert.equal(taras(['jobid'], { XDG_CACHE_HOME: home, TARAS_JOB_ID: '7' }).stdout, '7\n');
    assert.deepEqual(readdirSync(join(home, 'taras')), []);
  });
});

describe('bin/taras.js: what a command loads', () => {
  it('a command that needs no controller loads neither node:child_process nor node:http (nor, through commander, anything to spawn)', () => {
    // process.moduleLoadList names every Node built-in the process loaded, read at exit by a preloaded file.
    const probe = join(work, 'loaded.cjs');
    writeFileSync(probe, "process.on('exit', () => process.stderr.write(JSON.stringify(process.moduleLoadList.filter((m) => /child_process|http/.test(m)))));\n");
    const run = spawnSync(process.execPath, ['--require', probe, join(root, 'bin/taras.js'), 'jobid'], {
      cwd: work, encoding: 'utf8', env: { ...process.env, TARAS_JOB_ID: '7', TARAS_CLI_CACHE: 'off' },
    });
    assert.deepEqual([run.status, run.stdout, JSON.parse(run.stderr)], [0, '7\n', []]);
  });
});

describe('bin/taras: the installed command', () => {
  it('starts Node without NODE_EXTRA_CA_CERTS (no certificate bundle loaded) and gives the variable back to the command', () => {
    // Linked as npm links it (node_modules/.bin/taras -> ../taras/bin/taras), from another folder.
    const linkDir = join(work, 'dot-bin');
    mkdirSync(linkDir, { recursive: true });
    symlinkSync(join(root, 'bin/taras'), join(linkDir, 'taras'));
    // At exit, after bin/taras.js ran: what the command's own environment holds (what a submission exports).
    const probe = join(work, 'probe.cjs');
    writeFileSync(probe, "process.on('exit', () => process.stderr.write(`ca=${process.env.NODE_EXTRA_CA_CERTS};saved=${process.env.TARAS_NODE_EXTRA_CA_CERTS}\\n`));\n");
    const env = { ...process.env, TARAS_JOB_ID: '7', NODE_EXTRA_CA_CERTS: join(work, 'no-such-ca.pem'), NODE_OPTIONS: `--require ${probe}` };
    const direct = spawnSync(process.execPath, [join(root, 'bin/taras.js'), 'jobid'], { cwd: work, encoding: 'utf8', env });
    assert.match(direct.stderr, /Ignoring extra certs from/, 'Node itself loads the bundle when the variable is set');
    const launched = spawnSync(join(linkDir, 'taras'), ['jobid'], { cwd: work, encoding: 'utf8', env });
    assert.equal(launched.status, 0, launched.stderr);
    assert.equal(launched.stdout, '7\n');
    assert.doesNotMatch(launched.stderr, /extra certs/);
    assert.match(launched.stderr, new RegExp(`ca=${join(work, 'no-such-ca.pem')};saved=undefined`));
    // Unset stays unset; set to nothing stays set to nothing.
    const { NODE_EXTRA_CA_CERTS: _unset, ...without } = env;
    assert.match(spawnSync(join(linkDir, 'taras'), ['jobid'], { cwd: work, encoding: 'utf8', env: without }).stderr, /ca=undefined;saved=undefined/);
    assert.match(spawnSync(join(linkDir, 'taras'), ['jobid'], { cwd: work, encoding: 'utf8', env: { ...env, NODE_EXTRA_CA_CERTS: '' } }).stderr, /ca=;saved=undefined/);
  });
});

describe('output that cannot be written', () => {
  it('a full disk is an error, exit 1, not a silent success', () => {
    const full = openSync('/dev/full', 'w');
    try {
      const run = spawnSync(process.execPath, [join(root, 'bin/taras.js'), 'jobid'], {
        cwd: work, encoding: 'utf8', stdio: ['ignore', full, 'pipe'], env: { ...process.env, TARAS_JOB_ID: '42' },
      });
      assert.equal(run.status, 1);
      assert.match(run.stderr, /^error: could not write the output: ENOSPC/);
    } finally {
      closeSync(full);
    }
  });
});

describe('taras queue | head', () => {
  it('a reader that leaves early ends the command quietly with exit 0', async () => {
    const file = join(work, 'pipe.toml');
    writeFileSync(file, `[cluster]\nname = "pipe"\npolicy = "easy"\ndata_dir = "pipe-data"\nmax_submit_rate = 0\n[[nodes]]\nnames = "n1"\ncpus = 2\nmemory = "1G"\n[[partitions]]\nname = "batch"\nnodes = "ALL"\n`);
    const parsed = await readClusterConfig(file);
    assert.ok(parsed.ok);
    // No agent: every job waits, so the listing is long: about 1 MB, more than a pipe or socket buffer holds.
    const controller = await startController({ config: parsed.config, configPath: file, clusterKey: null, port: 0, log: () => {} });
    const api = createApiClient({ socketPath: controller.socketPath }, {});
    try {
      const spec = {
        script: { path: join(work, 'x.sh'), text: '#!/bin/sh\n', args: [] }, nodes: { min: 1 }, cpusPerTask: 1, timeLimitSeconds: 60,
        name: `a-job-with-a-long-name-${'x'.repeat(600)}`, workingDir: work, output: 'x-%j.out', export: { all: false, variables: [] }, requeue: false,
      };
      for (let i = 0; i < 1500; i++) await api.post('/jobs', { spec });
      const child = spawn(process.execPath, [join(root, 'bin/taras.js'), 'queue', '--controller', controller.url], { cwd: work, stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      // Like `head -1`: read the first chunk, then close the pipe.
      let received = 0;
      child.stdout.once('data', (chunk: Buffer) => {
        received = chunk.length;
        child.stdout.destroy();
      });
      const code = await new Promise<number | null>((resolve) => child.once('close', (exitCode) => resolve(exitCode)));
      assert.deepEqual([code, stderr], [0, '']);
      assert.ok(received > 0 && received < 500_000, `read ${received} bytes before leaving`);
    } finally {
      api.close();
      await controller.close();
    }
  });
});
