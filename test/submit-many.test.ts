// `taras submit --many FILE` (and `-`, standard input): many jobs in one call,
// one JSON line each with job.toml's keys, the command's flags applied to
// every job; one bad line refuses the whole file (file:line), nothing stored.
// A real controller (in this process, no agent: the jobs wait) and the CLI as
// a child process.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { ApiJob, ApiJobPage } from '../src/api/types.js';
import { idRanges } from '../src/cli/many.js';
import { readClusterConfig } from '../src/config/load.js';
import { startController } from '../src/controller/daemon.js';
import { createApiClient, type ApiClient } from '../src/net/client.js';
import { runAs, tokenFor } from './auth-helpers.js';
import { createTestUser, notRootReason, removeTestUsers } from './unix-users.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const work = mkdtempSync(join(tmpdir(), 'taras-many-'));
let controller: Awaited<ReturnType<typeof startController>>;
let api: ApiClient;

before(async () => {
  const file = join(work, 'cluster.toml');
  writeFileSync(file, `[cluster]\nname = "many"\npolicy = "easy"\ndata_dir = "data"\n[[nodes]]\nnames = "n1"\ncpus = 4\nmemory = "1G"\n[[partitions]]\nname = "batch"\nnodes = "ALL"\ndefault = true\n[[partitions]]\nname = "short"\nnodes = "ALL"\ndefault_time = "7"\n`);
  const parsed = await readClusterConfig(file);
  assert.ok(parsed.ok);
  controller = await startController({ config: parsed.config, configPath: file, clusterKey: null, port: 0, log: () => {} });
  api = createApiClient({ socketPath: controller.socketPath }, {});
  writeFileSync(join(work, 'a.sh'), '#!/bin/sh\n#TARAS --cpus-per-task 2\necho "$@"\n');
  writeFileSync(join(work, 'b.sh'), '#!/bin/sh\necho b\n');
});
after(async () => {
  api.close();
  await controller.close();
  rmSync(work, { recursive: true, force: true });
  removeTestUsers();
});

/** `taras ARGS` with `input` on its standard input, asynchronously (the controller runs in this process). */
function taras(args: string[], input = '', through: { controller: string; env?: Record<string, string> } = { controller: `unix:${controller.socketPath}` }): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolveRun) => {
    const child = spawn(process.execPath, [join(root, 'bin/taras.js'), 'submit', '--controller', through.controller, ...args], {
      cwd: work, env: { ...process.env, TARAS_JOB_ID: '', ...through.env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('close', (code) => resolveRun({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

const jobs = async () => (await api.get<ApiJobPage>('/jobs')).jobs;

describe('taras submit --many', () => {
  it('submits every line of a file, each as its own job.toml, its script\'s #TARAS lines and the flags on top', async () => {
    const lines = [
      '# one job a line',
      JSON.stringify({ script: 'a.sh', arguments: ['1'], time: 10, job_name: 'first' }),
      '',
      JSON.stringify({ script: 'a.sh', arguments: ['2'], time: '0:30' }),
      JSON.stringify({ script: 'b.sh', time: 5, cpus_per_task: 3 }),
    ];
    writeFileSync(join(work, 'jobs.jsonl'), `${lines.join('\n')}\n`);
    const run = await taras(['--many', 'jobs.jsonl', '--partition', 'batch', '--json']);
    assert.equal(run.code, 0, run.stderr);
    const answer = JSON.parse(run.stdout) as { line: number; id: number }[];
    assert.deepEqual(answer.map((a) => a.line), [2, 4, 5]);
    const byId = new Map((await jobs()).map((job) => [job.id, job]));
    const [first, second, third] = answer.map((a) => byId.get(a.id)!);
    assert.deepEqual([first.name, first.timeLimitSeconds, first.cpusPerTask, first.partition], ['first', 600, 2, 'batch']);
    assert.deepEqual([second.name, second.timeLimitSeconds, second.cpusPerTask], ['a.sh', 30, 2]);
    assert.deepEqual([third.name, third.timeLimitSeconds, third.cpusPerTask], ['b.sh', 300, 3]);
    const shown = await api.get<ApiJob & { events: unknown[] }>(`/jobs/${first.id}`);
    assert.equal(shown.state, 'PENDING');
  });

  it('reads standard input with -, and says the ids as ranges', async () => {
    const before = (await jobs()).length;
    const input = Array.from({ length: 30 }, (_, i) => JSON.stringify({ script: 'b.sh', arguments: [String(i)], time: 1 })).join('\n');
    const run = await taras(['--many', '-'], input);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^Submitted 30 jobs: [\d,-]+\n$/);
    assert.equal((await jobs()).length, before + 30);
  });

  it('one bad line refuses the whole file, naming file:line and the fix; nothing is stored', async () => {
    const before = (await jobs()).length;
    writeFileSync(join(work, 'bad.jsonl'), [
      JSON.stringify({ script: 'a.sh', time: 10 }),
      '{"script": "a.sh", time: 10}',
      JSON.stringify({ script: 'a.sh', time: 10, cpu_per_task: 2 }),
      JSON.stringify({ script: 'missing.sh', time: 10 }),
      JSON.stringify({ script: 'b.sh', time: 'soon' }),
      JSON.stringify({ time: 10 }),
    ].join('\n'));
    const run = await taras(['--many', 'bad.jsonl']);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /^error: bad\.jsonl:2: not JSON /m);
    assert.match(run.stderr, /^error: bad\.jsonl:3: cpu_per_task: unknown key; did you mean cpus_per_task\?/m);
    assert.match(run.stderr, /^error: bad\.jsonl:4: cannot read the script missing\.sh/m);
    assert.match(run.stderr, /^error: bad\.jsonl:5: time: got 'soon': expected minutes, /m);
    assert.match(run.stderr, /^error: bad\.jsonl:6: no "script"/m);
    assert.match(run.stderr, /nothing was submitted\n$/);
    assert.equal((await jobs()).length, before);
    const both = await taras(['--many', 'bad.jsonl', 'a.sh']);
    assert.equal(both.code, 2);
    assert.match(both.stderr, /leave out the script a\.sh/);
  });

  it('a line the cluster would refuse refuses the whole file, naming it and the lines like it; nothing is stored', async () => {
    const before = (await jobs()).length;
    writeFileSync(join(work, 'cluster-bad.jsonl'), [
      JSON.stringify({ script: 'b.sh', time: 1, job_name: 'fine' }),
      JSON.stringify({ script: 'b.sh', time: 1, partition: 'nope' }),
      JSON.stringify({ script: 'b.sh', time: 1, cpus_per_task: 9, job_name: 'wide-1' }),
      JSON.stringify({ script: 'b.sh', arguments: ['x'], time: 1, cpus_per_task: 9, job_name: 'wide-2' }),
      JSON.stringify({ script: 'b.sh', time: 1, cpus_per_task: 9, job_name: 'wide-3' }),
    ].join('\n'));
    const run = await taras(['--many', 'cluster-bad.jsonl']);
    assert.equal(run.code, 2, run.stderr);
    assert.equal(run.stdout, '');
    assert.equal(run.stderr, 'error: cluster-bad.jsonl:2: no such partition nope (partitions: batch, short)\n'
      + 'error: cluster-bad.jsonl:3: more CPUs per node than any node has: the job asks for 9 per task, the largest has 4 (and 2 more lines like it: 4-5)\n'
      + 'nothing was submitted\n');
    assert.equal((await jobs()).length, before, 'not even line 1');
  });

  it('a line is one `taras submit`: --begin and --deadline (keys, #SBATCH lines, flags) count from the submission, no time limit is the partition\'s default_time', async () => {
    writeFileSync(join(work, 'later.sh'), '#!/bin/sh\n#SBATCH --begin=now+2hours\necho later\n');
    writeFileSync(join(work, 'timed.jsonl'), [
      JSON.stringify({ script: 'b.sh', time: 5, begin: 'now+1hour', job_name: 'begin-key' }),
      JSON.stringify({ script: 'b.sh', time: 5, deadline: 'now+3hours', job_name: 'deadline-key' }),
      JSON.stringify({ script: 'later.sh', time: 5, job_name: 'begin-directive' }),
      JSON.stringify({ script: 'b.sh', hold: true, partition: 'short', job_name: 'default-time' }),
    ].join('\n'));
    const sentMs = Date.now();
    const run = await taras(['--many', 'timed.jsonl', '--json']);
    assert.equal(run.code, 0, run.stderr);
    const ids = (JSON.parse(run.stdout) as { id: number }[]).map((a) => a.id);
    const [beginKey, deadlineKey, beginDirective, defaultTime] = await Promise.all(ids.map((id) => api.get<ApiJob>(`/jobs/${id}`)));
    const hoursAfter = (iso: string | null) => Math.round((Date.parse(iso!) - sentMs) / 360_000) / 10;
    assert.deepEqual([beginKey.name, hoursAfter(beginKey.plannedStart)], ['begin-key', 1]);
    assert.match(beginKey.reason!, /^BeginTime: /);
    assert.deepEqual([deadlineKey.type, hoursAfter(deadlineKey.deadline)], ['priority', 3]);
    assert.deepEqual([beginDirective.name, hoursAfter(beginDirective.plannedStart)], ['begin-directive', 2]);
    assert.deepEqual([defaultTime.partition, defaultTime.timeLimitSeconds, defaultTime.state], ['short', 420, 'PENDING']);
    assert.match(defaultTime.reason!, /held/i);

    // The flags too, for every line.
    writeFileSync(join(work, 'plain.jsonl'), `${JSON.stringify({ script: 'b.sh', time: 5 })}\n`);
    const flagged = await taras(['--many', 'plain.jsonl', '-b', 'now+1hour', '--deadline', 'now+4hours', '--json']);
    assert.equal(flagged.code, 0, flagged.stderr);
    const job = await api.get<ApiJob>(`/jobs/${(JSON.parse(flagged.stdout) as { id: number }[])[0].id}`);
    assert.deepEqual([hoursAfter(job.plannedStart), job.type, hoursAfter(job.deadline)], [1, 'priority', 4]);

    // A partition without default_time: the controller's refusal, by file:line, and nothing is stored.
    const before = (await jobs()).length;
    writeFileSync(join(work, 'untimed.jsonl'), `${JSON.stringify({ script: 'b.sh' })}\n`);
    const untimed = await taras(['--many', 'untimed.jsonl']);
    assert.equal(untimed.code, 2);
    assert.match(untimed.stderr, /^error: untimed\.jsonl:1: the job gives no time limit and partition batch has no default_time: give one /);
    assert.equal((await jobs()).length, before);
  });

  it('a refusal midway (a per-user cap) stops the sending and names what went in, line by line', { skip: notRootReason }, async () => {
    const file = join(work, 'capped.toml');
    writeFileSync(file, `[cluster]\nname = "capped"\npolicy = "easy"\ndata_dir = "capped-data"\nmax_pending_per_user = 3\n[[nodes]]\nnames = "n1"\ncpus = 4\nmemory = "1G"\n[[partitions]]\nname = "batch"\nnodes = "ALL"\n`);
    const parsed = await readClusterConfig(file);
    assert.ok(parsed.ok);
    const capped = await startController({ config: parsed.config, configPath: file, clusterKey: null, port: 0, log: () => {} });
    try {
      const tester = createTestUser('many');
      const user = tester.name;
      // As the user, in their home: the controller's socket (in this test's 0700 folder) is out of reach, so the token says who.
      for (const [name, text] of [['b.sh', '#!/bin/sh\necho b\n'], ['five.jsonl', Array.from({ length: 5 }, (_, i) => JSON.stringify({ script: 'b.sh', time: 1, job_name: `j${i}` })).join('\n')]]) {
        writeFileSync(join(tester.home, name), text);
        chownSync(join(tester.home, name), tester.uid, tester.gid);
      }
      const ran = await runAs(tester, [join(root, 'bin/taras.js'), 'submit', '--controller', capped.url, '--many', 'five.jsonl'], { env: { TARAS_TOKEN: await tokenFor(parsed.config, user) } });
      const run = { code: ran.status, stdout: ran.stdout, stderr: ran.stderr };
      assert.equal(run.code, 1, run.stderr);
      assert.equal(run.stdout, '');
      const reader = createApiClient({ socketPath: capped.socketPath }, {});
      try {
        const stored = (await reader.get<ApiJobPage>('/jobs')).jobs;
        assert.deepEqual(stored.map((job) => [job.user, job.name]), [[user, 'j0'], [user, 'j1'], [user, 'j2']]);
        const [a, b, c] = stored.map((job) => job.id);
        assert.equal(run.stderr, `error: five.jsonl:4: user ${user} has 3 pending jobs, the most one user may have (max_pending_per_user = 3, Slurm's MaxSubmitJobs: QOSMaxSubmitJobPerUserLimit); nothing was stored `
          + `(wait for some of them to start, or cancel some (taras queue --user ${user} --state PENDING), or ask an administrator to raise max_pending_per_user in cluster.toml)\n`
          + `submitted before it (line:id): 1:${a} 2:${b} 3:${c}; the other 2 were not submitted\n`);
      } finally {
        reader.close();
      }
    } finally {
      await capped.close();
    }
  });

  it('idRanges folds runs of ids', () => {
    assert.equal(idRanges([3, 4, 5, 9, 7, 8]), '3-5,9,7-8');
    assert.equal(idRanges([1]), '1');
  });
});
