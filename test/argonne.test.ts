// The Argonne SP queuing example (seed 004, sections 2.7.2-2.7.6; spec
// "Worked example: Argonne queueing") replayed through the core Scheduler with
// the easy policy: 128 nodes, jobs A..G queued in that order at time 0.
// The seed gives no size for E, only that it "needs more nodes than are
// currently free" (more than 8): we give it 16 nodes for 30 minutes, short
// enough to end by the shadow time and narrow enough to fit in extra, so the
// only thing keeping it out is the 8 nodes free now.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { shadowOf } from '../src/core/policies/easy.js';
import { Scheduler } from '../src/core/scheduler.js';
import { SchedulerState } from '../src/core/state.js';
import { jobId, type JobRequest } from '../src/core/types.js';

const NODES = 128;
const MINUTE = 60;
const HOUR = 3600;

type Name = 'A' | 'B' | 'C' | 'D' | 'E' | 'F' | 'G';
type Spec = Record<Name, { nodes: number; seconds: number }>;
const NAMES: readonly Name[] = ['A', 'B', 'C', 'D', 'E', 'F', 'G'];

/** Job A is id 1, B id 2, ... G id 7. */
function request(name: Name, nodes: number, seconds: number): JobRequest {
  return { id: jobId(NAMES.indexOf(name) + 1), submitTime: 0, size: nodes, estimate: seconds, user: 1, queue: 0, partition: 0 };
}

const nameOf = (job: JobRequest): Name => NAMES[job.id - 1];

/** Queues A..G at time 0 and runs the one pass of that instant. */
function runExample(spec: Spec): { scheduler: Scheduler; startedAtZero: Name[] } {
  const scheduler = new Scheduler('easy', { processors: NODES }, 0);
  for (const name of NAMES) scheduler.submit(request(name, spec[name].nodes, spec[name].seconds));
  const started = scheduler.pass(0, { predictions: true });
  return { scheduler, startedAtZero: started.map(nameOf) };
}

const PART_4A: Spec = {
  A: { nodes: 32, seconds: 2 * HOUR },
  B: { nodes: 64, seconds: 1 * HOUR },
  C: { nodes: 24, seconds: 3 * HOUR },
  D: { nodes: 32, seconds: 2 * HOUR },
  E: { nodes: 16, seconds: 30 * MINUTE },
  F: { nodes: 16, seconds: 2 * HOUR },
  G: { nodes: 4, seconds: 30 * MINUTE },
};

const PART_4B: Spec = { ...PART_4A, F: { nodes: 8, seconds: 480 * MINUTE } };

describe('Argonne queuing example (seed 004, 2.7)', () => {
  // State after A, B, C start (parts 1-3), before any backfilling:
  // | running | nodes | predicted end |        free walk        |
  // | B       |  64   |  3600         | 8 + 64 = 72 >= 32: S    |
  // | A       |  32   |  7200         | (not walked)            |
  // | C       |  24   | 10800         | (not walked)            |
  // shadow time = 3600, extra = 8 + 64 - 32 = 40
  it('parts 1-3: A, B and C leave 8 nodes free; D (32 nodes) waits for B: shadow 1 h, extra 40', () => {
    const state = new SchedulerState(NODES);
    state.addRunning({ job: request('A', 32, 2 * HOUR), start: 0, nodes: [] });
    state.addRunning({ job: request('B', 64, 1 * HOUR), start: 0, nodes: [] });
    state.addRunning({ job: request('C', 24, 3 * HOUR), start: 0, nodes: [] });
    assert.equal(state.freeProcessors, 8);
    assert.deepEqual(shadowOf(state, 32), { shadowTime: 3600, extra: 40 });
  });

  // Part 4a, one pass at 0, S = 3600, extra = 40, free = 8:
  // | job | nodes | ends at | nodes <= free? | ends by S? | nodes <= extra? | starts |
  // | A-C |       |         | head fits      |            |                 | yes    |
  // | D   |  32   |  7200   | no (head)      |            |                 | no     |
  // | E   |  16   |  1800   | no (16 > 8)    |            |                 | no     |
  // | F   |  16   |  7200   | no (16 > 8)    |            |                 | no     |
  // | G   |   4   |  1800   | yes            | yes        |                 | yes    |
  // After: free 4; running G 1800 (4), B 3600 (64): 4 + 4 + 64 = 72 >= 32 at 3600,
  // so shadow 3600 and extra 40 still (G ends before S, it takes nothing from extra).
  it('part 4a: E and F need more than the 8 free nodes and wait; G (4 nodes, 30 min) backfills', () => {
    const { scheduler, startedAtZero } = runExample(PART_4A);
    assert.deepEqual(startedAtZero, ['A', 'B', 'C', 'G']);
    assert.equal(scheduler.state.freeProcessors, 4);
    assert.deepEqual(shadowOf(scheduler.state, 32), { shadowTime: 3600, extra: 40 });
  });

  // Queue projection after the 4a pass (running only: 4 free on [0,1800), 8 on
  // [1800,3600), 72 on [3600,7200), 104 on [7200,10800), 128 after):
  // | job | nodes x s  | earliest fit | free left on [3600,..)           |
  // | D   | 32 x 7200  | 3600         | 40 to 7200, 72 to 10800          |
  // | E   | 16 x 1800  | 3600         | 24 to 5400, 40 to 7200           |
  // | F   | 16 x 7200  | 3600         | 8 to 5400, 24 to 7200, 56 to 10800 |
  it('part 4a: D is planned at the shadow time, and E and F when B ends', () => {
    const { scheduler } = runExample(PART_4A);
    assert.equal(scheduler.plannedStart(jobId(4)), 3600);
    assert.equal(scheduler.plannedStart(jobId(5)), 3600);
    assert.equal(scheduler.plannedStart(jobId(6)), 3600);
    assert.equal(scheduler.plannedStart(jobId(7)), 0);
  });

  // Part 4b, one pass at 0, S = 3600, extra = 40, free = 8:
  // | job | nodes | ends at | nodes <= free? | ends by S? | nodes <= extra? | starts | free | extra |
  // | D   |  32   |  7200   | no (head)      |            |                 | no     |  8   |  40   |
  // | E   |  16   |  1800   | no             |            |                 | no     |  8   |  40   |
  // | F   |   8   | 28800   | yes            | no         | 8 <= 40         | yes    |  0   |  32   |
  // | G   |   4   |  1800   | no (4 > 0)     |            |                 | no     |  0   |  32   |
  // After: free 0; B (64) ends first: 0 + 64 >= 32 at 3600, extra 64 - 32 = 32.
  it('part 4b: F (8 nodes, 480 min) outlasts the shadow time but starts because 8 <= extra', () => {
    const { scheduler, startedAtZero } = runExample(PART_4B);
    assert.deepEqual(startedAtZero, ['A', 'B', 'C', 'F']);
    assert.equal(scheduler.state.freeProcessors, 0);
    assert.deepEqual(shadowOf(scheduler.state, 32), { shadowTime: 3600, extra: 32 });
    assert.equal(scheduler.plannedStart(jobId(4)), 3600);
  });

  // "Had B released only 24 nodes": B is 24 nodes and A takes the other 40
  // (72 nodes), so 8 nodes are still free and D still waits for B.
  // | running | nodes | predicted end | free walk             |
  // | B       |  24   |  3600         | 8 + 24 = 32 >= 32: S  |
  // shadow 3600, extra = 8 + 24 - 32 = 0
  // | job | nodes | ends at | nodes <= free? | ends by S? | nodes <= extra? | starts |
  // | F   |   8   | 28800   | yes            | no         | 8 > 0           | no     |
  // | G   |   4   |  1800   | yes            | yes        |                 | yes    |
  it('part 4b variant: had B released only 24 nodes, extra is 0 and F waits (G still backfills)', () => {
    const spec: Spec = { ...PART_4B, A: { nodes: 72, seconds: 2 * HOUR }, B: { nodes: 24, seconds: 1 * HOUR } };
    const state = new SchedulerState(NODES);
    state.addRunning({ job: request('A', 72, 2 * HOUR), start: 0, nodes: [] });
    state.addRunning({ job: request('B', 24, 1 * HOUR), start: 0, nodes: [] });
    state.addRunning({ job: request('C', 24, 3 * HOUR), start: 0, nodes: [] });
    assert.deepEqual(shadowOf(state, 32), { shadowTime: 3600, extra: 0 });

    const { scheduler, startedAtZero } = runExample(spec);
    assert.deepEqual(startedAtZero, ['A', 'B', 'C', 'G']);
    // Projection: free 4 to 1800, 8 to 3600, 32 to 7200, 104 to 10800. D takes
    // [3600,10800) x 32, leaving 0 on [3600,7200): E (16) and F (8) wait for A at 7200.
    assert.equal(scheduler.plannedStart(jobId(4)), 3600);
    assert.equal(scheduler.plannedStart(jobId(5)), 7200);
    assert.equal(scheduler.plannedStart(jobId(6)), 7200);
  });

  // Boundary: B releases 32 nodes (A 64 nodes): extra = 8 + 32 - 32 = 8, and
  // F's 8 nodes are allowed because the rule is nodes <= extra.
  it('part 4b boundary: F starts when its 8 nodes equal extra exactly', () => {
    const spec: Spec = { ...PART_4B, A: { nodes: 64, seconds: 2 * HOUR }, B: { nodes: 32, seconds: 1 * HOUR } };
    const { scheduler, startedAtZero } = runExample(spec);
    assert.deepEqual(startedAtZero, ['A', 'B', 'C', 'F']);
    assert.deepEqual(shadowOf(scheduler.state, 32), { shadowTime: 3600, extra: 0 });
  });
});
