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

import { Arrivals } from './arrivals.js';
import { NodePlan, type NodeSlotPlan, type PlanHold } from '../node-plan.js';
import type { NodePool } from '../placement.js';
import type { QueueEntry, SchedulerState } from '../state.js';
import type { JobId, JobRequest, RunningJob, Seconds } from '../types.js';
import { predictedEnd } from '../types.js';
import type { Policy } from './policy.js';
import { bestEffortAhead, deadlineOrder, fifoOrder, sameOrder, type OrderPlanner } from './deadline-order.js';
import { isGuaranteed, latestStartOf } from '../types.js';

export type NodePolicyMode = 'fcfs' | 'easy' | 'conservative';

export const jobOwner = (id: JobId): string => `job:${id}`;

/** Why a conservative job's planned start moved later (shown by `taras when`). */
export type MoveReason = 'capacity' | 'not-free' | 'deadline' | 'reordered';

/** A running job's hold: its nodes until its predicted end (a job past its estimate holds them one more second at a time). */
function runningHold(run: RunningJob, now: Seconds): PlanHold {
  const resources = run.job.resources!;
  return {
    owner: jobOwner(run.job.id), start: run.start, end: Math.max(predictedEnd(run), now + 1), nodes: run.nodes,
    cpus: resources.cpusPerNode, memoryMiB: resources.memoryMiBPerNode,
  };
}

/**
 * Runs `body` with the hold of the advance reservation a job runs in lifted
 * (its nodes are the job's to use), then puts it back: jobs in a reservation
 * and others share one plan, the others planning around the reservation.
 */
function insideWindow<T>(plan: NodePlan, job: JobRequest, body: (notBefore: Seconds, latestStart: Seconds) => T): T {
  const window = job.window;
  if (window === undefined) return body(-Infinity, Infinity);
  const lifted = plan.getHold(window.owner);
  if (lifted !== undefined) plan.release(window.owner);
  try {
    return body(window.start, window.end - job.estimate);
  } finally {
    if (lifted !== undefined) plan.hold(lifted);
  }
}

/** The job's earliest start on the plan from `notBefore` (by `latest`), within its reservation if it has one. */
function earliestOf(plan: NodePlan, job: JobRequest, notBefore: Seconds, latest = Infinity) {
  return insideWindow(plan, job, (windowStart, windowLatest) =>
    plan.earliest(job.resources!, job.estimate, Math.max(notBefore, windowStart), Math.min(latest, windowLatest)));
}

function fitsOnOf(plan: NodePlan, job: JobRequest, nodes: readonly string[], start: Seconds): boolean {
  return insideWindow(plan, job, (windowStart, windowLatest) =>
    start >= windowStart && start <= windowLatest && plan.fitsOn(job.resources!, nodes, start, job.estimate));
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
  private readonly arrivals = new Arrivals();
  /** conservative: capacity appeared since the last pass (compress). */
  private gained = false;
  /**
   * conservative: where capacity appeared since the last compression: from
   * `gainFrom` to `gainTo`, on `gainNodes` (null: anywhere). A reservation at
   * t can move earlier only into a window holding a point before t where
   * capacity appeared (it fitted at t, so every earlier window was blocked
   * before t), on at least one node that gained (the others were as they are).
   */
  private gainFrom: Seconds = Infinity;
  private gainTo: Seconds = -Infinity;
  private gainNodes: Set<string> | null = new Set();
  /** conservative: a due job could not start on its nodes; the next pass plans every waiting job again. */
  private replanNext = false;
  /** conservative: the queue's order was changed on purpose (a job moved); the next pass plans every waiting job again in the new order. */
  private reorderNext = false;
  /** Why the arrivals being planned lost an earlier plan, if they had one. */
  private arrivalReason: MoveReason = 'capacity';
  private capacityVersion = -1;
  private lossVersion = -1;
  /** Holds the shell adds: advance reservations and maintenance windows. */
  private external: readonly PlanHold[] = [];
  private externalLoss = false;
  private externalGain = false;
  /**
   * fcfs/easy: the projection stays what a new one would be while only
   * arrivals at the back came (no start, end, cancellation, reorder or
   * capacity change) and nothing in it is due: then only the arrivals are planned.
   */
  private projectionValid = false;
  private projectedAt: Seconds = NaN;
  /** How many queue entries (from the front) the projection has planned, its earliest start, and (fcfs) where the last one starts. */
  private projected = 0;
  private projectedEarliest: Seconds = Infinity;
  private projectedLast: Seconds = -Infinity;
  private projectedBlocked = false;
  /** The state's capacityVersion the projection was made for. */
  private projectedCapacity = -1;
  /** conservative: jobs whose planned start moved later, and why (cleared when they start or leave). */
  readonly moved = new Map<JobId, MoveReason>();
  /** Guaranteed jobs that no queue place lets end by their deadline, as of the last deadline order. */
  atRisk: ReadonlySet<JobId> = new Set();
  /** Whether a job with a deadline was ever queued: until then the deadline order costs nothing. */
  private deadlinesSeen = false;

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
    this.projectionValid = false;
  }

  /**
   * A plan no one uses any more (the last pass's, a projection replaced), made
   * over again by the next runningPlan instead of a new one: with 100,000
   * nodes a new plan costs a pass about 200 ms, a reused one a few.
   */
  private spare: NodePlan | null = null;

  /** Hands a plan nothing refers to any more to the next runningPlan. */
  private recycle(plan: NodePlan | null): void {
    if (plan !== null && plan !== this.current) this.spare = plan;
  }

  /** The running jobs and the shell's holds on the nodes that count; nothing queued. */
  private runningPlan(state: SchedulerState, now: Seconds): NodePlan {
    const spare = this.spare;
    this.spare = null;
    const plan = spare !== null && spare.strategy === this.pool.strategy
      ? spare.reset(this.pool.countedNodes(), now)
      : new NodePlan(this.pool.countedNodes(), now, this.pool.strategy);
    for (const hold of this.external) plan.hold(hold);
    for (const run of state.running) if (run.job.resources) plan.hold(runningHold(run, now));
    return plan;
  }

  /** The nodes that count, in pool order, that no running job and no hold of the shell takes any of over [start, end). */
  wholeNodesFree(state: SchedulerState, start: Seconds, end: Seconds, now: Seconds): string[] {
    const plan = this.runningPlan(state, now);
    const free = this.pool.countedNodes().filter((node) => plan.timeline(node.name)!.fits(start, end - start, node.cpus, node.memoryMiB)).map((node) => node.name);
    this.recycle(plan);
    return free;
  }

  /** A plan from the running jobs and the shell's holds, noting the capacity it was made for. */
  private freshPlan(state: SchedulerState, now: Seconds): NodePlan {
    const plan = this.runningPlan(state, now);
    this.capacityVersion = state.capacityVersion;
    this.lossVersion = state.capacityLossVersion;
    this.externalLoss = false;
    this.externalGain = false;
    return plan;
  }

  onSubmit(entry: QueueEntry, reordered = false): void {
    if (reordered) this.projectionValid = false;
    if (entry.job.deadline !== undefined) this.deadlinesSeen = true;
    if (this.mode !== 'conservative') return;
    // Reserved in queue order: behind arrivals of the same or a higher priority.
    this.arrivals.add(entry);
  }

  onReorder(): void {
    this.projectionValid = false;
    if (this.mode === 'conservative') this.reorderNext = true;
  }

  onEnd(run: RunningJob, at: Seconds): void {
    this.projectionValid = false;
    if (this.mode !== 'conservative' || this.current === null) return;
    this.current.release(jobOwner(run.job.id));
    if (at < predictedEnd(run)) this.noteGain(at, predictedEnd(run), run.nodes);
  }

  /** Capacity appeared on `nodes` (null: anywhere) over [from, to): the next compression looks there. */
  private noteGain(from: Seconds, to: Seconds, nodes: readonly string[] | null): void {
    this.gained = true;
    if (from < this.gainFrom) this.gainFrom = from;
    if (to > this.gainTo) this.gainTo = to;
    if (nodes === null) this.gainNodes = null;
    else if (this.gainNodes !== null) for (const name of nodes) this.gainNodes.add(name);
  }

  onCancel(entry: QueueEntry): void {
    this.projectionValid = false;
    this.moved.delete(entry.job.id);
    if (this.mode !== 'conservative') return;
    this.arrivals.remove(entry);
    if (this.current?.release(jobOwner(entry.job.id))) this.noteGain(entry.reservation, entry.reservation + entry.job.estimate, entry.plannedNodes);
  }

  adopt(): void {
    this.projectionValid = false;
    const old = this.current;
    this.current = null;
    this.recycle(old);
  }

  schedule(state: SchedulerState, now: Seconds): QueueEntry[] {
    if (this.mode === 'conservative') return this.scheduleConservative(state, now);
    if (this.deadlinesQueued(state)) this.orderForDeadlines(state, now, fifoOrder(state.queue));
    const begun = this.scheduleInOrder(state, now);
    if (begun.length > 0) this.projectionValid = false;
    return begun;
  }

  plan(state: SchedulerState, now: Seconds): void {
    if (this.mode === 'conservative') {
      // (A gain is compressed at the next pass: a plan shown meanwhile keeps every promise.)
      this.bringUpToDate(state, now);
      this.reserveArrivals(state, now);
      this.meetDeadlines(state, now);
      return;
    }
    if (this.deadlinesQueued(state)) this.orderForDeadlines(state, now, fifoOrder(state.queue));
    const reusable = this.projectionValid && this.current !== null && this.projectedCapacity === state.capacityVersion
      && (now === this.projectedAt || (this.projectedEarliest > now && !(state.running.length > 0 && predictedEnd(state.running[0]) <= now)));
    if (!reusable) this.project(state, now);
    else if (this.projected < state.queue.length) this.projectFrom(state, this.current!, now);
  }

  // --- conservative -------------------------------------------------------

  /** The kept plan, rebuilt when the capacity it was made for changed. */
  private bringUpToDate(state: SchedulerState, now: Seconds): NodePlan {
    const lost = state.capacityLossVersion !== this.lossVersion || this.externalLoss;
    if (this.reorderNext) {
      // A move: every waiting job planned again, in the queue's new order (from scratch, as a fresh plan would).
      this.reorderNext = false;
      this.replanNext = false;
      this.rebuild(state, now, false, 'reordered');
    } else if (this.replanNext) {
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
    const old = this.current;
    const plan = this.freshPlan(state, now);
    this.current = plan;
    this.recycle(old);
    this.arrivals.clear();
    this.arrivalReason = why;
    for (const entry of state.queue) {
      if (keep && Number.isFinite(entry.reservation) && entry.reservation >= now
        && fitsOnOf(plan, entry.job, entry.plannedNodes, entry.reservation)) {
        plan.hold(reservationHold(entry));
        continue;
      }
      if (keep && Number.isFinite(entry.reservation) && entry.reservation < now && entry.plannedNodes.length > 0) {
        // Due and waiting for its own nodes (see scheduleConservative): it keeps them, from now on.
        entry.reservation = now;
        plan.hold(reservationHold(entry));
        continue;
      }
      if (Number.isFinite(entry.reservation)) entry.previous = entry.reservation;
      entry.reservation = NaN;
      entry.plannedNodes = [];
      this.arrivals.push(entry);
    }
    this.gained = false;
    this.gainFrom = Infinity;
    this.gainTo = -Infinity;
    this.gainNodes = new Set();
    // Capacity came back (or the shell rebuilt the state): any reservation may move earlier.
    if (keep) this.noteGain(-Infinity, Infinity, null);
  }

  private scheduleConservative(state: SchedulerState, now: Seconds): QueueEntry[] {
    let plan = this.bringUpToDate(state, now);
    if (this.gained) this.compress(state, plan, now);
    this.reserveArrivals(state, now);
    if (this.meetDeadlines(state, now)) plan = this.current!;
    const begun: QueueEntry[] = [];
    for (const entry of state.queue) {
      if (!(entry.reservation <= now)) continue;
      if (this.startable(entry.job, entry.plannedNodes)) {
        this.begin(state, plan, entry, now, entry.plannedNodes);
        begun.push(entry);
        continue;
      }
      if (entry.plannedNodes.every((name) => this.pool.accepts(name)) && this.mayWaitInPlace(plan, entry, now)) {
        // Its nodes take jobs but are still busy: a running job on them is past its planned end (a job
        // killed at its limit ends a moment after it: the agent counts from its own start, then the kill
        // grace), or started late itself for that reason. It waits for exactly those nodes, holding them
        // from now on: the jobs planned after it there wait as long as it does (no longer than the
        // overrun), and no other promise moves.
        plan.hold({ ...reservationHold(entry), start: now, end: now + entry.job.estimate });
        entry.reservation = now;
        this.moved.set(entry.job.id, 'not-free');
        continue;
      }
      if (entry.plannedNodes.every((name) => this.pool.accepts(name))) {
        // Waiting would run into a window or out of its reservation: planned again from the next second.
        plan.release(jobOwner(entry.job.id));
        entry.previous = entry.reservation;
        this.reserve(plan, entry, now + 1, 'not-free');
        continue;
      }
      // Its nodes are not taking jobs now (a node expected back after a restart). It keeps its place:
      // the next pass plans every waiting job again in queue order, so none behind it takes what it
      // waits for (moving it behind their reservations would let them pass).
      this.replanNext = true;
    }
    state.dropStarted(new Set(begun));
    return begun;
  }

  /**
   * Each reservation, in queue order, moves to its earliest start no later
   * than where it is, looking only where capacity appeared (see gainFrom).
   * A job that moves frees its old place: later jobs look there too, and
   * earlier ones at the next pass.
   */
  private compress(state: SchedulerState, plan: NodePlan, now: Seconds): void {
    let from = this.gainFrom;
    let to = this.gainTo;
    // Where capacity appeared, as a group of the plan's nodes (null: anywhere); jobs that move add their old nodes.
    const nodes = this.gainNodes === null ? null : plan.group(this.gainNodes);
    this.gained = false;
    this.gainFrom = Infinity;
    this.gainTo = -Infinity;
    this.gainNodes = new Set();
    let moved = false;
    for (const entry of state.queue) {
      const old = entry.reservation;
      if (!Number.isFinite(old) || old <= now || old <= from) continue;
      const { job } = entry;
      const resources = job.resources!;
      const lo = Math.max(now, from - job.estimate);
      const hi = Math.min(old - 1, to);
      if (lo > hi) continue;
      // At least one of its nodes must be one that gained (a job in a reservation searches in full): the
      // gained nodes are tested first, as a group (its runs of free CPUs), then node by node, with the job's
      // own hold in place. Where that hold lies on gained nodes, those are tested again as if it were lifted.
      const owner = jobOwner(job.id);
      const held = plan.getHold(owner);
      if (nodes !== null && job.window === undefined
        && !(nodes.mayFit(resources, job.estimate, hi) && plan.anyFits(resources, nodes, job.estimate, lo, hi))) {
        const own = entry.plannedNodes.filter((name) => nodes.has(name));
        if (own.length === 0 || held === undefined || !plan.anyFitsLifting(resources, own, job.estimate, lo, hi, held)) continue;
      }
      let slot: NodeSlotPlan | undefined;
      if (job.window === undefined) {
        // Searched with its own hold lifted on copies of its nodes' timelines: the plan changes only if it moves.
        // A one-node job can only move onto a node that gained: only those are searched.
        slot = plan.earliest(resources, job.estimate, lo, hi, resources.nodes === 1 && nodes !== null ? nodes : undefined, held);
        if (slot === undefined || slot.start >= old) continue;
        plan.release(owner);
      } else {
        plan.release(owner);
        slot = earliestOf(plan, job, lo, hi);
        if (slot === undefined || slot.start >= old) {
          if (held !== undefined) plan.hold(held);
          continue;
        }
      }
      const oldNodes = entry.plannedNodes;
      entry.reservation = slot.start;
      entry.plannedNodes = slot.nodes;
      plan.hold(reservationHold(entry));
      if (nodes !== null) nodes.lost(slot.nodes.length);
      moved = true;
      // Its old place is free now: a gain for the jobs after it (and, at the next pass, before it).
      if (old < from) from = old;
      if (old + job.estimate > to) to = old + job.estimate;
      if (nodes !== null) for (const name of oldNodes) nodes.add(name);
      this.noteGain(old, old + job.estimate, oldNodes);
    }
    if (!moved) this.gained = false;
  }

  private reserveArrivals(state: SchedulerState, now: Seconds): void {
    const plan = this.current!;
    for (const entry of this.arrivals.take()) this.reserve(plan, entry, now, this.arrivalReason);
    this.arrivalReason = 'capacity';
  }

  /** Reserves the entry at its earliest start from `notBefore` (Infinity: it cannot be planned on the nodes that count). */
  private reserve(plan: NodePlan, entry: QueueEntry, notBefore: Seconds, why: MoveReason): void {
    const slot = earliestOf(plan, entry.job, notBefore);
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

  // --- deadlines (seed 000 5.4) ------------------------------------------------

  /** How this policy plans a queue in order, for the deadline order (conservative and EASY: each job at its earliest; fcfs: never before the one ahead). */
  orderPlanner(state: SchedulerState, now: Seconds): OrderPlanner {
    return {
      fresh: () => this.runningPlan(state, now),
      done: (plan) => this.recycle(plan),
      earliest: (plan, job, notBefore) => (plan.couldHold(job.resources!) ? earliestOf(plan, job, notBefore) : undefined),
      hold: (plan, job, start, nodes) => plan.hold(reservationHold({ job, reservation: start, plannedNodes: nodes } as QueueEntry)),
      inOrder: this.mode === 'fcfs',
    };
  }

  /** Whether a job with a deadline is queued (checked only once one has been). */
  private deadlinesQueued(state: SchedulerState): boolean {
    if (this.deadlinesSeen && state.queue.some((entry) => entry.job.deadline !== undefined)) return true;
    if (this.atRisk.size > 0) this.atRisk = new Set();
    return false;
  }

  /**
   * The queue in the deadline order made from `base`; returns whether the
   * order changed. fcfs and EASY make it afresh each pass from the FIFO order
   * while any job with a deadline was ever queued (none: nothing is done).
   */
  private orderForDeadlines(state: SchedulerState, now: Seconds, base: readonly QueueEntry[]): boolean {
    // None queued now: only deadline jobs ever move, so the others are in FIFO order already.
    if (!this.deadlinesQueued(state)) return false;
    const result = deadlineOrder(base, this.orderPlanner(state, now), now);
    this.atRisk = result.atRisk;
    if (sameOrder(result.order, state.queue)) return false;
    state.queue = result.order;
    this.projectionValid = false;
    return true;
  }

  /**
   * conservative: a guaranteed job whose reservation no longer ends by its
   * deadline (an arrival whose FCFS place is too late, or capacity lost)
   * moves up from the current (scheduled) order, and every queued job is
   * planned again in the new order (the jobs it passes may start later than
   * promised: told 'deadline'). Returns whether the plan was made again.
   */
  private meetDeadlines(state: SchedulerState, now: Seconds): boolean {
    if (!this.deadlinesQueued(state)) return false;
    const missing = state.queue.some((entry) => isGuaranteed(entry.job) && !(entry.reservation <= latestStartOf(entry.job)));
    const base = bestEffortAhead(state.queue);
    if (!missing && sameOrder(base, state.queue)) {
      if (this.atRisk.size > 0) this.atRisk = new Set();
      return false;
    }
    if (!this.orderForDeadlines(state, now, base)) return false;
    this.rebuild(state, now, false, 'deadline');
    this.reserveArrivals(state, now);
    return true;
  }

  // --- fcfs and EASY --------------------------------------------------------

  private scheduleInOrder(state: SchedulerState, now: Seconds): QueueEntry[] {
    const plan = this.freshPlan(state, now);
    const begun: QueueEntry[] = [];
    let headFound = false;
    // No job asking more per node than any node has free now can start now (backfill's cheap test).
    let largest = this.pool.largestFreeNow();
    // EASY with guaranteed deadlines: every job up to the last guaranteed one is planned in order (as the
    // deadline order assumed), so no backfill delays a guaranteed job; backfill starts only beside them.
    const protectThrough = this.deadlinesQueued(state) ? lastIndexWhere(state.queue, (entry) => isGuaranteed(entry.job)) : -1;
    for (let index = 0; index < state.queue.length; index++) {
      const entry = state.queue[index];
      const { job } = entry;
      const resources = job.resources!;
      if (headFound && index <= protectThrough) {
        if (!plan.couldHold(resources)) continue;
        const slot = earliestOf(plan, job, now);
        if (slot === undefined) continue;
        if (slot.start === now && this.startable(job, slot.nodes)) {
          this.begin(state, plan, entry, now, slot.nodes);
          begun.push(entry);
          largest = this.pool.largestFreeNow();
          continue;
        }
        entry.reservation = slot.start;
        entry.plannedNodes = slot.nodes;
        plan.hold(reservationHold(entry));
        continue;
      }
      if (headFound) {
        // Nothing free on any node that takes jobs: no backfill can start (the queue need not be walked).
        if (largest.cpus === 0) break;
        if (resources.cpusPerNode > largest.cpus || resources.memoryMiBPerNode > largest.memoryMiB) continue;
      }
      if (!plan.couldHold(resources)) {
        // It waits for nodes that are out: under fcfs nothing passes it (unless it is in a reservation); EASY goes around it.
        if (this.mode === 'fcfs' && job.window === undefined) break;
        continue;
      }
      if (headFound) {
        // EASY's backfill: only where it fits now beside the head's reservation.
        if (job.size > state.startableProcessors) continue;
        const slot = earliestOf(plan, job, now, now);
        if (slot !== undefined && this.startable(job, slot.nodes)) {
          this.begin(state, plan, entry, now, slot.nodes);
          begun.push(entry);
          largest = this.pool.largestFreeNow();
        }
        continue;
      }
      const slot = earliestOf(plan, job, now);
      if (slot !== undefined && slot.start === now && this.startable(job, slot.nodes)) {
        this.begin(state, plan, entry, now, slot.nodes);
        begun.push(entry);
        continue;
      }
      if (job.window !== undefined) {
        // A job in a reservation waits for its window (or, with none left, for ever): it holds its place
        // in the window but is nobody's head: the queue behind it goes on.
        if (slot !== undefined) {
          entry.reservation = slot.start;
          entry.plannedNodes = slot.nodes;
          plan.hold(reservationHold(entry));
        }
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
    this.recycle(plan); // the pass's own: nothing refers to it once the pass is over
    return begun;
  }

  /** The projection: every queued job planned in queue order on the running jobs (fcfs: never before the one ahead). */
  private project(state: SchedulerState, now: Seconds): void {
    const old = this.current;
    this.current = this.freshPlan(state, now);
    this.recycle(old);
    this.projected = 0;
    this.projectedEarliest = Infinity;
    this.projectedLast = -Infinity;
    this.projectedBlocked = false;
    this.projectedAt = now;
    this.projectedCapacity = state.capacityVersion;
    this.projectionValid = true;
    this.projectFrom(state, this.current, now);
  }

  /** Plans the queue entries the projection has not covered yet, in order, on its plan. */
  private projectFrom(state: SchedulerState, plan: NodePlan, now: Seconds): void {
    const queue = state.queue;
    for (let index = this.projected; index < queue.length; index++) {
      const entry = queue[index];
      const resources = entry.job.resources!;
      const notBefore = this.mode === 'fcfs' ? Math.max(now, this.projectedLast) : now;
      const slot = this.projectedBlocked || !plan.couldHold(resources) ? undefined : earliestOf(plan, entry.job, notBefore);
      if (slot === undefined) {
        entry.reservation = Infinity;
        entry.plannedNodes = [];
        // Nothing passes a job waiting for nodes that are out under fcfs; a job in a reservation holds nobody up.
        if (this.mode === 'fcfs' && entry.job.window === undefined) this.projectedBlocked = true;
        continue;
      }
      entry.reservation = slot.start;
      entry.plannedNodes = slot.nodes;
      plan.hold(reservationHold(entry));
      if (slot.start < this.projectedEarliest) this.projectedEarliest = slot.start;
      if (entry.job.window === undefined) this.projectedLast = slot.start;
    }
    this.projected = queue.length;
  }

  // --- shared -----------------------------------------------------------------

  /**
   * Whether a due job may wait for its own nodes from `now`: it would still end
   * within its reservation, and no maintenance window or reservation on those
   * nodes begins before it would end. Otherwise it is planned again.
   */
  private mayWaitInPlace(plan: NodePlan, entry: QueueEntry, now: Seconds): boolean {
    const { job } = entry;
    const end = now + job.estimate;
    if (job.window !== undefined && (now < job.window.start || end > job.window.end)) return false;
    return !this.external.some((hold) => hold.owner !== job.window?.owner && hold.start < end && hold.end > now
      && hold.nodes.some((name) => entry.plannedNodes.includes(name)));
  }

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

function lastIndexWhere<T>(items: readonly T[], test: (item: T) => boolean): number {
  for (let index = items.length - 1; index >= 0; index--) if (test(items[index])) return index;
  return -1;
}

const sameHold = (a: PlanHold, b: PlanHold): boolean =>
  a.start === b.start && a.end === b.end && a.cpus === b.cpus && a.memoryMiB === b.memoryMiB && a.whole === b.whole
  && a.nodes.length === b.nodes.length && a.nodes.every((name, i) => name === b.nodes[i]);
