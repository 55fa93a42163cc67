// The availability profile of profile.ts in one flat array (step times and
// free counts, interleaved), for profiles of a few hundred steps: the queue projection of
// EASY and FCFS, rebuilt from the running jobs after every early end, holds
// about as many steps as running plus twice the queued jobs. There a tree's
// node allocations and rebalancing cost more than moving a few hundred
// numbers, and the scans are short. Same semantics, answer for answer (the
// profile tests run both against a naive per-second model); the projection
// takes the tree for long queues (projection.ts).

import type { Seconds } from './types.js';

export class FlatProfile {
  /** Step i's time at [2i], its free count at [2i + 1]: one array to move on inserts. */
  private steps_: Float64Array;
  private count: number;

  /** A machine of `capacity` processors, all free from `origin` on. */
  constructor(
    readonly capacity: number,
    origin: Seconds,
    room = 64,
  ) {
    this.steps_ = new Float64Array(2 * room);
    this.steps_[0] = origin;
    this.steps_[1] = capacity;
    this.count = 1;
  }

  /** Builds a profile from canonical steps `[time, free]` sorted by time, first at origin. */
  static fromSteps(capacity: number, steps: readonly (readonly [Seconds, number])[]): FlatProfile {
    if (steps.length === 0) throw new Error('fromSteps needs at least one step');
    const profile = new FlatProfile(capacity, steps[0][0], Math.max(64, steps.length * 2));
    for (let i = 0; i < steps.length; i++) {
      profile.steps_[2 * i] = steps[i][0];
      profile.steps_[2 * i + 1] = steps[i][1];
    }
    profile.count = steps.length;
    return profile;
  }

  /** Empties the profile, keeping its arrays, to be filled again with `append`. */
  clear(): void {
    this.count = 0;
  }

  /** Adds a step after the last (later, with another free count: the caller keeps the steps canonical). */
  append(time: Seconds, free: number): void {
    if (2 * this.count === this.steps_.length) this.grow();
    this.steps_[2 * this.count] = time;
    this.steps_[2 * this.count + 1] = free;
    this.count++;
  }

  /** The first instant the profile describes; nothing before it can be reserved. */
  get origin(): Seconds {
    return this.steps_[0];
  }

  /** Steps held now (for choosing between this and the tree). */
  get size(): number {
    return this.count;
  }

  /** Index of the step in effect at t (the last with time <= t), -1 before the origin. */
  private stepAt(t: Seconds): number {
    let lo = 0;
    let hi = this.count; // first index with time > t
    const steps = this.steps_;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (steps[2 * mid] <= t) lo = mid + 1;
      else hi = mid;
    }
    return lo - 1;
  }

  /** Free processors at instant t (t >= origin). */
  freeAt(t: Seconds): number {
    const i = this.stepAt(t);
    return i < 0 ? this.capacity : this.steps_[2 * i + 1];
  }

  /**
   * Earliest t >= notBefore at which `size` processors are free throughout
   * [t, t + duration). Infinity if size exceeds the machine.
   */
  earliestStart(size: number, duration: Seconds, notBefore: Seconds): Seconds {
    if (size > this.capacity) return Infinity;
    const steps = this.steps_;
    const n = this.count;
    let t = notBefore < steps[0] ? steps[0] : notBefore;
    let i = this.stepAt(t);
    for (;;) {
      // The first step from i on with room; the candidate start is t within step i, else that step's time.
      while (i < n && steps[2 * i + 1] < size) i++;
      if (i === n) return Infinity;
      if (steps[2 * i] > t) t = steps[2 * i];
      const end = t + duration;
      let blocked = -1;
      for (let k = i + 1; k < n && steps[2 * k] < end; k++) {
        if (steps[2 * k + 1] < size) blocked = k; // the last one: every start before it fails too
      }
      if (blocked < 0) return t;
      i = blocked + 1;
      if (i === n) return Infinity;
      t = steps[2 * i];
    }
  }

  /** Takes `size` processors over [start, start + duration). */
  reserve(start: Seconds, duration: Seconds, size: number): void {
    this.add(start, start + duration, -size);
  }

  /** Gives back `size` processors over [start, start + duration). */
  release(start: Seconds, duration: Seconds, size: number): void {
    this.add(start, start + duration, size);
  }

  /** Adds `delta` free processors over [start, end); start is clamped to the origin. */
  add(start: Seconds, end: Seconds, delta: number): void {
    if (start < this.steps_[0]) start = this.steps_[0];
    if (end <= start || delta === 0) return;
    // Breakpoints at start and end (the value in effect there), then the change in between.
    let first = this.stepAt(start);
    if (this.steps_[2 * first] !== start) first = this.insert(first + 1, start, this.steps_[2 * first + 1]);
    let last = this.stepAt(end); // the step in effect at end: it keeps its value
    if (end !== Infinity && this.steps_[2 * last] !== end) last = this.insert(last + 1, end, this.steps_[2 * last + 1]);
    else if (end === Infinity) last = this.count;
    const steps = this.steps_;
    for (let k = first; k < last; k++) steps[2 * k + 1] += delta;
    // Canonical at both ends of the changed range: the step after it, then the first of it.
    if (last < this.count && steps[2 * last + 1] === steps[2 * last - 1]) this.remove(last);
    if (first > 0 && steps[2 * first + 1] === steps[2 * first - 1]) this.remove(first);
  }

  /** Forgets everything before `now` (time only moves forward). */
  advance(now: Seconds): void {
    if (now <= this.steps_[0]) return;
    const i = this.stepAt(now);
    // Step i is in effect at now: it becomes the first, starting at now.
    this.steps_.copyWithin(0, 2 * i, 2 * this.count);
    this.count -= i;
    this.steps_[0] = now;
  }

  /** The canonical steps `[time, free]` in time order (for tests and displays). */
  steps(): Array<[Seconds, number]> {
    const out: Array<[Seconds, number]> = [];
    for (let i = 0; i < this.count; i++) out.push([this.steps_[2 * i], this.steps_[2 * i + 1]]);
    return out;
  }

  /** Inserts a step at index `at`; returns `at`. */
  private insert(at: number, time: Seconds, value: number): number {
    if (2 * this.count === this.steps_.length) this.grow();
    this.steps_.copyWithin(2 * at + 2, 2 * at, 2 * this.count);
    this.steps_[2 * at] = time;
    this.steps_[2 * at + 1] = value;
    this.count++;
    return at;
  }

  private grow(): void {
    const steps = new Float64Array(this.steps_.length * 2);
    steps.set(this.steps_);
    this.steps_ = steps;
  }

  private remove(at: number): void {
    this.steps_.copyWithin(2 * at, 2 * at + 2, 2 * this.count);
    this.count--;
  }
}
