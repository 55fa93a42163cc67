// Placement: which concrete nodes a job gets, decided in the core (never in a
// daemon) so it can be tested on its own. The pool tracks free CPUs and
// memory per node; `place` proposes nodes without taking them, the scheduler
// state allocates them when a start is decided, and the shell verifies the
// proposal against live node state before it starts anything.

import type { JobId, ResourceRequest } from './types.js';

export const placementStrategies = ['first-fit', 'best-fit', 'least-loaded'] as const;
export type PlacementStrategy = (typeof placementStrategies)[number];

export interface PoolNode {
  readonly name: string;
  readonly cpus: number;
  readonly memoryMiB: number;
  readonly features: readonly string[];
}

interface NodeSlot {
  readonly node: PoolNode;
  readonly features: ReadonlySet<string>;
  readonly order: number;
  freeCpus: number;
  freeMemoryMiB: number;
  /** Down or drained nodes take no new jobs; running ones keep theirs. */
  accepting: boolean;
  /**
   * Counts in plans: takes jobs, or is expected to soon (a node the shell has
   * not heard from yet since it started). Down and drained nodes do not.
   */
  counted: boolean;
}

export class NodePool {
  private readonly slots: NodeSlot[];
  private readonly byName = new Map<string, NodeSlot>();
  private readonly allocations = new Map<JobId, { nodes: readonly string[]; cpus: number; memoryMiB: number }>();
  /** Free CPUs on nodes that take new jobs: no job larger than this can start now. */
  private acceptingFree = 0;
  /** Counts changes of which nodes take new jobs (for caches of what node states show). */
  private acceptingChanges = 0;
  /** All CPUs of the pool. */
  private readonly total: number;
  /** Free CPUs and all CPUs of the nodes that count in plans. */
  private countedFree = 0;
  private countedTotal = 0;
  /** Counts changes of which nodes count in plans: plans made before a change are stale. */
  private countedChanges = 0;
  private countedLosses = 0;
  /** Whether a request fits the counted nodes, as of a version of the pool. */
  private readonly fitsCounted = new WeakMap<ResourceRequest, { version: number; fits: boolean }>();

  constructor(
    nodes: readonly PoolNode[],
    readonly strategy: PlacementStrategy = 'first-fit',
  ) {
    this.slots = nodes.map((node, order) => ({
      node, order, features: new Set(node.features), freeCpus: node.cpus, freeMemoryMiB: node.memoryMiB, accepting: true, counted: true,
    }));
    for (const slot of this.slots) {
      if (this.byName.has(slot.node.name)) throw new Error(`node ${slot.node.name} is listed twice`);
      this.byName.set(slot.node.name, slot);
      this.acceptingFree += slot.freeCpus;
    }
    this.countedFree = this.acceptingFree;
    this.total = this.acceptingFree;
    this.countedTotal = this.total;
  }

  /** Changes each time a node starts or stops taking new jobs. */
  get acceptingVersion(): number {
    return this.acceptingChanges;
  }

  /** Free CPUs on nodes that take new jobs (down and drained nodes excluded). */
  get acceptingFreeCpus(): number {
    return this.acceptingFree;
  }

  /** Total CPUs of the pool: the capacity the time profile plans with. */
  get totalCpus(): number {
    return this.total;
  }



  /** Changes each time a node starts or stops counting in plans (plans depend on nothing else of node states). */
  get countedVersion(): number {
    return this.countedChanges;
  }

  /** Changes each time a node stops counting in plans (capacity lost, not only gained). */
  get countedLossVersion(): number {
    return this.countedLosses;
  }

  /** Whether the node takes new jobs (not down, not drained). */
  accepts(name: string): boolean {
    return this.slot(name).accepting;
  }

  /** Whether the node counts in plans (it takes jobs, or is expected to soon). */
  counts(name: string): boolean {
    return this.slot(name).counted;
  }

  /** Free CPUs on the nodes that count in plans. */
  get countedFreeCpus(): number {
    return this.countedFree;
  }


  /**
   * Whether the node takes new jobs now, and whether it counts in plans
   * (by default the same; a node not heard from yet since the shell started
   * takes none but counts, as it is expected back).
   */
  setAccepting(name: string, accepting: boolean, counted = accepting): void {
    if (accepting && !counted) throw new Error(`node ${name}: a node that takes jobs counts in plans`);
    const slot = this.slot(name);
    if (slot.accepting !== accepting) {
      this.acceptingFree += accepting ? slot.freeCpus : -slot.freeCpus;
      this.acceptingChanges++;
    }
    if (slot.counted !== counted) {
      this.countedFree += counted ? slot.freeCpus : -slot.freeCpus;
      this.countedTotal += counted ? slot.node.cpus : -slot.node.cpus;
      this.countedChanges++;
      if (!counted) this.countedLosses++;
    }
    slot.accepting = accepting;
    slot.counted = counted;
  }

  /**
   * Whether some set of the nodes that count in plans could hold the request
   * once idle (a job limited to a drained node's features or partition cannot
   * be planned, whatever the CPU count says). Remembered per request until
   * the nodes that count change.
   */
  couldPlaceOnCounted(request: ResourceRequest): boolean {
    if (this.countedTotal === this.total) return true; // every node counts: checked at submission
    const known = this.fitsCounted.get(request);
    if (known !== undefined && known.version === this.countedChanges) return known.fits;
    const fits = this.fits(request, (slot) => slot.counted, false);
    this.fitsCounted.set(request, { version: this.countedChanges, fits });
    return fits;
  }

  /** The most free CPUs and the most free memory on any node that takes jobs now (each on its own): no job asking more per node can start now. */
  largestFreeNow(): { cpus: number; memoryMiB: number } {
    let cpus = 0;
    let memoryMiB = 0;
    for (const slot of this.slots) {
      if (!slot.accepting) continue;
      if (slot.freeCpus > cpus) cpus = slot.freeCpus;
      if (slot.freeMemoryMiB > memoryMiB) memoryMiB = slot.freeMemoryMiB;
    }
    return { cpus, memoryMiB };
  }

  /** The nodes that count in plans, in the pool's order. */
  countedNodes(): PoolNode[] {
    return this.slots.filter((slot) => slot.counted).map((slot) => slot.node);
  }

  free(name: string): { cpus: number; memoryMiB: number } {
    const slot = this.slot(name);
    return { cpus: slot.freeCpus, memoryMiB: slot.freeMemoryMiB };
  }

  /** Whether any set of nodes could ever hold the request (all nodes idle and accepting or not). */
  couldEverPlace(request: ResourceRequest): boolean {
    return this.fits(request, () => true, false);
  }

  /** Whether `request.nodes` of the slots `use` picks suit the request, with their free capacity now or all of it. */
  private fits(request: ResourceRequest, use: (slot: NodeSlot) => boolean, now: boolean): boolean {
    let fitting = 0;
    for (const slot of this.slots) {
      const cpus = now ? slot.freeCpus : slot.node.cpus;
      const memoryMiB = now ? slot.freeMemoryMiB : slot.node.memoryMiB;
      if (use(slot) && this.suits(slot, request, cpus, memoryMiB) && ++fitting >= request.nodes) return true;
    }
    return false;
  }

  /** Nodes for the request now, by the pool's strategy, or null. Takes nothing. */
  place(request: ResourceRequest): string[] | null {
    const candidates: NodeSlot[] = [];
    for (const slot of this.slots) {
      if (slot.accepting && this.suits(slot, request, slot.freeCpus, slot.freeMemoryMiB)) {
        candidates.push(slot);
        if (this.strategy === 'first-fit' && candidates.length === request.nodes) break;
      }
    }
    if (candidates.length < request.nodes) return null;
    if (this.strategy === 'best-fit') {
      // Tightest nodes first: least CPU (then memory) left over after the job.
      candidates.sort((a, b) => a.freeCpus - b.freeCpus || a.freeMemoryMiB - b.freeMemoryMiB || a.order - b.order);
    } else if (this.strategy === 'least-loaded') {
      // Most free CPUs first (Libra's least-loaded host selection).
      candidates.sort((a, b) => b.freeCpus - a.freeCpus || b.freeMemoryMiB - a.freeMemoryMiB || a.order - b.order);
    }
    return candidates.slice(0, request.nodes).map((slot) => slot.node.name);
  }

  allocate(id: JobId, nodes: readonly string[], request: ResourceRequest): void {
    if (this.allocations.has(id)) throw new Error(`job ${id} already holds nodes`);
    for (const name of nodes) {
      const slot = this.slot(name);
      slot.freeCpus -= request.cpusPerNode;
      slot.freeMemoryMiB -= request.memoryMiBPerNode;
      if (slot.accepting) this.acceptingFree -= request.cpusPerNode;
      if (slot.counted) this.countedFree -= request.cpusPerNode;
    }
    this.allocations.set(id, { nodes, cpus: request.cpusPerNode, memoryMiB: request.memoryMiBPerNode });
  }

  release(id: JobId): void {
    const allocation = this.allocations.get(id);
    if (!allocation) return;
    for (const name of allocation.nodes) {
      const slot = this.slot(name);
      slot.freeCpus += allocation.cpus;
      slot.freeMemoryMiB += allocation.memoryMiB;
      if (slot.accepting) this.acceptingFree += allocation.cpus;
      if (slot.counted) this.countedFree += allocation.cpus;
    }
    this.allocations.delete(id);
  }

  private suits(slot: NodeSlot, request: ResourceRequest, cpus: number, memoryMiB: number): boolean {
    if (cpus < request.cpusPerNode || memoryMiB < request.memoryMiBPerNode) return false;
    if (request.eligibleNodes && !request.eligibleNodes.has(slot.node.name)) return false;
    for (const feature of request.features) if (!slot.features.has(feature)) return false;
    return true;
  }

  private slot(name: string): NodeSlot {
    const slot = this.byName.get(name);
    if (!slot) throw new Error(`no node named ${name}`);
    return slot;
  }
}
