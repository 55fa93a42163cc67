// A disk that fails in the middle of a many-job action, with a real
// controller process: 3,000 held tasks, then the controller's file size
// limit (RLIMIT_FSIZE, set with prlimit on its PID: Node ignores SIGXFSZ, so
// SQLite's writes fail with EFBIG) is lowered under its WAL, and `taras
// release` of the whole array fails part way. The engine had already
// released the tasks it got to in memory; the controller must not go on with
// that memory (it would start jobs the file says are held): it logs why and
// stops with 70, and a new start from the file has every task still held.
// Every process started here is stopped by its PID.

import assert from 'node:assert/strict';
import { spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { killHard, running, startDaemon, withController } from './daemon-process.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const taras = join(root, 'bin/taras.js');
const work = mkdtempSync(join(tmpdir(), 'taras-store-failure-'));
const started: ChildProcess[] = [];

after(async () => {
  for (const child of started) await killHard(child);
  rmSync(work, { recursive: true, force: true });
});

function cli(url: string, ...args: string[]) {
  const run = spawnSync(process.execPath, [taras, ...withController(args, url)], { cwd: work, encoding: 'utf8', timeout: 60_000, maxBuffer: 64 * 1024 * 1024 });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

const prlimit = spawnSync('prlimit', ['--version'], { encoding: 'utf8' });

describe('a many-job action the disk refuses part way', () => {
  it('stops the controller (70) instead of going on with memory ahead of the file; a restart has every task as stored', {
    skip: prlimit.status !== 0 ? 'prlimit (util-linux) is not installed' : false,
  }, async () => {
    const data = join(work, 'data');
    const start = () => startDaemon(taras, started, ['controller', '--data', data, '--port', '0'], /listening on (http:\/\/127\.0\.0\.1:\d+)/, work);
    const first = await start();
    const url = first.match[1];
    writeFileSync(join(work, 'job.sh'), '#!/bin/sh\nsleep 100\n');
    const submitted = cli(url, 'submit', '--json', '-t', '1', '-H', '--array=0-2999', 'job.sh');
    assert.equal(submitted.code, 0, submitted.stderr);
    const { id } = JSON.parse(submitted.stdout) as { id: number };

    // Writes past 64 KiB fail from now on; the WAL already holds the 3,000 submissions (about 2 MB), so the
    // release's 3,000 events go past the limit before its commit (soft limit only: the test can end it).
    const wal = statSync(join(data, 'taras.db-wal')).size;
    assert.ok(wal > 64 * 1024, `the WAL is ${wal} bytes: the limit would not bite`);
    const limited = spawnSync('prlimit', ['--pid', String(first.child.pid), '--fsize=65536:unlimited'], { encoding: 'utf8' });
    assert.equal(limited.status, 0, limited.stderr);
    const exited = new Promise<number | null>((resolveExit) => first.child.once('exit', (code) => resolveExit(code)));

    const released = cli(url, 'release', String(id));
    assert.equal(released.code, 1, `release should fail: ${released.stdout}${released.stderr}`);
    assert.match(released.stderr, /internal error in the controller while handling POST \/jobs\/release/);
    const code = await Promise.race([exited, sleep(20_000).then(() => 'still running')]);
    assert.equal(code, 70, `the controller exited with ${code}\n${first.log()}`);
    assert.ok(!running(first.child));
    assert.match(first.log(), /fatal: a many-job action could not be stored, and the controller's memory is ahead of .*taras\.db: .*stopping/);

    // From the file: all 3,000 tasks still held, and the same action works on a sound disk.
    const second = await start();
    const url2 = second.match[1];
    const listed = () => {
      const run = cli(url2, 'queue', '--state', 'PENDING', '--json');
      assert.equal(run.code, 0, run.stderr);
      return JSON.parse(run.stdout) as { id: number; reason: string }[];
    };
    const before = listed();
    assert.equal(before.length, 3000);
    assert.deepEqual([...new Set(before.map((job) => job.reason))], ['JobHeldUser']);
    const again = cli(url2, 'release', String(id));
    assert.equal(again.code, 0, again.stderr);
    const after = listed();
    assert.equal(after.length, 3000);
    assert.ok(after.every((job) => job.reason !== 'JobHeldUser'), 'released once the disk takes it');
  });
});
