// Job arrays through the real CLI and daemons: `taras controller` and
// `taras agent --virtual` as processes on loopback, an array submitted with
// `taras submit --array=0-3%2 -o out-%A_%a.txt`, whose tasks write their
// SLURM_ARRAY_* into their files; never more than two run at once and the
// queue folds the waiting ones; then cancel of one task (12_1) and of a
// whole array (12). Every process started here is stopped by its PID.

import assert from 'node:assert/strict';
import { spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { killHard, startDaemon, withController } from './daemon-process.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const taras = join(root, 'bin/taras.js');
const work = mkdtempSync(join(tmpdir(), 'taras-arrays-e2e-'));
const started: ChildProcess[] = [];

after(async () => {
  for (const child of started) await killHard(child);
  rmSync(work, { recursive: true, force: true });
});

function cli(url: string, ...args: string[]) {
  const run = spawnSync(process.execPath, [taras, ...withController(args, url)], { cwd: work, encoding: 'utf8', timeout: 30_000 });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

interface Job { id: number; state: string; arrayJobId?: number; arrayTaskId?: number }
/** Pending and running jobs. */
const jobs = (url: string): Job[] => {
  const run = cli(url, 'queue', '--state', 'PENDING,RUNNING', '--json');
  assert.equal(run.code, 0, `taras queue failed: ${run.stderr}`);
  return JSON.parse(run.stdout) as Job[];
};

describe('job arrays end to end', () => {
  it('runs an array two at a time with SLURM_ARRAY_* and %A_%a files; cancels one task, then the whole array', async () => {
    const data = join(work, 'data');
    const controller = await startDaemon(taras, started, ['controller', '--data', data, '--port', '0'], /listening on (http:\/\/127\.0\.0\.1:\d+)/, work);
    const url = controller.match[1];
    await startDaemon(taras, started, ['agent', '--controller', url, '--virtual', '4x2', '--data', join(data, 'agent'), '--key', join(data, 'cluster.key')], /registered 4 node/, work);

    writeFileSync(join(work, 'task.sh'), '#!/bin/sh\n#TARAS --time=1\necho "$SLURM_ARRAY_JOB_ID $SLURM_ARRAY_TASK_ID $TARAS_ARRAY_TASK_COUNT $SLURM_ARRAY_TASK_MIN $SLURM_ARRAY_TASK_MAX $SLURM_ARRAY_TASK_STEP"\nsleep 3\n');
    const submitted = cli(url, 'submit', '--json', '--array=0-3%2', '-o', 'out-%A_%a.txt', 'task.sh');
    assert.equal(submitted.code, 0, submitted.stderr);
    const { id } = JSON.parse(submitted.stdout) as { id: number };

    // Throttle: four idle nodes, but never more than two tasks running; the others folded in the queue
    // (each task runs 3 s: the fold is seen while the first two run, which a loaded CI machine missed at 1 s).
    let sawFolded = false;
    let mostRunning = 0;
    for (let i = 0; i < 100; i++) {
      const listed = jobs(url).filter((job) => job.arrayJobId === id);
      if (listed.length === 0) break;
      mostRunning = Math.max(mostRunning, listed.filter((job) => job.state === 'RUNNING').length);
      if (!sawFolded) {
        const table = cli(url, 'queue').stdout;
        if (new RegExp(`${id}_\\[2-3%2\\]`).test(table)) {
          sawFolded = true;
          assert.match(cli(url, 'queue', '-r').stdout, new RegExp(`${id}_3 `), 'unfolded with -r');
        }
      }
      await sleep(100);
    }
    assert.equal(mostRunning, 2, 'at most two at once (and two did run together)');
    assert.ok(sawFolded, 'the waiting tasks shown folded as ID_[2-3%2]');
    const waited = cli(url, 'wait', String(id), String(id + 1), String(id + 2), String(id + 3));
    assert.equal(waited.code, 0, waited.stdout + waited.stderr);
    for (const task of [0, 1, 2, 3]) {
      assert.equal(readFileSync(join(work, `out-${id}_${task}.txt`), 'utf8'), `${id} ${task} 4 0 3 1\n`);
    }
    const shown = JSON.parse(cli(url, 'show', `${id}_2`, '--json').stdout) as Job;
    assert.deepEqual([shown.id, shown.arrayJobId, shown.arrayTaskId, shown.state], [id + 2, id, 2, 'COMPLETED']);

    // The script is stored once, with the first task; every task ran it, and scontrol writes it for any task.
    const script = readFileSync(join(work, 'task.sh'), 'utf8');
    for (const task of [0, 3]) {
      const written = spawnSync(join(root, 'bin', 'scontrol'), ['write', 'batch_script', String(id + task), '-'],
        { cwd: work, encoding: 'utf8', timeout: 30_000, env: { ...process.env, TARAS_CONTROLLER: url } });
      assert.equal(written.status, 0, written.stderr);
      assert.equal(written.stdout, script, `task ${task}`);
    }
    const db = new Database(join(data, 'taras.db'), { readonly: true, fileMustExist: true });
    try {
      const copies = db.prepare('SELECT count(*) FROM job_events WHERE job_id BETWEEN ? AND ? AND seq = 1 AND instr(payload, ?) > 0').pluck()
        .get(id, id + 3, 'SLURM_ARRAY_TASK_STEP');
      assert.equal(copies, 1, 'one copy of the script for the four tasks');
    } finally {
      db.close();
    }

    // Cancel: one task, then the whole array (running and pending tasks).
    writeFileSync(join(work, 'long.sh'), '#!/bin/sh\n#TARAS --time 1\nsleep 60\n');
    const second = (JSON.parse(cli(url, 'submit', '--json', '-a', '0-5%3', 'long.sh').stdout) as { id: number }).id;
    for (let i = 0; i < 100 && jobs(url).filter((job) => job.arrayJobId === second && job.state === 'RUNNING').length < 3; i++) await sleep(100);
    const one = cli(url, 'cancel', `${second}_1`);
    assert.equal(one.code, 0, one.stderr);
    for (let i = 0; i < 100 && jobs(url).some((job) => job.id === second + 1); i++) await sleep(100);
    assert.equal((JSON.parse(cli(url, 'show', `${second}_1`, '--json').stdout) as Job).state, 'CANCELLED');
    assert.equal(jobs(url).filter((job) => job.arrayJobId === second).length, 5, 'the other five stay');
    const bad = cli(url, 'cancel', `${second}_9`);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, new RegExp(`array ${second} has no task 9 \\(its tasks: 0-5\\)`));
    const all = cli(url, 'cancel', String(second));
    assert.equal(all.code, 0, all.stderr);
    for (let i = 0; i < 100 && jobs(url).some((job) => job.arrayJobId === second); i++) await sleep(100);
    assert.deepEqual(jobs(url).filter((job) => job.arrayJobId === second), []);
    for (const task of [0, 2, 3, 4, 5]) {
      assert.equal((JSON.parse(cli(url, 'show', `${second}_${task}`, '--json').stdout) as Job).state, 'CANCELLED', `task ${task}`);
    }

    // A larger array's cancel is counted, not listed a line per task.
    const third = (JSON.parse(cli(url, 'submit', '--json', '-a', '0-29', 'long.sh').stdout) as { id: number }).id;
    for (let i = 0; i < 100 && !jobs(url).some((job) => job.arrayJobId === third && job.state === 'RUNNING'); i++) await sleep(100);
    const many = cli(url, 'cancel', String(third));
    assert.equal(many.code, 0, many.stderr);
    assert.match(many.stdout, /^30 jobs: \d+ pending cancelled, \d+ running signalled, 0 had already ended\n$/);
    for (let i = 0; i < 100 && jobs(url).some((job) => job.arrayJobId === third); i++) await sleep(100);
    assert.deepEqual(jobs(url).filter((job) => job.arrayJobId === third), []);
  });

  it('tasks that share their first task\'s script run it after the controller is killed (kill -9) and restarted', async () => {
    const dir = join(work, 'restart');
    const data = join(dir, 'data');
    mkdirSync(dir, { recursive: true });
    const listening = /listening on (http:\/\/127\.0\.0\.1:(\d+))/;
    const first = await startDaemon(taras, started, ['controller', '--data', data, '--port', '0'], listening, dir);
    const [url, port] = [first.match[1], first.match[2]];
    await startDaemon(taras, started, ['agent', '--controller', url, '--virtual', '2x2', '--data', join(data, 'agent'), '--key', join(data, 'cluster.key')], /registered 2 node/, dir);
    const run = (...args: string[]) => spawnSync(process.execPath, [taras, ...withController(args, url)], { cwd: dir, encoding: 'utf8', timeout: 30_000 });
    writeFileSync(join(dir, 'shared.sh'), '#!/bin/sh\n#TARAS --time=1\necho "shared $SLURM_ARRAY_TASK_ID"\n');
    const submitted = run('submit', '--json', '--hold', '--array=0-2', '-o', 'shared-%a.txt', 'shared.sh');
    assert.equal(submitted.status, 0, submitted.stderr);
    const { id } = JSON.parse(submitted.stdout) as { id: number };

    await killHard(first.child);
    await startDaemon(taras, started, ['controller', '--data', data, '--port', port], listening, dir);
    const released = run('release', String(id));
    assert.equal(released.status, 0, released.stderr);
    const waited = run('wait', String(id), String(id + 1), String(id + 2));
    assert.equal(waited.status, 0, waited.stdout + waited.stderr);
    for (const task of [0, 1, 2]) assert.equal(readFileSync(join(dir, `shared-${task}.txt`), 'utf8'), `shared ${task}\n`, `task ${task}`);
  });
});
