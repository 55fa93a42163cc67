// The scheduled order of seed 000 (4.5.1, 5.4.1-5.4.2) on node plans: the
// FIFO order, with each guaranteed priority job moved to the latest queue
// place from which, planned in queue order on the running jobs, it still
// ends by its deadline. A job whose FCFS place meets its deadline stays
// there. Guaranteed jobs are placed tightest first and never ahead of a
// tighter one (the seed's deadline order), so placing one never breaks
// another. One no place can serve (nodes lost, tighter deadlines ahead) is
// "at risk": it waits right behind the tighter ones, as early as they allow;
// the shell learns when it must start and cannot (Scheduler.deadlinesDue).
// Priority jobs without a guarantee (their deadline could not be met at
// submission) go ahead of normal jobs of their partition, earliest deadline
// first: "priority over normal jobs".
//
// Planning a job at place p depends only on the jobs ahead of it, so its
// planned start can only grow with p: the places that meet its deadline are
// a prefix of the queue, found in one walk.

import type { NodePlan } from '../node-plan.js';
import type { QueueEntry } from '../state.js';
import { isGuaranteed, latestStartOf, type JobId, type JobRequest, type Seconds } from '../types.js';

/** How a policy plans a queue in order: on a fresh plan of the running jobs, each job at its earliest start. */
export interface OrderPlanner {
  /** The running jobs and the shell's holds, nothing queued. */
  fresh(): NodePlan;
  /** Hands back a plan from `fresh` that nothing refers to any more: the next `fresh` makes it over (a new plan of 100,000 nodes costs about 200 ms). */
  done(plan: NodePlan): void;
  /** The job's earliest start and nodes on the plan from `notBefore`; undefined: the nodes that count cannot hold it. */
  earliest(plan: NodePlan, job: JobRequest, notBefore: Seconds): { start: Seconds; nodes: readonly string[] } | undefined;
  /** Holds the job at `start` on `nodes`. */
  hold(plan: NodePlan, job: JobRequest, start: Seconds, nodes: readonly string[]): void;
  /** fcfs: no job is planned before the one ahead of it. */
  readonly inOrder: boolean;
}

export interface DeadlineOrder {
  readonly order: QueueEntry[];
  /** Guaranteed jobs no queue place lets end by their deadline now. */
  readonly atRisk: ReadonlySet<JobId>;
  /** With `withStarts`: the planned start of every job in `order` (Infinity: no plan); else empty. */
  readonly starts: ReadonlyMap<JobId, Seconds>;
}

const hasBestEffortDeadline = (job: JobRequest): boolean => job.deadline !== undefined && job.guaranteed !== true;

/** FIFO order (partition priority, submit time, id), best-effort priority jobs ahead of normal ones, earliest deadline first. */
export function fifoOrder(queue: readonly QueueEntry[]): QueueEntry[] {
  return [...queue].sort((a, b) => {
    const x = a.job;
    const y = b.job;
    const urgentX = hasBestEffortDeadline(x);
    const urgentY = hasBestEffortDeadline(y);
    return (y.priority ?? 0) - (x.priority ?? 0)
      || Number(urgentY) - Number(urgentX)
      || (urgentX && urgentY ? x.deadline! - y.deadline! : 0)
      || x.submitTime - y.submitTime || x.id - y.id;
  });
}

/**
 * The queue with priority jobs that have no guarantee moved ahead of the
 * other jobs of their partition priority, earliest deadline first; the rest
 * keep their order (conservative's scheduled order).
 */
export function bestEffortAhead(queue: readonly QueueEntry[]): QueueEntry[] {
  const urgent = queue.filter((entry) => hasBestEffortDeadline(entry.job))
    .sort((a, b) => a.job.deadline! - b.job.deadline! || a.job.id - b.job.id);
  const order = queue.filter((entry) => !hasBestEffortDeadline(entry.job));
  for (const entry of urgent) {
    const priority = entry.job.priority ?? 0;
    // Ahead of the first job of its partition priority or lower that is not one of them (guaranteed jobs are
    // placed again by deadlineOrder, which moves them up again where their deadlines need it).
    let at = order.findIndex((other) => !hasBestEffortDeadline(other.job) && (other.job.priority ?? 0) <= priority);
    if (at < 0) at = order.length;
    order.splice(at, 0, entry);
  }
  return order;
}

/** Plans `order` in order on a fresh plan; returns each job's planned start (Infinity: none). */
export function plannedStartsInOrder(order: readonly QueueEntry[], planner: OrderPlanner, now: Seconds): Map<JobId, Seconds> {
  const walk = new OrderWalk(planner, now);
  for (const entry of order) walk.take(entry.job);
  walk.finish();
  return walk.starts;
}

/** A queue planned in order, one job at a time, on one fresh plan. */
class OrderWalk {
  readonly plan: NodePlan;
  readonly starts = new Map<JobId, Seconds>();
  private last: Seconds;
  private blocked = false;

  constructor(private readonly planner: OrderPlanner, private readonly now: Seconds) {
    this.plan = planner.fresh();
    this.last = now;
  }

  /** The walk is over: its plan goes back to the planner. */
  finish(): void {
    this.planner.done(this.plan);
  }

  /** Where the job would start next (Infinity: no plan), without taking it. */
  peek(job: JobRequest): Seconds {
    if (this.blocked) return Infinity;
    return this.planner.earliest(this.plan, job, this.planner.inOrder ? this.last : this.now)?.start ?? Infinity;
  }

  /** Plans the job next. */
  take(job: JobRequest): void {
    const slot = this.blocked ? undefined : this.planner.earliest(this.plan, job, this.planner.inOrder ? this.last : this.now);
    if (slot === undefined) {
      // Under fcfs nothing passes a job that waits for nodes that are out (as the projection does).
      if (this.planner.inOrder && job.window === undefined) this.blocked = true;
      this.starts.set(job.id, Infinity);
      return;
    }
    this.planner.hold(this.plan, job, slot.start, slot.nodes);
    if (job.window === undefined) this.last = slot.start;
    this.starts.set(job.id, slot.start);
  }
}

/** Earliest deadline first: by latest start, then id. */
const tighterFirst = (a: QueueEntry, b: QueueEntry): number => latestStartOf(a.job) - latestStartOf(b.job) || a.job.id - b.job.id;

/**
 * Guaranteed jobs are placed one at a time, tightest latest start first
 * (the seed's deadline order), each at the latest place no later than its
 * place in `queue` from which it ends by its deadline, and never ahead of a
 * tighter one: a place depends only on the jobs ahead of it, so no placement
 * breaks an earlier one. One that no such place serves is at risk and waits
 * right behind the tighter ones, as early as they allow.
 */
export function deadlineOrder(queue: readonly QueueEntry[], planner: OrderPlanner, now: Seconds, withStarts = false): DeadlineOrder {
  const order = queue.filter((entry) => !isGuaranteed(entry.job));
  const guaranteed = queue.filter((entry) => isGuaranteed(entry.job));
  const startsOf = () => (withStarts ? plannedStartsInOrder(order, planner, now) : new Map<JobId, Seconds>());
  if (guaranteed.length === 0) return { order, atRisk: new Set(), starts: startsOf() };
  // Each guaranteed job's place in `queue`, counted in the other jobs ahead of it.
  const othersAhead = new Map<QueueEntry, number>();
  let others = 0;
  for (const entry of queue) {
    if (isGuaranteed(entry.job)) othersAhead.set(entry, others);
    else others++;
  }
  const atRisk = new Set<JobId>();
  let placedThrough = 0; // the order's index just after the last guaranteed job placed
  for (const entry of guaranteed.sort(tighterFirst)) {
    // Latest allowed place: behind its own share of the other jobs, and never ahead of the tighter ones.
    let bound = 0;
    for (let seen = 0; bound < order.length && (seen < othersAhead.get(entry)! || isGuaranteed(order[bound].job)); bound++) {
      if (!isGuaranteed(order[bound].job)) seen++;
    }
    bound = Math.max(bound, placedThrough);
    const walk = new OrderWalk(planner, now);
    for (let index = 0; index < placedThrough; index++) walk.take(order[index].job);
    let place = -1;
    for (let at = placedThrough; at <= bound; at++) {
      if (walk.peek(entry.job) > latestStartOf(entry.job)) break;
      place = at;
      if (at < bound) walk.take(order[at].job);
    }
    walk.finish();
    if (place < 0) {
      atRisk.add(entry.job.id);
      place = placedThrough;
    }
    order.splice(place, 0, entry);
    placedThrough = place + 1;
  }
  return { order, atRisk, starts: startsOf() };
}

/** Whether two orders put the same entries in the same places. */
export function sameOrder(a: readonly QueueEntry[], b: readonly QueueEntry[]): boolean {
  return a.length === b.length && a.every((entry, index) => entry === b[index]);
}
