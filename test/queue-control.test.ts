// Queue control in the controller engine (real store, real core, agents
// answered in-process): hold and release (a user's hold and an
// administrator's, --hold at submission), --begin, and dependencies
// (after, afterany, afterok, afternotok, singleton, `,` and `?`) with planned
// starts after the predecessors' predicted ends, DependencyNeverSatisfied and
// kill_invalid_depend, across a restart; then the CLI against a real
// controller and agent.

import assert from 'node:assert/strict';
import { spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { killHard, startDaemon, withController } from './daemon-process.js';
import { runAs } from './auth-helpers.js';
import { createTestUser, notRootReason, removeTestUsers } from './unix-users.js';
import { defaultClusterConfig, type ClusterConfig } from '../src/config/cluster.js';
import { ControllerEngine, SubmitRefused, type AgentLink, type JobReport } from '../src/controller/engine.js';
import { apiJob } from '../src/controller/views.js';
import type { JobId } from '../src/core/types.js';
import { parseDependency } from '../src/jobspec/dependency.js';
import type { JobSpec } from '../src/jobspec/types.js';
import { openStore } from '../src/store/store.js';

const work = mkdtempSync(join(tmpdir(), 'taras-queue-control-'));
const started: ChildProcess[] = [];
after(async () => {
  for (const child of started) await killHard(child);
  if (!notRootReason) removeTestUsers();
  rmSync(work, { recursive: true, force: true });
});
let files = 0;

const NOW = Date.UTC(2026, 10, 25, 12, 0, 0);
const agents: AgentLink = { start: async () => {}, signal: async () => {} };
/** One whole 8-CPU node for `minutes`. */
const spec = (minutes: number, more: Partial<JobSpec> = {}): JobSpec => ({
  script: { path: '/tmp/job.sh', text: '#!/bin/sh\necho hi\n', args: [] },
  nodes: { min: 1 }, cpusPerTask: 8, timeLimitSeconds: minutes * 60, name: 'job', workingDir: '/tmp', output: 'taras-%j.out',
  export: { all: true, variables: [] }, requeue: false, ...more,
});
const dependency = (text: string) => {
  const parsed = parseDependency(text);
  assert.ok(parsed.ok, parsed.ok ? '' : parsed.message);
  return { dependency: parsed.value };
};

function setup(options: {
  path?: string; startMs?: number; running?: JobReport[]; nodes?: number; kill?: boolean; policy?: ClusterConfig['policy']; queuedInteractive?: boolean;
  agents?: AgentLink; maxTimeSeconds?: number; interactiveMaxSeconds?: number;
} = {}) {
  const base = defaultClusterConfig(work, { count: options.nodes ?? 1, cpus: 8 });
  const config: ClusterConfig = {
    ...base, policy: options.policy ?? 'conservative', killInvalidDepend: options.kill ?? false,
    partitions: base.partitions.map((partition) => ({ ...partition, maxTimeSeconds: options.maxTimeSeconds ?? partition.maxTimeSeconds })),
    // queued: an interactive job waits its turn (immediate would cancel it with no free node)
    interactive: {
      ...base.interactive, policy: options.queuedInteractive === true ? 'queued' : base.interactive.policy,
      maxTimeSeconds: options.interactiveMaxSeconds ?? base.interactive.maxTimeSeconds,
    },
  };
  const path = options.path ?? join(work, `store-${++files}.db`);
  const store = openStore(path);
  const clock = { ms: options.startMs ?? NOW };
  const engine = new ControllerEngine(config, store, options.agents ?? agents, () => clock.ms, () => {});
  const nodes = [...engine.nodes.keys()];
  engine.agentRegistered(nodes, options.running ?? []);
  const advance = (ms: number): JobId[] => {
    clock.ms = ms;
    engine.heartbeat(nodes);
    engine.touch();
    return engine.schedule();
  };
  const end = (id: JobId, state: 'COMPLETED' | 'FAILED', atMs: number) => engine.jobReport({ jobId: id, run: 0, state, exitCode: state === 'COMPLETED' ? 0 : 1, endTimeMs: atMs });
  const reason = (id: JobId) => apiJob(engine, store.job(id)!).reason ?? '';
  return { path, store, clock, engine, advance, end, reason };
}

describe('--dependency parsing', () => {
  it('reads Slurm\'s forms and names what is wrong', () => {
    assert.deepEqual(parseDependency('afterok:12:13,afterany:14'), { ok: true, value: { text: 'afterok:12:13,afterany:14', all: true, items: [{ type: 'afterok', ids: [12, 13] }, { type: 'afterany', ids: [14] }] } });
    assert.deepEqual(parseDependency('after:5+10?singleton'), { ok: true, value: { text: 'after:5+10?singleton', all: false, items: [{ type: 'after', ids: [5], minutes: 10 }, { type: 'singleton', ids: [] }] } });
    // One task of an array as ARRAYID_TASK (afterok:12_3), beside plain ids.
    assert.deepEqual(parseDependency('afterok:12_3:14,after:12_0+5'), { ok: true, value: { text: 'afterok:12_3:14,after:12_0+5', all: true,
      items: [{ type: 'afterok', ids: [14], tasks: ['12_3'] }, { type: 'after', ids: [], tasks: ['12_0'], minutes: 5 }] } });
    assert.deepEqual(parseDependency('12_1'), { ok: true, value: { text: '12_1', all: true, items: [{ type: 'afterany', ids: [], tasks: ['12_1'] }] } });
    // Plain ids are afterany, as Slurm reads -d 19 (it was refused).
    assert.deepEqual(parseDependency('19'), { ok: true, value: { text: '19', all: true, items: [{ type: 'afterany', ids: [19] }] } });
    assert.deepEqual(parseDependency('19:20,afterok:21'), { ok: true, value: { text: '19:20,afterok:21', all: true, items: [{ type: 'afterany', ids: [19, 20] }, { type: 'afterok', ids: [21] }] } });
    for (const [text, why] of [['afterok', /needs at least one job id/], ['afterok:1,afterany:2?after:3', /cannot be mixed/], ['afterok:x', /'x' is not a job id/],
      ['afterany:3+5', /\+MIN goes only after the last id of after:/], ['aftercorr:3', /'aftercorr' is not a dependency type Taras supports/], ['singleton:3', /singleton takes no job ids/]] as const) {
      const parsed = parseDependency(text);
      assert.ok(!parsed.ok && why.test(parsed.message), `${text}: ${parsed.ok ? 'accepted' : parsed.message}`);
    }
  });
});

describe('queue control in the controller engine', () => {
  it('hold and release: a held job keeps its place and does not start; a user cannot release an administrator\'s hold; --hold at submission', () => {
    // EASY: the plan follows the queue order, so a released job is planned in its place again.
    const { engine, advance, end, reason, store } = setup({ policy: 'easy' });
    const [running] = engine.submit([{ user: 'alice', spec: spec(60) }]);
    const [first, second] = engine.submit([{ user: 'alice', spec: spec(10) }, { user: 'bob', spec: spec(10) }]);
    const [submittedHeld] = engine.submit([{ user: 'bob', spec: spec(10, { hold: true }) }]);
    assert.deepEqual(engine.schedule(), [running]);
    assert.equal(reason(submittedHeld), 'JobHeldUser');
    assert.equal(engine.plannedStartMs(submittedHeld), null);

    assert.deepEqual(engine.holdMany([first], 'bob', false).map((r) => [r.result, r.message]), [['refused', `job ${first} belongs to alice; only they or an administrator can hold it`]]);
    assert.deepEqual(engine.holdMany([first], 'alice', false).map((r) => r.result), ['cancelled']);
    assert.equal(reason(first), 'JobHeldUser');
    advance(NOW + 500);
    assert.equal(engine.plannedStartMs(first), null, 'a held job has no plan');
    assert.equal(engine.plannedStartMs(second), NOW + 3_600_000, 'the job behind it moves up');
    // An administrator holds it too: now only an administrator releases it.
    engine.holdMany([first], 'root', true);
    assert.equal(reason(first), 'JobHeldAdmin');
    assert.deepEqual(engine.releaseMany([first], 'alice', false).map((r) => r.message), [`job ${first} was held by an administrator (JobHeldAdmin): only an administrator can release it`]);
    assert.deepEqual(engine.releaseMany([first], 'root', true).map((r) => r.message), [`job ${first} released`]);
    advance(NOW + 1000);
    assert.equal(engine.plannedStartMs(first), NOW + 3_600_000, 'released, it is back in its place: ahead of the later job');
    assert.equal(engine.plannedStartMs(second), NOW + 3_600_000 + 600_000);
    assert.deepEqual(engine.releaseMany([second], 'bob', false).map((r) => r.message), [`job ${second} is not held`]);
    end(running, 'COMPLETED', NOW + 3_600_000);
    assert.deepEqual(advance(NOW + 3_600_000), [first]);
    assert.equal(store.job(submittedHeld)!.state, 'PENDING');
  });

  it('pause and unpause (sppause): no ids pauses the user\'s waiting interactive jobs only; a paused job keeps its place and is passed over', () => {
    const { engine, advance, reason, end } = setup({ policy: 'easy', queuedInteractive: true });
    const [running] = engine.submit([{ user: 'alice', spec: spec(60) }]);
    const [session] = engine.submit([{ user: 'alice', spec: spec(10, { interactive: { pty: true, command: ['bash'] } }) }]);
    const [batch] = engine.submit([{ user: 'alice', spec: spec(10) }]);
    assert.deepEqual(engine.schedule(), [running]);
    assert.deepEqual(engine.pauseMany(null, 'alice', false).map((r) => r.message), [`job ${session} paused`]);
    assert.equal(reason(session), 'Paused');
    assert.deepEqual(engine.pauseMany([batch], 'bob', false).map((r) => r.result), ['refused']);
    assert.deepEqual(engine.releaseMany([batch], 'alice', false).map((r) => r.message), [`job ${batch} is not held`]);
    end(running, 'COMPLETED', NOW + 60_000);
    assert.deepEqual(advance(NOW + 60_000), [batch], 'the paused job is passed over');
    assert.deepEqual(engine.unpauseMany(null, 'alice', false).map((r) => r.message), [`job ${session} unpaused`]);
    assert.deepEqual(engine.unpauseMany([session], 'alice', false).map((r) => r.message), [`job ${session} is not paused`]);
  });

  it('--begin: not started before it, planned at it, reason BeginTime; a later job passes it', () => {
    const { engine, advance, reason, end } = setup();
    const [later] = engine.submit([{ user: 'alice', spec: spec(10, { beginMs: NOW + 7_200_000 }) }]);
    const [now] = engine.submit([{ user: 'alice', spec: spec(10) }]);
    assert.deepEqual(engine.schedule(), [now]);
    assert.equal(engine.plannedStartMs(later), NOW + 7_200_000);
    assert.match(reason(later), /^BeginTime: not before /);
    end(now, 'COMPLETED', NOW + 600_000);
    assert.deepEqual(advance(NOW + 7_199_000), []);
    assert.deepEqual(advance(NOW + 7_200_000), [later]);
  });

  it('afterok waits for the predecessor, planned after its predicted end, and starts once it COMPLETED; afternotok then never: DependencyNeverSatisfied', () => {
    const { engine, advance, end, reason } = setup({ nodes: 2 });
    const [first] = engine.submit([{ user: 'alice', spec: spec(60) }]);
    assert.deepEqual(engine.schedule(), [first]);
    const [ok] = engine.submit([{ user: 'alice', spec: spec(10, dependency(`afterok:${first}`)) }]);
    const [notOk] = engine.submit([{ user: 'alice', spec: spec(10, dependency(`afternotok:${first}`)) }]);
    const [anyOf] = engine.submit([{ user: 'alice', spec: spec(10, dependency(`afternotok:${first}?afterany:${first}`)) }]);
    assert.deepEqual(advance(NOW + 1000), [], 'the second node is free, but the dependency is not met');
    assert.equal(engine.plannedStartMs(ok), NOW + 3_600_000, 'planned at the predecessor\'s predicted end');
    assert.match(reason(ok), new RegExp(`^Dependency: waits for afterok:${first}`));
    end(first, 'COMPLETED', NOW + 600_000);
    const startedNow = advance(NOW + 600_000);
    assert.deepEqual(startedNow.sort(), [ok, anyOf].sort());
    assert.match(reason(notOk), new RegExp(`^DependencyNeverSatisfied: afternotok:${first} can never be met`));
    assert.equal(engine.plannedStartMs(notOk), null);
  });

  it('an array\'s id stands for all its tasks (afterok: all COMPLETED; afternotok: all ended, one not completed), ARRAYID_TASK for one', () => {
    const { engine, advance, end, reason } = setup({ nodes: 8 });
    const [array] = engine.submit([{ user: 'alice', spec: spec(60, { array: { text: '0-2' } }) }]);
    const [task0, task1, task2] = [array, array + 1, array + 2] as JobId[];
    assert.deepEqual(engine.schedule().sort(), [task0, task1, task2].sort());
    const submit = (text: string) => engine.submit([{ user: 'alice', spec: spec(10, dependency(text)) }])[0];
    const [okAll, notOkAll, okTask0, notOkTask0, anyTask1] = [`afterok:${array}`, `afternotok:${array}`, `afterok:${array}_0`, `afternotok:${array}_0`, `afterany:${array}_1`].map(submit);
    end(task0, 'COMPLETED', NOW + 60_000);
    assert.deepEqual(advance(NOW + 60_000), [okTask0], 'only the dependent on task 0 starts');
    assert.match(reason(notOkTask0), /^DependencyNeverSatisfied/);
    assert.match(reason(okAll), new RegExp(`^Dependency: waits for afterok:${array}`));
    end(task1, 'FAILED', NOW + 120_000);
    assert.deepEqual(advance(NOW + 120_000), [anyTask1]);
    assert.match(reason(okAll), /^DependencyNeverSatisfied/, 'afterok: one task failed');
    assert.match(reason(notOkAll), /^Dependency: waits/, 'afternotok: task 2 still runs');
    end(task2, 'COMPLETED', NOW + 180_000);
    assert.deepEqual(advance(NOW + 180_000), [notOkAll], 'afternotok: all ended, task 1 failed');
    // An array whose tasks all COMPLETED: afternotok on it can never be met.
    const [second] = engine.submit([{ user: 'alice', spec: spec(60, { array: { text: '0-1' } }) }]);
    assert.equal(advance(NOW + 181_000).length, 2);
    const notOkSecond = submit(`afternotok:${second}`);
    end(second, 'COMPLETED', NOW + 200_000);
    end((second + 1) as JobId, 'COMPLETED', NOW + 200_000);
    advance(NOW + 200_000);
    assert.match(reason(notOkSecond), /^DependencyNeverSatisfied/);
    assert.match(refused(() => submit(`afterok:${array}_5`)).message, new RegExp(`--dependency afterok:${array}_5: array ${array} has no task 5 \\(its tasks: 0-2\\)`));
    assert.match(refused(() => submit(`afterok:${okAll}_0`)).message, new RegExp(`job ${okAll} is not a job array`));
  });

  it('a dependency on a whole array counts its ended tasks in the store, the same after a restart; a task requeued is not ended', () => {
    const first = setup({ nodes: 8 });
    const [array] = first.engine.submit([{ user: 'alice', spec: spec(60, { array: { text: '0-3' } }) }]);
    const tasks = [0, 1, 2, 3].map((i) => (array + i) as JobId);
    assert.equal(first.engine.schedule().length, 4);
    const submitAfter = (text: string) => first.engine.submit([{ user: 'alice', spec: spec(10, dependency(text)) }])[0];
    const [okAll, anyAll] = [`afterok:${array}`, `afterany:${array}`].map(submitAfter);
    first.end(tasks[0], 'COMPLETED', NOW + 60_000);
    first.end(tasks[1], 'COMPLETED', NOW + 60_000);
    // Task 2 is requeued (it ran and goes back to wait): not ended, so the dependents still wait.
    first.engine.requeue(tasks[2], 'alice', false);
    assert.deepEqual(first.advance(NOW + 61_000).filter((id) => id === okAll || id === anyAll), []);
    assert.match(first.reason(okAll), new RegExp(`^Dependency: waits for afterok:${array}`));
    first.store.close();
    // A restarted controller: tasks 2 (started again) and 3 run on.
    const again = setup({ path: first.path, nodes: 8, startMs: NOW + 62_000,
      running: [tasks[3]].map((jobId) => ({ jobId, run: 0, state: 'RUNNING' as const, exitCode: null, endTimeMs: null })) });
    assert.deepEqual(again.advance(NOW + 62_000).filter((id) => id === okAll || id === anyAll), [], 'two tasks not ended');
    const rerun = again.store.job(tasks[2])!;
    if (rerun.state === 'PENDING') again.advance(NOW + 63_000);
    again.engine.jobReport({ jobId: tasks[2], run: again.store.job(tasks[2])!.requeueCount, state: 'COMPLETED', exitCode: 0, endTimeMs: NOW + 64_000 });
    again.end(tasks[3], 'COMPLETED', NOW + 64_000);
    assert.deepEqual(again.advance(NOW + 64_000).sort(), [okAll, anyAll].sort(), 'all four COMPLETED');
  });

  it('a dependency on a job that does not exist is refused before anything is stored; kill_invalid_depend cancels one that can never be met', () => {
    const { engine, store, advance, end } = setup({ kill: true });
    assert.throws(() => engine.submit([{ user: 'alice', spec: spec(10, dependency('afterok:999')) }]), (e: unknown) => e instanceof SubmitRefused && /--dependency afterok:999: there is no job 999/.test(e.message));
    assert.equal(store.jobs().length, 0);
    const [first] = engine.submit([{ user: 'alice', spec: spec(10) }]);
    engine.schedule();
    const [dependent] = engine.submit([{ user: 'alice', spec: spec(10, dependency(`afterok:${first}`)) }]);
    end(first, 'FAILED', NOW + 60_000);
    advance(NOW + 60_000);
    assert.equal(store.job(dependent)!.state, 'CANCELLED');
    assert.match(store.job(dependent)!.reason ?? '', /can never be satisfied \(kill_invalid_depend\)/);
  });

  it('singleton: one job of a name and user at a time; holds and dependencies survive a restart', () => {
    const first = setup({ nodes: 2 });
    const [a] = first.engine.submit([{ user: 'alice', spec: spec(30, { name: 'sim' }) }]);
    const [b] = first.engine.submit([{ user: 'alice', spec: spec(30, { name: 'sim', ...dependency('singleton') }) }]);
    const [held] = first.engine.submit([{ user: 'bob', spec: spec(5) }]);
    first.engine.holdMany([held], 'root', true);
    assert.deepEqual(first.engine.schedule(), [a], 'b waits for a although a node is free');
    assert.equal(first.engine.plannedStartMs(b), NOW + 1_800_000);
    first.store.close();

    const second = setup({ nodes: 2, path: first.path, running: [{ jobId: a, run: 0, state: 'RUNNING', exitCode: null, endTimeMs: null }] });
    assert.deepEqual(second.advance(NOW + 1000), []);
    assert.equal(second.reason(held), 'JobHeldAdmin');
    second.end(a, 'COMPLETED', NOW + 900_000);
    assert.deepEqual(second.advance(NOW + 900_000), [b]);
    second.store.close();
  });
});

/** The SubmitRefused that `fn` throws. */
const refused = (fn: () => unknown): SubmitRefused => {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof SubmitRefused, String(error));
    return error;
  }
  assert.fail('not refused');
};

/** The message of the SubmitRefused that `fn` throws. */
const refusal = (fn: () => unknown): string => refused(fn).message;

describe('taras move and update in the controller engine', () => {
  for (const policy of ['easy', 'conservative'] as const) {
    it(`${policy}: a user moves their job back only; an administrator anywhere; the order survives a restart`, () => {
      const first = setup({ policy });
      const { engine, advance, store, path } = first;
      const [running] = engine.submit([{ user: 'root', spec: spec(60) }]);
      const [a, b, c] = engine.submit([{ user: 'alice', spec: spec(10) }, { user: 'bob', spec: spec(10) }, { user: 'carol', spec: spec(10) }]);
      assert.deepEqual(engine.schedule(), [running]);
      const starts = (e: ControllerEngine = engine) => [a, b, c].map((id) => (e.plannedStartMs(id)! - NOW) / 60_000);
      assert.deepEqual(starts(), [60, 70, 80]);

      const moved = engine.move(a, c, 'alice', false);
      assert.deepEqual([moved.beforeMs, moved.thenMs], [NOW + 60 * 60_000, NOW + 80 * 60_000]);
      assert.deepEqual(moved.warnings, []);
      advance(NOW + 1000);
      assert.deepEqual(starts(), [80, 60, 70], 'a waits behind c; b and c move up');
      assert.deepEqual(store.job(a)!.queuePlace, { key: c + 1, priority: 1 }, 'behind c, the last: its key and partition tier');
      assert.match(refusal(() => engine.move(a, 0, 'alice', false)), new RegExp(`^job ${a} can only be moved further back in the queue .*An administrator can move it forward$`));
      assert.match(refusal(() => engine.move(a, b, 'alice', false)), /can only be moved further back/);
      assert.equal(refusal(() => engine.move(b, c, 'alice', false)), `job ${b} belongs to bob; only they or an administrator can move it`);
      // The API answers 403 for another user's job (forbidden), 409 or 404 for the rest.
      assert.equal(refused(() => engine.move(b, c, 'alice', false)).forbidden, true);
      assert.equal(refused(() => engine.move(a, 0, 'alice', false)).forbidden, false);
      assert.deepEqual([refusal(() => engine.move(4243 as JobId, 0, 'alice', false)), refused(() => engine.move(4243 as JobId, 0, 'alice', false)).forbidden], ['no job 4243', false]);
      assert.equal(refusal(() => engine.move(c, running, 'root', true)), `job ${running} is RUNNING: a job can only be moved after a pending job (or 0: the front)`);
      assert.match(refusal(() => engine.move(c, 4242, 'root', true)), /^there is no job 4242: give the id of a pending job/);
      assert.equal(refusal(() => engine.move(running, 0, 'root', true)), `job ${running} is RUNNING: only pending jobs can be moved in the queue`);
      assert.equal(refusal(() => engine.move(c, c, 'carol', false)), `job ${c} cannot be moved after itself: give another pending job's id, or 0 for the front`);

      // An administrator moves carol's job to the front.
      engine.move(c, 0, 'root', true);
      advance(NOW + 2000);
      assert.deepEqual(starts(), [80, 70, 60]);
      assert.ok(store.events(c).some((e) => e.event.type === 'moved' && e.event.after === 0 && e.event.by === 'admin'));
      // A new job joins the back, behind the moved ones.
      const [d] = engine.submit([{ user: 'dave', spec: spec(10) }]);
      advance(NOW + 3000);
      assert.equal(engine.plannedStartMs(d), NOW + 90 * 60_000);
      store.close();

      // A restart keeps the order (the store's rows and the log agree).
      const again = setup({ policy, path, startMs: NOW + 4000, running: [{ jobId: running, run: 0, state: 'RUNNING', exitCode: null, endTimeMs: null }] });
      again.advance(NOW + 5000);
      assert.deepEqual(starts(again.engine), [80, 70, 60]);
      assert.equal(again.engine.plannedStartMs(d), NOW + 90 * 60_000);
      again.store.close();
    });
  }

  it('a held job keeps the place it was moved to; a requeue as new goes behind the jobs queued before it', () => {
    const { engine, advance, store } = setup({ policy: 'easy' });
    const [running] = engine.submit([{ user: 'root', spec: spec(60) }]);
    const [a, b, c] = engine.submit([{ user: 'alice', spec: spec(10) }, { user: 'alice', spec: spec(10) }, { user: 'alice', spec: spec(10) }]);
    engine.schedule();
    engine.holdMany([c], 'alice', false);
    engine.move(c, 0, 'root', true);
    engine.releaseMany([c], 'alice', false);
    advance(NOW + 1000);
    assert.deepEqual([c, a, b].map((id) => (engine.plannedStartMs(id)! - NOW) / 60_000), [60, 70, 80]);
    assert.equal(store.job(c)!.queuePlace!.key < a, true);
  });

  it('update: a user lowers the time limit, renames and changes partition; raising a running job\'s limit is an administrator\'s; checked as a submission', () => {
    const { engine, advance, store } = setup({ policy: 'easy' });
    const [running] = engine.submit([{ user: 'root', spec: spec(60) }]);
    const [a, b] = engine.submit([{ user: 'alice', spec: spec(30) }, { user: 'bob', spec: spec(10) }]);
    const [mine] = engine.submit([{ user: 'alice', spec: spec(60) }]);
    engine.schedule();
    assert.equal(engine.plannedStartMs(b), NOW + 90 * 60_000);
    // As Slurm: a pending job's owner may raise its limit within the partition's MaxTime (this one has none).
    engine.update(mine, { timeLimitSeconds: 7200 }, 'alice', false);
    assert.equal(store.job(mine)!.request.timeLimitSeconds, 7200);
    assert.equal(refusal(() => engine.update(running, { timeLimitSeconds: 7200 }, 'bob', false)), `job ${running} belongs to root; only they or an administrator can update it`);
    assert.equal(refusal(() => engine.update(running, { partition: 'batch2' }, 'root', true)), `job ${running} is RUNNING: only its TimeLimit and JobName can be updated (Partition only while it is pending)`);
    // As Slurm, a running job is renamed.
    engine.update(running, { name: 'renamed' }, 'root', true);
    assert.deepEqual([store.job(running)!.name, store.job(running)!.state], ['renamed', 'RUNNING']);
    assert.equal(refusal(() => engine.update(a, { name: 'x' }, 'bob', false)), `job ${a} belongs to alice; only they or an administrator can update it`);
    assert.equal(refused(() => engine.update(a, { name: 'x' }, 'bob', false)).forbidden, true);
    assert.equal(refusal(() => engine.update(4243 as JobId, { name: 'x' }, 'bob', false)), 'no job 4243');
    assert.match(refusal(() => engine.update(a, { partition: 'nope' }, 'alice', false)), new RegExp(`^job ${a} cannot be updated: .*nope`));
    assert.equal(store.job(a)!.name, 'job', 'nothing stored by a refusal');

    engine.update(a, { timeLimitSeconds: 600, name: 'shorter' }, 'alice', false);
    advance(NOW + 1000);
    assert.equal(engine.plannedStartMs(b), NOW + 70 * 60_000, 'the plan follows the lower limit');
    const updated = store.job(a)!;
    assert.deepEqual([updated.name, updated.request.timeLimitSeconds], ['shorter', 600]);
    assert.deepEqual(apiJob(engine, updated).timeLimitSeconds, 600);
    engine.update(a, { timeLimitSeconds: 7200 }, 'root', true);
    assert.equal(store.job(a)!.request.timeLimitSeconds, 7200);
    assert.equal(store.job(a)!.name, 'shorter');
  });
});

describe('update of a pending interactive job\'s time limit', () => {
  it('stays within interactive_max_time for its owner, as its submission did', () => {
    const { engine, store } = setup({ policy: 'easy', queuedInteractive: true, interactiveMaxSeconds: 3600 });
    engine.submit([{ user: 'root', spec: spec(60) }]);
    engine.schedule();
    const [session] = engine.submit([{ user: 'alice', spec: spec(10, { interactive: { pty: true, command: ['bash'] } }) }]);
    engine.schedule();
    assert.equal(store.job(session)!.state, 'PENDING');
    for (const raised of [7200, 'UNLIMITED'] as const) {
      assert.match(refusal(() => engine.update(session, { timeLimitSeconds: raised }, 'alice', false)), new RegExp(`^job ${session} cannot be updated: .*interactive_max_time`));
    }
    assert.equal(store.job(session)!.request.timeLimitSeconds, 600);
    engine.update(session, { timeLimitSeconds: 3600 }, 'alice', false);
    assert.equal(store.job(session)!.request.timeLimitSeconds, 3600);
  });
});

describe('update of a running job\'s time limit (the engine)', () => {
  it('its owner lowers it, only an administrator raises it (past the partition\'s MaxTime too); the plan and its agent follow, also after a restart', () => {
    const limits: [string, number, number, number | null][] = [];
    const recording: AgentLink = { start: async () => {}, signal: async () => {}, setTimeLimit: async (node, id, run, seconds) => void limits.push([node, id, run, seconds]) };
    const { engine, advance, store, path } = setup({ policy: 'easy', agents: recording, maxTimeSeconds: 3 * 3600 });
    const [mine] = engine.submit([{ user: 'alice', spec: spec(60) }]);
    const [next] = engine.submit([{ user: 'bob', spec: spec(10) }]);
    advance(NOW);
    assert.equal(store.job(mine)!.state, 'RUNNING');
    const plannedAfter = () => (engine.plannedStartMs(next)! - NOW) / 60_000;
    assert.equal(plannedAfter(), 60);
    assert.equal(refusal(() => engine.update(mine, { timeLimitSeconds: 600 }, 'bob', false)), `job ${mine} belongs to alice; only they or an administrator can update it`);
    // Lowered by its owner: stored, the plan and the agent follow.
    engine.update(mine, { timeLimitSeconds: 1800 }, 'alice', false);
    advance(NOW + 1000);
    assert.equal(store.job(mine)!.request.timeLimitSeconds, 1800);
    assert.equal(apiJob(engine, store.job(mine)!).timeLimitSeconds, 1800);
    assert.equal(plannedAfter(), 30, 'the next job is planned at the new end');
    assert.deepEqual(limits, [['node01', mine, 0, 1800]]);
    // Raised by its owner: refused, nothing changes.
    for (const raised of [2400, 'UNLIMITED'] as const) {
      assert.equal(refusal(() => engine.update(mine, { timeLimitSeconds: raised }, 'alice', false)),
        `job ${mine} is RUNNING: only an administrator can raise its time limit (it is 1800 s); give a lower one, or ask an administrator`);
    }
    // Renamed by its owner: the name only (no order to its agent: the limit is as it was).
    engine.update(mine, { name: 'x' }, 'alice', false);
    assert.equal(store.job(mine)!.name, 'x');
    assert.equal(store.job(mine)!.request.timeLimitSeconds, 1800);
    assert.equal(limits.length, 1);
    // An administrator raises it, past the partition's MaxTime (3 h) too, as Slurm lets an operator.
    engine.update(mine, { timeLimitSeconds: 4 * 3600 }, 'root', true);
    advance(NOW + 2000);
    assert.equal(plannedAfter(), 240);
    assert.deepEqual(limits.at(-1), ['node01', mine, 0, 4 * 3600]);
    // Its owner may still rename it: the limit an administrator gave is not checked against MaxTime again (as Slurm).
    engine.update(mine, { name: 'y' }, 'alice', false);
    assert.equal(store.job(mine)!.name, 'y');
    assert.equal(store.job(mine)!.request.timeLimitSeconds, 4 * 3600);
    // A user stays within MaxTime on a pending job (raising it there is theirs, as in Slurm).
    assert.match(refusal(() => engine.update(next, { timeLimitSeconds: 4 * 3600 }, 'bob', false)), new RegExp(`^job ${next} cannot be updated: over the time limit of partition`));
    engine.update(next, { timeLimitSeconds: 2 * 3600 }, 'bob', false);
    assert.equal(store.job(next)!.request.timeLimitSeconds, 7200);
    // A pending job an administrator gave more than MaxTime: its owner renames it, and may not raise it further.
    engine.update(next, { timeLimitSeconds: 5 * 3600 }, 'root', true);
    engine.update(next, { name: 'renamed' }, 'bob', false);
    assert.equal(store.job(next)!.name, 'renamed');
    assert.match(refusal(() => engine.update(next, { timeLimitSeconds: 6 * 3600 }, 'bob', false)), new RegExp(`^job ${next} cannot be updated: over the time limit of partition`));
    engine.update(next, { timeLimitSeconds: 2 * 3600 }, 'bob', false);
    store.close();

    // A restart: the limit is the stored one, and the agent is told again.
    limits.length = 0;
    const again = setup({ policy: 'easy', agents: recording, maxTimeSeconds: 3 * 3600, path, startMs: NOW + 3000, running: [{ jobId: mine, run: 0, state: 'RUNNING', exitCode: null, endTimeMs: null }] });
    again.advance(NOW + 4000);
    assert.equal(again.store.job(mine)!.request.timeLimitSeconds, 4 * 3600);
    assert.equal((again.engine.plannedStartMs(next)! - NOW) / 60_000, 240);
    assert.deepEqual(limits.filter(([, id]) => id === mine).at(-1), ['node01', mine, 0, 4 * 3600]);
    // Ended: nothing to update.
    again.engine.jobReport({ jobId: mine, run: 0, state: 'COMPLETED', exitCode: 0, endTimeMs: NOW + 5000 });
    assert.equal(refusal(() => again.engine.update(mine, { timeLimitSeconds: 60 }, 'alice', false)), `job ${mine} has already finished (COMPLETED): only pending and running jobs can be updated`);
    again.store.close();
  });
});

describe('a running job\'s updated time limit, once its supervisor has it', () => {
  it('is not sent again at each registration of its agent (they double as heartbeats), but is after a new change and after a failed order', async () => {
    const limits: [string, number, number, number | null][] = [];
    let reachable = true;
    const recording: AgentLink = { start: async () => {}, signal: async () => {}, setTimeLimit: async (node, id, run, seconds) => {
      limits.push([node, id, run, seconds]);
      if (!reachable) throw new Error(`the agent of ${node} could not be reached`);
    } };
    const { engine, advance, store } = setup({ policy: 'easy', agents: recording });
    const [job] = engine.submit([{ user: 'alice', spec: spec(60) }]);
    advance(NOW);
    assert.equal(store.job(job)!.state, 'RUNNING');
    const settled = () => new Promise((resolveTurn) => setImmediate(resolveTurn));
    const beat = async () => {
      engine.agentRegistered(['node01'], [{ jobId: job, run: 0, state: 'RUNNING', exitCode: null, endTimeMs: null }]);
      await settled();
    };
    engine.update(job, { timeLimitSeconds: 1800 }, 'alice', false);
    await settled();
    assert.deepEqual(limits.splice(0), [['node01', job, 0, 1800]]);
    for (let i = 0; i < 3; i++) await beat();
    assert.deepEqual(limits.splice(0), [], 'acknowledged: not sent again at every heartbeat');
    // Refused once: the next registration sends it (and the check after it, once taken, does not).
    reachable = false;
    engine.update(job, { timeLimitSeconds: 1200 }, 'alice', false);
    await settled();
    assert.deepEqual(limits.splice(0), [['node01', job, 0, 1200]]);
    reachable = true;
    await beat();
    assert.deepEqual(limits.splice(0), [['node01', job, 0, 1200]], 'sent once when its agent registers again');
    await beat();
    engine.checkNodes();
    await settled();
    assert.deepEqual(limits.splice(0), [], 'taken: nothing waits');
    store.close();
  });
});

describe('a job step\'s new time limit (the engine\'s deliveries)', () => {
  it('goes to each of the step\'s nodes and is retried every check until the agent takes it, as it stands then; at once when the agent registers again; dropped once the step has ended', async () => {
    const orders: [string, number, number, number | null][] = [];
    const down = new Set(['node01', 'node02']);
    const link: AgentLink = { start: async () => {}, signal: async () => {}, setTaskLimit: async (node, id, stepId, seconds) => {
      orders.push([node, id, stepId, seconds]);
      if (down.has(node)) throw new Error(`the agent of ${node} could not be reached`);
    } };
    const { engine, advance, store } = setup({ policy: 'easy', agents: link, nodes: 2 });
    const [job] = engine.submit([{ user: 'alice', spec: spec(60, { nodes: { min: 2 } }) }]);
    advance(NOW);
    assert.deepEqual(store.job(job)!.nodes, ['node01', 'node02']);
    const limits = new Map<number, number | null>([[0, 1800]]);
    engine.stepLimitOf = (id, stepId) => (id === job ? limits.get(stepId) : undefined);
    const settled = () => new Promise((resolveTurn) => setImmediate(resolveTurn));
    for (const node of ['node01', 'node02']) engine.deliverStepLimit(job, 0, node, 0);
    engine.deliverStepLimit(job, 1, 'node01', 0); // another run of the job: nothing
    await settled();
    assert.deepEqual(orders.splice(0), [['node01', job, 0, 1800], ['node02', job, 0, 1800]]);
    // Retried at each check (every second), with the limit as it stands then: only the latest matters.
    limits.set(0, 3600);
    engine.checkNodes();
    await settled();
    assert.deepEqual(orders.splice(0), [['node01', job, 0, 3600], ['node02', job, 0, 3600]]);
    // node01's agent registers again: its order goes at once (node02's waits for the next check), and is not sent again once taken.
    down.delete('node01');
    engine.agentRegistered(['node01'], [{ jobId: job, run: 0, state: 'RUNNING', exitCode: null, endTimeMs: null }]);
    await settled();
    assert.deepEqual(orders.splice(0), [['node01', job, 0, 3600]]);
    engine.checkNodes();
    await settled();
    assert.deepEqual(orders.splice(0), [['node02', job, 0, 3600]]);
    // The step has ended: node02's order is dropped, not retried.
    limits.delete(0);
    engine.checkNodes();
    await settled();
    down.delete('node02');
    engine.checkNodes();
    await settled();
    assert.deepEqual(orders, []);
    store.close();
  });
});

describe('taras hold / release / submit --hold --begin --dependency with the real controller, agent and CLI', () => {
  it('works as a Slurm user types it', { timeout: 60_000 }, async () => {
    const taras = join(resolve(dirname(fileURLToPath(import.meta.url)), '../..'), 'bin/taras.js');
    const dir = join(work, 'e2e');
    mkdirSync(dir);
    writeFileSync(join(dir, 'job.sh'), '#!/bin/sh\necho "ran $TARAS_JOB_ID"\n');
    const data = join(dir, 'data');
    const controller = await startDaemon(taras, started, ['controller', '--data', data, '--port', '0'], /listening on (http:\/\/127\.0\.0\.1:\d+)/, dir);
    const url = controller.match[1]!;
    await startDaemon(taras, started, ['agent', '--controller', url, '--virtual', '2x2', '--data', join(data, 'agent'), '--key', join(data, 'cluster.key')], /registered 2 node/, dir);
    const cli = (...args: string[]) => spawnSync(process.execPath, [taras, ...withController(args, url)], { cwd: dir, encoding: 'utf8', timeout: 30_000 });
    const submit = (...args: string[]) => {
      const run = cli('submit', '-t', '1', '--json', ...args, 'job.sh');
      assert.equal(run.status, 0, run.stderr);
      return (JSON.parse(run.stdout) as { id: number }).id;
    };
    const show = (id: number) => JSON.parse(cli('show', String(id), '--json').stdout) as { state: string; reason: string | null };

    const held = submit('-H');
    const dependent = submit('--dependency', `afterok:${held}`);
    const later = submit('--begin', 'now+1hour');
    assert.equal(show(held).reason, 'JobHeldUser');
    assert.match(show(dependent).reason ?? '', new RegExp(`^Dependency: waits for afterok:${held}`));
    assert.match(show(later).reason ?? '', /^BeginTime: not before /);
    const released = cli('release', String(held));
    assert.equal(released.stdout, `job ${held} released\n`);
    assert.match(cli('wait', String(held), String(dependent)).stdout, /COMPLETED \(exit code 0\)[\s\S]*COMPLETED \(exit code 0\)/);
    assert.equal(readFileSync(join(dir, `taras-${dependent}.out`), 'utf8'), `ran ${dependent}\n`);
    const refused = cli('release', String(later), '99999');
    assert.equal(refused.status, 1);
    assert.match(refused.stderr, new RegExp(`error: job ${later} is not held\\nerror: no job 99999`));
    const bad = cli('submit', '-t', '1', '--dependency', 'afterok:nope', 'job.sh');
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /--dependency.*'nope' is not a job id/);
    cli('cancel', String(later));
  });

  it('taras move, taras update, scontrol update and the h/H/P marks of taras queue; another user is refused', { timeout: 90_000 }, async () => {
    const taras = join(resolve(dirname(fileURLToPath(import.meta.url)), '../..'), 'bin/taras.js');
    const dir = join(work, 'e2e-move');
    mkdirSync(dir);
    writeFileSync(join(dir, 'job.sh'), '#!/bin/sh\nsleep 60\n');
    const data = join(dir, 'data');
    // One node, so the plan is a line: each job waits for the one before it.
    writeFileSync(join(dir, 'cluster.toml'), '[cluster]\nname = "mv"\npolicy = "easy"\ndata_dir = "data"\n[[nodes]]\nnames = "node01"\ncpus = 2\nmemory = "4G"\n'
      + '[[partitions]]\nname = "batch"\nnodes = "ALL"\ndefault = true\n[[partitions]]\nname = "debug"\nnodes = "ALL"\n');
    const controller = await startDaemon(taras, started, ['controller', '--config', join(dir, 'cluster.toml'), '--port', '0'], /listening on (http:\/\/127\.0\.0\.1:\d+)/, dir);
    const url = controller.match[1]!;
    await startDaemon(taras, started, ['agent', '--controller', url, '--virtual', '1x2', '--data', join(data, 'agent'), '--key', join(data, 'cluster.key')], /registered 1 node/, dir);
    const cli = (...args: string[]) => spawnSync(process.execPath, [taras, ...withController(args, url)], { cwd: dir, encoding: 'utf8', timeout: 30_000 });
    const scontrol = (...args: string[]) => spawnSync(process.execPath, [taras, '--slurm-command', 'scontrol', ...args, '--controller', url], { cwd: dir, encoding: 'utf8', timeout: 30_000 });
    const submit = (...args: string[]) => {
      const run = cli('submit', '--exclusive', '--json', ...args, 'job.sh');
      assert.equal(run.status, 0, run.stderr);
      return (JSON.parse(run.stdout) as { id: number }).id;
    };
    const show = (id: number) => JSON.parse(cli('show', String(id), '--json').stdout) as { name: string; timeLimitSeconds: number | null; partition: string; plannedStart: string | null };
    const running = submit('-t', '10');
    const [a, b, c] = [submit('-t', '5'), submit('-t', '5'), submit('-t', '5')];
    const startOf = (id: number) => Date.parse(show(id).plannedStart!);
    for (let i = 0; i < 50 && show(c).plannedStart === null; i++) await new Promise((r) => setTimeout(r, 100));
    assert.ok(startOf(a) < startOf(b) && startOf(b) < startOf(c));

    const moved = cli('move', String(a), '--after', String(c));
    assert.equal(moved.status, 0, moved.stderr);
    assert.match(moved.stdout, new RegExp(`^job ${a} moved behind job ${c}: planned start .+ -> .+\n$`));
    assert.ok(startOf(b) < startOf(c) && startOf(c) < startOf(a), 'a now waits behind c');
    const json = JSON.parse(cli('move', String(c), '--after', '0', '--json').stdout) as { id: number; move: { after: number; warnings: string[] } };
    assert.deepEqual([json.id, json.move.after, json.move.warnings], [c, 0, []]);
    assert.ok(startOf(c) < startOf(b), 'root (an administrator) moves c to the front');
    assert.match(cli('move', String(a), '--after', String(running)).stderr, new RegExp(`job ${running} is RUNNING: a job can only be moved after a pending job`));

    // scontrol update and taras update.
    assert.equal(scontrol('update', `JobId=${b}`, 'TimeLimit=2', 'JobName=renamed').status, 0);
    assert.deepEqual([show(b).name, show(b).timeLimitSeconds], ['renamed', 120]);
    assert.equal(scontrol('update', `jobid=${b}`, 'Partition=debug').status, 0);
    assert.equal(show(b).partition, 'debug');
    const updated = cli('update', String(b), '--time', '1:30');
    assert.equal(updated.stdout, `job ${b} updated: timeLimitSeconds=90\n`);
    assert.equal(show(b).timeLimitSeconds, 90);
    const badKey = scontrol('update', `JobId=${b}`, 'NumNodes=3');
    assert.equal(badKey.status, 1);
    assert.match(badKey.stderr, /^scontrol: error: update of NumNodes is not supported by Taras: it updates TimeLimit, Partition and JobName of a pending job/);
    assert.match(scontrol('update', `JobId=${b}`, 'Partition=nope').stderr, /^scontrol: error: job \d+ cannot be updated: .*nope/);
    assert.match(scontrol('update', `JobId=${running}`, 'Partition=debug').stderr, new RegExp(`^scontrol: error: job ${running} is RUNNING: only its TimeLimit and JobName can be updated \\(Partition only while it is pending\\)`));
    const lowered = scontrol('update', `JobId=${running}`, 'TimeLimit=-1');
    assert.equal(lowered.status, 0, lowered.stderr);
    assert.equal(show(running).timeLimitSeconds, 540, 'TimeLimit=-1: a minute less than its 10');

    // Hold marks: h (the user's hold), H (an administrator's), P (paused).
    // Hold marks: h (the user's hold: -H at submission), H (an administrator's: root's taras hold), P (paused).
    cli('hold', String(a));
    cli('pause', String(b));
    const userHeld = submit('-t', '5', '-H');
    const queue = cli('queue').stdout.split('\n');
    const stateOf = (id: number) => queue.find((line) => new RegExp(`^ *${id}  root  `).test(line))?.trim().split(/\s+/)[2];
    assert.deepEqual([stateOf(a), stateOf(b), stateOf(c), stateOf(running), stateOf(userHeld)], ['PENDING(H)', 'PENDING(P)', 'PENDING', 'RUNNING', 'PENDING(h)'], queue.join('\n'));

    if (!notRootReason) {
      const alice = createTestUser('move');
      chmodSync(work, 0o711);
      chmodSync(dir, 0o711);
      chmodSync(data, 0o711);
      const as = (...args: string[]) => runAs(alice, [taras, ...args, '--controller', `unix:${join(data, 'taras.sock')}`]);
      const refusedMove = await as('move', String(c), '--after', String(a));
      assert.equal(refusedMove.status, 1);
      assert.match(refusedMove.stderr, new RegExp(`job ${c} belongs to root; only they or an administrator can move it`));
      const refusedUpdate = await as('update', String(c), '-J', 'mine');
      assert.match(refusedUpdate.stderr, new RegExp(`job ${c} belongs to root; only they or an administrator can update it`));
      assert.equal(show(c).name, 'job.sh');
    }
    cli('cancel', String(running), String(a), String(b), String(c), String(userHeld));
  });
});
