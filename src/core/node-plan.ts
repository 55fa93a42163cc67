// Plans on nodes: free CPUs and memory of every node over future time, and
// the holds (running jobs, reservations of queued jobs, advance reservations,
// maintenance windows) that take them. The one question planning asks is
// Fluxion's: the earliest time at which `nodes` nodes that suit a job each
// have its CPUs and memory free for its whole estimate; the answer names the
// nodes, so a planned start is a reservation of concrete nodes, and starting
// the job is taking exactly that reservation.
//
// A node's timeline is a step function in three parallel arrays (times, free
// CPUs, free memory): nodes hold few steps each (the jobs planned on them),
// so arrays beat trees here. Pruning higher up is by the static shape of the
// request (partition, features, the node's whole size) and by the order in
// which nodes become free: the search starts at the `nodes`-th smallest
// per-node earliest fit, a lower bound on the answer.

import type { PlacementStrategy, PoolNode } from './placement.js';
import type { ResourceRequest, Seconds } from './types.js';

/** Free CPUs and memory of one node as a step function of time, from `origin` on. */
export class NodeTimeline {
  /** times[i] is where step i begins; step i lasts until times[i + 1] (the last one forever). */
  private times: number[];
  private cpus: number[];
  private memory: number[];
  /**
   * Per CPU level k (at least 2^k CPUs free, memory aside), the runs of such
   * steps as a staircase (see RunFront); built when first asked for, dropped
   * on every change.
   */
  private fronts: Array<RunFront | undefined> | null = null;

  constructor(readonly totalCpus: number, readonly totalMemoryMiB: number, origin: Seconds) {
    this.times = [origin];
    this.cpus = [totalCpus];
    this.memory = [totalMemoryMiB];
  }

  /** Back to what the constructor makes: all free from `origin` on. */
  reset(origin: Seconds): void {
    this.times.length = 1;
    this.cpus.length = 1;
    this.memory.length = 1;
    this.times[0] = origin;
    this.cpus[0] = this.totalCpus;
    this.memory[0] = this.totalMemoryMiB;
    this.fronts = null;
  }

  get origin(): Seconds {
    return this.times[0];
  }

  /** Number of steps (for tests and bounds). */
  get size(): number {
    return this.times.length;
  }

  /** Index of the step holding `at` (at >= origin). */
  private stepAt(at: Seconds): number {
    const times = this.times;
    let lo = 0;
    let hi = times.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (times[mid] <= at) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /** Makes `at` the beginning of a step; returns its index. */
  private split(at: Seconds): number {
    const index = this.stepAt(at);
    if (this.times[index] === at) return index;
    this.times.splice(index + 1, 0, at);
    this.cpus.splice(index + 1, 0, this.cpus[index]);
    this.memory.splice(index + 1, 0, this.memory[index]);
    return index + 1;
  }

  /** Adds `cpus` and `memoryMiB` (negative: takes them) over [from, to); parts before the origin are ignored. */
  add(from: Seconds, to: Seconds, cpus: number, memoryMiB: number): void {
    const start = Math.max(from, this.times[0]);
    if (!(to > start)) return;
    const first = this.split(start);
    const last = to === Infinity ? this.times.length : this.split(to);
    for (let i = first; i < last; i++) {
      this.cpus[i] += cpus;
      this.memory[i] += memoryMiB;
    }
    this.fronts = null;
    this.merge(Math.max(0, first - 1), Math.min(this.times.length - 1, last));
  }

  /** Joins equal neighbouring steps between indexes `from` and `to` (inclusive). */
  private merge(from: number, to: number): void {
    for (let i = to; i > from; i--) {
      if (this.cpus[i] === this.cpus[i - 1] && this.memory[i] === this.memory[i - 1]) {
        this.times.splice(i, 1);
        this.cpus.splice(i, 1);
        this.memory.splice(i, 1);
      }
    }
  }

  /** Forgets the past: the timeline starts at `now`. */
  advance(now: Seconds): void {
    if (now <= this.times[0]) return;
    const index = this.stepAt(now);
    if (index > 0) {
      this.times.splice(0, index);
      this.cpus.splice(0, index);
      this.memory.splice(0, index);
    }
    this.times[0] = now;
    this.fronts = null;
  }

  /** Free CPUs and memory at `at`. */
  freeAt(at: Seconds): { cpus: number; memoryMiB: number } {
    const index = this.stepAt(Math.max(at, this.times[0]));
    return { cpus: this.cpus[index], memoryMiB: this.memory[index] };
  }

  /** Whether `cpus` and `memoryMiB` are free throughout [from, from + duration). */
  fits(from: Seconds, duration: Seconds, cpus: number, memoryMiB: number): boolean {
    const end = from + duration;
    for (let i = this.stepAt(Math.max(from, this.times[0])); i < this.times.length && this.times[i] < end; i++) {
      if (this.cpus[i] < cpus || this.memory[i] < memoryMiB) return false;
    }
    return true;
  }

  /** The earliest t >= notBefore with `cpus` and `memoryMiB` free throughout [t, t + duration); Infinity if never. */
  earliestFit(notBefore: Seconds, duration: Seconds, cpus: number, memoryMiB: number, latest: Seconds = Infinity): Seconds {
    const times = this.times;
    const free = this.cpus;
    const memory = this.memory;
    const count = times.length;
    let start = Math.max(notBefore, times[0]);
    // No fit starts before the first run of enough free CPUs that lasts `duration` (memory aside).
    if (count > 1 && cpus >= 1) {
      const bound = this.front(levelOf(cpus)).firstLasting(duration);
      if (bound > start) {
        if (bound > latest) return Infinity;
        start = bound;
      }
    }
    // From the timeline's start (planning from now, the common case): no search for the step.
    let index = start === times[0] ? 0 : this.stepAt(start);
    for (;;) {
      // Infinity past `latest`: the caller has an answer at least as good (its search stops there).
      if (start > latest) return Infinity;
      const end = start + duration;
      let k = index;
      while (k < count && times[k] < end && free[k] >= cpus && memory[k] >= memoryMiB) k++;
      if (k === count || times[k] >= end) return start;
      // Step k is short of CPUs or memory: no start before its end fits.
      if (k + 1 === count) return Infinity;
      start = times[k + 1];
      index = k + 1;
    }
  }

  /** A copy with `cpus` and `memoryMiB` added over [from, to): what-if tests without changing this one. */
  with(from: Seconds, to: Seconds, cpus: number, memoryMiB: number): NodeTimeline {
    const copy = new NodeTimeline(this.totalCpus, this.totalMemoryMiB, this.times[0]);
    copy.times = [...this.times];
    copy.cpus = [...this.cpus];
    copy.memory = [...this.memory];
    copy.add(from, to, cpus, memoryMiB);
    return copy;
  }

  /** The runs of steps with at least 2^level CPUs free (memory aside), as a staircase. */
  front(level: number): RunFront {
    this.fronts ??= []; // made when first asked for: a plan of 100,000 nodes makes none for most of them
    let front = this.fronts[level];
    if (front === undefined) {
      front = new RunFront();
      const least = 2 ** level;
      const { times, cpus } = this;
      let runStart = NaN;
      for (let i = 0; i < times.length; i++) {
        if (cpus[i] >= least) {
          if (Number.isNaN(runStart)) runStart = times[i];
        } else if (!Number.isNaN(runStart)) {
          front.addLater(runStart, times[i] - runStart);
          runStart = NaN;
        }
      }
      if (!Number.isNaN(runStart)) front.addLater(runStart, Infinity);
      this.fronts[level] = front;
    }
    return front;
  }

  /** The steps as [time, free CPUs, free memory] (tests, displays). */
  steps(): Array<[Seconds, number, number]> {
    return this.times.map((time, i) => [time, this.cpus[i], this.memory[i]]);
  }
}

/** The CPU level of a request for `cpus` CPUs (>= 1): runs with 2^level CPUs free are the least that could hold it. */
export const levelOf = (cpus: number): number => 31 - Math.clz32(cpus);

/**
 * Runs of time (start, length) as a staircase: starts and lengths both
 * rising, each run longer than every run that starts before it. The first run
 * lasting at least `d` is then the earliest one that does: no window of
 * length `d` inside a run starts before it. Shorter runs that start later
 * are left out; so are runs no longer than an earlier one.
 */
export class RunFront {
  private readonly starts: number[] = [];
  private readonly lengths: number[] = [];

  /** Adds a run starting at or after every run added so far. */
  addLater(start: number, length: number): void {
    const count = this.lengths.length;
    if (count === 0 || length > this.lengths[count - 1]) {
      this.starts.push(start);
      this.lengths.push(length);
    }
  }

  /** Adds a run anywhere (runs it makes redundant go). */
  add(start: number, length: number): void {
    const { starts, lengths } = this;
    // The first run starting after `start`.
    let lo = 0;
    let hi = starts.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (starts[mid] <= start) lo = mid + 1;
      else hi = mid;
    }
    if (lo > 0 && lengths[lo - 1] >= length) return;
    let end = lo;
    while (end < lengths.length && lengths[end] <= length) end++;
    // A run at the same start but shorter, just before: replaced.
    const from = lo > 0 && starts[lo - 1] === start ? lo - 1 : lo;
    starts.splice(from, end - from, start);
    lengths.splice(from, end - from, length);
  }

  /** Adds every run of another staircase. */
  addAll(other: RunFront): void {
    for (let i = 0; i < other.starts.length; i++) this.add(other.starts[i], other.lengths[i]);
  }

  /** Where the first run lasting at least `duration` starts; Infinity if none does. */
  firstLasting(duration: number): number {
    const lengths = this.lengths;
    let lo = 0;
    let hi = lengths.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (lengths[mid] < duration) lo = mid + 1;
      else hi = mid;
    }
    return lo === lengths.length ? Infinity : this.starts[lo];
  }
}

/** The `size` smallest numbers offered so far; `bound` is the largest of them (Infinity until `size` were offered). */
class BoundedSmallest {
  private readonly heap: number[] = [];

  constructor(private readonly size: number) {}

  get bound(): number {
    return this.heap.length < this.size ? Infinity : this.heap[0];
  }

  clear(): void {
    this.heap.length = 0;
  }

  offer(value: number): void {
    const heap = this.heap;
    if (heap.length < this.size) {
      heap.push(value);
      let i = heap.length - 1;
      while (i > 0) {
        const parent = (i - 1) >> 1;
        if (heap[parent] >= heap[i]) break;
        [heap[parent], heap[i]] = [heap[i], heap[parent]];
        i = parent;
      }
      return;
    }
    if (value >= heap[0]) return;
    heap[0] = value;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let largest = i;
      if (left < heap.length && heap[left] > heap[largest]) largest = left;
      if (right < heap.length && heap[right] > heap[largest]) largest = right;
      if (largest === i) break;
      [heap[largest], heap[i]] = [heap[i], heap[largest]];
      i = largest;
    }
  }
}

/** Something that takes CPUs and memory on nodes over [start, end): a running job, a reservation, a window. */
export interface PlanHold {
  /** Who holds it: `job:ID`, `reservation:NAME`, `maintenance:NAME` (the shells decide). */
  readonly owner: string;
  readonly start: Seconds;
  /** Infinity: until further notice. */
  readonly end: Seconds;
  readonly nodes: readonly string[];
  readonly cpus: number;
  readonly memoryMiB: number;
  /** A whole-node hold (reservations, windows): takes every CPU and all memory of each node. */
  readonly whole?: boolean;
}

/** A planned start on concrete nodes. */
export interface NodeSlotPlan {
  readonly start: Seconds;
  readonly nodes: readonly string[];
}

interface PlanNode {
  readonly node: PoolNode;
  order: number;
  readonly features: ReadonlySet<string>;
  readonly timeline: NodeTimeline;
  /** Owners of the holds on this node (null: none yet; most nodes of a big plan never get one). */
  owners: Set<string> | null;
  /** During an `earliest` with `lifting`: this node's timeline without the lifted hold. */
  lifted: NodeTimeline | null;
  /** The plan's `resets` when a reset kept this record (see NodePlan.reset). */
  kept: number;
}

/** What a search sees of a node: its timeline, or the copy without a hold the search lifts. */
const viewOf = (planNode: PlanNode): NodeTimeline => planNode.lifted ?? planNode.timeline;

/** A NodeGroup works its members' runs together out again after this many losses of capacity on them. */
const REBUILD_AFTER_LOSSES = 128;

/** Whether a node's runs at `level` count for requests limited to `eligible` (undefined: every node). */
const takesPart = (planNode: PlanNode, eligible: ReadonlySet<string> | undefined, level: number): boolean =>
  planNode.node.cpus >= 2 ** level && (eligible === undefined || eligible.has(planNode.node.name));

/**
 * A set of the plan's nodes by name, kept as the plan's own records in plan
 * order too (where capacity appeared, for compression): tests over it walk
 * an array, not a name lookup per node.
 */
export class NodeGroup {
  private readonly names = new Set<string>();
  private readonly members: PlanNode[] = [];
  private sorted = true;
  /**
   * Per eligible-node set (undefined: every node) and CPU level, the runs of
   * the members that could take part, together: built when first asked for,
   * extended as members join or gain capacity. Capacity lost since leaves
   * runs that are longer than they now are: still an upper bound.
   */
  private readonly together = new Map<ReadonlySet<string> | undefined, Array<RunFront | undefined>>();
  /** Members that lost capacity since `together` was built (its runs are that much too long). */
  private losses = 0;

  constructor(private readonly byName: ReadonlyMap<string, PlanNode>, names: Iterable<string>) {
    for (const name of names) this.add(name);
  }

  has(name: string): boolean {
    return this.names.has(name);
  }

  /** Adds a node, or notes that a member gained capacity. */
  add(name: string): void {
    const planNode = this.byName.get(name);
    if (!this.names.has(name)) {
      this.names.add(name);
      if (planNode === undefined) return;
      if (this.members.length > 0 && this.members[this.members.length - 1].order > planNode.order) this.sorted = false;
      this.members.push(planNode);
    }
    if (planNode === undefined) return;
    for (const [eligible, fronts] of this.together) {
      fronts.forEach((front, level) => {
        if (front !== undefined && takesPart(planNode, eligible, level)) front.addAll(planNode.timeline.front(level));
      });
    }
  }

  /** Members lost capacity (a job planned on them): after enough losses the runs together are worked out again. */
  lost(count: number): void {
    this.losses += count;
    if (this.losses >= REBUILD_AFTER_LOSSES) {
      this.together.clear();
      this.losses = 0;
    }
  }

  /**
   * False when no member the request could use has its CPUs free for
   * `duration` from any start at or before `latest` (memory and features
   * aside): a test of the group as a whole, before a test of each member.
   * True says nothing for sure.
   */
  mayFit(request: ResourceRequest, duration: Seconds, latest: Seconds): boolean {
    if (request.cpusPerNode < 1) return true;
    const level = levelOf(request.cpusPerNode);
    let fronts = this.together.get(request.eligibleNodes);
    if (fronts === undefined) {
      fronts = [];
      this.together.set(request.eligibleNodes, fronts);
    }
    let front = fronts[level];
    if (front === undefined) {
      front = new RunFront();
      for (const planNode of this.members) if (takesPart(planNode, request.eligibleNodes, level)) front.addAll(planNode.timeline.front(level));
      fronts[level] = front;
    }
    return front.firstLasting(duration) <= latest;
  }

  /** The members in plan order. */
  nodes(): readonly PlanNode[] {
    if (!this.sorted) {
      this.members.sort((a, b) => a.order - b.order);
      this.sorted = true;
    }
    return this.members;
  }
}

/**
 * Every node's timeline and the holds on them. Nodes that do not count in
 * plans (down, drained) are left out at construction: nothing is planned on
 * them.
 */
export class NodePlan {
  private readonly planNodes: PlanNode[] = [];
  private readonly byName = new Map<string, PlanNode>();
  private readonly holds = new Map<string, PlanHold>();
  private candidates = new WeakMap<ResourceRequest, PlanNode[]>();
  /** Candidates by the request's shape (jobs alike share them: one filter of the nodes per shape, not per job). */
  private readonly candidatesByShape = new Map<string, PlanNode[]>();
  /** A number for each eligible-node set seen (sets are shared per partition), for shape keys. */
  private setIds = new WeakMap<ReadonlySet<string>, number>();
  private nextSetId = 1;
  /** How many times `reset` changed the set of nodes (it marks the records it keeps with the count). */
  private resets = 0;
  /** Scratch for `earliest`: each candidate's earliest fit (grown as needed, never shrunk). */
  private fitScratch = new Float64Array(64);
  /** Scratch for `earliest`: the candidates still in the search. */
  private liveScratch = new Int32Array(64);

  constructor(nodes: readonly PoolNode[], origin: Seconds, readonly strategy: PlacementStrategy = 'first-fit') {
    // Little is made per node (nodes with the same features list share one set): a plan of 100,000 nodes
    // is made in about 200 ms on a slow machine, and `reset` reuses one in a few.
    const featureSets = new Map<readonly string[], ReadonlySet<string>>();
    nodes.forEach((node, order) => {
      const planNode = this.newPlanNode(node, order, origin, featureSets);
      this.planNodes.push(planNode);
      this.byName.set(node.name, planNode);
    });
  }

  private newPlanNode(node: PoolNode, order: number, origin: Seconds, featureSets: Map<readonly string[], ReadonlySet<string>>): PlanNode {
    let features = featureSets.get(node.features);
    if (features === undefined) {
      features = new Set(node.features);
      featureSets.set(node.features, features);
    }
    return { node, order, features, timeline: new NodeTimeline(node.cpus, node.memoryMiB, origin), owners: null, lifted: null, kept: this.resets };
  }

  /**
   * Makes this plan exactly what `new NodePlan(nodes, origin, strategy)` would
   * be, reusing its records of the nodes it already had (the same PoolNode
   * objects): a scheduling pass of 100,000 nodes then makes next to nothing.
   * Only for a plan nothing else uses any more (the policy's spare).
   */
  reset(nodes: readonly PoolNode[], origin: Seconds): this {
    this.holds.clear();
    this.candidates = new WeakMap();
    this.candidatesByShape.clear();
    this.setIds = new WeakMap();
    this.nextSetId = 1;
    const planNodes = this.planNodes;
    const same = nodes.length === planNodes.length && nodes.every((node, order) => planNodes[order].node === node);
    if (!same) {
      const featureSets = new Map<readonly string[], ReadonlySet<string>>();
      const kept = ++this.resets;
      const next = nodes.map((node, order) => {
        let planNode = this.byName.get(node.name);
        if (planNode !== undefined && planNode.node === node) {
          planNode.order = order;
        } else {
          planNode = this.newPlanNode(node, order, origin, featureSets);
          this.byName.set(node.name, planNode);
        }
        planNode.kept = kept;
        return planNode;
      });
      // Nodes that left (drained, down, gone): their names now lead nowhere, unless a new record took the name.
      for (const planNode of planNodes) if (planNode.kept !== kept && this.byName.get(planNode.node.name) === planNode) this.byName.delete(planNode.node.name);
      planNodes.length = 0;
      for (const planNode of next) planNodes.push(planNode);
    }
    for (const planNode of planNodes) {
      planNode.timeline.reset(origin);
      planNode.owners = null;
      planNode.lifted = null;
    }
    return this;
  }

  /** Whether the node is part of this plan (it counts in plans). */
  has(name: string): boolean {
    return this.byName.has(name);
  }

  timeline(name: string): NodeTimeline | undefined {
    return this.byName.get(name)?.timeline;
  }

  advance(now: Seconds): void {
    for (const planNode of this.planNodes) planNode.timeline.advance(now);
  }

  /** Takes a hold's CPUs and memory on its nodes (those in the plan); replaces an earlier hold of the same owner. */
  hold(hold: PlanHold): void {
    this.release(hold.owner);
    this.holds.set(hold.owner, hold);
    this.apply(hold, -1);
  }

  /** Gives a hold back; false if the owner held nothing. */
  release(owner: string): boolean {
    const hold = this.holds.get(owner);
    if (hold === undefined) return false;
    this.holds.delete(owner);
    this.apply(hold, 1);
    return true;
  }

  getHold(owner: string): PlanHold | undefined {
    return this.holds.get(owner);
  }

  allHolds(): IterableIterator<PlanHold> {
    return this.holds.values();
  }

  private apply(hold: PlanHold, sign: 1 | -1): void {
    for (const name of hold.nodes) {
      const planNode = this.byName.get(name);
      if (planNode === undefined) continue;
      const cpus = hold.whole ? planNode.node.cpus : hold.cpus;
      const memory = hold.whole ? planNode.node.memoryMiB : hold.memoryMiB;
      planNode.timeline.add(hold.start, hold.end, sign * cpus, sign * memory);
      if (sign < 0) (planNode.owners ??= new Set()).add(hold.owner);
      else planNode.owners?.delete(hold.owner);
    }
  }

  /** Whether the request fits on exactly `nodes` over [start, start + duration). */
  fitsOn(request: ResourceRequest, nodes: readonly string[], start: Seconds, duration: Seconds): boolean {
    return nodes.length === request.nodes && nodes.every((name) => {
      const planNode = this.byName.get(name);
      return planNode !== undefined && this.suits(planNode, request)
        && planNode.timeline.fits(start, duration, request.cpusPerNode, request.memoryMiBPerNode);
    });
  }

  /** The nodes of the plan that could ever hold a part of the request (partition, features, whole size). */
  private candidatesFor(request: ResourceRequest): PlanNode[] {
    let known = this.candidates.get(request);
    if (known === undefined) {
      const key = this.shapeKey(request);
      known = this.candidatesByShape.get(key);
      if (known === undefined) {
        known = this.planNodes.filter((planNode) => this.suits(planNode, request));
        if (this.candidatesByShape.size >= 10_000) this.candidatesByShape.clear();
        this.candidatesByShape.set(key, known);
      }
      this.candidates.set(request, known);
    }
    return known;
  }

  /** What decides a request's candidates: its eligible nodes (by set), CPUs and memory per node, features. */
  private shapeKey(request: ResourceRequest): string {
    let set = 0;
    if (request.eligibleNodes !== undefined) {
      set = this.setIds.get(request.eligibleNodes) ?? 0;
      if (set === 0) {
        set = this.nextSetId++;
        this.setIds.set(request.eligibleNodes, set);
      }
    }
    return `${set} ${request.cpusPerNode} ${request.memoryMiBPerNode} ${request.features.join(',')}`;
  }

  private suits(planNode: PlanNode, request: ResourceRequest): boolean {
    if (planNode.node.cpus < request.cpusPerNode || planNode.node.memoryMiB < request.memoryMiBPerNode) return false;
    if (request.eligibleNodes !== undefined && !request.eligibleNodes.has(planNode.node.name)) return false;
    for (const feature of request.features) if (!planNode.features.has(feature)) return false;
    return true;
  }

  /**
   * Whether any of `nodes` (names; those the request could use) has the
   * request's CPUs and memory free for `duration` from some start in
   * [from, latest]: a cheap test before a full search, when only those
   * nodes gained capacity.
   */
  anyFits(request: ResourceRequest, nodes: Iterable<string> | NodeGroup, duration: Seconds, from: Seconds, latest: Seconds): boolean {
    for (const planNode of this.planNodesOf(nodes)) {
      if (!this.suits(planNode, request)) continue;
      if (planNode.timeline.earliestFit(from, duration, request.cpusPerNode, request.memoryMiBPerNode, latest) <= latest) return true;
    }
    return false;
  }

  /** The plan's records of `nodes` (a group's own array; names not in the plan are left out). */
  private planNodesOf(nodes: Iterable<string> | NodeGroup): readonly PlanNode[] {
    if (nodes instanceof NodeGroup) return nodes.nodes();
    const found: PlanNode[] = [];
    for (const name of nodes) {
      const planNode = this.byName.get(name);
      if (planNode !== undefined) found.push(planNode);
    }
    return found;
  }

  /**
   * anyFits on `nodes` as if the owner's `hold` (a job's, on those nodes)
   * were lifted, without lifting it, for windows that reach into the hold
   * (those that end before it are the same either way: ask anyFits).
   */
  anyFitsLifting(request: ResourceRequest, nodes: readonly string[], duration: Seconds, from: Seconds, latest: Seconds, hold: PlanHold): boolean {
    if (hold.whole) throw new Error('anyFitsLifting: a whole-node hold');
    for (const planNode of this.planNodesOf(nodes)) {
      if (!this.suits(planNode, request)) continue;
      // A window that ends by the hold's start fits with the hold in place (the caller asks anyFits for
      // those); when every window starts before the hold, any other one holds the instant before its
      // start, which the hold does not take.
      if (latest < hold.start && !planNode.timeline.fits(hold.start - 1, 1, request.cpusPerNode, request.memoryMiBPerNode)) continue;
      const lifted = planNode.timeline.with(hold.start, hold.end, hold.cpus, hold.memoryMiB);
      if (lifted.earliestFit(from, duration, request.cpusPerNode, request.memoryMiBPerNode, latest) <= latest) return true;
    }
    return false;
  }

  /** A group of this plan's nodes by name (see NodeGroup). */
  group(names: Iterable<string>): NodeGroup {
    return new NodeGroup(this.byName, names);
  }

  /** Whether enough nodes of the plan could ever hold the request (false: it cannot be planned now). */
  couldHold(request: ResourceRequest): boolean {
    return this.candidatesFor(request).length >= request.nodes;
  }

  /**
   * The earliest start at or after `notBefore` (and at or before `latest`)
   * at which `request.nodes` nodes each have the request's CPUs and memory
   * free for `duration`, and the nodes, chosen by the plan's strategy among
   * those free then; undefined if there is none. `onlyAmong`: search those nodes only.
   */
  earliest(
    request: ResourceRequest, duration: Seconds, notBefore: Seconds, latest: Seconds = Infinity, onlyAmong?: ReadonlySet<string> | NodeGroup,
    lifting?: PlanHold,
  ): NodeSlotPlan | undefined {
    if (lifting === undefined) return this.search(request, duration, notBefore, latest, onlyAmong);
    // The hold's nodes are searched as copies of their timelines without it: the plan itself is not
    // touched (lifting the hold and putting it back would change every step it bounds, twice).
    if (lifting.whole) throw new Error('earliest: lifting a whole-node hold');
    const lifted: PlanNode[] = [];
    try {
      for (const name of lifting.nodes) {
        const planNode = this.byName.get(name);
        if (planNode === undefined || planNode.lifted !== null) continue;
        planNode.lifted = planNode.timeline.with(lifting.start, lifting.end, lifting.cpus, lifting.memoryMiB);
        lifted.push(planNode);
      }
      return this.search(request, duration, notBefore, latest, onlyAmong);
    } finally {
      for (const planNode of lifted) planNode.lifted = null;
    }
  }

  private search(request: ResourceRequest, duration: Seconds, notBefore: Seconds, latest: Seconds, onlyAmong?: ReadonlySet<string> | NodeGroup): NodeSlotPlan | undefined {
    // In plan order (a group keeps its members so; names are sorted).
    const candidates = onlyAmong === undefined ? this.candidatesFor(request)
      : this.planNodesOf(onlyAmong).filter((planNode) => this.suits(planNode, request));
    if (onlyAmong !== undefined && !(onlyAmong instanceof NodeGroup)) candidates.sort((a, b) => a.order - b.order);
    const needed = request.nodes;
    if (candidates.length < needed) return undefined;
    const { cpusPerNode: cpus, memoryMiBPerNode: memory } = request;
    if (this.fitScratch.length < candidates.length) this.fitScratch = new Float64Array(Math.max(candidates.length, 2 * this.fitScratch.length));
    const fitFrom = this.fitScratch;
    // The candidates that may still fit by `latest`, as indexes in candidate (plan) order: the rounds
    // below look at these only.
    if (this.liveScratch.length < candidates.length) this.liveScratch = new Int32Array(fitFrom.length);
    const live = this.liveScratch;
    let liveCount = 0;
    // The `needed` smallest fits so far (a max-heap): a node whose fit would come later stops its scan there.
    const best = new BoundedSmallest(needed);
    for (let i = 0; i < candidates.length; i++) {
      const cap = Math.min(latest, best.bound);
      const fit = viewOf(candidates[i]).earliestFit(notBefore, duration, cpus, memory, cap);
      // Infinity with the cap at `latest`: it never fits in time. Cut short at a lower bound: it may.
      if (fit === Infinity && cap >= latest) continue;
      fitFrom[i] = fit;
      live[liveCount++] = i;
      best.offer(fit);
    }
    for (;;) {
      // No start before the `needed`-th smallest per-node earliest fit can have enough nodes.
      const start = best.bound;
      if (start === Infinity || start > latest) return undefined;
      const fitting: PlanNode[] = [];
      for (let k = 0; k < liveCount; k++) {
        const i = live[k];
        if (fitFrom[i] === start) fitting.push(candidates[i]);
        else if (fitFrom[i] < start) {
          // It fitted earlier; it may not from `start`: its next fit from there on.
          fitFrom[i] = viewOf(candidates[i]).earliestFit(start, duration, cpus, memory, latest);
          if (fitFrom[i] === start) fitting.push(candidates[i]);
        }
      }
      if (fitting.length >= needed) return { start, nodes: this.choose(fitting, needed, start) };
      // Fewer than `needed` fit at `start`: the answer is later. Nodes cut short at the old bound (Infinity)
      // and those fitting at `start` look again from `start` on; the bound is rebuilt from every live node,
      // and those that no longer fit by `latest` leave.
      best.clear();
      let kept = 0;
      for (let k = 0; k < liveCount; k++) {
        const i = live[k];
        if (fitFrom[i] <= start || fitFrom[i] === Infinity) {
          fitFrom[i] = viewOf(candidates[i]).earliestFit(fitFrom[i] === start ? start + 1 : start, duration, cpus, memory, latest);
          if (fitFrom[i] === Infinity) continue;
        }
        live[kept++] = i;
        best.offer(fitFrom[i]);
      }
      liveCount = kept;
    }
  }

  /** `needed` of the fitting nodes by the strategy, as free as they are at `start`. */
  private choose(fitting: PlanNode[], needed: number, start: Seconds): string[] {
    if (this.strategy !== 'first-fit' && fitting.length > needed) {
      const free = new Map(fitting.map((planNode) => [planNode, viewOf(planNode).freeAt(start)]));
      const sign = this.strategy === 'best-fit' ? 1 : -1;
      fitting.sort((a, b) => {
        const fa = free.get(a)!;
        const fb = free.get(b)!;
        return sign * (fa.cpus - fb.cpus) || sign * (fa.memoryMiB - fb.memoryMiB) || a.order - b.order;
      });
    }
    return fitting.slice(0, needed).map((planNode) => planNode.node.name);
  }

  /**
   * The holds that end at `at` on any of `nodes`, ahead of whatever starts
   * there then: what a job planned at `at` on those nodes waits for.
   */
  holdsEndingAt(nodes: readonly string[], at: Seconds): PlanHold[] {
    const found = new Map<string, PlanHold>();
    for (const name of nodes) {
      const planNode = this.byName.get(name);
      if (planNode === undefined) continue;
      for (const owner of planNode.owners ?? []) {
        const hold = this.holds.get(owner)!;
        if (hold.end === at) found.set(owner, hold);
      }
    }
    return [...found.values()];
  }
}
