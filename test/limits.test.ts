// Limits that protect everyone: per-user caps on pending jobs and on the
// submission rate (refused with 429 before anything is stored, a burst in one
// group-commit batch included), paged job listings, a 100,000-node cluster
// that starts and answers, and a controller that refuses to start on an
// empty or damaged database, on a data directory another controller holds or
// on a port in use, in one line.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, truncateSync, writeFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { readClusterConfig } from '../src/config/load.js';
import { startController, type RunningController } from '../src/controller/daemon.js';
import { HeavyReads, LimitRefused, UserTurns } from '../src/controller/limits.js';
import type { JobSpec } from '../src/jobspec/types.js';
import { ApiRequestError, bearer, createApiClient, type ApiClient } from '../src/net/client.js';
import { runAs, tokenFor } from './auth-helpers.js';
import { createTestUser, notRootReason, removeTestUsers, type TestUser } from './unix-users.js';
import { mungeSkipReason, startMunged, type RunningMunged } from './munged.js';
import { requestPayload } from '../src/net/munge.js';
import { createApiServer, JsonPieces } from '../src/net/server.js';
import { createAuthenticator } from '../src/net/identity.js';
import { signRequest } from '../src/net/hmac.js';
import type { JsonObject } from '../src/store/events.js';
import type { ApiCancelResult } from '../src/api/types.js';
import { openStore } from '../src/store/store.js';
import { eventually } from './poll.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const taras = join(root, 'bin/taras.js');
const work = mkdtempSync(join(tmpdir(), 'taras-limits-'));
after(() => rmSync(work, { recursive: true, force: true }));

let configs = 0;
/** A controller in this process on a fresh data directory, with these extra [cluster] lines. */
async function controllerWith(clusterLines: string, nodes = 'n[1-2]', partitions = '[[partitions]]\nname = "batch"\nnodes = "ALL"\n', heavyReadFloorMs?: number): Promise<RunningController> {
  const dir = join(work, `c${++configs}`);
  mkdirSync(dir);
  const file = join(dir, 'cluster.toml');
  writeFileSync(file, `[cluster]\nname = "limits"\ndata_dir = "data"\n${clusterLines}\n[[nodes]]\nnames = "${nodes}"\ncpus = 4\nmemory = "8G"\n${partitions}`);
  const parsed = await readClusterConfig(file);
  assert.ok(parsed.ok, JSON.stringify(!parsed.ok && parsed.errors));
  return startController({ config: parsed.config, configPath: file, clusterKey: null, port: 0, log: () => {}, heavyReadFloorMs });
}

const spec: JobSpec = {
  script: { path: '/tmp/x.sh', text: '#!/bin/sh\n', args: [] }, nodes: { min: 1 }, cpusPerTask: 1, timeLimitSeconds: 60,
  name: 'x', workingDir: '/tmp', output: 'x-%j.out', export: { all: false, variables: [] }, requeue: false,
};

// Callers prove who they are with tokens from the controller's key. Real users are needed (a token's
// user must exist): daemon and bin stand for two ordinary users.
const as = async (controller: RunningController, user: string): Promise<ApiClient> =>
  createApiClient({ baseUrl: controller.url }, { credentials: bearer(await tokenFor(controller.engine().config, user)) });

/** Each submission's outcome: the id, or the refusal's status and message. */
async function submitAll(api: ApiClient, count: number): Promise<({ id: number } | { status: number; error: string; fix?: string; retryAfterSeconds?: number })[]> {
  return Promise.all(Array.from({ length: count }, () => api.post<{ id: number }>('/jobs', { spec }).catch((error: unknown) => {
    if (error instanceof ApiRequestError) return { status: error.status, error: error.error, fix: error.fix, retryAfterSeconds: error.retryAfterSeconds };
    throw error;
  })));
}

describe('per-user caps', () => {
  it('max_pending_per_user: a burst in one batch stops at the cap, 429 names the cap, the limit and the count; others and root are not held back', async () => {
    const controller = await controllerWith('max_pending_per_user = 3\nmax_submit_rate = 0');
    const daemon = await as(controller, 'daemon');
    const bin = await as(controller, 'bin');
    const rootApi = await as(controller, 'root');
    try {
      // Twenty at once land in one or two group-commit batches: the cap counts the batch.
      const burst = await submitAll(daemon, 20);
      const accepted = burst.filter((r) => 'id' in r);
      const refused = burst.filter((r) => 'status' in r) as { status: number; error: string; fix?: string }[];
      assert.equal(accepted.length, 3);
      assert.deepEqual([...new Set(refused.map((r) => r.status))], [429]);
      assert.match(refused[0].error, /^user daemon has 3 pending jobs, the most one user may have \(max_pending_per_user = 3, Slurm's MaxSubmitJobs/);
      assert.match(refused[0].fix ?? '', /cancel some/);
      // Nothing of the refused was stored.
      const jobs = await daemon.get<{ jobs: { user: string }[] }>('/jobs');
      assert.equal(jobs.jobs.filter((j) => j.user === 'daemon').length, 3);
      assert.equal((await submitAll(bin, 2)).filter((r) => 'id' in r).length, 2);
      assert.equal((await submitAll(rootApi, 5)).filter((r) => 'id' in r).length, 5);
      // A cancelled pending job frees a place under the cap.
      await daemon.delete(`/jobs/${(accepted[0] as { id: number }).id}`);
      assert.equal((await submitAll(daemon, 2)).filter((r) => 'id' in r).length, 1);
      // An array counts its tasks, and the refusal says so (it said only "3 pending jobs").
      const array = await daemon.post('/jobs', { spec: { ...spec, array: { text: '0-4' } } }).then(() => null, (error: ApiRequestError) => error);
      assert.equal(array?.status, 429);
      assert.match(array?.error ?? '', /^user daemon has 3 pending jobs and this array's 5 tasks would make 8, more than the most one user may have \(max_pending_per_user = 3/);
    } finally {
      for (const api of [daemon, bin, rootApi]) api.close();
      await controller.close();
    }
  });

  it('max_pending_script_size: the scripts of one user\'s pending jobs stop at the cap, also within a batch (red team: 4,270 scripts of 1 MB ran the controller out of heap)', async () => {
    const controller = await controllerWith('max_pending_script_size = "1M"\nmax_submit_rate = 0');
    const daemon = await as(controller, 'daemon');
    const bin = await as(controller, 'bin');
    const big = { ...spec, script: { ...spec.script, text: `#!/bin/sh\n# ${'x'.repeat(400 * 1024)}\n` } };
    try {
      const outcomes = await Promise.all(Array.from({ length: 4 }, () => daemon.post<{ id: number }>('/jobs', { spec: big }).catch((error: ApiRequestError) => error)));
      const accepted = outcomes.filter((o) => !(o instanceof ApiRequestError));
      const refused = outcomes.filter((o): o is ApiRequestError => o instanceof ApiRequestError);
      assert.equal(accepted.length, 2, 'two of 400 KiB fit in 1 MiB, a third does not');
      assert.deepEqual(refused.map((e) => e.status), [429, 429]);
      assert.match(refused[0].error, /^user daemon has 0\.8 MiB of scripts in pending jobs, and this script's 0\.4 MiB would pass the most one user may have \(max_pending_script_size = 1M\); nothing was stored$/);
      assert.match(refused[0].fix ?? '', /keep large inputs in files the script reads/);
      // Small scripts still go, and another user has a cap of their own.
      assert.equal((await submitAll(daemon, 3)).filter((r) => 'id' in r).length, 3);
      assert.ok(!((await bin.post('/jobs', { spec: big }).catch((e: unknown) => e)) instanceof ApiRequestError));
      // A cancelled pending job gives its script's room back.
      await daemon.delete(`/jobs/${(accepted[0] as { id: number }).id}`);
      assert.ok(!((await daemon.post('/jobs', { spec: big }).catch((e: unknown) => e)) instanceof ApiRequestError));
    } finally {
      for (const api of [daemon, bin]) api.close();
      await controller.close();
    }
  });

  it('max_pending_script_size counts bytes, not characters: 300 Ki of "é" (600 KiB in UTF-8) leave no room for a second', async () => {
    const controller = await controllerWith('max_pending_script_size = "1M"\nmax_submit_rate = 0');
    const daemon = await as(controller, 'daemon');
    const wide = { ...spec, script: { ...spec.script, text: `#!/bin/sh\n# ${'é'.repeat(300 * 1024)}\n` } };
    try {
      const first = await daemon.post<{ id: number }>('/jobs', { spec: wide });
      assert.ok(first.id > 0);
      const second = await daemon.post('/jobs', { spec: wide }).then(() => null, (error: ApiRequestError) => error);
      assert.equal(second?.status, 429, 'counted as characters, two of 300 Ki would fit in 1 MiB');
      assert.match(second?.error ?? '', /^user daemon has 0\.6 MiB of scripts in pending jobs, and this script's 0\.6 MiB would pass the most one user may have/);
      // Cancelling gives back the same bytes it took.
      await daemon.delete(`/jobs/${first.id}`);
      assert.ok((await daemon.post<{ id: number }>('/jobs', { spec: wide })).id > first.id);
    } finally {
      daemon.close();
      await controller.close();
    }
  });

  it('max_pending_script_size after a restart: the pending scripts are held once, so a controller whose heap holds them once starts (it ran out of heap reading them twice) and counts them to the same total', async () => {
    // 56 pending jobs of 1,000,000-character scripts (53.4 MiB), stored by a controller in this process.
    const controller = await controllerWith('max_pending_script_size = "55M"\nmax_submit_rate = 0');
    const file = controller.engine().config;
    const text = (i: number) => `#!/bin/sh\n# ${String.fromCharCode(97 + (i % 26)).repeat(1_000_000 - 13)}\n`;
    const daemon = await as(controller, 'daemon');
    try {
      for (let from = 0; from < 56; from += 8) {
        await Promise.all(Array.from({ length: 8 }, (_, k) => daemon.post('/jobs', { spec: { ...spec, script: { ...spec.script, text: text(from + k) } } })));
      }
      assert.equal(controller.engine().pendingScriptsOf('daemon'), 56 * 1_000_000);
    } finally {
      daemon.close();
      await controller.close();
    }
    // The same data in a controller process whose heap (96 MB) holds those scripts once with room to spare, not
    // twice: reading every stored row before making records of them held each script in the row's text and in
    // the record (107 MB at once), and that controller died in JSON.parse while starting.
    const configFile = join(dirname(file.dataDir), 'cluster.toml');
    const child = spawn(process.execPath, ['--max-old-space-size=96', taras, 'controller', '--config', configFile, '--port', '0'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    child.stderr!.on('data', (chunk: Buffer) => { log = (log + chunk.toString()).slice(-20_000); });
    const exited = new Promise<string>((resolveExit) => child.once('exit', (code, signal) => resolveExit(`exited with ${code ?? signal}`)));
    const died = exited.then((how): never => { throw new Error(`the restarted controller ${how}: ${log.slice(-600)}`); });
    died.catch(() => undefined); // only the race reports it: the child killed below is no failure
    try {
      const url = await Promise.race([
        eventually('the restarted controller listening', () => /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(log)?.[1], 30_000),
        died,
      ]);
      assert.match(log, /recovered 56 pending and running jobs from the store/);
      const again = createApiClient({ baseUrl: url }, { credentials: bearer(await tokenFor(file, 'daemon')) });
      try {
        // 53.4 MiB held: one more script fits under 55M, the next is refused with the total counted once.
        await again.post('/jobs', { spec: { ...spec, script: { ...spec.script, text: text(56) } } });
        const refused = await again.post('/jobs', { spec: { ...spec, script: { ...spec.script, text: text(57) } } }).then(() => null, (error: ApiRequestError) => error);
        assert.equal(refused?.status, 429);
        assert.match(refused?.error ?? '', /^user daemon has 54\.4 MiB of scripts in pending jobs, and this script's 1\.0 MiB would pass the most one user may have \(max_pending_script_size = 55M\)/);
      } finally {
        again.close();
      }
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
  });

  it('max_submit_rate: past the bucket a submission gets 429 with Retry-After; a second later one goes through', async () => {
    const controller = await controllerWith('max_pending_per_user = 0\nmax_submit_rate = 5');
    const daemon = await as(controller, 'daemon');
    try {
      const began = Date.now();
      const burst = await submitAll(daemon, 12);
      // The bucket holds 5 and refills at 5 a second while the burst is being answered.
      const refilled = Math.floor((5 * (Date.now() - began)) / 1000);
      const accepted = burst.filter((r) => 'id' in r).length;
      assert.ok(accepted >= 5 && accepted <= 5 + refilled, `${accepted} accepted of a burst of 12 at 5 per second in ${Date.now() - began} ms`);
      const refused = burst.find((r) => 'status' in r) as { status: number; error: string; retryAfterSeconds?: number };
      assert.equal(refused.status, 429);
      assert.match(refused.error, /^user daemon submits faster than max_submit_rate = 5 jobs per second allows \(\d+ submitted in the last \d\.\d s\); nothing was stored$/);
      // The refusal's own Retry-After header (a request sent after the burst could find a token refilled).
      assert.equal(refused.retryAfterSeconds, 1);
      await new Promise((r) => setTimeout(r, 1100));
      assert.equal((await submitAll(daemon, 1)).filter((r) => 'id' in r).length, 1);
      const stored = await daemon.get<{ jobs: unknown[] }>('/jobs');
      assert.equal(stored.jobs.length, accepted + 1);
    } finally {
      daemon.close();
      await controller.close();
    }
  });

  it('taras submit waits out a 429\'s Retry-After and submits, as Slurm\'s commands back off (the user daemon, through the socket)', { skip: notRootReason }, async () => {
    const controller = await controllerWith('max_pending_per_user = 0\nmax_submit_rate = 2');
    // The daemon user reaches the socket and reads the script: the folders on the way are open to pass through.
    chmodSync(work, 0o711);
    const scripts = join(work, 'scripts');
    mkdirSync(scripts, { mode: 0o755, recursive: true });
    writeFileSync(join(scripts, 'job.sh'), '#!/bin/sh\n#TARAS --time 1\ntrue\n', { mode: 0o644 });
    try {
      const began = Date.now();
      const runs = await Promise.all(Array.from({ length: 6 }, () => runAs({ name: 'daemon', home: scripts },
        [taras, 'submit', '--controller', `unix:${controller.socketPath}`, join(scripts, 'job.sh')], { cwd: scripts, timeoutMs: 60_000 })));
      for (const run of runs) assert.equal(run.status, 0, run.stderr);
      const waited = runs.filter((run) => /^taras: the controller asks to wait 1 s: user daemon submits faster than max_submit_rate = 2 jobs per second allows/.test(run.stderr));
      assert.ok(waited.length >= 1, runs.map((run) => run.stderr).join('\n'));
      assert.ok(Date.now() - began >= 1000, 'six at 2 a second took over a second');
      const stored = [...controller.engine().active.values()].filter((record) => record.user === 'daemon');
      assert.equal(stored.length, 6, 'each submitted once');
    } finally {
      await controller.close();
    }
  });
});

describe('heavy reads (what-if, --test-only, accounting, plan)', () => {
  /** Keeps the thread busy for `ms`, as a what-if over a large queue does. */
  const busy = (ms: number) => {
    const end = performance.now() + ms;
    while (performance.now() < end);
  };

  it('one user\'s run one at a time, each after three times the last one\'s length; other users are not held back; short ones never wait', async () => {
    const heavy = new HeavyReads();
    const starts: [string, number][] = [];
    const work = (user: string, ms: number) => heavy.run(user, 'what-if', () => {
      starts.push([user, performance.now()]);
      busy(ms);
      return user;
    });
    const began = performance.now();
    const first = work('ada', 60);
    const second = work('ada', 60);
    const other = work('bob', 60);
    assert.deepEqual(await Promise.all([first, second, other]), ['ada', 'ada', 'bob']);
    const [[, adaFirst], [, bobStart], [, adaSecond]] = [starts.find(([u]) => u === 'ada')!, starts.find(([u]) => u === 'bob')!, starts.filter(([u]) => u === 'ada')[1]];
    // Her own 60 ms of work, then 180 ms of rest: bob's read between them is not charged to her (it was: 360 ms of rest).
    assert.ok(adaSecond - adaFirst >= 60 + 180 - 5 && adaSecond - adaFirst < 60 + 180 + 150, `ada's second began ${Math.round(adaSecond - adaFirst)} ms after her first (60 ms of work, then 180 ms of rest)`);
    assert.ok(bobStart - began < 200, `bob began after ${Math.round(bobStart - began)} ms: only ada's own reads wait for hers`);
    // Under 50 ms: no rest at all.
    const quick = performance.now();
    for (let i = 0; i < 5; i++) await work('cy', 5);
    assert.ok(performance.now() - quick < 150, `five quick reads took ${Math.round(performance.now() - quick)} ms`);
  });

  it('a user resting with 4 waiting is refused the fifth with 429 and Retry-After; quick reads at once are never refused; a failing read passes its error on', async () => {
    const heavy = new HeavyReads();
    await heavy.run('ada', 'what-if', () => busy(55)); // ada now rests about 165 ms
    const runs = Array.from({ length: 6 }, () => heavy.run('ada', 'what-if', () => busy(5)).then(() => 'ran', (error: unknown) => error));
    const outcomes = await Promise.all(runs);
    assert.equal(outcomes.filter((o) => o === 'ran').length, 4);
    const refused = outcomes.filter((o): o is LimitRefused => o instanceof LimitRefused);
    assert.equal(refused.length, 2);
    assert.match(refused[0].message, /^ada has 4 what-ifs, test-only submissions, accounting listings, reports or plans waiting, the most one user may have; this what-if was not run$/);
    assert.equal(refused[0].retryAfterSeconds, 1);
    // Ten quick ones at once (sacct at the end of each task of an array): all run.
    const quick = await Promise.all(Array.from({ length: 10 }, (_, i) => heavy.run('bob', 'accounting listing', () => i)));
    assert.deepEqual(quick, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    await assert.rejects(heavy.run('cy', 'plan', () => { throw new RangeError('bad window'); }), /bad window/);
    assert.equal(await heavy.run('cy', 'plan', () => 'next'), 'next');
  });

  it('closed (the controller stops): reads waiting out a rest or behind another fail at once with the reason and never run; later ones too', async () => {
    const heavy = new HeavyReads();
    await heavy.run('ada', 'what-if', () => busy(60)); // ada now rests about 180 ms
    let ran = 0;
    const began = performance.now();
    const waiting = [heavy.run('ada', 'what-if', () => ++ran), heavy.run('ada', 'plan', () => ++ran)];
    await new Promise((r) => setTimeout(r, 20));
    heavy.close(new Error('the controller is stopping'));
    for (const read of waiting) await assert.rejects(read, /^Error: the controller is stopping$/);
    assert.ok(performance.now() - began < 150, `they failed ${Math.round(performance.now() - began)} ms after they were asked, not after the rest`);
    await assert.rejects(heavy.run('bob', 'plan', () => ++ran), /the controller is stopping/);
    await new Promise((r) => setTimeout(r, 250));
    assert.equal(ran, 0);
  });

  it('through the controller: a user\'s concurrent what-ifs beyond 4 get 429; an administrator\'s are not limited', async () => {
    const controller = await controllerWith('max_pending_per_user = 0\nmax_submit_rate = 0', 'n[1-64]', undefined, 0);
    const daemon = await as(controller, 'daemon');
    const rootApi = await as(controller, 'root');
    try {
      // Enough waiting jobs that a what-if takes a while: one array of 1,500 tasks, every node busy first.
      await rootApi.post('/jobs', { spec: { ...spec, nodes: { min: 64 }, cpusPerTask: 4, timeLimitSeconds: 3600 } });
      await rootApi.post('/jobs', { spec: { ...spec, array: { text: '0-1499' } } });
      const whatIf = (api: ApiClient) => api.post('/whatif', { policy: 'conservative' }).then(() => 200, (error: ApiRequestError) => error);
      const mine = await Promise.all(Array.from({ length: 10 }, () => whatIf(daemon)));
      const refused = mine.filter((o): o is ApiRequestError => o instanceof ApiRequestError);
      assert.ok(refused.length >= 1 && mine.filter((o) => o === 200).length >= 4, mine.map((o) => (o instanceof ApiRequestError ? o.status : o)).join(' '));
      assert.deepEqual([...new Set(refused.map((e) => e.status))], [429]);
      assert.match(refused[0].error, /^daemon has 4 what-ifs, test-only submissions, accounting listings, reports or plans waiting/);
      // A route's own refusal reaches the caller as it was (a 400), through the limit.
      const bad = await daemon.post('/whatif', { policy: 'nosuch' }).then(() => null, (error: ApiRequestError) => error);
      assert.equal(bad?.status, 400);
      const roots = await Promise.all(Array.from({ length: 10 }, () => whatIf(rootApi)));
      assert.deepEqual(roots, Array(10).fill(200));
    } finally {
      daemon.close();
      rootApi.close();
      await controller.close();
    }
  });
});

describe('other reads: one a turn of the event loop per user', () => {
  it('a burst of one user\'s runs one request a turn, in order, while another user\'s runs at once; a failing one passes its error on', async () => {
    const turns = new UserTurns();
    const ran: string[] = [];
    let ticks = 0;
    const tickAt = new Map<string, number>();
    // A turn counter: one tick per turn of the event loop.
    let ticking = true;
    const tick = (): void => {
      ticks++;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    const read = (user: string, name: string) => turns.run(user, () => {
      ran.push(name);
      tickAt.set(name, ticks);
      if (name === 'ada3') throw new RangeError('no such page');
      return name;
    });
    const burst = ['ada1', 'ada2', 'ada3', 'ada4', 'ada5'].map((name) => Promise.resolve().then(() => read('ada', name)).catch((error: Error) => error.message));
    await Promise.resolve();
    const bob = read('bob', 'bob1');
    assert.deepEqual(ran, ['ada1', 'bob1'], 'the first of each user\'s at once; ada\'s others wait');
    assert.equal(bob, 'bob1', 'bob\'s answer is given at once, not as a promise');
    assert.deepEqual(await Promise.all(burst), ['ada1', 'ada2', 'no such page', 'ada4', 'ada5']);
    ticking = false;
    assert.deepEqual(ran, ['ada1', 'bob1', 'ada2', 'ada3', 'ada4', 'ada5']);
    const at = ['ada1', 'ada2', 'ada3', 'ada4', 'ada5'].map((name) => tickAt.get(name)!);
    for (let i = 1; i < at.length; i++) assert.ok(at[i] > at[i - 1], `ada's requests ran in turns ${at.join(', ')}: one a turn`);
    assert.ok(turns.run('ada', () => 'next turn') instanceof Promise, 'in the turn of her last one, her next one waits a turn');
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(turns.run('ada', () => 'later'), 'later', 'once her burst is answered, her next request runs at once again');
  });

  it('past its cap of waiting requests (64 here; in the controller a quarter of the connection cap, 16 to 1,024), a user\'s request is refused with 429 and Retry-After; closed, waiting requests fail with the reason and later ones too', async () => {
    const turns = new UserTurns(() => 64);
    let ran = 0;
    const outcomes = Array.from({ length: 70 }, () => {
      try {
        return Promise.resolve(turns.run('ada', () => ++ran)).then(() => 'ran', (error: Error) => error.message);
      } catch (error) {
        return Promise.resolve(error);
      }
    });
    const settled = await Promise.all(outcomes);
    assert.equal(settled.filter((o) => o === 'ran').length, 65, 'one at once and 64 waiting');
    const refused = settled.filter((o): o is LimitRefused => o instanceof LimitRefused);
    assert.equal(refused.length, 5);
    assert.match(refused[0].message, /^ada has 64 requests waiting to be answered, the most one user may have; this one was not run$/);
    assert.equal(refused[0].retryAfterSeconds, 1);
    turns.run('bob', () => ++ran);
    const waiting = [turns.run('bob', () => ++ran), turns.run('bob', () => ++ran)];
    const before = ran;
    turns.close(new Error('the controller is stopping'));
    for (const outcome of await Promise.allSettled(waiting)) assert.equal(outcome.status === 'rejected' && (outcome.reason as Error).message, 'the controller is stopping');
    assert.equal(ran, before, 'a waiting request never runs once closed');
    assert.throws(() => turns.run('cy', () => ++ran), /the controller is stopping/);
  });
});

describe('a cluster of 100,000 nodes', () => {
  it('starts and answers /status, /nodes and a submission (views are linear in the nodes)', async () => {
    const controller = await controllerWith('max_submit_rate = 0', 'n[000001-100000]',
      '[[partitions]]\nname = "batch"\nnodes = "ALL"\ndefault = true\n[[partitions]]\nname = "half"\nnodes = "n[000001-050000]"\n');
    const api = await as(controller, 'root');
    try {
      const status = await api.get<{ nodes: Record<string, number> }>('/status');
      assert.deepEqual(status.nodes, { total: 100_000, idle: 0, allocated: 0, mixed: 0, down: 100_000, drained: 0 });
      await api.post('/admin/drain', { nodes: ['n000007'], reason: 'test' });
      assert.equal((await api.get<{ nodes: Record<string, number> }>('/status')).nodes.down, 100_000); // a down node drained is still down
      const nodes = await api.get<{ name: string; partitions: string[]; state: string }[]>('/nodes');
      assert.equal(nodes.length, 100_000);
      assert.deepEqual(nodes[49_999], { ...nodes[49_999], name: 'n050000', partitions: ['batch', 'half'] });
      assert.deepEqual(nodes[50_000], { ...nodes[50_000], name: 'n050001', partitions: ['batch'] });
      const { id } = await api.post<{ id: number }>('/jobs', { spec: { ...spec, partition: 'half' } });
      assert.equal((await api.get<{ jobs: { id: number; state: string }[] }>('/jobs')).jobs[0].id, id);
    } finally {
      api.close();
      await controller.close();
    }
  });
});

describe('actions on many jobs', () => {
  it('a cancel of 30,000 jobs, and a hold, release and update of 10,000, go in slices: another user is answered meanwhile; each job gets its answer once, in the order named', async () => {
    const controller = await controllerWith('max_submit_rate = 0\nmax_pending_per_user = 0\nmax_array_size = 30001');
    const daemon = await as(controller, 'daemon');
    const bin = await as(controller, 'bin');
    try {
      const array = (await daemon.post<{ id: number }>('/jobs', { spec: { ...spec, array: { text: '0-29999' } } })).id;
      const others = (await bin.post<{ id: number }>('/jobs', { spec })).id;
      /** Runs `action` while bin asks for /status every 5 ms: how long it took, and bin's waits meanwhile. */
      const meanwhile = async <T>(action: () => Promise<T>): Promise<{ answer: T; tookMs: number; waits: number[] }> => {
        const began = performance.now();
        let over = false;
        const running = action().finally(() => (over = true));
        const waits: number[] = [];
        while (!over) {
          const asked = performance.now();
          await bin.get('/status');
          if (!over) waits.push(performance.now() - asked);
          await sleep(5);
        }
        return { answer: await running, tookMs: performance.now() - began, waits };
      };
      type Answers = { jobs: ApiCancelResult[] };
      // Not the first task: its id is the array's too, which names all its tasks.
      const ids = (await daemon.get<{ jobs: { id: number }[] }>('/jobs?user=daemon&limit=1001')).jobs.map((job) => job.id).slice(1, 1001);
      // A range in reverse, some named twice: answered once each, in the order first named.
      const named = [...ids.slice(0, 10).reverse(), ids[3], ...ids.slice(10, 1000)];
      const held = await meanwhile(() => daemon.post<Answers>('/jobs/hold', { ids: [`${array}_[0-9999]`] }));
      assert.equal(held.answer.jobs.length, 10_000);
      assert.ok(held.answer.jobs.every((job) => job.result !== 'refused'), JSON.stringify(held.answer.jobs.find((job) => job.result === 'refused')));
      const small = await daemon.post<Answers>('/jobs/release', { ids: named });
      assert.deepEqual(small.jobs.map((job) => job.id), [...ids.slice(0, 10).reverse(), ...ids.slice(10, 1000)]);
      assert.ok(small.jobs.every((job) => job.result !== 'refused'), JSON.stringify(small.jobs.find((job) => job.result === 'refused')));
      const released = await meanwhile(() => daemon.post<Answers>('/jobs/release', { ids: [`${array}_[0-9999]`] }));
      assert.equal(released.answer.jobs.filter((job) => job.result !== 'refused').length, 9_001, 'the 1,000 released before (tasks 1 to 1,000) are not held');
      assert.ok(released.answer.jobs.filter((job) => job.result === 'refused').every((job) => /is not held/.test(job.message)));
      const updated = await meanwhile(() => daemon.post<Answers>('/jobs/update', { ids: [`${array}_[0-9999]`], timeLimitSeconds: 1800 }));
      assert.equal(updated.answer.jobs.length, 10_000);
      assert.ok(updated.answer.jobs.every((job) => job.result === 'cancelled' && job.message === `job ${job.id}: updated`), JSON.stringify(updated.answer.jobs.find((job) => job.result !== 'cancelled')));
      assert.deepEqual(updated.answer.jobs.map((job) => job.id), Array.from({ length: 10_000 }, (_, i) => array + i), 'each task once, in order');
      for (const id of [array, array + 4_999, array + 9_999]) assert.equal((await daemon.get<{ timeLimitSeconds: number }>(`/jobs/${id}`)).timeLimitSeconds, 1800);
      assert.equal((await daemon.get<{ timeLimitSeconds: number }>(`/jobs/${array + 10_000}`)).timeLimitSeconds, spec.timeLimitSeconds, 'a task not named keeps its limit');
      const whyUpdate = `update took ${Math.round(updated.tookMs)} ms; bin's waits: ${updated.waits.map(Math.round).join(' ')}`;
      assert.ok(updated.waits.length >= 3, whyUpdate);
      assert.ok(Math.max(...updated.waits) < updated.tookMs / 3, whyUpdate);
      const cancelled = await meanwhile(() => daemon.post<Answers>('/jobs/cancel', { all: true }));
      assert.equal(cancelled.answer.jobs.length, 30_000);
      assert.ok(cancelled.answer.jobs.every((job) => job.result === 'cancelled' && job.state === 'CANCELLED'), JSON.stringify(cancelled.answer.jobs.find((job) => job.result !== 'cancelled')));
      // Every job of the array once, in id order (as named by --all).
      assert.deepEqual(cancelled.answer.jobs.map((job) => job.id), [...cancelled.answer.jobs.map((job) => job.id)].sort((a, b) => a - b));
      assert.equal(new Set(cancelled.answer.jobs.map((job) => job.id)).size, 30_000);
      // In one turn, bin waited for the whole cancel (1 to 5 s); in slices, for one slice at most.
      const why = `cancel took ${Math.round(cancelled.tookMs)} ms; bin's waits: ${cancelled.waits.map(Math.round).join(' ')}`;
      assert.ok(cancelled.waits.length >= 3, why);
      assert.ok(Math.max(...cancelled.waits) < cancelled.tookMs / 3, why);
      assert.equal((await daemon.get<{ jobs: unknown[] }>('/jobs?user=daemon&state=PENDING')).jobs.length, 0);
      assert.equal((await bin.get<{ state: string }>(`/jobs/${others}`)).state, 'PENDING');
    } finally {
      daemon.close();
      bin.close();
      await controller.close();
    }
  });
});

describe('GET /jobs pages', () => {
  it('pages of at most 1,000 by id with a next cursor; every job once; filters apply; a bad cursor is a 400', async () => {
    const controller = await controllerWith('max_submit_rate = 0\nmax_pending_per_user = 0');
    const daemon = await as(controller, 'daemon');
    const bin = await as(controller, 'bin');
    try {
      for (let i = 0; i < 5; i++) await Promise.all(Array.from({ length: 500 }, (_, k) => ((i * 500 + k) % 5 === 0 ? bin : daemon).post('/jobs', { spec })));
      // A finished job is listed too (kept for keep_finished). Which ids are daemon's depends on the order
      // the two clients' requests arrived in (they race): take one of its own.
      const own = (await daemon.get<{ jobs: { id: number }[] }>('/jobs?user=daemon&limit=1')).jobs[0].id;
      await daemon.delete(`/jobs/${own}`);
      const first = await daemon.get<{ jobs: { id: number }[]; next: number | null }>('/jobs');
      assert.equal(first.jobs.length, 1000);
      assert.deepEqual([first.jobs[0].id, first.jobs[999].id, first.next], [1, 1000, 1000]);
      const ids: number[] = [];
      let pages = 0;
      for (let after: number | null = 0; after !== null; pages++) {
        const page: { jobs: { id: number; state: string }[]; next: number | null } = await daemon.get(`/jobs?after=${after}&limit=700`);
        ids.push(...page.jobs.map((j) => j.id));
        after = page.next;
      }
      assert.equal(pages, 4);
      assert.deepEqual(ids, Array.from({ length: 2500 }, (_, i) => i + 1));
      const bins = await daemon.get<{ jobs: { user: string }[]; next: number | null }>('/jobs?user=bin&limit=5000');
      assert.deepEqual([bins.jobs.length, bins.next, bins.jobs.every((j) => j.user === 'bin')], [500, null, true]);
      const cancelled = await daemon.get<{ jobs: { id: number }[] }>('/jobs?state=CANCELLED');
      assert.deepEqual(cancelled.jobs.map((j) => j.id), [own]);
      await assert.rejects(daemon.get('/jobs?after=x'), (e: unknown) => e instanceof ApiRequestError && e.status === 400 && /'after=x' is not a whole number/.test(e.error));
      // The CLI follows the cursor: `taras queue --all --json` lists all 2,500 (without --all, the 2,499 not ended).
      // (Not spawnSync: the controller runs in this process and must answer meanwhile.)
      const run = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, [taras, 'queue', '--all', '--json', '--controller', controller.url], { cwd: work });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
        child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
        child.on('close', (status) => resolve({ status, stdout, stderr }));
      });
      assert.equal(run.status, 0, run.stderr);
      assert.equal((JSON.parse(run.stdout) as unknown[]).length, 2500);
    } finally {
      daemon.close();
      bin.close();
      await controller.close();
    }
  });
});

/** Runs `taras ARGS` to its end. */
function tarasRun(args: string[], cwd: string) {
  return spawnSync(process.execPath, [taras, ...args], { cwd, encoding: 'utf8', timeout: 30_000 });
}

describe('a controller that cannot start says why in one line', () => {
  it('an empty (0-byte) database is refused, never taken for a new cluster', () => {
    const data = join(work, 'empty-db');
    mkdirSync(data, { mode: 0o711 }); // as the controller keeps them: its start then logs no tightening line
    writeFileSync(join(data, 'taras.db'), '', { mode: 0o600 });
    const run = tarasRun(['controller', '--data', data, '--port', '0'], work);
    assert.equal(run.status, 1);
    const lines = run.stderr.trim().split('\n');
    assert.equal(lines.length, 1, run.stderr);
    assert.match(lines[0], new RegExp(`^error: ${join(data, 'taras.db')}: the database file is empty \\(0 bytes\\).*restore it from a backup, or move it aside \\(mv `));
    assert.equal(statSync(join(data, 'taras.db')).size, 0, 'the file is left as it was');
  });

  it('a damaged database (random bytes, or truncated) gives one line and no stack trace', () => {
    const data = join(work, 'random-db');
    mkdirSync(data, { mode: 0o711 });
    writeFileSync(join(data, 'taras.db'), Buffer.from(Array.from({ length: 64 * 1024 }, (_, i) => (i * 7919 + 13) % 251)), { mode: 0o600 });
    const random = tarasRun(['controller', '--data', data, '--port', '0'], work);
    assert.equal(random.status, 1);
    assert.match(random.stderr, /^error: .*taras\.db: the database is damaged or is not a Taras database \(file is not a database\); restore it from a backup, or move it aside \(mv .*\.damaged\)/);
    assert.equal(random.stderr.trim().split('\n').length, 1, random.stderr);

    // A real database with jobs, cut in half after the controller stopped.
    const cut = join(work, 'cut-db');
    mkdirSync(cut, { mode: 0o711 });
    const store = openStore(join(cut, 'taras.db'));
    const request = { ...spec } as unknown as JsonObject;
    for (let i = 0; i < 2000; i++) store.submit({ user: 'alice', name: `job-${i}`.padEnd(300, 'x'), partition: 'batch', scriptPath: '/x', script: 'y'.repeat(500), request }, Date.now());
    store.close();
    truncateSync(join(cut, 'taras.db'), Math.floor(statSync(join(cut, 'taras.db')).size / 2));
    for (const file of readdirSync(cut)) chmodSync(join(cut, file), 0o600);
    const truncated = tarasRun(['controller', '--data', cut, '--port', '0'], work);
    assert.equal(truncated.status, 1);
    assert.match(truncated.stderr, /^error: .*cut-db\/taras\.db: the database is damaged or is not a Taras database \(database disk image is malformed\); restore it from a backup/);
    assert.equal(truncated.stderr.trim().split('\n').length, 1, truncated.stderr);
  });

  it('a second controller on the same data directory names the first one\'s pid; a port in use names the port and --port', async () => {
    const data = join(work, 'shared');
    const first = await startController({
      config: (await import('../src/config/cluster.js')).defaultClusterConfig(data, { count: 2, cpus: 2 }), clusterKey: null, port: 0, log: () => {},
    });
    try {
      const second = tarasRun(['controller', '--data', data, '--port', '0'], work);
      assert.equal(second.status, 1);
      assert.equal(second.stderr,
        `error: another controller (pid ${process.pid}) is running on the data directory ${data}; stop it first (kill ${process.pid}, or Ctrl-C in its terminal), or give this one another data directory (--data DIR, or data_dir in cluster.toml)\n`);
      const up = tarasRun(['up', '--data', data, '--port', '0'], work);
      assert.equal(up.status, 1);
      assert.match(up.stderr, /^error: another controller \(pid \d+\) is running on the data directory /);
      assert.equal(up.stderr.split('\n').length, 2, up.stderr);

      const port = new URL(first.url).port;
      mkdirSync(join(work, 'other'), { mode: 0o711 }); // as the controller keeps it: no tightening line
      const taken = tarasRun(['controller', '--data', join(work, 'other'), '--port', port], work);
      assert.equal(taken.status, 1);
      assert.equal(taken.stderr,
        `error: port ${port} on 127.0.0.1 is already in use by another process (another controller?): stop that process, or choose another port (taras controller --port N, or --port 0 for any free one) or socket path\n`);
    } finally {
      await first.close();
    }
    // Once the first has stopped, the data directory is free again.
    const again = await startController({
      config: (await import('../src/config/cluster.js')).defaultClusterConfig(data, { count: 2, cpus: 2 }), clusterKey: null, port: 0, log: () => {},
    });
    await again.close();
  });
});

/** A raw connection that sends `text` and collects what comes back until it closes. */
/** `taras up` started by `command` (its output gathered), its port once `ready` is in the output; `stop` ends it. */
async function startUp(command: string, args: string[], ready: RegExp): Promise<{ child: ReturnType<typeof spawn>; port: number; output: () => string; waitFor: (pattern: RegExp, ms: number) => Promise<void>; stop: () => Promise<void> }> {
  const child = spawn(command, args, { cwd: work, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const waitFor = async (pattern: RegExp, ms: number) => {
    await eventually(() => `${pattern} from taras up: ${output}`, () => {
      assert.equal(child.exitCode, null, `taras up ended before ${pattern}: ${output}`);
      return pattern.test(output);
    }, ms, 50);
  };
  const stop = async () => {
    if (child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  };
  try {
    await waitFor(ready, 20_000);
  } catch (error) {
    await stop();
    throw error;
  }
  const port = Number(/controller listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(output)![1]);
  return { child, port, output: () => output, waitFor, stop };
}

function rawConnection(port: number, text: string): { socket: Socket; answer: Promise<{ text: string; closedAfterMs: number }> } {
  const began = Date.now();
  const socket = connect({ port, host: '127.0.0.1' });
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
  socket.on('error', () => {});
  socket.on('connect', () => socket.write(text));
  return { socket, answer: new Promise((resolve) => socket.on('close', () => resolve({ text: received, closedAfterMs: Date.now() - began }))) };
}

const statusOf = (text: string): number | null => Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? NaN) || null;

describe('the API server under slow clients and floods', () => {
  it('unfinished bodies hold at most maxPendingBodyBytes (then 503 with Retry-After); a trickling body is cut at the request timeout; slow headers at the headers timeout', async () => {
    const logged: string[] = [];
    const log = { info: (m: string) => logged.push(m), warn: (m: string) => logged.push(m), error: (m: string) => logged.push(m) };
    const server = createApiServer({
      routes: [{ method: 'POST', path: '/echo', handler: (ctx) => ({ status: 200, body: { length: JSON.stringify(ctx.body).length } }) }],
      log, maxPendingBodyBytes: 1024 * 1024, requestTimeoutMs: 2000, headersTimeoutMs: 1000,
    });
    const { tcp } = await server.listen({ port: 0 });
    const port = tcp!.port;
    try {
      // 24 clients each announce 512 KiB and send 64 KiB of it: 1.5 MiB would be held; the cap is 1 MiB.
      const slow = Array.from({ length: 24 }, () => rawConnection(port,
        `POST /echo HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${512 * 1024}\r\n\r\n"${'x'.repeat(64 * 1024 - 1)}`));
      const slowHeaders = rawConnection(port, 'POST /echo HTTP/1.1\r\nhost: x\r\n');
      const answers = await Promise.all(slow.map((c) => c.answer));
      const turnedAway = answers.filter((a) => statusOf(a.text) === 503);
      const timedOut = answers.filter((a) => statusOf(a.text) !== 503);
      assert.ok(turnedAway.length >= 8, `${turnedAway.length} of 24 got 503 (at most 16 x 64 KiB fit in 1 MiB)`);
      assert.match(turnedAway[0].text, /\r\nretry-after: 1\r\n/i);
      assert.match(turnedAway[0].text, /request bodies still arriving as it keeps for this sender \(unverified senders\) or for all/);
      // The others were cut by the request timeout (2 s; checked every second), not left open.
      for (const a of timedOut) {
        assert.ok(a.closedAfterMs < 5000, `a trickling body was cut after ${a.closedAfterMs} ms`);
        assert.ok([408, null].includes(statusOf(a.text)), a.text.slice(0, 60));
      }
      const headers = await slowHeaders.answer;
      assert.ok(headers.closedAfterMs < 4000, `unfinished headers were cut after ${headers.closedAfterMs} ms`);
      // Nothing is held any more: a body of 900 KiB goes through.
      const big = await fetch(`${tcp!.url}/echo`, { method: 'POST', body: JSON.stringify('y'.repeat(900 * 1024)), headers: { 'content-type': 'application/json' } });
      assert.deepEqual([big.status, await big.json()], [200, { length: 900 * 1024 + 2 }]);
    } finally {
      await server.close(0);
    }
  });

  it('one sender\'s slow bodies hold at most its share: a verified user on the socket and a request signed with the cluster key are still served (red team: 64 slow bodies of one user made every POST, agents\' included, 503)', async () => {
    const key = Buffer.alloc(32, 7);
    const folder = mkdtempSync(join(tmpdir(), 'taras-share-'));
    const server = createApiServer({
      routes: [{ method: 'POST', path: '/echo', handler: (ctx) => ({ status: 200, body: { length: JSON.stringify(ctx.body).length, user: ctx.caller?.user ?? null, signed: ctx.signed } }) }],
      log: { info() {}, warn() {}, error() {} }, maxPendingBodyBytes: 1024 * 1024, maxBodyBytes: 128 * 1024, requestTimeoutMs: 10_000, headersTimeoutMs: 5000,
      clusterKey: key, requireKeyFor: () => false, authenticator: createAuthenticator({}),
    });
    const { tcp } = await server.listen({ host: '127.0.0.1', port: 0, socketPath: join(folder, 'api.sock') });
    const slow = Array.from({ length: 8 }, () => rawConnection(tcp!.port,
      `POST /echo HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${128 * 1024}\r\n\r\n"${'x'.repeat(64 * 1024 - 1)}`));
    try {
      // Senders not known before their bodies (these send no credentials) share a quarter of 1 MiB: 4 of the 8 slow bodies; the others are turned away at once.
      const turnedAway = await eventually('four slow bodies turned away', async () => {
        const answered = await Promise.all(slow.map((c) => Promise.race([c.answer, new Promise<null>((r) => setTimeout(() => r(null), 50))])));
        const refused = answered.filter((a) => a !== null && statusOf(a.text) === 503);
        return refused.length >= 4 ? refused : undefined;
      }, 5000);
      assert.equal(turnedAway.length, 4);
      const body = JSON.stringify('y'.repeat(100 * 1024));
      const onSocket = createApiClient({ socketPath: join(folder, 'api.sock') }, {});
      const signed = createApiClient({ baseUrl: tcp!.url }, { clusterKey: key });
      try {
        assert.deepEqual(await onSocket.post('/echo', JSON.parse(body)), { length: body.length, user: 'root', signed: false });
        assert.deepEqual(await signed.post('/echo', JSON.parse(body)), { length: body.length, user: null, signed: true });
      } finally {
        onSocket.close();
        signed.close();
      }
      // A signed request's headers sent again (captured) with a slow body get no room: refused at once, before the body.
      const headers = signRequest(key, { method: 'POST', path: '/echo', body, timestamp: Date.now(), nonce: 'share-test-0123456789', destination: 'controller' });
      const headerText = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('');
      const send = () => rawConnection(tcp!.port, `POST /echo HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/json\r\n${headerText}content-length: ${body.length}\r\n\r\n${body}`).answer;
      assert.equal(statusOf((await send()).text), 200);
      const replayed = await send();
      assert.equal(statusOf(replayed.text), 401);
      assert.match(replayed.text, /replayed nonce/);
      // The flooding address itself gets no more room.
      const more = await rawConnection(tcp!.port, `POST /echo HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 10\r\n\r\n"${'z'.repeat(8)}"`).answer;
      assert.equal(statusOf(more.text), 503);
    } finally {
      for (const c of slow) c.socket.destroy();
      await server.close(0);
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('with credentials required for bodies (the controller), an anonymous TCP body is refused with 401 before it is read; a token that fails is refused before its body too', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'taras-anon-'));
    let reached = 0;
    const server = createApiServer({
      routes: [{ method: 'POST', path: '/echo', handler: () => ({ status: 200, body: { reached: ++reached } }) }],
      log: { info() {}, warn() {}, error() {} }, authenticator: createAuthenticator({}), bodiesNeedCredentials: true, requestTimeoutMs: 10_000,
    });
    const { tcp } = await server.listen({ host: '127.0.0.1', port: 0 });
    try {
      // Headers and the first bytes of a 1 MiB body: the answer comes at once, without the rest.
      for (const headers of ['', 'authorization: Bearer not.a.token\r\n']) {
        const began = Date.now();
        const answer = await rawConnection(tcp!.port, `POST /echo HTTP/1.1\r\nhost: x\r\n${headers}content-type: application/json\r\ncontent-length: ${1024 * 1024}\r\n\r\n"xxxx`).answer;
        assert.equal(statusOf(answer.text), 401, answer.text);
        assert.ok(Date.now() - began < 5000, 'answered before the body (the request timeout is 10 s)');
        assert.match(answer.text, headers === '' ? /no verified identity: POST \/echo takes a request body only from a verified caller/ : /"error":"[^"]*token/i);
      }
      assert.equal(reached, 0);
    } finally {
      await server.close(0);
      rmSync(folder, { recursive: true, force: true });
    }
  });

  describe('MUNGE credentials are decoded before their bodies (a real munged, a real user\'s credentials)', { skip: mungeSkipReason }, () => {
    let munged: RunningMunged;
    let dora: TestUser;
    before(async () => {
      munged = await startMunged();
      dora = createTestUser('dora');
    });
    after(async () => {
      await munged?.stop();
      removeTestUsers();
    });
    /** A credential dora's own `munge` makes for `body` sent as POST /echo, restricted to this process's uid (the server's). */
    const credentialFor = (body: string): string => {
      const made = spawnSync('runuser', ['-u', dora.name, '--', 'munge', `--socket=${munged.socket}`, `--restrict-uid=${process.getuid!()}`],
        { input: requestPayload('POST', '/echo', Buffer.from(body)), encoding: 'utf8', env: { PATH: '/usr/bin:/bin:/usr/sbin:/sbin' } });
      assert.equal(made.status, 0, made.stderr);
      return made.stdout.trim();
    };
    const post = (port: number, credential: string, body: string, sent = body) => rawConnection(port,
      `POST /echo HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/json\r\nx-taras-munge: ${credential}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${sent}`);
    const echo = (): ReturnType<typeof createApiServer> => createApiServer({
      routes: [{ method: 'POST', path: '/echo', handler: (ctx) => ({ status: 200, body: { user: ctx.caller?.user ?? null, via: ctx.caller?.via ?? null, length: JSON.stringify(ctx.body).length } }) }],
      log: { info() {}, warn() {}, error() {} }, authenticator: createAuthenticator({ mungeSocket: munged.socket }), bodiesNeedCredentials: true,
      maxPendingBodyBytes: 1024 * 1024, maxBodyBytes: 128 * 1024, requestTimeoutMs: 10_000, headersTimeoutMs: 5000,
    });

    it('junk MUNGE headers with slow bodies from one sender get 401 before their bodies, and a valid MUNGE user\'s submission goes through meanwhile (they shared one holder: it got 503)', async () => {
      const server = echo();
      const { tcp } = await server.listen({ host: '127.0.0.1', port: 0 });
      // 8 requests with a credential munged cannot decode, each announcing 128 KiB and sending 64 KiB of it: read
      // with their bodies, 4 of them filled the quarter of 1 MiB kept for senders not known before their bodies.
      const junk = Array.from({ length: 8 }, () => post(tcp!.port, 'MUNGE:AwQFAAAAbm90IGEgY3JlZGVudGlhbA==:', `"${'x'.repeat(128 * 1024 - 2)}"`, `"${'x'.repeat(64 * 1024 - 1)}`));
      try {
        const answered: { text: string; closedAfterMs: number }[] = [];
        for (const c of junk) void c.answer.then((a) => answered.push(a));
        // Each answered (now), or held while others were turned away (before).
        await eventually('the junk senders answered or held', () => (answered.length >= 4 ? true : undefined), 8000);
        const body = JSON.stringify({ text: 'y'.repeat(100 * 1024) });
        const valid = await post(tcp!.port, credentialFor(body), body).answer;
        assert.equal(statusOf(valid.text), 200, valid.text.slice(0, 400));
        assert.match(valid.text, new RegExp(`"user":"${dora.name}","via":"munge"`));
        const junkAnswers = await Promise.all(junk.map((c) => c.answer));
        for (const a of junkAnswers) {
          assert.equal(statusOf(a.text), 401, a.text.slice(0, 300));
          assert.match(a.text, /MUNGE credential (refused|is not valid)/);
          assert.ok(a.closedAfterMs < 5000, `refused after ${a.closedAfterMs} ms: before its body, not at the request timeout (10 s)`);
        }
      } finally {
        for (const c of junk) c.socket.destroy();
        await server.close(0);
      }
    });

    it('a credential sent again with another body, or with a body that never comes, is refused and not used up: the request it was made for goes through, once', async () => {
      const server = echo();
      const { tcp } = await server.listen({ host: '127.0.0.1', port: 0 });
      const body = JSON.stringify({ job: 'dora\'s' });
      const credential = credentialFor(body);
      // Whoever saw it on the wire: its headers and part of a body that never comes...
      const stalled = post(tcp!.port, credential, body, body.slice(0, 5));
      try {
        // ...and with another body of the same length: the body's hash is still checked.
        const altered = await post(tcp!.port, credential, body.replace('dora', 'eve!')).answer;
        assert.equal(statusOf(altered.text), 401, altered.text.slice(0, 400));
        assert.match(altered.text, /MUNGE credential refused: MUNGE credential was made for another request/);
        stalled.socket.destroy();
        // munged decoded it (and would not again), but no request it binds has used it: dora's own goes through...
        const own = await post(tcp!.port, credential, body).answer;
        assert.equal(statusOf(own.text), 200, own.text.slice(0, 400));
        assert.match(own.text, new RegExp(`"user":"${dora.name}","via":"munge"`));
        // ...once.
        const replayed = await post(tcp!.port, credential, body).answer;
        assert.equal(statusOf(replayed.text), 401);
        assert.match(replayed.text, /MUNGE credential refused: .*replayed/);
      } finally {
        stalled.socket.destroy();
        await server.close(0);
      }
    });
  });

  it('at the connection cap the oldest idle connection makes room; when every connection is being answered a new one gets 503', async () => {
    const warnings: string[] = [];
    const log = { info() {}, warn: (m: string) => warnings.push(m), error: (m: string) => warnings.push(m) };
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const server = createApiServer({
      routes: [
        { method: 'GET', path: '/status', handler: () => ({ status: 200, body: { up: true } }) },
        { method: 'GET', path: '/hold', handler: async () => { await held; return { status: 200, body: {} }; } },
      ],
      log, maxConnections: 20,
    });
    const { tcp } = await server.listen({ port: 0 });
    const port = tcp!.port;
    const sockets: Socket[] = [];
    try {
      // 50 connections that never send anything: the later ones displace the earlier ones.
      const idle = Array.from({ length: 50 }, () => rawConnection(port, ''));
      sockets.push(...idle.map((c) => c.socket));
      await new Promise((r) => setTimeout(r, 300));
      const status = await fetch(`${tcp!.url}/status`);
      assert.equal(status.status, 200);
      assert.ok(idle.slice(0, 25).every((c) => c.socket.destroyed || c.socket.readableEnded), 'the oldest idle connections were closed');
      assert.match(warnings[0], /^at the connection limit \(20\): closed the oldest connections not being answered/);

      // 20 requests being answered fill the cap: the 21st connection is told to come back. (First the fetch's
      // keep-alive connection is idle for over a second: the first of them displaces it, not one another.)
      await new Promise((r) => setTimeout(r, 1_200));
      const holding = Array.from({ length: 20 }, () => rawConnection(port, 'GET /hold HTTP/1.1\r\nhost: x\r\n\r\n'));
      sockets.push(...holding.map((c) => c.socket));
      await new Promise((r) => setTimeout(r, 300));
      const refused = await rawConnection(port, 'GET /status HTTP/1.1\r\nhost: x\r\n\r\n').answer;
      assert.equal(statusOf(refused.text), 503);
      assert.match(refused.text, /retry-after: 1/);
      assert.match(refused.text, /its limit \(max_connections\)/);
      release();
      const answered = await Promise.all(holding.map((c) => { c.socket.end(); return c.answer; }));
      assert.ok(answered.every((a) => statusOf(a.text) === 200));
    } finally {
      release();
      for (const socket of sockets) socket.destroy();
      await server.close(0);
    }
  });

  it('clients that ask and never read (red team: 4,200 of them shut out every user and the agents): at the cap they make room, and each is closed once it has taken nothing for the send timeout', async () => {
    const warnings: string[] = [];
    const log = { info() {}, warn: (m: string) => warnings.push(m), error: (m: string) => warnings.push(m) };
    const big = 'x'.repeat(4 * 1024 * 1024); // far more than the kernel buffers between the two ends hold
    const server = createApiServer({
      routes: [
        { method: 'GET', path: '/status', handler: () => ({ status: 200, body: { up: true } }) },
        { method: 'GET', path: '/big', handler: () => ({ status: 200, body: { big } }) },
        // A big listing in pieces (as GET /nodes): the server sees each piece taken.
        { method: 'GET', path: '/pieces', handler: () => ({ status: 200, body: new JsonPieces((function* () {
          yield '[';
          for (let i = 0; i < 64; i++) yield `${i === 0 ? '' : ','}"${'y'.repeat(64 * 1024)}"`;
          yield ']';
        })()) }) },
      ],
      log, maxConnections: 20, sendTimeoutMs: 4_000,
    });
    // Through the Unix socket, as a local user would: its kernel buffers hold far less than an answer.
    const socketPath = join(mkdtempSync(join(work, 'stall-')), 'api.sock');
    const { tcp } = await server.listen({ port: 0, socketPath });
    const sockets: Socket[] = [];
    try {
      // 20 connections, each asking for 4 MiB and reading none of it: every slot is being answered.
      const readers = Array.from({ length: 20 }, () => {
        const socket = connect({ path: socketPath });
        socket.on('error', () => {});
        socket.on('connect', () => {
          socket.write('GET /big HTTP/1.1\r\nhost: x\r\n\r\n');
          socket.pause(); // reads nothing
        });
        return socket;
      });
      sockets.push(...readers);
      // The guard has seen them take nothing for a second or more (it looks once a second), not yet for the 4 s.
      await new Promise((r) => setTimeout(r, 2_200));
      // Another client is served at once: the oldest stalled connection makes room (before: 503 at the cap).
      const began = Date.now();
      const status = await fetch(`${tcp!.url}/status`);
      assert.equal(status.status, 200);
      assert.ok(Date.now() - began < 1_000);
      assert.match(warnings.join('\n'), /at the connection limit \(20\): closed the oldest connections not being answered/);
      // A client between two requests on one connection (sinfo asks twice) is not the one displaced by the flood's next ones.
      const keptAlive = connect({ path: socketPath });
      sockets.push(keptAlive);
      let kept = '';
      keptAlive.on('data', (chunk: Buffer) => (kept += chunk.toString()));
      keptAlive.on('error', () => {});
      keptAlive.write('GET /status HTTP/1.1\r\nhost: x\r\n\r\n');
      for (let i = 0; i < 40 && !kept.includes('{"up":true}'); i++) await new Promise((r) => setTimeout(r, 25));
      for (let i = 0; i < 3; i++) {
        const more = connect({ path: socketPath });
        more.on('error', () => {});
        more.on('connect', () => { more.write('GET /big HTTP/1.1\r\nhost: x\r\n\r\n'); more.pause(); });
        readers.push(more);
        sockets.push(more);
      }
      await new Promise((r) => setTimeout(r, 300));
      kept = '';
      keptAlive.write('GET /status HTTP/1.1\r\nhost: x\r\n\r\n');
      for (let i = 0; i < 40 && !kept.includes('{"up":true}'); i++) await new Promise((r) => setTimeout(r, 25));
      assert.match(kept, /^HTTP\/1\.1 200 /, 'its second request is answered on the same connection');
      keptAlive.destroy();
      // Past the send timeout the rest are closed by the server too, and the log says why: one line for the lot
      // (at most one every 10 s, with the count), not one per connection.
      const closedLine = /^closed \d+ connection\(s\) whose client took nothing of its answer for 4 s/;
      for (let i = 0; i < 100 && !warnings.some((w) => closedLine.test(w)); i++) await new Promise((r) => setTimeout(r, 100));
      await new Promise((r) => setTimeout(r, 5_500)); // the last of them (begun about 3 s after the first) are past it too
      assert.equal(warnings.filter((w) => closedLine.test(w)).length, 1, warnings.join('\n'));
      // Read now, each gets what the kernel held and then the end: a cut answer, not the 4 MiB (nor a connection kept open).
      const received = readers.map((socket) => new Promise<number>((resolve) => {
        let bytes = 0;
        socket.on('data', (chunk: Buffer) => (bytes += chunk.length));
        socket.once('close', () => resolve(bytes));
        setTimeout(() => resolve(-1), 3_000);
        socket.resume();
      }));
      const bytes = await Promise.all(received);
      assert.ok(bytes.every((n) => n >= 0 && n < big.length), `every never-reading connection was closed by the server, its answer cut: ${bytes.join(' ')}`);
      // A client that reads a listing in pieces slowly, longer than the send timeout, keeps its connection: the server sees it taking them.
      const slow = connect({ path: socketPath });
      sockets.push(slow);
      let got = 0;
      const slowBegan = Date.now();
      slow.on('data', (chunk: Buffer) => {
        got += chunk.length;
        slow.pause();
        setTimeout(() => slow.resume(), 150);
      });
      slow.write('GET /pieces HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n');
      await new Promise<void>((resolve) => slow.once('close', () => resolve()));
      assert.ok(got > 64 * 64 * 1024, `the slow reader got the whole listing (${got} bytes)`);
      assert.ok(Date.now() - slowBegan > 4_000, `it took longer than the send timeout (${Date.now() - slowBegan} ms)`);
    } finally {
      for (const socket of sockets) socket.destroy();
      await server.close(0);
    }
  });

  it('at the cap, a flood of new connections that send nothing displaces itself: not a client still sending its body, nor one taking a big answer steadily (review: both were cut)', async () => {
    const log = { info() {}, warn() {}, error() {} };
    const big = 'z'.repeat(4 * 1024 * 1024);
    const server = createApiServer({
      routes: [
        { method: 'GET', path: '/big', handler: () => ({ status: 200, body: { big } }) },
        { method: 'POST', path: '/echo', handler: (ctx) => ({ status: 200, body: { got: (ctx.body as { text: string }).text.length } }) },
      ],
      log, maxConnections: 20, sendTimeoutMs: 1_000,
    });
    const socketPath = join(mkdtempSync(join(work, 'flood-')), 'api.sock');
    await server.listen({ socketPath });
    const flood: Socket[] = [];
    const timer = setInterval(() => {
      const socket = connect({ path: socketPath });
      socket.on('error', () => {});
      flood.push(socket);
    }, 10);
    try {
      // A steady reader of one big answer (one write): a chunk every 20 ms, for longer than the send timeout.
      const reader = connect({ path: socketPath });
      let got = 0;
      reader.on('error', () => {});
      reader.on('data', (chunk: Buffer) => {
        got += chunk.length;
        reader.pause();
        setTimeout(() => reader.resume(), 20);
      });
      const readerDone = new Promise<void>((resolve) => reader.once('close', () => resolve()));
      reader.write('GET /big HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n');
      // A POST whose body comes 150 ms after its headers, while the flood goes on.
      const body = JSON.stringify({ text: 'b'.repeat(2000) });
      const poster = connect({ path: socketPath });
      let answer = '';
      poster.on('error', () => {});
      poster.on('data', (chunk: Buffer) => (answer += chunk.toString()));
      const posterDone = new Promise<void>((resolve) => poster.once('close', () => resolve()));
      poster.write(`POST /echo HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n`);
      await new Promise((r) => setTimeout(r, 150));
      poster.write(body);
      await posterDone;
      assert.match(answer, /^HTTP\/1\.1 200 [\s\S]*\{"got":2000\}$/);
      await readerDone;
      assert.ok(got > big.length, `the steady reader got the whole answer (${got} bytes)`);
      assert.ok(flood.length > 40, `the flood opened ${flood.length} connections meanwhile (more than the cap)`);
    } finally {
      clearInterval(timer);
      for (const socket of flood) socket.destroy();
      await server.close(0);
    }
  });

  it('running out of descriptors on accept is logged once per burst and never thrown', async () => {
    const { ConnectionGuard } = await import('../src/net/guard.js');
    const { createServer } = await import('node:http');
    const lines: string[] = [];
    const log = { info: (m: string) => lines.push(m), warn: (m: string) => lines.push(m), error: (m: string) => lines.push(m) };
    const guard = new ConnectionGuard(log, { maxConnections: 100 });
    const server = createServer();
    guard.attach(server, 'TCP');
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      for (const code of ['EMFILE', 'EMFILE', 'ENFILE', 'EMFILE']) server.emit('error', Object.assign(new Error(`accept ${code}`), { code }));
      assert.equal(lines.length, 1, lines.join('\n'));
      assert.match(lines[0], /^TCP: out of file descriptors \(EMFILE\) accepting a connection; refusing connections until some close \(0 open; raise the open-file limit, ulimit -n, or lower max_connections\)$/);
    } finally {
      server.close();
      guard.close();
    }
    // The count of open files: a line when 90% of the limit are in use, one when fewer than 80% are, none between.
    lines.length = 0;
    guard.checkDescriptors(899, 1000);
    assert.deepEqual(lines, []);
    guard.checkDescriptors(900, 1000);
    guard.checkDescriptors(Infinity, 1000);
    guard.checkDescriptors(850, 1000);
    assert.equal(lines.length, 1, lines.join('\n'));
    assert.match(lines[0], /^900 of this process's 1000 file descriptors are in use \(0 client connections\): new connections are dropped when none are left .*connections are capped at 8 until descriptors are free again; raise the open-file limit \(ulimit -n, LimitNOFILE=\) or lower max_connections$/);
    guard.checkDescriptors(799, 1000);
    assert.equal(lines[1], 'file descriptors are available again: 799 of 1000 in use; connections are capped at 100 again');
    guard.checkDescriptors(Infinity, 1000); // none left even to count them
    assert.match(lines[2], /^all of this process's 1000 file descriptors are in use/);
    // A cap above what the open-file limit allows is lowered to what it allows, and said.
    const { openFileLimit, defaultMaxConnections } = await import('../src/net/guard.js');
    const limit = openFileLimit();
    if (limit !== null && Number.isFinite(limit)) {
      const warned: string[] = [];
      const capped = new ConnectionGuard({ info() {}, warn: (m: string) => warned.push(m), error() {} }, { maxConnections: limit + 1000 });
      assert.equal(capped.maxConnections, defaultMaxConnections(limit));
      assert.match(warned[0], new RegExp(`^max_connections = ${limit + 1000} is more than the open-file limit of this process allows \\(${limit}\\): using ${capped.maxConnections}; raise the limit`));
    }
  });

  it('taras up whose open-file limit is lowered under it (prlimit) to a real EMFILE: the shortage is logged, it lives, and answers once the flood goes', async (t) => {
    if (spawnSync('prlimit', ['--version']).status !== 0) {
      t.skip('prlimit (util-linux) is not installed');
      return;
    }
    const up = await startUp(process.execPath, [taras, 'up', '--data', join(work, 'emfile'), '--port', '0', '--virtual', '2x2'], /agent: registered 2 node/);
    const { child, port } = up;
    const sockets: Socket[] = [];
    try {
      // Room for 30 more files than it has open: far below the connection cap it chose at its start.
      const limit = readdirSync(`/proc/${child.pid}/fd`).length + 30;
      const lowered = spawnSync('prlimit', ['--pid', String(child.pid), `--nofile=${limit}:${limit}`], { encoding: 'utf8' });
      assert.equal(lowered.status, 0, lowered.stderr);
      for (let i = 0; i < 100; i++) sockets.push(rawConnection(port, '').socket);
      // Counted every 5 s: the line comes within that.
      await up.waitFor(/file descriptors are in use/, 8_000);
      assert.match(up.output(), new RegExp(`(all|\\d+) of this process's ${limit} file descriptors are in use \\(\\d+ client connections\\): new connections are dropped .* connections are capped at \\d+ until`));
      assert.equal(child.exitCode, null, `taras up died: ${up.output()}`);
      // The flood still open, a client gets in again (each try a new connection): idle ones make room for it.
      const answered = (what: string) => eventually(`an answer ${what}`, async () => {
        const answer = await fetch(`http://127.0.0.1:${port}/status`, { signal: AbortSignal.timeout(2000) }).catch(() => null);
        return answer?.status === 200;
      }, 10_000, 200);
      await answered('while the flood holds its connections');
      for (const socket of sockets) socket.destroy();
      await answered('after the flood went');
      await up.waitFor(/file descriptors are available again/, 8_000);
      assert.equal(child.exitCode, null);
      assert.doesNotMatch(up.output(), /Uncaught|\n\s+at /);
    } finally {
      for (const socket of sockets) socket.destroy();
      await up.stop();
    }
  });

  it('taras up under `ulimit -n 256`: 1,200 idle, slow-header and slow-body connections leave it alive and another client served at once', async (t) => {
    const up = await startUp('sh', ['-c', `ulimit -n 256 && exec "${process.execPath}" "${taras}" up --data "${join(work, 'flood')}" --port 0 --virtual 2x2`],
      /controller listening on http:\/\/127\.0\.0\.1:(\d+)/);
    const { child, port } = up;
    const sockets: Socket[] = [];
    try {
      for (let i = 0; i < 1200; i++) {
        const kind = i % 3;
        const text = kind === 0 ? '' : kind === 1 ? 'GET /status HTTP/1.1\r\nhost: x\r\n'
          : `POST /jobs HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${1024 * 1024}\r\n\r\n{"spec": "${'x'.repeat(4000)}`;
        sockets.push(rawConnection(port, text).socket);
        if (i % 100 === 99) await new Promise((r) => setTimeout(r, 20)); // bounded: 1,200 in about a quarter of a second
      }
      await new Promise((r) => setTimeout(r, 500));
      const latencies: number[] = [];
      for (let i = 0; i < 3; i++) {
        const began = Date.now();
        // A connection accepted while the flood is still being accepted can itself be displaced (it is then
        // the oldest one still sending its headers); a client tries again, once, as any HTTP client would.
        const status = () => fetch(`http://127.0.0.1:${port}/status`, { signal: AbortSignal.timeout(5000) });
        const answer = await status().catch(() => status());
        assert.equal(answer.status, 200);
        assert.equal(((await answer.json()) as { up: boolean }).up, true);
        latencies.push(Date.now() - began);
      }
      t.diagnostic(`GET /status during the flood: ${latencies.join(', ')} ms`);
      assert.ok(Math.max(...latencies) < 3000, `answered in ${latencies.join(', ')} ms`);
      assert.equal(child.exitCode, null, `taras up died: ${up.output()}`);
      assert.doesNotMatch(up.output(), /EMFILE|Uncaught|\n\s+at /);
      assert.match(up.output(), /at the connection limit \(128\)/);
    } finally {
      for (const socket of sockets) socket.destroy();
      await up.stop();
    }
  });
});
