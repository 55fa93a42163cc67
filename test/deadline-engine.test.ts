// Priority jobs in the controller engine (real store, real core, agents
// answered in-process): the admission before the commit, the guarantee kept
// in the stored request across a restart, and the moment a guaranteed job
// needs nodes it cannot get (deadlineNeedsNodes) or, with policy cancel,
// ends DEADLINE.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { defaultClusterConfig, type ClusterConfig } from '../src/config/cluster.js';
import { admissionWarning, ControllerEngine, SubmitRefused, type AgentLink, type JobReport } from '../src/controller/engine.js';
import { apiJob, apiWhen } from '../src/controller/views.js';
import type { JobSpec } from '../src/jobspec/types.js';
import { openStore } from '../src/store/store.js';

const work = mkdtempSync(join(tmpdir(), 'taras-deadline-engine-'));
after(() => rmSync(work, { recursive: true, force: true }));
let files = 0;

const NOW = Date.UTC(2026, 10, 22, 12, 0, 0);
/** A whole-node job of `limit` seconds on the one 8-CPU node, with a deadline `dueIn` seconds from NOW if given. */
const spec = (limit: number, dueIn?: number, policy: 'guarantee' | 'cancel' = 'guarantee'): JobSpec => ({
  script: { path: '/tmp/job.sh', text: '#!/bin/sh\necho hi\n', args: [] },
  nodes: { min: 1 }, cpusPerTask: 8, timeLimitSeconds: limit, name: 'job', workingDir: '/tmp', output: 'taras-%j.out',
  export: { all: true, variables: [] }, requeue: false, ...(dueIn === undefined ? {} : { deadline: { atMs: NOW + dueIn * 1000, policy } }),
});

const agents: AgentLink = { start: async () => {}, signal: async () => {} };

function setup(path = join(work, `store-${++files}.db`), running: JobReport[] = [], startMs = NOW) {
  const config: ClusterConfig = { ...defaultClusterConfig(work, { count: 1, cpus: 8 }), policy: 'easy' };
  const store = openStore(path);
  const clock = { ms: startMs };
  const log: string[] = [];
  const engine = new ControllerEngine(config, store, agents, () => clock.ms, (line) => log.push(line));
  engine.agentRegistered([...engine.nodes.keys()], running);
  return { path, store, clock, log, engine, config };
}

describe('deadlines in the controller engine', () => {
  it('a batch is checked job by job with the jobs before it: the second of two equal deadlines gets no guarantee and its shortfall', () => {
    const { path, store, engine } = setup();
    const [running] = engine.submit([{ user: 'alice', spec: spec(600) }]);
    assert.deepEqual(engine.schedule(), [running]);
    const [first, second] = engine.submit([{ user: 'bob', spec: spec(300, 1000) }, { user: 'bob', spec: spec(300, 1000) }]);
    assert.deepEqual(engine.takeAdmission(first), { guaranteed: true, plannedEndMs: NOW + 900_000, shortfallSeconds: 0, warning: null });
    const short = engine.takeAdmission(second)!;
    assert.equal(short.guaranteed, false);
    assert.equal(short.shortfallSeconds, 200);
    assert.match(short.warning!, /cannot be guaranteed \(guaranteed jobs with earlier deadlines come first\): it would end 200 s after it/);
    assert.equal((store.job(first)!.request as { deadlineGuaranteed?: boolean }).deadlineGuaranteed, true);
    assert.equal((store.job(second)!.request as { deadlineGuaranteed?: boolean }).deadlineGuaranteed, false);
    assert.deepEqual([apiJob(engine, store.job(first)!).type, apiJob(engine, store.job(running)!).type], ['priority', 'normal']);
    // The warning is kept with the job (a retried submission is told it again), and a restart recovers the job as it was.
    assert.deepEqual([admissionWarning(store.job(first)!), admissionWarning(store.job(second)!)], [null, short.warning]);
    store.close();
    const again = setup(path);
    assert.deepEqual([again.engine.active.get(second)?.state, admissionWarning(again.store.job(second)!)], ['PENDING', short.warning]);
    assert.deepEqual(again.log.filter((line) => /fail/i.test(line)), []);
    again.store.close();
  });

  it('refuses a deadline no plan can meet, and with policy cancel one the plan cannot; nothing is stored', () => {
    const { store, engine } = setup();
    const [running] = engine.submit([{ user: 'alice', spec: spec(600) }]);
    engine.schedule();
    assert.throws(() => engine.submit([{ user: 'bob', spec: spec(600, 100) }]), (e: unknown) => e instanceof SubmitRefused
      && /the deadline 2026-11-22T12:01:40.000Z can never be met: with a time limit of 600 s the job could end at 2026-11-22T12:10:00.000Z at the earliest/.test(e.message));
    assert.throws(() => engine.submit([{ user: 'bob', spec: spec(300, 800, 'cancel') }]), /cannot be met .*it would end 100 s after it.*--deadline-policy cancel the job is refused/);
    assert.deepEqual(store.jobs().map((job) => job.id), [running]);
  });

  it('--test-only refuses the deadlines a submission refuses, in the same words, storing nothing', () => {
    const { store, engine } = setup();
    const [running] = engine.submit([{ user: 'alice', spec: spec(600) }]);
    engine.schedule();
    const [normal] = engine.submit([{ user: 'carol', spec: spec(300) }]);
    const refusalOf = (attempt: () => unknown): string => {
      try {
        attempt();
      } catch (error) {
        assert.ok(error instanceof SubmitRefused, String(error));
        return error.message;
      }
      return assert.fail('accepted');
    };
    // Before, --test-only answered a start for both (it never checked the deadline).
    for (const refused of [spec(600, 100), spec(300, 800, 'cancel')]) {
      const words = refusalOf(() => engine.testOnly(refused, { user: 'bob' }));
      assert.equal(words, refusalOf(() => engine.submit([{ user: 'bob', spec: refused }])));
      assert.match(words, /^the deadline 2026-11-22T12:\d\d:\d\d\.000Z (can never be met|cannot be met)/);
    }
    assert.deepEqual(store.jobs().map((job) => job.id), [running, normal]);
    // A deadline it can meet is answered with a start, as before.
    assert.deepEqual(engine.testOnly(spec(300, 1000), { user: 'bob' }).partition, 'batch');
    assert.deepEqual(store.jobs().map((job) => job.id), [running, normal]);
  });

  it('keeps the guarantee across a restart; at its latest start with its node still busy no job may be preempted for it (logged once); policy cancel ends DEADLINE', () => {
    const first = setup();
    const [running] = first.engine.submit([{ user: 'alice', spec: spec(600) }]);
    first.engine.schedule();
    const [guaranteed] = first.engine.submit([{ user: 'bob', spec: spec(300, 1000) }]);
    first.store.close();

    // The controller comes back 10 s later.
    const { store, clock, log, engine } = setup(first.path, [{ jobId: running, run: 0, state: 'RUNNING', exitCode: null, endTimeMs: null }], NOW + 10_000);
    engine.schedule();
    assert.equal(store.job(guaranteed)!.state, 'PENDING', 'its stored request passes the schema at recovery');
    assert.equal(apiJob(engine, store.job(guaranteed)!).guaranteed, true);
    assert.match(apiWhen(engine, store.job(guaranteed)!).deadline!.text, /^guaranteed to end by 2026-11-22T12:16:40.000Z$/);
    const [cancelling] = engine.submit([{ user: 'carol', spec: spec(100, 1200, 'cancel') }]);
    // The running job overruns its limit (no end report): at 700 s the guaranteed job had to start.
    clock.ms = NOW + 700_000;
    engine.touch();
    engine.schedule();
    // alice's job neither checkpoints nor may be requeued: it is no victim, and the log says so (once).
    assert.deepEqual(log.filter((line) => /to meet its deadline/.test(line)), [`job ${guaranteed}: must start by 2026-11-22T12:11:40.000Z to meet its deadline: no running job can be preempted to free the nodes it needs (the jobs holding them are interactive, priority, or neither checkpoint nor may be requeued; or nodes are lost)`]);
    assert.ok(log.some((line) => line.startsWith(`job ${guaranteed}: its deadline 2026-11-22T12:16:40.000Z can no longer be guaranteed (the controller was down`)), log.join('\n'));
    clock.ms = NOW + 1100_000;
    engine.touch();
    engine.schedule();
    assert.equal(log.filter((line) => /to meet its deadline/.test(line)).length, 1, 'once per job');
    const ended = store.job(cancelling)!;
    assert.equal(ended.state, 'DEADLINE');
    assert.match(ended.reason!, /^DeadLine: it could no longer end by its deadline 2026-11-22T12:20:00.000Z \(plan changed: running jobs past their time limit/);
    assert.deepEqual(store.events(cancelling).map((e) => e.event.type), ['submitted', 'deadline', 'ended']);
  });
});
