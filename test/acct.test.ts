// Job history (`taras acct`, sacct's flags and formats) on a live cluster:
// `taras controller` and `taras agent --virtual` as real processes, jobs run
// as real processes; the supervisor's CPU time and peak memory reach the
// controller's `ended` event and the acct output; finished jobs stay listed
// by acct, not by the queue. Then, with real Unix users, who sees whose jobs.

import assert from 'node:assert/strict';
import { execFile, spawnSync, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { readClusterConfig } from '../src/config/load.js';
import { usageReportOf } from '../src/controller/accounting.js';
import { startController, type RunningController } from '../src/controller/daemon.js';
import { openStore } from '../src/store/store.js';
import { runAs } from './auth-helpers.js';
import { killHard, startDaemon, withController } from './daemon-process.js';
import { createTestUser, notRootReason, removeTestUsers, type TestUser } from './unix-users.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const taras = join(root, 'bin/taras.js');
const work = mkdtempSync(join(tmpdir(), 'taras-acct-'));
chmodSync(work, 0o711);
const started: ChildProcess[] = [];

after(async () => {
  for (const child of started) await killHard(child);
  rmSync(work, { recursive: true, force: true });
  removeTestUsers();
});

function cli(url: string, ...args: string[]) {
  const run = spawnSync(process.execPath, [taras, ...withController(args, url)], { cwd: work, encoding: 'utf8', timeout: 30_000 });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe('taras acct on a live cluster', () => {
  let url = '';
  const ids: Record<string, number> = {};
  const data = join(work, 'data');

  before(async () => {
    const controller = await startDaemon(taras, started, ['controller', '--data', data, '--port', '0'], /listening on (http:\/\/127\.0\.0\.1:\d+)/, work);
    url = controller.match[1];
    await startDaemon(taras, started, ['agent', '--controller', url, '--virtual', '2x2', '--data', join(data, 'agent'), '--key', join(data, 'cluster.key'), '--keep-job-dirs', '0'], /registered 2 node/, work);
    const scripts: Record<string, string> = {
      // About a second of CPU in the shell, and 64 MiB touched by a child.
      busy: '#!/bin/sh\n#TARAS --time 1\n#TARAS -J busy\ni=0; while [ $i -lt 300000 ]; do i=$((i+1)); done\n'
        + 'node -e "const b = Buffer.alloc(64 * 1024 * 1024, 1); let s = 0; for (let i = 0; i < b.length; i += 4096) s += b[i]; console.log(s)"\n',
      fails: '#!/bin/sh\n#TARAS --time 1\nexit 3\n',
      killed: '#!/bin/sh\n#TARAS --time 1\nkill -9 $$\n',
    };
    for (const [name, text] of Object.entries(scripts)) {
      writeFileSync(join(work, `${name}.sh`), text);
      const submitted = cli(url, 'submit', '--json', `${name}.sh`);
      assert.equal(submitted.code, 0, submitted.stderr);
      ids[name] = (JSON.parse(submitted.stdout) as { id: number }).id;
    }
    for (const id of Object.values(ids)) cli(url, 'wait', String(id));
  });

  it('carries CPU time (user and system) and peak memory from the supervisor to the ended event and acct', () => {
    const run = cli(url, 'acct', '-j', String(ids.busy), '-P', '-n', '-o', 'JobID,JobName,State,ExitCode,TotalCPU,UserCPU,SystemCPU,MaxRSS,NNodes,AllocCPUS');
    assert.equal(run.code, 0, run.stderr);
    const [id, name, state, exit, total, user, system, maxRss, nnodes, cpus] = run.stdout.trimEnd().split('|');
    assert.deepEqual([id, name, state, exit, nnodes, cpus], [String(ids.busy), 'busy', 'COMPLETED', '0:0', '1', '1']);
    const seconds = (text: string) => {
      const m = /^(\d\d):(\d\d)\.(\d{3})$/.exec(text);
      assert.ok(m, `sacct's MM:SS.mmm: ${text}`);
      return Number(m[1]) * 60 + Number(m[2]) + Number(m[3]) / 1000;
    };
    assert.ok(seconds(total) > 0.2, `TotalCPU ${total}`);
    assert.ok(Math.abs(seconds(user) + seconds(system) - seconds(total)) < 0.002, `${user} + ${system} = ${total}`);
    assert.ok(seconds(user) > 0.1, `UserCPU ${user}`);
    assert.match(maxRss, /^\d+K$/);
    assert.ok(Number(maxRss.slice(0, -1)) > 60 * 1024, `MaxRSS ${maxRss} holds the 64 MiB buffer`);
  });

  it('prints ExitCode as code:signal and keeps reason, planned start and times', () => {
    const run = cli(url, 'acct', '-j', `${ids.fails},${ids.killed}`, '-p', '-o', 'JobID,State,ExitCode,Reason,Submit,Eligible,Start,End,PlannedStart');
    assert.equal(run.code, 0, run.stderr);
    const lines = run.stdout.trimEnd().split('\n');
    assert.equal(lines[0], 'JobID|State|ExitCode|Reason|Submit|Eligible|Start|End|PlannedStart|');
    const [fails, killed] = lines.slice(1).map((line) => line.split('|'));
    assert.deepEqual(fails.slice(0, 4), [String(ids.fails), 'FAILED', '3:0', 'exit code 3']);
    assert.deepEqual(killed.slice(0, 4), [String(ids.killed), 'FAILED', '0:9', 'killed by SIGKILL']);
    for (const time of fails.slice(4, 9)) assert.match(time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/);
    assert.equal(fails[9], '', 'no | after the trailing one');
  });

  it("prints sacct's default columns and layout, and finished jobs leave the queue but not acct", () => {
    const run = cli(url, 'acct');
    assert.equal(run.code, 0, run.stderr);
    const lines = run.stdout.split('\n');
    assert.equal(lines[0], 'JobID           JobName  Partition    Account  AllocCPUS      State ExitCode ');
    assert.equal(lines[1], '------------ ---------- ---------- ---------- ---------- ---------- -------- ');
    assert.equal(lines[2], `${String(ids.busy).padEnd(12)}       busy      batch                     1  COMPLETED      0:0 `);
    assert.equal(lines.filter((line) => /^\d/.test(line)).length, 3);
    const states = cli(url, 'acct', '-s', 'f', '-n', '-X', '-o', 'JobID%-5,State');
    assert.equal(states.stdout, `${String(ids.fails).padEnd(5)}     FAILED \n${String(ids.killed).padEnd(5)}     FAILED \n`);
    const json = JSON.parse(cli(url, 'acct', '-j', String(ids.busy), '--json', '-o', 'JobID,State').stdout) as { jobs: { JobID: string; State: string; job: { cpuSeconds: number } }[] };
    assert.deepEqual([json.jobs[0].JobID, json.jobs[0].State], [String(ids.busy), 'COMPLETED']);
    assert.ok(json.jobs[0].job.cpuSeconds > 0);
    assert.equal(cli(url, 'acct', '--name', 'busy', '-r', 'batch', '-b', '-P', '-n').stdout, `${ids.busy}|COMPLETED|0:0\n`);
    assert.equal(cli(url, 'acct', '-r', 'other', '-n').stdout, '');
    assert.match(cli(url, 'acct', '-e').stdout, /^JobID +JobIDRaw +JobName +Partition\n/);
    assert.equal(cli(url, 'acct', '-l', '-j', String(ids.busy), '-P', '-n').stdout.split('|').length, 23);
    const csv = cli(url, 'acct', '-j', String(ids.fails), '--csv', '-o', 'JobID,Reason');
    assert.equal(csv.stdout, `JobID,Reason\n${ids.fails},exit code 3\n`);
    // Nothing existed a year ago; an end before the start is refused.
    assert.deepEqual(cli(url, 'acct', '-n', '-S', 'now-401days', '-E', 'now-400days'), { code: 0, stdout: '', stderr: '' });
    assert.match(cli(url, 'acct', '-E', 'now-400days').stderr, /--endtime 'now-400days' is before --starttime 'midnight'; give an end after the start/);
    const bad = cli(url, 'acct', '-S', 'yesterdayish');
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--starttime 'yesterdayish': not a time sacct reads; give HH:MM/);
    assert.match(cli(url, 'acct', '-o', 'JobID,Bogus').stderr, /'Bogus' is not a field Taras knows/);
    assert.match(cli(url, 'acct', '-s', 'XX').stderr, /'XX' is not a job state/);
  });

  it('taras report: usage per user over the period, a bar chart, and --json', () => {
    const report = JSON.parse(cli(url, 'report', '-S', 'now-1hours', '--json').stdout) as import('../src/api/types.js').ApiUsageReport;
    assert.equal(report.cpuSecondsAvailable, 16 * 8 * 3600, "the default cluster's 16 nodes of 8 CPUs for an hour");
    assert.equal(report.users.length, 1);
    const [mine] = report.users;
    assert.deepEqual([mine.user, mine.jobs], ['root', 3]);
    assert.ok(mine.allocCpuSeconds > 0.2 && mine.allocCpuSeconds < 60, `allocated ${mine.allocCpuSeconds} CPU-s`);
    assert.ok(mine.usedCpuSeconds > 0.2, `used ${mine.usedCpuSeconds}`);
    assert.ok(mine.meanWaitSeconds !== null && mine.meanWaitSeconds >= 0 && mine.meanWaitSeconds < 30);
    assert.equal(mine.share, mine.allocCpuSeconds / report.cpuSecondsAvailable);
    const text = cli(url, 'report', '-S', 'now-1hours').stdout;
    assert.match(text, /USER\s+JOBS\s+CPU-HOURS\s+USED\s+MEAN WAIT\s+SHARE/);
    assert.match(text, /\nroot\s+3\s+0\.0\d/);
    assert.match(text, /Share of the machine:\nroot \.{10,}\s+0\.\d %/);
    assert.match(cli(url, 'report', '-S', 'now-401days', '-E', 'now-400days').stdout, /No job ran in this period/);
  });

  it("removes a job's directory on its agent once the controller has its end; the output stays", async () => {
    const jobs = join(data, 'agent', 'jobs');
    for (let tries = 0; tries < 50 && readdirSync(jobs).length > 0; tries++) await sleep(100);
    assert.deepEqual(readdirSync(jobs), [], 'job directories (script, status, supervisor log) are gone');
    assert.match(readFileSync(join(work, `taras-${ids.busy}.out`), 'utf8'), /^\d+\n$/, "the job's output is the user's and stays");
  });

  it('stores the usage in the ended event (and the job row)', () => {
    const store = openStore(join(data, 'taras.db'), { durability: 'process' });
    try {
      const ended = store.events(ids.busy as never).find((event) => event.event.type === 'ended')!.event;
      assert.equal(ended.type, 'ended');
      if (ended.type !== 'ended') return;
      assert.ok((ended.usage?.cpuSeconds ?? 0) > 0.2);
      assert.ok((ended.usage?.maxRssKiB ?? 0) > 60 * 1024);
      const killed = store.events(ids.killed as never).find((event) => event.event.type === 'ended')!.event;
      assert.equal(killed.type === 'ended' && killed.signal, 'SIGKILL');
      assert.deepEqual(store.job(ids.busy as never)?.usage, ended.usage);
    } finally {
      store.close();
    }
  });
});

describe('GET /acct?format=rows: the rows as SQLite writes them', () => {
  it('carries the same jobs and values as the objects, in id order, pages with a cursor, and the CLI reads its columns', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'taras-acct-rows-'));
    const store = openStore(join(dir, 'taras.db'), { durability: 'process' });
    try {
      const ids = store.submitMany(Array.from({ length: 7 }, (_, i) => ({
        user: i % 2 === 0 ? 'ada' : 'bob', name: `j"${i}\u00e9`, partition: 'batch', scriptPath: '/x.sh', script: '#!/bin/sh\n', request: { timeLimitSeconds: 60 },
      })), 1_000);
      store.appendMany(ids.slice(0, 5).map((jobId) => ({ jobId, event: { type: 'started' as const, nodes: ['n1', 'n2'] } })), 2_000);
      store.appendMany(ids.slice(0, 4).map((jobId, i) => ({ jobId, event: { type: 'ended' as const, state: 'COMPLETED' as const, exitCode: i, usage: { cpuSeconds: 1.5, userCpuSeconds: 1, systemCpuSeconds: 0.5, maxRssKiB: 10 } } })), 3_000);
      const { ACCOUNTING_FIELDS } = await import('../src/store/rows.js');
      const query = { fromMs: 0, toMs: 10_000 };
      const objects = store.accounting(query);
      const page = store.accountingJson(query);
      const rows = JSON.parse(page.json.toString('utf8')) as unknown[][];
      assert.equal(page.count, 7);
      assert.deepEqual(rows.map((row) => Object.fromEntries(ACCOUNTING_FIELDS.map((field, i) => [field, row[i]]))), objects.map((o) => ({ ...o })));
      const first = store.accountingJson({ ...query, limit: 3 });
      const second = store.accountingJson({ ...query, limit: 3, afterId: first.lastId! });
      assert.deepEqual([...JSON.parse(first.json.toString('utf8')), ...JSON.parse(second.json.toString('utf8'))].map((row: unknown[]) => row[0]), objects.slice(0, 6).map((o) => o.id));
      const { ACCT_FIELDS } = await import('../src/cli/acct.js');
      assert.deepEqual(ACCT_FIELDS, ACCOUNTING_FIELDS);
      // A subset: the id and the fields asked for, in the fields' order.
      const some = JSON.parse(store.accountingJson(query, ['id', 'name', 'nodes']).json.toString('utf8')) as unknown[][];
      assert.deepEqual(some, objects.map((o) => [o.id, o.name, o.nodes]));
    } finally {
      store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('sacct fields and the job fields they read', () => {
  it('every column reads only the fields it declares (the controller sends no others)', async () => {
    const { FIELDS } = await import('../src/cli/acct-format.js');
    const full = [
      { id: 7, user: 'ada', name: 'j', partition: 'batch', state: 'COMPLETED', reason: 'r', submitMs: 1e12, eligibleMs: 1e12 + 5, startMs: 1e12 + 60_000, endMs: 1e12 + 7_260_000,
        plannedStartMs: 1e12 + 1000, nodes: ['n1', 'n2'], allocCpus: 4, timeLimitSeconds: 7200, exitCode: 2, exitSignal: 'SIGKILL', cpuSeconds: 3.5, userCpuSeconds: 3,
        systemCpuSeconds: 0.5, maxRssKiB: 100, requeueCount: 1, arrayJobId: 5, arrayTaskId: 2 },
      { id: 8, user: 'bob', name: 'k', partition: 'p', state: 'PENDING', reason: null, submitMs: 1e12, eligibleMs: 1e12, startMs: null, endMs: null,
        plannedStartMs: null, nodes: [], allocCpus: null, timeLimitSeconds: null, exitCode: null, exitSignal: null, cpuSeconds: null, userCpuSeconds: null,
        systemCpuSeconds: null, maxRssKiB: null, requeueCount: 0, arrayJobId: null, arrayTaskId: null },
    ] as unknown as import('../src/api/types.js').ApiAcctJob[];
    for (const field of FIELDS) {
      for (const job of full) {
        const only = Object.fromEntries(field.uses.map((name) => [name, job[name]])) as unknown as import('../src/api/types.js').ApiAcctJob;
        assert.equal(field.value(only, 1e12 + 9_000_000), field.value(job, 1e12 + 9_000_000), `${field.name} reads more than ${field.uses.join(', ')}`);
      }
    }
  });
});

describe('sacct output of users\' own text', () => {
  it('shows control characters in names and reasons as ?, in every layout (red team: a name with a newline and ESC[2J broke rows and cleared the screen)', async () => {
    const { parseFormat, renderAcct } = await import('../src/cli/acct-format.js');
    const job = { id: 7, user: 'ada', name: 'evil\n\u001b[2J\u001b[31mX', partition: 'batch', state: 'FAILED', reason: 'exit\r\ncode 3', submitMs: 1e12, eligibleMs: 1e12,
      startMs: 1e12, endMs: 1e12 + 1000, plannedStartMs: null, nodes: ['n1'], allocCpus: 1, timeLimitSeconds: 60, exitCode: 3, exitSignal: null, cpuSeconds: null,
      userCpuSeconds: null, systemCpuSeconds: null, maxRssKiB: null, requeueCount: 0 } as unknown as import('../src/api/types.js').ApiAcctJob;
    const parsed = parseFormat('JobID,JobName%20,Reason%20');
    assert.ok(parsed.ok);
    for (const layout of ['table', 'parsable', 'csv'] as const) {
      const text = renderAcct([job], parsed.columns, layout, true, 1e12 + 5000);
      assert.equal(text.split('\n').length, 2, `${layout}: one row and the final newline: ${JSON.stringify(text)}`);
      assert.doesNotMatch(text, /\u001b|\r/, layout);
      assert.match(text, /evil\?\?\[2J\?\[31mX/, layout);
    }
  });
});

describe('sacct columns with wide names', () => {
  it('cuts to the column\'s terminal columns (wide characters and emoji take two), marks the cut with +, and splits no character', async () => {
    const { parseFormat, renderAcct } = await import('../src/cli/acct-format.js');
    const job = (id: number, name: string) => ({ id, user: 'ada', name, partition: 'batch', state: 'COMPLETED', reason: null, submitMs: 1e12, eligibleMs: 1e12,
      startMs: 1e12, endMs: 1e12 + 1000, plannedStartMs: null, nodes: ['n1'], allocCpus: 1, timeLimitSeconds: 60, exitCode: 0, exitSignal: null, cpuSeconds: null,
      userCpuSeconds: null, systemCpuSeconds: null, maxRssKiB: null, requeueCount: 0 }) as unknown as import('../src/api/types.js').ApiAcctJob;
    const parsed = parseFormat('JobID%3,JobName%8,JobName%-6,State');
    assert.ok(parsed.ok);
    const text = renderAcct([job(1, '日本語のジョブ'), job(2, '🧪🧪🧪🧪🧪'), job(3, '👩‍🔬👩‍🔬'), job(4, 'e\u0301cole-e\u0301te\u0301'), job(5, '🇩🇪🇫🇷🇮🇹🇪🇸')],
      parsed.columns, 'table', true, 1e12 + 5000);
    assert.equal(text, [
      '  1  日本語+ 日本+   COMPLETED ',
      '  2  🧪🧪🧪+ 🧪🧪+   COMPLETED ',
      '  3     👩‍🔬👩‍🔬 👩‍🔬👩‍🔬    COMPLETED ',
      '  4 e\u0301cole-e\u0301+ e\u0301cole+  COMPLETED ',
      '  5 🇩🇪🇫🇷🇮🇹🇪🇸 🇩🇪🇫🇷+   COMPLETED ',
      '',
    ].join('\n'));
  });
});

describe('sacct rows of job arrays', () => {
  type Row = { id: number; state: string; arrayJobId: number | null; arrayTaskId: number | null; reason?: string | null; requeueCount?: number };
  const row = (id: number, state: string, arrayJobId: number | null, arrayTaskId: number | null, more: Partial<Row> = {}) =>
    ({ id, state, arrayJobId, arrayTaskId, reason: null, requeueCount: 0, ...more }) as unknown as import('../src/api/types.js').ApiAcctJob;
  const printer = async () => {
    const { parseFormat, renderAcct } = await import('../src/cli/acct-format.js');
    const parsed = parseFormat('JobID,JobIDRaw,State');
    assert.ok(parsed.ok);
    return (rows: readonly import('../src/cli/acct-format.js').AcctRow[]) => renderAcct(rows, parsed.columns, 'parsable2', true, 0).split('\n').filter(Boolean);
  };

  it('folds each array\'s pending tasks onto one row after the array\'s other rows, JobIDRaw the array\'s id (12_[2-3,5%2]); running, ended and lone pending tasks keep their rows', async () => {
    const { foldPendingTasks } = await import('../src/cli/acct-format.js');
    const print = await printer();
    const jobs = [row(10, 'COMPLETED', 10, 0), row(11, 'RUNNING', 10, 1), row(12, 'PENDING', 10, 2), row(13, 'PENDING', 10, 3), row(14, 'FAILED', 10, 4),
      row(15, 'PENDING', 10, 5), row(16, 'PENDING', null, null), row(17, 'PENDING', 17, 0), row(18, 'COMPLETED', 17, 1), row(19, 'PENDING', 19, 7), row(20, 'PENDING', 19, 9)];
    assert.deepEqual(print(foldPendingTasks(jobs, { 10: 2 })), ['10_0|10|COMPLETED', '10_1|11|RUNNING', '10_4|14|FAILED', '10_[2-3,5%2]|10|PENDING',
      '16|16|PENDING', '17_0|17|PENDING', '17_1|18|COMPLETED', '19_[7,9]|19|PENDING']);
    assert.equal(foldPendingTasks(jobs.slice(0, 2)).length, 2, 'nothing to fold: the same rows');
    assert.equal(print(jobs).length, jobs.length, 'unfolded (--array): a row per task');
  });

  it('a requeued task and a task held on its own get rows of their own; the whole array held stays one row', async () => {
    const { foldPendingTasks } = await import('../src/cli/acct-format.js');
    const print = await printer();
    const held = { reason: 'JobHeldUser' };
    const jobs = [row(30, 'RUNNING', 30, 0), row(31, 'PENDING', 30, 1, { requeueCount: 1 }), row(32, 'PENDING', 30, 2, held), row(33, 'PENDING', 30, 3, { reason: 'JobArrayTaskLimit' }),
      row(34, 'PENDING', 30, 4, { reason: 'Priority' }), row(35, 'PENDING', 30, 5)];
    assert.deepEqual(print(foldPendingTasks(jobs)), ['30_0|30|RUNNING', '30_1|31|PENDING', '30_2|32|PENDING', '30_[3-5]|30|PENDING']);
    const allHeld = [row(40, 'PENDING', 40, 0, held), row(41, 'PENDING', 40, 1, { reason: 'JobHeldAdmin' }), row(42, 'PENDING', 40, 2, held)];
    assert.deepEqual(print(foldPendingTasks(allHeld)), ['40_[0-2]|40|PENDING']);
    // Held on its own and the array's only other pending task: both rows of their own.
    assert.deepEqual(print(foldPendingTasks([row(50, 'PENDING', 50, 0, held), row(51, 'PENDING', 50, 1), row(52, 'COMPLETED', 50, 2)])),
      ['50_0|50|PENDING', '50_1|51|PENDING', '50_2|52|COMPLETED']);
  });

  it('task ids as Slurm prints a meta record\'s: a step range from 6 evenly spaced ids spanning more than 10, cut at SLURM_BITSTR_LEN with ...', async () => {
    const { bitstrLenOf, formatTaskIds, slurmTaskString } = await import('../src/jobspec/array.js');
    const range = (from: number, to: number, step = 1) => Array.from({ length: Math.floor((to - from) / step) + 1 }, (_, i) => from + i * step);
    assert.equal(slurmTaskString(range(1, 21, 2), undefined), '1-21:2');
    assert.equal(slurmTaskString(range(1, 21, 2), 4), '1-21:2%4');
    assert.equal(slurmTaskString(range(0, 100, 20), undefined), '0-100:20');
    assert.equal(slurmTaskString(range(1, 11, 2), undefined), '1,3,5,7,9,11', 'span 10: not more than 10');
    assert.equal(slurmTaskString(range(1, 17, 4), undefined), '1,5,9,13,17', 'five ids: not more than five');
    assert.equal(slurmTaskString([...range(0, 20, 2), 23], undefined), '0,2,4,6,8,10,12,14,16,18,20,23', 'gaps differ');
    assert.equal(slurmTaskString([0, 1, ...range(4, 30, 2)], undefined), '0-1,4,6,8,10,12,14,16,18,20,22,24,26,28,30', 'the first two adjacent');
    assert.equal(slurmTaskString(range(4, 15), 2), '4-15%2');
    assert.equal(slurmTaskString([3], undefined), '3');
    assert.equal(slurmTaskString([2, 4, 5], 0), '2,4-5', 'throttle 0: none');
    // SLURM_BITSTR_LEN (default 64): a list of 62 characters or more is cut to 60 and ...
    const long = range(100, 400, 3).concat(1000);
    const full = formatTaskIds(long);
    assert.equal(slurmTaskString(long, undefined), `${full.slice(0, 60)}...`);
    assert.equal(slurmTaskString(long, 5, 16), `${full.slice(0, 12)}...%5`);
    assert.equal(slurmTaskString(long, undefined, 0), full, '0: the whole list');
    const evens = range(0, 60, 4).concat(61);
    assert.equal(formatTaskIds(evens).length, 47);
    assert.equal(slurmTaskString(evens, undefined, 50), formatTaskIds(evens), '47 characters in 50: whole');
    assert.equal(slurmTaskString(evens, undefined, 49), `${formatTaskIds(evens).slice(0, 45)}...`, '47 in 49: cut (as Slurm marks a near-full buffer)');
    assert.deepEqual([undefined, '', 'x', '-5', '0', '12', ' 20abc', '99999'].map(bitstrLenOf), [64, 0, 0, 64, 0, 12, 20, 4096]);
  });

  it('--json shows the same rows: a folded row has tasks, and its job is the first task\'s record', async () => {
    const { acctJson, foldPendingTasks, parseFormat } = await import('../src/cli/acct-format.js');
    const parsed = parseFormat('JobID,JobIDRaw');
    assert.ok(parsed.ok);
    const jobs = [row(60, 'RUNNING', 60, 0), row(61, 'PENDING', 60, 1), row(62, 'PENDING', 60, 2)];
    assert.deepEqual(acctJson(foldPendingTasks(jobs, { 60: 1 }), parsed.columns, 0), {
      jobs: [{ JobID: '60_0', JobIDRaw: '60', job: jobs[0] }, { JobID: '60_[1-2%1]', JobIDRaw: '60', job: jobs[1], tasks: [1, 2] }],
    });
  });
});

describe('usage report (taras report)', () => {
  it('counts allocated CPU time inside the period only, waits of jobs started in it, and each user\'s share', () => {
    const folder = mkdtempSync(join(tmpdir(), 'taras-report-'));
    const store = openStore(join(folder, 'jobs.db'));
    try {
      const job = (user: string, cpus: number, submitMs: number, startMs: number | null, endMs: number | null): void => {
        const [id] = store.submitMany([{ user, name: 'j', partition: 'batch', scriptPath: '/tmp/j.sh', script: '#!/bin/sh\n', request: { nodes: { min: 1 }, ntasks: cpus, cpusPerTask: 1, timeLimitSeconds: 3600 } }], submitMs);
        if (startMs !== null) store.append(id, { type: 'started', nodes: ['n1'] }, startMs);
        if (endMs !== null) store.append(id, { type: 'ended', state: 'COMPLETED', exitCode: 0, usage: { cpuSeconds: 10, userCpuSeconds: 9, systemCpuSeconds: 1, maxRssKiB: 1 } }, endMs);
      };
      job('ada', 2, 500_000, 900_000, 1_500_000); // 500 s inside [1000 s, 2000 s], started before it
      job('ada', 2, 1_000_000, 1_100_000, 1_300_000); // all 200 s inside, waited 100 s
      job('bob', 4, 1_500_000, 1_800_000, null); // running: 200 s to the period's end
      job('bob', 1, 1_500_000, null, null); // pending
      job('cy', 1, 100_000, 200_000, 900_000); // ended before the period
      job('cy', 1, 2_100_000, 2_200_000, null); // submitted after it
      const report = usageReportOf(store.usageTotals(1_000_000, 2_000_000, 5_000_000), 1_000_000, 2_000_000, 8);
      assert.equal(report.cpuSecondsAvailable, 8000);
      assert.deepEqual(report.users, [
        { user: 'ada', jobs: 2, allocCpuSeconds: 2 * 500 + 2 * 200, usedCpuSeconds: 20, meanWaitSeconds: 100, share: 1400 / 8000 },
        { user: 'bob', jobs: 1, allocCpuSeconds: 4 * 200, usedCpuSeconds: 0, meanWaitSeconds: 300, share: 800 / 8000 },
      ]);
      // A user's own line only: their sums, the same.
      assert.deepEqual(usageReportOf(store.usageTotals(1_000_000, 2_000_000, 5_000_000, 'bob'), 1_000_000, 2_000_000, 8).users, [report.users[1]]);
      // A running job counts to now when now is inside the period.
      assert.equal(usageReportOf(store.usageTotals(1_000_000, 2_000_000, 1_900_000, 'bob'), 1_000_000, 2_000_000, 8).users[0].allocCpuSeconds, 4 * 100);
    } finally {
      store.close();
      rmSync(folder, { recursive: true, force: true });
    }
  });
});

describe('who sees whose history (PrivateData=jobs)', { skip: notRootReason }, () => {
  let controller: RunningController;
  let alice: TestUser;
  let bob: TestUser;
  let aliceJob = 0;
  const as = (user: TestUser, ...args: string[]) => runAs(user, [taras, ...withController(args, `unix:${controller.socketPath}`)]);

  before(async () => {
    alice = createTestUser('alice');
    bob = createTestUser('bob');
    const file = join(work, 'cluster.toml');
    writeFileSync(file, `[cluster]\nname = "acct"\ndata_dir = "authz-data"\n[[nodes]]\nnames = "n[1-2]"\ncpus = 2\nmemory = "1G"\n[[partitions]]\nname = "batch"\nnodes = "ALL"\n`);
    const parsed = await readClusterConfig(file);
    assert.ok(parsed.ok);
    controller = await startController({ config: parsed.config, configPath: file, clusterKey: null, port: 0, log: () => {} });
    chmodSync(parsed.config.dataDir, 0o711);
    writeFileSync(join(alice.home, 'a.sh'), '#!/bin/sh\n#TARAS --time 5\ntrue\n');
    spawnSync('chown', [alice.name, join(alice.home, 'a.sh')]);
    const submitted = await as(alice, 'submit', '--json', 'a.sh');
    assert.equal(submitted.status, 0, submitted.stderr);
    aliceJob = JSON.parse(submitted.stdout).id;
  });
  after(async () => {
    await controller?.close();
  });

  it('a user sees their own jobs, is refused another user\'s, and -a shows them only theirs; root sees all', async () => {
    // (An administrator other than root sees their own by default and everyone's with -a or -u, as sacct's operators.)
    const mine = await as(alice, 'acct', '-P', '-n', '-o', 'JobID,User,State,AllocCPUS');
    assert.equal(mine.stdout, `${aliceJob}|${alice.name}|PENDING|0\n`);
    assert.equal((await as(bob, 'acct', '-P', '-n')).stdout, '');
    assert.equal((await as(bob, 'acct', '-a', '-P', '-n')).stdout, '');
    assert.equal((await as(bob, 'acct', '-j', String(aliceJob), '-P', '-n')).stdout, '');
    const refused = await as(bob, 'acct', '-u', alice.name);
    assert.equal(refused.status, 1);
    assert.match(refused.stderr, new RegExp(`only administrators see other users' jobs \\(${alice.name}\\); you are ${bob.name}`));
    // Root, without blocking this process (the controller runs in it).
    const asRoot = (...args: string[]) => promisify(execFile)(process.execPath, [taras, ...withController(args, `unix:${controller.socketPath}`)], { cwd: work });
    assert.equal((await asRoot('acct', '-a', '-P', '-n', '-o', 'JobID,User')).stdout, `${aliceJob}|${alice.name}\n`);
    assert.equal((await asRoot('acct', '-u', alice.name, '-P', '-n', '-o', 'JobID')).stdout, `${aliceJob}\n`);
    assert.equal((await asRoot('acct', '-P', '-n', '-o', 'JobID')).stdout, `${aliceJob}\n`, 'root sees every user\'s jobs by default, as with sacct');
  });
});
