// Properties every replay must have, checked on the simulator's output alone
// (no second implementation): capacity, causality, one start per job, and each
// policy's promise: fcfs keeps arrival order, easy never lets a backfilled job
// delay the head, conservative never starts a job later than first promised.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PolicyName } from '../src/core/scheduler.js';
import { summarise } from '../src/sim/metrics.js';
import { simulate, type SimulationResult } from '../src/sim/simulator.js';
import { randomWorkloads, tinyWorkloads, traceWorkload, type NamedWorkload } from './reference/workloads.js';

const TRACES = ['ccs-example.swf', 'SDSC-SP2-1998-5k-sample.swf', 'NASA-iPSC-1993-3.1-cln.swf', 'lublin-256.swf'];
/** The spec's replay policies (the batch packings make no such promises). */
const QUEUEING_POLICIES: readonly PolicyName[] = ['fcfs', 'easy', 'conservative'];
const RANDOM_WORKLOADS = 120;
const RANDOM_SEED = 4_242;
const TINY_WORKLOADS = 2000;
const TINY_SEED = 4_343;

interface Replay {
  readonly name: string;
  readonly policy: PolicyName;
  readonly processors: number;
  readonly result: SimulationResult;
  /** Start events the simulator reported through its progress callback. */
  readonly startEvents: number;
  readonly expectedJobs: readonly number[];
}

/** A job as it ran: request fields, start and actual end. */
interface Ran {
  readonly id: number;
  readonly submit: number;
  readonly size: number;
  readonly estimate: number;
  readonly start: number;
  readonly end: number;
}

function replay({ name, workload }: NamedWorkload, policy: PolicyName): Replay {
  let startEvents = -1;
  const result = simulate(workload, policy, { onProgress: (started) => (startEvents = started) });
  return { name, policy, processors: workload.processors, result, startEvents, expectedJobs: workload.jobs.map((j) => j.request.id) };
}

const ran = (r: Replay): Ran[] =>
  r.result.outcomes.map(({ job, start }) => ({
    id: job.request.id, submit: job.request.submitTime, size: job.request.size, estimate: job.request.estimate,
    start, end: start + job.runtime,
  }));

const at = (r: Replay, detail: string): string => `${r.policy} on ${r.name}: ${detail}`;

function assertProcessorsNeverExceeded(r: Replay): void {
  // Ends before starts at the same instant: a job ending at t frees its processors for one starting at t.
  const changes = ran(r).flatMap((j) => [{ time: j.start, delta: j.size }, { time: j.end, delta: -j.size }]);
  changes.sort((a, b) => a.time - b.time || a.delta - b.delta);
  let used = 0;
  for (const { time, delta } of changes) {
    used += delta;
    assert.ok(used <= r.processors, at(r, `${used} processors in use at ${time}, the machine has ${r.processors}`));
  }
}

function assertNoStartBeforeSubmit(r: Replay): void {
  for (const j of ran(r)) assert.ok(j.start >= j.submit, at(r, `job ${j.id} starts at ${j.start}, before its submit time ${j.submit}`));
}

function assertEveryJobRunsOnce(r: Replay): void {
  const ids = r.result.outcomes.map((o) => o.job.request.id);
  assert.deepEqual([...ids].sort((a, b) => a - b), [...r.expectedJobs].sort((a, b) => a - b), at(r, 'the outcomes are not the workload\'s jobs'));
  assert.equal(new Set(ids).size, ids.length, at(r, 'a job has two outcomes'));
  for (const o of r.result.outcomes) {
    assert.ok(Number.isInteger(o.start), at(r, `job ${o.job.request.id} never started (start ${o.start})`));
  }
  assert.equal(r.startEvents, ids.length, at(r, `${r.startEvents} start events for ${ids.length} jobs`));
}

/**
 * Replays the history pass by pass (passes happen at every submit and every
 * actual end). At each pass where a head H is left waiting, recomputes H's
 * shadow time S as the spec defines it from the jobs running after the fcfs
 * part of the pass, then checks two things:
 * - the backfilled jobs of this pass leave H's processors free at S: the jobs
 *   predicted to still run at S, plus H, fit in the machine;
 * - H starts no later than S. This is the observable consequence: runtimes
 *   never exceed estimates, so every job predicted to end by S has ended by
 *   the last pass at or before S; by the first check (at every pass, with a
 *   shadow time that can only move earlier) H then fits at that pass.
 */
function assertHeadNeverDelayedByBackfilling(r: Replay): void {
  const jobs = ran(r); // (submit, id) order = queue order
  const instants = [...new Set(jobs.flatMap((j) => [j.submit, j.end]))].sort((a, b) => a - b);
  const predictedEnd = (j: Ran): number => j.start + j.estimate;
  let queue: Ran[] = [];
  let running: Ran[] = [];
  let nextArrival = 0;
  for (const now of instants) {
    running = running.filter((j) => j.end > now);
    while (nextArrival < jobs.length && jobs[nextArrival].submit === now) queue.push(jobs[nextArrival++]);
    const headIndex = queue.findIndex((j) => j.start !== now);
    if (headIndex >= 0) {
      const head = queue[headIndex];
      const beforeBackfill = [...running, ...queue.slice(0, headIndex)].sort((a, b) => predictedEnd(a) - predictedEnd(b) || a.id - b.id);
      let available = r.processors - beforeBackfill.reduce((sum, j) => sum + j.size, 0);
      assert.ok(available < head.size, at(r, `at ${now} head job ${head.id} fits (${available} free) but waits`));
      let shadowTime = NaN;
      for (const j of beforeBackfill) {
        available += j.size;
        if (available >= head.size) {
          shadowTime = predictedEnd(j);
          break;
        }
      }
      const backfilled = queue.slice(headIndex + 1).filter((j) => j.start === now);
      const stillRunningAtShadow = [...beforeBackfill, ...backfilled].filter((j) => predictedEnd(j) > shadowTime);
      const usedAtShadow = stillRunningAtShadow.reduce((sum, j) => sum + j.size, 0);
      assert.ok(usedAtShadow + head.size <= r.processors, at(r,
        `at ${now} backfilling leaves ${r.processors - usedAtShadow} processors at shadow time ${shadowTime} for head job ${head.id} of size ${head.size}` +
        ` (backfilled: ${backfilled.map((j) => j.id).join(', ')})`));
      assert.ok(head.start <= shadowTime, at(r, `head job ${head.id} waiting at ${now} has shadow time ${shadowTime} but starts at ${head.start}`));
    }
    running.push(...queue.filter((j) => j.start === now));
    queue = queue.filter((j) => j.start !== now);
  }
}

function assertNoJobLaterThanFirstPromise(r: Replay): void {
  for (const { job, start, predictedStart } of r.result.outcomes) {
    assert.ok(start <= predictedStart, at(r, `job ${job.request.id} starts at ${start}, later than its promise ${predictedStart}`));
  }
  assert.equal(summarise(r.result).predictionLate, 0, at(r, 'predictionLate is not 0'));
}

function assertArrivalOrder(r: Replay): void {
  const jobs = ran(r);
  for (let i = 1; i < jobs.length; i++) {
    assert.ok(jobs[i].start >= jobs[i - 1].start, at(r,
      `job ${jobs[i].id} (submitted ${jobs[i].submit}) starts at ${jobs[i].start}, before job ${jobs[i - 1].id} ahead of it (${jobs[i - 1].start})`));
  }
}

describe('replay invariants', () => {
  let traces: Promise<NamedWorkload[]> | undefined;
  const loadTraces = (): Promise<NamedWorkload[]> => (traces ??= Promise.all(TRACES.map((file) => traceWorkload(file))));
  const generated = [...randomWorkloads(RANDOM_WORKLOADS, RANDOM_SEED), ...tinyWorkloads(TINY_WORKLOADS, TINY_SEED)];
  const replays = new Map<PolicyName, Promise<Replay[]>>();
  const replaysOf = (policy: PolicyName): Promise<Replay[]> => {
    if (!replays.has(policy)) replays.set(policy, loadTraces().then((t) => [...t, ...generated].map((named) => replay(named, policy))));
    return replays.get(policy)!;
  };
  const on = `on the shared traces, ${RANDOM_WORKLOADS} random and ${TINY_WORKLOADS} tiny workloads`;

  for (const policy of QUEUEING_POLICIES) {
    describe(policy, () => {
      it(`never uses more processors than the machine has, ${on}`, async () => {
        for (const r of await replaysOf(policy)) assertProcessorsNeverExceeded(r);
      });
      it(`starts no job before its submit time, ${on}`, async () => {
        for (const r of await replaysOf(policy)) assertNoStartBeforeSubmit(r);
      });
      it(`runs every job exactly once, ${on}`, async () => {
        for (const r of await replaysOf(policy)) assertEveryJobRunsOnce(r);
      });
    });
  }

  it(`fcfs starts jobs in arrival order, ${on}`, async () => {
    for (const r of await replaysOf('fcfs')) assertArrivalOrder(r);
  });
  it(`easy: a backfilled job never delays the head beyond its shadow time, ${on}`, async () => {
    for (const r of await replaysOf('easy')) assertHeadNeverDelayedByBackfilling(r);
  });
  it(`conservative: no job starts later than its prediction at submission, ${on}`, async () => {
    for (const r of await replaysOf('conservative')) assertNoJobLaterThanFirstPromise(r);
  });
});
