// The trace simulator: replays a workload through the core scheduler with the
// event order of the spec (ends, then arrivals, then one pass per instant) and
// records each job's start and its prediction at submission. A workload with
// a cluster is replayed the same way on a NodePool of its nodes (the core's
// node plans), and each outcome also names the nodes the job ran on.

import { NodePool } from '../core/placement.js';
import { Scheduler } from '../core/scheduler.js';
import type { PolicyName } from '../core/scheduler.js';
import type { Seconds } from '../core/types.js';
import type { Admission } from './jobtypes.js';
import type { SimJob, Workload } from './swf.js';

export interface JobOutcome {
  readonly job: SimJob;
  readonly start: Seconds;
  /** Planned start after the pass of the job's submit instant. */
  readonly predictedStart: Seconds;
  /** On a cluster: the nodes it ran on. */
  readonly nodes?: readonly string[];
  /** A priority job (a deadline, from --jobtypes): how its arrival's deadline check admitted it. */
  readonly admission?: Admission;
}

export interface SimulationResult {
  readonly policy: PolicyName;
  /** The workload's processors (on a cluster, the CPUs of the nodes its jobs may use). */
  readonly processors: number;
  /** Outcomes in the workload's (submit time, id) order. */
  readonly outcomes: readonly JobOutcome[];
  readonly skipped: number;
  readonly passes: number;
}

export interface SimulationOptions {
  /** Called now and then with the number of jobs started so far. */
  readonly onProgress?: (started: number, total: number) => void;
  /** Record predictions at submission (default true; off only to measure their cost). */
  readonly predictions?: boolean;
}

/** Binary min-heap of running jobs keyed by actual end time. */
class EndHeap {
  private readonly ends: number[] = [];
  private readonly items: number[] = [];
  get size(): number {
    return this.ends.length;
  }
  peek(): number {
    return this.ends[0];
  }
  push(end: number, item: number): void {
    const ends = this.ends;
    const items = this.items;
    let i = ends.length;
    ends.push(end);
    items.push(item);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (ends[parent] <= end) break;
      ends[i] = ends[parent];
      items[i] = items[parent];
      i = parent;
    }
    ends[i] = end;
    items[i] = item;
  }
  pop(): number {
    const ends = this.ends;
    const items = this.items;
    const top = items[0];
    const lastEnd = ends.pop()!;
    const lastItem = items.pop()!;
    const n = ends.length;
    if (n > 0) {
      let i = 0;
      for (;;) {
        let child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && ends[child + 1] < ends[child]) child++;
        if (ends[child] >= lastEnd) break;
        ends[i] = ends[child];
        items[i] = items[child];
        i = child;
      }
      ends[i] = lastEnd;
      items[i] = lastItem;
    }
    return top;
  }
}

export function simulate(workload: Workload, policy: PolicyName, options: SimulationOptions = {}): SimulationResult {
  const jobs = workload.jobs;
  const total = jobs.length;
  const indexById = new Map<number, number>();
  jobs.forEach((job, index) => indexById.set(job.request.id, index));
  const starts = new Float64Array(total).fill(NaN);
  const predictions = new Float64Array(total).fill(NaN);
  const pool = workload.cluster ? new NodePool(workload.cluster.nodes, workload.cluster.placement) : undefined;
  const nodes: (readonly string[])[] | undefined = pool ? new Array(total) : undefined;
  const scheduler = new Scheduler(policy, { processors: pool ? pool.totalCpus : workload.processors }, total > 0 ? jobs[0].request.submitTime : 0, pool);
  const ends = new EndHeap();
  // Priority jobs (--jobtypes): each arrival's deadline is checked on the plan, as the controller does.
  const admissions: (Admission | undefined)[] | undefined = jobs.some((job) => job.request.deadline !== undefined) ? new Array(total) : undefined;
  if (admissions && !scheduler.plansOnNodes) throw new Error(`deadlines are planned on nodes: replay with a cluster and fcfs, easy or conservative (not ${policy})`);
  let nextArrival = 0;
  let started = 0;
  let passes = 0;
  const progressEvery = Math.max(1000, Math.floor(total / 200));
  let nextProgress = progressEvery;

  let wakeup: number | undefined;
  while (nextArrival < total || ends.size > 0 || wakeup !== undefined) {
    const now = Math.min(
      nextArrival < total ? jobs[nextArrival].request.submitTime : Infinity,
      ends.size > 0 ? ends.peek() : Infinity,
      wakeup ?? Infinity,
    );
    // 1. Ends at this instant.
    while (ends.size > 0 && ends.peek() === now) scheduler.end(jobs[ends.pop()].request.id, now);
    // 2. Arrivals at this instant, already in (submit time, id) order.
    const firstArrival = nextArrival;
    while (nextArrival < total && jobs[nextArrival].request.submitTime === now) {
      const request = jobs[nextArrival].request;
      if (admissions && request.deadline !== undefined) {
        const check = scheduler.deadlineCheck(request, now);
        admissions[nextArrival] = check.verdict === 'met' ? 'guaranteed' : check.verdict === 'short' ? 'unguaranteed' : 'refused';
        // A refused job still ran in the trace: it is replayed as a normal job.
        const { deadline: _refused, ...normal } = request;
        scheduler.submit(check.verdict === 'never' ? normal : { ...request, guaranteed: check.verdict === 'met' });
      } else scheduler.submit(request);
      nextArrival++;
    }
    // 3. One pass; predictions are needed only for this instant's arrivals.
    //    (Only the batch policies ask for wake-ups; the spec's three never do.)
    const arrivals = nextArrival > firstArrival && options.predictions !== false;
    for (const request of scheduler.pass(now, { predictions: arrivals })) {
      const index = indexById.get(request.id)!;
      starts[index] = now;
      ends.push(now + jobs[index].runtime, index);
      if (nodes) nodes[index] = scheduler.nodesOf(request.id)!;
      started++;
    }
    passes++;
    wakeup = scheduler.nextWakeup(now);
    for (let index = firstArrival; index < nextArrival; index++) {
      predictions[index] = scheduler.plannedStart(jobs[index].request.id)!;
    }
    if (options.onProgress && started >= nextProgress) {
      options.onProgress(started, total);
      nextProgress = started + progressEvery;
    }
  }
  options.onProgress?.(started, total);
  if (started < total) {
    // Nothing left to happen and jobs still waiting: a policy planned a start at an instant with no pass.
    const waiting = jobs.filter((_, index) => Number.isNaN(starts[index])).slice(0, 5).map((job) => job.request.id);
    throw new Error(`${policy}: ${total - started} of ${total} jobs never started (e.g. ${waiting.join(', ')}): a scheduling bug`);
  }
  const outcomes = nodes
    ? jobs.map((job, index) => ({ job, start: starts[index], predictedStart: predictions[index], nodes: nodes[index], ...(admissions?.[index] === undefined ? {} : { admission: admissions[index] }) }))
    : jobs.map((job, index) => ({ job, start: starts[index], predictedStart: predictions[index] }));
  return { policy, processors: workload.processors, outcomes, skipped: workload.skipped, passes };
}
