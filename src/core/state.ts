// The scheduler's in-memory model at an instant: the queue in queue order and
// the running jobs sorted by (predicted end, job id). Policies read it and
// decide; `startJob` is the one place a queued job becomes a running one.

import type { NodePool } from './placement.js';
import type { JobId, JobRequest, RunningJob, Seconds } from './types.js';
import { predictedEnd } from './types.js';

/** A queued job with the bookkeeping planning policies keep on it. */
export interface QueueEntry {
  readonly job: JobRequest;
  /** Arrival sequence number: increases with every enqueue. */
  readonly seq: number;
  /** Reserved (promised) start, NaN when the job holds no reservation. */
  reservation: Seconds;
  /** On a node pool: the nodes the reservation is on (empty without one). */
  plannedNodes: readonly string[];
  /** The start it was planned at before a loss of capacity made it plan again (NaN: none). */
  previous: Seconds;
  /**
   * Span of the capacity gains seen since the reservation was made: earliest
   * start, latest end (Infinity, -Infinity when none; see conservative.ts).
   */
  gainFrom: Seconds;
  gainTo: Seconds;
  /** Span of the capacity this entry freed in the current pass (Infinity, -Infinity if none). */
  freedFrom: Seconds;
  freedTo: Seconds;
}

const NO_NODES: readonly string[] = [];

/** Whether `a` goes ahead of `b` in the queue's key order: higher priority, then earlier submit time, then lower id. */
function keyBefore(a: JobRequest, b: JobRequest): boolean {
  const pa = a.priority ?? 0;
  const pb = b.priority ?? 0;
  return pa > pb || (pa === pb && (a.submitTime < b.submitTime || (a.submitTime === b.submitTime && a.id < b.id)));
}

/** The place behind the last entry whose job `goesAhead` says stays in front, searching from the back (none: 0). */
function walkPlace(queue: readonly QueueEntry[], goesAhead: (ahead: JobRequest) => boolean): number {
  let at = queue.length;
  while (at > 0 && !goesAhead(queue[at - 1].job)) at--;
  return at;
}

const byEndThenId = (a: RunningJob, b: RunningJob): number =>
  predictedEnd(a) - predictedEnd(b) || a.job.id - b.job.id;

export class SchedulerState {
  /** The queue as last compacted: may still hold entries that left (`leaving`). */
  private entries: QueueEntry[] = [];
  /**
   * Entries removed since the queue was last read: taken out in one pass at the next read, so that
   * cancelling 50,000 pending jobs in one request costs one walk of the queue, not one per job.
   */
  private readonly leaving = new Set<QueueEntry>();
  /**
   * Entries put back in key order (reinsert on a queue in key order) since the queue was last read: merged
   * in at the next read, in one walk, so that releasing 10,000 held jobs moves the queue's array once,
   * not once each. Each goes where a reinsert of its own would have put it (keys are distinct).
   */
  private arriving: QueueEntry[] = [];
  /** The entry of `arriving` that goes last (null: none): whether the newest one is the queue's last needs no merge. */
  private lastArriving: QueueEntry | null = null;
  /**
   * Whether the queue is in key order (priority, then submit time, then id: keyBefore), so that a job put back
   * finds its place by bisection; null: not known since a policy set the queue (found at the next reinsert).
   */
  private ordered: boolean | null = true;

  /** Queue order: arrival order (submit time, then id) unless a policy reorders it. */
  get queue(): QueueEntry[] {
    if (this.leaving.size > 0) this.compact();
    if (this.arriving.length > 0) this.mergeArriving();
    return this.entries;
  }

  set queue(entries: QueueEntry[]) {
    // Read by the policy that built this order, which merged them; put back since, they go where a reinsert
    // into the new order puts them (the walk from the back: the new order's key order is not known).
    const arriving = this.arriving.filter((entry) => !this.leaving.has(entry));
    this.arriving = [];
    this.lastArriving = null;
    this.entries = entries;
    this.ordered = null;
    // An order built before a removal must not bring the removed entry back.
    if (this.leaving.size > 0) this.compact();
    const order = this.entries; // compact may have made a new array
    for (const entry of arriving) order.splice(walkPlace(order, (ahead) => keyBefore(ahead, entry.job)), 0, entry);
  }

  /** The entries put back since the last read, in their places (the queue and they are in key order). */
  private mergeArriving(): void {
    const arriving = this.arriving.length === 1 ? this.arriving : this.arriving.sort((a, b) => (keyBefore(a.job, b.job) ? -1 : 1));
    this.arriving = [];
    this.lastArriving = null;
    const entries = this.entries;
    if (arriving.length <= 2) {
      for (const entry of arriving) entries.splice(this.keyPlace(entry.job), 0, entry);
      return;
    }
    const merged: QueueEntry[] = new Array(entries.length + arriving.length);
    let i = 0;
    let j = 0;
    let k = 0;
    while (i < entries.length && j < arriving.length) merged[k++] = keyBefore(arriving[j].job, entries[i].job) ? arriving[j++] : entries[i++];
    while (i < entries.length) merged[k++] = entries[i++];
    while (j < arriving.length) merged[k++] = arriving[j++];
    this.entries = merged;
  }

  private compact(): void {
    const leaving = this.leaving;
    // One or two (a job moved, an update): found and spliced out; more: one walk for all of them.
    if (leaving.size <= 2) {
      for (const entry of leaving) {
        // Not there when a policy's new order already left it out (the setter).
        const at = this.entries.indexOf(entry);
        if (at >= 0) this.entries.splice(at, 1);
      }
    }
    else this.entries = this.entries.filter((e) => !leaving.has(e));
    // Put back and gone again before the queue was read.
    if (this.arriving.length > 0) {
      this.arriving = this.arriving.filter((e) => !leaving.has(e));
      this.lastArriving = null;
      for (const entry of this.arriving) if (this.lastArriving === null || keyBefore(this.lastArriving.job, entry.job)) this.lastArriving = entry;
    }
    leaving.clear();
  }
  /** Running jobs sorted by (predicted end, job id), as EASY's shadow walk needs them. */
  readonly running: RunningJob[] = [];
  private readonly runningById = new Map<JobId, RunningJob>();
  private readonly queuedById = new Map<JobId, QueueEntry>();
  freeProcessors: number;
  private arrivals = 0;

  /**
   * @param pool the cluster's nodes, when jobs need concrete nodes; without
   * one a job needs only `size` of the machine's processors (trace replay).
   */
  constructor(
    readonly processors: number,
    readonly pool?: NodePool,
  ) {
    this.freeProcessors = processors;
  }

  /** Processors a job could start on now: free ones, less those on nodes that take no new jobs (down, drained). */
  get startableProcessors(): number {
    return this.pool ? Math.min(this.freeProcessors, this.pool.acceptingFreeCpus) : this.freeProcessors;
  }

  /**
   * What a running job gives back to new jobs when it ends: its processors, or
   * on a node pool only its CPUs on nodes that count in plans (a down or
   * drained node's CPUs stay out of every plan until it is back).
   */
  releaseOf(run: RunningJob): number {
    const resources = run.job.resources;
    if (!this.pool || !resources) return run.job.size;
    let cpus = 0;
    for (const name of run.nodes) if (this.pool.counts(name)) cpus += resources.cpusPerNode;
    return cpus;
  }

  /**
   * Processors free now as plans count them: on a node pool, free CPUs of the
   * nodes that count in plans (those that take jobs, and those expected back
   * soon), which may be more than can start a job now (startableProcessors).
   */
  get plannableProcessors(): number {
    return this.pool ? Math.min(this.freeProcessors, this.pool.countedFreeCpus) : this.freeProcessors;
  }

  /**
   * Whether the job could ever be planned on the nodes that count in plans
   * (enough of them, with its features, in its partition); always without a
   * node pool. One that cannot waits for nodes to come back, unplanned, and
   * holds nothing up meanwhile.
   */
  plannable(job: JobRequest): boolean {
    return !this.pool || !job.resources || this.pool.couldPlaceOnCounted(job.resources);
  }

  /** Changes whenever the capacity plans may count on changes (a node down, drained or back). */
  get capacityVersion(): number {
    return this.pool ? this.pool.countedVersion : 0;
  }

  /** Changes whenever plans lose capacity (a node down or drained), not when they only gain some. */
  get capacityLossVersion(): number {
    return this.pool ? this.pool.countedLossVersion : 0;
  }

  enqueue(job: JobRequest, reservation: Seconds = NaN): QueueEntry {
    // Behind every entry of the same or a higher priority (the common case: the back).
    const priority = job.priority ?? 0;
    return this.insert(job, reservation, (ahead) => (ahead.priority ?? 0) >= priority);
  }

  /**
   * Queues a new entry right behind the last entry whose job `goesAhead` says
   * stays in front (searching from the back; none: at the front).
   */
  private insert(job: JobRequest, reservation: Seconds, goesAhead: (ahead: JobRequest) => boolean, inOrder = false): QueueEntry {
    const entry = this.newEntry(job, reservation);
    if (this.queuedById.has(job.id) || this.runningById.has(job.id)) throw new Error(`job ${job.id} is already known`);
    // In key order (and `goesAhead` is keyBefore), the place the walk from the back finds is its key's place:
    // taken at the next read of the queue, with every other entry put back meanwhile (mergeArriving).
    if (inOrder && this.inKeyOrder()) {
      this.arriving.push(entry);
      if (this.lastArriving === null || keyBefore(this.lastArriving.job, job)) this.lastArriving = entry;
      this.queuedById.set(job.id, entry);
      return entry;
    }
    const queue = this.queue;
    const at = walkPlace(queue, goesAhead);
    if (this.ordered === true && ((at > 0 && !keyBefore(queue[at - 1].job, job)) || (at < queue.length && !keyBefore(job, queue[at].job)))) this.ordered = false;
    if (at === queue.length) queue.push(entry);
    else queue.splice(at, 0, entry);
    this.queuedById.set(job.id, entry);
    return entry;
  }

  private newEntry(job: JobRequest, reservation: Seconds): QueueEntry {
    return { job, seq: this.arrivals++, reservation, plannedNodes: NO_NODES, previous: NaN,
      gainFrom: Infinity, gainTo: -Infinity, freedFrom: Infinity, freedTo: -Infinity };
  }

  /**
   * In a queue in key order, the first place whose entry does not go ahead of `job` (bisection): where it goes,
   * or where it is. The entries that go ahead are a prefix: a released job among 50,000 younger ones takes 16
   * looks, not 50,000.
   */
  private keyPlace(job: JobRequest): number {
    const queue = this.queue;
    let lo = 0;
    let hi = queue.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (keyBefore(queue[mid].job, job)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Whether the queue is in key order (keyBefore), found by one walk after a policy set it. */
  private inKeyOrder(): boolean {
    if (this.ordered === null) {
      const queue = this.queue;
      let ordered = true;
      for (let i = 1; i < queue.length && ordered; i++) ordered = keyBefore(queue[i - 1].job, queue[i].job);
      this.ordered = ordered;
    }
    return this.ordered;
  }

  addRunning(run: RunningJob): void {
    if (this.runningById.has(run.job.id)) throw new Error(`job ${run.job.id} is already running`);
    this.runningById.set(run.job.id, run);
    this.freeProcessors -= run.job.size;
    if (this.pool && run.job.resources) this.pool.allocate(run.job.id, run.nodes, run.job.resources);
    const at = this.insertionPoint(run);
    this.running.splice(at, 0, run);
  }

  removeRunning(id: JobId): RunningJob {
    const run = this.runningById.get(id);
    if (!run) throw new Error(`job ${id} is not running`);
    this.runningById.delete(id);
    this.freeProcessors += run.job.size;
    this.pool?.release(id);
    const at = this.insertionPoint(run);
    this.running.splice(at, 1);
    return run;
  }

  getRunning(id: JobId): RunningJob | undefined {
    return this.runningById.get(id);
  }

  /**
   * A queued job's request changed: a new entry for it, in the old one's place when that is the place a
   * reinsert finds (the queue in key order and the job's key unchanged: found by bisection, not by a walk);
   * else the old one leaves and the job is put back (reinsert). Undefined when the job is not queued.
   */
  replaceQueued(job: JobRequest): { readonly old: QueueEntry; readonly entry: QueueEntry } | undefined {
    const old = this.queuedById.get(job.id);
    if (old === undefined) return undefined;
    const was = old.job;
    if ((was.priority ?? 0) === (job.priority ?? 0) && was.submitTime === job.submitTime && this.inKeyOrder()) {
      const queue = this.queue;
      const at = this.keyPlace(was);
      if (queue[at] === old) {
        const entry = this.newEntry(job, NaN);
        queue[at] = entry;
        this.queuedById.set(job.id, entry);
        return { old, entry };
      }
    }
    this.removeQueued(job.id);
    return { old, entry: this.reinsert(job) };
  }

  /** Puts a job back at its place in the queue (priority, then submit time, then id). */
  reinsert(job: JobRequest): QueueEntry {
    return this.insert(job, NaN, (ahead) => keyBefore(ahead, job), true);
  }

  /** Whether `entry` is the last of the queue (arrivals usually are; a higher priority is not). */
  isLast(entry: QueueEntry): boolean {
    // Just put back, not merged yet (nothing left since): last if it goes after every entry, merged or not.
    if (this.leaving.size === 0 && this.arriving.length > 0 && this.arriving[this.arriving.length - 1] === entry) {
      const last = this.entries[this.entries.length - 1];
      return this.lastArriving === entry && (last === undefined || keyBefore(last.job, entry.job));
    }
    const queue = this.queue;
    return queue[queue.length - 1] === entry;
  }

  getQueued(id: JobId): QueueEntry | undefined {
    return this.queuedById.get(id);
  }

  /** Removes a queued entry that leaves without starting. */
  removeQueued(id: JobId): QueueEntry | undefined {
    const entry = this.queuedById.get(id);
    if (!entry) return undefined;
    this.queuedById.delete(id);
    // Taken out of the queue's array at its next read (an array's tasks leave together: one walk, not one each).
    this.leaving.add(entry);
    return entry;
  }

  /**
   * The nodes a job would get if it started now, or null if it cannot start
   * now (not enough processors, or no set of nodes fits it). Takes nothing.
   */
  tryPlace(job: JobRequest): readonly string[] | null {
    if (job.size > this.startableProcessors) return null;
    if (!this.pool || !job.resources) return NO_NODES;
    return this.pool.place(job.resources);
  }

  /** Starts a queued entry now on `nodes` (from tryPlace); the caller drops started entries from the queue. */
  startJob(entry: QueueEntry, now: Seconds, nodes: readonly string[]): void {
    this.addRunning({ job: entry.job, start: now, nodes });
    this.queuedById.delete(entry.job.id);
    entry.reservation = now;
  }

  /** Removes the given started entries from the queue, keeping the order of the rest. */
  dropStarted(started: ReadonlySet<QueueEntry>): void {
    // Leaving keeps the order of the rest: whether it is in key order is still known.
    if (started.size > 0) this.entries = this.queue.filter((e) => !started.has(e));
  }

  private insertionPoint(run: RunningJob): number {
    let lo = 0;
    let hi = this.running.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (byEndThenId(this.running[mid], run) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
