// Placement on concrete nodes, on its own and inside the scheduler: the core
// picks nodes (first-fit, best-fit, least-loaded), respects features, memory
// and partitions, and a job whose processors are free but which fits on no
// set of nodes does not start. Plans count only nodes that take jobs: a down
// or drained node's CPUs are in no planned start until it is back.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NodePool, type PoolNode } from '../src/core/placement.js';
import { Scheduler, type PolicyName } from '../src/core/scheduler.js';
import { SeededRandom } from '../src/core/random.js';
import { jobId, type JobRequest, type ResourceRequest } from '../src/core/types.js';

const node = (name: string, cpus = 8, memoryMiB = 16384, features: string[] = []): PoolNode => ({ name, cpus, memoryMiB, features });
const need = (nodes: number, cpusPerNode: number, extra: Partial<ResourceRequest> = {}): ResourceRequest => ({
  nodes, cpusPerNode, memoryMiBPerNode: 0, features: [], ...extra,
});
const job = (id: number, resources: ResourceRequest, estimate = 100, submitTime = 0): JobRequest => ({
  id: jobId(id), submitTime, size: resources.nodes * resources.cpusPerNode, estimate, user: 1, queue: 0, partition: 0, resources,
});

describe('node pool', () => {
  it('counts the free CPUs of nodes that take jobs: down or drained nodes, allocations and releases', () => {
    const pool = new NodePool([node('n1'), node('n2'), node('n3', 4)], 'first-fit');
    assert.equal(pool.acceptingFreeCpus, 20);
    pool.allocate(jobId(1), ['n1', 'n2'], need(2, 3));
    assert.equal(pool.acceptingFreeCpus, 14);
    pool.setAccepting('n2', false); // its 5 free CPUs no longer count; its job keeps running
    assert.equal(pool.acceptingFreeCpus, 9);
    pool.setAccepting('n2', false); // twice changes nothing
    assert.equal(pool.acceptingFreeCpus, 9);
    pool.release(jobId(1)); // n1 gets 3 back; n2's 3 stay out while it is down
    assert.equal(pool.acceptingFreeCpus, 12);
    pool.setAccepting('n2', true);
    assert.equal(pool.acceptingFreeCpus, 20);
  });

  it('first-fit takes the first nodes in order that fit', () => {
    const pool = new NodePool([node('n1'), node('n2'), node('n3')], 'first-fit');
    pool.allocate(jobId(1), ['n1'], need(1, 6));
    assert.deepEqual(pool.place(need(1, 4)), ['n2']);
    assert.deepEqual(pool.place(need(1, 2)), ['n1']);
    assert.deepEqual(pool.place(need(2, 4)), ['n2', 'n3']);
    assert.equal(pool.place(need(3, 4)), null);
  });

  it('best-fit takes the tightest nodes, least-loaded the emptiest', () => {
    const nodes = [node('n1'), node('n2'), node('n3')];
    for (const [strategy, expected] of [['best-fit', ['n2']], ['least-loaded', ['n3']]] as const) {
      const pool = new NodePool(nodes, strategy);
      pool.allocate(jobId(1), ['n1'], need(1, 7)); // n1: 1 free
      pool.allocate(jobId(2), ['n2'], need(1, 5)); // n2: 3 free, n3: 8 free
      assert.deepEqual(pool.place(need(1, 2)), expected, strategy);
    }
  });

  it('respects features, memory, partitions and nodes that accept no jobs', () => {
    const pool = new NodePool([node('n1', 8, 4096), node('n2', 8, 16384, ['gpu']), node('n3', 8, 16384, ['gpu', 'ssd'])]);
    assert.deepEqual(pool.place(need(1, 1, { features: ['gpu'] })), ['n2']);
    assert.deepEqual(pool.place(need(1, 1, { features: ['gpu', 'ssd'] })), ['n3']);
    assert.deepEqual(pool.place(need(1, 1, { memoryMiBPerNode: 8192 })), ['n2']);
    assert.deepEqual(pool.place(need(1, 1, { eligibleNodes: new Set(['n3']) })), ['n3']);
    pool.setAccepting('n2', false);
    assert.deepEqual(pool.place(need(1, 1, { features: ['gpu'] })), ['n3']);
    assert.equal(pool.couldEverPlace(need(1, 1, { features: ['fpga'] })), false);
    assert.equal(pool.couldEverPlace(need(2, 1, { features: ['gpu'] })), true);
  });

  it('release gives back what allocate took', () => {
    const pool = new NodePool([node('n1')]);
    pool.allocate(jobId(1), ['n1'], need(1, 3, { memoryMiBPerNode: 1000 }));
    assert.deepEqual(pool.free('n1'), { cpus: 5, memoryMiB: 15384 });
    pool.release(jobId(1));
    assert.deepEqual(pool.free('n1'), { cpus: 8, memoryMiB: 16384 });
  });
});

/** Four 8-CPU nodes; four jobs of 5 CPUs leave 3 free on each: 12 CPUs free, but no node with 8. */
function fragmented(policy: PolicyName) {
  const pool = new NodePool([node('n1'), node('n2'), node('n3'), node('n4')], 'first-fit');
  const scheduler = new Scheduler(policy, { processors: 32 }, 0, pool);
  for (let id = 1; id <= 4; id++) scheduler.submit(job(id, need(1, 5), 1000));
  const first = scheduler.pass(0).map((j) => j.id);
  assert.deepEqual(first, [1, 2, 3, 4]);
  assert.deepEqual([1, 2, 3, 4].map((id) => scheduler.nodesOf(jobId(id))), [['n1'], ['n2'], ['n3'], ['n4']]);
  return scheduler;
}

describe('scheduling on nodes', () => {
  it('fcfs: a whole-node job waits although 12 CPUs are free, and blocks the queue behind it', () => {
    const scheduler = fragmented('fcfs');
    scheduler.submit(job(5, need(1, 8), 100, 10));
    scheduler.submit(job(6, need(1, 2), 100, 10));
    assert.deepEqual(scheduler.pass(10), []);
    scheduler.end(jobId(2), 50);
    assert.deepEqual(scheduler.pass(50).map((j) => j.id), [5, 6]);
    assert.deepEqual(scheduler.nodesOf(jobId(5)), ['n2']);
    assert.deepEqual(scheduler.nodesOf(jobId(6)), ['n1']);
  });

  it('easy: a small job backfills around a head that fits no node', () => {
    const scheduler = fragmented('easy');
    scheduler.submit(job(5, need(1, 8), 100, 10));
    scheduler.submit(job(6, need(1, 2), 100, 10));
    assert.deepEqual(scheduler.pass(10).map((j) => j.id), [6]);
    assert.deepEqual(scheduler.nodesOf(jobId(6)), ['n1']);
  });

  it('conservative: a due job that fits no node keeps a later start and runs when a node frees', () => {
    const scheduler = fragmented('conservative');
    scheduler.submit(job(5, need(1, 8), 100, 10));
    assert.deepEqual(scheduler.pass(10), []);
    const promised = scheduler.plannedStart(jobId(5))!;
    assert.ok(promised > 10, `planned ${promised}`);
    scheduler.end(jobId(3), 40);
    assert.deepEqual(scheduler.pass(40).map((j) => j.id), [5]);
    assert.deepEqual(scheduler.nodesOf(jobId(5)), ['n3']);
  });

  it('a job no set of nodes can ever hold is refused at submission', () => {
    const pool = new NodePool([node('n1'), node('n2', 8, 16384, ['gpu'])]);
    const scheduler = new Scheduler('easy', { processors: 16 }, 0, pool);
    assert.throws(() => scheduler.submit(job(1, need(2, 1, { features: ['gpu'] }))), /fits on no set of nodes/);
    // On nodes a job is its nodes x CPUs: no processors without nodes, no size that disagrees with them.
    assert.throws(() => scheduler.submit({ ...job(2, need(1, 4)), resources: undefined }), /on a node pool, give resources with size = nodes x CPUs per node/);
    assert.throws(() => scheduler.submit({ ...job(3, need(1, 4)), size: 5 }), /asks for 5 processors but 1 x 4 CPUs of nodes/);
    assert.throws(() => scheduler.adoptRunning({ ...job(4, need(1, 4)), resources: undefined }, 0, ['n1']), /on a node pool, give resources/);
    assert.throws(() => new Scheduler('easy', { processors: 10 }, 0, pool), /16 CPUs/);
  });

  it('unstart puts a job back in its place; it starts again once a node accepts it', () => {
    for (const policy of ['fcfs', 'easy', 'conservative'] as const) {
      const pool = new NodePool([node('n1'), node('n2')]);
      const scheduler = new Scheduler(policy, { processors: 16 }, 0, pool);
      scheduler.submit(job(1, need(1, 8)));
      scheduler.submit(job(2, need(1, 8)));
      assert.deepEqual(scheduler.pass(0).map((j) => j.id), [1, 2], policy);
      // The shell's verify step finds n2 gone: the start of job 2 is withdrawn.
      pool.setAccepting('n2', false);
      scheduler.unstart(jobId(2), 0);
      assert.equal(scheduler.queueLength, 1, policy);
      assert.deepEqual(scheduler.pass(1), [], policy);
      scheduler.end(jobId(1), 5);
      assert.deepEqual(scheduler.pass(5).map((j) => j.id), [2], policy);
      assert.deepEqual(scheduler.nodesOf(jobId(2)), ['n1'], policy);
    }
  });
});

describe('plans with nodes down or drained', () => {
  // Two 4-CPU nodes; job 1 holds n1 until 100; n2 is drained.
  function drained(policy: PolicyName) {
    const pool = new NodePool([node('n1', 4), node('n2', 4)]);
    const scheduler = new Scheduler(policy, { processors: 8 }, 0, pool);
    scheduler.submit(job(1, need(1, 4), 100));
    assert.deepEqual(scheduler.pass(0).map((j) => j.id), [1]);
    pool.setAccepting('n2', false);
    return { pool, scheduler };
  }

  for (const policy of ['fcfs', 'easy', 'conservative'] as const) {
    it(`${policy}: a waiting job is planned when a node that takes jobs frees, and starts then; back in plan when the node returns`, () => {
      const { pool, scheduler } = drained(policy);
      scheduler.submit(job(2, need(1, 4), 50, 10));
      assert.deepEqual(scheduler.pass(10, { predictions: true }), []);
      // n2's 4 idle CPUs would say "now"; only n1 can take it, at 100.
      assert.equal(scheduler.plannedStart(jobId(2)), 100);
      scheduler.end(jobId(1), 100);
      assert.deepEqual(scheduler.pass(100).map((j) => j.id), [2]);
      assert.deepEqual(scheduler.nodesOf(jobId(2)), ['n1']);
      // n2 back: the next job is planned (and started) on it at once.
      scheduler.submit(job(3, need(1, 4), 50, 110));
      assert.deepEqual(scheduler.pass(110, { predictions: true }), []);
      assert.equal(scheduler.plannedStart(jobId(3)), 150);
      pool.setAccepting('n2', true);
      // (Conservative keeps its reservations until the next pass compresses them: a gain breaks no promise.)
      scheduler.plan(120);
      assert.equal(scheduler.plannedStart(jobId(3)), policy === 'conservative' ? 150 : 120);
      assert.deepEqual(scheduler.pass(120).map((j) => j.id), [3]);
      assert.deepEqual(scheduler.nodesOf(jobId(3)), ['n2']);
    });

    it(`${policy}: a job larger than the nodes that take jobs has no planned start; a job that fits still has one`, () => {
      const { scheduler } = drained(policy);
      scheduler.submit(job(2, need(2, 4), 50, 10));
      scheduler.submit(job(3, need(1, 4), 50, 10));
      scheduler.pass(10, { predictions: true });
      assert.equal(scheduler.plannedStart(jobId(2)), undefined);
      // fcfs keeps order: nothing passes a head that cannot start.
      assert.equal(scheduler.plannedStart(jobId(3)), policy === 'fcfs' ? undefined : 100);
    });
  }

  it('easy: a head that the nodes taking jobs cannot hold does not keep smaller jobs from starting', () => {
    const pool = new NodePool([node('n1', 4), node('n2', 4)]);
    const scheduler = new Scheduler('easy', { processors: 8 }, 0, pool);
    pool.setAccepting('n2', false);
    scheduler.submit(job(1, need(2, 4), 100)); // waits for n2
    scheduler.submit(job(2, need(1, 4), 1000));
    assert.deepEqual(scheduler.pass(0).map((j) => j.id), [2]);
    assert.deepEqual(scheduler.nodesOf(jobId(2)), ['n1']);
  });

  for (const policy of ['easy', 'conservative'] as const) {
    it(`${policy}: a head whose nodes (by feature or partition) are all drained holds nothing up; back, it is planned again`, () => {
      const pool = new NodePool([node('n1', 4, 16384, ['gpu']), node('n2', 4)]);
      const scheduler = new Scheduler(policy, { processors: 8 }, 0, pool);
      pool.setAccepting('n1', false);
      scheduler.submit(job(1, need(1, 4, { features: ['gpu'] }), 100)); // only n1 has the feature
      scheduler.submit(job(2, need(1, 4), 1000));
      assert.deepEqual(scheduler.pass(0, { predictions: true }).map((j) => j.id), [2]);
      assert.deepEqual(scheduler.nodesOf(jobId(2)), ['n2']);
      assert.equal(scheduler.plannedStart(jobId(1)), undefined);
      pool.setAccepting('n1', true);
      if (policy !== 'conservative') {
        scheduler.plan(5);
        assert.equal(scheduler.plannedStart(jobId(1)), 5);
      }
      assert.deepEqual(scheduler.pass(5).map((j) => j.id), [1]);
    });

  }

  for (const policy of ['fcfs', 'easy', 'conservative'] as const) {
    it(`${policy}: a node expected back (counted, taking no jobs yet) keeps the head's place: no long job starts ahead of it`, () => {
      const pool = new NodePool([node('n1', 4), node('n2', 4)]);
      const scheduler = new Scheduler(policy, { processors: 8 }, 0, pool);
      pool.setAccepting('n2', false, true); // its agent has not registered yet since a restart
      scheduler.submit(job(1, need(2, 4), 100)); // needs both nodes
      scheduler.submit(job(2, need(1, 4), 86_400));
      assert.deepEqual(scheduler.pass(0, { predictions: true }), []);
      assert.equal(scheduler.plannedStart(jobId(1)), 0);
      // Passes go by while n2 is still expected: the head keeps its place, the long job stays behind it.
      for (let t = 1; t <= 20; t++) assert.deepEqual(scheduler.pass(t, { predictions: true }), [], `t=${t}`);
      assert.equal(scheduler.plannedStart(jobId(1)), 20);
      assert.equal(scheduler.plannedStart(jobId(2)), 120);
      pool.setAccepting('n2', true);
      assert.deepEqual(scheduler.pass(21).map((j) => j.id), [1]);
    });
  }

  it('easy: the head is protected on the nodes it can use; a long job on other nodes (another partition) may start', () => {
    const p1 = new Set(['n1', 'n2']);
    const p2 = new Set(['n3', 'n4']);
    const pool = new NodePool([node('n1', 4), node('n2', 4), node('n3', 4), node('n4', 4)]);
    const scheduler = new Scheduler('easy', { processors: 16 }, 0, pool);
    scheduler.submit(job(1, need(1, 4, { eligibleNodes: p1 }), 1000));
    assert.deepEqual(scheduler.pass(0).map((j) => j.id), [1]); // on n1 until 1000
    scheduler.submit(job(2, need(2, 4, { eligibleNodes: p1 }), 100, 1)); // the head: both p1 nodes, at 1000
    scheduler.submit(job(3, need(1, 4, { eligibleNodes: p1 }), 86_400, 1)); // would hold n2 for a day
    scheduler.submit(job(4, need(1, 4, { eligibleNodes: p2 }), 86_400, 1)); // on p2: cannot delay the head
    assert.deepEqual(scheduler.pass(1).map((j) => j.id), [4]);
    assert.deepEqual(scheduler.nodesOf(jobId(4)), ['n3']);
    scheduler.end(jobId(1), 1000);
    assert.deepEqual(scheduler.pass(1000).map((j) => j.id), [2]);
  });

  it('easy: node by node, a backfill that would cost the head a node (its CPUs or its memory) waits', () => {
    // Fragmentation: the head needs a whole 4-CPU node; n1 frees at 100. A 1-CPU job for 500 s on n1 would push it to 501.
    const pool = new NodePool([node('n1', 4, 16), node('n2', 4, 16)]);
    const scheduler = new Scheduler('easy', { processors: 8 }, 0, pool);
    scheduler.submit(job(1, need(1, 2), 100));
    scheduler.submit(job(2, need(1, 3), 1000));
    assert.deepEqual(scheduler.pass(0).map((j) => j.id), [1, 2]);
    scheduler.submit(job(3, need(1, 4), 50, 1));
    scheduler.submit(job(4, need(1, 1), 500, 1));
    scheduler.submit(job(5, need(1, 1), 50, 1)); // ends by the shadow time: may start
    // The head is planned on n1 at 100: job 4 may not run there past 100, but n2's last CPU is no use to the head.
    assert.deepEqual(scheduler.pass(1).map((j) => j.id), [4, 5]);
    assert.deepEqual(scheduler.nodesOf(jobId(4)), ['n2']);
    assert.deepEqual(scheduler.nodesOf(jobId(5)), ['n1']);
    scheduler.end(jobId(5), 51);
    scheduler.end(jobId(1), 100);
    assert.deepEqual(scheduler.pass(100).map((j) => j.id), [3]); // the head on time
    assert.deepEqual(scheduler.nodesOf(jobId(3)), ['n1']);
    // Memory: the head needs all of n1's memory at 100; a long job with half of it would push it out.
    const small = new NodePool([node('n1', 4, 16)]);
    const other = new Scheduler('easy', { processors: 4 }, 0, small);
    other.submit(job(1, need(1, 3), 100));
    other.pass(0);
    other.submit(job(2, need(1, 2, { memoryMiBPerNode: 16 }), 50, 1));
    other.submit(job(3, need(1, 1, { memoryMiBPerNode: 8 }), 500, 1));
    assert.deepEqual(other.pass(1), []);
    other.end(jobId(1), 100);
    assert.deepEqual(other.pass(100).map((j) => j.id), [2]);
  });

  it('easy: on random node pools with partitions, a backfill never delays the head\'s earliest start', () => {
    const p1 = new Set(['n1', 'n2', 'n3']);
    const p2 = new Set(['n4', 'n5', 'n6']);
    const nodes = [node('n1', 4, 16), node('n2', 4, 16), node('n3', 4, 16), node('n4', 8, 16), node('n5', 8, 16), node('n6', 8, 16)];
    /** The head's earliest start on a copy of the pool holding `runs`, releasing them at their predicted ends. */
    const earliest = (runs: readonly { job: JobRequest; start: number; nodes: readonly string[] }[], request: ResourceRequest, now: number) => {
      const copy = new NodePool(nodes);
      for (const run of runs) copy.allocate(run.job.id, run.nodes, run.job.resources!);
      if (copy.place(request) !== null) return now;
      for (const run of [...runs].sort((a, b) => a.start + a.job.estimate - (b.start + b.job.estimate))) {
        copy.release(run.job.id);
        if (copy.place(request) !== null) return Math.max(now, run.start + run.job.estimate);
      }
      return Infinity;
    };
    for (let seed = 1; seed <= 300; seed++) {
      const random = new SeededRandom(seed);
      const scheduler = new Scheduler('easy', { processors: 36 }, 0, new NodePool(nodes));
      const jobs: JobRequest[] = [];
      for (let i = 1; i <= random.int(6, 16); i++) {
        const part = random.int(0, 2);
        const cpus = random.chance(0.4) ? (part === 1 ? 8 : 4) : random.int(1, part === 1 ? 8 : 4);
        jobs.push(job(i, need(random.int(1, 3), cpus, { memoryMiBPerNode: random.int(0, 16), ...(part < 2 ? { eligibleNodes: part === 0 ? p1 : p2 } : {}) }),
          random.int(5, 200), random.int(0, 60)));
      }
      jobs.sort((a, b) => a.submitTime - b.submitTime || a.id - b.id);
      const times = new Set(jobs.map((j) => j.submitTime));
      let next = 0;
      for (let guard = 0; guard < 10_000 && times.size > 0; guard++) {
        const now = Math.min(...times);
        times.delete(now);
        for (const run of [...scheduler.state.running]) if (run.start + run.job.estimate === now) scheduler.end(run.job.id, now);
        while (next < jobs.length && jobs[next].submitTime === now) scheduler.submit(jobs[next++]);
        const before = scheduler.state.queue.map((e) => e.job.id);
        const started = scheduler.pass(now);
        for (const run of started) times.add(now + run.estimate);
        const head = scheduler.state.queue[0]?.job;
        if (head === undefined) continue;
        const backfilled = new Set(started.filter((j) => before.indexOf(j.id) > before.indexOf(head.id)).map((j) => j.id));
        const running = scheduler.state.running;
        const without = earliest(running.filter((r) => !backfilled.has(r.job.id)), head.resources!, now);
        assert.ok(earliest(running, head.resources!, now) <= without, `seed ${seed}, t=${now}: backfilling ${[...backfilled]} delays head ${head.id}`);
      }
    }
  });

  it('conservative: nodes coming back break no promise (whole-node jobs that run their estimates)', () => {
    for (let seed = 1; seed <= 40; seed++) {
      const random = new SeededRandom(seed);
      const pool = new NodePool([node('n1', 4), node('n2', 4), node('n3', 4), node('n4', 4)]);
      const scheduler = new Scheduler('conservative', { processors: 16 }, 0, pool);
      pool.setAccepting('n3', false);
      pool.setAccepting('n4', false);
      let id = 1;
      const estimates = new Map<number, number>();
      for (let i = 0; i < 12; i++) {
        estimates.set(id, random.int(10, 500));
        scheduler.submit(job(id, need(random.int(1, 2), 4), estimates.get(id)!)); // whole nodes: CPU counts plan exactly
        id++;
      }
      const atZero = scheduler.pass(0, { predictions: true });
      const promised = new Map<number, number>();
      for (let j = 1; j < id; j++) {
        const start = scheduler.plannedStart(jobId(j));
        if (start !== undefined && start > 0) promised.set(j, start);
      }
      pool.setAccepting(random.chance(0.5) ? 'n3' : 'n4', true); // a gain only
      // Every job runs exactly its estimate (none overruns, so every promise can hold).
      const started = new Map<number, number>(atZero.map((run) => [run.id, 0]));
      const ended = new Set<number>();
      for (let t = 1; t <= 10_000 && ended.size < id - 1; t++) {
        for (const [j, at] of started) {
          if (ended.has(j) || at + estimates.get(j)! > t) continue;
          scheduler.end(jobId(j), t);
          ended.add(j);
        }
        for (const run of scheduler.pass(t)) started.set(run.id, t);
      }
      for (const [j, start] of promised) {
        const actual = started.get(j);
        assert.ok(actual !== undefined && actual <= start, `seed ${seed}: job ${j} promised ${start}, started ${actual}`);
      }
    }
  });

  it('conservative: a job running on a node that goes down gives back no capacity there when it ends', () => {
    const pool = new NodePool([node('n1', 4), node('n2', 4)]);
    const scheduler = new Scheduler('conservative', { processors: 8 }, 0, pool);
    scheduler.submit(job(1, need(1, 4), 100));
    scheduler.submit(job(2, need(1, 4), 200));
    assert.deepEqual(scheduler.pass(0).map((j) => j.id), [1, 2]);
    pool.setAccepting('n1', false); // job 1's node: its CPUs stay out of plans
    scheduler.submit(job(3, need(1, 4), 50, 10));
    scheduler.pass(10, { predictions: true });
    assert.equal(scheduler.plannedStart(jobId(3)), 200);
    scheduler.end(jobId(1), 20); // early, on the down node: nothing for job 3
    scheduler.pass(20, { predictions: true });
    assert.equal(scheduler.plannedStart(jobId(3)), 200);
  });
});

describe('priority (partition priority in the core)', () => {
  const plain = (id: number, size: number, estimate: number, submitTime: number, priority?: number): JobRequest => ({
    id: jobId(id), submitTime, size, estimate, user: 1, queue: 0, partition: 0, ...(priority === undefined ? {} : { priority }),
  });

  for (const policy of ['fcfs', 'easy'] as const) {
    it(`${policy}: a later job of higher priority is the next to start, and the planned starts say so`, () => {
      const scheduler = new Scheduler(policy, { processors: 4 }, 0);
      scheduler.submit(plain(1, 4, 100, 0));
      assert.deepEqual(scheduler.pass(0).map((j) => j.id), [1]);
      scheduler.submit(plain(2, 4, 50, 1, 1));
      scheduler.pass(1);
      scheduler.plan(1);
      assert.equal(scheduler.plannedStart(jobId(2)), 100);
      scheduler.submit(plain(3, 4, 30, 2, 5)); // higher priority: ahead of job 2
      scheduler.pass(2);
      scheduler.plan(2);
      assert.equal(scheduler.plannedStart(jobId(3)), 100);
      assert.equal(scheduler.plannedStart(jobId(2)), 130, 'the projection was rebuilt for the new order');
      scheduler.end(jobId(1), 100);
      assert.deepEqual(scheduler.pass(100).map((j) => j.id), [3]);
    });
  }

  it('conservative: priority orders the jobs not yet planned; a job already promised keeps its promise', () => {
    const scheduler = new Scheduler('conservative', { processors: 4 }, 0);
    scheduler.submit(plain(1, 4, 100, 0));
    scheduler.pass(0);
    scheduler.submit(plain(2, 4, 50, 1, 1));
    scheduler.pass(1); // job 2 is promised 100
    scheduler.submit(plain(3, 4, 30, 2, 1));
    scheduler.submit(plain(4, 4, 30, 2, 5)); // same instant as 3, higher priority: planned before 3, after 2
    scheduler.pass(2);
    scheduler.plan(2);
    assert.deepEqual([2, 4, 3].map((id) => scheduler.plannedStart(jobId(id))), [100, 150, 180]);
  });

  it('requeued or un-started jobs go back behind higher priorities, before later ones of theirs', () => {
    const scheduler = new Scheduler('fcfs', { processors: 8 }, 0);
    scheduler.submit(plain(1, 4, 100, 0, 1));
    assert.deepEqual(scheduler.pass(0).map((j) => j.id), [1]);
    scheduler.submit(plain(2, 8, 100, 1, 5));
    scheduler.submit(plain(3, 8, 100, 2, 1));
    scheduler.unstart(jobId(1), 3); // back: behind 2 (priority 5), ahead of 3 (same priority, later)
    assert.deepEqual(scheduler.pass(3).map((j) => j.id), [2]);
    scheduler.end(jobId(2), 103);
    assert.deepEqual(scheduler.pass(103).map((j) => j.id), [1]);
  });
});
