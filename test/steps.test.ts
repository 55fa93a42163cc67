// srun inside a job (job steps) on a real controller and agent, with a real
// other Unix user: tasks on every allocated node with SLURM_PROCID,
// SLURM_NODEID, SLURM_LOCALID and SLURM_STEP_ID, output relayed (labelled
// with -l), the highest exit code, stdin to every task, steps refused when
// they do not fit the job or the job is someone else's, and no task left
// running once its job has ended or its srun has gone; a raised job limit
// reaches a step's tasks also when their agent could not be reached at first;
// a step's tasks survive a restart of their agent (output and exit codes kept), and
// of the controller (srun resumes the same step; nobody else may).
// Every process started here is stopped by its PID.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { runAs } from './auth-helpers.js';
import { killHard, startDaemon, type Daemon } from './daemon-process.js';
import { createTestUser, notRootReason, removeTestUsers, type TestUser } from './unix-users.js';
import { stepLayout, tasksPerNodeText } from '../src/controller/steps.js';
import { ApiRequestError, bearer, createApiClient } from '../src/net/client.js';
import { issueToken, loadOrCreateJwtKey } from '../src/net/identity.js';
import { loadClusterKey } from '../src/net/hmac.js';
import { readStatus } from '../src/agent/jobdir.js';
import { WebSocket } from 'ws';
import { eventually } from './poll.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const taras = join(root, 'bin/taras.js');
const started: ChildProcess[] = [];
let work = '';

describe('step layout (pure)', () => {
  const nodes = ['n1', 'n2', 'n3'];
  const allocation = { cpusPerNode: 4, ntasks: 6, cpusPerTask: 1 };
  it('block distribution: the first nodes take one more; without -n the job\'s tasks on all its nodes, one per node on fewer', () => {
    const all = stepLayout(nodes, allocation, {});
    assert.ok(typeof all !== 'string');
    assert.deepEqual(all.tasks.map((t) => `${t.task}@${t.node}/${t.nodeId}.${t.localId}`), ['0@n1/0.0', '1@n1/0.1', '2@n2/1.0', '3@n2/1.1', '4@n3/2.0', '5@n3/2.1']);
    const five = stepLayout(nodes, allocation, { ntasks: 5 });
    assert.ok(typeof five !== 'string');
    assert.deepEqual(five.tasks.map((t) => t.node), ['n1', 'n1', 'n2', 'n2', 'n3']);
    assert.equal(tasksPerNodeText(five.tasks, 3), '2(x2),1');
    const two = stepLayout(nodes, allocation, { nodes: 2 });
    assert.ok(typeof two !== 'string');
    assert.deepEqual(two.tasks.map((t) => t.node), ['n1', 'n2']);
    const one = stepLayout(nodes, allocation, { ntasks: 1 });
    assert.ok(typeof one !== 'string');
    assert.deepEqual(one.nodes, ['n1']);
  });
  it('refuses what does not fit, naming the fix', () => {
    assert.match(stepLayout(nodes, allocation, { nodes: 4 }) as string, /has 3 node\(s\) and the step asks for 4 \(-N\): ask for at most 3/);
    assert.match(stepLayout(nodes, allocation, { ntasks: 2, nodes: 3 }) as string, /2 task\(s\) \(-n\) cannot cover 3 node\(s\)/);
    assert.match(stepLayout(nodes, allocation, { ntasks: 6, cpusPerTask: 3 }) as string, /2 task\(s\) of 3 CPU\(s\) on a node where the job has 4 CPU\(s\).*--overcommit/);
    assert.ok(typeof stepLayout(nodes, allocation, { ntasks: 6, cpusPerTask: 3, overcommit: true }) !== 'string');
  });
});

describe('srun inside a job, on a real cluster', { skip: notRootReason }, () => {
  let url = '';
  let controller: Daemon;
  let agent: Daemon;
  let ada: TestUser;
  let bob: TestUser;
  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'taras-steps-'));
    chmodSync(work, 0o755);
    ada = createTestUser('ada');
    bob = createTestUser('bob');
    const config = join(work, 'cluster.toml');
    writeFileSync(config, `[cluster]\nname = "steps"\npolicy = "easy"\ndata_dir = "data"\n[[nodes]]\nnames = "node[01-03]"\ncpus = 2\nmemory = "4G"\n`
      + '[[partitions]]\nname = "batch"\nnodes = "ALL"\ndefault = true\n');
    controller = await startDaemon(taras, started, ['controller', '--config', config, '--port', '0'], /listening on (http:\/\/127\.0\.0\.1:\d+)/, work);
    url = controller.match[1];
    agent = await startDaemon(taras, started, ['agent', '--controller', url, '--virtual', '3x2', '--data', join(work, 'data', 'agent'), '--key', join(work, 'data', 'cluster.key')], /registered 3 node/, work);
  });
  after(async () => {
    for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await sleep(200);
    removeTestUsers();
    if (work !== '') rmSync(work, { recursive: true, force: true });
  });

  /** sbatch as `user` from their home (srun on the job's PATH, as after an install); the job id. */
  const sbatch = async (user: TestUser, script: string, ...args: string[]): Promise<number> => {
    const file = join(user.home, `job-${Math.random().toString(36).slice(2, 8)}.sh`);
    writeFileSync(file, script);
    chmodSync(file, 0o755);
    chownSync(file, user.uid, user.gid);
    const run = await runAs(user, [taras, 'submit', '--controller', url, ...args, file], { env: { PATH: `${join(root, 'bin')}:/usr/bin:/bin` } });
    assert.equal(run.status, 0, run.stderr);
    return Number(/(\d+)\s*$/.exec(run.stdout)![1]);
  };
  const state = async (id: number): Promise<string> => {
    const run = await runAs(ada, [taras, 'show', String(id), '--json', '--controller', url]);
    return (JSON.parse(run.stdout) as { state: string }).state;
  };
  const waitFor = async (what: string, check: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> => {
    await eventually(what, check, ms);
  };
  const alive = (pid: number): boolean => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };

  /** A new folder of ada's in her home. */
  const adaDir = (name: string): string => {
    const dir = join(ada.home, name);
    mkdirSync(dir);
    chownSync(dir, ada.uid, ada.gid);
    return dir;
  };
  /** A WebSocket upgrade to the controller as `user` (a token): its status and error, or 'opened' (then closed at once). */
  const tryUpgrade = async (user: string, path: string): Promise<{ status?: number; error: string }> => {
    const { token } = await issueToken(loadOrCreateJwtKey(join(work, 'data', 'jwt.key')), user, 600, Date.now());
    return new Promise((resolveAttempt) => {
      const socket = new WebSocket(`${url.replace(/^http/, 'ws')}${path}`, { headers: { authorization: `Bearer ${token}` } });
      socket.once('open', () => {
        socket.terminate();
        resolveAttempt({ error: 'opened' });
      });
      socket.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => resolveAttempt({ status: res.statusCode, error: (JSON.parse(body) as { error: string }).error }));
      });
      socket.once('error', (error) => resolveAttempt({ error: error.message }));
    });
  };

  it('runs every task on the job\'s nodes as the job\'s user, with its ranks; -l labels lines; the exit code is the highest; stdin reaches every task', async () => {
    const out = join(ada.home, 'steps.out');
    const id = await sbatch(ada, `#!/bin/sh
#SBATCH -N 3 -n 5 -t 5 -o ${out}
srun -l sh -c 'echo "$SLURM_PROCID $SLURM_NODEID $SLURM_LOCALID $SLURMD_NODENAME $SLURM_STEP_ID $SLURM_STEP_NUM_TASKS $SLURM_STEP_TASKS_PER_NODE $(id -un)"' | sort
srun -n 2 sh -c 'exit $((SLURM_PROCID + 3))'; echo "rc=$?"
echo hello | srun -l -N 2 cat | sort
srun -N 4 true; echo "too many nodes rc=$?"
srun -n 3 -N 1 -c 1 true; echo "too many tasks rc=$?"
srun -p batch true; echo "partition rc=$?"
srun -l -O -n 12 -N 3 sh -c 'echo "x$SLURM_PROCID"' | sort -k2 -t x -n
`);
    await waitFor(`job ${id} to end`, async () => ['COMPLETED', 'FAILED'].includes(await state(id)));
    const text = readFileSync(out, 'utf8');
    const lines = text.split('\n');
    // Tasks 0-4 on n1 (2), n2 (2), n3 (1): rank, node index, local rank, node, step 0, 5 tasks, 2(x2),1, the user.
    for (const expected of ['0: 0 0 0 node01', '1: 1 0 1 node01', '2: 2 1 0 node02', '3: 3 1 1 node02', '4: 4 2 0 node03']) {
      assert.ok(lines.includes(`${expected} 0 5 2(x2),1 ${ada.name}`), `${expected} in:\n${text}`);
    }
    assert.match(text, /srun: error: node02: task 1: Exited with exit code 4\nrc=4\n/);
    assert.match(text, /srun: error: node01: task 0: Exited with exit code 3\n/);
    assert.match(text, /0: hello\n1: hello\n/);
    assert.match(text, /the job has 3 node\(s\) and the step asks for 4 \(-N\): ask for at most 3\ntoo many nodes rc=2/);
    assert.match(text, /3 task\(s\) of 1 CPU\(s\) on a node where the job has 2 CPU\(s\).*\ntoo many tasks rc=2/);
    assert.match(text, /-p\/--partition is for a new job, not a step inside job \d+.*\npartition rc=2/);
    // Labels padded to the widest rank, as Slurm pads them.
    assert.match(text, /\npartition rc=2\n 0: x0\n 1: x1\n(?: \d: x\d\n){8}10: x10\n11: x11\n$/);
  });

  it('a job runs at most 256 step tasks at once, counting those waiting for their srun (red team: each is a supervisor and a held order)', async () => {
    const id = await sbatch(ada, '#!/bin/sh\nsleep 120\n', '-t', '5');
    await waitFor(`job ${id} to run`, async () => (await state(id)) === 'RUNNING');
    const { token } = await issueToken(loadOrCreateJwtKey(join(work, 'data', 'jwt.key')), ada.name, 600, Date.now());
    const api = createApiClient({ baseUrl: url }, { credentials: bearer(token) });
    try {
      const step = { command: ['true'], ntasks: 128, overcommit: true, workingDir: ada.home, env: { PATH: '/usr/bin:/bin' }, umask: 0o22 };
      // An environment past what a program is given is refused, before anything is held (red team: 256 steps of 0.9 MB held 250 MB).
      const huge = await api.post(`/jobs/${id}/steps`, { ...step, ntasks: 1, env: { BIG: 'x'.repeat(120_000), BIG2: 'y'.repeat(120_000), BIG3: 'z'.repeat(30_000) } })
        .then(() => null, (error: ApiRequestError) => error);
      assert.equal(huge?.status, 400);
      assert.match(huge?.error ?? '', new RegExp(`^job ${id}: the step's environment has 270017 characters, more than 262144`));
      // Asked for and not attached to (no srun): each holds its 128 tasks for 30 s.
      const first = await api.post<{ stepId: number }>(`/jobs/${id}/steps`, step);
      await api.post(`/jobs/${id}/steps`, step);
      // Another user attaching to ada's waiting step is told it is not theirs (403), not that it does not exist (red team: 404).
      const attempt = await tryUpgrade(bob.name, `/jobs/${id}/steps/${first.stepId}/attach`);
      assert.equal(attempt.status, 403, attempt.error);
      assert.equal(attempt.error, `step ${first.stepId} of job ${id} was asked for by ${ada.name}: only they may run it`);
      const refused = await api.post(`/jobs/${id}/steps`, { ...step, ntasks: 1 }).then(() => null, (error: ApiRequestError) => error);
      assert.equal(refused?.status, 429);
      assert.match(refused?.error ?? '', new RegExp(`^job ${id} runs 256 step tasks; with 1 more it would pass 256, the most one job runs at once$`));
    } finally {
      api.close();
      await runAs(ada, [taras, 'cancel', String(id), '--controller', url]);
    }
  });

  it('a step asks for at most its job\'s memory: srun --mem over it is refused (red team: it was granted), under it runs', async () => {
    const out = join(ada.home, 'step-mem.out');
    const id = await sbatch(ada, `#!/bin/sh
#SBATCH -N 1 -t 5 --mem 50M -o ${out}
srun --mem 20G true; echo "over rc=$?"
srun --mem 40M sh -c 'echo within'; echo "within rc=$?"
`);
    await waitFor(`job ${id} to end`, async () => ['COMPLETED', 'FAILED'].includes(await state(id)));
    const text = readFileSync(out, 'utf8');
    assert.match(text, new RegExp(`srun: error: job ${id}: the step asks for 20480 MiB of memory per node, more than the job's 50 MiB: memory required by the step is not available.*\\nover rc=2\\n`));
    assert.match(text, /\nwithin\nwithin rc=0\n$/);
  });

  it('srun checks its flags first, in the flags\' words, up to what a step request takes (it answered with the API\'s field names and a JSON example)', async () => {
    const out = join(ada.home, 'step-flags.out');
    const id = await sbatch(ada, `#!/bin/sh
#SBATCH -N 1 -t 5 -o ${out}
srun -J "" true; echo "rc=$?"
srun -t 99999999 true; echo "rc=$?"
srun -n 500 true; echo "rc=$?"
srun -c 200000 true; echo "rc=$?"
srun -N 100001 true; echo "rc=$?"
srun --mem 2000T true; echo "rc=$?"
srun -J "$(printf '%02000d' 0)" true; echo "rc=$?"
srun -J named -t 1 sh -c 'echo "ran $SLURM_STEP_ID"'; echo "rc=$?"
`);
    await waitFor(`job ${id} to end`, async () => ['COMPLETED', 'FAILED'].includes(await state(id)));
    assert.equal(readFileSync(out, 'utf8'), [
      "srun: error: -J/--job-name: got '': expected a non-empty name (or leave -J out)", 'rc=2',
      "srun: error: -t 99999999: 5999999940 s is past the longest time limit (3153600000 s, 100 years); give a shorter one, or leave -t out to run to the job's end", 'rc=2',
      'srun: error: -n 500: the number of tasks of one step is at most 128', 'rc=2',
      'srun: error: -c 200000: the number of CPUs per task is at most 100000', 'rc=2',
      'srun: error: -N 100001: the number of nodes is at most 100000', 'rc=2',
      'srun: error: --mem 2000T: 2097152000 MiB is past the most a node may have (1073741824 MiB, 1 PiB)', 'rc=2',
      'srun: error: -J/--job-name: a name of 2000 characters; give one of at most 1024', 'rc=2',
      'ran 0', 'rc=0', '',
    ].join('\n'));
  });

  it('srun\'s output into a slow pipe is all written before srun exits (writes to a pipe are asynchronous: process.exit dropped what was queued)', async () => {
    const dir = adaDir('slow-reader');
    const id = await sbatch(ada, `#!/bin/sh
#SBATCH -N 1 -n 2 -t 2 -o ${dir}/job.out
srun -n 2 sh -c 'head -c 2000000 /dev/zero | tr "\\\\0" x' | (sleep 2; wc -c) > ${dir}/count
`);
    await waitFor(`job ${id} to end`, async () => ['COMPLETED', 'FAILED', 'CANCELLED'].includes(await state(id)), 40_000);
    assert.equal(readFileSync(join(dir, 'count'), 'utf8').trim(), '4000000', readFileSync(join(dir, 'job.out'), 'utf8'));
    assert.equal(await state(id), 'COMPLETED');
  });

  /**
   * A job whose srun prints `bytes` (then exits with `code`) into a FIFO whose reader takes one byte, then waits
   * `pauseSeconds` (then runs `meanwhile(dir)`, srun's pid in $pid) before it counts the rest; resolves to srun's log and
   * the count, once the job has ended.
   */
  const pausedReaderJob = async (name: string, bytes: number, code: number, pauseSeconds: number, meanwhile = (_dir: string): string => ''): Promise<{ log: string; count: string; dir: string }> => {
    const dir = adaDir(name);
    const id = await sbatch(ada, `#!/bin/sh
#SBATCH -N 1 -n 1 -t 3 -o ${dir}/job.out
mkfifo ${dir}/fifo
srun -n 1 sh -c 'head -c ${bytes} /dev/zero | tr "\\\\0" x; exit ${code}' > ${dir}/fifo &
pid=$!
(dd bs=1 count=1 status=none > /dev/null; sleep ${pauseSeconds}; ${meanwhile(dir)} wc -c) < ${dir}/fifo > ${dir}/count
wait $pid; echo "srun rc=$?"
`);
    await waitFor(`job ${id} to end`, async () => ['COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT'].includes(await state(id)), 140_000);
    return { log: readFileSync(join(dir, 'job.out'), 'utf8'), count: readFileSync(join(dir, 'count'), 'utf8').trim(), dir };
  };

  it('srun holds no more than about a megabyte of output for a slow reader: the rest waits at the node (it held all of it)', { timeout: 150_000 }, async () => {
    // 150 MB; srun's peak memory is read from /proc while the reader waits.
    const { log, count, dir } = await pausedReaderJob('paced-reader', 150_000_000, 0, 5, (dir) => `grep VmHWM /proc/$pid/status > ${dir}/peak;`);
    assert.equal(count, '149999999', log);
    assert.match(log, /srun rc=0\n$/);
    const peakKiB = Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(join(dir, 'peak'), 'utf8'))?.[1]);
    assert.ok(peakKiB > 0 && peakKiB < 120 * 1024, `srun's peak memory ${peakKiB} KiB while its reader waited: it held the output itself`);
  });

  it('a task that ends while its output waits for a reader that pauses 45 s (past the supervisor\'s 40 s grace and ws\'s 30 s close): every byte and the exit code reach the reader (they were lost, srun rc 1)', { timeout: 150_000 }, async () => {
    // 1.5 MB: more than srun holds (1 MiB), so the rest waits on the way while the task has ended.
    const { log, count } = await pausedReaderJob('paused-reader', 1_500_000, 5, 45);
    assert.equal(count, '1499999', log);
    assert.match(log, /srun: error: node\d+: task 0: Exited with exit code 5\nsrun rc=5\n$/);
  });

  it('a step killed while srun waits for a slow reader: the output its task wrote and the task\'s real end still reach the reader (they were dropped after 5 s, the task reported CANCELLED)', { timeout: 120_000 }, async () => {
    const dir = adaDir('killed-paced');
    const id = await sbatch(ada, '#!/bin/sh\nsleep 300\n', '-N', '1', '-t', '5');
    await waitFor(`job ${id} to run`, async () => (await state(id)) === 'RUNNING');
    // srun from ada's own shell (not inside the job, which the cancel kills): 4 MB, all of it on its way while the reader waits.
    const shell = `mkfifo ${dir}/fifo
srun --jobid ${id} -n 1 sh -c 'head -c 4000000 /dev/zero | tr "\\\\0" x; touch ${dir}/written; sleep 100' > ${dir}/fifo 2> ${dir}/srun.err &
pid=$!
(dd bs=1 count=1 status=none > /dev/null; while [ ! -e ${dir}/cancelled ]; do sleep 0.2; done; sleep 15; wc -c) < ${dir}/fifo > ${dir}/count
wait $pid; echo "srun rc=$?" >> ${dir}/srun.err
`;
    const child = spawn('setpriv', ['--reuid', ada.name, '--regid', ada.name, '--init-groups', 'sh', '-c', shell], {
      cwd: ada.home, env: { PATH: `${join(root, 'bin')}:/usr/bin:/bin`, HOME: ada.home, TARAS_CONTROLLER: url }, stdio: 'ignore',
    });
    started.push(child);
    const done = new Promise((resolveExit) => child.once('exit', resolveExit));
    try {
      await waitFor('the task to have written its 2 MB', () => existsSync(join(dir, 'written')), 30_000);
      const cancel = await runAs(ada, [taras, 'cancel', String(id), '--controller', url]);
      assert.equal(cancel.status, 0, cancel.stderr);
      writeFileSync(join(dir, 'cancelled'), '');
      await Promise.race([done, sleep(90_000)]);
      const log = readFileSync(join(dir, 'srun.err'), 'utf8');
      assert.equal(readFileSync(join(dir, 'count'), 'utf8').trim(), '3999999', log);
      assert.doesNotMatch(log, /task 0: CANCELLED/);
      assert.match(log, /srun: error: node\d+: task 0: (Terminated|Killed|Hangup)\n(?:.*\n)*srun rc=(143|137|129)\n$/);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  it('only the job\'s owner runs steps in it: another user is refused, and nothing runs', async () => {
    const id = await sbatch(ada, '#!/bin/sh\nsleep 120\n', '-t', '5');
    await waitFor(`job ${id} to run`, async () => (await state(id)) === 'RUNNING');
    const marker = join(work, `bob-was-here-${id}`);
    const run = await runAs(bob, [taras, 'run', '--jobid', String(id), '--', 'touch', marker], { env: { TARAS_CONTROLLER: url, PATH: '/usr/bin:/bin' } });
    assert.equal(run.status, 1);
    assert.match(run.stderr, new RegExp(`srun: error: job ${id} belongs to ${ada.name}: only its owner may run steps in it`));
    await sleep(500);
    assert.equal(existsSync(marker), false);
    await runAs(ada, [taras, 'cancel', String(id), '--controller', url]);
  });

  /** A job of `jobSeconds` (at most 59) whose one step's task sleeps `taskSeconds`, then says so; resolves once the task runs. */
  const jobWithSleepingStep = async (name: string, jobSeconds: number, taskSeconds: number): Promise<{ id: number; out: string }> => {
    const out = join(ada.home, `${name}.out`);
    const started = join(ada.home, `${name}.started`);
    const id = await sbatch(ada, `#!/bin/sh
#SBATCH -N 1 -t 0:${String(jobSeconds).padStart(2, '0')} -o ${out}
srun -n 1 sh -c 'touch ${started}; sleep ${taskSeconds}; echo survived'; echo "srun rc=$?"
`);
    await waitFor('the step\'s task to start', () => existsSync(started));
    return { id, out };
  };
  /** The job ends COMPLETED, its step's task having run to its end. */
  const stepRanToItsEnd = async ({ id, out }: { id: number; out: string }, why: string): Promise<void> => {
    await waitFor(`job ${id} to end`, async () => ['COMPLETED', 'FAILED', 'TIMEOUT'].includes(await state(id)), 40_000);
    assert.equal(await state(id), 'COMPLETED');
    assert.equal(readFileSync(out, 'utf8'), 'survived\nsrun rc=0\n', why);
  };
  /** A client of the controller's API as root. */
  const rootApi = async () => {
    const { token } = await issueToken(loadOrCreateJwtKey(join(work, 'data', 'jwt.key')), 'root', 600, Date.now());
    return createApiClient({ baseUrl: url }, { credentials: bearer(token) });
  };

  it('a step\'s tasks take their job\'s raised time limit: a task started under an 8 s job outlives 8 s once root raises the job to 40 s', async () => {
    const job = await jobWithSleepingStep('step-limit', 8, 12);
    const api = await rootApi();
    try {
      const answer = await api.post<{ jobs: { result: string }[] }>('/jobs/update', { ids: [job.id], timeLimitSeconds: 40 });
      assert.deepEqual(answer.jobs.map((outcome) => outcome.result), ['cancelled']);
    } finally {
      api.close();
    }
    await stepRanToItsEnd(job, 'the task ran its 12 s (before: killed at the job\'s old end, 8 s)');
  });

  it('a step\'s tasks get their job\'s raised limit also when their agent cannot be reached then: the order is retried (across a reconfigure) and goes once the agent registers again', async () => {
    const job = await jobWithSleepingStep('step-retry', 15, 18);
    const { id } = job;
    const jobs = join(work, 'data', 'agent', 'jobs');
    const taskDir = join(jobs, readdirSync(jobs).find((name) => name.startsWith(`step-${id}.`))!);
    const node = (JSON.parse((await runAs(ada, [taras, 'show', String(id), '--json', '--controller', url])).stdout) as { nodes: string[] }).nodes[0];
    const limitOf = (): number | null => {
      const status = readStatus(taskDir);
      return status?.state === 'RUNNING' && status.deadline !== null ? Math.round((Date.parse(status.deadline) - Date.parse(status.startTime)) / 1000) : null;
    };
    const oldLimit = limitOf();
    assert.ok(oldLimit !== null && oldLimit <= 15, `the task starts with what is left of the job's 15 s: ${oldLimit}`);
    // The agent stops answering (its task's supervisor runs on), and the controller's way to it refuses connections:
    // a registration of the node at a port nothing listens on, signed with the cluster key as the agent's is.
    const closed = createServer();
    await new Promise<void>((resolveListen) => closed.listen(0, '127.0.0.1', resolveListen));
    const port = (closed.address() as { port: number }).port;
    await new Promise((resolveClose) => closed.close(resolveClose));
    agent.child.kill('SIGSTOP');
    try {
      const signed = createApiClient({ baseUrl: url }, { clusterKey: loadClusterKey(join(work, 'data', 'cluster.key')) });
      try {
        await signed.post('/agent/register', { url: `http://127.0.0.1:${port}`, nodes: [node], bootId: randomUUID(), reports: [] });
      } finally {
        signed.close();
      }
      const api = await rootApi();
      try {
        await api.post('/jobs/update', { ids: [id], timeLimitSeconds: 60 });
        // The job's own order and its step's are sent together, each to the address the controller held then.
        await waitFor('the limit orders to fail', () => new RegExp(`job ${id}: could not give it its new time limit on ${node} `).test(controller.log()), 10_000);
        assert.equal(limitOf(), oldLimit, 'not told yet');
        // A reconfigure makes a new engine: the step's order, still on its way, goes on with it.
        await api.post('/admin/reconfigure', {});
      } finally {
        api.close();
      }
    } finally {
      agent.child.kill('SIGCONT'); // it registers its real address again at its next heartbeat
    }
    await waitFor('the task to hold the new limit', () => (limitOf() ?? 0) > 50, 15_000)
      .catch((error: Error) => assert.fail(`${error.message} (it holds ${limitOf()} s); the controller's log:\n${controller.log().slice(-2000)}`));
    assert.match(controller.log(), new RegExp(`job ${id}: could not give step 0's tasks their new time limit on ${node} \\(.*not reachable.*\\); will retry`));
    assert.equal(limitOf(), oldLimit! + 45, 'what is left of the job\'s 60 s from the step\'s start (45 s more than of its 15 s)');
    await stepRanToItsEnd(job, 'the task ran its 18 s, past the job\'s old end (15 s)');
  });

  it('a step resumed after a restart of the controller takes its job\'s raised limit: the step\'s start is kept on the disk with its id (its tasks kept the old one)', async () => {
    const job = await jobWithSleepingStep('resumed-limit', 14, 20);
    const port = new URL(url).port;
    await killHard(controller.child);
    controller = await startDaemon(taras, started, ['controller', '--config', join(work, 'cluster.toml'), '--port', port], /listening on (http:\/\/127\.0\.0\.1:\d+)/, work);
    await waitFor('srun to resume its step', () => new RegExp(`job ${job.id}: step 0 \\(1 task\\(s\\) on node\\d+\\) resumed by ${ada.name}`).test(controller.log()), 10_000);
    const api = await rootApi();
    try {
      await api.post('/jobs/update', { ids: [job.id], timeLimitSeconds: 60 });
    } finally {
      api.close();
    }
    await waitFor(`job ${job.id} to end`, async () => ['COMPLETED', 'FAILED', 'TIMEOUT'].includes(await state(job.id)), 40_000);
    const why = `controller:\n${controller.log().slice(-1500)}`;
    // Before: 'srun: error: node01: task 0: SIGHUP', rc 129, at the old end.
    assert.equal(readFileSync(job.out, 'utf8'), `srun: lost the connection to the controller during step ${job.id}.0; reconnecting for up to 30 s\nsurvived\nsrun rc=0\n`, why);
    assert.equal(await state(job.id), 'COMPLETED', why);
  });

  it('a step\'s tasks survive their agent\'s restart (SIGKILL, started again): srun gets all their output and their real exit code, also of a task that ended while the agent was down', async () => {
    const dir = adaDir('agent-restart');
    const id = await sbatch(ada, `#!/bin/sh
#SBATCH -N 1 -n 2 -t 1 -o ${dir}/job.out
(srun -n 1 sh -c 'echo a1; touch ${dir}/a; while [ ! -e ${dir}/b ]; do sleep 0.1; done; sleep 2; echo a2; exit 3' > ${dir}/a.out; echo "srun rc=$?" >> ${dir}/a.out) &
srun -n 1 sh -c 'echo b1; touch ${dir}/b; sleep 7; echo b2' > ${dir}/b.out; echo "srun rc=$?" >> ${dir}/b.out
wait
`);
    await waitFor('both tasks to start', () => existsSync(join(dir, 'a')) && existsSync(join(dir, 'b')));
    await killHard(agent.child);
    // Task a ends while its agent is down (its supervisor keeps its output and end); task b outlives the restart.
    await sleep(3000);
    agent = await startDaemon(taras, started, ['agent', '--controller', url, '--virtual', '3x2', '--data', join(work, 'data', 'agent'), '--key', join(work, 'data', 'cluster.key')], /registered 3 node/, work);
    await waitFor(`job ${id} to end`, async () => ['COMPLETED', 'FAILED', 'CANCELLED'].includes(await state(id)), 20_000);
    const why = `job.out:\n${readFileSync(join(dir, 'job.out'), 'utf8')}\ncontroller:\n${controller.log().slice(-1500)}`;
    assert.equal(readFileSync(join(dir, 'a.out'), 'utf8'), 'a1\na2\nsrun rc=3\n', why);
    assert.equal(readFileSync(join(dir, 'b.out'), 'utf8'), 'b1\nb2\nsrun rc=0\n', why);
    assert.equal(await state(id), 'COMPLETED', why);
    assert.match(controller.log(), new RegExp(`job ${id} step \\d: reattached to task 0 on node01`));
  });

  it('a step survives a restart of the controller (SIGKILL, started again on its data): srun resumes the same step and gets every line and the real exit code, also of a task that ended meanwhile; a later step takes a new id; another user cannot resume it', async () => {
    const dir = adaDir('controller-restart');
    const id = await sbatch(ada, `#!/bin/sh
#SBATCH -N 1 -n 2 -t 2 -o ${dir}/job.out
(srun -n 1 sh -c 'echo a1; touch ${dir}/a; while [ ! -e ${dir}/down ]; do sleep 0.1; done; sleep 1; echo a2; exit 3' > ${dir}/a.out; echo "srun rc=$?" >> ${dir}/a.out) &
(for i in 1 2 3 4 5 6; do echo in$i; sleep 1; done) | srun -n 1 sh -c 'echo b1; touch ${dir}/b; for i in 2 3 4 5 6 7 8; do sleep 1; echo b$i; done; echo "stdin: $(cat | tr "\\n" " ")"' > ${dir}/b.out; echo "srun rc=$?" >> ${dir}/b.out
wait
srun -n 1 sh -c 'echo "later step $SLURM_STEP_ID"'
`);
    await waitFor('both tasks to start', () => existsSync(join(dir, 'a')) && existsSync(join(dir, 'b')));
    // (Output still on its way through the controller when it dies comes again from the supervisors: the next test.)
    const port = new URL(url).port;
    const config = join(work, 'cluster.toml');
    await killHard(controller.child);
    // Task a ends while the controller is down (its supervisor keeps its output and end); task b prints on.
    writeFileSync(join(dir, 'down'), '');
    await sleep(2500);
    controller = await startDaemon(taras, started, ['controller', '--config', config, '--port', port], /listening on (http:\/\/127\.0\.0\.1:\d+)/, work);
    assert.equal(controller.match[1], url);
    // Another user cannot take ada's step up (whether or not her srun has yet), nor can ada with a made-up layout.
    const bobs = await tryUpgrade(bob.name, `/jobs/${id}/steps/1/resume/node01`);
    assert.equal(bobs.status, 403, bobs.error);
    assert.equal(bobs.error, `job ${id} belongs to ${ada.name}: only its owner may run steps in it`);
    const elsewhere = await tryUpgrade(ada.name, `/jobs/${id}/steps/1/resume/node01,node02`);
    assert.equal(elsewhere.status, 400, elsewhere.error);
    assert.match(elsewhere.error, new RegExp(`^job ${id} has no node 'node02'`));
    await waitFor(`job ${id} to end`, async () => ['COMPLETED', 'FAILED', 'CANCELLED'].includes(await state(id)), 40_000);
    const why = `job.out:\n${readFileSync(join(dir, 'job.out'), 'utf8')}\ncontroller:\n${controller.log().slice(-2000)}`;
    assert.equal(readFileSync(join(dir, 'a.out'), 'utf8'), 'a1\na2\nsrun rc=3\n', why);
    assert.equal(readFileSync(join(dir, 'b.out'), 'utf8'), 'b1\nb2\nb3\nb4\nb5\nb6\nb7\nb8\nstdin: in1 in2 in3 in4 in5 in6 \nsrun rc=0\n', why);
    assert.equal(await state(id), 'COMPLETED', why);
    assert.match(readFileSync(join(dir, 'job.out'), 'utf8'), /srun: lost the connection to the controller during step \d+\.[01]; reconnecting for up to 30 s\n/);
    assert.match(readFileSync(join(dir, 'job.out'), 'utf8'), /later step 2\n$/, why);
    assert.match(controller.log(), new RegExp(`job ${id}: step 0 \\(1 task\\(s\\) on node01\\) resumed by ${ada.name}`));
    assert.match(controller.log(), new RegExp(`job ${id}: step 1 \\(1 task\\(s\\) on node01\\) resumed by ${ada.name}`));
    // A step that is not on the agents cannot be resumed (nothing is started for it).
    const idle = await sbatch(ada, '#!/bin/sh\nsleep 120\n', '-t', '5');
    await waitFor(`job ${idle} to run`, async () => (await state(idle)) === 'RUNNING');
    const nothing = await tryUpgrade(ada.name, `/jobs/${idle}/steps/0/resume/${(JSON.parse((await runAs(ada, [taras, 'show', String(idle), '--json', '--controller', url])).stdout) as { nodes: string[] }).nodes[0]}`);
    assert.equal(nothing.status, 404, nothing.error);
    await runAs(ada, [taras, 'cancel', String(idle), '--controller', url]);
  });

  it('output on its way through the controller when it dies is not lost: the supervisor keeps it until srun acknowledges it, and srun shows each line once, in order', async () => {
    const dir = adaDir('in-flight');
    const id = await sbatch(ada, `#!/bin/sh
#SBATCH -N 1 -n 1 -t 2 -o ${dir}/job.out
srun -n 1 sh -c 'echo start; while [ ! -e ${dir}/go ]; do sleep 0.05; done; seq 1 20000; touch ${dir}/printed; while [ ! -e ${dir}/down ]; do sleep 0.05; done; seq 20001 20100' > ${dir}/lines.out
echo "srun rc=$?" >> ${dir}/lines.out
`);
    const lines = join(dir, 'lines.out');
    await waitFor('srun to have the first line', () => existsSync(lines) && readFileSync(lines, 'utf8').startsWith('start\n'));
    // The controller stops reading: the task's 109 KB reach its socket and go no further, then it dies with them.
    const stopped = controller.child;
    process.kill(stopped.pid!, 'SIGSTOP');
    writeFileSync(join(dir, 'go'), '');
    await waitFor('the task to print its lines', () => existsSync(join(dir, 'printed')));
    await sleep(500);
    await killHard(stopped);
    writeFileSync(join(dir, 'down'), '');
    controller = await startDaemon(taras, started, ['controller', '--config', join(work, 'cluster.toml'), '--port', new URL(url).port], /listening on (http:\/\/127\.0\.0\.1:\d+)/, work);
    await waitFor(`job ${id} to end`, async () => ['COMPLETED', 'FAILED', 'CANCELLED'].includes(await state(id)), 40_000);
    const expected = `start\n${Array.from({ length: 20_100 }, (_, i) => `${i + 1}\n`).join('')}srun rc=0\n`;
    const got = readFileSync(lines, 'utf8');
    // Compared line by line first: a failure names the first line missing or doubled, not 100 KB of text.
    const gotLines = got.split('\n');
    const firstWrong = expected.split('\n').findIndex((line, i) => gotLines[i] !== line);
    assert.equal(firstWrong, -1, `line ${firstWrong + 1} is ${JSON.stringify(gotLines[firstWrong])}; job.out:\n${readFileSync(join(dir, 'job.out'), 'utf8')}`);
    assert.equal(got, expected);
    assert.equal(await state(id), 'COMPLETED');
    assert.match(readFileSync(join(dir, 'job.out'), 'utf8'), /srun: lost the connection to the controller during step \d+\.0; reconnecting for up to 30 s\n/);
    assert.doesNotMatch(readFileSync(join(dir, 'job.out'), 'utf8'), /lost \(more than/);
  });

  /** The status of task `task` of the first step of `id` on the agent (null: none yet, or gone). */
  const taskStatus = (id: number, task: number): { state: string; supervisorPid: number } | null => {
    const file = join(work, 'data', 'agent', 'jobs', `step-${id}.0.0.${task}`, 'status.json');
    try {
      return JSON.parse(readFileSync(file, 'utf8')) as { state: string; supervisorPid: number };
    } catch {
      return null;
    }
  };
  /** A two-task step: task 0 ends with exit code 3 once `go` exists, task 1 once `down` exists. */
  const twoTaskJob = (dir: string): string => `#!/bin/sh
#SBATCH -N 1 -n 2 -t 2 -o ${dir}/job.out
srun -n 2 sh -c 'if [ $SLURM_PROCID = 0 ]; then while [ ! -e ${dir}/go ]; do sleep 0.05; done; echo zero-done; touch ${dir}/zero-ended; exit 3; fi; echo one-start; while [ ! -e ${dir}/down ]; do sleep 0.05; done; echo one-done' > ${dir}/lines.out
echo "srun rc=$?" >> ${dir}/lines.out
`;
  const restartController = async (): Promise<void> => {
    controller = await startDaemon(taras, started, ['controller', '--config', join(work, 'cluster.toml'), '--port', new URL(url).port], /listening on (http:\/\/127\.0\.0\.1:\d+)/, work);
  };
  /** The step's end as srun told it: both tasks' lines, task 0's exit code named, srun's exit code 3. */
  const assertEndsKept = async (id: number, dir: string): Promise<void> => {
    await waitFor(`job ${id} to end`, async () => ['COMPLETED', 'FAILED', 'CANCELLED'].includes(await state(id)), 40_000);
    const jobOut = readFileSync(join(dir, 'job.out'), 'utf8');
    const why = `job.out:\n${jobOut}\ncontroller:\n${controller.log().slice(-1500)}`;
    assert.deepEqual(readFileSync(join(dir, 'lines.out'), 'utf8').split('\n').sort(), ['', 'one-done', 'one-start', 'srun rc=3', 'zero-done'], why);
    assert.match(readFileSync(join(dir, 'lines.out'), 'utf8'), /srun rc=3\n$/, why);
    assert.match(jobOut, /srun: error: node01: task 0: Exited with exit code 3\n/, why);
    assert.doesNotMatch(jobOut, /task 1:|could not reattach|refused to resume/, why);
    assert.match(jobOut, /srun: lost the connection to the controller during step \d+\.0; reconnecting for up to 30 s\n/, why);
  };

  it('a task\'s end on its way through the controller when it dies is not lost: its supervisor keeps it until srun acknowledges it, and srun reports the real exit code', async () => {
    const dir = adaDir('end-in-flight');
    const id = await sbatch(ada, twoTaskJob(dir));
    await waitFor('both tasks to run', () => existsSync(join(dir, 'lines.out')) && readFileSync(join(dir, 'lines.out'), 'utf8').includes('one-start'));
    // The controller stops reading: task 0's end reaches its socket and goes no further, then it dies with it.
    const stopped = controller.child;
    process.kill(stopped.pid!, 'SIGSTOP');
    writeFileSync(join(dir, 'go'), '');
    await waitFor('task 0 to end', () => existsSync(join(dir, 'zero-ended')));
    await sleep(300);
    await killHard(stopped);
    await sleep(1500); // past the second in which a client that never acknowledges is taken to have the end
    const status = taskStatus(id, 0);
    assert.ok(status?.state === 'FAILED' && alive(status.supervisorPid), `task 0's supervisor keeps its end: nobody acknowledged it (${JSON.stringify(status)})`);
    await restartController();
    writeFileSync(join(dir, 'down'), '');
    await assertEndsKept(id, dir);
  });

  it('a task whose end srun has is left alone when srun resumes its step: its supervisor has left, and the other tasks are resumed', async () => {
    const dir = adaDir('end-acknowledged');
    const id = await sbatch(ada, twoTaskJob(dir));
    await waitFor('both tasks to run', () => existsSync(join(dir, 'lines.out')) && readFileSync(join(dir, 'lines.out'), 'utf8').includes('one-start'));
    writeFileSync(join(dir, 'go'), '');
    // srun acknowledges task 0's end: its supervisor leaves at once, not after a grace.
    await waitFor('task 0 to end', () => existsSync(join(dir, 'zero-ended')));
    await waitFor('task 0\'s supervisor to leave', () => {
      const status = taskStatus(id, 0);
      return status === null || (status.state === 'FAILED' && !alive(status.supervisorPid));
    }, 5000);
    await killHard(controller.child);
    await restartController();
    writeFileSync(join(dir, 'down'), '');
    await assertEndsKept(id, dir);
    assert.match(controller.log(), new RegExp(`job ${id}: step 0 \\(2 task\\(s\\) on node01\\) resumed by ${ada.name}`));
  });

  it('srun\'s input on its way through the controller when it dies is not lost: srun keeps it until every task has taken it, sends it again after the resume, and each task takes it once', async () => {
    const dir = adaDir('input-in-flight');
    const id = await sbatch(ada, `#!/bin/sh
#SBATCH -N 1 -n 2 -t 2 -o ${dir}/job.out
mkfifo ${dir}/in
srun -n 2 sh -c 'cat > ${dir}/got.$SLURM_PROCID; echo "task $SLURM_PROCID read all"' < ${dir}/in > ${dir}/lines.out
echo "srun rc=$?" >> ${dir}/lines.out
`);
    await waitFor('the job to make its pipe', () => existsSync(join(dir, 'in')));
    const writer = await open(join(dir, 'in'), 'w'); // srun's stdin: opened once srun's shell opens it
    const got = (task: number): string => (existsSync(join(dir, `got.${task}`)) ? readFileSync(join(dir, `got.${task}`), 'utf8') : '');
    try {
      await writer.write('part1\n');
      await waitFor('both tasks to take part1', () => got(0) === 'part1\n' && got(1) === 'part1\n');
      // The controller stops reading: srun's next input reaches its socket and goes no further, then it dies with it.
      const stopped = controller.child;
      process.kill(stopped.pid!, 'SIGSTOP');
      await writer.write('part2\n');
      await sleep(500);
      await killHard(stopped);
      await restartController();
      await writer.write('part3\n');
    } finally {
      await writer.close(); // end of input: the tasks' cat ends
    }
    await waitFor(`job ${id} to end`, async () => ['COMPLETED', 'FAILED', 'CANCELLED'].includes(await state(id)), 40_000);
    const why = `job.out:\n${readFileSync(join(dir, 'job.out'), 'utf8')}\nlines.out:\n${readFileSync(join(dir, 'lines.out'), 'utf8')}`;
    assert.equal(got(0), 'part1\npart2\npart3\n', why);
    assert.equal(got(1), 'part1\npart2\npart3\n', why);
    assert.deepEqual(readFileSync(join(dir, 'lines.out'), 'utf8').split('\n').sort(), ['', 'srun rc=0', 'task 0 read all', 'task 1 read all'], why);
    assert.match(readFileSync(join(dir, 'job.out'), 'utf8'), /srun: lost the connection to the controller during step \d+\.0; reconnecting/, why);
  });

  it('a controller that never comes back: srun gives up after 30 s, naming why, and its task is killed when its supervisor\'s 40 s grace runs out', { timeout: 150_000 }, async () => {
    const dir = adaDir('never-back');
    const id = await sbatch(ada, `#!/bin/sh
#SBATCH -N 1 -n 1 -t 3 -o ${dir}/job.out
srun -n 1 sh -c 'echo $$ > ${dir}/task.pid; exec sleep 300'
echo "srun rc=$?" > ${dir}/rc
`);
    await waitFor('the task to start', () => existsSync(join(dir, 'task.pid')) && readFileSync(join(dir, 'task.pid'), 'utf8').trim() !== '');
    const task = Number(readFileSync(join(dir, 'task.pid'), 'utf8').trim());
    const goneMs = Date.now();
    await killHard(controller.child);
    await waitFor('srun to give up', () => existsSync(join(dir, 'rc')), 50_000);
    const gaveUpMs = Date.now() - goneMs;
    const jobOut = readFileSync(join(dir, 'job.out'), 'utf8');
    assert.equal(readFileSync(join(dir, 'rc'), 'utf8'), 'srun rc=1\n', jobOut);
    assert.match(jobOut, /srun: error: lost the connection to step \d+\.0: could not resume it within 30 s \(.+\); its tasks are killed\n/, jobOut);
    assert.ok(gaveUpMs >= 29_000, `srun gave up after ${gaveUpMs} ms`);
    assert.ok(alive(task), 'the task runs on within its supervisor\'s grace');
    await waitFor('the task to be killed', () => !alive(task), 30_000);
    assert.ok(Date.now() - goneMs >= 39_000, `killed ${Date.now() - goneMs} ms after the controller went`);
    await restartController();
    await waitFor(`job ${id} to end`, async () => ['COMPLETED', 'FAILED', 'CANCELLED'].includes(await state(id)), 40_000);
  });

  it('a step\'s tasks end with their job (scancel), also a task that ignores SIGTERM, and when their srun is killed', async () => {
    const pids = join(ada.home, 'pids');
    mkdirSync(pids);
    chownSync(pids, ada.uid, ada.gid);
    const id = await sbatch(ada, `#!/bin/sh
srun -n 1 sh -c 'echo $$ > ${pids}/gone-with-srun; exec sleep 300' &
echo $! > ${pids}/srun
srun -N 2 sh -c 'trap "" TERM; echo $$ > ${pids}/task-$SLURM_PROCID; exec sleep 300'
`, '-N', '2', '-n', '2', '-t', '5');
    const read = (name: string): number => Number(readFileSync(join(pids, name), 'utf8').trim());
    await waitFor('the tasks to write their pids', () => ['gone-with-srun', 'srun', 'task-0', 'task-1'].every((name) => existsSync(join(pids, name)) && readFileSync(join(pids, name), 'utf8').trim() !== ''));
    const [lonely, srun, task0, task1] = ['gone-with-srun', 'srun', 'task-0', 'task-1'].map(read);
    assert.ok(alive(lonely) && alive(task0) && alive(task1));
    // srun killed outright: its task is killed by the controller (srun went away).
    process.kill(srun, 'SIGKILL');
    await waitFor('the task of the killed srun to end', () => !alive(lonely));
    assert.equal(await state(id), 'RUNNING');
    // The job cancelled: its tasks die with it, even one that ignores SIGTERM.
    const cancel = await runAs(ada, [taras, 'cancel', String(id), '--controller', url]);
    assert.equal(cancel.status, 0, cancel.stderr);
    await waitFor('the tasks of the cancelled job to end', () => !alive(task0) && !alive(task1));
    // Their step directories are removed once the tasks are over.
    const stepDirs = (): string[] => readdirSync(join(work, 'data', 'agent', 'jobs')).filter((name) => name.startsWith('step-'));
    await eventually(() => `the step directories to go: ${stepDirs().map((name) => `${name} ${readFileSync(join(work, 'data', 'agent', 'jobs', name, 'status.json'), 'utf8').slice(0, 300)}`).join('; ')}`,
      () => stepDirs().length === 0, 20_000);
  });
});
