// Slurm's command names (bin/squeue, bin/sinfo, bin/scancel, ...) against a
// real controller and agent, their output parsed the way scripts parse
// Slurm's: fixed columns from the header line, `-h -o "%i %t"` fields.
// Every process started here is stopped by its PID.

import assert from 'node:assert/strict';
import { spawnSync, type ChildProcess } from 'node:child_process';
import { accessSync, chmodSync, constants, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runAs } from './auth-helpers.js';
import { startDaemon } from './daemon-process.js';
import { createTestUser, notRootReason, removeTestUsers } from './unix-users.js';
import { parseFormat, pad, parseJobStates, slurmDuration, slurmTime } from '../src/cli/slurm/format.js';
import { renderSqueue, type SqJob } from '../src/cli/slurm/squeue.js';
import { showJob, updateOutcomeLines } from '../src/cli/slurm/scontrol.js';
import type { ApiJob } from '../src/api/types.js';
import { eventually } from './poll.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const work = mkdtempSync(join(tmpdir(), 'taras-slurm-'));
const elsewhere = join(work, 'elsewhere');
mkdirSync(elsewhere);
const started: ChildProcess[] = [];
const SLURM = ['sbatch', 'squeue', 'scancel', 'sinfo', 'sacct', 'scontrol', 'srun', 'salloc'];

after(async () => {
  if (!notRootReason) removeTestUsers();
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await new Promise((resolve) => setTimeout(resolve, 200));
  rmSync(work, { recursive: true, force: true });
});

const daemon = async (args: string[], ready: RegExp): Promise<RegExpMatchArray> =>
  (await startDaemon(join(root, 'bin/taras.js'), started, args, ready, work)).match;

let url = '';
/** Runs bin/NAME (the installed launcher, through sh) from a folder that is not the checkout. */
function slurm(name: string, ...args: string[]) {
  const run = spawnSync(join(root, 'bin', name), args, { cwd: elsewhere, encoding: 'utf8', timeout: 30_000, env: { ...process.env, TARAS_CONTROLLER: url } });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** Rows of a Slurm table cut at the columns its header gives (each column ends where the next header word's field ends). */
function columns(text: string): Record<string, string>[] {
  const [header, ...rows] = text.split('\n').filter((line) => line !== '');
  // Right-justified headers end at the column's end; the last (left-justified) runs to the end of the line.
  const names = [...header.matchAll(/\S+/g)].map((m) => ({ name: m[0], end: m.index! + m[0].length }));
  return rows.map((row) => {
    const record: Record<string, string> = {};
    let start = 0;
    names.forEach(({ name, end }, i) => {
      const stop = i === names.length - 1 ? row.length : end;
      record[name] = row.slice(start, stop).trim();
      start = stop;
    });
    return record;
  });
}

describe('Slurm formats', () => {
  it('prints durations, widths and states as Slurm does', () => {
    assert.deepEqual([0, 59, 61, 3600, 3661, 86_400 + 3723, -1].map(slurmDuration), ['0:00', '0:59', '1:01', '1:00:00', '1:01:01', '1-01:02:03', 'INVALID']);
    assert.equal(pad('42', 6, true), '    42');
    assert.equal(pad('averylongname', 8, true), 'averylon');
    assert.equal(pad('ab', 4, false), 'ab  ');
    assert.equal(pad('node[01-04]', 3, false, false), 'node[01-04]');
    // Widths are terminal columns: wide characters and emoji take two, and a cut never splits one (it split surrogate pairs).
    assert.equal(pad('日本語のジョブ', 8, true), '日本語の');
    assert.equal(pad('日本語のジョブ', 7, false), '日本語 ');
    assert.equal(pad('🧪🧪🧪', 5, true), ' 🧪🧪');
    assert.equal(pad('👩‍🔬👩‍🔬👩‍🔬', 5, false), '👩‍🔬👩‍🔬 ');
    assert.equal(pad('🇩🇪lab', 8, true), '   🇩🇪lab');
    assert.equal(pad('e\u0301cole-e\u0301te\u0301', 8, true), 'e\u0301cole-e\u0301t');
    const format = parseFormat('%.18i %-8j|%t', new Set(['i', 'j', 't']), 'squeue');
    assert.deepEqual(format.fields, [{ letter: 'i', width: 18, right: true, suffix: ' ' }, { letter: 'j', width: 8, right: false, suffix: '|' }, { letter: 't', width: 0, right: false, suffix: '' }]);
    assert.throws(() => parseFormat('%i %K', new Set(['i']), 'squeue'), /%K is not supported/);
    assert.deepEqual(parseJobStates('pd,R,running,CA', 'squeue'), ['PENDING', 'RUNNING', 'CANCELLED']);
    assert.throws(() => parseJobStates('PD,WAITING', 'squeue'), /invalid job state specified: WAITING/);
    assert.equal(slurmTime('2026-11-23T22:50:42Z', 'UTC'), '2026-11-23T22:50:42');
    assert.equal(slurmTime(null), 'N/A');
  });

  it('squeue and scontrol show job carry no terminal escape or line break from what a user wrote (red team: another user\'s screen cleared)', () => {
    const name = 'x\u001b]0;PWNED\u0007\u001b[2J\nroot   RUNNING';
    const job: SqJob = {
      id: 7, label: null, name, user: 'mallory', state: 'PENDING', partition: 'batch', nodes: '', nodeCount: 1, startMs: null, plannedMs: null, endMs: null,
      predictedEndMs: null, timeLimitSeconds: 60, submitMs: Date.UTC(2026, 10, 27), cpus: 1, workingDir: '/tmp/\u001b[31m', memoryMiB: null, reason: 'waits \u001b[2J',
    };
    const text = renderSqueue([job], null, { nowMs: Date.UTC(2026, 10, 27, 1), timeZone: 'UTC', format: '%i|%j|%u|%Z|%r|%R' });
    assert.doesNotMatch(text, /[\u0000-\u0009\u000b-\u001f\u007f]/, 'no control character but the line ends');
    assert.equal(text.split('\n').length, 3, 'a header, one line, the last newline');
    const shown = showJob({ id: 7, name, user: 'mallory', state: 'PENDING', reason: null, partition: 'batch', nodes: [], nodeCount: 1, ntasks: 1, cpusPerTask: 1,
      memoryMiB: null, workingDir: '/tmp', stdoutPath: null, stderrPath: null, timeLimitSeconds: 60, startTime: null, endTime: null, plannedStart: null,
      predictedEnd: null, submitTime: '2026-11-27T00:00:00Z', deadline: null, requeue: false, exitCode: null } as unknown as ApiJob, Date.UTC(2026, 10, 27, 1), '');
    assert.doesNotMatch(shown, /[\u0000-\u0009\u000b-\u001f\u007f]/);
    assert.match(shown, /^JobId=7 JobName=x\?\]0;PWNED\?\?\[2J\?root   RUNNING$/m);
  });

  it('squeue keeps its columns aligned with wide names: each cut to the field\'s columns, whole characters only', () => {
    const sq = (id: number, name: string): SqJob => ({
      id, label: null, name, user: 'ada', state: 'PENDING', partition: 'batch', nodes: '', nodeCount: 1, startMs: null, plannedMs: null, endMs: null,
      predictedEndMs: null, timeLimitSeconds: 60, submitMs: Date.UTC(2026, 10, 27), cpus: 1, workingDir: '/tmp', memoryMiB: null, reason: null,
    });
    const jobs = [sq(1, '日本語のジョブ名前'), sq(2, '🧪🧪🧪🧪🧪'), sq(3, '👩‍🔬👩‍🔬👩‍🔬👩‍🔬👩‍🔬'), sq(4, '🇩🇪🇫🇷🇮🇹🇪🇸🇳🇱'), sq(5, 'plain-ascii-name')];
    const text = renderSqueue(jobs, null, { nowMs: Date.UTC(2026, 10, 27, 1), timeZone: 'UTC', format: '%.3i %.8j|%-7j|%u' });
    assert.equal(text, [
      'JOB     NAME|NAME   |USER',
      '  1 日本語の|日本語 |ada',
      '  2 🧪🧪🧪🧪|🧪🧪🧪 |ada',
      '  3 👩‍🔬👩‍🔬👩‍🔬👩‍🔬|👩‍🔬👩‍🔬👩‍🔬 |ada',
      '  4 🇩🇪🇫🇷🇮🇹🇪🇸|🇩🇪🇫🇷🇮🇹 |ada',
      '  5 plain-as|plain-a|ada',
      '',
    ].join('\n'));
  });

  it('installs every Slurm name as an executable launcher in package.json bin', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { bin: Record<string, string> };
    for (const name of SLURM) {
      assert.equal(pkg.bin[name], `bin/${name}`);
      accessSync(join(root, 'bin', name), constants.X_OK);
    }
    // As npm links it (node_modules/.bin/squeue -> ../taras/bin/squeue), run from elsewhere.
    const link = join(work, 'linkbin');
    mkdirSync(link);
    symlinkSync(join(root, 'bin', 'squeue'), join(link, 'squeue'));
    const help = spawnSync(join(link, 'squeue'), ['--help'], { cwd: elsewhere, encoding: 'utf8' });
    assert.equal(help.status, 0, help.stderr);
    assert.match(help.stdout, /^Usage: squeue /);
    assert.match(help.stdout, /--noheader/);
    // sbatch, srun, salloc are taras submit, run, alloc; sacct is taras acct, or says it is missing.
    for (const [name, command] of [['sbatch', 'submit'], ['srun', 'run'], ['salloc', 'alloc']]) {
      const run = spawnSync(join(root, 'bin', name), ['--help'], { cwd: elsewhere, encoding: 'utf8' });
      assert.equal(run.status, 0, run.stderr);
      assert.match(run.stdout, new RegExp(`^Usage: taras ${command} `));
    }
    const sacct = spawnSync(join(root, 'bin', 'sacct'), ['--help'], { cwd: elsewhere, encoding: 'utf8' });
    assert.ok(sacct.status === 0 || /^sacct: error: this Taras has no `taras acct` command yet/.test(sacct.stderr), sacct.stderr);
  });
});

describe('scontrol update\'s lines for an array\'s tasks', () => {
  it('says the tasks not updated, grouped as Slurm\'s scontrol (23.02 on) does, and not the ones updated; exit 1', () => {
    const result = (task: number, outcome: 'cancelled' | 'ended' | 'refused', message = '') => ({ id: 40 + task, task: `40_${task}`, state: null, result: outcome, message });
    assert.deepEqual(updateOutcomeLines([result(0, 'ended'), result(1, 'ended'), result(2, 'cancelled'), result(3, 'refused', 'job 43 is RUNNING: no'), result(4, 'cancelled')]), {
      lines: ['40_[0-1]: Job has already finished', 'scontrol: error: update job 40_3 (43): job 43 is RUNNING: no'], failed: true,
    });
    assert.deepEqual(updateOutcomeLines([result(0, 'cancelled'), result(1, 'cancelled')]), { lines: [], failed: false });
    // A job not in an array that has ended: Slurm's "Job has already finished for job N".
    assert.deepEqual(updateOutcomeLines([{ id: 77, state: 'COMPLETED', result: 'ended', message: 'job 77 has already finished (COMPLETED): only pending and running jobs can be updated' }]),
      { lines: ['Job has already finished for job 77'], failed: true });
  });
});

describe('Slurm commands on a real cluster', () => {
  const ids: number[] = [];
  before(async () => {
    const config = join(work, 'cluster.toml');
    writeFileSync(config, `[cluster]\nname = "sl"\npolicy = "easy"\ndata_dir = "data"\n[[nodes]]\nnames = "node[01-04]"\ncpus = 1\nmemory = "16G"\n`
      + `[[partitions]]\nname = "batch"\nnodes = "ALL"\ndefault = true\n[[partitions]]\nname = "debug"\nnodes = "node[01-02]"\nmax_time = "2h"\n`);
    url = (await daemon(['controller', '--config', config, '--port', '0'], /listening on (http:\/\/127\.0\.0\.1:\d+)/))[1];
    await daemon(['agent', '--controller', url, '--virtual', '4x1', '--data', join(work, 'data', 'agent'), '--key', join(work, 'data', 'cluster.key')], /registered 4 node/);
    writeFileSync(join(elsewhere, 'long.sh'), '#!/bin/sh\nsleep 300\n');
    // Two jobs fill the cluster; two more wait.
    for (const [nodes, name] of [['2', 'first'], ['2', 'second'], ['4', 'third'], ['1', 'fourth']]) {
      const run = slurm('sbatch', '-N', nodes, '-t', '10', '-J', name, 'long.sh');
      assert.equal(run.code, 0, run.stderr);
      ids.push(Number(/(\d+)\s*$/.exec(run.stdout)![1]));
    }
    for (let i = 0; i < 100; i++) {
      const states = slurm('squeue', '-h', '-o', '%t').stdout.split('\n').filter(Boolean);
      if (states.filter((s) => s === 'R').length === 2) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  });

  it('squeue: the default table, column by column from its header', () => {
    const run = slurm('squeue');
    assert.equal(run.code, 0, run.stderr);
    const [header] = run.stdout.split('\n');
    assert.equal(header, '             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)');
    const rows = columns(run.stdout);
    assert.equal(rows.length, 4);
    // Slurm's default sort P,t,-p: by partition, then state code (PD before R), then priority.
    assert.deepEqual(rows.map((row) => row.ST), ['PD', 'PD', 'R', 'R']);
    const byId = new Map(rows.map((row) => [Number(row.JOBID), row]));
    assert.deepEqual(byId.get(ids[0]), { JOBID: String(ids[0]), PARTITION: 'batch', NAME: 'first', USER: 'root', ST: 'R', TIME: byId.get(ids[0])!.TIME, NODES: '2', 'NODELIST(REASON)': byId.get(ids[0])!['NODELIST(REASON)'] });
    assert.match(byId.get(ids[0])!.TIME, /^0:0\d$/);
    assert.match(byId.get(ids[0])!['NODELIST(REASON)'], /^node\[0[13]-0[24]\]$/);
    assert.equal(byId.get(ids[2])!['NODELIST(REASON)'], '(Resources)');
    assert.equal(byId.get(ids[3])!['NODELIST(REASON)'], '(Priority)');
    assert.equal(byId.get(ids[2])!.TIME, '0:00');
    // The fixed widths: the last column starts at the same place on every line.
    for (const line of run.stdout.split('\n').filter(Boolean)) assert.match(line.slice(66, 69), /^\S \S$/);
  });

  it('squeue: -h -o fields, filters, sort, --start, -l, --json; bad input refused by name', () => {
    const fields = slurm('squeue', '-h', '-o', '%i %t');
    assert.equal(fields.stdout, [ids[2], ids[3], ids[0], ids[1]].map((id, i) => `${id} ${i < 2 ? 'PD' : 'R'}\n`).join(''));
    assert.equal(slurm('squeue', '--noheader', '-t', 'PD', '-o', '%i').stdout, `${ids[2]}\n${ids[3]}\n`);
    assert.equal(slurm('squeue', '-h', '-t', 'running', '-S', '-i', '-o', '%i').stdout, `${ids[1]}\n${ids[0]}\n`);
    assert.equal(slurm('squeue', '-h', '-j', `${ids[3]},${ids[0]}`, '-S', 'i', '-o', '%.6i|%-8j|%.3D|').stdout, `${String(ids[0]).padStart(6)}|first   |  2|\n${String(ids[3]).padStart(6)}|fourth  |  1|\n`);
    assert.equal(slurm('squeue', '-h', '--me', '-n', 'third', '-o', '%u %j %P').stdout, 'root third batch\n');
    assert.equal(slurm('squeue', '-h', '-u', 'nobody').stdout, '');
    assert.equal(slurm('squeue', '-h', '-p', 'debug').stdout, '');
    const start = slurm('squeue', '--start');
    assert.match(start.stdout.split('\n')[0], /^ +JOBID PARTITION +NAME +USER ST +START_TIME +NODES SCHEDNODES +NODELIST\(REASON\)$/);
    const starts = columns(start.stdout);
    assert.deepEqual(starts.map((row) => Number(row.JOBID)), [ids[2], ids[3]]);
    for (const row of starts) assert.match(row.START_TIME, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/);
    const long = slurm('squeue', '-l');
    const [clock, longHeader] = long.stdout.split('\n');
    assert.match(clock, /^[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}$/);
    assert.equal(longHeader, '             JOBID PARTITION     NAME     USER    STATE       TIME TIME_LIMI  NODES NODELIST(REASON)');
    assert.ok(columns(long.stdout.split('\n').slice(1).join('\n')).every((row) => row.TIME_LIMI === '10:00'));
    const json = JSON.parse(slurm('squeue', '--json').stdout) as { jobs: { id: number; state: string }[] };
    assert.deepEqual(json.jobs.map((job) => job.id), [ids[2], ids[3], ids[0], ids[1]]);
    const bad = slurm('squeue', '--array');
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /squeue: error: unknown option '--array'/);
    assert.match(slurm('squeue', '-t', 'WAITING').stderr, /squeue: error: invalid job state specified: WAITING/);
    assert.match(slurm('squeue', '-o', '%i %K').stderr, /%K is not supported/);
  });

  it('sinfo: the partition summary, -N, -o and -h', () => {
    const run = slurm('sinfo');
    assert.equal(run.code, 0, run.stderr);
    const lines = run.stdout.split('\n').filter(Boolean);
    assert.equal(lines[0], 'PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST');
    const rows = columns(run.stdout);
    assert.deepEqual(rows.map((row) => [row.PARTITION, row.AVAIL, row.TIMELIMIT, row.NODES, row.STATE]), [
      ['batch*', 'up', 'infinite', '4', 'alloc'], ['debug', 'up', '2:00:00', '2', 'alloc'],
    ]);
    assert.deepEqual(rows.map((row) => row.NODELIST), ['node[01-04]', 'node[01-02]']);
    const nodes = slurm('sinfo', '-N');
    assert.equal(nodes.stdout.split('\n')[0], 'NODELIST   NODES PARTITION STATE ');
    assert.equal(columns(nodes.stdout).length, 6);
    assert.equal(slurm('sinfo', '-h', '-o', '%P %D %t %c %C').stdout, 'batch* 4 alloc 1 4/0/0/4\ndebug 2 alloc 1 2/0/0/2\n');
    assert.equal(slurm('sinfo', '-h', '-p', 'debug', '-o', '%R').stdout, 'debug\n');
    assert.equal(slurm('sinfo', '-h', '-t', 'idle').stdout, '');
    assert.match(slurm('sinfo', '-t', 'sleepy').stderr, /sinfo: error: Invalid node state specified: sleepy/);
  });

  it('scontrol: show job, node and partition in Key=Value records; suspend and resume; hold and release', async () => {
    const job = slurm('scontrol', 'show', 'job', String(ids[0]));
    assert.equal(job.code, 0, job.stderr);
    const pairs = new Map(job.stdout.trim().split(/\s+/).map((word) => [word.slice(0, word.indexOf('=')), word.slice(word.indexOf('=') + 1)]));
    assert.equal(pairs.get('JobId'), String(ids[0]));
    assert.equal(pairs.get('JobName'), 'first');
    assert.equal(pairs.get('UserId'), 'root(0)');
    assert.equal(pairs.get('JobState'), 'RUNNING');
    assert.equal(pairs.get('TimeLimit'), '00:10:00');
    assert.match(pairs.get('RunTime')!, /^00:00:\d\d$/);
    assert.equal(pairs.get('Partition'), 'batch');
    assert.equal(pairs.get('NumNodes'), '2');
    assert.equal(pairs.get('WorkDir'), elsewhere);
    assert.match(job.stdout, /^JobId=\d+ JobName=first\n   UserId=root\(0\)\n/);
    const node = slurm('scontrol', 'show', 'node', 'node01').stdout;
    assert.match(node, /^NodeName=node01\n   CPUAlloc=1 CPUEfctv=1 CPUTot=1 /);
    assert.match(node, /\n   State=ALLOCATED\n/);
    const partition = slurm('scontrol', 'show', 'partition', 'debug').stdout;
    assert.match(partition, /^PartitionName=debug\n/);
    assert.match(partition, /MaxTime=02:00:00/);
    assert.match(partition, /Nodes=node\[01-02\]/);
    assert.equal(slurm('scontrol', 'show', 'partition').stdout.split('\n\n').filter((text) => text.trim() !== '').length, 2);
    assert.match(slurm('scontrol', 'show', 'node', 'node99').stderr, /scontrol: error: Node node99 not found/);
    // suspend and resume: silent, and the state follows.
    assert.equal(slurm('scontrol', 'suspend', String(ids[0])).stdout, '');
    assert.equal(slurm('squeue', '-h', '-j', String(ids[0]), '-o', '%t').stdout, 'S\n');
    assert.equal(slurm('scontrol', 'resume', String(ids[0])).code, 0);
    assert.equal(slurm('squeue', '-h', '-j', String(ids[0]), '-o', '%t').stdout, 'R\n');
    const requeue = slurm('scontrol', 'requeue', '999999');
    assert.equal(requeue.code, 1);
    assert.match(requeue.stderr, /^scontrol: error: requeue job 999999: no job 999999/);
    const hold = slurm('scontrol', 'hold', String(ids[3]));
    assert.equal(hold.code, 0, hold.stderr);
    assert.equal(slurm('squeue', '-h', '-j', String(ids[3]), '-o', '%t %r').stdout, 'PD JobHeldAdmin\n', 'root holds as an administrator, as in Slurm');
    assert.equal(slurm('scontrol', 'release', String(ids[3])).code, 0);
    assert.notEqual(slurm('squeue', '-h', '-j', String(ids[3]), '-o', '%r').stdout, 'JobHeldUser\n');
    assert.match(slurm('scontrol', 'reboot').stderr, /does not support "reboot"/);
  });

  it('scontrol write batch_script: the script to slurm-ID.sh (0600) or to stdout; a cancelled pending job\'s script and environment are purged from the database', async () => {
    const text = readFileSync(join(elsewhere, 'long.sh'), 'utf8');
    const toStdout = slurm('scontrol', 'write', 'batch_script', String(ids[0]), '-');
    assert.equal(toStdout.code, 0, toStdout.stderr);
    assert.equal(toStdout.stdout, text);
    const toFile = slurm('scontrol', 'write', 'batch_script', String(ids[0]));
    assert.equal(toFile.stdout, `batch script for job ${ids[0]} written to slurm-${ids[0]}.sh\n`);
    assert.equal(readFileSync(join(elsewhere, `slurm-${ids[0]}.sh`), 'utf8'), text);
    assert.equal(statSync(join(elsewhere, `slurm-${ids[0]}.sh`)).mode & 0o777, 0o600);
    // Never into a file that is there already (another user's, or a symlink planted in a shared folder).
    symlinkSync('/etc/hostname', join(elsewhere, 'planted.sh'));
    const planted = slurm('scontrol', 'write', 'batch_script', String(ids[0]), 'planted.sh');
    assert.equal(planted.code, 1);
    assert.match(planted.stderr, /^scontrol: error: planted\.sh already exists: remove it, or give another file/);
    assert.match(slurm('scontrol', 'write', 'batch_script', String(ids[0])).stderr, new RegExp(`slurm-${ids[0]}\\.sh already exists`));
    assert.match(slurm('scontrol', 'write', 'batch_script', '999999').stderr, /^scontrol: error: no job 999999/);
    assert.match(slurm('scontrol', 'write', 'script', String(ids[0])).stderr, /write takes batch_script JOBID \[FILE\]/);

    // A held job with a secret in the submitting shell's environment, then cancelled: purged within seconds.
    const secret = `taras-secret-${process.pid}`;
    const run = spawnSync(join(root, 'bin', 'sbatch'), ['-H', '-t', '5', '-J', 'secretive', '--wrap', `echo ${secret}-script`],
      { cwd: elsewhere, encoding: 'utf8', timeout: 30_000, env: { ...process.env, TARAS_CONTROLLER: url, TARAS_TEST_SECRET: secret } });
    assert.equal(run.status, 0, run.stderr);
    const id = Number(/(\d+)\s*$/.exec(run.stdout)![1]);
    const database = join(work, 'data', 'taras.db');
    const stored = (): string => {
      const db = new Database(database, { readonly: true, fileMustExist: true });
      try {
        return (db.prepare('SELECT payload FROM job_events WHERE job_id = ? AND seq = 1').get(id) as { payload: string }).payload;
      } finally {
        db.close();
      }
    };
    assert.ok(stored().includes(secret), 'a pending job keeps its environment and script');
    assert.equal(slurm('scancel', String(id)).code, 0);
    let payload = stored();
    for (let i = 0; i < 50 && payload.includes(secret); i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      payload = stored();
    }
    assert.ok(!payload.includes(secret), `job ${id}'s stored submission still holds the secret: ${payload.slice(0, 200)}`);
    const gone = slurm('scontrol', 'write', 'batch_script', String(id), '-');
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, new RegExp(`^scontrol: error: job ${id}'s script was purged at .*none of a job that ended without starting \\(.*keep_finished`));
    // The rest of the job is kept: sacct still lists it.
    assert.match(slurm('sacct', '-j', String(id), '-n', '-X', '-o', 'JobName,State').stdout, /secretive +CANCELLED/);
  });

  it('scancel and squeue as another user: that user\'s own jobs only; another\'s job is refused with Slurm\'s error line', { skip: notRootReason }, async () => {
    const alice = createTestUser('slurm');
    chmodSync(work, 0o711);
    chmodSync(join(work, 'data'), 0o711);
    const as = (name: string, ...args: string[]) => runAs(alice, [join(root, 'bin/taras.js'), '--slurm-command', name, ...args, '--controller', `unix:${join(work, 'data', 'taras.sock')}`]);
    const refused = await as('scancel', String(ids[0]));
    assert.equal(refused.status, 1);
    assert.match(refused.stderr, new RegExp(`^scancel: error: Kill job error on job id ${ids[0]}: `));
    const mine = await as('squeue', '--me', '-h');
    assert.equal(mine.status, 0, mine.stderr);
    assert.equal(mine.stdout, '');
    const script = await as('scontrol', 'write', 'batch_script', String(ids[0]), '-');
    assert.equal(script.status, 1);
    assert.equal(script.stdout, '', 'none of root\'s script');
    assert.match(script.stderr, new RegExp(`^scontrol: error: job ${ids[0]} belongs to root; only they or an administrator may read its script`));
    // A filter that picks root's jobs cancels nothing of theirs either.
    assert.equal((await as('scancel', '-u', 'root')).status, 1);
    assert.equal(slurm('squeue', '-h', '-o', '%i %t').stdout, `${ids[2]} PD\n${ids[3]} PD\n${ids[0]} R\n${ids[1]} R\n`);
  });

  it('scancel: silent on success, Slurm\'s error for a job that is not there; filters pick jobs', async () => {
    const run = slurm('scancel', String(ids[3]));
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout + run.stderr, '');
    assert.equal(slurm('squeue', '-h', '-j', String(ids[3]), '-t', 'all', '-o', '%t').stdout, 'CA\n');
    const missing = slurm('scancel', '999999');
    assert.equal(missing.code, 1);
    assert.equal(missing.stderr, 'scancel: error: Kill job error on job id 999999: Invalid job id specified\n');
    assert.match(slurm('scancel').stderr, /scancel: error: No job identification provided/);
    // --me -t PD cancels only the pending one.
    assert.equal(slurm('scancel', '--me', '-t', 'PD').code, 0);
    assert.equal(slurm('squeue', '-h', '-o', '%i %t').stdout, `${ids[0]} R\n${ids[1]} R\n`);
    assert.equal(slurm('scancel', '-u', 'root', '-n', 'first,second').code, 0);
    // A running job ends once its processes are gone (the cancel is a SIGTERM): a moment later.
    let left = slurm('squeue', '-h', '-t', 'PD,R', '-o', '%i').stdout;
    for (let i = 0; i < 50 && left !== ''; i++) {
      await new Promise((r) => setTimeout(r, 100));
      left = slurm('squeue', '-h', '-t', 'PD,R', '-o', '%i').stdout;
    }
    assert.equal(left, '');
  });

  it('array tasks by the ids squeue shows them with: squeue -j, scontrol show/release, scancel take 12, 12_3 and 12_[1-2]', async () => {
    const run = slurm('sbatch', '--array=0-3', '-t', '10', '-J', 'arr', 'long.sh');
    assert.equal(run.code, 0, run.stderr);
    const array = Number(/(\d+)\s*$/.exec(run.stdout)![1]);
    const listed = (...args: string[]) => slurm('squeue', '-h', '-t', 'all', '-j', ...args).stdout;
    // Four nodes, four tasks: all run, each on its own line.
    await eventually(() => `the four tasks running: ${JSON.stringify(slurm('squeue', '-h', '-t', 'all', '-o', '%i %t %r').stdout)}`, () => listed(String(array), '-o', '%t') === 'R\nR\nR\nR\n', 10_000);
    assert.equal(listed(String(array), '-o', '%i'), `${array}_0\n${array}_1\n${array}_2\n${array}_3\n`, 'the array\'s id names all its tasks');
    assert.equal(listed(`${array}_2`, '-o', '%i'), `${array}_2\n`);
    assert.equal(listed(`${array}_[1-2]`, '-o', '%i'), `${array}_1\n${array}_2\n`);
    const shown = slurm('scontrol', 'show', 'job', `${array}_1`);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, new RegExp(`ArrayJobId=${array} ArrayTaskId=1`));
    assert.equal(slurm('scancel', `${array}_3`).code, 0);
    assert.equal(slurm('scancel', `${array}_[1-2]`).code, 0);
    await eventually('tasks 1 to 3 cancelled', () => listed(`${array}_[1-3]`, '-o', '%t') === 'CA\nCA\nCA\n', 10_000);
    assert.equal(listed(`${array}_0`, '-o', '%t'), 'R\n');
    // A held task released by its ARRAYID_TASK.
    const held = slurm('sbatch', '--array=0-1', '--hold', '-t', '10', '-J', 'held', 'long.sh');
    const second = Number(/(\d+)\s*$/.exec(held.stdout)![1]);
    assert.equal(slurm('scontrol', 'release', `${second}_1`).code, 0);
    await eventually('task 1 released and running', () => listed(`${second}_1`, '-o', '%i %t') === `${second}_1 R\n`, 10_000);
    assert.match(listed(`${second}_0`, '-o', '%r'), /JobHeldUser/, 'task 0 is still held');
    for (const id of [array, second]) assert.equal(slurm('scancel', String(id)).code, 0);
    await eventually('both arrays gone', () => slurm('squeue', '-h', '-o', '%i').stdout === '', 10_000);
    assert.match(slurm('scancel', `${array}_x`).stderr, new RegExp(`^scancel: error: Invalid job id ${array}_x`));
  });

  it('a loopback address written another way (127.1, LOCALHOST, ::ffff:127.0.0.1) finds the controller\'s socket as 127.0.0.1 does', () => {
    // Without a token: only the socket tells the controller who this is (it was "no verified identity" for 127.1 and LOCALHOST).
    const env = { ...process.env };
    delete env.TARAS_TOKEN;
    const port = new URL(url).port;
    for (const host of ['127.0.0.1', '127.1', 'LOCALHOST', '[::ffff:127.0.0.1]']) {
      const run = spawnSync(join(root, 'bin', 'squeue'), ['-h', '-o', '%i'], { cwd: elsewhere, encoding: 'utf8', timeout: 30_000, env: { ...env, TARAS_CONTROLLER: `http://${host}:${port}` } });
      assert.deepEqual([run.status, run.stderr], [0, ''], host);
    }
  });

  it('squeue and sacct keep columns aligned for names with wide characters and emoji, cut between whole characters', async () => {
    const names = ['日本語のジョブ名前', '🧪🧪🧪🧪🧪', '👩‍🔬👩‍🔬👩‍🔬👩‍🔬', 'e\u0301cole-e\u0301te\u0301'];
    const wide = names.map((name) => {
      const run = slurm('sbatch', '--hold', '-t', '10', '-J', name, 'long.sh');
      assert.equal(run.code, 0, run.stderr);
      return Number(/(\d+)\s*$/.exec(run.stdout)![1]);
    });
    assert.equal(slurm('squeue', '-h', '-S', 'i', '-o', '%.6j|%-7j|%t').stdout, [
      '日本語|日本語 |PD', '🧪🧪🧪|🧪🧪🧪 |PD', '👩‍🔬👩‍🔬👩‍🔬|👩‍🔬👩‍🔬👩‍🔬 |PD', 'e\u0301cole-|e\u0301cole-e\u0301|PD', '',
    ].join('\n'));
    for (const id of wide) assert.equal(slurm('scancel', String(id)).code, 0);
    const acct = slurm('sacct', '-n', '-j', wide.join(','), '-o', 'JobName%7,State');
    assert.equal(acct.code, 0, acct.stderr);
    assert.equal(acct.stdout, [
      '日本語+  CANCELLED ', '🧪🧪🧪+  CANCELLED ', '👩‍🔬👩‍🔬👩‍🔬+  CANCELLED ', 'e\u0301cole-+  CANCELLED ', '',
    ].join('\n'));
  });
});
