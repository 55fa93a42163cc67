// The scheduler: the core's one entry point for shells. Feed it events
// (submit, end, cancel) and call `pass(now)` at each instant; it returns the
// jobs to start and keeps the planned start of every queued job.
// Pure: no I/O, no clock; time comes in as arguments.

import { BatchPolicy, batchPackers } from './policies/batch.js';
import { ConservativePolicy } from './policies/conservative.js';
import { easyPolicy } from './policies/easy.js';
import { fcfsPolicy } from './policies/fcfs.js';
import { jobOwner, NodePlanPolicy, type MoveReason } from './policies/nodes.js';
import type { Policy } from './policies/policy.js';
import type { PlanHold } from './node-plan.js';
import type { NodePool } from './placement.js';
import { SchedulerState } from './state.js';
import { isGuaranteed, latestStartOf, type JobId, type JobRequest, type Machine, type RunningJob, type Seconds } from './types.js';
import { bestEffortAhead, deadlineOrder, fifoOrder } from './policies/deadline-order.js';
import type { QueueEntry } from './state.js';

export const policyNames = ['fcfs', 'easy', 'conservative', ...(Object.keys(batchPackers) as (keyof typeof batchPackers)[])] as const;
export type PolicyName = (typeof policyNames)[number];

export function isPolicyName(name: string): name is PolicyName {
  return (policyNames as readonly string[]).includes(name);
}

export function createPolicy(name: PolicyName, machine: Machine, origin: Seconds, pool?: NodePool): Policy {
  // On nodes, fcfs, EASY and conservative plan node by node (policies/nodes.ts).
  if (pool && (name === 'fcfs' || name === 'easy' || name === 'conservative')) return new NodePlanPolicy(name, pool);
  switch (name) {
    case 'fcfs':
      return fcfsPolicy();
    case 'easy':
      return easyPolicy();
    case 'conservative':
      return new ConservativePolicy(machine.processors, origin);
    default:
      return new BatchPolicy(name);
  }
}

/**
 * Would a job with a deadline, queued now, end by it? `met`: yes, with a
 * guarantee (planned end). `short`: not with a guarantee; it would run as a
 * priority job without one and end `shortfall` seconds after its deadline
 * (Infinity: the nodes that count cannot hold it now); `cause` says why.
 * `never`: no plan ever could (deadline before now + its time limit).
 */
export type DeadlineCheck =
  | { readonly verdict: 'met'; readonly plannedEnd: Seconds }
  | { readonly verdict: 'short'; readonly plannedEnd: Seconds; readonly shortfall: Seconds; readonly cause: 'capacity' | 'other-deadlines' }
  | { readonly verdict: 'never'; readonly earliestEnd: Seconds };

export interface PassOptions {
  /** Compute planned starts for every queued job (always available for conservative). */
  readonly predictions?: boolean;
}

const NO_JOBS: ReadonlySet<JobId> = new Set();

export class Scheduler {
  readonly state: SchedulerState;
  private readonly policy: Policy;
  private startedInLastPass = new Map<JobId, Seconds>();
  private adopted = false;

  /**
   * @param pool concrete nodes for jobs with `resources` (the live cluster);
   * the machine's processors are then the pool's CPUs, the capacity the time
   * profile plans with, and every start is placed on nodes.
   */
  constructor(
    readonly policyName: PolicyName,
    readonly machine: Machine,
    origin: Seconds = 0,
    pool?: NodePool,
  ) {
    if (pool && pool.totalCpus !== machine.processors) {
      throw new RangeError(`the machine has ${machine.processors} processors but its nodes have ${pool.totalCpus} CPUs`);
    }
    this.state = new SchedulerState(machine.processors, pool);
    this.policy = createPolicy(policyName, machine, origin, pool);
  }

  /**
   * A job joins the back of the queue (`inPlace`: its place by priority, submit time and id, as a requeued job).
   * Rejects jobs that can never run here.
   */
  submit(job: JobRequest, inPlace = false): void {
    if (!(job.size >= 1 && job.size <= this.machine.processors)) {
      throw new RangeError(`job ${job.id} asks for ${job.size} processors; the machine has ${this.machine.processors}`);
    }
    if (!(job.estimate > 0)) throw new RangeError(`job ${job.id} has estimate ${job.estimate}; it must be > 0`);
    this.checkResources(job);
    if (job.resources && this.state.pool && !this.state.pool.couldEverPlace(job.resources)) {
      throw new RangeError(`job ${job.id} fits on no set of nodes of this cluster, even when all are idle`);
    }
    if (job.deadline !== undefined) this.deadlinesSeen = true;
    const entry = inPlace ? this.state.reinsert(job) : this.state.enqueue(job);
    this.policy.onSubmit?.(entry, !this.state.isLast(entry));
  }

  /** On nodes, plans and placement count CPUs per node: a job's size must be what it asks of them. */
  private checkResources(job: JobRequest): void {
    if (this.state.pool && (!job.resources || job.size !== job.resources.nodes * job.resources.cpusPerNode)) {
      throw new RangeError(`job ${job.id} asks for ${job.size} processors but ${job.resources ? `${job.resources.nodes} x ${job.resources.cpusPerNode} CPUs of nodes` : 'no nodes'}: on a node pool, give resources with size = nodes x CPUs per node`);
    }
  }

  /** A running job ended at `at`. */
  end(id: JobId, at: Seconds): RunningJob {
    const run = this.state.removeRunning(id);
    this.policy.onEnd?.(run, at, this.state.releaseOf(run));
    return run;
  }

  /**
   * The shell could not carry out a start the core decided (its verify step
   * failed: a node went away, say). The job goes back to its place in the
   * queue and is planned again at the next pass.
   */
  unstart(id: JobId, now: Seconds): void {
    const run = this.state.removeRunning(id);
    this.policy.onEnd?.(run, now, this.state.releaseOf(run));
    const entry = this.state.reinsert(run.job);
    this.policy.onSubmit?.(entry, !this.state.isLast(entry));
    this.startedInLastPass.delete(id);
  }

  /**
   * A job already running when the shell (re)started, with its start and
   * nodes; call before the next pass. Queued jobs are restored with `submit`.
   */
  adoptRunning(job: JobRequest, start: Seconds, nodes: readonly string[]): void {
    this.checkResources(job);
    this.state.addRunning({ job, start, nodes });
    this.adopted = true;
  }

  /**
   * A running job's end moved later by `seconds` (it was suspended that
   * long: its time limit was held): its estimate grows, and the policy
   * plans the queue around its new end at the next pass.
   */
  extendRunning(id: JobId, seconds: Seconds): void {
    if (!(seconds > 0)) return;
    const run = this.state.removeRunning(id);
    this.state.addRunning({ ...run, job: { ...run.job, estimate: run.job.estimate + seconds } });
    this.adopted = true;
  }

  /**
   * A running job's request changed (scontrol update of its time limit): its estimate, and so its end, is the
   * new one's; it keeps its start and nodes, and the policy plans the queue around its new end at the next pass.
   */
  reviseRunning(job: JobRequest): void {
    const run = this.state.removeRunning(job.id);
    this.state.addRunning({ ...run, job });
    this.adopted = true;
  }

  /** The nodes a running job was placed on (empty without a node pool). */
  nodesOf(id: JobId): readonly string[] | undefined {
    return this.state.getRunning(id)?.nodes;
  }

  /** A queued job's request changed (its reservation came or went): it keeps its place in the queue and is planned again. */
  replaceQueued(job: JobRequest): boolean {
    const replaced = this.state.replaceQueued(job);
    if (!replaced) return false;
    this.policy.onCancel?.(replaced.old);
    this.policy.onSubmit?.(replaced.entry, !this.state.isLast(replaced.entry));
    return true;
  }

  /**
   * The shell changed the queue order on purpose (`taras move`: a job's priority or submit-time key, given
   * again with replaceQueued): fcfs and EASY follow the new order at once, conservative plans every waiting
   * job again in it at the next pass.
   */
  reorder(): void {
    this.policy.onReorder?.();
  }

  /** A queued job leaves without starting. Returns false if it is not queued. */
  cancel(id: JobId): boolean {
    const entry = this.state.removeQueued(id);
    if (!entry) return false;
    this.policy.onCancel?.(entry);
    return true;
  }

  /** One scheduling pass at `now`: starts jobs and returns them in start order. */
  pass(now: Seconds, options: PassOptions = {}): JobRequest[] {
    if (this.adopted) {
      this.policy.adopt?.(this.state, now);
      this.adopted = false;
    }
    const started = this.policy.schedule(this.state, now);
    if (options.predictions) this.policy.plan(this.state, now);
    this.startedInLastPass = new Map(started.map((e) => [e.job.id, now]));
    return started.map((e) => e.job);
  }

  /**
   * Planned start of a job after the last pass (its actual start if it started
   * then). For fcfs and easy, as of the last pass that asked for predictions.
   */
  plannedStart(id: JobId): Seconds | undefined {
    const started = this.startedInLastPass.get(id);
    if (started !== undefined) return started;
    const entry = this.state.getQueued(id);
    // Plans count only nodes that take jobs (or are expected back): a job they cannot hold (or, under
    // fcfs, one behind it) has no planned start until nodes come back (Slurm shows N/A).
    if (entry === undefined || !Number.isFinite(entry.reservation) || !this.state.plannable(entry.job)) return undefined;
    return entry.reservation;
  }

  /** Whether a queued job could be planned on the nodes that count now (false: it waits for nodes that are out). */
  couldBePlanned(id: JobId): boolean {
    const entry = this.state.getQueued(id);
    return entry === undefined || this.state.plannable(entry.job);
  }

  /** Brings the planned start of every queued job up to date (then read with `plannedStart`). */
  plan(now: Seconds): void {
    this.policy.plan(this.state, now);
  }

  /** The planned starts of the queued jobs in queue order, as the last plan left them (NaN: none). */
  queuedReservations(): Float64Array {
    const queue = this.state.queue;
    const out = new Float64Array(queue.length);
    for (let i = 0; i < queue.length; i++) out[i] = queue[i].reservation;
    return out;
  }

  /** Planned starts of every queued job, computed now. */
  plannedStarts(now: Seconds): Map<JobId, Seconds> {
    this.plan(now);
    return new Map(this.state.queue.map((e) => [e.job.id, e.reservation]));
  }

  /** The next instant after `now` at which a pass is due though no job ends or arrives (a guaranteed job's latest start included). */
  nextWakeup(now: Seconds): Seconds | undefined {
    const policy = this.policy.nextWakeup?.(now);
    if (!this.deadlinesSeen) return policy;
    let next = policy;
    for (const entry of this.state.queue) {
      if (!isGuaranteed(entry.job)) continue;
      const latest = latestStartOf(entry.job);
      if (latest > now && (next === undefined || latest < next)) next = latest;
    }
    return next;
  }

  /**
   * sbatch --test-only: where the job would be planned if it joined the queue
   * now (behind the jobs of its priority), on the plan of the running jobs and
   * the queue ahead of it. Pure what-if: nothing changes. Undefined: no node
   * plans (batch policies), or the nodes that count cannot hold it now.
   */
  probe(job: JobRequest, now: Seconds): { start: Seconds; nodes: readonly string[] } | undefined {
    const policy = this.nodePolicy;
    if (!policy) return undefined;
    const planner = policy.orderPlanner(this.state, now);
    const queue = [...this.state.queue];
    let at = queue.length;
    while (at > 0 && (queue[at - 1].job.priority ?? 0) < (job.priority ?? 0)) at--;
    queue.splice(at, 0, { job } as QueueEntry);
    const plan = planner.fresh();
    try {
      let last = now;
      for (const entry of policy.mode === 'conservative' ? bestEffortAhead(queue) : fifoOrder(queue)) {
        const slot = planner.earliest(plan, entry.job, planner.inOrder ? last : now);
        if (entry.job.id === job.id) return slot;
        if (slot === undefined) {
          if (planner.inOrder && entry.job.window === undefined) return undefined; // fcfs: nothing passes it
          continue;
        }
        planner.hold(plan, entry.job, slot.start, slot.nodes);
        last = slot.start;
      }
      return undefined;
    } finally {
      planner.done(plan);
    }
  }

  // --- deadlines ------------------------------------------------------------

  private deadlinesSeen = false;

  /**
   * The admission check (seed 000 2.2.3): the deadline order with the job
   * added, as a guaranteed job at its FIFO place. Guaranteed if it ends by
   * its deadline without putting another guaranteed job at risk; otherwise
   * its end as a priority job without a guarantee, and by how much it misses.
   * Pure what-if: nothing changes. Needs node plans. `without`: queued jobs
   * left out of it (a queued job checked again as it would be after an update:
   * it must not compete with its old self).
   */
  deadlineCheck(job: JobRequest, now: Seconds, ahead: readonly JobRequest[] = [], without: ReadonlySet<JobId> = NO_JOBS): DeadlineCheck {
    const policy = this.nodePolicy;
    if (!policy) throw new Error('deadlines need a node pool and fcfs, easy or conservative');
    if (job.deadline === undefined) throw new RangeError(`job ${job.id} has no deadline`);
    if (job.deadline < now + job.estimate) return { verdict: 'never', earliestEnd: now + job.estimate };
    const planner = policy.orderPlanner(this.state, now);
    const conservative = policy.mode === 'conservative';
    const orderWith = (probe?: JobRequest): QueueEntry[] => {
      const queue = without.size === 0 ? [...this.state.queue] : this.state.queue.filter((entry) => !without.has(entry.job.id));
      // `ahead`: jobs accepted before it but not queued yet (earlier in the same batch).
      for (const arrival of probe === undefined ? ahead : [...ahead, probe]) {
        const entry = { job: arrival } as QueueEntry;
        // Conservative keeps its scheduled order (an arrival joins behind its priority); fcfs and EASY start from FIFO.
        let at = queue.length;
        while (conservative && at > 0 && (queue[at - 1].job.priority ?? 0) < (arrival.priority ?? 0)) at--;
        queue.splice(at, 0, entry);
      }
      return conservative ? bestEffortAhead(queue) : fifoOrder(queue);
    };
    const before = deadlineOrder(orderWith(), planner, now).atRisk;
    const guaranteed = deadlineOrder(orderWith({ ...job, guaranteed: true }), planner, now, true);
    const end = (starts: ReadonlyMap<JobId, Seconds>) => (starts.get(job.id) ?? Infinity) + job.estimate;
    const breaksOthers = [...guaranteed.atRisk].some((id) => id !== job.id && !before.has(id));
    if (!guaranteed.atRisk.has(job.id) && !breaksOthers) return { verdict: 'met', plannedEnd: end(guaranteed.starts) };
    const plannedEnd = end(deadlineOrder(orderWith({ ...job, guaranteed: false }), planner, now, true).starts);
    // Other deadlines are the cause when the job would meet its own at the front of the queue (the running jobs only).
    const front = planner.fresh();
    const alone = planner.earliest(front, job, now);
    planner.done(front);
    const cause = alone !== undefined && alone.start <= latestStartOf(job) ? 'other-deadlines' : 'capacity';
    return { verdict: 'short', plannedEnd, shortfall: Math.max(0, plannedEnd - job.deadline), cause };
  }

  /** Guaranteed jobs no queue place lets end by their deadline any more (after the last pass). */
  atRisk(id: JobId): boolean {
    return this.nodePolicy?.atRisk.has(id) ?? false;
  }

  /** Every guaranteed job at risk (see atRisk), as of the last deadline order: empty unless priority jobs are queued. */
  atRiskJobs(): ReadonlySet<JobId> {
    return this.nodePolicy?.atRisk ?? NO_JOBS;
  }

  /**
   * Queued guaranteed jobs that had to start by now to end by their deadline
   * and did not (after this pass): the moment to free nodes for them, or
   * (Slurm's --deadline) to end them. Latest start first.
   */
  deadlinesDue(now: Seconds): { id: JobId; latestStart: Seconds }[] {
    if (!this.deadlinesSeen) return [];
    return this.state.queue.filter((entry) => isGuaranteed(entry.job) && latestStartOf(entry.job) <= now)
      .map((entry) => ({ id: entry.job.id, latestStart: latestStartOf(entry.job) }))
      .sort((a, b) => a.latestStart - b.latestStart || a.id - b.id);
  }

  /** The node policy, when jobs are planned on nodes. */
  private get nodePolicy(): NodePlanPolicy | undefined {
    return this.policy instanceof NodePlanPolicy ? this.policy : undefined;
  }

  /** Whether planned starts name nodes (a node pool under fcfs, easy or conservative). */
  get plansOnNodes(): boolean {
    return this.nodePolicy !== undefined;
  }

  /** The nodes a job runs on, or is planned on (after the last plan); undefined if neither. */
  plannedNodes(id: JobId): readonly string[] | undefined {
    const running = this.state.getRunning(id);
    if (running) return running.nodes;
    const entry = this.state.getQueued(id);
    return entry && Number.isFinite(entry.reservation) && entry.plannedNodes.length > 0 ? entry.plannedNodes : undefined;
  }

  /**
   * What a queued job planned on nodes waits for: the holds (running jobs,
   * reservations of jobs ahead, the shell's reservations and windows) that
   * end at its planned start on its planned nodes. Empty if it is due or has no plan.
   */
  heldBy(id: JobId): PlanHold[] {
    const entry = this.state.getQueued(id);
    const plan = this.nodePolicy?.currentPlan;
    if (!entry || !plan || !Number.isFinite(entry.reservation)) return [];
    const own = jobOwner(id);
    return plan.holdsEndingAt(entry.plannedNodes, entry.reservation).filter((hold) => hold.owner !== own);
  }

  /** Why a conservative job's planned start moved later than first planned, if it did. */
  movedBecause(id: JobId): MoveReason | undefined {
    return this.nodePolicy?.moved.get(id);
  }

  /** The shell's holds in the plan: advance reservations and maintenance windows (owners `reservation:`/`maintenance:`). */
  setExternalHolds(holds: readonly PlanHold[]): void {
    const policy = this.nodePolicy;
    if (!policy) throw new Error('reservations and maintenance windows need a node pool and fcfs, easy or conservative');
    policy.setExternalHolds(holds);
  }

  /** Nodes wholly free over [start, end) beside the running jobs and the shell's holds (see NodePlanPolicy.wholeNodesFree). */
  wholeNodesFree(start: Seconds, end: Seconds, now: Seconds): string[] {
    const policy = this.nodePolicy;
    if (!policy) throw new Error('free nodes over time need a node pool and fcfs, easy or conservative');
    return policy.wholeNodesFree(this.state, start, end, now);
  }

  get queueLength(): number {
    return this.state.queue.length;
  }
}
