// Priority jobs with a deadline on a real cluster (`taras up --config`, one
// node of 2 CPUs, EASY, real `sleep` jobs with limits of a few seconds):
// 1. background load of whole-node jobs (one running, three waiting); a job
//    submitted with `taras submit --deadline` that its FCFS place cannot
//    serve is guaranteed, overtakes exactly the two jobs it must, and ends
//    by its deadline;
// 2. a deadline the plan cannot meet is accepted without a guarantee and
//    the shortfall is told (and refused with --deadline-policy cancel); one
//    no plan could meet is refused;
// 3. --deadline-policy cancel: a guaranteed job whose node is drained ends
//    DEADLINE at its latest start, with the cause logged.
// Everything started here is stopped by its PID; the folder is removed.

import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { finishedStates, type ApiJob, type ApiJobWithEvents, type ApiNode, type ApiSubmitted, type ApiWhen } from '../src/api/types.js';
import type { JobSpec } from '../src/jobspec/types.js';
import { createApiClient, type ApiClient } from '../src/net/client.js';
import { stopUp, waitForOutput } from './daemon-process.js';
import { eventually } from './poll.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const work = mkdtempSync(join(tmpdir(), 'taras-deadline-e2e-'));
const data = join(work, 'data');
const dir = join(work, 'jobs');
const started: ChildProcess[] = [];

after(() => stopUp(started, data, work));

const CLUSTER = `[cluster]
name = "deadline-e2e"
policy = "easy"
listen = "127.0.0.1:6817"
keep_finished = "1h"

[[nodes]]
names = "n1"
cpus = 2
memory = "2G"

[[partitions]]
name = "a"
nodes = "n1"
default = true
`;

/** A whole-node job of `limit` seconds that sleeps `sleepSeconds`. */
function spec(name: string, limit: number, sleepSeconds: number): JobSpec {
  return {
    script: { path: join(dir, `${name}.sh`), text: `#!/bin/sh\nsleep ${sleepSeconds}\n`, args: [] },
    nodes: { min: 1 }, cpusPerTask: 2, timeLimitSeconds: limit, name, workingDir: dir, output: 'taras-%j.out',
    export: { all: false, variables: [] }, requeue: false,
  };
}

/** `taras ARGS` as root through the controller's socket (asynchronously: the controller runs in another process, but the test's loop must not block). */
function taras(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolveRun) => {
    execFile(process.execPath, [join(root, 'bin/taras.js'), ...args], {
      cwd: dir, timeout: 30_000, env: { ...process.env, TARAS_CONTROLLER: `unix:${join(data, 'taras.sock')}`, TARAS_JOB_ID: '' },
    }, (error, stdout, stderr) => resolveRun({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr }));
  });
}

/** Local time as `YYYY-MM-DDTHH:MM:SS`, a form --deadline reads. */
function localStamp(ms: number): string {
  const d = new Date(ms);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}T${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

async function job(api: ApiClient, id: number): Promise<ApiJob> {
  return api.get<ApiJob>(`/jobs/${id}`);
}

describe('priority jobs with a deadline on a real cluster (taras up, EASY, one node)', () => {
  it('overtakes exactly the jobs it must and ends by its deadline; a short one is told the shortfall; cancel ends DEADLINE', { timeout: 120_000 }, async (t) => {
    mkdirSync(dir);
    const file = join(work, 'cluster.toml');
    writeFileSync(file, CLUSTER);
    const up = spawn(process.execPath, [join(root, 'bin/taras.js'), 'up', '--config', file, '--port', '0', '--data', data], { cwd: work, stdio: ['ignore', 'pipe', 'pipe'] });
    started.push(up);
    const log = { text: '' };
    const keep = (chunk: Buffer) => (log.text = (log.text + chunk.toString()).slice(-60_000));
    up.stdout!.on('data', keep);
    up.stderr!.on('data', keep);
    await waitForOutput(up, /Ctrl-C stops/, 20_000);
    const api = createApiClient({ socketPath: join(data, 'taras.sock') }, { timeoutMs: 10_000 });
    await eventually('the node', async () => ((await api.get<ApiNode[]>('/nodes'))[0]?.state === 'idle' ? true : undefined), 20_000);

    // 1. Load: B runs (limit 5 s), N2, N3, N4 wait (5 s each): planned at +5, +10, +15 from B's start.
    const ids = new Map<string, number>();
    for (const name of ['B', 'N2', 'N3', 'N4']) {
      ids.set(name, (await api.post<ApiSubmitted>('/jobs', { spec: spec(name, 5, 4) })).id);
    }
    const b = await eventually('B to start', async () => {
      const found = await job(api, ids.get('B')!);
      return found.startTime === null ? undefined : found;
    }, 10_000);
    const s0 = Date.parse(b.startTime!);
    // A 3 s job that must end by s0 + 15 (latest start s0 + 12): behind N4 (s0 + 20) or N3 (s0 + 15) too late,
    // behind N2 (s0 + 10) in time: it overtakes N3 and N4, not N2.
    const deadlineMs = s0 + 15_000;
    writeFileSync(join(dir, 'p.sh'), '#!/bin/sh\n#TARAS --time 0:03\nsleep 2\n');
    const submitted = await taras(['submit', '--deadline', localStamp(deadlineMs), '--job-name', 'P', '-c', '2', 'p.sh']);
    assert.equal(submitted.code, 0, submitted.stderr);
    const pId = Number(/Submitted batch job (\d+)/.exec(submitted.stdout)?.[1]);
    assert.match(submitted.stdout, /Deadline: guaranteed to end by /);
    ids.set('P', pId);
    const when = await taras(['when', String(pId)]);
    assert.match(when.stdout, /Guaranteed to end by its deadline/);
    const queue = await taras(['queue']);
    assert.match(queue.stdout, /JOBID\s+T\s+USER/, 'the type column');
    assert.match(queue.stdout, new RegExp(`\\b${pId}\\s+P\\s+root`), 'P is a priority job');
    assert.match(queue.stdout, new RegExp(`\\b${ids.get('N2')}\\s+N\\s+root`), 'N2 is a normal job');

    const ended = await eventually('every job of part 1 to end', async () => {
      const jobs = await Promise.all([...ids.values()].map((id) => job(api, id)));
      return jobs.every((one) => finishedStates.includes(one.state)) ? jobs : undefined;
    }, 60_000);
    const byName = new Map(ended.map((one) => [one.name, one]));
    const order = [...ended].sort((x, y) => Date.parse(x.startTime!) - Date.parse(y.startTime!)).map((one) => one.name);
    assert.deepEqual(order, ['B', 'N2', 'P', 'N3', 'N4'], `start order\n${log.text}`);
    const p = byName.get('P')!;
    assert.equal(p.state, 'COMPLETED');
    assert.equal(p.type, 'priority');
    assert.equal(p.guaranteed, true);
    assert.ok(Date.parse(p.endTime!) <= deadlineMs, `P ended ${p.endTime}, deadline ${new Date(deadlineMs).toISOString()}`);
    t.diagnostic(`P started ${(Date.parse(p.startTime!) - s0) / 1000} s after B, ended ${(deadlineMs - Date.parse(p.endTime!)) / 1000} s before its deadline`);

    // 2. R may run 9 s; Q (3 s) must end 5 s from now: at best it starts when R's limit ends (up to 9 s from
    // now, less the time Q's CLI took to start), so it cannot: accepted without a guarantee, the shortfall told.
    const r = (await api.post<ApiSubmitted>('/jobs', { spec: spec('R', 9, 8) })).id;
    await eventually('R to start', async () => ((await job(api, r)).state === 'RUNNING' ? true : undefined), 10_000);
    const q = await taras(['submit', '--deadline', 'now+5seconds', '--time', '0:03', '-c', '2', '--job-name', 'Q', '--json', 'p.sh']);
    assert.equal(q.code, 0, q.stderr);
    const answer = JSON.parse(q.stdout) as ApiSubmitted;
    assert.equal(answer.deadline?.guaranteed, false);
    assert.ok(answer.deadline!.shortfallSeconds! >= 1 && answer.deadline!.shortfallSeconds! <= 7, `shortfall ${answer.deadline!.shortfallSeconds}`);
    assert.equal(answer.deadline!.shortfallSeconds, Math.max(0, Math.ceil((Date.parse(answer.deadline!.plannedEnd!) - Date.parse(answer.deadline!.deadline)) / 1000)));
    assert.match(answer.warning ?? '', /cannot be guaranteed .*: it would end \d+ s after it/);
    const qWhen = await api.get<ApiWhen>(`/jobs/${answer.id}/when`);
    assert.match(qWhen.deadline!.text, /^not guaranteed to end by .*: its planned end is \d+ s after it/);
    // A retried submission (the same idempotency key) answers the first job, with the same warning (kept in the stored request).
    const keyed = { spec: { ...spec('Q2', 3, 2), deadline: { atMs: Date.now() + 5000, policy: 'guarantee' } }, idempotencyKey: 'deadline-retry-0001' } as const;
    const first = await api.post<ApiSubmitted>('/jobs', keyed);
    assert.match(first.warning ?? '', /cannot be guaranteed/);
    const retried = await api.post<ApiSubmitted>('/jobs', keyed);
    assert.deepEqual([retried.id, retried.warning], [first.id, first.warning]);
    const plain = await taras(['submit', '--deadline', 'now+5seconds', '--time', '0:03', '-c', '2', 'p.sh']);
    assert.match(plain.stderr, /warning: the deadline .* cannot be guaranteed/);
    const cancelShort = await taras(['submit', '--deadline', 'now+5seconds', '--deadline-policy', 'cancel', '--time', '0:03', '-c', '2', 'p.sh']);
    assert.notEqual(cancelShort.code, 0);
    assert.match(cancelShort.stderr, /cannot be met .* with --deadline-policy cancel the job is refused/);
    const never = await taras(['submit', '--deadline', 'now+2seconds', '--time', '0:03', '-c', '2', 'p.sh']);
    assert.notEqual(never.code, 0);
    assert.match(never.stderr, /can never be met/);

    // 3. Once the node is free: S runs 6 s (limit 7 s); C (2 s, cancel) must end within 12 s: guaranteed behind S.
    // The node is drained (while S runs): C cannot start by its latest start (deadline - 2 s) and ends DEADLINE then.
    await eventually('the queue to empty', async () => {
      const jobs = await api.get<{ jobs: ApiJob[] }>('/jobs');
      return jobs.jobs.every((one) => finishedStates.includes(one.state)) ? true : undefined;
    }, 40_000);
    const s = (await api.post<ApiSubmitted>('/jobs', { spec: spec('S', 7, 6) })).id;
    await eventually('S to start', async () => ((await job(api, s)).state === 'RUNNING' ? true : undefined), 10_000);
    const cDeadlineMs = Date.now() + 12_000;
    const c = await api.post<ApiSubmitted>('/jobs', { spec: { ...spec('C', 2, 1), deadline: { atMs: cDeadlineMs, policy: 'cancel' } } });
    assert.equal(c.deadline?.guaranteed, true, JSON.stringify(c));
    const drained = await taras(['admin', 'drain', 'n1', '--reason', 'deadline test']);
    assert.equal(drained.code, 0, drained.stderr);
    const cEnded = await eventually('C to end', async () => {
      const found = await api.get<ApiJobWithEvents>(`/jobs/${c.id}`);
      return finishedStates.includes(found.state) ? found : undefined;
    }, 20_000);
    assert.equal(cEnded.state, 'DEADLINE');
    assert.match(cEnded.reason ?? '', /^DeadLine: it could no longer end by its deadline .*nodes lost/);
    const endedAt = Date.parse(cEnded.endTime!);
    assert.ok(endedAt >= cDeadlineMs - 2000 - 1000 && endedAt <= cDeadlineMs, `ended DEADLINE at its latest start (${new Date(endedAt).toISOString()}, deadline ${new Date(cDeadlineMs).toISOString()})`);
    const lost = cEnded.events.find((event) => event.type === 'deadline');
    assert.match(String((lost?.detail as { cause?: string } | undefined)?.cause), /^nodes lost/);
    assert.match(log.text, new RegExp(`job ${c.id}: its deadline .* can no longer be guaranteed \\(nodes lost`));
    await taras(['admin', 'resume', 'n1']);
  });
});
