// An update of a pending job whose deadline is guaranteed (scontrol update /
// taras update: a new partition, an administrator's longer time limit) in the
// controller engine (real store, real core, agents answered in-process): the
// deadline is checked again as at acceptance, without the job's old self; kept,
// the job stays guaranteed, across a restart too; else the update is refused
// and nothing is stored. Jobs without a guarantee move as before.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { defaultClusterConfig, type ClusterConfig } from '../src/config/cluster.js';
import { ControllerEngine, deadlineGuaranteed, SubmitRefused, type AgentLink, type JobReport } from '../src/controller/engine.js';
import { apiJob } from '../src/controller/views.js';
import type { JobId } from '../src/core/types.js';
import type { JobSpec } from '../src/jobspec/types.js';
import { openStore } from '../src/store/store.js';

const work = mkdtempSync(join(tmpdir(), 'taras-deadline-update-'));
after(() => rmSync(work, { recursive: true, force: true }));
let files = 0;

const NOW = Date.UTC(2026, 10, 22, 12, 0, 0);
/** A whole-node job of `limit` seconds in `partition`, with a deadline `dueIn` seconds from NOW if given. */
const spec = (limit: number, partition: string, dueIn?: number): JobSpec => ({
  script: { path: '/tmp/job.sh', text: '#!/bin/sh\necho hi\n', args: [] },
  nodes: { min: 1 }, cpusPerTask: 8, timeLimitSeconds: limit, name: 'job', workingDir: '/tmp', output: 'taras-%j.out', partition,
  export: { all: true, variables: [] }, requeue: false, ...(dueIn === undefined ? {} : { deadline: { atMs: NOW + dueIn * 1000, policy: 'guarantee' as const } }),
});

const agents: AgentLink = { start: async () => {}, signal: async () => {} };

/** Four 8-CPU nodes (policy easy unless given), one partition each: fast (node01, the default), slow (node02), spare (node03), one (node04). */
function setup(path = join(work, `store-${++files}.db`), running: JobReport[] = [], startMs = NOW, policy: ClusterConfig['policy'] = 'easy') {
  const base = defaultClusterConfig(work, { count: 4, cpus: 8 });
  const partition = (name: string, node: string, isDefault = false) => ({ name, nodes: [node], isDefault, maxTimeSeconds: null, maxNodes: null, priority: 1 });
  const config: ClusterConfig = {
    ...base, policy, defaultPartition: 'fast',
    partitions: [partition('fast', 'node01', true), partition('slow', 'node02'), partition('spare', 'node03'), partition('one', 'node04')],
  };
  const store = openStore(path);
  const clock = { ms: startMs };
  const log: string[] = [];
  const engine = new ControllerEngine(config, store, agents, () => clock.ms, (line) => log.push(line));
  engine.agentRegistered([...engine.nodes.keys()], running);
  return { path, store, clock, log, engine };
}

/** The message of the SubmitRefused `act` throws. */
function refusal(act: () => unknown): string {
  try {
    act();
  } catch (error) {
    assert.ok(error instanceof SubmitRefused, String(error));
    return error.message;
  }
  assert.fail('not refused');
}

const guaranteedOf = (engine: ControllerEngine, id: JobId) => deadlineGuaranteed(engine.active.get(id)!);

describe('updating a pending job whose deadline is guaranteed', () => {
  for (const policy of ['fcfs', 'easy', 'conservative'] as const) {
    it(`${policy}: a move to a partition where its deadline cannot be met is refused with the reason and the way out; nothing is stored`, () => {
      const { store, engine } = setup(undefined, [], NOW, policy);
      // alice holds node02 (partition slow) until +600 s.
      const [busy] = engine.submit([{ user: 'alice', spec: spec(600, 'slow') }]);
      assert.deepEqual(engine.schedule(), [busy]);
      // bob's job: 300 s by +500 s, on node01 at once: guaranteed.
      const [job] = engine.submit([{ user: 'bob', spec: spec(300, 'fast', 500) }]);
      assert.equal(engine.takeAdmission(job)?.guaranteed, true);
      const events = store.events(job).length;

      // In slow it could start at +600 only: it would end at +900, 400 s after its deadline.
      assert.equal(refusal(() => engine.update(job, { partition: 'slow' }, 'bob', false)),
        `job ${job} cannot move to partition slow and keep its deadline guaranteed: the deadline 2026-11-22T12:08:20.000Z cannot be guaranteed `
        + '(the nodes it needs are taken until then): it would end 400 s after it (planned end 2026-11-22T12:15:00.000Z); keep its partition (fast), '
        + `or cancel it (taras cancel ${job}) and submit it again without --deadline or with a later one`);
      // An administrator is refused the same; and with a longer limit too, which no plan could meet.
      assert.match(refusal(() => engine.update(job, { partition: 'slow' }, 'root', true)), new RegExp(`^job ${job} cannot move to partition slow and keep`));
      assert.equal(refusal(() => engine.update(job, { partition: 'spare', timeLimitSeconds: 600 }, 'root', true)),
        `job ${job} cannot move to partition spare and take a time limit of 600 s and keep its deadline guaranteed: the deadline 2026-11-22T12:08:20.000Z `
        + 'can never be met: with a time limit of 600 s the job could end at 2026-11-22T12:10:00.000Z at the earliest, even on an idle cluster; '
        + `keep its partition (fast) and its time limit (300 s), or cancel it (taras cancel ${job}) and submit it again without --deadline or with a later one`);
      // Nothing stored, nothing changed: the record, the store, the plan.
      for (const record of [store.job(job)!, engine.active.get(job)!]) {
        assert.deepEqual([record.partition, record.request.partition, record.request.timeLimitSeconds, deadlineGuaranteed(record)], ['fast', 'fast', 300, true]);
      }
      assert.equal(store.events(job).length, events, 'no new event');
      assert.deepEqual(store.events(job).map((e) => e.event.type), ['submitted']);
      assert.equal(engine.plannedStartMs(job), NOW);
      assert.deepEqual(engine.schedule(), [job]);
      store.close();
    });

    it(`${policy}: a move to a partition where it can be met, or an administrator's longer limit, is kept guaranteed, also after a restart; its old self does not compete with it`, () => {
      const first = setup(undefined, [], NOW, policy);
      const [busy] = first.engine.submit([{ user: 'alice', spec: spec(600, 'slow') }]);
      assert.deepEqual(first.engine.schedule(), [busy]);
      const [job] = first.engine.submit([{ user: 'bob', spec: spec(300, 'fast', 500) }]);
      // 450 s on node01 still ends by +500 (its old self, planned there until +300, is not in its way).
      first.engine.update(job, { timeLimitSeconds: 450 }, 'root', true);
      // In spare node03 is idle: it starts at once there.
      const moved = first.engine.update(job, { partition: 'spare' }, 'bob', false);
      assert.deepEqual([moved.partition, moved.request.timeLimitSeconds, deadlineGuaranteed(moved)], ['spare', 450, true]);
      assert.deepEqual(first.store.events(job).map((e) => e.event), [
        first.store.events(job)[0].event,
        { type: 'updated', changes: { timeLimitSeconds: 450 }, by: 'admin' },
        { type: 'updated', changes: { partition: 'spare' }, by: 'user' },
      ]);
      assert.deepEqual(first.log.filter((line) => line.startsWith(`job ${job} updated`)), [
        `job ${job} updated by root: timeLimitSeconds=450 (its deadline checked again: still guaranteed, planned end 2026-11-22T12:07:30.000Z)`,
        `job ${job} updated by bob: partition=spare (its deadline checked again: still guaranteed, planned end 2026-11-22T12:07:30.000Z)`,
      ]);
      assert.deepEqual([apiJob(first.engine, first.store.job(job)!).guaranteed, apiJob(first.engine, first.store.job(job)!).partition], [true, 'spare']);
      assert.equal(first.engine.plannedStartMs(job), NOW);
      first.store.close();

      // The controller comes back 10 s later: the job is guaranteed in its new partition, and starts there.
      const { store, log, engine } = setup(first.path, [{ jobId: busy, run: 0, state: 'RUNNING', exitCode: null, endTimeMs: null }], NOW + 10_000, policy);
      assert.deepEqual(log.filter((line) => /fail/i.test(line)), []);
      const recovered = engine.active.get(job)!;
      assert.deepEqual([recovered.state, recovered.partition, recovered.request.timeLimitSeconds, deadlineGuaranteed(recovered)], ['PENDING', 'spare', 450, true]);
      assert.equal(apiJob(engine, recovered).guaranteed, true);
      assert.deepEqual(engine.schedule(), [job]);
      assert.deepEqual(engine.active.get(job)!.nodes, ['node03']);
      store.close();
    });
  }

  it('a job kept guaranteed by an update is tracked from then on as one just accepted: a later loss is logged again, with the nodes lost since', () => {
    const { log, engine, store } = setup();
    const [job] = engine.submit([{ user: 'bob', spec: spec(300, 'fast', 500) }]);
    const lost = () => log.filter((line) => line.startsWith(`job ${job}: its deadline`));
    // node01 is drained before it starts: its guarantee is lost, logged once.
    engine.drain(['node01'], 'memory test');
    engine.schedule();
    assert.deepEqual(lost(), [`job ${job}: its deadline 2026-11-22T12:08:20.000Z can no longer be guaranteed (nodes lost: 1 of the nodes that counted when it was accepted are down or drained)`]);
    // Moved to spare (node03, idle), it is guaranteed again; then node03 is drained too.
    engine.update(job, { partition: 'spare' }, 'bob', false);
    engine.drain(['node03'], 'memory test');
    engine.schedule();
    assert.equal(lost().length, 2, lost().join('\n'));
    assert.equal(lost()[1], `job ${job}: its deadline 2026-11-22T12:08:20.000Z can no longer be guaranteed (nodes lost: 1 of the nodes that counted when it was accepted are down or drained)`);
    store.close();
  });

  it('jobs moved together are checked each with the ones moved before it: two guarantees never share one node\'s time', () => {
    const { store, engine } = setup();
    // Two of bob's jobs, 300 s by +500 s each, on node01 and node03: both guaranteed.
    const [a] = engine.submit([{ user: 'bob', spec: spec(300, 'fast', 500) }]);
    const [b] = engine.submit([{ user: 'bob', spec: spec(300, 'spare', 500) }]);
    assert.deepEqual([guaranteedOf(engine, a), guaranteedOf(engine, b)], [true, true]);
    // Both to node04: the first ends at +300, the second could only end at +600.
    const [moved, refused] = engine.updateMany([a, b], { partition: 'one' }, 'bob', false);
    assert.ok(!(moved instanceof SubmitRefused));
    assert.deepEqual([moved.partition, deadlineGuaranteed(moved)], ['one', true]);
    assert.ok(refused instanceof SubmitRefused);
    assert.equal(refused.message, `job ${b} cannot move to partition one and keep its deadline guaranteed: the deadline 2026-11-22T12:08:20.000Z cannot be guaranteed `
      + '(guaranteed jobs with earlier deadlines come first): it would end 100 s after it (planned end 2026-11-22T12:10:00.000Z); keep its partition (spare), '
      + `or cancel it (taras cancel ${b}) and submit it again without --deadline or with a later one`);
    assert.deepEqual([store.job(b)!.partition, deadlineGuaranteed(store.job(b)!), store.events(b).length], ['spare', true, 1]);
    assert.deepEqual(engine.schedule().sort((x, y) => x - y), [a, b]);
    assert.deepEqual([engine.active.get(a)!.nodes, engine.active.get(b)!.nodes], [['node04'], ['node03']]);
    store.close();
  });

  it('a rename or a lower limit is not checked again; a deadline job without a guarantee and a normal job move as before', () => {
    const { store, log, engine } = setup();
    const [busy] = engine.submit([{ user: 'alice', spec: spec(600, 'slow') }]);
    assert.deepEqual(engine.schedule(), [busy]);
    const [job] = engine.submit([{ user: 'bob', spec: spec(300, 'fast', 500) }]);
    engine.update(job, { name: 'renamed' }, 'bob', false);
    engine.update(job, { timeLimitSeconds: 200 }, 'bob', false);
    assert.deepEqual([store.job(job)!.name, store.job(job)!.request.timeLimitSeconds, guaranteedOf(engine, job)], ['renamed', 200, true]);
    assert.deepEqual(log.filter((line) => line.includes('checked again')), []);

    // carol's deadline cannot be met in slow (node02 busy until +600): accepted without a guarantee, with a warning.
    const [loose] = engine.submit([{ user: 'carol', spec: spec(300, 'slow', 500) }]);
    assert.equal(engine.takeAdmission(loose)?.guaranteed, false);
    assert.equal(guaranteedOf(engine, loose), false);
    const [plain] = engine.submit([{ user: 'dave', spec: spec(300, 'spare') }]);
    // Both move where they like, busy or not; neither gains or loses anything.
    for (const partition of ['spare', 'slow', 'one']) {
      assert.equal(engine.update(loose, { partition, timeLimitSeconds: 400 + partition.length }, 'root', true).partition, partition);
      assert.equal(engine.update(plain, { partition }, 'dave', false).partition, partition);
    }
    assert.deepEqual([store.job(loose)!.partition, store.job(loose)!.request.timeLimitSeconds, deadlineGuaranteed(store.job(loose)!)], ['one', 403, false]);
    assert.deepEqual([store.job(plain)!.partition, deadlineGuaranteed(store.job(plain)!)], ['one', null]);
    assert.equal(store.events(loose).filter((e) => e.event.type === 'updated').length, 3);
    store.close();
  });
});
