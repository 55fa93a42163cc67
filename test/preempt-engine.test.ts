// ControllerEngine.preempt and what it is built on, with a real store and
// core and agents answered in-process: what each kind of job gets (signal,
// grace, requeue or PREEMPTED), the restart action only after a checkpoint,
// suspend/resume moving the job's end in the plan, partition preemption in
// suspend mode, and a maintenance window's checkpoint mode signalling each job
// a checkpoint duration before the window.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { defaultClusterConfig, type ClusterConfig } from '../src/config/cluster.js';
import { ControllerEngine, type AgentLink, type SignalExtras, type StartOrder } from '../src/controller/engine.js';
import type { JobId } from '../src/core/types.js';
import type { JobSpec } from '../src/jobspec/types.js';
import { openStore } from '../src/store/store.js';

const work = mkdtempSync(join(tmpdir(), 'taras-preempt-'));
after(() => rmSync(work, { recursive: true, force: true }));
let files = 0;

const spec = (extra: Partial<JobSpec> = {}): JobSpec => ({
  script: { path: '/tmp/job.sh', text: '#!/bin/sh\n', args: [] }, nodes: { min: 1 }, cpusPerTask: 8, timeLimitSeconds: 600, name: 'job',
  workingDir: '/tmp', output: 'taras-%j.out', export: { all: true, variables: [] }, requeue: false, ...extra,
});

class Agents implements AgentLink {
  readonly orders: StartOrder[] = [];
  readonly signals: { jobId: number; signal: string; cancel: boolean; extras: SignalExtras }[] = [];
  async start(order: StartOrder): Promise<void> {
    this.orders.push(order);
  }
  async signal(_node: string, jobId: number, signal: string, cancel: boolean, extras: SignalExtras = {}): Promise<void> {
    this.signals.push({ jobId, signal, cancel, extras });
  }
}

function setup(config: ClusterConfig = defaultClusterConfig(work, { count: 2, cpus: 8 })) {
  const store = openStore(join(work, `store-${++files}.db`));
  const clock = { ms: Date.UTC(2026, 10, 23, 12, 0, 0) };
  const agents = new Agents();
  const engine = new ControllerEngine(config, store, agents, () => clock.ms);
  engine.agentRegistered([...engine.nodes.keys()], []);
  return { store, clock, agents, engine };
}

describe('preemption in the engine', () => {
  it('a checkpointing job gets its class\'s preemption signal and its checkpoint duration; requeued, it restarts with the restart action only after a checkpoint', () => {
    const { store, clock, agents, engine } = setup();
    const [id] = engine.submit([{ user: 'alice', spec: spec({ checkpoint: { durationSeconds: 40, intervalSeconds: 300 } }) }]);
    engine.schedule();
    assert.deepEqual(agents.orders[0].checkpoint, { periodicSignal: 'SIGUSR1', preemptSignal: 'SIGUSR2', intervalSeconds: 300, durationSeconds: 40 });
    assert.equal(agents.orders[0].restart, null, 'a first start is no restart');
    assert.deepEqual(engine.preempt(id, 'for an interactive job'), { waitSeconds: 40 });
    assert.deepEqual(engine.preempt(id, 'again'), { waitSeconds: 40 }, 'a second call waits for the first');
    assert.deepEqual(agents.signals, [{ jobId: id, signal: 'SIGUSR2', cancel: false, extras: { preempt: true, graceSeconds: 40, reason: 'for an interactive job' } }]);
    clock.ms += 10_000;
    engine.jobReport({ jobId: id, run: 0, state: 'PREEMPTED', exitCode: 0, endTimeMs: clock.ms });
    assert.equal(store.job(id)!.state, 'PENDING');
    assert.equal(store.job(id)!.reason, 'preempted: for an interactive job');
    engine.schedule();
    assert.equal(agents.orders[1].run, 1);
    assert.equal(agents.orders[1].restart, 'arg', 'it exited after its signal: it has a checkpoint');
    // Killed before it exited: no checkpoint is recorded for that run.
    engine.preempt(id, 'again');
    engine.jobReport({ jobId: id, run: 1, state: 'PREEMPTED', exitCode: null, endTimeMs: clock.ms });
    assert.equal(store.events(id).filter((e) => e.event.type === 'checkpointed').length, 1, 'killed: no checkpoint recorded');
  });

  it('a job without checkpoints: SIGTERM and the partition\'s grace; requeued from the start with --requeue, else PREEMPTED; mode cancel ends it PREEMPTED', () => {
    const base = defaultClusterConfig(work, { count: 2, cpus: 8 });
    const config = { ...base, partitions: base.partitions.map((p) => ({ ...p, graceTimeSeconds: 7 })) };
    const { store, clock, agents, engine } = setup(config);
    const [plain, requeueable] = engine.submit([{ user: 'alice', spec: spec() }, { user: 'alice', spec: spec({ requeue: true }) }]);
    engine.schedule();
    assert.deepEqual(engine.preempt(plain, 'room needed'), { waitSeconds: 7 });
    assert.deepEqual(engine.preempt(requeueable, 'room needed'), { waitSeconds: 7 });
    assert.ok(agents.signals.every((s) => s.signal === 'SIGTERM' && s.extras.graceSeconds === 7));
    clock.ms += 1000;
    for (const id of [plain, requeueable]) engine.jobReport({ jobId: id, run: 0, state: 'PREEMPTED', exitCode: 143, endTimeMs: clock.ms });
    assert.deepEqual([store.job(plain)!.state, store.job(requeueable)!.state], ['PREEMPTED', 'PENDING']);
    engine.schedule();
    assert.equal(agents.orders.find((o) => o.jobId === requeueable && o.run === 1)?.restart, undefined, 'no checkpoints: a fresh start');
    engine.preempt(requeueable, 'cancel it', 'cancel');
    engine.jobReport({ jobId: requeueable, run: 1, state: 'PREEMPTED', exitCode: 143, endTimeMs: clock.ms });
    assert.equal(store.job(requeueable)!.state, 'PREEMPTED');
    assert.equal(store.job(requeueable)!.reason, 'preempted: cancel it');
  });

  it('resume moves the job\'s end in the plan later by the time it was suspended, so a waiting job moves too', () => {
    const { store, clock, agents, engine } = setup(defaultClusterConfig(work, { count: 1, cpus: 8 }));
    const [running, waiting] = engine.submit([{ user: 'alice', spec: spec() }, { user: 'bob', spec: spec() }]);
    engine.schedule();
    const before = engine.plannedStartMs(waiting)!;
    assert.equal(before, clock.ms + 600_000);
    engine.suspend(running, 'suspended by root');
    assert.equal(store.job(running)!.state, 'SUSPENDED');
    assert.deepEqual(agents.signals.at(-1), { jobId: running, signal: 'SIGSTOP', cancel: false, extras: { suspend: true } });
    clock.ms += 120_000;
    engine.resume(running, 'resumed by root');
    assert.equal(store.job(running)!.state, 'RUNNING');
    engine.touch();
    engine.schedule();
    assert.equal(engine.plannedStartMs(waiting), before + 120_000);
    assert.equal(engine.suspendedSecondsOf(running), 120);
  });

  it('partition preemption with preempt_mode suspend: the victim is stopped, the preemptor runs on its node, then the victim resumes there', () => {
    const base = defaultClusterConfig(work, { count: 1, cpus: 8 });
    const config: ClusterConfig = {
      ...base,
      partitions: [{ ...base.partitions[0], preemptMode: 'suspend' }, { name: 'high', nodes: ['node01'], isDefault: false, maxTimeSeconds: null, maxNodes: null, priority: 9 }],
    };
    const { store, clock, agents, engine } = setup(config);
    const [low] = engine.submit([{ user: 'alice', spec: spec() }]);
    engine.schedule();
    clock.ms += 5000;
    const [high] = engine.submit([{ user: 'bob', spec: spec({ partition: 'high' }) }]);
    engine.schedule(); // cannot start: the victim is suspended and leaves the core
    assert.equal(store.job(low)!.state, 'SUSPENDED');
    assert.match(store.job(low)!.reason!, new RegExp(`preempted by job ${high} of partition high`));
    engine.touch();
    assert.deepEqual(engine.schedule(), [high]);
    // A controller restart meanwhile: the victim stays out of the core (no node counted twice) and still resumes by itself.
    const again = new ControllerEngine(config, store, agents, () => clock.ms);
    const running = (id: JobId) => ({ jobId: id, run: 0, state: 'RUNNING' as const, exitCode: null, endTimeMs: null });
    again.agentRegistered(['node01'], [running(low), running(high)]);
    assert.deepEqual(again.scheduler.state.running.map((r) => r.job.id), [high]);
    clock.ms += 30_000;
    again.jobReport({ jobId: high, run: 0, state: 'COMPLETED', exitCode: 0, endTimeMs: clock.ms });
    again.schedule();
    assert.equal(store.job(low)!.state, 'RUNNING');
    assert.ok(agents.signals.some((s) => s.jobId === low && s.extras.resume === true));
    assert.equal(again.suspendedSecondsOf(low), 30);
    assert.deepEqual(again.scheduler.state.running.map((r) => r.job.id), [low]);
  });

  it('preempt in mode suspend gives the nodes back at once; a job suspended so can still be cancelled', () => {
    const { store, clock, engine } = setup(defaultClusterConfig(work, { count: 1, cpus: 8 }));
    const [victim, next] = engine.submit([{ user: 'alice', spec: spec() }, { user: 'bob', spec: spec() }]);
    engine.schedule();
    assert.deepEqual(engine.preempt(victim, 'an interactive job', 'suspend'), { waitSeconds: 0 });
    assert.equal(store.job(victim)!.state, 'SUSPENDED');
    assert.equal(store.job(victim)!.reason, 'preempted (suspended): an interactive job');
    assert.deepEqual(engine.schedule(), [next], 'its node is free for the next job');
    assert.throws(() => engine.resume(victim, 'by hand'), /resumes by itself once its nodes are free/);
    engine.cancel(victim, 'alice');
    clock.ms += 1000;
    engine.jobReport({ jobId: victim, run: 0, state: 'CANCELLED', exitCode: null, endTimeMs: clock.ms });
    assert.equal(store.job(victim)!.state, 'CANCELLED');
    assert.deepEqual(engine.scheduler.state.running.map((r) => r.job.id), [next]);
  });

  it('shutdown modes: kill cancels running jobs, checkpoint preempts them with requeue; nothing starts afterwards', () => {
    const { store, clock, agents, engine } = setup(defaultClusterConfig(work, { count: 2, cpus: 8 }));
    const [a, b, queued] = engine.submit([{ user: 'alice', spec: spec({ checkpoint: { durationSeconds: 20 } }) }, { user: 'bob', spec: spec() }, { user: 'bob', spec: spec() }]);
    engine.schedule();
    assert.deepEqual(engine.shutdownJobs('checkpoint'), { waitSeconds: 20, jobs: [a, b] });
    assert.deepEqual(agents.signals.map((s) => [s.jobId, s.signal, s.extras.preempt]), [[a, 'SIGUSR2', true], [b, 'SIGTERM', true]]);
    clock.ms += 5000;
    engine.jobReport({ jobId: a, run: 0, state: 'PREEMPTED', exitCode: 0, endTimeMs: clock.ms });
    engine.touch();
    assert.deepEqual(engine.schedule(), [], 'a node is free and two jobs wait, but nothing starts while shutting down');
    assert.deepEqual([store.job(a)!.state, store.job(queued)!.state], ['PENDING', 'PENDING']);
    assert.equal(engine.jobsHoldNodes, true, 'b has not ended yet');

    const other = setup(defaultClusterConfig(work, { count: 1, cpus: 8 }));
    const [c] = other.engine.submit([{ user: 'carol', spec: spec({ checkpoint: { durationSeconds: 20 } }) }]);
    other.engine.schedule();
    other.engine.shutdownJobs('kill');
    assert.deepEqual(other.agents.signals.map((s) => [s.jobId, s.signal, s.cancel]), [[c, 'SIGTERM', true]]);
  });

  it('a maintenance window with mode checkpoint signals each job running into it a checkpoint duration before its start', () => {
    const { store, clock, agents, engine } = setup();
    const [ckpt, plain] = engine.submit([{ user: 'alice', spec: spec({ checkpoint: { durationSeconds: 60 } }) }, { user: 'alice', spec: spec() }]);
    engine.schedule();
    const startMs = clock.ms + 300_000;
    engine.createReservation({ name: 'maint-x', kind: 'maintenance', startMs, endMs: startMs + 3_600_000, nodes: ['node01', 'node02'], users: [], reason: 'power', createdBy: 'root' });
    engine.setWindowMode('maint-x', 'checkpoint');
    clock.ms = startMs - 61_000;
    engine.applyWindowModes();
    assert.equal(agents.signals.length, 0, 'too early');
    clock.ms = startMs - 60_000;
    engine.applyWindowModes();
    assert.deepEqual(agents.signals.map((s) => [s.jobId, s.signal]), [[ckpt, 'SIGUSR2']]);
    clock.ms = startMs;
    engine.applyWindowModes();
    assert.deepEqual(agents.signals.map((s) => [s.jobId, s.signal]), [[ckpt, 'SIGUSR2'], [plain, 'SIGTERM']]);
    assert.match(store.events(ckpt).at(-1)!.event.type, /signalled/);
  });
});

describe('preemption in the engine: review fixes', () => {
  const twoPartitions = (mode: 'suspend' | 'requeue', count = 1): ClusterConfig => {
    const base = defaultClusterConfig(work, { count, cpus: 8 });
    const all = base.partitions[0].nodes;
    return { ...base, partitions: [{ ...base.partitions[0], preemptMode: mode }, { name: 'high', nodes: all, isDefault: false, maxTimeSeconds: null, maxNodes: null, priority: 9 }] };
  };
  const running = (id: JobId, run = 0) => ({ jobId: id, run, state: 'RUNNING' as const, exitCode: null, endTimeMs: null });

  it('a job suspended for a partition ends without crashing the controller: requeued it is PENDING and queued in the core; one that ends is gone from both', () => {
    const { store, clock, engine } = setup(twoPartitions('suspend'));
    const [low, other] = engine.submit([{ user: 'alice', spec: spec({ cpusPerTask: 4 }) }, { user: 'alice', spec: spec({ cpusPerTask: 4 }) }]);
    engine.schedule();
    const [high] = engine.submit([{ user: 'bob', spec: spec({ partition: 'high' }) }]);
    engine.schedule();
    assert.deepEqual([store.job(low)!.state, store.job(other)!.state], ['SUSPENDED', 'SUSPENDED']);
    engine.touch();
    assert.deepEqual(engine.schedule(), [high]);
    engine.requeue(low, 'alice');
    clock.ms += 1000;
    assert.doesNotThrow(() => engine.jobReport({ jobId: low, run: 0, state: 'PREEMPTED', exitCode: 0, endTimeMs: clock.ms }));
    assert.equal(store.job(low)!.state, 'PENDING');
    assert.ok(engine.scheduler.state.queue.some((entry) => entry.job.id === low), 'queued in the core again');
    assert.doesNotThrow(() => engine.jobReport({ jobId: other, run: 0, state: 'COMPLETED', exitCode: 0, endTimeMs: clock.ms }));
    assert.equal(store.job(other)!.state, 'COMPLETED');
    assert.equal(engine.active.has(other), false);
    assert.deepEqual(engine.scheduler.state.running.map((r) => r.job.id), [high]);
  });

  it('the suspended event says it was a preemption and for which job: after a restart the victim stays out of the core even with an unusual reason, and an admin suspension whose reason looks like one stays in', () => {
    const config = twoPartitions('suspend', 2);
    const { store, clock, agents, engine } = setup(config);
    const [victim, held] = engine.submit([{ user: 'alice', spec: spec() }, { user: 'alice', spec: spec() }]);
    engine.schedule();
    engine.suspend(held, 'preempted by job 99 (an administrator\'s words)');
    const [high] = engine.submit([{ user: 'bob', spec: spec({ partition: 'high' }) }]);
    engine.schedule();
    const suspendedEvent = store.events(victim).find((e) => e.event.type === 'suspended')!.event;
    assert.deepEqual(suspendedEvent, { type: 'suspended', reason: `preempted by job ${high} of partition high (priority 9)`, by: 'preemption', preemptor: high });
    engine.touch();
    assert.deepEqual(engine.schedule(), [high]);
    const again = new ControllerEngine(config, store, agents, () => clock.ms);
    again.agentRegistered(['node01', 'node02'], [running(victim), running(held), running(high)]);
    assert.deepEqual(again.scheduler.state.running.map((r) => r.job.id).sort(), [held, high].sort(), 'the victim is not adopted onto the preemptor\'s node');
    for (const node of ['node01', 'node02']) assert.ok(again.pool.free(node).cpus >= 0, `${node} has ${again.pool.free(node).cpus} free CPUs`);
    clock.ms += 10_000;
    again.jobReport({ jobId: high, run: 0, state: 'COMPLETED', exitCode: 0, endTimeMs: clock.ms });
    again.schedule();
    assert.equal(store.job(victim)!.state, 'RUNNING', 'resumed by itself after the restart');
    assert.equal(store.job(held)!.state, 'SUSPENDED', 'the administrator\'s suspension is not undone');
  });

  it('a restart sends the last suspend or resume again; undelivered preemption and resume are kept and retried apart', async () => {
    const config = defaultClusterConfig(work, { count: 2, cpus: 8 });
    const { store, clock, agents, engine } = setup(config);
    const [stopped, resumed] = engine.submit([{ user: 'alice', spec: spec() }, { user: 'alice', spec: spec() }]);
    engine.schedule();
    engine.suspend(stopped, 'by root');
    engine.suspend(resumed, 'by root');
    engine.resume(resumed, 'by root');
    const fresh = new Agents();
    const again = new ControllerEngine(config, store, fresh, () => clock.ms);
    assert.deepEqual(fresh.signals.map((s) => [s.jobId, s.signal, s.extras]).sort(), [[stopped, 'SIGSTOP', { suspend: true }], [resumed, 'SIGCONT', { resume: true }]].sort());

    // Both kinds undelivered at once: each is retried, neither overwrites the other.
    let failing = true;
    const flaky = new (class extends Agents {
      override async signal(node: string, jobId: number, signal: string, cancel: boolean, extras: SignalExtras = {}): Promise<void> {
        if (failing) throw new Error('agent away');
        return super.signal(node, jobId, signal, cancel, extras);
      }
    })();
    const third = new ControllerEngine(config, store, flaky, () => clock.ms);
    third.agentRegistered(['node01', 'node02'], [running(stopped), running(resumed)]);
    third.preempt(stopped, 'room needed', 'cancel');
    third.resume(stopped, 'by root');
    await new Promise((resolve) => setImmediate(resolve));
    failing = false;
    third.checkNodes();
    await new Promise((resolve) => setImmediate(resolve));
    const toStopped = flaky.signals.filter((s) => s.jobId === stopped).map((s) => s.signal).sort();
    assert.ok(toStopped.includes('SIGTERM') && toStopped.includes('SIGCONT'), `preemption and resume both delivered: ${toStopped.join(', ')}`);
  });

  it('suspended time counts once across a restart, and a suspended job\'s end in the core keeps moving', () => {
    const config = defaultClusterConfig(work, { count: 1, cpus: 8 });
    const { store, clock, agents, engine } = setup(config);
    const [id] = engine.submit([{ user: 'alice', spec: spec() }]);
    engine.schedule();
    const estimate = (e: ControllerEngine) => e.scheduler.state.getRunning(id)!.job.estimate;
    engine.suspend(id, 'by root');
    clock.ms += 100_000;
    const again = new ControllerEngine(config, store, agents, () => clock.ms);
    again.agentRegistered(['node01'], [running(id)]);
    clock.ms += 100_000;
    again.resume(id, 'by root');
    assert.equal(estimate(again), 800, 'limit 600 + 200 s suspended');
    again.suspend(id, 'by root');
    clock.ms += 900_000; // longer than its whole limit
    again.heartbeat(['node01']);
    again.checkNodes();
    assert.ok(estimate(again) >= 800 + 899, `its core end moved with the suspension (estimate ${estimate(again)})`);
    assert.ok(again.scheduler.state.getRunning(id)!.start + estimate(again) > clock.ms / 1000, 'not overdue while suspended');
    again.resume(id, 'by root');
    assert.equal(estimate(again), 1700, 'the resume adds only what was not given yet');
  });

  it('a pass, the once-a-second tick and maintenance-window modes read no job logs from the store', () => {
    const { store, clock, engine } = setup(twoPartitions('requeue', 2));
    const ids = engine.submit([1, 2].map(() => ({ user: 'alice', spec: spec() })));
    engine.schedule();
    engine.submit([{ user: 'bob', spec: spec({ partition: 'high' }) }, { user: 'bob', spec: spec({ partition: 'high' }) }]);
    const startMs = clock.ms + 3_600_000;
    engine.createReservation({ name: 'maint-y', kind: 'maintenance', startMs, endMs: startMs + 3_600_000, nodes: ['node01'], users: [], reason: 'power', createdBy: 'root' });
    engine.setWindowMode('maint-y', 'kill');
    let reads = 0;
    const events = store.events.bind(store);
    store.events = (id: JobId) => {
      reads++;
      return events(id);
    };
    engine.touch();
    engine.schedule();
    for (let i = 0; i < 5; i++) {
      clock.ms += 1000;
      engine.checkNodes();
      engine.applyWindowModes();
      engine.touch();
      engine.schedule();
    }
    store.events = events;
    assert.ok(ids.every((id) => store.events(id).some((e) => e.event.type === 'signalled')), 'the low jobs were preempted meanwhile');
    assert.equal(reads, 0);
  });

  it('a checkpointing job that exits non-zero after its preemption signal made no checkpoint', () => {
    const { store, clock, agents, engine } = setup();
    const [id] = engine.submit([{ user: 'alice', spec: spec({ checkpoint: { durationSeconds: 40 } }) }]);
    engine.schedule();
    engine.preempt(id, 'room needed');
    clock.ms += 5000;
    engine.jobReport({ jobId: id, run: 0, state: 'PREEMPTED', exitCode: 1, endTimeMs: clock.ms });
    assert.equal(store.events(id).filter((e) => e.event.type === 'checkpointed').length, 0);
    engine.schedule();
    assert.equal(agents.orders.find((o) => o.jobId === id && o.run === 1)?.restart, null, 'restarted from the start');
  });

  it('partition preemption takes no victims for a job a maintenance window keeps from starting now, and never an interactive job', () => {
    const { store, clock, engine } = setup(twoPartitions('requeue', 2));
    const [batch, session] = engine.submit([{ user: 'alice', spec: spec({ requeue: true }) }, { user: 'alice', spec: spec({ interactive: { pty: false, command: ['sh'] } }) }]);
    engine.schedule();
    const startMs = clock.ms + 100_000;
    engine.createReservation({ name: 'maint-z', kind: 'maintenance', startMs, endMs: startMs + 3_600_000, nodes: ['node01', 'node02'], users: [], reason: 'power', createdBy: 'root' });
    const [high] = engine.submit([{ user: 'bob', spec: spec({ partition: 'high' }) }]);
    engine.touch();
    engine.schedule();
    assert.equal(store.events(batch).some((e) => e.event.type === 'signalled'), false, 'the window would keep it waiting: nobody preempted');
    engine.deleteReservation('maint-z');
    engine.touch();
    engine.schedule();
    assert.deepEqual([batch, session].filter((id) => store.events(id).some((e) => e.event.type === 'signalled')), [batch], 'the batch job is preempted, the interactive one never');
    assert.equal(store.job(high)!.state, 'PENDING');
  });

  it('the owner\'s own requeue queues the job as if submitted now; an administrator\'s keeps its place', () => {
    const { store, clock, agents, engine } = setup(defaultClusterConfig(work, { count: 1, cpus: 8 }));
    const [first, second] = engine.submit([{ user: 'alice', spec: spec({ requeue: true }) }, { user: 'bob', spec: spec({ requeue: true }) }]);
    engine.schedule();
    clock.ms += 500_000;
    engine.requeue(first, 'alice', false);
    engine.jobReport({ jobId: first, run: 0, state: 'PREEMPTED', exitCode: 143, endTimeMs: clock.ms });
    assert.equal(store.job(first)!.submitTimeMs, clock.ms, 'queued as if submitted at its requeue');
    assert.deepEqual(engine.schedule(), [second], 'the job queued meanwhile goes first');
    clock.ms += 1000;
    engine.requeue(second, 'root', true);
    engine.jobReport({ jobId: second, run: 0, state: 'PREEMPTED', exitCode: 143, endTimeMs: clock.ms });
    assert.equal(store.job(second)!.submitTimeMs < store.job(first)!.submitTimeMs, true, 'an administrator\'s requeue keeps the submit time');
    engine.touch();
    assert.deepEqual(engine.schedule(), [second], 'and its place, ahead of the owner-requeued job');
    assert.equal(agents.orders.filter((o) => o.jobId === second).length, 2);
  });
});
