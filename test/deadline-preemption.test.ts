// A guaranteed deadline that the plan can no longer meet (its nodes were
// drained) is kept by preemption (seed 000 2.2.3): the scheduler waits as long
// as the deadline allows, then checkpoints and removes a running batch job a
// checkpoint's time before the priority job's latest start, so the job starts
// in time; the victim goes back to the queue and restarts afterwards. The
// engine with a real store and the real core, agents answered in-process, the
// clock in the test's hands.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { defaultClusterConfig } from '../src/config/cluster.js';
import { ControllerEngine, type AgentLink, type StartOrder } from '../src/controller/engine.js';
import type { JobId } from '../src/core/types.js';
import type { JobSpec } from '../src/jobspec/types.js';
import { openStore } from '../src/store/store.js';

const work = mkdtempSync(join(tmpdir(), 'taras-deadline-preempt-'));
after(() => rmSync(work, { recursive: true, force: true }));

const spec = (name: string, extra: Partial<JobSpec> = {}): JobSpec => ({
  script: { path: '/tmp/job.sh', text: '#!/bin/sh\necho hi\n', args: [] },
  nodes: { min: 1 }, cpusPerTask: 8, timeLimitSeconds: 600, name, workingDir: '/tmp', output: 'taras-%j.out',
  export: { all: true, variables: [] }, requeue: false, ...extra,
});

class Agents implements AgentLink {
  readonly orders: StartOrder[] = [];
  readonly signals: { jobId: number; signal: string; extras: unknown }[] = [];
  async start(order: StartOrder): Promise<void> {
    this.orders.push(order);
  }
  async signal(_node: string, jobId: number, signal: string, _cancel: boolean, extras?: unknown): Promise<void> {
    this.signals.push({ jobId, signal, extras });
  }
}

/** An engine on `count` nodes of 8 CPUs, a real store and core, agents answered in-process, the clock at `start`. */
function setup(file: string, count: number) {
  const store = openStore(join(work, file));
  const start = Date.UTC(2026, 10, 23, 12, 0, 0);
  const clock = { ms: start };
  const agents = new Agents();
  const engine = new ControllerEngine({ ...defaultClusterConfig(work, { count, cpus: 8 }), policy: 'conservative' }, store, agents, () => clock.ms);
  engine.agentRegistered([...engine.nodes.keys()], []);
  return { store, start, clock, agents, engine };
}

describe('deadline jobs and preemption', () => {
  it('preempts the running batch job a checkpoint time before the latest start, starts the deadline job on its node, requeues the victim', async () => {
    const { store, start, clock, agents, engine } = setup('a.db', 3);
    // X: node01 for an hour, checkpoints within 20 s. Y: node02 and node03 for 100 s, no checkpoints.
    const [x] = engine.submit([{ user: 'alice', spec: spec('X', { timeLimitSeconds: 3600, checkpoint: { durationSeconds: 20 } }) }]);
    const [y] = engine.submit([{ user: 'bob', spec: spec('Y', { nodes: { min: 2 }, timeLimitSeconds: 100 }) }]);
    assert.deepEqual(engine.schedule(), [x, y]);
    // P: one node for 60 s, by +200 s: planned after Y (+100 to +160), guaranteed.
    const [p] = engine.submit([{ user: 'carol', spec: spec('P', { timeLimitSeconds: 60, deadline: { atMs: start + 200_000, policy: 'guarantee' } }) }]);
    engine.schedule();
    assert.equal(engine.plannedStartMs(p), start + 100_000);
    // Y's nodes are drained (Y, not requeueable and without checkpoints, is never a deadline's victim): only node01 could serve P, and X holds it for an hour. P must start by +140.
    engine.drain(['node02', 'node03'], 'maintenance');
    const pass = (atSeconds: number) => {
      clock.ms = start + atSeconds * 1000;
      engine.heartbeat([...engine.nodes.keys()]);
      engine.checkNodes();
      engine.touch();
      return engine.schedule();
    };
    pass(60);
    pass(116);
    assert.deepEqual(agents.signals.filter((s) => s.jobId === x), [], 'not before latest start (140) less the checkpoint (20) and a margin (3)');
    pass(117);
    const preempted = agents.signals.filter((s) => s.jobId === x);
    assert.equal(preempted.length, 1, JSON.stringify(agents.signals));
    assert.match(JSON.stringify(preempted[0].extras), /"preempt":true/);
    // X checkpoints and exits at +125: it goes back to the queue; P starts on node01, in time.
    clock.ms = start + 125_000;
    engine.jobReport({ jobId: x as JobId, run: 0, state: 'PREEMPTED', exitCode: 0, endTimeMs: clock.ms });
    assert.equal(store.job(x)!.state, 'PENDING');
    assert.deepEqual(pass(125), [p]);
    assert.deepEqual(agents.orders.find((o) => o.jobId === p)?.nodes, ['node01']);
    assert.ok(store.events(x).some(({ event }) => event.type === 'requeued'), 'the victim was requeued');
    // P ends at +185, before its deadline; X restarts on node01 after it (run 1).
    clock.ms = start + 185_000;
    engine.jobReport({ jobId: p, run: 0, state: 'COMPLETED', exitCode: 0, endTimeMs: clock.ms });
    assert.deepEqual(pass(185), [x]);
    assert.equal(agents.orders.filter((o) => o.jobId === x).at(-1)?.run, 1);
    store.close();
  });
});

describe('a guaranteed deadline job\'s time limit', () => {
  it('is not raised by its owner once guaranteed: the guarantee was for the limit it had, and a longer one would preempt other users\' jobs for it', () => {
    const { store, start, clock, agents, engine } = setup('b.db', 1);
    // X: alice's, the node for an hour, checkpoints within 20 s (a deadline's possible victim).
    const [x] = engine.submit([{ user: 'alice', spec: spec('X', { timeLimitSeconds: 3600, checkpoint: { durationSeconds: 20 } }) }]);
    assert.deepEqual(engine.schedule(), [x]);
    // P: carol's, 60 s by +4000 s: after X (+3600 to +3660), guaranteed without preempting anyone.
    const [p] = engine.submit([{ user: 'carol', spec: spec('P', { timeLimitSeconds: 60, deadline: { atMs: start + 4_000_000, policy: 'guarantee' } }) }]);
    engine.schedule();
    assert.equal(engine.plannedStartMs(p), start + 3_600_000);
    // 1000 s would have P start by +3000, before X ends: refused for carol, as raising a running job's limit is.
    assert.throws(() => engine.update(p, { timeLimitSeconds: 1000 }, 'carol', false), (error: Error) =>
      /only an administrator can raise the time limit of a job whose deadline is guaranteed/.test(error.message));
    assert.equal(store.job(p)!.request.timeLimitSeconds, 60);
    engine.update(p, { timeLimitSeconds: 30 }, 'carol', false);
    for (const at of [2000, 2980, 3000]) {
      clock.ms = start + at * 1000;
      engine.heartbeat([...engine.nodes.keys()]);
      engine.checkNodes();
      engine.touch();
      engine.schedule();
    }
    assert.deepEqual(agents.signals.filter((s) => s.jobId === x), [], 'X is not preempted for P');
    store.close();
  });
});
