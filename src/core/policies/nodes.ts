// fcfs, EASY and conservative on a node pool, planned on nodes (NodePlan):
// every planned start names its nodes, and a job starts by taking exactly
// the nodes it was planned on. Trace replay without nodes keeps the
// processor policies (fcfs.ts, easy.ts, conservative.ts), exact to the spec.
//
// - conservative: every queued job holds a reservation (start and nodes) in
//   one plan kept between passes. Arrivals are reserved at their earliest
//   start in queue order. After a gain (an early end, a cancellation, nodes
//   back, a window removed) every reservation is compressed in queue order:
//   the job's hold is lifted and it takes the earliest start no later than
//   the old one (its old nodes at the old time are free again, so one
//   exists): no job ever starts later than its first promise. A loss (a node
//   down or drained, a window or reservation added) plans every queued job
//   again from scratch in queue order, and each job whose start moved later
//   is told why.
// - EASY: each pass plans the running jobs; jobs start in queue order while
//   they fit now; the first that does not (the head) is reserved at its
//   earliest start on nodes; a later job starts now only where it fits
//   beside the head's reservation, so no backfill delays the head.
// - fcfs: as EASY without backfilling.
// Planned starts of fcfs and EASY are a projection: the queue planned in
// order on the running jobs (fcfs: never before the job ahead).

import { NodePlan, type PlanHold } from '../node-plan.js';
import type { NodePool } from '../placement.js';
import type { QueueEntry, SchedulerState } from '../state.js';
import type { JobId, JobRequest, RunningJob, Seconds } from '../types.js';
import { predictedEnd } from '../types.js';
import type { Policy } from './policy.js';

export type NodePolicyMode = 'fcfs' | 'easy' | 'conservative';

export const jobOwner = (id: JobId): string => `job:${id}`;

/** Why a conservative job's planned start moved later (shown by `taras when`). */
export type MoveReason = 'capacity' | 'not-free';

/** A running job's hold: its nodes until its predicted end (a job past its estimate holds them one more second at a time). */
function runningHold(run: RunningJob, now: Seconds): PlanHold {
  const resources = run.job.resources!;
  return {
    owner: jobOwner(run.job.id), start: run.start, end: Math.max(predictedEnd(run), now + 1), nodes: run.nodes,
    cpus: resources.cpusPerNode, memoryMiB: resources.memoryMiBPerNode,
  };
}

function reservationHold(entry: QueueEntry): PlanHold {
  const resources = entry.job.resources!;
  return {
    owner: jobOwner(entry.job.id), start: entry.reservation, end: entry.reservation + entry.job.estimate, nodes: entry.plannedNodes,
    cpus: resources.cpusPerNode, memoryMiB: resources.memoryMiBPerNode,
  };
}

export class NodePlanPolicy implements Policy {
  readonly name: string;
  /** conservative: the plan kept between passes; fcfs/easy: the last projection (planned starts and what holds them). */
  private current: NodePlan | null = null;
  /** conservative: entries queued since the last pass, in queue order. */
  private arrivals: QueueEntry[] = [];
  /** conservative: capacity appeared since the last pass (compress). */
  private gained = false;
  /** conservative: a due job could not start on its nodes; the next pass plans every waiting job again. */
  private replanNext = false;
  /** Why the arrivals being planned lost an earlier plan, if they had one. */
  private arrivalReason: MoveReason = 'capacity';
  private capacityVersion = -1;
  private lossVersion = -1;
  /** Holds the shell adds: advance reservations and maintenance windows. */
  private external: readonly PlanHold[] = [];
  private externalLoss = false;
  private externalGain = false;
  /** fcfs/easy: whether the projection is still what a new one would be (nothing changed since, same instant). */
  private projectedAt: Seconds = NaN;
  private changes = 0;
  private projectedChanges = -1;
  /** conservative: jobs whose planned start moved later, and why (cleared when they start or leave). */
  readonly moved = new Map<JobId, MoveReason>();

  constructor(readonly mode: NodePolicyMode, private readonly pool: NodePool) {
    this.name = mode;
  }

  /** The plan as it stands after the last pass (conservative) or projection (fcfs, easy). */
  get currentPlan(): NodePlan | null {
    return this.current;
  }

  /** Replaces the shell's holds (reservations, windows). Adding or moving one takes capacity; removing one gives it. */
  setExternalHolds(holds: readonly PlanHold[]): void {
    const before = new Map(this.external.map((hold) => [hold.owner, hold]));
    const after = new Map(holds.map((hold) => [hold.owner, hold]));
    for (const [owner, hold] of after) {
      const old = before.get(owner);
      if (old === undefined || !sameHold(old, hold)) this.externalLoss = true;
    }
    for (const owner of before.keys()) if (!after.has(owner)) this.externalGain = true;
    this.external = holds;
    this.changes++;
  }

  get externalHolds(): readonly PlanHold[] {
    return this.external;
  }

  private freshPlan(state: SchedulerState, now: Seconds): NodePlan {
    const plan = new NodePlan(this.pool.countedNodes(), now, this.pool.strategy);
    for (const hold of this.external) plan.hold(hold);
    for (const run of state.running) if (run.job.resources) plan.hold(runningHold(run, now));
    this.capacityVersion = state.capacityVersion;
    this.lossVersion = state.capacityLossVersion;
    this.externalLoss = false;
    this.externalGain = false;
    return plan;
  }

  onSubmit(entry: QueueEntry): void {
    this.changes++;
    if (this.mode !== 'conservative') return;
    // Reserved in queue order: behind arrivals of the same or a higher priority.
    const priority = entry.job.priority ?? 0;
    let at = this.arrivals.length;
    while (at > 0 && (this.arrivals[at - 1].job.priority ?? 0) < priority) at--;
    this.arrivals.splice(at, 0, entry);
  }

  onEnd(run: RunningJob, at: Seconds): void {
    this.changes++;
    if (this.mode !== 'conservative' || this.current === null) return;
    this.current.release(jobOwner(run.job.id));
    if (at < predictedEnd(run)) this.gained = true;
  }

  onCancel(entry: QueueEntry): void {
    this.changes++;
    this.moved.delete(entry.job.id);
    if (this.mode !== 'conservative') return;
    this.arrivals = this.arrivals.filter((e) => e !== entry);
    if (this.current?.release(jobOwner(entry.job.id))) this.gained = true;
  }

  adopt(): void {
    this.changes++;
    this.current = null;
  }

  schedule(state: SchedulerState, now: Seconds): QueueEntry[] {
    this.changes++;
    return this.mode === 'conservative' ? this.scheduleConservative(state, now) : this.scheduleInOrder(state, now);
  }

  plan(state: SchedulerState, now: Seconds): void {
    if (this.mode === 'conservative') {
      // (A gain is compressed at the next pass: a plan shown meanwhile keeps every promise.)
      this.bringUpToDate(state, now);
      this.reserveArrivals(state, now);
      return;
    }
    if (this.projectedAt === now && this.projectedChanges === this.changes && this.capacityVersion === state.capacityVersion && this.current !== null) return;
    this.project(state, now);
  }

  // --- conservative -------------------------------------------------------

  /** The kept plan, rebuilt when the capacity it was made for changed. */
  private bringUpToDate(state: SchedulerState, now: Seconds): NodePlan {
    const lost = state.capacityLossVersion !== this.lossVersion || this.externalLoss;
    if (this.replanNext) {
      this.replanNext = false;
      this.rebuild(state, now, false, 'not-free');
    } else if (this.current === null || lost) {
      this.rebuild(state, now, this.current === null);
    } else if (state.capacityVersion !== this.capacityVersion || this.externalGain) {
      this.rebuild(state, now, true);
    }
    const plan = this.current!;
    plan.advance(now);
    // A running job past its predicted end still holds its nodes.
    for (const run of state.running) {
      if (run.job.resources && predictedEnd(run) <= now) plan.hold(runningHold(run, now));
    }
    return plan;
  }

  /**
   * A new plan on the nodes that count: running jobs, then (keep) every
   * reservation that still fits where it was, in queue order; the rest are
   * planned again as arrivals, in queue order.
   */
  private rebuild(state: SchedulerState, now: Seconds, keep: boolean, why: MoveReason = 'capacity'): void {
    const plan = this.freshPlan(state, now);
    this.current = plan;
    this.arrivals = [];
    this.arrivalReason = why;
    for (const entry of state.queue) {
      const resources = entry.job.resources!;
      if (keep && Number.isFinite(entry.reservation) && entry.reservation >= now
        && plan.fitsOn(resources, entry.plannedNodes, entry.reservation, entry.job.estimate)) {
        plan.hold(reservationHold(entry));
        continue;
      }
      if (Number.isFinite(entry.reservation)) entry.previous = entry.reservation;
      entry.reservation = NaN;
      entry.plannedNodes = [];
      this.arrivals.push(entry);
    }
    this.gained = keep;
  }

  private scheduleConservative(state: SchedulerState, now: Seconds): QueueEntry[] {
    const plan = this.bringUpToDate(state, now);
    if (this.gained) this.compress(state, plan, now);
    this.reserveArrivals(state, now);
    const begun: QueueEntry[] = [];
    for (const entry of state.queue) {
      if (!(entry.reservation <= now)) continue;
      if (this.startable(entry.job, entry.plannedNodes)) {
        this.begin(state, plan, entry, now, entry.plannedNodes);
        begun.push(entry);
        continue;
      }
      // Its nodes are not free or not taking jobs now (a job past its estimate, a node expected back).
      // It keeps its place: the next pass plans every waiting job again in queue order, so none behind
      // it takes what it waits for (moving it behind their reservations would let them pass).
      this.replanNext = true;
    }
    state.dropStarted(new Set(begun));
    return begun;
  }

  /**
   * Each reservation, in queue order, moves to its earliest start no later
   * than where it is. A job that moved (in time or to other nodes) frees its old slot, which jobs ahead
   * of it in the queue (already compressed) may use: that is a gain, and the
   * next pass compresses again, as the spec compresses at every pass.
   * (Otherwise a job could stay planned at an instant at which no pass need
   * happen: trace replay never started it.)
   */
  private compress(state: SchedulerState, plan: NodePlan, now: Seconds): void {
    let moved = false;
    for (const entry of state.queue) {
      const old = entry.reservation;
      if (!Number.isFinite(old) || old <= now) continue;
      const resources = entry.job.resources!;
      plan.release(jobOwner(entry.job.id));
      const slot = plan.earliest(resources, entry.job.estimate, now, old);
      if (slot !== undefined) {
        if (slot.start < old || !sameNodes(slot.nodes, entry.plannedNodes)) moved = true;
        entry.reservation = slot.start;
        entry.plannedNodes = slot.nodes;
      }
      plan.hold(reservationHold(entry));
    }
    this.gained = moved;
  }

  private reserveArrivals(state: SchedulerState, now: Seconds): void {
    const plan = this.current!;
    for (const entry of this.arrivals) this.reserve(plan, entry, now, this.arrivalReason);
    this.arrivalReason = 'capacity';
    this.arrivals.length = 0;
  }

  /** Reserves the entry at its earliest start from `notBefore` (Infinity: it cannot be planned on the nodes that count). */
  private reserve(plan: NodePlan, entry: QueueEntry, notBefore: Seconds, why: MoveReason): void {
    const slot = plan.earliest(entry.job.resources!, entry.job.estimate, notBefore);
    const previous = entry.previous;
    entry.previous = NaN;
    if (slot === undefined) {
      entry.reservation = Infinity;
      entry.plannedNodes = [];
      return;
    }
    entry.reservation = slot.start;
    entry.plannedNodes = slot.nodes;
    plan.hold(reservationHold(entry));
    if (slot.start > previous) this.moved.set(entry.job.id, why);
  }

  // --- fcfs and EASY --------------------------------------------------------

  private scheduleInOrder(state: SchedulerState, now: Seconds): QueueEntry[] {
    const plan = this.freshPlan(state, now);
    const begun: QueueEntry[] = [];
    let headFound = false;
    for (const entry of state.queue) {
      const { job } = entry;
      const resources = job.resources!;
      if (!plan.couldHold(resources)) {
        // It waits for nodes that are out: under fcfs nothing passes it; EASY goes around it.
        if (this.mode === 'fcfs') break;
        continue;
      }
      if (headFound) {
        // EASY's backfill: only where it fits now beside the head's reservation.
        if (job.size > state.startableProcessors) continue;
        const slot = plan.earliest(resources, job.estimate, now, now);
        if (slot !== undefined && this.startable(job, slot.nodes)) {
          this.begin(state, plan, entry, now, slot.nodes);
          begun.push(entry);
        }
        continue;
      }
      const slot = plan.earliest(resources, job.estimate, now);
      if (slot !== undefined && slot.start === now && this.startable(job, slot.nodes)) {
        this.begin(state, plan, entry, now, slot.nodes);
        begun.push(entry);
        continue;
      }
      headFound = true;
      if (slot !== undefined) {
        entry.reservation = slot.start;
        entry.plannedNodes = slot.nodes;
        plan.hold(reservationHold(entry));
      }
      if (this.mode === 'fcfs') break;
    }
    state.dropStarted(new Set(begun));
    return begun;
  }

  /** The projection: every queued job planned in queue order on the running jobs (fcfs: never before the one ahead). */
  private project(state: SchedulerState, now: Seconds): void {
    const plan = this.freshPlan(state, now);
    let notBefore = now;
    let blocked = false;
    for (const entry of state.queue) {
      const resources = entry.job.resources!;
      const slot = blocked || !plan.couldHold(resources) ? undefined : plan.earliest(resources, entry.job.estimate, notBefore);
      if (slot === undefined) {
        entry.reservation = Infinity;
        entry.plannedNodes = [];
        if (this.mode === 'fcfs') blocked = true;
        continue;
      }
      entry.reservation = slot.start;
      entry.plannedNodes = slot.nodes;
      plan.hold(reservationHold(entry));
      if (this.mode === 'fcfs') notBefore = slot.start;
    }
    this.current = plan;
    this.projectedAt = now;
    this.projectedChanges = this.changes;
  }

  // --- shared -----------------------------------------------------------------

  /** Whether the job can start now on exactly these nodes: each takes jobs and has its CPUs and memory free. */
  private startable(job: JobRequest, nodes: readonly string[]): boolean {
    const resources = job.resources!;
    return nodes.length === resources.nodes && nodes.every((name) => {
      if (!this.pool.accepts(name)) return false;
      const free = this.pool.free(name);
      return free.cpus >= resources.cpusPerNode && free.memoryMiB >= resources.memoryMiBPerNode;
    });
  }

  private begin(state: SchedulerState, plan: NodePlan, entry: QueueEntry, now: Seconds, nodes: readonly string[]): void {
    state.startJob(entry, now, nodes);
    entry.plannedNodes = nodes;
    this.moved.delete(entry.job.id);
    plan.hold(runningHold(state.getRunning(entry.job.id)!, now));
  }
}

const sameNodes = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((name, i) => name === b[i]);

const sameHold = (a: PlanHold, b: PlanHold): boolean =>
  a.start === b.start && a.end === b.end && a.cpus === b.cpus && a.memoryMiB === b.memoryMiB && a.whole === b.whole
  && sameNodes(a.nodes, b.nodes);
