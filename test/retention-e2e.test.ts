// Retention through the real daemons: `taras controller` with keep_finished
// = "3s" and `taras agent --virtual` as processes on loopback. A job that
// ran keeps its script and the submitting shell's environment while it is
// listed (scontrol write batch_script reads it), and loses them from the
// database keep_finished after its end; the rest of it stays for sacct.
// Every process started here is stopped by its PID.

import assert from 'node:assert/strict';
import { spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { killHard, startDaemon } from './daemon-process.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const taras = join(root, 'bin/taras.js');
const work = mkdtempSync(join(tmpdir(), 'taras-retention-e2e-'));
const started: ChildProcess[] = [];

after(async () => {
  for (const child of started) await killHard(child);
  rmSync(work, { recursive: true, force: true });
});

describe('retention end to end', () => {
  it('a job that ran keeps its script and environment for keep_finished after its end, then they leave the database', async () => {
    const config = join(work, 'cluster.toml');
    writeFileSync(config, '[cluster]\nname = "rt"\ndata_dir = "data"\nkeep_finished = "8s"\n[[nodes]]\nnames = "node01"\ncpus = 1\nmemory = "1G"\n'
      + '[[partitions]]\nname = "batch"\nnodes = "ALL"\ndefault = true\n');
    const controller = await startDaemon(taras, started, ['controller', '--config', config, '--port', '0'], /listening on (http:\/\/127\.0\.0\.1:\d+)/, work);
    const url = controller.match[1];
    await startDaemon(taras, started, ['agent', '--controller', url, '--virtual', '1x1', '--data', join(work, 'data', 'agent'), '--key', join(work, 'data', 'cluster.key')], /registered 1 node/, work);
    const secret = `taras-kept-${process.pid}`;
    const run = (name: string, ...args: string[]) => spawnSync(join(root, 'bin', name), args,
      { cwd: work, encoding: 'utf8', timeout: 30_000, env: { ...process.env, TARAS_CONTROLLER: url, TARAS_TEST_SECRET: secret } });

    const submitted = run('sbatch', '-t', '1', '-J', 'kept', '--wrap', `echo ${secret}-script`);
    assert.equal(submitted.status, 0, submitted.stderr);
    const id = Number(/(\d+)\s*$/.exec(submitted.stdout)![1]);
    let state = '';
    for (let i = 0; i < 100 && state !== 'COMPLETED'; i++) {
      await sleep(100);
      state = run('sacct', '-j', String(id), '-n', '-X', '-o', 'State').stdout.trim();
    }
    assert.equal(state, 'COMPLETED');
    const endedAt = Date.now();

    // Within keep_finished: the script is there, and so is the environment.
    const script = run('scontrol', 'write', 'batch_script', String(id), '-');
    assert.equal(script.status, 0, script.stderr);
    assert.match(script.stdout, new RegExp(`echo ${secret}-script`));
    const stored = (): string => {
      const db = new Database(join(work, 'data', 'taras.db'), { readonly: true, fileMustExist: true });
      try {
        return (db.prepare('SELECT payload FROM job_events WHERE job_id = ? AND seq = 1').get(id) as { payload: string }).payload;
      } finally {
        db.close();
      }
    };
    assert.ok(stored().includes(`"TARAS_TEST_SECRET":"${secret}"`), 'the environment is kept while the job is listed');

    // keep_finished (8 s: the checks above start two Node processes) after its end, at the next second's purge: gone.
    let payload = stored();
    for (let i = 0; i < 200 && payload.includes(secret); i++) {
      await sleep(100);
      payload = stored();
    }
    assert.ok(!payload.includes(secret), `the script and environment are still stored ${Date.now() - endedAt} ms after the end was seen`);
    const db = new Database(join(work, 'data', 'taras.db'), { readonly: true, fileMustExist: true });
    const { endMs, purgedMs } = db.prepare('SELECT end_time_ms AS endMs, purged_ms AS purgedMs FROM jobs WHERE id = ?').get(id) as { endMs: number; purgedMs: number };
    db.close();
    assert.ok(purgedMs - endMs >= 8_000 && purgedMs - endMs < 8_000 + 5_000, `purged ${purgedMs - endMs} ms after its end (keep_finished: 8 s)`);
    const gone = run('scontrol', 'write', 'batch_script', String(id), '-');
    assert.equal(gone.status, 1);
    assert.match(gone.stderr, new RegExp(`^scontrol: error: job ${id}'s script was purged at .*keep_finished \\(8 s\\)`));
    assert.match(run('sacct', '-j', String(id), '-n', '-X', '-o', 'JobName,State,ExitCode').stdout, /kept +COMPLETED +0:0/);
  });
});
