// Seeded pseudo-random numbers for everything in Taras that must be
// reproducible (synthetic workloads, randomised tie-breaks in tests).
// xoshiro128** seeded through splitmix32: fast, 2^128 - 1 period, and the same
// sequence on every platform because it only uses 32-bit integer arithmetic.

/** One splitmix32 step: a well-mixed 32-bit value derived from `state`. */
function splitmix32(state: number): number {
  let z = state | 0;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

const GOLDEN_GAMMA = 0x9e3779b9;
const TWO_POW_32 = 4294967296;

export class SeededRandom {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;
  /** Box-Muller yields normals in pairs; the second waits here. */
  private spareNormal: number | undefined;

  /**
   * `seed` is taken as a 32-bit integer. `stream` selects an independent
   * sequence for the same seed, so one seed can drive several consumers whose
   * draws must not shift when another consumer draws more or less.
   */
  constructor(seed: number, stream = 0) {
    let state = (seed >>> 0) ^ Math.imul(stream >>> 0, 0x632be5ab);
    const nextWord = (): number => {
      state = (state + GOLDEN_GAMMA) | 0;
      return splitmix32(state);
    };
    this.s0 = nextWord();
    this.s1 = nextWord();
    this.s2 = nextWord();
    this.s3 = nextWord();
    // xoshiro must not start from the all-zero state.
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1;
  }

  /** A uniform 32-bit unsigned integer. */
  nextUint32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5), 7), 9) >>> 0;
    const t = this.s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    return result;
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.nextUint32() / TWO_POW_32;
  }

  /** Uniform in [lo, hi). */
  uniform(lo: number, hi: number): number {
    return lo + (hi - lo) * this.next();
  }

  /** Uniform integer in [lo, hi], both ends included. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.next() < p;
  }

  /** Exponentially distributed with the given mean. */
  exponential(mean: number): number {
    // 1 - next() is in (0, 1], so the logarithm is finite.
    return -mean * Math.log(1 - this.next());
  }

  /** Standard normal (mean 0, standard deviation 1), by Box-Muller. */
  normal(): number {
    if (this.spareNormal !== undefined) {
      const spare = this.spareNormal;
      this.spareNormal = undefined;
      return spare;
    }
    const radius = Math.sqrt(-2 * Math.log(1 - this.next()));
    const angle = 2 * Math.PI * this.next();
    this.spareNormal = radius * Math.sin(angle);
    return radius * Math.cos(angle);
  }

  /** exp(N(mu, sigma^2)): the median is exp(mu). */
  lognormal(mu: number, sigma: number): number {
    return Math.exp(mu + sigma * this.normal());
  }

  /** An index i drawn with probability weights[i] / sum(weights). */
  pick(weights: readonly number[]): number {
    let total = 0;
    for (const w of weights) total += w;
    let target = this.next() * total;
    for (let i = 0; i < weights.length; i++) {
      target -= weights[i];
      if (target < 0) return i;
    }
    return weights.length - 1; // only reached through rounding
  }
}

/** A fixed discrete distribution, for drawing often from many weights: O(log n) a draw. */
export class WeightedChoice {
  private readonly cumulative: Float64Array;

  constructor(weights: readonly number[]) {
    if (weights.length === 0) throw new RangeError('WeightedChoice: no weights');
    this.cumulative = new Float64Array(weights.length);
    let total = 0;
    weights.forEach((w, i) => {
      total += w;
      this.cumulative[i] = total;
    });
  }

  /** An index i drawn with probability weights[i] / sum(weights). */
  draw(rng: SeededRandom): number {
    const c = this.cumulative;
    const target = rng.next() * c[c.length - 1];
    let lo = 0;
    let hi = c.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (c[mid] > target) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}
