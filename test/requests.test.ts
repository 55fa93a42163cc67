// Issue 9, "Every bad request is refused before anything is stored": every
// body shape that crashed or bricked the controller is refused with a 400
// naming the field, and nothing is stored; -n spreads tasks over nodes as
// sbatch does; one bad submission never fails the others of its commit; a
// stored job the cluster can no longer run ends FAILED and the controller
// starts; a retried idempotency key never makes a second job (also across a
// kill -9); a set of jobs is cancelled in one request, the pending ones
// before they can start. Real controller processes where restarts are
// involved; every process started here is stopped by its PID.

import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { connect, createServer, type Socket } from 'node:net';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { killHard, running, startDaemon } from './daemon-process.js';
import { checkBody, SubmitBodySchema } from '../src/api/schema.js';
import type { ApiCancelResult, ApiJob, ApiJobPage, ApiJobWithEvents } from '../src/api/types.js';
import { readClusterConfig } from '../src/config/load.js';
import { startController } from '../src/controller/daemon.js';
import { ControllerEngine, SubmitRefused, type AgentLink, type StartOrder } from '../src/controller/engine.js';
import { apiJob } from '../src/controller/views.js';
import { taskLayout } from '../src/jobspec/cluster.js';
import type { JobSpec } from '../src/jobspec/types.js';
import { ApiRequestError, bearer, ControllerUnreachableError, createApiClient } from '../src/net/client.js';
import { tokenFor } from './auth-helpers.js';
import { waitUntil } from './poll.js';
import { killTerminals, onTerminal } from './terminal.js';
import type { IPty } from 'node-pty';
import { postIds } from '../src/cli/controller-client.js';
import { openStore } from '../src/store/store.js';
import { migrate, MIGRATIONS, SCHEMA_VERSION } from '../src/store/schema.js';
import Database from 'better-sqlite3';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const taras = join(root, 'bin/taras.js');
const work = mkdtempSync(join(tmpdir(), 'taras-requests-'));
const started: ChildProcess[] = [];
const sleep = (ms: number) => new Promise((resolveSleep) => setTimeout(resolveSleep, ms));

after(async () => {
  for (const child of started) if (running(child)) child.kill('SIGKILL');
  await sleep(200);
  rmSync(work, { recursive: true, force: true });
});

/** Two partitions: `batch` of 2 nodes x 8 CPUs (max_time 1 h, no default_time) and `short` (default_time 5 min). */
const clusterToml = (dataDir: string, nodes = 'n[1-2]', cpus = 8, listen = '') => `
[cluster]
name = "requests"
policy = "easy"
data_dir = "${dataDir}"
${listen}
[[nodes]]
names = "${nodes}"
cpus = ${cpus}
memory = "16G"
[[partitions]]
name = "batch"
nodes = "ALL"
default = true
max_time = "1:00:00"
[[partitions]]
name = "short"
nodes = "ALL"
max_time = "30:00"
default_time = "5:00"
`;

const spec = (extra: Record<string, unknown> = {}): JobSpec => ({
  script: { path: '/tmp/job.sh', text: '#!/bin/sh\nsleep 30\n', args: [] },
  nodes: { min: 1 }, cpusPerTask: 1, timeLimitSeconds: 600, name: 'job', workingDir: work, output: '/dev/null',
  export: { all: false, variables: [] }, requeue: false, ...extra,
} as JobSpec);

async function inProcessController(name: string, toml = clusterToml(join(work, name, 'data'))) {
  mkdirSync(join(work, name), { recursive: true });
  const file = join(work, name, 'cluster.toml');
  writeFileSync(file, toml);
  const parsed = await readClusterConfig(file);
  assert.ok(parsed.ok);
  const lines: string[] = [];
  const controller = await startController({ config: parsed.config, configPath: file, clusterKey: null, port: 0, log: (line) => lines.push(line) });
  const api = createApiClient({ socketPath: controller.socketPath }, {});
  return { controller, api, lines, close: async () => { api.close(); await controller.close(); } };
}

/** The controller's socket, from its anonymous GET /status: root's requests go there (the kernel vouches for the caller). */
async function socketOf(url: string): Promise<string> {
  return ((await (await fetch(`${url}/status`)).json()) as { socket: string }).socket;
}

/** An API client as this process's user (root) through the controller's socket. */
async function rootClient(url: string, options: { timeoutMs?: number } = {}) {
  return createApiClient({ socketPath: await socketOf(url) }, options);
}

/**
 * POSTs a body as it is (a JSON text, or a value to stringify): nesting 100,000
 * deep is parsed by the controller but cannot be stringified by our client.
 */
async function rawPost(url: string, path: string, body: unknown): Promise<ApiRequestError | { status: number }> {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  const socketPath = await socketOf(url);
  return new Promise((resolvePost, reject) => {
    const req = request({ socketPath, path, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) } }, (res) => {
      let answer = '';
      res.on('data', (chunk: Buffer) => (answer += chunk.toString()));
      res.on('end', () => {
        const status = res.statusCode ?? 0;
        if (status < 400) return resolvePost({ status });
        const parsed = JSON.parse(answer) as { error: string; fix?: string };
        resolvePost(new ApiRequestError(status, parsed.error, parsed.fix, 'POST', path));
      });
    });
    req.on('error', reject);
    req.end(text);
  });
}

/** The 400 a request gets, or a failure naming what came instead. */
async function refusal(request: Promise<unknown>): Promise<ApiRequestError> {
  let answer;
  try {
    answer = await request;
  } catch (error) {
    if (error instanceof ApiRequestError) return error;
    throw error;
  }
  if (answer instanceof ApiRequestError) return answer;
  assert.fail('the request was accepted');
}

/** JSON text nested `depth` deep (JSON.parse takes it; JSON.stringify of the parsed value overflows the stack). */
const deepText = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
const deep = (depth: number) => ({ toJSON: () => `__DEEP${depth}__` });
/** Our own JSON text of a body, with the deep parts spliced in as text. */
const bodyText = (body: unknown) => JSON.stringify(body).replace(/"__DEEP(\d+)__"/g, (_, depth: string) => deepText(Number(depth)));

/** Every body that crashed the controller, stored a job it could not run, or stored one with no limit (issue 9). */
const BAD_SUBMISSIONS: [what: string, body: unknown, field: RegExp][] = [
  ['nodes.min 0', { spec: spec({ nodes: { min: 0 } }) }, /spec\.nodes\.min: expected an integer from 1/],
  ['cpusPerTask 0', { spec: spec({ cpusPerTask: 0 }) }, /spec\.cpusPerTask: expected an integer from 1/],
  ['ntasks 0', { spec: spec({ ntasks: 0 }) }, /spec\.ntasks: expected an integer from 1/],
  ['timeLimitSeconds null', { spec: spec({ timeLimitSeconds: null }) }, /spec\.timeLimitSeconds: expected a number of seconds .* got null/],
  ['timeLimitSeconds 1e308', { spec: spec({ timeLimitSeconds: 1e308 }) }, /spec\.timeLimitSeconds: expected a number of seconds from 1 to 3153600000, or "UNLIMITED", got 1e\+308/],
  ['timeLimitSeconds negative', { spec: spec({ timeLimitSeconds: -60 }) }, /spec\.timeLimitSeconds/],
  ['fractional CPUs', { spec: spec({ cpusPerTask: 1.5 }) }, /spec\.cpusPerTask: expected an integer/],
  ['nodes.max below nodes.min', { spec: spec({ nodes: { min: 2, max: 1 } }) }, /nodes\.max must be at least nodes\.min/],
  ['an unknown field', { spec: spec({ priority: 1e9 }) }, /spec\.priority: unknown field/],
  ['an environment value that is not a string', { spec: spec({ submitEnv: { HOME: { nested: true } } }) }, /spec\.submitEnv\.HOME: expected a string/],
  ['a relative working directory', { spec: spec({ workingDir: 'here' }) }, /spec\.workingDir: expected an absolute path/],
  ['a missing script', { spec: { ...spec(), script: undefined } }, /spec\.script: required field missing/],
  ['no spec', {}, /spec: required field missing/],
  ['a bad umask', { spec: spec({ umask: 0o1000 }) }, /spec\.umask: expected an integer from 0 to 511/],
  ['a signal with a bad name', { spec: spec({ signal: { signal: 'usr1; rm', beforeSeconds: 60, batchOnly: false } }) }, /spec\.signal\.signal/],
  // A real-time signal: stored, and the job FAILED at its start (no agent can send one).
  ['a real-time signal', { spec: spec({ signal: { signal: '64', beforeSeconds: 60, batchOnly: false } }) },
    /^the request body is not valid: spec\.signal\.signal: expected a signal name without SIG, such as USR1, or a number from 1 to 31$/],
  // Refused from the bytes, before JSON.parse (which took 0.4 s over a 1 MiB body of brackets).
  ['nesting 100,000 deep as the spec', { spec: deep(100_000) }, /request body nests arrays and objects more than 64 levels deep/],
  ['nesting 100,000 deep in the environment', { spec: spec({ submitEnv: { A: deep(100_000) } }) }, /more than 64 levels deep/],
  ['nesting 100,000 deep as the body', deep(100_000), /more than 64 levels deep/],
  ['nesting 64 deep in the environment, within the limit', { spec: spec({ submitEnv: { A: deep(61) } }) }, /spec\.submitEnv\.A: expected a string/],
  ['a list as the body', [spec({})], /the request body must be a JSON object, and this request has a list of 1/],
  ['a number as the body', 12, /the request body must be a JSON object, and this request has a number/],
  // A time past what a Date holds, stored, failed every listing of the job for everyone (red team, issue 9).
  ['--begin past the year 9999', { spec: spec({ beginMs: 8.64e15 }) }, /spec\.beginMs: expected a time in epoch milliseconds from 0 to 253402300799000 \(the end of the year 9999\)/],
  ['a deadline past the year 9999', { spec: spec({ deadline: { atMs: Number.MAX_SAFE_INTEGER, policy: 'guarantee' } }) }, /spec\.deadline\.atMs: expected a time in epoch milliseconds/],
  // A NUL in a path or argument split the agent's launch description: the user wrote the rest of it (red team).
  ['a NUL in the output path', { spec: spec({ output: '/tmp/a.out\u0000/tmp/b\u0000' }) }, /spec\.output: expected text without NUL characters/],
  ['a NUL in an argument', { spec: spec({ script: { path: 'job.sh', text: '#!/bin/sh\n', args: ['a\u0000b'] } }) }, /spec\.script\.args\.0: expected text without NUL characters/],
  ['a NUL in the working directory', { spec: spec({ workingDir: '/tmp\u0000/x' }) }, /spec\.workingDir: expected text without NUL characters/],
  ['a NUL in an environment value', { spec: spec({ submitEnv: { A: 'x\u0000y' } }) }, /spec\.submitEnv\.A: expected text without NUL characters/],
];

describe('the request schema', () => {
  it('accepts what the CLI sends, with umask and signal (contracts.md)', () => {
    const checked = checkBody(SubmitBodySchema, {
      spec: { ...spec({ ntasks: 9, nodes: { min: 1, max: 9 }, umask: 0o027, signal: { signal: 'USR1', beforeSeconds: 60, batchOnly: true } }), submitEnv: { HOME: '/root' }, submitDir: '/tmp' },
      idempotencyKey: '2b1f0e1c-6a53-4d0c-9a43-54b0c8d7d7a1',
    });
    assert.equal(checked.ok, true, checked.ok ? '' : JSON.stringify(checked.problems));
  });

  it('a missing time limit is allowed by the schema (the partition\'s default_time fills it)', () => {
    const { timeLimitSeconds: _limit, ...noLimit } = spec();
    assert.equal(checkBody(SubmitBodySchema, { spec: noLimit }).ok, true);
  });
});

describe('partition default_time', () => {
  it('is read from cluster.toml, and may not exceed max_time', async () => {
    const file = join(work, 'default-time.toml');
    writeFileSync(file, clusterToml(join(work, 'dt-data')));
    const parsed = await readClusterConfig(file);
    assert.ok(parsed.ok);
    assert.deepEqual(parsed.config.partitions.map((p) => [p.name, p.defaultTimeSeconds ?? null]), [['batch', null], ['short', 300]]);
    writeFileSync(file, clusterToml(join(work, 'dt-data')).replace('default_time = "5:00"', 'default_time = "45:00"'));
    const bad = await readClusterConfig(file);
    assert.ok(!bad.ok);
    assert.match(bad.errors.map((e) => `${e.key}: ${e.message}`).join('\n'), /partitions\[1\]\.default_time: default_time is longer than max_time \(1800 s\)/);
  });
});

describe('sbatch\'s -n: tasks spread over as few nodes as hold them', () => {
  const nodes8 = [{ cpus: 8 }, { cpus: 8 }, { cpus: 8 }];
  it('9 tasks of 1 CPU on 8-CPU nodes take 2 nodes of 5 CPUs; -N 1 cannot hold them', () => {
    assert.deepEqual(taskLayout({ nodes: { min: 1, max: 9 }, ntasks: 9, cpusPerTask: 1 }, nodes8), { nodes: 2, cpusPerNode: 5 });
    assert.equal(taskLayout({ nodes: { min: 1 }, ntasks: 9, cpusPerTask: 1 }, nodes8), undefined);
    assert.deepEqual(taskLayout({ nodes: { min: 1, max: 9 }, ntasks: 8, cpusPerTask: 1 }, nodes8), { nodes: 1, cpusPerNode: 8 });
    assert.deepEqual(taskLayout({ nodes: { min: 2 } , cpusPerTask: 3 }, nodes8), { nodes: 2, cpusPerNode: 3 });
    assert.deepEqual(taskLayout({ nodes: { min: 1, max: 4 }, ntasks: 4, cpusPerTask: 4 }, nodes8), { nodes: 2, cpusPerNode: 8 });
  });

  it('--mem 0 reserves all of each node\'s memory: the start order carries it, and a job asking for memory waits for that node', async () => {
    const store = openStore(join(work, 'mem0.db'));
    const orders: StartOrder[] = [];
    const agents: AgentLink = { start: async (order) => void orders.push(order), signal: async () => {} };
    const file = join(work, 'mem0.toml');
    writeFileSync(file, clusterToml(join(work, 'mem0-data'), 'n1'));
    const parsed = await readClusterConfig(file);
    assert.ok(parsed.ok);
    const engine = new ControllerEngine(parsed.config, store, agents);
    engine.agentRegistered(['n1'], []);
    const [all] = engine.submit([{ user: 'alice', spec: spec({ memoryMiB: 0 }) }]);
    assert.deepEqual(engine.schedule(), [all]);
    assert.equal(orders[0].spec.memoryMiB, 16384, 'the agent\'s limit is the node\'s memory, not 0');
    assert.deepEqual(engine.pool.free('n1'), { cpus: 7, memoryMiB: 0 });
    // 7 CPUs are free, but no memory: a job asking for 1 GiB waits.
    const [more] = engine.submit([{ user: 'bob', spec: spec({ memoryMiB: 1024 }) }]);
    assert.deepEqual(engine.schedule(), []);
    assert.equal(engine.active.get(more)?.state, 'PENDING');
    store.close();
  });

  it('the engine starts `-n 9` on two 8-CPU nodes (5 CPUs each), and refuses it with -N 1 before storing it', () => {
    const store = openStore(join(work, 'layout.db'));
    const orders: StartOrder[] = [];
    const agents: AgentLink = { start: async (order) => void orders.push(order), signal: async () => {} };
    const toml = clusterToml(join(work, 'layout-data'));
    return (async () => {
      const file = join(work, 'layout.toml');
      writeFileSync(file, toml);
      const parsed = await readClusterConfig(file);
      assert.ok(parsed.ok);
      const engine = new ControllerEngine(parsed.config, store, agents);
      assert.match(engine.refusals(spec({ ntasks: 9 })).join(), /more tasks than partition batch can hold: 9 tasks of 1 CPU on 1 node/);
      const [id] = engine.submit([{ user: 'alice', spec: spec({ ntasks: 9, nodes: { min: 1, max: 9 } }) }]);
      engine.agentRegistered(['n1', 'n2'], []);
      assert.deepEqual(engine.schedule(), [id]);
      assert.deepEqual(orders.map((o) => [o.nodes.length, o.cpusOnNode]), [[2, 5]]);
      store.close();
    })();
  });
});

describe('the controller refuses bad requests before storing anything', () => {
  it('every body shape that crashed or bricked the controller is a 400 naming the field, and nothing is stored', async () => {
    const { api, controller, close } = await inProcessController('bad-bodies');
    try {
      for (const [what, body, field] of BAD_SUBMISSIONS) {
        const error = await refusal(rawPost(controller.url, '/jobs', bodyText(body)));
        assert.equal(error.status, 400, `${what}: ${error.status} ${error.error}`);
        assert.match(error.error, field, what);
        assert.match(error.fix ?? '', /nothing was changed/, what);
      }
      // Jobs no node set could ever hold, and limits the partition does not allow: refused with the cluster check's words.
      const tooWide = await refusal(api.post('/jobs', { spec: spec({ ntasks: 9 }) }));
      assert.match(tooWide.error, /more tasks than partition batch can hold: 9 tasks of 1 CPU on 1 node/);
      assert.match((await refusal(api.post('/jobs', { spec: spec({ cpusPerTask: 9 }) }))).error, /more CPUs per node than any node has/);
      assert.match((await refusal(api.post('/jobs', { spec: spec({ nodes: { min: 3 } }) }))).error, /larger than any partition/);
      assert.match((await refusal(api.post('/jobs', { spec: spec({ timeLimitSeconds: 7200 }) }))).error, /over the time limit of partition batch/);
      assert.match((await refusal(api.post('/jobs', { spec: spec({ timeLimitSeconds: 'UNLIMITED' }) }))).error, /over the time limit of partition batch/);
      const { timeLimitSeconds: _limit, ...noLimit } = spec();
      assert.match((await refusal(api.post('/jobs', { spec: noLimit }))).error, /no time limit and partition batch has no default_time/);
      // What the CLI refuses is refused through the API too, in the CLI's words (both were stored: red team).
      assert.match((await refusal(api.post('/jobs', { spec: spec({ memoryMiB: 100, memPerCpuMiB: 100 }) }))).error, /^--mem and --mem-per-cpu are mutually exclusive \(as in Slurm\): give one of them/);
      const script = (text: string) => ({ spec: spec({ script: { path: '/tmp/x.sh', text, args: [] } }) });
      assert.match((await refusal(api.post('/jobs', script('echo hi\n')))).error, /^a batch script must start with #! and an interpreter, e.g. #!\/bin\/bash/);
      assert.match((await refusal(api.post('/jobs', script('#!/bin/sh\r\necho hi\r\n')))).error, /^the script has DOS line breaks \(\\r\\n\): convert it with dos2unix/);
      // --deadline before --begin (sbatch refuses it): in the CLI's words, the times in the submitter's zone (its TZ).
      const begin = Date.UTC(2026, 11, 1, 9, 0);
      const early = spec({ beginMs: begin, deadline: { atMs: begin - 30 * 60_000, policy: 'guarantee' }, submitEnv: { TZ: 'Europe/Berlin' } });
      assert.equal((await refusal(api.post('/jobs', { spec: early }))).error, 'incompatible --begin and --deadline: the deadline Tue 1 Dec 2026 09:30:00 CET is earlier '
        + 'than the begin time Tue 1 Dec 2026 10:00:00 CET, so the job could never end by it; give a --deadline after the begin time, or an earlier --begin');
      assert.match((await refusal(api.post('/jobs/test-only', { spec: early }))).error, /^incompatible --begin and --deadline: /);
      // A deadline at the begin time is not that refusal (Slurm refuses only an earlier one); --test-only stores nothing.
      const atBegin = await api.post<{ partition: string }>('/jobs/test-only', { spec: spec({ beginMs: begin, deadline: { atMs: begin, policy: 'guarantee' } }) });
      assert.equal(atBegin.partition, 'batch');
      // An output pattern that expands past a path: each view of the job built strings of megabytes (red team).
      assert.match((await refusal(api.post('/jobs', { spec: spec({ output: '%x'.repeat(2048) }) }))).error, /^--output: '(%x){30}\.\.\.' could expand to 2097152 characters, more than a path may have \(4096\): use fewer %x and %u/);
      assert.match((await refusal(api.post('/jobs', { spec: spec({ error: 'e-%Q' }) }))).error, /^--error: '%Q' in 'e-%Q' is not supported/);
      // Other routes: admin and agent bodies.
      const root = createApiClient({ socketPath: controller.socketPath }, {});
      try {
        assert.match((await refusal(root.post('/admin/drain', { nodes: 'n1', reason: 'x' }))).error, /nodes: expected a list/);
        assert.match((await refusal(root.put('/admin/motd', { text: { a: 1 } }))).error, /text: expected a string/);
        assert.match((await refusal(root.post('/admin/shutdown', { now: true }))).error, /now: unknown field/);
        // No body at all where a route takes none (src/api/README.md: "no body or {}").
        assert.match((await root.post<{ token: string }>('/admin/token')).token, /^[\w-]+\.[\w-]+\.[\w-]+$/);
      } finally {
        root.close();
      }
      assert.match((await refusal(api.post('/agent/register', { url: 'http://x', nodes: [{ a: 1 }] }))).error, /nodes\.0: expected a non-empty string/);
      assert.match((await refusal(api.post('/agent/report', { reports: [{ jobId: 1, state: 'EXPLODED', exitCode: 0, endTimeMs: null }] }))).error, /reports\.0\.state/);
      assert.match((await refusal(rawPost(controller.url, '/agent/heartbeat', deepText(100_000)))).error, /^request body nests arrays and objects more than 64 levels deep$/);
      assert.deepEqual((await api.get<ApiJobPage>('/jobs')).jobs, []);
      // The partition's default_time fills a missing limit; a good job is stored as usual.
      const { id } = await api.post<{ id: number }>('/jobs', { spec: { ...noLimit, partition: 'short' } });
      assert.equal((await api.get<ApiJob>(`/jobs/${id}`)).timeLimitSeconds, 300);
    } finally {
      await close();
    }
  });

  it('one bad submission in a group commit never fails the others: each gets its own answer', async () => {
    const { api, close } = await inProcessController('group');
    try {
      const bodies = Array.from({ length: 30 }, (_, index) => index % 3 === 1
        ? { spec: spec({ name: `bad-${index}`, ntasks: 9 }) } // fits no node set: refused
        : index % 3 === 2 ? { spec: spec({ name: `bad-${index}`, nodes: { min: 0 } }) } // schema
          : { spec: spec({ name: `good-${index}` }) });
      const answers = await Promise.allSettled(bodies.map((body) => api.post<{ id: number }>('/jobs', body)));
      const good = answers.filter((a, index) => index % 3 === 0);
      const bad = answers.filter((a, index) => index % 3 !== 0);
      assert.ok(good.every((a) => a.status === 'fulfilled'), JSON.stringify(good));
      assert.ok(bad.every((a) => a.status === 'rejected' && (a.reason as ApiRequestError).status === 400), JSON.stringify(bad.map((a) => a.status)));
      const stored = (await api.get<ApiJobPage>('/jobs')).jobs;
      assert.deepEqual(stored.map((job) => job.name).sort(), bodies.filter((_, index) => index % 3 === 0).map((b) => b.spec.name).sort());
    } finally {
      await close();
    }
  });

  it('a listing\'s ?state= must name states, and a job id in a path is digits (red team: BOGUS listed nothing, 0x2 was job 2)', async () => {
    const { api, close } = await inProcessController('strict-words');
    try {
      const { id } = await api.post<{ id: number }>('/jobs', { spec: spec({ name: 'one' }) });
      for (const path of ['/jobs?state=BOGUS', '/jobs?state=PENDING,__proto__', '/queue?state=WAITING']) {
        const refused = await api.get(path).then(() => null, (error: ApiRequestError) => error);
        assert.equal(refused?.status, 400, path);
        assert.match(refused?.error ?? '', /^state=\S+ is not a job state$/, path);
      }
      assert.deepEqual((await api.get<ApiJobPage>('/jobs?state=pending')).jobs.map((job) => job.id), [id]);
      for (const ref of [`0x${id.toString(16)}`, `${id}e0`, `%20${id}`, `0${id}`]) {
        const refused = await api.get(`/jobs/${ref}`).then(() => null, (error: ApiRequestError) => error);
        assert.equal(refused?.status, 400, ref);
      }
    } finally {
      await close();
    }
  });

  it('a request names at most 10,000 job ids (100,000 held the controller about 2 s); the CLI sends more in several', async () => {
    const { api, close } = await inProcessController('many-ids');
    try {
      const ids = Array.from({ length: 10_005 }, (_, i) => 1_000_000 + i);
      for (const path of ['/jobs/cancel', '/jobs/hold', '/jobs/release']) {
        const refused = await api.post(path, { ids }).then(() => null, (error: ApiRequestError) => error);
        assert.equal(refused?.status, 400, path);
        assert.match(refused?.error ?? '', /ids: expected a list of 1 to 10000 items/, path);
      }
      const answers = await postIds<ApiCancelResult>(api, '/jobs/cancel', ids);
      assert.deepEqual(answers.map((job) => job.id), ids, 'every id answered, in order, across two requests');
      assert.ok(answers.every((job) => job.result === 'refused' && job.state === null));
    } finally {
      await close();
    }
  });

  it('the engine commits a batch around a submission it must refuse, which gets the reason and no id', async () => {
    const store = openStore(join(work, 'batch.db'));
    const file = join(work, 'batch.toml');
    writeFileSync(file, clusterToml(join(work, 'batch-data')));
    const parsed = await readClusterConfig(file);
    assert.ok(parsed.ok);
    const engine = new ControllerEngine(parsed.config, store, { start: async () => {}, signal: async () => {} });
    const outcomes = engine.acceptEach([
      { user: 'alice', spec: spec({ name: 'a' }) },
      { user: 'bob', spec: spec({ name: 'b', ntasks: 9 }) },
      { user: 'carol', spec: spec({ name: 'c' }) },
    ]);
    assert.deepEqual(outcomes.map((o) => ('id' in o ? o.id : o.refused.message.slice(0, 30))), [1, 'no set of nodes of partition b', 2]);
    assert.deepEqual(store.jobs().map((job) => job.name), ['a', 'c']);
    // A fault of ours in checking one submission (here a constraint no schema would pass) fails that one alone.
    const faulty = engine.acceptEach([
      { user: 'alice', spec: spec({ name: 'd' }) },
      { user: 'bob', spec: spec({ name: 'e', constraint: { text: 'x', anyOf: null } as never }) },
      { user: 'carol', spec: spec({ name: 'f' }) },
    ]);
    assert.deepEqual(faulty.map((o) => ('id' in o ? o.id : o.refused instanceof SubmitRefused ? 'refused' : 'fault')), [3, 'fault', 4]);
    assert.deepEqual(store.jobs().map((job) => job.name), ['a', 'c', 'd', 'f']);
    // A job stored with --begin at the last time a Date holds (before the schema's bound): listed, with no end past it.
    const [late] = engine.submit([{ user: 'dave', spec: spec({ name: 'late', beginMs: 8.64e15 }) }]);
    engine.schedule();
    const shown = apiJob(engine, engine.active.get(late)!);
    assert.equal(shown.plannedStart, '+275760-09-13T00:00:00.000Z');
    assert.equal(shown.predictedEnd, null);
    store.close();
  });

  it('a retried idempotency key answers the first job, also while the first is still being committed', async () => {
    const { controller, api, close } = await inProcessController('idempotent');
    try {
      const body = { spec: spec({ name: 'once' }), idempotencyKey: 'key-0001-retry' };
      const together = await Promise.all([api.post<{ id: number }>('/jobs', body), api.post<{ id: number }>('/jobs', body)]);
      const later = await api.post<{ id: number }>('/jobs', body);
      assert.deepEqual([...together, later].map((a) => a.id), [1, 1, 1]);
      // Keys are per user: another user's (daemon's) same key is his own job.
      const bob = createApiClient({ baseUrl: controller.url }, { credentials: bearer(await tokenFor(controller.engine().config, 'daemon')) });
      assert.equal((await bob.post<{ id: number }>('/jobs', body)).id, 2);
      bob.close();
      assert.equal((await api.get<ApiJobPage>('/jobs')).jobs.length, 2);
    } finally {
      await close();
    }
  });

  it('a schema 3 file opens as schema 4 (migration 4 in the same transaction as the version), with an empty key table', () => {
    const path = join(work, 'v3.db');
    const db = new Database(path);
    db.transaction(() => migrate(db, MIGRATIONS.filter((m) => m.version <= 3)))();
    db.close();
    const old = openStore(path);
    assert.equal(old.schemaVersion, SCHEMA_VERSION, 'migration 4 and every later one');
    const id = old.submit({ user: 'alice', name: 'v3', partition: 'batch', scriptPath: null, script: '#!/bin/sh\n', request: {} }, 1000);
    assert.equal(old.jobForKey('alice', 'anything'), undefined);
    old.close();
    const reopened = openStore(path);
    assert.equal(reopened.job(id)?.name, 'v3');
    reopened.close();
  });

  it('store schema 4 keeps idempotency keys with their jobs, across a reopen', () => {
    const path = join(work, 'keys.db');
    const store = openStore(path);
    assert.equal(store.schemaVersion, SCHEMA_VERSION);
    assert.ok(SCHEMA_VERSION >= 4);
    const job = { user: 'alice', name: 'k', partition: 'batch', scriptPath: null, script: '#!/bin/sh\n', request: {}, idempotencyKey: 'abcdefgh' };
    const [first] = store.submitRecords([job], 1000);
    const [again, other] = store.submitRecords([job, { ...job, idempotencyKey: undefined }], 2000);
    assert.equal(first.replayed, undefined);
    assert.deepEqual([again.id, again.replayed, other.id], [first.id, true, first.id + 1]);
    store.close();
    const reopened = openStore(path);
    assert.equal(reopened.jobForKey('alice', 'abcdefgh'), first.id);
    assert.equal(reopened.jobForKey('bob', 'abcdefgh'), undefined);
    assert.equal(reopened.forgetKeysBefore(1500), 1);
    assert.equal(reopened.jobForKey('alice', 'abcdefgh'), undefined);
    reopened.close();
  });
});

// ---- Real controller processes: restarts, kill -9, the CLI.

const LISTENING = /listening on (http:\/\/127\.0\.0\.1:(\d+))/;

/** A daemon whose ready line gave its URL and port (match groups 1 and 2). */
async function daemon(args: readonly string[], ready: RegExp, cwd: string) {
  const up = await startDaemon(taras, started, args, ready, cwd);
  return { ...up, url: up.match[1] ?? '', port: up.match[2] ?? '' };
}

function cli(cwd: string, url: string, args: readonly string[], env: Record<string, string> = {}) {
  const run = spawnSync(process.execPath, [taras, ...((args)[0] === 'submit' ? ['submit', '--controller', url, ...(args).slice(1)] : [...args, '--controller', url])], { cwd, encoding: 'utf8', timeout: 60_000, env: { ...process.env, ...env } });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

const controllerAt = (dir: string, port = '0') => daemon(['controller', '--config', join(dir, 'cluster.toml'), '--port', port], LISTENING, dir);

function prepare(name: string, toml?: string): string {
  const dir = join(work, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'cluster.toml'), toml ?? clusterToml(join(dir, 'data')));
  writeFileSync(join(dir, 'job.sh'), '#!/bin/sh\nsleep 30\n');
  return dir;
}

describe('with real controller processes', () => {
  it('-n 9 on 8-CPU nodes is stored and runs on 2 nodes; the bad requests leave a controller that restarts cleanly', async () => {
    const dir = prepare('restart-clean', clusterToml(join(work, 'restart-clean', 'data'), 'node[01-02]'));
    let controller = await controllerAt(dir);
    const submitted = cli(dir, controller.url, ['submit', '--json', '-t', '1', '-n', '9', 'job.sh']);
    assert.equal(submitted.code, 0, submitted.stderr);
    const { id } = JSON.parse(submitted.stdout) as { id: number };
    const refused = cli(dir, controller.url, ['submit', '-t', '1', '-N', '1', '-n', '9', 'job.sh']);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /^error: more tasks than partition batch can hold: 9 tasks of 1 CPU on 1 node/);
    // What the flags allow but the body's schema does not is refused by the controller (the CLI leaves that check to it):
    // the field, its limit and the fix, exit 2, and nothing stored (the queue below holds the one job).
    const longName = cli(dir, controller.url, ['submit', '-t', '1', '-J', 'n'.repeat(2000), 'job.sh']);
    assert.equal(longName.code, 2, longName.stderr);
    assert.match(longName.stderr, /^error: the request body is not valid: -J\/--job-name \(spec\.name\): expected a non-empty string of at most 1024 characters, got a string of 2000 characters \(send .*change the flag or directive that sets that field\); nothing was changed\)\n$/);
    for (const [what, body] of BAD_SUBMISSIONS) assert.equal((await refusal(rawPost(controller.url, '/jobs', bodyText(body)))).status, 400, what);
    await killHard(controller.child);
    controller = await controllerAt(dir, controller.port);
    const job = JSON.parse(cli(dir, controller.url, ['show', String(id), '--json']).stdout) as ApiJobWithEvents;
    assert.deepEqual([job.state, job.ntasks], ['PENDING', 9]);
    const listed = JSON.parse(cli(dir, controller.url, ['queue', '--json']).stdout) as ApiJob[];
    assert.deepEqual(listed.map((j) => j.id), [id]);
    // With an agent for the two 8-CPU nodes, the job runs on both, 5 CPUs each.
    const data = join(dir, 'data');
    const agent = await daemon(['agent', '--controller', controller.url, '--virtual', '2x8', '--data', join(data, 'agent'), '--key', join(data, 'cluster.key')],
      /registered 2 node/, dir);
    const api = await rootClient(controller.url);
    try {
      let job = await api.get<ApiJob>(`/jobs/${id}`);
      const current = async () => (job = await api.get<ApiJob>(`/jobs/${id}`));
      await waitUntil(async () => (await current()).state !== 'PENDING', 10_000, 100);
      assert.deepEqual([job.state, job.nodes, job.nodeCount], ['RUNNING', ['node01', 'node02'], 2]);
      const nodes = await api.get<{ name: string; cpusAllocated: number }[]>('/nodes');
      assert.deepEqual(nodes.map((n) => n.cpusAllocated), [5, 5]);
      await api.post('/jobs/cancel', { ids: [id] });
      await waitUntil(async () => (await current()).state === 'CANCELLED', 10_000, 100);
      assert.equal(job.state, 'CANCELLED');
    } finally {
      api.close();
      await killHard(agent.child);
      await killHard(controller.child);
    }
  });

  it('sbatch without --time, nobody at a terminal: the partition\'s default_time, or a refusal naming the partition that has none (it was refused in the CLI)', async () => {
    const dir = prepare('no-time');
    writeFileSync(join(dir, 'plain.sh'), '#!/bin/sh\necho hi\n');
    const controller = await controllerAt(dir);
    try {
      const short = cli(dir, controller.url, ['submit', '--json', '-p', 'short', 'plain.sh']);
      assert.equal(short.code, 0, short.stderr);
      const shown = JSON.parse(cli(dir, controller.url, ['show', String((JSON.parse(short.stdout) as { id: number }).id), '--json']).stdout) as ApiJob;
      assert.equal(shown.timeLimitSeconds, 300);
      const batch = cli(dir, controller.url, ['submit', 'plain.sh']);
      assert.equal(batch.code, 2);
      assert.match(batch.stderr, /^error: .*no time limit and partition batch has no default_time/);
      // The script on standard input (sbatch <<EOF), named sbatch as Slurm names it; - says so explicitly.
      for (const operand of [[], ['-']]) {
        const piped = spawnSync(process.execPath, [taras, 'submit', '--controller', controller.url, '--json', '-p', 'short', ...operand],
          { cwd: dir, encoding: 'utf8', input: '#!/bin/sh\n#SBATCH -J piped\necho hi\n', timeout: 60_000 });
        assert.equal(piped.status, 0, piped.stderr);
        const job = JSON.parse(cli(dir, controller.url, ['show', String((JSON.parse(piped.stdout) as { id: number }).id), '--json']).stdout) as ApiJob;
        assert.deepEqual([job.name, job.timeLimitSeconds], ['piped', 300]);
      }
    } finally {
      await killHard(controller.child);
    }
  });

  it('a stored job the cluster can no longer run ends FAILED with the reason at start-up; the controller starts and the others stay', async () => {
    const dir = prepare('stranded');
    let controller = await controllerAt(dir);
    const wide = cli(dir, controller.url, ['submit', '--json', '-t', '1', '-n', '12', 'job.sh']);
    const small = cli(dir, controller.url, ['submit', '--json', '-t', '1', 'job.sh']);
    assert.equal(wide.code, 0, wide.stderr);
    assert.equal(small.code, 0, small.stderr);
    await killHard(controller.child);
    // A row an older version let in (nodes.min 0, no time limit), written straight into the store.
    const store = openStore(join(dir, 'data', 'taras.db'));
    const [bad] = store.submitRecords([{ user: 'mallory', name: 'old', partition: 'batch', scriptPath: null, script: '#!/bin/sh\n',
      request: { ...spec(), nodes: { min: 0 }, timeLimitSeconds: null } as never }], Date.now());
    store.close();
    // The cluster shrinks to one node of 8 CPUs: 12 tasks no longer fit.
    writeFileSync(join(dir, 'cluster.toml'), clusterToml(join(dir, 'data'), 'n1'));
    controller = await controllerAt(dir, controller.port);
    const show = (id: number) => JSON.parse(cli(dir, controller.url, ['show', String(id), '--json']).stdout) as ApiJobWithEvents;
    const wideId = (JSON.parse(wide.stdout) as { id: number }).id;
    const smallId = (JSON.parse(small.stdout) as { id: number }).id;
    assert.equal(show(wideId).state, 'FAILED');
    assert.match(show(wideId).reason ?? '', /this cluster can no longer run it: no set of nodes of partition batch can hold the job/);
    assert.equal(show(bad.id).state, 'FAILED');
    assert.match(show(bad.id).reason ?? '', /its stored request is not valid \(request\.nodes\.min: expected an integer from 1/);
    assert.equal(show(smallId).state, 'PENDING');
    assert.match(controller.log(), new RegExp(`job ${wideId} \\(\\S+\\) ended FAILED at start-up`));
    // And it starts again without anything to say about them.
    await killHard(controller.child);
    controller = await controllerAt(dir, controller.port);
    assert.doesNotMatch(controller.log(), /ended FAILED at start-up/);
    await killHard(controller.child);
  });

  it('a real-time warn_signal and a stored job with a real-time --signal (both taken before) never stop the controller; reconfigure refuses the file', async () => {
    const dir = prepare('realtime');
    let controller = await controllerAt(dir);
    await killHard(controller.child);
    const store = openStore(join(dir, 'data', 'taras.db'));
    const [old] = store.submitRecords([{ user: 'root', name: 'old', partition: 'batch', scriptPath: null, script: '#!/bin/sh\n',
      request: spec({ signal: { signal: '40', beforeSeconds: 30, batchOnly: false } }) as never }], Date.now());
    store.close();
    writeFileSync(join(dir, 'cluster.toml'), clusterToml(join(dir, 'data')).replace('policy = "easy"', 'policy = "easy"\nwarn_signal = "B:40@30"'));
    controller = await controllerAt(dir, controller.port);
    const file = join(dir, 'cluster.toml');
    const words = `${file}:5: cluster.warn_signal: "B:40@30" is not a signal request: '40' is a real-time signal (32 to 64), which Taras cannot send to a job (fix: write [B:]SIG[@TIME]: `;
    assert.ok(controller.log().includes(`warning: ${words}`), controller.log());
    assert.match(controller.log(), /e\.g\. B:USR1@120\); this start goes on without it \(taras admin reconfigure refuses the file until it is fixed\)/);
    const shown = JSON.parse(cli(dir, controller.url, ['show', String(old.id), '--json']).stdout) as ApiJobWithEvents;
    assert.equal(shown.state, 'FAILED');
    assert.match(shown.reason ?? '', /^this cluster can no longer run it: its stored request is not valid \(request\.signal\.signal: expected a signal name without SIG, such as USR1, or a number from 1 to 31\)$/);
    const api = await rootClient(controller.url);
    try {
      const refused = await refusal(api.post('/admin/reconfigure', {}));
      assert.equal(refused.status, 400);
      assert.ok(refused.error.startsWith(words), refused.error);
      assert.equal(refused.fix, 'fix the file; the old configuration stays in force');
      writeFileSync(file, clusterToml(join(dir, 'data')).replace('policy = "easy"', 'policy = "easy"\nwarn_signal = "B:USR1@30"'));
      await api.post('/admin/reconfigure', {});
    } finally {
      api.close();
    }
    await killHard(controller.child);
  });

  it('an idempotent retry never makes a second job, across kill -9 of the controller at any moment', async () => {
    const dir = prepare('retry');
    let controller = await controllerAt(dir);
    const port = controller.port;
    const delaysMs = [0, 1, 3, 8, 20];
    for (const [round, delayMs] of delaysMs.entries()) {
      const key = `retry-round-${round}`;
      const body = { spec: spec({ name: key }), idempotencyKey: key };
      const api = await rootClient(controller.url, { timeoutMs: 5000 });
      const first = api.post<{ id: number }>('/jobs', body).then((a) => a.id, (error: unknown) => {
        assert.ok(error instanceof ControllerUnreachableError, String(error));
        return null;
      });
      await sleep(delayMs);
      await killHard(controller.child);
      const firstId = await first;
      controller = await controllerAt(dir, port);
      const retry = await rootClient(controller.url);
      const { id } = await retry.post<{ id: number }>('/jobs', body);
      if (firstId !== null) assert.equal(id, firstId, `round ${round}: the retry got another job`);
      const named = (await retry.get<ApiJobPage>('/jobs')).jobs.filter((job) => job.name === key);
      assert.deepEqual(named.map((job) => job.id), [id], `round ${round}`);
      api.close();
      retry.close();
    }
    await killHard(controller.child);
  });

  it('taras submit retries through a controller restart and gets one job; taras wait rides out a restart', async () => {
    const dir = prepare('cli-retry');
    let controller = await controllerAt(dir);
    const port = controller.port;
    await killHard(controller.child);
    const submit = spawn(process.execPath, [taras, 'submit', '--json', '--controller', controller.url, '-t', '1', '-J', 'through-restart', 'job.sh'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    started.push(submit);
    let out = '';
    let err = '';
    submit.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
    submit.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const submitted = new Promise<number | null>((resolveExit) => submit.on('exit', resolveExit));
    // The controller comes back once the CLI has found it gone (a slow start could otherwise find it back).
    await waitUntil(() => /retrying/.test(err), 15_000);
    controller = await controllerAt(dir, port);
    assert.equal(await submitted, 0, err);
    assert.match(err, /submit: the controller at .* does not answer \(ECONNREFUSED\); retrying/);
    const { id } = JSON.parse(out) as { id: number };
    const jobs = JSON.parse(cli(dir, controller.url, ['queue', '--json']).stdout) as ApiJob[];
    assert.deepEqual(jobs.filter((job) => job.name === 'through-restart').map((job) => job.id), [id]);

    const wait = spawn(process.execPath, [taras, 'wait', String(id), '--controller', controller.url], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    started.push(wait);
    let waitOut = '';
    wait.stdout!.on('data', (chunk: Buffer) => (waitOut += chunk.toString()));
    const waited = new Promise<number | null>((resolveExit) => wait.on('exit', resolveExit));
    await sleep(500);
    await killHard(controller.child);
    await sleep(500);
    controller = await controllerAt(dir, port);
    assert.equal(running(wait), true, 'taras wait exited while the controller was down');
    const cancelled = cli(dir, controller.url, ['cancel', String(id)]);
    assert.equal(cancelled.stdout, `job ${id}: cancelled\n`);
    assert.equal(await waited, 1);
    assert.equal(waitOut, `job ${id}: CANCELLED\n`);
    await killHard(controller.child);
  });

  it('taras submit whose answer is lost after the commit (the connection drops) retries and is told the same job, once', async () => {
    const dir = prepare('cli-drop');
    const controller = await controllerAt(dir);
    const real = await socketOf(controller.url);
    // Between the CLI and the controller's socket: the first POST /jobs reaches the controller, which stores the job
    // and answers; the connection is cut as the answer comes back. Everything else passes through.
    const proxyPath = join(dir, 'proxy.sock');
    let cut = 0;
    const links = new Set<Socket>();
    const proxy = createServer((client) => {
      const upstream = connect(real);
      links.add(client).add(upstream);
      let sent = '';
      client.on('data', (chunk: Buffer) => {
        sent += chunk.toString('latin1');
        upstream.write(chunk);
      });
      upstream.on('data', (chunk: Buffer) => {
        if (cut === 0 && sent.startsWith('POST /jobs ')) {
          cut++;
          client.destroy();
          upstream.destroy();
          return;
        }
        client.write(chunk);
      });
      for (const [from, to] of [[client, upstream], [upstream, client]] as const) {
        from.on('end', () => to.end());
        from.on('error', () => to.destroy());
        from.on('close', () => links.delete(from));
      }
    });
    await new Promise<void>((resolveListen) => proxy.listen(proxyPath, resolveListen));
    try {
      const run = await new Promise<{ code: number | null; out: string; err: string }>((resolveRun) => {
        const child = spawn(process.execPath, [taras, 'submit', '--json', '--controller', `unix:${proxyPath}`, '-t', '1', '-J', 'answer-lost', 'job.sh'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
        started.push(child);
        let out = '';
        let err = '';
        child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
        child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
        child.on('exit', (code) => resolveRun({ code, out, err }));
      });
      assert.equal(cut, 1, 'the first answer was cut');
      assert.equal(run.code, 0, run.err);
      assert.match(run.err, /submit: the controller at .* does not answer \(\w+\); retrying/);
      const { id } = JSON.parse(run.out) as { id: number };
      const jobs = JSON.parse(cli(dir, controller.url, ['queue', '--json']).stdout) as ApiJob[];
      assert.deepEqual(jobs.filter((job) => job.name === 'answer-lost').map((job) => job.id), [id], 'one job, the one the retry was told of');
    } finally {
      for (const link of links) link.destroy();
      await new Promise((resolveClose) => proxy.close(resolveClose));
      await killHard(controller.child);
    }
  });

  it('taras cancel --all cancels pending jobs before any can start; a finished job is said to have ended', async () => {
    const dir = prepare('cancel-all', clusterToml(join(work, 'cancel-all', 'data'), 'node01', 2));
    const data = join(dir, 'data');
    const controller = await controllerAt(dir);
    const agent = await daemon(['agent', '--controller', controller.url, '--virtual', '1x2', '--data', join(data, 'agent'), '--key', join(data, 'cluster.key')],
      /registered 1 node/, dir);
    const api = await rootClient(controller.url);
    try {
      const ids: number[] = [];
      for (let n = 0; n < 8; n++) ids.push((await api.post<{ id: number }>('/jobs', { spec: spec({ name: `c${n}`, script: { path: join(dir, 'job.sh'), text: '#!/bin/sh\nsleep 30\n', args: [] } }) })).id);
      // Two run (2 CPUs), six wait.
      let runningIds: number[] = [];
      await waitUntil(async () => (runningIds = (await api.get<ApiJobPage>('/jobs?state=RUNNING')).jobs.map((job) => job.id)).length === 2, 10_000, 100);
      assert.equal(runningIds.length, 2);
      const cancelled = cli(dir, controller.url, ['cancel', '--all', '--json']);
      assert.equal(cancelled.code, 0, cancelled.stderr);
      const results = JSON.parse(cancelled.stdout) as ApiCancelResult[];
      assert.deepEqual(results.filter((r) => r.result === 'cancelled').map((r) => r.id).sort(), ids.filter((id) => !runningIds.includes(id)).sort());
      assert.deepEqual(results.filter((r) => r.result === 'signalled').map((r) => r.id).sort(), [...runningIds].sort());
      // Every job ends; none of the pending ones ever started.
      await waitUntil(async () => (await api.get<ApiJobPage>('/jobs?state=PENDING,RUNNING,COMPLETING')).jobs.length === 0, 10_000, 100);
      for (const id of ids) {
        const job = await api.get<ApiJobWithEvents>(`/jobs/${id}`);
        assert.equal(job.state, 'CANCELLED', `job ${id}`);
        assert.equal(job.events.some((event) => event.type === 'started'), runningIds.includes(id), `job ${id}: ${job.events.map((e) => e.type).join(',')}`);
      }
      const again = cli(dir, controller.url, ['cancel', String(ids[0]), String(ids[5])]);
      assert.equal(again.stdout, `job ${ids[0]}: already ended (CANCELLED); nothing to cancel\njob ${ids[5]}: already ended (CANCELLED); nothing to cancel\n`);
      // A refusal fails the command with --json too (it exited 0 there), as without it.
      for (const command of ['cancel', 'hold', 'release']) {
        const missing = cli(dir, controller.url, [command, '--json', '999999']);
        assert.equal(missing.code, 1, `${command}: ${missing.stdout}`);
        assert.deepEqual((JSON.parse(missing.stdout) as ApiCancelResult[]).map((r) => [r.id, r.result, r.message]), [[999999, 'refused', 'no job 999999']]);
      }
    } finally {
      api.close();
      await killHard(agent.child);
      await killHard(controller.child);
    }
  });
});

describe('CLI messages instead of stack traces', () => {
  it('--file with a missing file names the file and the fix', () => {
    const dir = prepare('cli-file');
    const run = cli(dir, 'http://127.0.0.1:1', ['submit', '--file', 'nope.toml', '-t', '1', 'job.sh']);
    assert.equal(run.code, 2);
    assert.equal(run.stderr, 'error: --file nope.toml: cannot read the job file (no such file): give the path of a job.toml, or leave --file out\n');
  });

  for (const [key, what, code, message] of [['\x03', 'Ctrl-C', 130, /aborted \(Ctrl-C\): nothing was submitted/], ['\x04', 'Ctrl-D', 1, /aborted \(end of input\): nothing was submitted/]] as const) {
    it(`${what} at the submit prompt ends with one line and exit ${code}`, async () => {
      const dir = prepare(`cli-prompt-${code}`);
      // A real terminal, so the CLI prompts for the missing time limit; the key is typed once the question shows.
      const terminals: IPty[] = [];
      const run = onTerminal(process.execPath, [taras, 'submit', 'job.sh', '--controller', 'http://127.0.0.1:1'],
        { cwd: dir, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/root', TERM: 'xterm' } }, terminals);
      try {
        await run.waitFor(/\): /, 20_000); // the question for the time limit
        run.terminal.write(key);
        const exitCode = await Promise.race([run.exited, sleep(20_000).then(() => 'still running')]);
        assert.match(run.output(), message);
        assert.doesNotMatch(run.output(), /at \S+ \(|node:internal/);
        assert.equal(exitCode, code, run.output());
      } finally {
        killTerminals(terminals);
      }
    });
  }
});
