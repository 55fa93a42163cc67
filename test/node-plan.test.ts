// Plans on nodes: the timeline and planner on their own (against brute
// force), and the guarantees of fcfs, EASY and conservative on mixed node
// pools in randomized runs: shared and whole-node jobs, memory, features,
// two partitions with priorities, early ends and cancellations.
// - conservative: no job starts later than the first start it was promised;
//   every start is on exactly the nodes it was planned on;
// - EASY: no backfilled job delays the head's planned start;
// - all: nodes are never over-committed, and a loss of capacity re-plans
//   with the reason kept.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { levelOf, NodePlan, NodeTimeline, RunFront } from '../src/core/node-plan.js';
import { NodePool, type PoolNode } from '../src/core/placement.js';
import { SeededRandom } from '../src/core/random.js';
import { Scheduler } from '../src/core/scheduler.js';
import { jobId, type JobId, type JobRequest, type ResourceRequest } from '../src/core/types.js';

const node = (name: string, cpus = 8, memoryMiB = 16384, features: string[] = []): PoolNode => ({ name, cpus, memoryMiB, features });
const need = (nodes: number, cpusPerNode: number, extra: Partial<ResourceRequest> = {}): ResourceRequest => ({
  nodes, cpusPerNode, memoryMiBPerNode: 0, features: [], ...extra,
});
const job = (id: number, resources: ResourceRequest, estimate = 100, submitTime = 0, priority = 0): JobRequest => ({
  id: jobId(id), submitTime, size: resources.nodes * resources.cpusPerNode, estimate, user: 1, queue: 0, partition: 0, resources, priority,
});

/** A node's timeline with random holds: up to about `holds` of them, each from 0..lastFrom for 1..30 s (takeMemoryMiB 0: CPUs only). */
function randomTimeline(random: SeededRandom, shape: { cpus: number; memoryMiB: number; holds: number; lastFrom: number; takeCpus: number; takeMemoryMiB: number }): NodeTimeline {
  const line = new NodeTimeline(shape.cpus, shape.memoryMiB, 0);
  for (let h = 0; h < random.int(0, shape.holds); h++) {
    const from = random.int(0, shape.lastFrom);
    line.add(from, from + random.int(1, 30), -random.int(1, shape.takeCpus), shape.takeMemoryMiB === 0 ? 0 : -random.int(0, shape.takeMemoryMiB));
  }
  return line;
}

describe('node timeline', () => {
  it('takes and gives back CPUs and memory over intervals, merging equal steps', () => {
    const line = new NodeTimeline(8, 1000, 0);
    line.add(10, 20, -4, -100);
    line.add(15, 30, -2, 0);
    assert.deepEqual(line.steps(), [[0, 8, 1000], [10, 4, 900], [15, 2, 900], [20, 6, 1000], [30, 8, 1000]]);
    line.add(15, 30, 2, 0);
    assert.deepEqual(line.steps(), [[0, 8, 1000], [10, 4, 900], [20, 8, 1000]]);
    line.add(50, Infinity, -8, -1000);
    assert.deepEqual(line.freeAt(60), { cpus: 0, memoryMiB: 0 });
    line.advance(12);
    assert.deepEqual(line.steps()[0], [12, 4, 900]);
  });

  it('finds the earliest start that fits for a whole duration', () => {
    const line = new NodeTimeline(8, 1000, 0);
    line.add(10, 20, -6, 0); // 2 free on [10, 20)
    line.add(30, 40, -8, 0); // none on [30, 40)
    assert.equal(line.earliestFit(0, 10, 4, 0), 0);
    assert.equal(line.earliestFit(0, 11, 4, 0), 40); // [0, 11) crosses [10, 20), [20, 31) crosses [30, 40)
    assert.equal(line.earliestFit(0, 10, 4, 0), 0);
    assert.equal(line.earliestFit(1, 10, 4, 0), 20);
    assert.equal(line.earliestFit(0, 10, 2, 0), 0);
    assert.equal(line.earliestFit(0, 35, 2, 0), 40); // crosses [30, 40) whatever the start before 40
    assert.equal(line.earliestFit(5, 5, 8, 0), 5);
    assert.equal(line.earliestFit(0, 5, 8, 1001), Infinity);
  });

  it('earliestFit agrees with a second-by-second search on random timelines', () => {
    const random = new SeededRandom(11);
    for (let round = 0; round < 300; round++) {
      const line = randomTimeline(random, { cpus: 8, memoryMiB: 64, holds: 6, lastFrom: 60, takeCpus: 4, takeMemoryMiB: 16 });
      const [cpus, memory, duration, notBefore] = [random.int(1, 8), random.int(0, 64), random.int(1, 40), random.int(0, 50)];
      let expected = Infinity;
      for (let t = notBefore; t <= 200; t++) {
        let ok = true;
        for (let s = t; s < t + duration && ok; s++) {
          const free = line.freeAt(s);
          ok = free.cpus >= cpus && free.memoryMiB >= memory;
        }
        if (ok) {
          expected = t;
          break;
        }
      }
      assert.equal(line.earliestFit(notBefore, duration, cpus, memory), expected, `round ${round}`);
    }
  });

  it('runs of free CPUs: the first run lasting d starts where brute force finds it, per level and in any mix of runs', () => {
    const random = new SeededRandom(12);
    for (let round = 0; round < 200; round++) {
      const line = randomTimeline(random, { cpus: 16, memoryMiB: 64, holds: 8, lastFrom: 80, takeCpus: 16, takeMemoryMiB: 0 });
      const cpus = random.int(1, 16);
      const level = levelOf(cpus);
      assert.ok(2 ** level <= cpus && cpus < 2 ** (level + 1));
      // Brute force: maximal runs of steps with at least 2^level CPUs free.
      const runs: Array<[number, number]> = [];
      let runStart = NaN;
      for (const [time, free] of line.steps()) {
        if (free >= 2 ** level && Number.isNaN(runStart)) runStart = time;
        else if (free < 2 ** level && !Number.isNaN(runStart)) {
          runs.push([runStart, time - runStart]);
          runStart = NaN;
        }
      }
      if (!Number.isNaN(runStart)) runs.push([runStart, Infinity]);
      const mixed = new RunFront();
      for (const [start, length] of [...runs].sort(() => random.int(-1, 1))) mixed.add(start, length);
      for (let d = 1; d <= 120; d++) {
        const expected = Math.min(...runs.filter(([, length]) => length >= d).map(([start]) => start));
        assert.equal(line.front(level).firstLasting(d), expected, `round ${round}, d ${d}`);
        assert.equal(mixed.firstLasting(d), expected, `round ${round}, d ${d}: runs added out of order`);
        // A lower bound on every fit of that many CPUs.
        assert.ok(line.earliestFit(0, d, cpus, 0) >= expected);
      }
    }
  });
});

describe('node plan', () => {
  it('names the nodes of the earliest start, and what holds a job there', () => {
    const plan = new NodePlan([node('n1'), node('n2'), node('n3', 4)], 0);
    plan.hold({ owner: 'job:1', start: 0, end: 50, nodes: ['n1'], cpus: 8, memoryMiB: 0 });
    plan.hold({ owner: 'job:2', start: 0, end: 80, nodes: ['n2'], cpus: 6, memoryMiB: 0 });
    assert.deepEqual(plan.earliest(need(1, 4), 10, 0), { start: 0, nodes: ['n3'] });
    assert.deepEqual(plan.earliest(need(2, 8), 10, 0), { start: 80, nodes: ['n1', 'n2'] }); // n3 has 4 CPUs
    assert.deepEqual(plan.earliest(need(3, 8), 10, 0), undefined); // never three nodes of 8
    assert.deepEqual(plan.earliest(need(2, 4), 100, 0), { start: 50, nodes: ['n1', 'n3'] });
    assert.deepEqual(plan.earliest(need(3, 4), 10, 0), { start: 80, nodes: ['n1', 'n2', 'n3'] });
    assert.deepEqual(plan.holdsEndingAt(['n1', 'n2', 'n3'], 80).map((h) => h.owner), ['job:2']);
    assert.equal(plan.earliest(need(1, 8), 10, 0, 40), undefined); // nothing by 40
    plan.release('job:1');
    assert.deepEqual(plan.earliest(need(1, 8), 10, 0), { start: 0, nodes: ['n1'] });
  });

  it('a plan reset over a changed set of nodes answers as a new plan of those nodes (random holds, nodes leaving and coming)', () => {
    const random = new SeededRandom(11);
    const pool = Array.from({ length: 12 }, (_, i) => node(`n${i + 1}`, [4, 8][i % 2], 16384, i % 3 === 0 ? ['ssd'] : []));
    const holdSome = (plan: NodePlan, nodes: readonly PoolNode[], round: number) => {
      for (let h = 0; h < 8; h++) {
        const start = random.int(0, 50);
        const on = nodes.filter(() => random.int(0, 3) === 0).map((n) => n.name);
        plan.hold({ owner: `job:${round}-${h}`, start, end: start + random.int(1, 60), nodes: on, cpus: random.int(1, 4), memoryMiB: 0 });
      }
    };
    let reused = new NodePlan(pool, 0);
    for (let round = 1; round <= 30; round++) {
      holdSome(reused, pool, round);
      reused.earliest(need(2, 4), 10, 0); // leaves candidates and runs behind, which the reset must forget
      // Some nodes out (drained, down), in pool order as NodePool.countedNodes gives them; a reconfigured node is a new object.
      const counted = pool.filter(() => random.int(0, 4) > 0).map((n) => (random.int(0, 9) === 0 ? { ...n } : n));
      const origin = round * 7;
      reused = reused.reset(counted, origin);
      const fresh = new NodePlan(counted, origin);
      // The same holds on both.
      const again = new SeededRandom(round);
      const holds = Array.from({ length: 6 }, (_, h) => {
        const start = origin + again.int(0, 40);
        return { owner: `job:x${h}`, start, end: start + again.int(1, 50), nodes: counted.filter((_, i) => (i + h) % 3 === 0).map((n) => n.name), cpus: again.int(1, 4), memoryMiB: 0 };
      });
      for (const plan of [reused, fresh]) for (const hold of holds) plan.hold(hold);
      for (const n of pool) assert.equal(reused.has(n.name), fresh.has(n.name), `round ${round}: ${n.name} in the plan`);
      for (const n of counted) assert.deepEqual(reused.timeline(n.name)!.freeAt(origin + 20), fresh.timeline(n.name)!.freeAt(origin + 20), `round ${round}: ${n.name}`);
      for (const request of [need(1, 4), need(2, 8), need(3, 2), need(2, 4, { features: ['ssd'] })]) {
        assert.deepEqual(reused.earliest(request, 15, origin), fresh.earliest(request, 15, origin), `round ${round}: ${JSON.stringify(request)}`);
      }
      const names = counted.map((n) => n.name);
      assert.deepEqual(reused.holdsEndingAt(names, holds[0].end).map((h) => h.owner), fresh.holdsEndingAt(names, holds[0].end).map((h) => h.owner));
    }
  });

  it('whole-node holds (reservations, windows) take every CPU and all memory', () => {
    const plan = new NodePlan([node('n1'), node('n2')], 0);
    plan.hold({ owner: 'maintenance:m', start: 10, end: 20, nodes: ['n1', 'n2'], cpus: 0, memoryMiB: 0, whole: true });
    assert.deepEqual(plan.earliest(need(1, 1), 5, 0), { start: 0, nodes: ['n1'] });
    assert.deepEqual(plan.earliest(need(1, 1), 15, 0), { start: 20, nodes: ['n1'] });
    assert.deepEqual(plan.holdsEndingAt(['n1'], 20).map((h) => h.owner), ['maintenance:m']);
  });

  it('agrees with brute force on random plans (start, and the nodes fit)', () => {
    const random = new SeededRandom(5);
    const nodes = [node('a', 8, 64), node('b', 8, 32, ['x']), node('c', 4, 64, ['x']), node('d', 16, 128)];
    for (let round = 0; round < 200; round++) {
      const plan = new NodePlan(nodes, 0, round % 2 === 0 ? 'first-fit' : 'best-fit');
      for (let h = 0; h < random.int(0, 8); h++) {
        const target = nodes[random.int(0, nodes.length - 1)];
        const from = random.int(0, 60);
        plan.hold({ owner: `h${h}`, start: from, end: from + random.int(1, 40), nodes: [target.name], cpus: random.int(1, target.cpus), memoryMiB: random.int(0, 32) });
      }
      const request = need(random.int(1, 3), random.int(1, 8), { memoryMiBPerNode: random.int(0, 40), features: random.chance(0.3) ? ['x'] : [] });
      const duration = random.int(1, 30);
      const found = plan.earliest(request, duration, 0);
      let expected = Infinity;
      for (let t = 0; t <= 150 && expected === Infinity; t++) {
        const fitting = nodes.filter((n) => plan.fitsOn({ ...request, nodes: 1 }, [n.name], t, duration));
        if (fitting.length >= request.nodes) expected = t;
      }
      assert.equal(found?.start ?? Infinity, expected, `round ${round}`);
      if (found) assert.ok(plan.fitsOn(request, found.nodes, found.start, duration), `round ${round}: the nodes fit`);
    }
  });

  it('tests a job\'s own nodes as if its hold were lifted, as lifting it does (with anyFits for windows before it); a group of nodes never says no where one fits', () => {
    const random = new SeededRandom(6);
    const nodes = [node('a', 8, 64), node('b', 16, 32, ['x']), node('c', 4, 64, ['x']), node('d', 16, 128)];
    for (let round = 0; round < 300; round++) {
      const plan = new NodePlan(nodes, 0);
      for (let h = 0; h < random.int(0, 10); h++) {
        const target = nodes[random.int(0, nodes.length - 1)];
        const from = random.int(0, 60);
        plan.hold({ owner: `h${h}`, start: from, end: from + random.int(1, 40), nodes: [target.name], cpus: random.int(1, target.cpus), memoryMiB: random.int(0, 32) });
      }
      const own = nodes.filter(() => random.chance(0.5)).map((n) => n.name);
      if (own.length === 0) continue;
      const start = random.int(0, 50);
      const cpus = random.int(1, Math.min(...own.map((name) => nodes.find((n) => n.name === name)!.cpus)));
      const ownHold = { owner: 'own', start, end: start + random.int(1, 30), nodes: own, cpus, memoryMiB: random.int(0, 16) };
      if (!own.every((name) => plan.timeline(name)!.fits(ownHold.start, ownHold.end - ownHold.start, ownHold.cpus, ownHold.memoryMiB))) continue;
      plan.hold(ownHold);
      const request = need(1, random.int(1, 16), { memoryMiBPerNode: random.int(0, 40) });
      const [duration, from] = [random.int(1, 30), random.int(0, 40)];
      const latest = from + random.int(0, 60);
      const group = plan.group(nodes.map((n) => n.name));
      const withHold = plan.anyFits(request, group, duration, from, latest);
      if (withHold) assert.ok(group.mayFit(request, duration, latest), `round ${round}: the group says no where a node fits`);
      // Windows that end before the hold are the same with it or without: anyFits answers for those.
      const lifting = plan.anyFits(request, own, duration, from, latest) || plan.anyFitsLifting(request, own, duration, from, latest, ownHold);
      plan.release('own');
      assert.equal(lifting, plan.anyFits(request, own, duration, from, latest), `round ${round}`);
    }
  });
});

/** A mixed pool: two partitions (a: 8 nodes of 8 or 16 CPUs, some with a gpu; b: 4 nodes of 4 CPUs and little memory). */
function mixedPool(strategy: 'first-fit' | 'best-fit' = 'first-fit') {
  const nodes = [
    ...Array.from({ length: 8 }, (_, i) => node(`a${i + 1}`, i < 4 ? 8 : 16, i < 4 ? 16384 : 65536, i % 3 === 0 ? ['gpu'] : [])),
    ...Array.from({ length: 4 }, (_, i) => node(`b${i + 1}`, 4, 4096)),
  ];
  const partitions = { a: new Set(nodes.slice(0, 8).map((n) => n.name)), b: new Set(nodes.slice(8).map((n) => n.name)) };
  return { pool: new NodePool(nodes, strategy), nodes, partitions };
}

function randomJob(random: SeededRandom, id: number, at: number, partitions: Record<'a' | 'b', ReadonlySet<string>>): { request: JobRequest; runtime: number } {
  const inB = random.chance(0.3);
  const wholeNode = random.chance(0.3);
  const resources = inB
    ? need(random.int(1, 3), wholeNode ? 4 : random.int(1, 4), { memoryMiBPerNode: random.chance(0.5) ? random.int(256, 4096) : 0, eligibleNodes: partitions.b })
    : need(random.int(1, 4), wholeNode ? 8 : random.int(1, 8), {
      memoryMiBPerNode: random.chance(0.4) ? random.int(1024, 20000) : 0, features: random.chance(0.2) ? ['gpu'] : [], eligibleNodes: partitions.a,
    });
  const estimate = random.int(10, 400);
  const runtime = random.chance(0.4) ? random.int(1, estimate) : estimate;
  return { request: job(id, resources, estimate, at, inB ? 1 : 0), runtime };
}

interface RunRecord {
  submit: number;
  firstPromise?: number;
  promisedNodes?: readonly string[];
  start?: number;
  nodes?: readonly string[];
}

/**
 * Drives a scheduler through a random workload at integer seconds: arrivals,
 * ends (early or at the estimate), cancellations; one pass with predictions
 * at every instant something happened. Calls `check` after each pass.
 */
function drive(policy: 'fcfs' | 'easy' | 'conservative', seed: number, check: (scheduler: Scheduler, now: number, started: JobRequest[], queueBefore: JobId[]) => void) {
  const random = new SeededRandom(seed);
  const { pool, nodes, partitions } = mixedPool(seed % 2 === 0 ? 'first-fit' : 'best-fit');
  const scheduler = new Scheduler(policy, { processors: pool.totalCpus }, 0, pool);
  const runs = new Map<JobId, RunRecord>();
  const endsAt = new Map<JobId, number>();
  const runtimes = new Map<JobId, number>();
  let nextId = 1;
  for (let now = 0; now < 3000; now++) {
    let happened = false;
    for (const [id, at] of endsAt) {
      if (at === now) {
        scheduler.end(id, now);
        endsAt.delete(id);
        happened = true;
      }
    }
    if (now < 2000 && random.chance(0.08)) {
      for (let k = random.int(1, 3); k > 0; k--) {
        const { request, runtime } = randomJob(random, nextId++, now, partitions);
        if (!pool.couldEverPlace(request.resources!)) continue; // refused at submission in the live system
        scheduler.submit(request);
        runs.set(request.id, { submit: now });
        runtimes.set(request.id, runtime);
      }
      happened = true;
    }
    if (random.chance(0.01)) {
      const queued = scheduler.state.queue;
      if (queued.length > 0) {
        const victim = queued[random.int(0, queued.length - 1)].job.id;
        scheduler.cancel(victim);
        runs.delete(victim);
        happened = true;
      }
    }
    if (!happened) continue;
    const queueBefore = scheduler.state.queue.map((e) => e.job.id);
    const started = scheduler.pass(now, { predictions: true });
    for (const request of started) {
      const run = runs.get(request.id)!;
      run.start = now;
      run.nodes = scheduler.nodesOf(request.id);
      endsAt.set(request.id, now + runtimes.get(request.id)!);
    }
    for (const entry of scheduler.state.queue) {
      const run = runs.get(entry.job.id)!;
      const planned = scheduler.plannedStart(entry.job.id);
      if (run.firstPromise === undefined && planned !== undefined) {
        run.firstPromise = planned;
        run.promisedNodes = scheduler.plannedNodes(entry.job.id);
      }
    }
    for (const request of started) {
      const run = runs.get(request.id)!;
      if (run.firstPromise === undefined) run.firstPromise = now; // started in its first pass
    }
    // Never over-committed: every node's free CPUs and memory stay within [0, total].
    for (const n of nodes) {
      const free = pool.free(n.name);
      assert.ok(free.cpus >= 0 && free.cpus <= n.cpus && free.memoryMiB >= 0, `${policy} seed ${seed}: node ${n.name} over-committed at ${now}`);
    }
    check(scheduler, now, started, queueBefore);
  }
  return runs;
}

describe('scheduling on node plans (randomized)', () => {
  it('conservative: no job starts later than its first promise, and every planned start names nodes', () => {
    for (const seed of [1, 2, 3, 4, 5, 6]) {
      let lastPlanned = new Map<JobId, { start: number; nodes: readonly string[] }>();
      const runs = drive('conservative', seed, (scheduler, now, started) => {
        for (const request of started) {
          // Started at its planned time: exactly on the nodes it was planned on.
          const before = lastPlanned.get(request.id);
          if (before !== undefined && before.start === now) {
            assert.deepEqual(scheduler.nodesOf(request.id), before.nodes, `seed ${seed}: job ${request.id} started on other nodes than planned`);
          }
        }
        lastPlanned = new Map();
        for (const entry of scheduler.state.queue) {
          const start = scheduler.plannedStart(entry.job.id);
          assert.notEqual(start, undefined, `seed ${seed}: job ${entry.job.id} has no plan (every node counts)`);
          const nodes = scheduler.plannedNodes(entry.job.id)!;
          assert.equal(nodes.length, entry.job.resources!.nodes);
          lastPlanned.set(entry.job.id, { start: start!, nodes });
        }
      });
      let startedCount = 0;
      for (const [id, run] of runs) {
        if (run.start === undefined) continue;
        startedCount++;
        assert.ok(run.start <= run.firstPromise!, `seed ${seed}: job ${id} started at ${run.start}, promised ${run.firstPromise}`);
      }
      assert.ok(startedCount > 100, `seed ${seed}: only ${startedCount} jobs started`);
    }
  });

  it('EASY: a backfilled job never delays the head\'s planned start', () => {
    for (const seed of [1, 2, 3, 4]) {
      let backfills = 0;
      drive('easy', seed, (scheduler, now, started, queueBefore) => {
        const startedIds = new Set(started.map((r) => r.id));
        const headIndex = queueBefore.findIndex((id) => !startedIds.has(id));
        if (headIndex < 0) return;
        const head = queueBefore[headIndex];
        const backfilled = new Set(queueBefore.slice(headIndex + 1).filter((id) => startedIds.has(id)));
        if (backfilled.size === 0) return;
        backfills += backfilled.size;
        // The head's earliest start with only the jobs that started ahead of it.
        const pool = scheduler.state.pool!;
        const plan = new NodePlan(pool.countedNodes(), now);
        for (const run of scheduler.state.running) {
          if (backfilled.has(run.job.id)) continue;
          const r = run.job.resources!;
          plan.hold({ owner: `job:${run.job.id}`, start: run.start, end: Math.max(run.start + run.job.estimate, now + 1), nodes: run.nodes, cpus: r.cpusPerNode, memoryMiB: r.memoryMiBPerNode });
        }
        const entry = scheduler.state.getQueued(head)!;
        const without = plan.earliest(entry.job.resources!, entry.job.estimate, now);
        const planned = scheduler.plannedStart(head);
        assert.ok(without !== undefined && planned !== undefined);
        assert.ok(planned <= without.start, `seed ${seed} at ${now}: the head ${head} planned at ${planned}, ${without.start} without the backfills`);
      });
      assert.ok(backfills > 20, `seed ${seed}: only ${backfills} backfills: the test checks little`);
    }
  });

  it('easy and fcfs: the planned starts (kept between passes while only arrivals come) equal a projection made from scratch', () => {
    for (const policy of ['easy', 'fcfs'] as const) {
      let checked = 0;
      drive(policy, 21, (scheduler, now) => {
        const pool = scheduler.state.pool!;
        const plan = new NodePlan(pool.countedNodes(), now, pool.strategy);
        for (const run of scheduler.state.running) {
          const r = run.job.resources!;
          plan.hold({ owner: `job:${run.job.id}`, start: run.start, end: Math.max(run.start + run.job.estimate, now + 1), nodes: run.nodes, cpus: r.cpusPerNode, memoryMiB: r.memoryMiBPerNode });
        }
        let notBefore = now;
        for (const entry of scheduler.state.queue) {
          const slot = plan.earliest(entry.job.resources!, entry.job.estimate, notBefore);
          assert.equal(scheduler.plannedStart(entry.job.id), slot?.start, `${policy} at ${now}: job ${entry.job.id}`);
          if (slot === undefined) break;
          plan.hold({ owner: `job:${entry.job.id}`, start: slot.start, end: slot.start + entry.job.estimate, nodes: slot.nodes, cpus: entry.job.resources!.cpusPerNode, memoryMiB: entry.job.resources!.memoryMiBPerNode });
          if (policy === 'fcfs') notBefore = slot.start;
          checked++;
        }
      });
      assert.ok(checked > 1000, `${policy}: only ${checked} planned starts checked`);
    }
  });

  it('fcfs: jobs start in queue order (within a priority), never before the one ahead', () => {
    drive('fcfs', 9, (scheduler, now) => {
      let previous = -Infinity;
      for (const entry of scheduler.state.queue) {
        const start = scheduler.plannedStart(entry.job.id);
        if (start === undefined) break;
        assert.ok(start >= previous, `at ${now}: job ${entry.job.id} planned before the job ahead of it`);
        previous = start;
      }
    });
  });

  it('conservative: a drained node re-plans the jobs planned on it, later, with the reason', () => {
    const pool = new NodePool([node('n1'), node('n2')]);
    const scheduler = new Scheduler('conservative', { processors: 16 }, 0, pool);
    scheduler.submit(job(1, need(1, 8), 100));
    scheduler.submit(job(2, need(1, 8), 100));
    scheduler.submit(job(3, need(1, 8), 50));
    scheduler.pass(0, { predictions: true });
    assert.equal(scheduler.plannedStart(jobId(3)), 100);
    assert.deepEqual(scheduler.heldBy(jobId(3)).map((h) => h.owner), ['job:1']);
    pool.setAccepting('n1', false); // drained: job 1 keeps running, n1 takes nothing new
    scheduler.pass(1, { predictions: true });
    assert.equal(scheduler.plannedStart(jobId(3)), 100);
    assert.deepEqual(scheduler.plannedNodes(jobId(3)), ['n2']);
    assert.equal(scheduler.movedBecause(jobId(3)), undefined, 'n2 frees at 100 as well: same start, no move');
    scheduler.submit(job(4, need(1, 8), 10));
    scheduler.pass(2, { predictions: true });
    assert.equal(scheduler.plannedStart(jobId(4)), 150);
  });

  it('advance reservations: jobs in one use its nodes within its time; others plan around it', () => {
    const pool = new NodePool([node('n1'), node('n2')]);
    const scheduler = new Scheduler('conservative', { processors: 16 }, 0, pool);
    scheduler.setExternalHolds([{ owner: 'reservation:r', start: 100, end: 300, nodes: ['n1'], cpus: 0, memoryMiB: 0, whole: true }]);
    const window = { owner: 'reservation:r', start: 100, end: 300 };
    scheduler.submit({ ...job(1, need(1, 4), 150), window });
    scheduler.submit({ ...job(2, need(1, 4), 100), window });
    scheduler.submit(job(3, need(1, 8), 150)); // would cross the reservation on n1
    scheduler.submit(job(4, need(1, 8), 90)); // ends on n1 before it begins
    scheduler.submit({ ...job(5, need(1, 4), 250), window }); // longer than what is left of it once 1 and 2 hold it
    assert.deepEqual(scheduler.pass(0, { predictions: true }).map((j) => j.id), [3, 4]);
    assert.deepEqual(scheduler.nodesOf(jobId(3)), ['n2']);
    assert.deepEqual(scheduler.nodesOf(jobId(4)), ['n1']);
    assert.equal(scheduler.plannedStart(jobId(1)), 100);
    assert.deepEqual(scheduler.plannedNodes(jobId(1)), ['n1']);
    assert.equal(scheduler.plannedStart(jobId(2)), 100, 'the other half of n1 in the reservation');
    assert.equal(scheduler.plannedStart(jobId(5)), undefined, 'cannot end by the end of the reservation');
    scheduler.end(jobId(4), 90);
    assert.deepEqual(scheduler.pass(100).map((j) => j.id), [1, 2]);
  });

  it('conservative: a job that moved in a compression is a gain: the next pass compresses again (as the spec compresses at every pass)', () => {
    // B (2 nodes) is compressed first to the end of A's old slot; A then moves earlier and starts. B could now
    // start when A ends (70), though nothing ends early again: without compressing at the next pass it stayed
    // at 90, an instant at which no pass need happen (trace replay then never started it).
    const pool = new NodePool([node('n1'), node('n2')]);
    const onNodes = new Scheduler('conservative', { processors: 16 }, 0, pool);
    const onProcessors = new Scheduler('conservative', { processors: 16 }, 0);
    const jobs = [job(1, need(1, 8), 100), job(2, need(1, 8), 30), job(3, need(2, 8), 50), job(4, need(1, 8), 60)];
    for (const scheduler of [onNodes, onProcessors]) {
      for (const request of jobs) scheduler.submit(request);
      scheduler.pass(0, { predictions: true });
      assert.equal(scheduler.plannedStart(jobId(3)), 100);
      assert.equal(scheduler.plannedStart(jobId(4)), 30);
      scheduler.end(jobId(1), 10); // early
      assert.deepEqual(scheduler.pass(10, { predictions: true }).map((r) => r.id), [4]);
      assert.equal(scheduler.plannedStart(jobId(3)), 90);
      scheduler.end(jobId(2), 30); // at its predicted end
      scheduler.pass(30, { predictions: true });
      assert.equal(scheduler.plannedStart(jobId(3)), 70);
      scheduler.end(jobId(4), 70);
      assert.deepEqual(scheduler.pass(70, { predictions: true }).map((r) => r.id), [3]);
    }
  });

  it('windows: a maintenance hold moves every plan and no job runs into it', () => {
    const pool = new NodePool([node('n1'), node('n2')]);
    const scheduler = new Scheduler('conservative', { processors: 16 }, 0, pool);
    scheduler.submit(job(1, need(1, 8), 100));
    scheduler.submit(job(2, need(2, 8), 60));
    scheduler.pass(0, { predictions: true });
    assert.equal(scheduler.plannedStart(jobId(2)), 100);
    scheduler.setExternalHolds([{ owner: 'maintenance:m', start: 120, end: 200, nodes: ['n1', 'n2'], cpus: 0, memoryMiB: 0, whole: true }]);
    scheduler.submit(job(3, need(1, 8), 30));
    scheduler.pass(1, { predictions: true });
    assert.equal(scheduler.plannedStart(jobId(2)), 200, 'would run into the window from 100');
    assert.equal(scheduler.movedBecause(jobId(2)), 'capacity');
    assert.deepEqual(scheduler.heldBy(jobId(2)).map((h) => h.owner), ['maintenance:m']);
    assert.equal(scheduler.plannedStart(jobId(3)), 1, 'short enough to end before the window');
  });
});

describe('conservative on nodes when a job overruns its planned end', () => {
  it('a job killed a moment after its limit delays only the jobs waiting for its nodes, by no more than that', () => {
    // n1 has feature x. A (x) runs on n1 until 10, B on n2 until 20. J3 needs both nodes (planned at 20),
    // J4 needs x (planned at 10 on n1). B ends early; A ends a second late (killed at its limit).
    const pool = new NodePool([node('n1', 8, 16384, ['x']), node('n2')]);
    const scheduler = new Scheduler('conservative', { processors: 16 }, 0, pool);
    scheduler.submit(job(1, need(1, 8, { features: ['x'] }), 10));
    scheduler.submit(job(2, need(1, 8), 20));
    assert.deepEqual(scheduler.pass(0, { predictions: true }).map((j) => j.id), [1, 2]);
    scheduler.submit(job(3, need(2, 8), 10));
    scheduler.submit(job(4, need(1, 8, { features: ['x'] }), 10));
    scheduler.pass(0, { predictions: true });
    assert.equal(scheduler.plannedStart(jobId(3)), 20);
    assert.equal(scheduler.plannedStart(jobId(4)), 10);
    scheduler.end(jobId(2), 5);
    scheduler.pass(5, { predictions: true });
    assert.deepEqual(scheduler.pass(10, { predictions: true }), [], 'A still holds n1');
    assert.equal(scheduler.plannedStart(jobId(4)), 10, 'J4 keeps its place and nodes');
    assert.deepEqual(scheduler.plannedNodes(jobId(4)), ['n1']);
    scheduler.end(jobId(1), 11);
    assert.deepEqual(scheduler.pass(11, { predictions: true }).map((j) => j.id), [4], 'J4 starts a second late, not J3 ahead of it');
    assert.equal(scheduler.movedBecause(jobId(3)), undefined);
    scheduler.end(jobId(4), 21);
    assert.deepEqual(scheduler.pass(21, { predictions: true }).map((j) => j.id), [3], 'J3 a second late too, no more');
  });
});
