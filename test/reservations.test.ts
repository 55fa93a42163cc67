// Advance reservations and maintenance windows: in the engine with a test
// clock (what a reservation holds, who may run in it, how every other job
// plans around it, expiry, deletion, persistence across a restart, refusals
// that store nothing), then through the real CLI with real Unix users (only
// administrators create them; only their users submit into them).

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { defaultClusterConfig } from '../src/config/cluster.js';
import { readClusterConfig } from '../src/config/load.js';
import { ControllerEngine, SubmitRefused, type AgentLink } from '../src/controller/engine.js';
import { startController, type RunningController } from '../src/controller/daemon.js';
import { apiPlan, apiWhen } from '../src/controller/views.js';
import type { JobId } from '../src/core/types.js';
import type { JobSpec } from '../src/jobspec/types.js';
import { openStore } from '../src/store/store.js';
import { runAs } from './auth-helpers.js';
import { createTestUser, notRootReason, removeTestUsers, type TestUser } from './unix-users.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const work = mkdtempSync(join(tmpdir(), 'taras-reservations-'));
chmodSync(work, 0o711);
after(() => {
  rmSync(work, { recursive: true, force: true });
  removeTestUsers();
});

const spec = (extra: Partial<JobSpec> = {}): JobSpec => ({
  script: { path: '/tmp/job.sh', text: '#!/bin/sh\necho hi\n', args: [] },
  nodes: { min: 1 }, cpusPerTask: 8, timeLimitSeconds: 600, name: 'job', workingDir: '/tmp', output: 'taras-%j.out',
  export: { all: true, variables: [] }, requeue: false, ...extra,
});
const noAgents: AgentLink = { start: async () => {}, signal: async () => {} };
const MIN = 60_000;

let files = 0;
function setup(policy: 'easy' | 'conservative', path = join(work, `r-${++files}.db`), startMs = Date.UTC(2026, 10, 23, 12, 0, 0)) {
  const store = openStore(path);
  const clock = { ms: startMs };
  const config = { ...defaultClusterConfig(work, { count: 4, cpus: 8 }), policy };
  const engine = new ControllerEngine(config, store, noAgents, () => clock.ms);
  engine.agentRegistered([...engine.nodes.keys()], []);
  return { store, clock, engine, path };
}
const anyone = () => true;

for (const policy of ['easy', 'conservative'] as const) {
  describe(`reservations in the plan (${policy})`, () => {
    it('a reservation holds its nodes over its window: jobs in it run there then, others plan around it', () => {
      const { clock, engine } = setup(policy);
      const t0 = clock.ms;
      const { reservation } = engine.createReservation({
        name: 'course', kind: 'reservation', startMs: t0 + 30 * MIN, endMs: t0 + 90 * MIN, nodeCount: 2, users: ['ann'], reason: '', createdBy: 'root',
      });
      assert.deepEqual(reservation.nodes, ['node01', 'node02'], 'the first free nodes in order');
      const inside = spec({ reservation: 'course', timeLimitSeconds: 1200 });
      assert.deepEqual(engine.reservationRefusals(inside, (users) => users.includes('ann')), []);
      assert.match(engine.reservationRefusals(inside, (users) => users.includes('bob'))[0], /not one of the users of reservation course/);
      assert.match(engine.reservationRefusals(spec({ reservation: 'course', timeLimitSeconds: 7200 }), anyone)[0], /longer than what is left of reservation course/);
      assert.match(engine.reservationRefusals(spec({ reservation: 'nope' }), anyone)[0], /no reservation named nope/);

      const [inJob, longJob, shortJob, wideJob] = engine.submit([
        { user: 'ann', spec: inside },
        { user: 'bob', spec: spec({ timeLimitSeconds: 3600 }) }, // an hour: not on node01-02, which the reservation takes in 30 min
        { user: 'bob', spec: spec({ timeLimitSeconds: 1200 }) }, // 20 min: ends before the reservation, anywhere
        { user: 'bob', spec: spec({ nodes: { min: 4 }, timeLimitSeconds: 600 }) }, // all four nodes: not before the reservation ends
      ]);
      const started = engine.schedule();
      assert.ok(started.includes(longJob) && started.includes(shortJob), `started ${started}`);
      assert.ok(['node03', 'node04'].includes(engine.active.get(longJob)!.nodes[0]), 'the hour-long job runs beside the reservation');
      assert.equal(engine.plannedStartMs(inJob), t0 + 30 * MIN);
      const when = apiWhen(engine, engine.active.get(inJob)!);
      assert.ok(when.plannedNodes!.every((name) => reservation.nodes.includes(name)));
      assert.equal(when.reservation?.name, 'course');
      // The four-node job waits for the reservation's end and the hour-long job's: 90 min, then 60 min after t0 ends first.
      assert.equal(engine.plannedStartMs(wideJob), t0 + 90 * MIN);
      const holders = apiWhen(engine, engine.active.get(wideJob)!).heldBy.map((h) => `${h.kind}:${h.id}`);
      assert.ok(holders.includes('reservation:course'), `held by ${holders}`);

      const plan = apiPlan(engine, clock.ms);
      const bar = plan.items.find((item) => item.kind === 'reservation')!;
      assert.deepEqual([bar.id, bar.state, bar.nodes, bar.start, bar.end], ['course', 'RESERVED', ['node01', 'node02'],
        new Date(t0 + 30 * MIN).toISOString(), new Date(t0 + 90 * MIN).toISOString()]);

      clock.ms = t0 + 20 * MIN;
      engine.jobReport({ jobId: shortJob, state: 'COMPLETED', exitCode: 0, endTimeMs: clock.ms }); // at its limit
      clock.ms = t0 + 30 * MIN;
      engine.touch(); // the daemon's once-a-second pass
      assert.ok(engine.schedule().includes(inJob), 'starts when the reservation begins');
      assert.ok(reservation.nodes.includes(engine.active.get(inJob)!.nodes[0]));

      clock.ms = t0 + 90 * MIN;
      assert.deepEqual(engine.expireReservations().map((r) => r.name), ['course']);
      assert.deepEqual(engine.listReservations(), []);
    });

    it('a maintenance window: no job starts that would run into it, a short one still fits before; every plan moves past it', () => {
      const { clock, engine } = setup(policy);
      const t0 = clock.ms;
      engine.createReservation({
        name: engine.windowName(t0 + 20 * MIN), kind: 'maintenance', startMs: t0 + 20 * MIN, endMs: t0 + 80 * MIN,
        nodes: [...engine.nodes.keys()], users: [], reason: 'power', createdBy: 'root',
      });
      assert.deepEqual(engine.listReservations().map((r) => r.name), ['maint-20261123-1220']);
      const [long, short] = engine.submit([
        { user: 'bob', spec: spec({ timeLimitSeconds: 1800 }) },
        { user: 'bob', spec: spec({ timeLimitSeconds: 600 }) },
      ]);
      assert.deepEqual(engine.schedule(), [short]);
      assert.equal(engine.plannedStartMs(long), t0 + 80 * MIN);
      assert.deepEqual(apiWhen(engine, engine.active.get(long)!).heldBy.map((h) => [h.kind, h.until]), [['maintenance', new Date(t0 + 80 * MIN).toISOString()]]);
    });

    it('deleting a reservation leaves its jobs with no plan and the reason; reservations survive a restart', () => {
      const { clock, engine, store, path } = setup(policy);
      const t0 = clock.ms;
      engine.createReservation({ name: 'keep', kind: 'reservation', startMs: t0 + 10 * MIN, endMs: t0 + 70 * MIN, nodes: ['node04'], users: ['ann'], reason: 'x', createdBy: 'root' });
      engine.createReservation({ name: 'drop', kind: 'reservation', startMs: t0 + 10 * MIN, endMs: t0 + 70 * MIN, nodes: ['node03'], users: ['ann'], reason: '', createdBy: 'root' });
      const [kept, dropped] = engine.submit([
        { user: 'ann', spec: spec({ reservation: 'keep' }) },
        { user: 'ann', spec: spec({ reservation: 'drop' }) },
      ]);
      engine.schedule();
      assert.equal(engine.plannedStartMs(dropped), t0 + 10 * MIN);
      engine.deleteReservation('drop');
      engine.schedule();
      assert.equal(engine.plannedStartMs(dropped), null);
      assert.match(apiWhen(engine, engine.active.get(dropped)!).explanation, /reservation drop no longer exists/);

      store.close();
      const again = setup(policy, path, t0 + MIN);
      assert.deepEqual(again.engine.listReservations().map((r) => [r.name, r.nodes, r.users, r.reason]), [['keep', ['node04'], ['ann'], 'x']]);
      again.engine.schedule();
      assert.equal(again.engine.plannedStartMs(kept as JobId), t0 + 10 * MIN);
      assert.deepEqual(again.engine.plannedNodesOf(kept as JobId), ['node04']);
      again.store.close();
    });

    it('what-if plans a copy under another policy, drained nodes or a window, and changes nothing', () => {
      const { clock, engine } = setup(policy);
      const t0 = clock.ms;
      const [a, b, c] = engine.submit([
        { user: 'ann', spec: spec({ nodes: { min: 4 }, timeLimitSeconds: 3600 }) },
        { user: 'bob', spec: spec({ nodes: { min: 4 }, timeLimitSeconds: 600 }) },
        { user: 'bob', spec: spec({ timeLimitSeconds: 600 }) },
      ]);
      assert.deepEqual(engine.schedule(), [a]);
      const before = [b, c].map((id) => engine.plannedStartMs(id));
      assert.deepEqual(before, [t0 + 60 * MIN, t0 + 70 * MIN]);
      const window = engine.whatIf({ window: { startMs: t0 + 60 * MIN, endMs: t0 + 120 * MIN, nodes: ['node01'] } });
      assert.deepEqual(window.map((row) => [row.id, row.nowMs, row.thenMs]), [
        [b, t0 + 60 * MIN, t0 + 120 * MIN], // needs node01 too: after the window
        [c, t0 + 70 * MIN, policy === 'conservative' ? t0 + 60 * MIN : t0 + 60 * MIN], // one node: beside the window, no longer behind b
      ]);
      const drained = engine.whatIf({ drain: ['node04'] });
      assert.equal(drained.find((row) => row.id === b)!.thenMs, null, 'four nodes with one drained: no plan');
      const other = engine.whatIf({ policy: policy === 'easy' ? 'conservative' : 'easy' });
      assert.deepEqual(other.map((row) => row.thenMs), before);
      assert.deepEqual([b, c].map((id) => engine.plannedStartMs(id)), before, 'the live plan is untouched');
      assert.throws(() => engine.whatIf({ drain: ['node09'] }), /no node named node09/);
    });

    it('a job keeps the reservation it was accepted into: a later one of the same name (a window, other users) is not its', () => {
      const { clock, engine } = setup(policy);
      const t0 = clock.ms;
      engine.createReservation({ name: 'r', kind: 'reservation', startMs: t0 + 10 * MIN, endMs: t0 + 60 * MIN, nodes: ['node01'], users: ['ann'], reason: '', createdBy: 'root' });
      const [inR] = engine.submit([{ user: 'ann', spec: spec({ reservation: 'r' }) }]);
      engine.schedule();
      assert.equal(engine.plannedStartMs(inR), t0 + 10 * MIN);
      engine.deleteReservation('r');
      engine.createReservation({ name: 'r', kind: 'maintenance', startMs: t0, endMs: t0 + 60 * MIN, nodes: ['node02'], users: [], reason: 'fw', createdBy: 'root' });
      engine.touch();
      engine.schedule();
      assert.equal(engine.active.get(inR)!.state, 'PENDING', 'not run in the maintenance window that took the name');
      assert.equal(engine.plannedStartMs(inR), null);
      assert.match(apiWhen(engine, engine.active.get(inR)!).explanation, /reservation r no longer exists/);
    });

    it('a job waiting for a reservation that begins later holds up no one behind it', () => {
      const { clock, engine } = setup(policy);
      const t0 = clock.ms;
      engine.createReservation({ name: 'later', kind: 'reservation', startMs: t0 + 24 * 60 * MIN, endMs: t0 + 25 * 60 * MIN, nodes: ['node01'], users: ['ann'], reason: '', createdBy: 'root' });
      const [waiting, behind] = engine.submit([
        { user: 'ann', spec: spec({ reservation: 'later' }) },
        { user: 'bob', spec: spec({ nodes: { min: 2 } }) },
      ]);
      assert.deepEqual(engine.schedule(), [behind]);
      assert.equal(engine.plannedStartMs(waiting), t0 + 24 * 60 * MIN);
    });

    it('refuses a bad reservation with every reason and stores nothing', () => {
      const { clock, engine, store } = setup(policy);
      const t0 = clock.ms;
      const refusal = (request: Parameters<ControllerEngine['createReservation']>[0]) => {
        try {
          engine.createReservation(request);
        } catch (error) {
          assert.ok(error instanceof SubmitRefused);
          return error.message;
        }
        assert.fail('accepted');
      };
      const base = { name: 'r', kind: 'reservation' as const, startMs: t0 + MIN, endMs: t0 + 2 * MIN, users: [], reason: '', createdBy: 'root' };
      assert.match(refusal({ ...base, endMs: t0 }), /its end must come after its start/);
      assert.match(refusal({ ...base, nodes: ['node09'] }), /no node named node09/);
      assert.match(refusal({ ...base, name: 'bad name' }), /not a reservation name/);
      assert.match(refusal({ ...base, nodeCount: 5 }), /only 4 of the 5 nodes are free for the whole window/);
      // Nodes and a count that disagree (the count was ignored): refused; a count that matches is taken.
      assert.match(refusal({ ...base, nodes: ['node01', 'node02'], nodeCount: 3 }), /the nodes \(--nodelist\) name 2 node\(s\) and the count \(--nodes\) says 3: give one of them, or a count that matches/);
      engine.createReservation({ ...base, nodes: ['node01'], nodeCount: 1 });
      assert.deepEqual(engine.listReservations().map((r) => r.nodes), [['node01']]);
      engine.deleteReservation('r');
      engine.createReservation({ ...base, nodes: ['node01'] });
      assert.match(refusal({ ...base, name: 'r2', nodes: ['node01'] }), /node01 is in another reservation then/);
      assert.match(refusal({ ...base, nodes: ['node02'] }), /a reservation named r exists/);
      // Running jobs take nodes: a count picks around them.
      const [busy] = engine.submit([{ user: 'bob', spec: spec({ nodes: { min: 3 }, timeLimitSeconds: 3600 }) }]);
      assert.deepEqual(engine.schedule(), [busy]);
      assert.match(refusal({ ...base, name: 'r3', startMs: t0 + 5 * MIN, endMs: t0 + 10 * MIN, nodeCount: 2 }), /only 1 of the 2 nodes/);
      assert.deepEqual(engine.listReservations().map((r) => r.name), ['r']);
      assert.equal((store.setting('reservations') as unknown[]).length, 1);
    });
  });
}

describe('reservations through the CLI, with real users', { skip: notRootReason }, () => {
  let controller: RunningController;
  let alice: TestUser;
  let bob: TestUser;
  const taras = (user: TestUser | null, ...args: string[]) => {
    const full = [join(root, 'bin/taras.js'), ...((args)[0] === 'submit' ? ['submit', '--controller', `unix:${controller.socketPath}`, ...(args).slice(1)] : [...args, '--controller', `unix:${controller.socketPath}`])];
    if (user !== null) return runAs(user, full);
    // As root, asynchronously: the controller runs in this process and must answer meanwhile.
    return new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const child = spawn(process.execPath, full, { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      child.on('error', reject);
      child.on('close', (status) => {
        clearTimeout(timer);
        resolve({ status, stdout, stderr });
      });
    });
  };

  before(async () => {
    alice = createTestUser('alice');
    bob = createTestUser('bob');
    const file = join(work, 'cluster.toml');
    writeFileSync(file, '[cluster]\nname = "resv"\ndata_dir = "data"\npolicy = "conservative"\n[[nodes]]\nnames = "n[1-3]"\ncpus = 2\nmemory = "1G"\n[[partitions]]\nname = "batch"\nnodes = "ALL"\n');
    const parsed = await readClusterConfig(file);
    assert.ok(parsed.ok);
    controller = await startController({ config: parsed.config, configPath: file, clusterKey: null, port: 0, log: () => {} });
    chmodSync(parsed.config.dataDir, 0o711);
    for (const user of [alice, bob]) {
      writeFileSync(join(user.home, 'job.sh'), '#!/bin/sh\n#TARAS --time 5\necho hi\n');
      spawnSync('chown', [user.name, join(user.home, 'job.sh')]);
    }
  });
  after(async () => {
    await controller?.close();
  });

  it('only administrators create and delete; listed users submit into it, others are told why', async () => {
    const denied = await taras(alice, 'reserve', 'create', '--name', 'x', '--start', 'now+1hour', '--duration', '30', '--nodes', '1');
    assert.notEqual(denied.status, 0);
    assert.match(denied.stderr, /administrator/i);

    const made = await taras(null, 'reserve', 'create', '--name', 'lab', '--start', 'now+1hour', '--duration', '1:00:00', '--nodelist', 'n[2-3]', '--users', alice.name, '--json');
    assert.equal(made.status, 0, made.stderr);
    const answer = JSON.parse(made.stdout);
    assert.deepEqual([answer.reservation.name, answer.reservation.nodes, answer.reservation.users, answer.reservation.state], ['lab', ['n2', 'n3'], [alice.name], 'PLANNED']);

    const listed = await taras(bob, 'reserve', 'list');
    assert.equal(listed.status, 0, listed.stderr);
    assert.match(listed.stdout, /^NAME +KIND +STATE +START +END +NODES +USERS +JOBS\nlab +RESV +PLANNED +.* n\[2-3\] +tt/m);

    const inside = await taras(alice, 'submit', '--json', '--reservation', 'lab', 'job.sh');
    assert.equal(inside.status, 0, inside.stderr);
    const refused = await taras(bob, 'submit', '--reservation', 'lab', 'job.sh');
    assert.notEqual(refused.status, 0);
    assert.match(refused.stderr, /not one of the users of reservation lab/);

    const when = await taras(alice, 'when', String(JSON.parse(inside.stdout).id));
    assert.match(when.stdout, /on n[23] \(1 node of partition batch\)/);
    assert.match(when.stdout, /It runs in reservation lab \(/);

    const window = await taras(null, 'admin', 'shutdown', '--at', 'now+3hours', '--until', 'now+4hours', '--reason', 'power', '--json');
    assert.equal(window.status, 0, window.stderr);
    assert.deepEqual(JSON.parse(window.stdout).reservation.nodes, ['n1', 'n2', 'n3']);
    assert.equal(JSON.parse(window.stdout).reservation.kind, 'maintenance');

    assert.notEqual((await taras(bob, 'reserve', 'delete', 'lab')).status, 0);
    const deleted = await taras(null, 'reserve', 'delete', 'lab');
    assert.equal(deleted.status, 0, deleted.stderr);
    assert.match(deleted.stdout, /Reservation lab deleted\.\nJobs \d+ asked for it/);
    const whatIf = await taras(alice, 'whatif', '--drain', 'n1', '--json');
    assert.equal(whatIf.status, 0, whatIf.stderr);
    assert.equal(JSON.parse(whatIf.stdout).jobs.length, 1);
    const table = await taras(alice, 'whatif', '--policy', 'easy');
    assert.match(table.stdout, /^JOBID +USER +NOW +WITH EASY +CHANGE\n/);
    assert.match(table.stdout, /Nothing was changed: this is the plan of a copy\.\n$/);
    const bad = await taras(null, 'reserve', 'create', '--name', 'y', '--start', 'someday', '--duration', '30', '--nodes', '1');
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /--start: got 'someday': expected now, now\+N/);
  });
});

describe('plan and placement are one decision', () => {
  for (const policy of ['easy', 'conservative'] as const) {
    it(`${policy}: with every node up, the verify step never refuses a start the plan made (random jobs, early ends)`, () => {
      const path = join(work, `verify-${policy}.db`);
      const store = openStore(path);
      const clock = { ms: Date.UTC(2026, 10, 23, 12, 0, 0) };
      const base = defaultClusterConfig(work, { count: 6, cpus: 8 });
      const names = base.nodes.map((n) => n.name);
      const config = {
        ...base, policy,
        nodes: base.nodes.map((n, i) => ({ ...n, cpus: i < 3 ? 8 : 16, memoryMiB: i < 3 ? 8192 : 32768, features: i % 2 === 0 ? ['ssd'] : [] })),
        partitions: [
          { ...base.partitions[0], name: 'a', nodes: names.slice(0, 4), isDefault: true },
          { ...base.partitions[0], name: 'b', nodes: names.slice(2), isDefault: false, priority: 5 },
        ],
        defaultPartition: 'a',
      };
      const log: string[] = [];
      const engine = new ControllerEngine(config, store, noAgents, () => clock.ms, (line) => log.push(line));
      engine.agentRegistered(names, []);
      let seed = 12345;
      const next = (n: number) => {
        seed = (seed * 1103515245 + 12345) % 2147483648;
        return seed % n;
      };
      const ends = new Map<JobId, number>();
      let started = 0;
      for (let step = 0; step < 400; step++) {
        clock.ms += 1000 * (1 + next(20));
        for (const [id, at] of ends) {
          if (at <= clock.ms) {
            engine.jobReport({ jobId: id, state: 'COMPLETED', exitCode: 0, endTimeMs: at });
            ends.delete(id);
          }
        }
        if (next(3) === 0) {
          const partition = next(2) === 0 ? 'a' : 'b';
          engine.submit([{ user: 'u', spec: spec({
            partition, nodes: { min: 1 + next(2) }, cpusPerTask: 1 + next(8), timeLimitSeconds: 60 * (1 + next(30)),
            ...(next(3) === 0 ? { memoryMiB: 1024 * (1 + next(6)) } : {}), ...(next(5) === 0 ? { constraint: { text: 'ssd', anyOf: [['ssd']] } } : {}),
          }) }]);
        }
        engine.touch();
        for (const id of engine.schedule()) {
          started++;
          const limitMs = (engine.specOf(engine.active.get(id)!).timeLimitSeconds as number) * 1000;
          ends.set(id, clock.ms + (next(2) === 0 ? limitMs : Math.floor((limitMs * next(90)) / 100)));
        }
      }
      assert.ok(started > 60, `only ${started} jobs started`);
      assert.deepEqual(log.filter((line) => line.startsWith('verify:')), []);
      store.close();
    });
  }
});
