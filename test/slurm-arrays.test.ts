// Slurm's array-id habits through bin/scontrol, bin/squeue, bin/sacct and
// bin/sbatch against a real controller and agent (loopback): an array's id
// names every task (scontrol requeue|suspend|resume 12, sacct -j 12,
// --dependency=afterok:12), ARRAYID_TASK one task (12_3), and a pending
// task inside a folded row (12_[2-5%2]) is listed on its own by squeue -j.
// Every process started here is stopped by its PID.

import assert from 'node:assert/strict';
import { spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { clientAs } from './auth-helpers.js';
import { killHard, startDaemon } from './daemon-process.js';
import { eventually } from './poll.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const work = mkdtempSync(join(tmpdir(), 'taras-slurm-arrays-'));
const jobsDir = join(work, 'jobs');
mkdirSync(jobsDir);
const started: ChildProcess[] = [];
let url = '';

after(async () => {
  for (const child of started) await killHard(child);
  rmSync(work, { recursive: true, force: true });
});

/** Runs bin/NAME (the installed launcher) against the test's controller. */
function slurm(name: string, ...args: string[]) {
  const run = spawnSync(join(root, 'bin', name), args, { cwd: jobsDir, encoding: 'utf8', timeout: 30_000, env: { ...process.env, TARAS_CONTROLLER: url } });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

interface Job { id: number; state: string; reason: string | null; restarts?: number }
const show = (id: number | string): Job => JSON.parse(slurm('taras', 'show', String(id), '--json').stdout) as Job;
/** The states of tasks first..first+count-1. */
const states = (first: number, count: number): string[] => Array.from({ length: count }, (_, i) => show(first + i).state);

function sbatch(...args: string[]): number {
  const run = slurm('sbatch', ...args);
  assert.equal(run.code, 0, run.stderr);
  return Number(/(\d+)\s*$/.exec(run.stdout)![1]);
}

/** Cancels an array and waits until none of its tasks is active. */
async function cancelArray(id: number, count: number): Promise<void> {
  assert.equal(slurm('scancel', String(id)).code, 0);
  await eventually(`array ${id} ended`, () => states(id, count).every((state) => !['PENDING', 'RUNNING', 'SUSPENDED', 'COMPLETING'].includes(state)), 20_000, 200);
}

describe('array ids in Slurm\'s commands', () => {
  before(async () => {
    const config = join(work, 'cluster.toml');
    writeFileSync(config, '[cluster]\nname = "arr"\npolicy = "easy"\ndata_dir = "data"\n[[nodes]]\nnames = "node[01-04]"\ncpus = 1\nmemory = "4G"\n[[partitions]]\nname = "batch"\nnodes = "ALL"\ndefault = true\n[[partitions]]\nname = "other"\nnodes = "ALL"\n');
    const controller = await startDaemon(join(root, 'bin/taras.js'), started, ['controller', '--config', config, '--port', '0'], /listening on (http:\/\/127\.0\.0\.1:\d+)/, work);
    url = controller.match[1];
    await startDaemon(join(root, 'bin/taras.js'), started,
      ['agent', '--controller', url, '--virtual', '4x1', '--data', join(work, 'data', 'agent'), '--key', join(work, 'data', 'cluster.key')], /registered 4 node/, work);
    writeFileSync(join(jobsDir, 'long.sh'), '#!/bin/sh\n#SBATCH -t 10\nsleep 300\n');
    writeFileSync(join(jobsDir, 'quick.sh'), '#!/bin/sh\n#SBATCH -t 1\ntrue\n');
    // Tasks 0 and 1 end at once, task 2 runs on.
    writeFileSync(join(jobsDir, 'mixed.sh'), '#!/bin/sh\n#SBATCH -t 10\nif [ "$SLURM_ARRAY_TASK_ID" = 2 ]; then sleep 300; fi\n');
  });

  it('scontrol suspend, resume and requeue of an array\'s id act on every task; 12_1 on one; refused tasks are said, the others acted on', { timeout: 90_000 }, async () => {
    const id = sbatch('-a', '0-3', 'long.sh');
    await eventually('the four tasks running', () => states(id, 4).every((state) => state === 'RUNNING'), 20_000, 200);

    const suspended = slurm('scontrol', 'suspend', String(id));
    assert.deepEqual([suspended.code, suspended.stdout, suspended.stderr], [0, '', '']);
    assert.deepEqual(states(id, 4), ['SUSPENDED', 'SUSPENDED', 'SUSPENDED', 'SUSPENDED']);
    assert.equal(slurm('scontrol', 'resume', String(id)).code, 0);
    assert.deepEqual(states(id, 4), ['RUNNING', 'RUNNING', 'RUNNING', 'RUNNING']);

    // One task by ARRAYID_TASK; then resume of the whole array: task 1 resumed, the three running ones refused by name.
    assert.equal(slurm('scontrol', 'suspend', `${id}_1`).code, 0);
    assert.deepEqual(states(id, 4), ['RUNNING', 'SUSPENDED', 'RUNNING', 'RUNNING']);
    const resumed = slurm('scontrol', 'resume', String(id));
    assert.equal(resumed.code, 1);
    assert.equal(resumed.stdout, '');
    assert.deepEqual(resumed.stderr.split('\n').filter(Boolean), [0, 2, 3].map((task) =>
      `scontrol: error: resume job ${id}_${task} (${id + task}): job ${id + task} is RUNNING: only suspended jobs can be resumed`));
    assert.deepEqual(states(id, 4), ['RUNNING', 'RUNNING', 'RUNNING', 'RUNNING']);

    // 12_[2-3]: those two tasks; then 12: every task.
    assert.equal(slurm('scontrol', 'requeue', `${id}_[2-3]`).code, 0);
    await eventually('tasks 2 and 3 requeued once', () => [2, 3].every((task) => show(id + task).restarts === 1), 20_000, 200);
    assert.deepEqual([0, 1].map((task) => show(id + task).restarts ?? 0), [0, 0]);
    await eventually('the four tasks running again', () => states(id, 4).every((state) => state === 'RUNNING'), 20_000, 200);
    assert.equal(slurm('scontrol', 'requeue', String(id)).code, 0);
    await eventually('every task requeued', () => [0, 1, 2, 3].every((task) => (show(id + task).restarts ?? 0) === (task < 2 ? 1 : 2)), 20_000, 200);
    const unknown = slurm('scontrol', 'requeue', `${id}_9`);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, new RegExp(`^scontrol: error: array ${id} has no task 9 \\(its tasks: 0-3\\)`));
    await cancelArray(id, 4);
  });

  it('squeue -j 12_4 and -j with the task\'s own id list a pending task of a folded row on its own row; -j 12 keeps the fold', { timeout: 60_000 }, async () => {
    const id = sbatch('-a', '0-5%2', 'long.sh');
    await eventually('two tasks running, four folded', () => slurm('squeue', '-h', '-o', '%i').stdout.includes(`${id}_[2-5%2]`), 20_000, 200);
    const listed = (jobs: string) => {
      const run = slurm('squeue', '-h', '-j', jobs, '-o', '%i %t');
      assert.equal(run.code, 0, run.stderr);
      return run.stdout.split('\n').filter(Boolean).sort();
    };
    assert.deepEqual(listed(`${id}_4`), [`${id}_4 PD`]);
    assert.deepEqual(listed(String(id + 4)), [`${id}_4 PD`], 'the task\'s own job id');
    assert.deepEqual(listed(`${id}_[3-4],${id}_0`), [`${id}_0 R`, `${id}_3 PD`, `${id}_4 PD`]);
    assert.deepEqual(listed(String(id)), [`${id}_0 R`, `${id}_1 R`, `${id}_[2-5%2] PD`]);
    await cancelArray(id, 6);
  });

  it('sacct shows array tasks as ARRAYID_TASK (JobIDRaw their own ids); -j 12 selects every task, -j 12_2 one', { timeout: 60_000 }, async () => {
    const id = sbatch('-a', '1-3', 'quick.sh');
    const single = sbatch('quick.sh');
    await eventually('the array and the job completed', () => [...states(id, 3), show(single).state].every((state) => state === 'COMPLETED'), 20_000, 200);
    const sacct = (...args: string[]) => {
      const run = slurm('sacct', '-n', '-P', '-o', 'JobID,JobIDRaw,State', ...args);
      assert.equal(run.code, 0, run.stderr);
      return run.stdout.split('\n').filter(Boolean);
    };
    assert.deepEqual(sacct('-j', String(id)), [1, 2, 3].map((task) => `${id}_${task}|${id + task - 1}|COMPLETED`));
    assert.deepEqual(sacct('-j', `${id}_2`), [`${id}_2|${id + 1}|COMPLETED`]);
    assert.deepEqual(sacct('-j', `${id}_[1,3],${single}`), [`${id}_1|${id}|COMPLETED`, `${id}_3|${id + 2}|COMPLETED`, `${single}|${single}|COMPLETED`]);
    assert.deepEqual(sacct('-j', String(id + 2)), [`${id}_3|${id + 2}|COMPLETED`], 'a task by its own id');
    const bad = slurm('sacct', '-j', `${id}_x`);
    assert.equal(bad.code, 2, 'a usage error');
    assert.match(bad.stderr, new RegExp(`-j: '${id}_x' is not a job id: give job ids \\(12\\), array tasks \\(12_3\\)`));
  });

  it('sacct folds an array\'s pending tasks onto one row after its other rows, 12_[2-5%2] (JobIDRaw the array\'s id); tasks that run, or are held on their own, keep their rows; --array unfolds', { timeout: 60_000 }, async () => {
    const id = sbatch('-a', '0-5%2', 'long.sh');
    await eventually('two tasks running', () => [id, id + 1].every((task) => show(task).state === 'RUNNING'), 20_000, 200);
    const sacct = (...args: string[]) => {
      const run = slurm('sacct', '-n', '-P', ...args);
      assert.equal(run.code, 0, run.stderr);
      return run.stdout.split('\n').filter(Boolean);
    };
    assert.deepEqual(sacct('-j', String(id), '-o', 'JobID,JobIDRaw,State'), [`${id}_0|${id}|RUNNING`, `${id}_1|${id + 1}|RUNNING`, `${id}_[2-5%2]|${id}|PENDING`]);
    // The fold does not need JobID among the columns: one pending row.
    assert.deepEqual(sacct('-j', String(id), '-o', 'State'), ['RUNNING', 'RUNNING', 'PENDING']);
    assert.deepEqual(sacct('-j', String(id), '--array', '-o', 'JobID,JobIDRaw,State'),
      [0, 1, 2, 3, 4, 5].map((task) => `${id}_${task}|${id + task}|${task < 2 ? 'RUNNING' : 'PENDING'}`));
    // One task named: its own row.
    assert.deepEqual(sacct('-j', `${id}_4`, '-o', 'JobID,State'), [`${id}_4|PENDING`]);
    // A task held on its own leaves the fold (Slurm splits it from the meta record); the fold comes after it.
    assert.equal(slurm('scontrol', 'hold', `${id}_3`).code, 0);
    assert.deepEqual(sacct('-j', String(id), '-o', 'JobID,JobIDRaw'), [`${id}_0|${id}`, `${id}_1|${id + 1}`, `${id}_3|${id + 3}`, `${id}_[2,4-5%2]|${id}`]);
    // SLURM_BITSTR_LEN cuts the list as Slurm's does (6 bytes: 2 characters and ...).
    const cut = spawnSync(join(root, 'bin', 'sacct'), ['-n', '-P', '-j', String(id), '-o', 'JobID'], { cwd: jobsDir, encoding: 'utf8', timeout: 30_000, env: { ...process.env, TARAS_CONTROLLER: url, SLURM_BITSTR_LEN: '6' } });
    assert.equal(cut.stdout.split('\n').filter(Boolean).at(-1), `${id}_[2,...%2]`, cut.stderr);
    // Every pending task held (what Slurm holds as one meta record): one row again.
    assert.equal(slurm('scontrol', 'hold', `${id}_[2,4-5]`).code, 0);
    assert.deepEqual(sacct('-j', String(id), '-o', 'JobID'), [`${id}_0`, `${id}_1`, `${id}_[2-5%2]`]);
    // --json: the same rows (the folded one lists its tasks); --json --array a record per task.
    const json = JSON.parse(slurm('sacct', '-j', String(id), '--json', '-o', 'JobID,JobIDRaw').stdout) as { jobs: { JobID: string; JobIDRaw: string; job: { id: number }; tasks?: number[] }[] };
    assert.deepEqual(json.jobs.map((row) => [row.JobID, row.JobIDRaw, row.job.id, row.tasks]),
      [[`${id}_0`, String(id), id, undefined], [`${id}_1`, String(id + 1), id + 1, undefined], [`${id}_[2-5%2]`, String(id), id + 2, [2, 3, 4, 5]]]);
    assert.equal((JSON.parse(slurm('sacct', '-j', String(id), '--json', '--array').stdout) as { jobs: unknown[] }).jobs.length, 6);
    await cancelArray(id, 6);
    // Ended, they are rows of their own again.
    assert.deepEqual(sacct('-j', String(id), '-o', 'JobID,State').map((row) => row.split('|')[0]), [0, 1, 2, 3, 4, 5].map((task) => `${id}_${task}`));
  });

  it('scontrol update of an array: JobId=12_3 one task, JobId=12 every task (a running one too, its time limit only), ArrayTaskThrottle on the array\'s id only', { timeout: 90_000 }, async () => {
    const id = sbatch('-a', '0-5%1', 'long.sh');
    const limits = () => [0, 1, 2, 3, 4, 5].map((task) => (show(id + task) as Job & { timeLimitSeconds: number }).timeLimitSeconds);
    await eventually('task 0 running', () => show(id).state === 'RUNNING', 20_000, 200);
    assert.equal(slurm('scontrol', 'update', `JobId=${id}_3`, 'TimeLimit=5').code, 0);
    assert.deepEqual(limits(), [600, 600, 600, 300, 600, 600]);
    assert.deepEqual(slurm('scontrol', 'update', `JobId=${id}`, 'TimeLimit=7'), { code: 0, stdout: '', stderr: '' });
    assert.deepEqual(limits(), [420, 420, 420, 420, 420, 420]);
    // Running task 0 keeps its partition; the pending ones move (one line for the refused task; the others not said, as Slurm).
    const moved = slurm('scontrol', 'update', `JobId=${id}`, 'Partition=other');
    assert.equal(moved.code, 1);
    assert.deepEqual(moved.stderr.split('\n').filter(Boolean),
      [`scontrol: error: update job ${id}_0 (${id}): job ${id} is RUNNING: only its TimeLimit and JobName can be updated (Partition only while it is pending)`]);
    assert.deepEqual([0, 1, 5].map((task) => (show(id + task) as Job & { partition: string }).partition), ['batch', 'other', 'other']);
    // A name changes on every task, the running one too (as Slurm renames a running job).
    assert.deepEqual(slurm('scontrol', 'update', `JobId=${id}`, 'JobName=renamed'), { code: 0, stdout: '', stderr: '' });
    assert.deepEqual([0, 1, 5].map((task) => (show(id + task) as Job & { name: string }).name), ['renamed', 'renamed', 'renamed']);
    // TimeLimit=+N on an array's id: Slurm's words (one task: 12_3).
    assert.deepEqual(slurm('scontrol', 'update', `JobId=${id}`, 'TimeLimit=+1'),
      { code: 1, stdout: '', stderr: 'scontrol: error: TimeLimit increment/decrement not supported for job arrays (give one task: JobId=12_3)\n' });
    assert.equal(slurm('scontrol', 'update', `JobId=${id}_3`, 'TimeLimit=+1').code, 0);
    assert.deepEqual(limits(), [420, 420, 420, 480, 420, 420]);

    // %1 -> %3: two more start; the fold shows the new %N.
    assert.deepEqual(slurm('scontrol', 'update', `JobId=${id}`, 'ArrayTaskThrottle=3'), { code: 0, stdout: '', stderr: '' });
    await eventually('three tasks running', () => states(id, 6).filter((state) => state === 'RUNNING').length === 3, 20_000, 200);
    assert.match(slurm('squeue', '-h', '-j', String(id), '-o', '%i').stdout, new RegExp(`^${id}_\\[3-5%3\\]$`, 'm'));
    const onTask = slurm('scontrol', 'update', `JobId=${id}_2`, 'ArrayTaskThrottle=2');
    assert.equal(onTask.code, 1);
    assert.match(onTask.stderr, new RegExp(`^scontrol: error: ArrayTaskThrottle is set on an array's id, and ${id}_2 is not one`));
    const negative = slurm('scontrol', 'update', `JobId=${id}`, 'ArrayTaskThrottle=-1');
    assert.equal(negative.code, 1);
    assert.match(negative.stderr, /^scontrol: error: Invalid ArrayTaskThrottle value "-1": give how many tasks of the array may run at once, 0 to/);
    // taras update --throttle 0: no limit, the fourth node taken.
    const lifted = slurm('taras', 'update', String(id), '--throttle', '0');
    assert.equal(lifted.code, 0, lifted.stderr);
    assert.equal(lifted.stdout, `job ${id} updated: arrayThrottle=0\n`);
    await eventually('four tasks running', () => states(id, 6).filter((state) => state === 'RUNNING').length === 4, 20_000, 200);
    await cancelArray(id, 6);
    // Every task ended: each is said as Slurm's scontrol says it (grouped), and the exit is 1.
    assert.deepEqual(slurm('scontrol', 'update', `JobId=${id}`, 'TimeLimit=5'), { code: 1, stdout: '', stderr: `${id}_[0-5]: Job has already finished\n` });
    assert.deepEqual(limits(), [420, 420, 420, 480, 420, 420]);
  });

  it('ArrayTaskThrottle that would make the array\'s stored text too long is refused with the reason, also when its first task has ended (not "Job has already finished"); nothing stored', { timeout: 60_000 }, async () => {
    const text = `0-${'0'.repeat(4092)}2`; // tasks 0 to 2, in the 4,096 characters a submission may give
    const id = sbatch('-a', text, 'mixed.sh');
    await eventually('tasks 0 and 1 completed, 2 running', () => states(id, 3).join() === 'COMPLETED,COMPLETED,RUNNING', 20_000, 200);
    assert.deepEqual(slurm('scontrol', 'update', `JobId=${id}`, 'ArrayTaskThrottle=1'), {
      code: 1, stdout: '',
      stderr: `scontrol: error: update job ${id}_0 (${id}): array ${id}: its --array text with %1 would be 4097 characters, more than the 4096 a job array's text may have; submit it again with a shorter one (ranges: 0-99 rather than 0,1,2,...)\n`,
    });
    assert.doesNotMatch(slurm('squeue', '-h', '-j', String(id), '-o', '%i').stdout, /%/, 'no throttle stored');
    assert.equal(slurm('scancel', `${id}_2`).code, 0);
    await eventually(`task ${id}_2 ended`, () => show(id + 2).state === 'CANCELLED', 20_000, 200);
  });

  it('scontrol update of an array with ended tasks: "Job has already finished" for them, the others updated and not said, exit 1 (as Slurm)', { timeout: 90_000 }, async () => {
    const id = sbatch('-a', '0-2', 'mixed.sh');
    await eventually('tasks 0 and 1 completed, 2 running', () => states(id, 3).join() === 'COMPLETED,COMPLETED,RUNNING', 20_000, 200);
    const whole = slurm('scontrol', 'update', `JobId=${id}`, 'TimeLimit=5');
    assert.deepEqual(whole, { code: 1, stdout: '', stderr: `${id}_[0-1]: Job has already finished\n` });
    assert.equal((show(id + 2) as Job & { timeLimitSeconds: number }).timeLimitSeconds, 300);
    assert.equal((show(id) as Job & { timeLimitSeconds: number }).timeLimitSeconds, 600, 'an ended task keeps its limit');
    // One ended task named alone, as Slurm: its own line.
    assert.deepEqual(slurm('scontrol', 'update', `JobId=${id}_1`, 'TimeLimit=5'), { code: 1, stdout: '', stderr: `${id}_[1]: Job has already finished\n` });
    // taras update says each ended task as a refusal.
    const taras = slurm('taras', 'update', String(id), '--time', '4');
    assert.equal(taras.code, 1);
    assert.equal(taras.stdout, `1 of 3 updated: timeLimitSeconds=240\n`);
    assert.match(taras.stderr, new RegExp(`^error: job ${id}_0 \\(${id}\\): job ${id} has already finished \\(COMPLETED\\)`));
    assert.equal(slurm('scancel', `${id}_2`).code, 0);
    await eventually('task 2 ended', () => show(id + 2).state === 'CANCELLED', 20_000, 200);
  });

  it('--dependency=afterok:12_1 waits for that task only; afterok:12 and afterany:12 for every task of the array', { timeout: 90_000 }, async () => {
    const id = sbatch('-a', '0-2', 'mixed.sh');
    const onTask = sbatch(`--dependency=afterok:${id}_1`, 'quick.sh');
    const onArray = sbatch(`--dependency=afterok:${id}`, 'quick.sh');
    const anyArray = sbatch('-d', `afterany:${id}`, 'quick.sh');
    await eventually('the job after task 1 completed', () => show(onTask).state === 'COMPLETED', 20_000, 200);
    assert.deepEqual(states(id, 3), ['COMPLETED', 'COMPLETED', 'RUNNING']);
    for (const waiting of [onArray, anyArray]) {
      const job = show(waiting);
      assert.equal(job.state, 'PENDING', `job ${waiting} waits for task 2`);
      assert.match(job.reason ?? '', /^Dependency/);
    }
    // Task 2 cancelled: afterok on the array can never be met, afterany is.
    assert.equal(slurm('scancel', `${id}_2`).code, 0);
    await eventually('afterany ran', () => show(anyArray).state === 'COMPLETED', 20_000, 200);
    await eventually('afterok never satisfied', () => /^DependencyNeverSatisfied/.test(show(onArray).reason ?? '') && show(onArray), 20_000, 200);

    const noTask = slurm('sbatch', `--dependency=afterok:${id}_7`, 'quick.sh');
    assert.equal(noTask.code, 2, noTask.stderr);
    assert.match(noTask.stderr, new RegExp(`--dependency afterok:${id}_7: array ${id} has no task 7 \\(its tasks: 0-2\\)`));
    const notArray = slurm('sbatch', `--dependency=afterok:${onTask}_1`, 'quick.sh');
    assert.equal(notArray.code, 2, notArray.stderr);
    assert.match(notArray.stderr, new RegExp(`job ${onTask} is not a job array`));
    assert.equal(slurm('scancel', String(onArray)).code, 0);
  });
  it('scontrol show job 12 shows every task of array 12, by task id; 12_1 one task; a job submitted after the array is not among them', { timeout: 60_000 }, async () => {
    const id = sbatch('-H', '-a', '0-2', 'quick.sh');
    const next = sbatch('-H', 'quick.sh');
    const records = (out: string) => out.split('\n\n').filter((text) => text.trim() !== '').map((text) => /JobId=(\d+)(?: ArrayJobId=(\d+) ArrayTaskId=(\d+))?/.exec(text)!.slice(1));
    const all = slurm('scontrol', 'show', 'job', String(id));
    assert.equal(all.code, 0, all.stderr);
    assert.deepEqual(records(all.stdout), [0, 1, 2].map((task) => [String(id + task), String(id), String(task)]));
    const one = slurm('scontrol', 'show', 'job', `${id}_1`);
    assert.deepEqual(records(one.stdout), [[String(id + 1), String(id), '1']]);
    assert.deepEqual(records(slurm('scontrol', 'show', 'job', String(next)).stdout), [[String(next), undefined, undefined]]);
    assert.equal(slurm('scancel', String(id), String(next)).code, 0);
  });

  it('GET /jobs?array=12 lists the tasks of array 12 alone, by id and paged; another user sees them without private fields; bad values are 400s naming array=', { timeout: 60_000 }, async () => {
    const id = sbatch('-H', '-a', '0-3', 'quick.sh');
    const other = sbatch('-H', 'quick.sh');
    const later = sbatch('-H', '-a', '0-1', 'quick.sh');
    const keys = { jwtKeyPath: join(work, 'data', 'jwt.key') };
    const [root, stranger] = [await clientAs(url, keys, 'root'), await clientAs(url, keys, 'nobody')];
    try {
      type Page = { jobs: { id: number; arrayJobId?: number; arrayTaskId?: number; workingDir: string | null }[]; next: number | null };
      const all = await root.get<Page>(`/jobs?array=${id}`);
      assert.deepEqual(all.jobs.map((job) => [job.id, job.arrayJobId, job.arrayTaskId]), [0, 1, 2, 3].map((task) => [id + task, id, task]));
      assert.equal(all.next, null);
      assert.ok(all.jobs.every((job) => job.workingDir === jobsDir), 'the owner sees its working folder');
      // Paged as GET /jobs is, the other jobs between (none here) and after (the next array) never among them.
      const first = await root.get<Page>(`/jobs?array=${id}&limit=3`);
      assert.deepEqual([first.jobs.map((job) => job.id), first.next], [[id, id + 1, id + 2], id + 2]);
      const rest = await root.get<Page>(`/jobs?array=${id}&after=${first.next}`);
      assert.deepEqual([rest.jobs.map((job) => job.id), rest.next], [[id + 3], null]);
      assert.deepEqual((await root.get<Page>(`/jobs?array=${later}`)).jobs.map((job) => job.id), [later, later + 1]);
      const seen = await stranger.get<Page>(`/jobs?array=${id}`);
      assert.deepEqual(seen.jobs.map((job) => job.id), [id, id + 1, id + 2, id + 3]);
      assert.ok(seen.jobs.every((job) => job.workingDir === null), 'another user does not see the working folder');
      for (const [value, status, message] of [['x', 400, /array=x: 'x' is not a job id/], [`${id}_1`, 400, new RegExp(`array=${id}_1: names tasks, not an array`)],
        [String(other), 400, new RegExp(`array=${other}: job ${other} is not a job array`)], [String(later + 100), 404, new RegExp(`array=${later + 100}: no job ${later + 100}`)]] as const) {
        await assert.rejects(root.get(`/jobs?array=${encodeURIComponent(value)}`), (error: Error & { status?: number }) => error.status === status && message.test(error.message), `array=${value}`);
      }
    } finally {
      root.close();
      stranger.close();
    }
    assert.equal(slurm('scancel', String(id), String(other), String(later)).code, 0);
  });

  it('a dependency naming more than 100,000 jobs, an array\'s id written again and again, is refused before anything is stored', { timeout: 60_000 }, async () => {
    const id = sbatch('-H', '-a', '0-199', 'quick.sh');
    // 501 times an array of 200 tasks: 100,200 jobs, each looked up at every pass (1,000 times 9,000 tasks held the controller for minutes).
    const refused = slurm('sbatch', `--dependency=afterok${`:${id}`.repeat(501)}`, 'quick.sh');
    assert.equal(refused.code, 2, refused.stderr);
    assert.match(refused.stderr, /names more than 100000 jobs \(an array's id stands for every one of its tasks, each time it is written\); name each array once/);
    const next = sbatch('-H', `--dependency=afterok:${id}`, 'quick.sh');
    assert.equal(next, id + 200, 'the refused job took no id: nothing was stored');
    assert.equal(slurm('scancel', String(id), String(next)).code, 0);
  });

  it('scontrol release of ids naming the same tasks more than 10,000 times over is refused with nothing released; the same id many times is each task once', { timeout: 60_000 }, async () => {
    const id = sbatch('-H', '-a', '0-199', 'quick.sh');
    // 60 overlapping ranges name the 200 tasks 11,970 times (10,000 copies of an array's id held the controller for minutes).
    const overlapping = slurm('scontrol', 'release', ...Array.from({ length: 60 }, (_, k) => `${id}_[0-${199 - k}]`));
    assert.equal(overlapping.code, 1);
    assert.match(overlapping.stderr, /these ids name the same jobs more than 10000 times .*an array's id already names every task\) \(name each job once; nothing was changed\)/);
    const listed = () => slurm('squeue', '-h', '-j', String(id), '-o', '%i %t %r').stdout.trim();
    assert.equal(listed(), `${id}_[0-199] PD JobHeldUser`, 'every task still held');
    const repeated = slurm('scontrol', 'release', ...Array(200).fill(String(id)));
    assert.deepEqual([repeated.code, repeated.stderr], [0, '']);
    assert.doesNotMatch(listed(), /JobHeldUser/, 'every task released');
    slurm('scancel', String(id)); // those not run yet (the first ones may have completed: exit 1)
    await eventually('no task left', () => listed() === '', 20_000, 200);
  });
});
