// Availability profile: free processors over future time, as a step function.
//
// Steps live in a treap keyed by start time; each node carries the free count
// of its step plus the minimum and maximum over its subtree, with lazy range
// addition. "Earliest start for (size, duration)" descends the tree, skipping
// whole subtrees whose maximum (or minimum) rules them out, instead of scanning
// every step: conservative backfilling asks once per queued job per pass.
// The step function is kept canonical (no two adjacent steps with the same
// value), so stale breakpoints from released reservations do not pile up.
// Treap priorities come from a xorshift generator seeded per instance: the
// structure is deterministic.

import type { Seconds } from './types.js';

class StepNode {
  left: StepNode | null = null;
  right: StepNode | null = null;
  /** Pending addition for the children (this node's own fields already include it). */
  lazy = 0;
  min: number;
  max: number;
  constructor(
    readonly key: Seconds,
    public free: number,
    readonly priority: number,
  ) {
    this.min = free;
    this.max = free;
  }
}

function applyAdd(n: StepNode | null, delta: number): void {
  if (!n) return;
  n.free += delta;
  n.min += delta;
  n.max += delta;
  n.lazy += delta;
}

function pushDown(n: StepNode): void {
  if (n.lazy !== 0) {
    applyAdd(n.left, n.lazy);
    applyAdd(n.right, n.lazy);
    n.lazy = 0;
  }
}

function refresh(n: StepNode): void {
  let min = n.free;
  let max = n.free;
  if (n.left) {
    if (n.left.min < min) min = n.left.min;
    if (n.left.max > max) max = n.left.max;
  }
  if (n.right) {
    if (n.right.min < min) min = n.right.min;
    if (n.right.max > max) max = n.right.max;
  }
  n.min = min;
  n.max = max;
}

/** Splits into (keys < key, keys >= key). */
function split(n: StepNode | null, key: Seconds): [StepNode | null, StepNode | null] {
  if (!n) return [null, null];
  pushDown(n);
  if (n.key < key) {
    const [l, r] = split(n.right, key);
    n.right = l;
    refresh(n);
    return [n, r];
  }
  const [l, r] = split(n.left, key);
  n.left = r;
  refresh(n);
  return [l, n];
}

/** Merges two treaps where every key of `a` is below every key of `b`. */
function merge(a: StepNode | null, b: StepNode | null): StepNode | null {
  if (!a) return b;
  if (!b) return a;
  if (a.priority > b.priority) {
    pushDown(a);
    a.right = merge(a.right, b);
    refresh(a);
    return a;
  }
  pushDown(b);
  b.left = merge(a, b.left);
  refresh(b);
  return b;
}

function leftmost(n: StepNode): StepNode {
  while (n.left) {
    pushDown(n);
    n = n.left;
  }
  return n;
}

function rightmost(n: StepNode): StepNode {
  while (n.right) {
    pushDown(n);
    n = n.right;
  }
  return n;
}

/** Removes the leftmost node (its key is known to be the minimum). */
function withoutLeftmost(n: StepNode): StepNode | null {
  pushDown(n);
  if (!n.left) return n.right;
  n.left = withoutLeftmost(n.left);
  refresh(n);
  return n;
}

/** First step key > after whose free count (with `acc` added) is >= size. */
function firstAtLeast(n: StepNode | null, acc: number, after: Seconds, size: number): Seconds | undefined {
  while (n) {
    if (n.max + acc < size) return undefined;
    const below = acc + n.lazy;
    if (n.key > after) {
      const inLeft = firstAtLeast(n.left, below, after, size);
      if (inLeft !== undefined) return inLeft;
      if (n.free + acc >= size) return n.key;
    }
    n = n.right;
    acc = below;
  }
  return undefined;
}

/** Last step key in (after, before) whose free count (with `acc` added) is < size. */
function lastBelow(n: StepNode | null, acc: number, after: Seconds, before: Seconds, size: number): Seconds | undefined {
  while (n) {
    if (n.min + acc >= size) return undefined;
    const below = acc + n.lazy;
    if (n.key < before) {
      const inRight = lastBelow(n.right, below, after, before, size);
      if (inRight !== undefined) return inRight;
      if (n.key <= after) return undefined;
      if (n.free + acc < size) return n.key;
    }
    n = n.left;
    acc = below;
  }
  return undefined;
}

export class AvailabilityProfile {
  private root: StepNode | null;
  private seed = 0x9e3779b9;
  private originTime: Seconds;

  /** A machine of `capacity` processors, all free from `origin` on. */
  constructor(
    readonly capacity: number,
    origin: Seconds,
  ) {
    this.originTime = origin;
    this.root = this.node(origin, capacity);
  }

  /** Builds a profile from canonical steps `[time, free]` sorted by time, first at origin. */
  static fromSteps(capacity: number, steps: readonly (readonly [Seconds, number])[]): AvailabilityProfile {
    if (steps.length === 0) throw new Error('fromSteps needs at least one step');
    const profile = new AvailabilityProfile(capacity, steps[0][0]);
    // Balanced build: priorities decrease with depth so the heap order holds.
    const depth = Math.ceil(Math.log2(steps.length + 1));
    const build = (lo: number, hi: number, level: number): StepNode | null => {
      if (lo > hi) return null;
      const mid = (lo + hi) >>> 1;
      const band = (depth - level) * 0x1000000;
      const n = new StepNode(steps[mid][0], steps[mid][1], band + (profile.nextRandom() & 0xffffff));
      n.left = build(lo, mid - 1, level + 1);
      n.right = build(mid + 1, hi, level + 1);
      refresh(n);
      return n;
    };
    profile.root = build(0, steps.length - 1, 0);
    return profile;
  }

  /** The first instant the profile describes; nothing before it can be reserved. */
  get origin(): Seconds {
    return this.originTime;
  }

  private nextRandom(): number {
    let x = this.seed;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.seed = x >>> 0;
    return this.seed;
  }

  private node(key: Seconds, free: number): StepNode {
    // Bands of 2^24 above are used only by fromSteps; random priorities stay below.
    return new StepNode(key, free, this.nextRandom() & 0xffffff);
  }

  /** Free processors at instant t (t >= origin). */
  freeAt(t: Seconds): number {
    let n = this.root;
    let acc = 0;
    let best = this.capacity;
    while (n) {
      if (n.key <= t) {
        best = n.free + acc;
        acc += n.lazy;
        n = n.right;
      } else {
        acc += n.lazy;
        n = n.left;
      }
    }
    return best;
  }

  /** Adds `delta` free processors over [start, end); start is clamped to the origin. */
  add(start: Seconds, end: Seconds, delta: number): void {
    if (start < this.originTime) start = this.originTime;
    if (end <= start || delta === 0) return;
    const [low, rest] = split(this.root, start);
    let [mid, high] = split(rest, end);
    const before = low ? rightmost(low).free : undefined;
    const atStart = mid && leftmost(mid).key === start ? undefined : (before ?? this.capacity);
    if (atStart !== undefined) mid = merge(this.node(start, atStart), mid);
    if (!high || leftmost(high).key !== end) {
      high = merge(this.node(end, rightmost(mid!).free), high);
    }
    applyAdd(mid, delta);
    // Keep the step function canonical at both ends of the changed range.
    if (before !== undefined && leftmost(mid!).free === before) mid = withoutLeftmost(mid!);
    const lastMid = mid ? rightmost(mid).free : before;
    if (high && leftmost(high).free === lastMid) high = withoutLeftmost(high);
    this.root = merge(merge(low, mid), high);
  }

  /** Takes `size` processors over [start, start + duration). */
  reserve(start: Seconds, duration: Seconds, size: number): void {
    this.add(start, start + duration, -size);
  }

  /** Gives back `size` processors over [start, start + duration). */
  release(start: Seconds, duration: Seconds, size: number): void {
    this.add(start, start + duration, size);
  }

  /** Forgets everything before `now` (time only moves forward). */
  advance(now: Seconds): void {
    if (now <= this.originTime) return;
    const [low, high] = split(this.root, now);
    let rest = high;
    if (!rest || leftmost(rest).key !== now) {
      rest = merge(this.node(now, low ? rightmost(low).free : this.capacity), rest);
    }
    this.root = rest;
    this.originTime = now;
  }

  /**
   * Earliest t >= notBefore at which `size` processors are free throughout
   * [t, t + duration). Infinity if size exceeds the machine.
   *
   * Only starts t < startBefore count, and the window is cut at `cut`:
   * [t, min(t + duration, cut)). Compression uses them to ask "could this job
   * start before its reservation?" without lifting it first.
   */
  earliestStart(
    size: number,
    duration: Seconds,
    notBefore: Seconds,
    startBefore: Seconds = Infinity,
    cut: Seconds = Infinity,
  ): Seconds {
    if (size > this.capacity) return Infinity;
    let t = notBefore < this.originTime ? this.originTime : notBefore;
    let fromBlocked = false; // t is a step known to have fewer than `size` free
    while (t < startBefore) {
      const candidate = !fromBlocked && this.freeAt(t) >= size ? t : firstAtLeast(this.root, 0, t, size);
      // The last step is always the whole machine, so a candidate exists.
      if (candidate === undefined || candidate >= startBefore) return Infinity;
      // Jump past the last blocked step of the window, not the first: every
      // start before it fails too, so short gaps are skipped in one descent.
      const windowEnd = candidate + duration < cut ? candidate + duration : cut;
      const blocked = lastBelow(this.root, 0, candidate, windowEnd, size);
      if (blocked === undefined) return candidate;
      t = blocked;
      fromBlocked = true;
    }
    return Infinity;
  }

  /** The canonical steps `[time, free]` in time order (for tests and displays). */
  steps(): Array<[Seconds, number]> {
    const out: Array<[Seconds, number]> = [];
    const walk = (n: StepNode | null, acc: number): void => {
      if (!n) return;
      walk(n.left, acc + n.lazy);
      out.push([n.key, n.free + acc]);
      walk(n.right, acc + n.lazy);
    };
    walk(this.root, 0);
    return out;
  }
}
