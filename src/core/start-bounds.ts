// Lower bounds on earliest starts while a profile only loses capacity.
//
// When reservations are only added (arrivals reserved in a pass, a queue
// projection being built or extended), feasible windows only disappear, so an
// earliest start found earlier stays a lower bound for the same query later.
// A job at least as wide and at least as long as an earlier one cannot start
// before it either: earliest(s, d) >= earliest(s', d') for s >= s', d >= d'.
// Remembering answers lets a search start there instead of walking again past
// every too-short gap before it. Sizes and durations are bucketed by log2, so
// only strictly smaller buckets (and the same exact size with a smaller
// duration bucket) count; the bound is exact, never optimistic.

import type { Seconds } from './types.js';

// Eight buckets per doubling of size or duration.
const SIZE_BUCKETS = 256;
const DURATION_BUCKETS = 256;

const sizeBucket = (size: number): number => Math.min(SIZE_BUCKETS - 1, Math.floor(Math.log2(size) * 8));
const durationBucket = (duration: Seconds): number =>
  Math.min(DURATION_BUCKETS - 1, Math.max(0, Math.floor(Math.log2(duration) * 8)));

/**
 * Fenwick tree for prefix maxima over [0, i) of values that only grow. It
 * belongs to one generation of its owner: a stale tree reads as empty and is
 * reset on the first write, so clearing the owner costs nothing.
 */
class PrefixMax {
  private readonly tree = new Float64Array(DURATION_BUCKETS + 1).fill(-Infinity);
  constructor(private generation: number) {}

  raise(generation: number, index: number, value: number): void {
    if (generation !== this.generation) {
      this.tree.fill(-Infinity);
      this.generation = generation;
    }
    for (let i = index + 1; i < this.tree.length; i += i & -i) if (this.tree[i] < value) this.tree[i] = value;
  }

  /** Maximum over indices < end. */
  below(generation: number, end: number): number {
    if (generation !== this.generation) return -Infinity;
    let best = -Infinity;
    for (let i = end; i > 0; i -= i & -i) if (this.tree[i] > best) best = this.tree[i];
    return best;
  }
}

export class StartBounds {
  private generation = 0;
  /** A 2-D Fenwick tree: rows over size buckets, each a prefix maximum over duration buckets. */
  private readonly grid: (PrefixMax | undefined)[] = [];
  private readonly exact = new Map<number, PrefixMax>();

  /** The profile gained capacity: every remembered answer is void. */
  clear(): void {
    this.generation++;
  }

  /** A lower bound on the earliest start of (size, duration); -Infinity if none is known. */
  lowerBound(size: number, duration: Seconds): Seconds {
    const sb = sizeBucket(size);
    const db = durationBucket(duration);
    const generation = this.generation;
    let best = this.exact.get(size)?.below(generation, db) ?? -Infinity;
    // Prefix maximum over size buckets < sb, duration buckets < db.
    for (let i = sb; i > 0; i -= i & -i) {
      const value = this.grid[i]?.below(generation, db) ?? -Infinity;
      if (value > best) best = value;
    }
    return best;
  }

  /** Remembers that (size, duration) could start no earlier than `start`. */
  record(size: number, duration: Seconds, start: Seconds): void {
    const sb = sizeBucket(size);
    const db = durationBucket(duration);
    const generation = this.generation;
    let exact = this.exact.get(size);
    if (!exact) this.exact.set(size, (exact = new PrefixMax(generation)));
    exact.raise(generation, db, start);
    for (let i = sb + 1; i <= SIZE_BUCKETS; i += i & -i) (this.grid[i] ??= new PrefixMax(generation)).raise(generation, db, start);
  }
}

/**
 * Reserves (size, duration) at its earliest start not before `notBefore`,
 * searching from the best known lower bound; `bounds` must be cleared whenever
 * the profile gains capacity.
 */
export function reserveEarliest(
  profile: { earliestStart(size: number, duration: Seconds, notBefore: Seconds): Seconds; reserve(start: Seconds, duration: Seconds, size: number): void },
  bounds: StartBounds,
  size: number,
  duration: Seconds,
  notBefore: Seconds,
): Seconds {
  const bound = bounds.lowerBound(size, duration);
  const start = profile.earliestStart(size, duration, bound > notBefore ? bound : notBefore);
  bounds.record(size, duration, start);
  profile.reserve(start, duration, size);
  return start;
}
