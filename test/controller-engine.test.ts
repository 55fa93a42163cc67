// The controller engine with a real SQLite store and the real core, agents
// answered in-process: submissions are committed before they are queued,
// starts land on nodes the core picked, ends, cancels, node failures and a
// controller restart are all recorded in each job's event history.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { defaultClusterConfig, type ClusterConfig } from '../src/config/cluster.js';
import { AgentAnswerLost, AgentUnreachable, ControllerEngine, SubmitRefused, type AgentLink, type StartOrder } from '../src/controller/engine.js';
import { jobId } from '../src/core/types.js';
import type { JobSpec } from '../src/jobspec/types.js';
import { apiJob, apiPlan, apiWhen } from '../src/controller/views.js';
import type { JobState } from '../src/store/events.js';
import { openStore, type Store } from '../src/store/store.js';

const work = mkdtempSync(join(tmpdir(), 'taras-engine-'));
after(() => rmSync(work, { recursive: true, force: true }));
let files = 0;

const spec = (extra: Partial<JobSpec> = {}): JobSpec => ({
  script: { path: '/tmp/job.sh', text: '#!/bin/sh\necho hi\n', args: [] },
  nodes: { min: 1 }, cpusPerTask: 1, timeLimitSeconds: 600, name: 'job', workingDir: '/tmp', output: 'taras-%j.out',
  export: { all: true, variables: [] }, requeue: false, ...extra,
});

class RecordingAgents implements AgentLink {
  readonly orders: StartOrder[] = [];
  readonly signals: { node: string; jobId: number; signal: string; cancel: boolean }[] = [];
  async start(order: StartOrder): Promise<void> {
    this.orders.push(order);
  }
  async signal(node: string, id: number, signal: string, cancel: boolean): Promise<void> {
    this.signals.push({ node, jobId: id, signal, cancel });
  }
}

function setup(config?: ClusterConfig) {
  const path = join(work, `store-${++files}.db`);
  const store = openStore(path);
  const clock = { ms: Date.UTC(2026, 10, 22, 12, 0, 0) };
  const agents = new RecordingAgents();
  const engine = new ControllerEngine(config ?? defaultClusterConfig(work), store, agents, () => clock.ms);
  const allNodes = [...engine.nodes.keys()];
  return { path, store, clock, agents, engine, allNodes };
}

const stateOf = (store: Store, id: number) => store.job(jobId(id))!.state;

describe('controller engine', () => {
  it('queues a job until nodes register, starts it on a node, records its end', () => {
    const { store, clock, agents, engine, allNodes } = setup();
    const [id] = engine.submit([{ user: 'alice', spec: spec({ nodes: { min: 2 }, cpusPerTask: 8 }) }]);
    assert.equal(stateOf(store, id), 'PENDING');
    assert.deepEqual(engine.schedule(), []); // every node is down until its agent registers
    // Just started: the agents are expected, so their nodes count in the plan for node_timeout.
    assert.equal(engine.plannedStartMs(id), clock.ms);
    engine.agentRegistered(allNodes.slice(0, 1), []);
    assert.deepEqual(engine.schedule(), [], 'one node up cannot hold a two-node job');
    engine.agentRegistered(allNodes, []);
    assert.deepEqual(engine.schedule(), [id]);
    assert.deepEqual(agents.orders[0].nodes, ['node01', 'node02']);
    assert.equal(agents.orders[0].cpusOnNode, 8);
    assert.equal(stateOf(store, id), 'RUNNING');
    clock.ms += 5000;
    engine.jobReport({ jobId: id, state: 'COMPLETED', exitCode: 0, endTimeMs: clock.ms });
    const done = store.job(id)!;
    assert.equal(done.state, 'COMPLETED');
    assert.equal(done.exitCode, 0);
    assert.equal(done.endTimeMs! - done.startTimeMs!, 5000);
    assert.deepEqual(store.events(id).map((e) => e.event.type), ['submitted', 'started', 'ended']);
    assert.equal(engine.active.size, 0);
  });

  it('start orders carry no warning signal unless the job or cluster.toml asks; the job\'s --signal and umask win', () => {
    const { agents, engine, allNodes } = setup();
    engine.agentRegistered(allNodes, []);
    const asked = { signal: 'USR1', beforeSeconds: 2, batchOnly: true };
    engine.submit([{ user: 'alice', spec: spec() }, { user: 'alice', spec: spec({ signal: asked, umask: 0o077 }) }]);
    engine.schedule();
    assert.deepEqual(agents.orders.map((o) => [o.warnSignal, o.spec.umask]), [[null, undefined], [asked, 0o077]]);
    const configured = setup({ ...defaultClusterConfig(work), warnSignal: { signal: 'TERM', beforeSeconds: 60, batchOnly: false } });
    configured.engine.agentRegistered(configured.allNodes, []);
    configured.engine.submit([{ user: 'bob', spec: spec() }, { user: 'bob', spec: spec({ signal: asked }) }]);
    configured.engine.schedule();
    assert.deepEqual(configured.agents.orders.map((o) => o.warnSignal), [{ signal: 'TERM', beforeSeconds: 60, batchOnly: false }, asked]);
  });

  it('partition priority: a later job of a higher-priority partition goes ahead, also after a restart', () => {
    const base = defaultClusterConfig(work, { count: 2, cpus: 8 });
    const names = base.nodes.map((n) => n.name);
    const config: ClusterConfig = {
      ...base,
      policy: 'fcfs',
      partitions: [
        { ...base.partitions[0], name: 'batch', nodes: names, isDefault: true, priority: 1 },
        { ...base.partitions[0], name: 'urgent', nodes: names, isDefault: false, priority: 10 },
      ],
    };
    const { path, store, clock, agents, engine, allNodes } = setup(config);
    engine.agentRegistered(allNodes, []);
    const whole = { nodes: { min: 2 }, cpusPerTask: 8 };
    const [running] = engine.submit([{ user: 'alice', spec: spec(whole) }]);
    assert.deepEqual(engine.schedule(), [running]);
    clock.ms += 1000;
    const [early] = engine.submit([{ user: 'alice', spec: spec(whole) }]);
    clock.ms += 1000;
    const [late] = engine.submit([{ user: 'bob', spec: spec({ ...whole, partition: 'urgent' }) }]);
    assert.deepEqual(engine.schedule(), []);
    // Planned: the urgent job right after the running one, the earlier batch job after that.
    assert.ok(engine.plannedStartMs(late)! < engine.plannedStartMs(early)!, 'the urgent job is planned first');
    store.close();

    // A restart rebuilds the queue in the same order.
    const reopened = openStore(path);
    const restarted = new ControllerEngine(config, reopened, agents, () => clock.ms);
    restarted.agentRegistered(allNodes, [{ jobId: running, run: 0, state: 'RUNNING', exitCode: null, endTimeMs: null }]);
    clock.ms += 60_000;
    restarted.jobReport({ jobId: running, state: 'COMPLETED', exitCode: 0, endTimeMs: clock.ms });
    assert.deepEqual(restarted.schedule(), [late]);
    assert.equal(reopened.job(early)!.state, 'PENDING');
    reopened.close();
  });

  it('refuses what the cluster cannot run, naming why, and stores nothing', () => {
    const { store, engine } = setup();
    assert.throws(() => engine.submit([{ user: 'bob', spec: spec({ partition: 'gpu' }) }]), (e: unknown) => e instanceof SubmitRefused && /gpu/.test(e.message));
    assert.throws(() => engine.submit([{ user: 'bob', spec: spec({ nodes: { min: 17 } }) }]), SubmitRefused);
    assert.throws(
      () => engine.submit([{ user: 'bob', spec: spec({ constraint: { text: 'a|b', anyOf: [['a'], ['b']] } }) }]),
      /alternatives/,
    );
    assert.equal(store.jobs().length, 0);
  });

  it('the jobs by state (a listing filtered by state) follow every change: submit, start, hold, cancel, end', () => {
    const { clock, engine, allNodes } = setup();
    engine.agentRegistered(allNodes, []);
    const byState = (state: JobState) => engine.active.inStates([state]).map((r) => r.id).sort((a, b) => a - b);
    const walked = (state: JobState) => [...engine.active.values()].filter((r) => r.state === state).map((r) => r.id).sort((a, b) => a - b);
    const check = () => {
      for (const state of ['PENDING', 'RUNNING', 'COMPLETING', 'SUSPENDED'] as const) assert.deepEqual(byState(state), walked(state), state);
      assert.equal(engine.active.inStates(undefined).length, engine.active.size);
    };
    const [wide, a, b, c] = engine.submit([
      { user: 'alice', spec: spec({ nodes: { min: 16 }, cpusPerTask: 8 }) },
      { user: 'alice', spec: spec() }, { user: 'bob', spec: spec() }, { user: 'bob', spec: spec() },
    ]);
    check();
    assert.deepEqual(byState('PENDING'), [wide, a, b, c]);
    assert.deepEqual(engine.schedule(), [wide]);
    check();
    assert.deepEqual(byState('RUNNING'), [wide]);
    engine.holdMany([b], 'bob', false);
    engine.cancel(c, 'bob');
    check();
    assert.deepEqual(byState('PENDING'), [a, b]);
    assert.deepEqual(engine.active.inStates(['RUNNING', 'PENDING', 'RUNNING']).map((r) => r.id).sort((x, y) => x - y), [wide, a, b]);
    clock.ms += 1000;
    engine.jobReport({ jobId: wide, state: 'COMPLETED', exitCode: 0, endTimeMs: clock.ms });
    engine.schedule();
    check();
    assert.deepEqual(byState('RUNNING'), [a]);
    assert.deepEqual(byState('PENDING'), [b]);
  });

  it('cancels a pending job at once and signals a running one', () => {
    const { store, agents, engine, allNodes } = setup();
    engine.agentRegistered(allNodes, []);
    const [running, pending] = engine.submit([
      { user: 'carol', spec: spec({ nodes: { min: 16 }, cpusPerTask: 8 }) },
      { user: 'carol', spec: spec() },
    ]);
    assert.deepEqual(engine.schedule(), [running]);
    assert.throws(() => engine.cancel(pending, 'mallory'), /belongs to carol/);
    assert.equal(engine.cancel(pending, 'carol').state, 'CANCELLED');
    engine.cancel(running, 'carol');
    assert.deepEqual(agents.signals, [{ node: 'node01', jobId: running, signal: 'SIGTERM', cancel: true }]);
    engine.jobReport({ jobId: running, state: 'CANCELLED', exitCode: null, endTimeMs: null });
    assert.equal(stateOf(store, running), 'CANCELLED');
    assert.deepEqual(store.events(running).map((e) => e.event.type), ['submitted', 'started', 'signalled', 'ended']);
  });

  it('a cancel whose signal does not reach the agent is sent again until it does', async () => {
    const { agents, engine, allNodes } = setup();
    engine.agentRegistered(allNodes, []);
    const [running] = engine.submit([{ user: 'carol', spec: spec() }]);
    assert.deepEqual(engine.schedule(), [running]);
    let failures = 2;
    const deliver = agents.signal.bind(agents);
    agents.signal = async (...args) => {
      if (failures-- > 0) throw new Error('connection refused');
      return deliver(...args);
    };
    const settle = () => new Promise((resolve) => setImmediate(resolve));
    engine.cancel(running, 'carol');
    await settle();
    assert.deepEqual(agents.signals, [], 'the first attempt failed');
    engine.checkNodes(); // the controller's second tick: fails again
    await settle();
    engine.checkNodes(); // and again: now it gets through
    await settle();
    assert.deepEqual(agents.signals, [{ node: 'node01', jobId: running, signal: 'SIGTERM', cancel: true }]);
    engine.checkNodes(); // delivered: not sent a fourth time
    await settle();
    assert.equal(agents.signals.length, 1);
  });

  it('a cancel not yet delivered is not lost: a --requeue job whose node fails ends CANCELLED, and a restart sends it again', async () => {
    const { path, store, clock, agents, engine, allNodes } = setup();
    engine.agentRegistered(allNodes, []);
    const [first, second] = engine.submit([
      { user: 'carol', spec: spec({ requeue: true }) },
      { user: 'carol', spec: spec() },
    ]);
    assert.deepEqual(engine.schedule(), [first, second]);
    const deliver = agents.signal.bind(agents);
    agents.signal = async () => {
      throw new Error('connection refused');
    };
    const settle = () => new Promise((resolve) => setImmediate(resolve));
    engine.cancel(first, 'carol');
    engine.cancel(second, 'carol');
    await settle();
    // The first job's node dies before the cancel got through: not requeued, CANCELLED.
    engine.jobReport({ jobId: first, state: 'NODE_FAIL', exitCode: null, endTimeMs: clock.ms, reason: 'node node01 went down' });
    assert.equal(stateOf(store, first), 'CANCELLED');
    assert.match(store.job(first)!.reason ?? '', /^cancelled; node node01 went down/);
    // The controller restarts before the second job's cancel got through: the new one sends it.
    store.close();
    agents.signal = deliver;
    const reopened = openStore(path);
    const restarted = new ControllerEngine(defaultClusterConfig(work), reopened, agents, () => clock.ms);
    await settle();
    assert.deepEqual(agents.signals, [{ node: reopened.job(second)!.nodes[0], jobId: second, signal: 'SIGTERM', cancel: true }]);
    restarted.jobReport({ jobId: second, state: 'CANCELLED', exitCode: null, endTimeMs: clock.ms });
    assert.equal(reopened.job(second)!.state, 'CANCELLED');
    reopened.close();
  });

  it('a silent node goes down: its job ends NODE_FAIL, a --requeue job runs again elsewhere', () => {
    const { store, clock, engine, allNodes, agents } = setup();
    engine.agentRegistered(allNodes, []);
    const [plain, requeue] = engine.submit([
      { user: 'dan', spec: spec({ cpusPerTask: 8 }) },
      { user: 'dan', spec: spec({ cpusPerTask: 8, requeue: true }) },
    ]);
    engine.schedule();
    assert.deepEqual(agents.orders.map((o) => o.nodes[0]), ['node01', 'node02']);
    clock.ms += 30_000;
    engine.heartbeat(allNodes.filter((n) => n !== 'node01' && n !== 'node02'));
    clock.ms += 45_000; // node01 and node02 silent for 75 s > 60 s
    assert.deepEqual(engine.checkNodes(), ['node01', 'node02']);
    assert.equal(stateOf(store, plain), 'NODE_FAIL');
    assert.equal(stateOf(store, requeue), 'PENDING');
    assert.deepEqual(engine.schedule(), [requeue]);
    assert.equal(agents.orders[2].nodes[0], 'node03');
    assert.equal(engine.nodes.get('node01')!.reason, 'no heartbeat for 60 s');
  });

  it('a drained node takes no new jobs', () => {
    const { engine, allNodes, agents } = setup();
    engine.agentRegistered(allNodes, []);
    engine.drain(['node01', 'node02'], 'disk swap');
    engine.submit([{ user: 'eve', spec: spec() }]);
    engine.schedule();
    assert.equal(agents.orders[0].nodes[0], 'node03');
    assert.equal(engine.nodes.get('node01')!.reason, 'disk swap');
  });

  it('a drained node\'s CPUs are in no planned start; resumed, they are at once', () => {
    const { clock, engine, allNodes } = setup();
    engine.agentRegistered(allNodes, []);
    // Every node busy: node01's job ends in 1 minute, the others in 10.
    engine.submit(allNodes.map((_, i) => ({ user: 'gus', spec: spec({ cpusPerTask: 8, timeLimitSeconds: i === 0 ? 60 : 600 }) })));
    engine.schedule();
    engine.drain(['node01'], 'memory test');
    const [waiting] = engine.submit([{ user: 'gus', spec: spec({ cpusPerTask: 8 }) }]);
    engine.schedule();
    assert.equal(engine.plannedStartMs(waiting), clock.ms + 600_000, 'not at node01\'s end in 1 minute: node01 takes no jobs');
    engine.drain(['node01'], '', false);
    assert.equal(engine.plannedStartMs(waiting), clock.ms + 60_000);
  });

  it('after a start, agents that have not registered yet keep a large job\'s place until node_timeout', () => {
    const { store, engine, allNodes } = setup();
    // One job needs all 16 nodes; the next, a day long, would fit on the first node to register.
    const [all, day] = engine.submit([
      { user: 'hal', spec: spec({ nodes: { min: allNodes.length }, cpusPerTask: 8 }) },
      { user: 'hal', spec: spec({ cpusPerTask: 8, timeLimitSeconds: 86_400 }) },
    ]);
    for (const name of allNodes.slice(0, -1)) {
      engine.agentRegistered([name], []);
      assert.deepEqual(engine.schedule(), [], `after ${name} registered`);
    }
    engine.agentRegistered(allNodes.slice(-1), []);
    assert.deepEqual(engine.schedule(), [all]);
    assert.equal(stateOf(store, day), 'PENDING');

    // Another start where one agent never comes: after node_timeout its node stops counting, and the
    // smaller job no longer waits behind one that cannot run.
    const other = setup();
    const [big, small] = other.engine.submit([
      { user: 'hal', spec: spec({ nodes: { min: other.allNodes.length }, cpusPerTask: 8 }) },
      { user: 'hal', spec: spec({ cpusPerTask: 8, timeLimitSeconds: 86_400 }) },
    ]);
    other.engine.agentRegistered(other.allNodes.slice(0, -1), []);
    assert.deepEqual(other.engine.schedule(), []);
    assert.equal(other.engine.plannedStartMs(big), other.clock.ms);
    other.clock.ms += 61_000;
    other.engine.heartbeat(other.allNodes.slice(0, -1));
    assert.deepEqual(other.engine.checkNodes(), other.allNodes.slice(-1));
    assert.match(other.engine.nodes.get(other.allNodes.at(-1)!)!.reason!, /no agent has registered within 60 s of the controller's start/);
    assert.deepEqual(other.engine.schedule(), [small]);
    assert.equal(other.engine.plannedStartMs(big), null, 'waits for the node that never came');
  });

  it('after a restart, a job on a node whose agent never comes back ends NODE_FAIL at node_timeout; an idle node that times out gets a pass', () => {
    const first = setup();
    first.engine.agentRegistered(first.allNodes, []);
    const [running] = first.engine.submit([{ user: 'ivy', spec: spec({ cpusPerTask: 8 }) }]);
    first.engine.schedule();
    const node = first.store.job(running)!.nodes[0];
    first.store.close();

    const store = openStore(first.path);
    const clock = { ms: first.clock.ms + 5_000 };
    const engine = new ControllerEngine(defaultClusterConfig(work), store, new RecordingAgents(), () => clock.ms);
    const others = first.allNodes.filter((n) => n !== node);
    engine.agentRegistered(others, []);
    clock.ms += 30_000;
    engine.heartbeat(others);
    assert.deepEqual(engine.checkNodes(), []);
    assert.equal(stateOf(store, running), 'RUNNING', 'its agent may still come back');
    clock.ms += 31_000;
    engine.heartbeat(others);
    assert.deepEqual(engine.checkNodes(), [node]);
    assert.equal(stateOf(store, running), 'NODE_FAIL');

    // An idle node silent past the timeout: a pass is due (the plan lost its CPUs), though no job ended.
    // A job on node02 until +600 s keeps a whole-cluster job waiting, and the day-long job behind it too;
    // once node01 is down the whole-cluster job cannot be planned, and the day-long one may start.
    const idle = setup();
    idle.engine.agentRegistered(idle.allNodes, []);
    idle.engine.drain(['node01'], 'keep it free');
    const [holder] = idle.engine.submit([{ user: 'ivy', spec: spec({ cpusPerTask: 8 }) }]);
    assert.deepEqual(idle.engine.schedule(), [holder]);
    idle.engine.drain(['node01'], '', false);
    const [, day] = idle.engine.submit([
      { user: 'ivy', spec: spec({ nodes: { min: idle.allNodes.length }, cpusPerTask: 8 }) },
      { user: 'ivy', spec: spec({ cpusPerTask: 8, timeLimitSeconds: 86_400 }) },
    ]);
    assert.deepEqual(idle.engine.schedule(), []);
    idle.clock.ms += 61_000;
    idle.engine.heartbeat(idle.allNodes.slice(1));
    assert.deepEqual(idle.engine.checkNodes(), idle.allNodes.slice(0, 1));
    assert.deepEqual(idle.engine.schedule(), [day]);
  });

  it('a restart whose cluster.toml lost a running job\'s node: the job ends NODE_FAIL (a --requeue one waits again if it still fits), the controller starts; a reconfigure is refused', () => {
    const first = setup(defaultClusterConfig(work, { count: 4, cpus: 8 }));
    first.engine.agentRegistered(first.allNodes, []);
    const [kept, , requeued, plain, pinned] = first.engine.submit([
      { user: 'ivy', spec: spec({ cpusPerTask: 8, nodelist: ['node01'] }) },
      { user: 'ivy', spec: spec({ cpusPerTask: 8, nodelist: ['node02'] }) },
      { user: 'ivy', spec: spec({ cpusPerTask: 8, requeue: true }) },
      { user: 'ivy', spec: spec({ cpusPerTask: 4, nodelist: ['node04'] }) },
      { user: 'ivy', spec: spec({ cpusPerTask: 4, nodelist: ['node04'], requeue: true }) },
    ]);
    assert.equal(first.engine.schedule().length, 5);
    assert.deepEqual([requeued, plain, pinned].map((id) => first.store.job(id)!.nodes), [['node03'], ['node04'], ['node04']]);
    // A reconfigure to two nodes while they run: refused, nothing changes.
    const lines: string[] = [];
    assert.throws(() => new ControllerEngine(defaultClusterConfig(work, { count: 2, cpus: 8 }), first.store, new RecordingAgents(), () => first.clock.ms, (line) => lines.push(line), 'refuse'),
      (error: unknown) => error instanceof SubmitRefused && error.message === `job ${requeued} runs on node03, which this configuration does not have; wait for it to end, or cancel it (taras cancel ${requeued}), then reconfigure`);
    assert.ok(first.store.runningJobs().length === 5 && lines.length === 0);
    first.store.close();

    // The controller starts with the two-node file (it used to die: "no node named node03").
    const store = openStore(first.path);
    const clock = { ms: first.clock.ms + 5_000 };
    const engine = new ControllerEngine(defaultClusterConfig(work, { count: 2, cpus: 8 }), store, new RecordingAgents(), () => clock.ms, (line) => lines.push(line));
    assert.deepEqual([kept, requeued, plain, pinned].map((id) => [id, stateOf(store, id)]), [[kept, 'RUNNING'], [requeued, 'PENDING'], [plain, 'NODE_FAIL'], [pinned, 'NODE_FAIL']]);
    assert.deepEqual(store.events(requeued).map((e) => e.event.type), ['submitted', 'started', 'requeued']);
    assert.equal(store.job(requeued)!.reason, 'node node03 is no longer in the cluster\'s configuration');
    assert.equal(store.job(plain)!.reason, 'node node04 is no longer in the cluster\'s configuration');
    assert.equal(store.job(pinned)!.reason, 'node node04 is no longer in the cluster\'s configuration; not requeued: --nodelist: no node named node04 in this cluster (name nodes as `taras nodes` lists them)');
    assert.deepEqual(lines, [
      `job ${requeued} (ivy) ran on node03, which the configuration no longer has: requeued (--requeue)`,
      `job ${plain} (ivy) ran on node04, which the configuration no longer has: ended NODE_FAIL`,
      `job ${pinned} (ivy) ran on node04, which the configuration no longer has: ended NODE_FAIL`,
    ].concat(lines.slice(3)));
    assert.ok(engine.active.has(requeued) && !engine.active.has(plain) && !engine.active.has(pinned));
    // And it starts again with nothing more to say about them.
    store.close();
    const again: string[] = [];
    const restarted = new ControllerEngine(defaultClusterConfig(work, { count: 2, cpus: 8 }), openStore(first.path), new RecordingAgents(), () => clock.ms, (line) => again.push(line));
    assert.deepEqual(again.filter((line) => /no longer has|at start-up/.test(line)), []);
    assert.equal(restarted.recordOf(requeued)!.state, 'PENDING');
  });

  it('a drain naming an unknown node changes nothing; `when` says whether a job waits for its own nodes or for the one ahead (fcfs)', () => {
    const { store, engine, allNodes } = setup({ ...defaultClusterConfig(work), policy: 'fcfs' });
    engine.agentRegistered(allNodes, []);
    assert.throws(() => engine.drain(['node03', 'node99'], 'typo'), /no node named node99/);
    assert.equal(engine.nodes.get('node03')!.drained, false);
    engine.drain(['node16'], 'memory test');
    const [wide, small] = engine.submit([
      { user: 'jo', spec: spec({ nodes: { min: allNodes.length } }) },
      { user: 'jo', spec: spec() },
    ]);
    engine.schedule();
    assert.match(apiWhen(engine, store.job(wide)!).explanation, /^Fewer than the 16 nodes it needs in partition batch are up and taking jobs \(node16 is out\)/);
    assert.match(apiWhen(engine, store.job(small)!).explanation, /^A job ahead of it waits for nodes that are down or drained/);
    // Held, or waiting for a job it depends on: that is what `when` says, not the nodes (it blamed drained nodes).
    const [held, dependent] = engine.submit([
      { user: 'jo', spec: spec({ hold: true }) },
      { user: 'jo', spec: spec({ dependency: { text: `afterok:${wide}`, all: true, items: [{ type: 'afterok', ids: [wide] }] } }) },
    ]);
    engine.schedule();
    assert.equal(apiWhen(engine, store.job(held)!).explanation, `It is held (${store.job(held)!.reason}): it is planned once released (taras release ${held}).`);
    assert.match(apiWhen(engine, engine.active.get(dependent)!).explanation, /^It waits: Dependency/);
  });

  it('after a controller restart: the queue is back in order, running jobs keep their nodes, ends while down are recorded', () => {
    const first = setup();
    first.engine.agentRegistered(first.allNodes, []);
    const ids = first.engine.submit([
      { user: 'fay', spec: spec({ nodes: { min: 16 }, cpusPerTask: 8 }) },
      { user: 'fay', spec: spec({ name: 'second' }) },
      { user: 'fay', spec: spec({ name: 'third' }) },
    ]);
    assert.deepEqual(first.engine.schedule(), [ids[0]]);
    first.store.close(); // the controller dies here

    const store = openStore(first.path);
    const clock = { ms: first.clock.ms + 120_000 };
    const agents = new RecordingAgents();
    const engine = new ControllerEngine(defaultClusterConfig(work), store, agents, () => clock.ms);
    assert.equal(engine.active.size, 3);
    // The agents come back; the big job ended 100 s after it started, while the controller was down.
    engine.agentRegistered(first.allNodes, [{ jobId: ids[0], state: 'FAILED', exitCode: 7, endTimeMs: first.clock.ms + 100_000 }]);
    const ended = store.job(ids[0])!;
    assert.equal(ended.state, 'FAILED');
    assert.equal(ended.exitCode, 7);
    assert.equal(ended.endTimeMs, first.clock.ms + 100_000);
    assert.deepEqual(engine.schedule(), [ids[1], ids[2]]);
    assert.equal(store.jobs().length, 3);
  });

  it('after a restart a job still running keeps its nodes: nothing else is placed there', () => {
    const first = setup();
    first.engine.agentRegistered(first.allNodes, []);
    const [wide] = first.engine.submit([{ user: 'gus', spec: spec({ nodes: { min: 15 }, cpusPerTask: 8 }) }]);
    first.engine.schedule();
    first.store.close();
    const store = openStore(first.path);
    const agents = new RecordingAgents();
    const engine = new ControllerEngine(defaultClusterConfig(work), store, agents, () => first.clock.ms + 1000);
    engine.agentRegistered(first.allNodes, [{ jobId: wide, state: 'RUNNING', exitCode: null, endTimeMs: null }]);
    const [next] = engine.submit([{ user: 'gus', spec: spec({ nodes: { min: 2 } }) }]);
    assert.deepEqual(engine.schedule(), []); // only node16 is free
    // A 1-CPU job fits in the extra CPUs the waiting head will not need: EASY backfills it onto node16.
    const [small] = engine.submit([{ user: 'gus', spec: spec() }]);
    assert.deepEqual(engine.schedule(), [small]);
    assert.deepEqual(agents.orders.map((o) => o.nodes), [['node16']]);
    assert.equal(store.job(next)!.state, 'PENDING');
  });

  it('a start lost in a controller crash is noticed when the agent registers without the job: the job never ran, and runs again', () => {
    const first = setup();
    const lost: AgentLink = { start: () => new Promise(() => {}), signal: async () => {} };
    const engine1 = new ControllerEngine(defaultClusterConfig(work), first.store, lost, () => first.clock.ms);
    const [id, cancelled] = engine1.submit([{ user: 'hal', spec: spec() }, { user: 'hal', spec: spec() }]);
    engine1.agentRegistered(['node01'], []);
    engine1.schedule();
    engine1.cancel(cancelled, 'hal');
    first.store.close();
    const store = openStore(first.path);
    const agents = new RecordingAgents();
    const engine2 = new ControllerEngine(defaultClusterConfig(work), store, agents, () => first.clock.ms + 5000);
    engine2.agentRegistered(['node01'], []);
    const record = store.job(id)!;
    assert.deepEqual([record.state, record.reason, record.requeueCount], ['PENDING', 'the agent of node01 never received its start', 1]);
    assert.deepEqual(store.events(id).map((e) => e.event.type), ['submitted', 'started', 'requeued']);
    // One cancelled meanwhile is not run again: it ends CANCELLED.
    assert.equal(store.job(cancelled)!.state, 'CANCELLED');
    assert.deepEqual(engine2.schedule(), [id]);
    assert.deepEqual(agents.orders.map((o) => [o.jobId, o.run]), [[id, 1]]);
  });

  it('a start that does not reach its agent puts the job back in the queue, and the node out until its agent registers again', async () => {
    const { store, clock, engine } = setup();
    const refused: StartOrder[] = [];
    const unreachable = new ControllerEngine(defaultClusterConfig(work, { count: 2, cpus: 8 }), store, {
      start: async (order) => {
        refused.push(order);
        throw order.nodes[0] === 'node01' ? new AgentUnreachable('the agent at http://127.0.0.1:1 did not answer (ECONNREFUSED)', 'ECONNREFUSED') : new Error('HTTP 400: no such user');
      },
      signal: async () => {},
    }, () => clock.ms, () => {});
    void engine;
    unreachable.agentRegistered(['node01'], []);
    const [id] = unreachable.submit([{ user: 'hal', spec: spec({ cpusPerTask: 8 }) }]);
    assert.deepEqual(unreachable.schedule(), [id]);
    await new Promise((resolve) => setImmediate(resolve));
    const requeued = store.job(id)!;
    assert.deepEqual([requeued.state, requeued.reason, requeued.requeueCount], ['PENDING', 'its start did not reach the agent of node01 (ECONNREFUSED)', 1]);
    const node = unreachable.nodes.get('node01')!;
    assert.deepEqual([node.up, node.reason], [false, 'its agent could not be reached (ECONNREFUSED); it takes jobs again when the agent registers']);
    // Its next registration, within the pause, changes nothing: no job goes there, none is requeued again.
    clock.ms += 5000;
    unreachable.agentRegistered(['node01'], []);
    assert.deepEqual(unreachable.schedule(), []);
    assert.equal(refused.length, 1);
    // After the pause it takes jobs again; an agent that answers with a refusal fails the job (NODE_FAIL), as before.
    clock.ms += 6000;
    unreachable.agentRegistered(['node01', 'node02'], []);
    assert.equal(unreachable.nodes.get('node01')!.up, true);
    const [other] = unreachable.submit([{ user: 'hal', spec: spec({ cpusPerTask: 8, nodelist: ['node02'] }) }]);
    assert.deepEqual(unreachable.schedule().sort(), [id, other].sort());
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(store.job(other)!.state, 'NODE_FAIL');
    assert.equal(store.job(other)!.reason, 'start failed on node02: HTTP 400: no such user');
    assert.equal(store.job(id)!.requeueCount, 2, 'node01 still does not answer: requeued once more');
  });

  it('a start whose answer was lost (reset, timed out) may have arrived: the job is not run twice; the agent\'s next registration says', async () => {
    const { store, clock } = setup();
    const engine = new ControllerEngine(defaultClusterConfig(work, { count: 2, cpus: 8 }), store, {
      start: async () => {
        throw new AgentAnswerLost('the agent at http://127.0.0.1:1 did not answer (ETIMEDOUT)', 'ETIMEDOUT');
      },
      signal: async () => {},
    }, () => clock.ms, () => {});
    engine.agentRegistered(['node01', 'node02'], []);
    const [ran, lost] = engine.submit([{ user: 'hal', spec: spec({ cpusPerTask: 8 }) }, { user: 'hal', spec: spec({ cpusPerTask: 8 }) }]);
    assert.deepEqual(engine.schedule().sort(), [ran, lost].sort());
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual([ran, lost].map((id) => [store.job(id)!.state, store.job(id)!.requeueCount]), [['RUNNING', 0], ['RUNNING', 0]], 'neither is requeued on a lost answer');
    assert.deepEqual(engine.schedule(), [], 'nor placed again');
    // The agents register: one runs its job (it arrived), the other does not know its job (it never arrived): that one is requeued.
    const runsOn = store.job(ran)!.nodes[0];
    engine.agentRegistered([runsOn], [{ jobId: ran, run: 0, state: 'RUNNING', exitCode: null, endTimeMs: null }]);
    engine.agentRegistered([store.job(lost)!.nodes[0]], []);
    assert.deepEqual([store.job(ran)!.state, store.job(lost)!.state, store.job(lost)!.requeueCount], ['RUNNING', 'PENDING', 1]);
  });

  it('a report about an old run of a requeued job neither ends the new run nor survives: it is to be killed', () => {
    const { store, clock, engine, agents } = setup();
    engine.agentRegistered(['node01', 'node02'], []);
    const [id] = engine.submit([{ user: 'ida', spec: spec({ cpusPerTask: 8, requeue: true }) }]);
    engine.schedule();
    assert.deepEqual([agents.orders[0].nodes[0], agents.orders[0].run], ['node01', 0]);
    clock.ms += 90_000;
    engine.heartbeat(['node02']);
    engine.checkNodes(); // node01 silent: the job is requeued
    engine.schedule();
    assert.deepEqual([agents.orders[1].nodes[0], agents.orders[1].run], ['node02', 1]);
    // node01's agent comes back and reports its old copy: first still running, then ended.
    const kill = engine.agentRegistered(['node01'], [{ jobId: id, run: 0, state: 'RUNNING', exitCode: null, endTimeMs: null }]);
    assert.deepEqual(kill, [{ jobId: id, run: 0 }]);
    engine.jobReport({ jobId: id, run: 0, state: 'COMPLETED', exitCode: 0, endTimeMs: clock.ms });
    assert.equal(store.job(id)!.state, 'RUNNING');
    assert.deepEqual(store.job(id)!.nodes, ['node02']);
    engine.jobReport({ jobId: id, run: 1, state: 'COMPLETED', exitCode: 0, endTimeMs: clock.ms });
    assert.equal(store.job(id)!.state, 'COMPLETED');
  });

  for (const policy of ['easy', 'conservative'] as const) {
    it(`${policy}: two partitions, one full: a job for it is planned at the end of what fills it, on its nodes, and \`when\` says what holds it`, () => {
      const base = defaultClusterConfig(work, { count: 4, cpus: 8 });
      const names = base.nodes.map((n) => n.name);
      const config: ClusterConfig = {
        ...base, policy, defaultPartition: 'a',
        partitions: [
          { ...base.partitions[0], name: 'a', nodes: names.slice(0, 2), isDefault: true },
          { ...base.partitions[0], name: 'b', nodes: names.slice(2), isDefault: false },
        ],
      };
      const { clock, engine, allNodes } = setup(config);
      engine.agentRegistered(allNodes, []);
      const [filler] = engine.submit([{ user: 'ann', spec: spec({ nodes: { min: 2 }, cpusPerTask: 8, timeLimitSeconds: 3600 }) }]);
      assert.deepEqual(engine.schedule(), [filler]);
      clock.ms += 1000;
      const [waiting] = engine.submit([{ user: 'bob', spec: spec({ cpusPerTask: 4, timeLimitSeconds: 600 }) }]);
      assert.deepEqual(engine.schedule(), [], 'partition a is full; b\'s idle nodes are not its');
      const startMs = clock.ms - 1000 + 3600_000;
      assert.equal(engine.plannedStartMs(waiting), startMs, 'at the end of the job filling a, not "now"');
      const when = apiWhen(engine, engine.active.get(waiting)!);
      assert.equal(when.plannedNodes?.length, 1);
      assert.ok(['node01', 'node02'].includes(when.plannedNodes![0]));
      assert.deepEqual(when.heldBy.map((h) => [h.kind, h.id, h.user]), [['running', String(filler), 'ann']]);
      assert.equal(when.heldBy[0].until, new Date(startMs).toISOString());
      assert.equal(when.moved, null);

      const plan = apiPlan(engine, clock.ms);
      assert.deepEqual(plan.nodes, names);
      assert.deepEqual(plan.items.map((item) => [item.kind, item.id, item.state, item.nodes.length, item.start]), [
        ['job', String(filler), 'RUNNING', 2, new Date(clock.ms - 1000).toISOString()],
        ['job', String(waiting), 'PENDING', 1, new Date(startMs).toISOString()],
      ]);
      assert.equal(plan.items[1].end, new Date(startMs + 600_000).toISOString());
      assert.deepEqual(plan.unplanned, []);

      // The first planned start is kept, then logged with the real start: the filler ends early, the job starts sooner.
      assert.equal(apiJob(engine, engine.active.get(waiting)!).firstPlannedStart, new Date(startMs).toISOString());
      clock.ms += 60_000;
      engine.jobReport({ jobId: filler, state: 'COMPLETED', exitCode: 0, endTimeMs: clock.ms });
      assert.deepEqual(engine.schedule(), [waiting]);
      const started = engine.active.get(waiting)!;
      assert.equal(started.plannedStartMs, startMs, 'the first promise, in the started event');
      assert.equal(started.startTimeMs, clock.ms);
      assert.equal(apiJob(engine, started).firstPlannedStart, new Date(startMs).toISOString());
    });
  }
});
