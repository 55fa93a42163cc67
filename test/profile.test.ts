// The availability profile (src/core/profile.ts, and its flat form
// src/core/flat-profile.ts): free processors over future time as a canonical
// step function. Hand-made profiles for the edge cases of
// earliestStart, then a seeded randomised comparison against a naive model that
// keeps one value per second.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FlatProfile } from '../src/core/flat-profile.js';
import { AvailabilityProfile } from '../src/core/profile.js';
import { SeededRandom } from '../src/core/random.js';

/** True when no two adjacent steps hold the same free count and times increase. */
function isCanonical(steps: ReadonlyArray<readonly [number, number]>): boolean {
  for (let i = 1; i < steps.length; i++) {
    if (steps[i][0] <= steps[i - 1][0] || steps[i][1] === steps[i - 1][1]) return false;
  }
  return true;
}

describe('availability profile: reserve and release', () => {
  it('a new profile is one step: the whole machine free from the origin', () => {
    const profile = new AvailabilityProfile(8, 100);
    assert.deepEqual(profile.steps(), [[100, 8]]);
    assert.equal(profile.origin, 100);
    assert.equal(profile.freeAt(100), 8);
    assert.equal(profile.freeAt(1e9), 8);
  });

  // | op                 | steps                          |
  // | reserve(5, 5, 2)   | [0,4] [5,2] [10,4]             |
  // | release(5, 5, 2)   | [0,4]                          |
  it('reserve then release of the same slot gives back the one-step profile', () => {
    const profile = new AvailabilityProfile(4, 0);
    profile.reserve(5, 5, 2);
    assert.deepEqual(profile.steps(), [[0, 4], [5, 2], [10, 4]]);
    assert.equal(profile.freeAt(4), 4);
    assert.equal(profile.freeAt(5), 2);
    assert.equal(profile.freeAt(9), 2);
    assert.equal(profile.freeAt(10), 4);
    profile.release(5, 5, 2);
    assert.deepEqual(profile.steps(), [[0, 4]]);
  });

  // | op                  | steps                  | why                                  |
  // | reserve(0, 10, 2)   | [0,2] [10,4]           |                                      |
  // | reserve(10, 10, 2)  | [0,2] [20,4]           | the step at 10 would repeat 2: merged |
  // | release(0, 10, 2)   | [0,4] [10,2] [20,4]    |                                      |
  // | release(10, 10, 2)  | [0,4]                  | both breakpoints vanish              |
  it('adjacent reservations of equal size merge into one step and split again on release', () => {
    const profile = new AvailabilityProfile(4, 0);
    profile.reserve(0, 10, 2);
    assert.deepEqual(profile.steps(), [[0, 2], [10, 4]]);
    profile.reserve(10, 10, 2);
    assert.deepEqual(profile.steps(), [[0, 2], [20, 4]]);
    profile.release(0, 10, 2);
    assert.deepEqual(profile.steps(), [[0, 4], [10, 2], [20, 4]]);
    profile.release(10, 10, 2);
    assert.deepEqual(profile.steps(), [[0, 4]]);
  });

  // | op                 | steps                           |
  // | reserve(0, 30, 1)  | [0,9] [30,10]                   |
  // | reserve(10, 10, 3) | [0,9] [10,6] [20,9] [30,10]     |
  // | reserve(20, 10, 1) | [0,9] [10,6] [20,8] [30,10]     |
  // | reserve(30, 5, 2)  | [0,9] [10,6] [20,8] [30,8]: 30 merges -> [0,9] [10,6] [20,8] [35,10] |
  // | release(10, 10, 3) | [0,9] [20,8] [35,10]            |
  it('nested and overlapping holds stay canonical and release in any order', () => {
    const profile = new AvailabilityProfile(10, 0);
    profile.reserve(0, 30, 1);
    assert.deepEqual(profile.steps(), [[0, 9], [30, 10]]);
    profile.reserve(10, 10, 3);
    assert.deepEqual(profile.steps(), [[0, 9], [10, 6], [20, 9], [30, 10]]);
    profile.reserve(20, 10, 1);
    assert.deepEqual(profile.steps(), [[0, 9], [10, 6], [20, 8], [30, 10]]);
    profile.reserve(30, 5, 2);
    assert.deepEqual(profile.steps(), [[0, 9], [10, 6], [20, 8], [35, 10]]);
    profile.release(10, 10, 3);
    assert.deepEqual(profile.steps(), [[0, 9], [20, 8], [35, 10]]);
    profile.release(0, 30, 1);
    profile.release(30, 5, 2);
    profile.release(20, 10, 1);
    assert.deepEqual(profile.steps(), [[0, 10]]);
  });

  it('a zero-length or zero-size reservation changes nothing', () => {
    const profile = new AvailabilityProfile(4, 0);
    profile.reserve(5, 0, 2);
    profile.reserve(5, 10, 0);
    assert.deepEqual(profile.steps(), [[0, 4]]);
  });
});

describe('availability profile: earliestStart', () => {
  // capacity 10:
  // | time | 0 | 10 | 15 | 20 | 40 |
  // | free | 2 |  6 |  3 |  8 | 10 |
  const hand = (): AvailabilityProfile =>
    AvailabilityProfile.fromSteps(10, [[0, 2], [10, 6], [15, 3], [20, 8], [40, 10]]);

  it('fromSteps keeps the steps as given', () => {
    assert.deepEqual(hand().steps(), [[0, 2], [10, 6], [15, 3], [20, 8], [40, 10]]);
    assert.equal(hand().freeAt(14), 6);
    assert.equal(hand().freeAt(15), 3);
  });

  // 5 x 10: [10,15) has 6 but is only 5 long, then 3 at 15 -> next candidate 20 (8 until 40).
  it('skips a gap that is wide enough but too short', () => {
    assert.equal(hand().earliestStart(5, 10, 0), 20);
  });

  // 5 x 5: [10,15) holds 6 >= 5 and the job ends exactly where the 3-step starts.
  it('fits exactly into a gap that ends where the job ends', () => {
    assert.equal(hand().earliestStart(5, 5, 0), 10);
    assert.equal(hand().earliestStart(5, 6, 0), 20);
  });

  // 8 x 20: [20,40) holds 8 exactly and [40,..) 10; 8 x 25 also fits at 20.
  it('a job as wide as a step fits in it, and may run on into the next step', () => {
    assert.equal(hand().earliestStart(8, 20, 0), 20);
    assert.equal(hand().earliestStart(8, 25, 0), 20);
    assert.equal(hand().earliestStart(9, 1, 0), 40);
  });

  // notBefore 12 is inside [10,15): 3 x 10 sees 6 on [12,15), 3 on [15,20), 8 on [20,22) -> 12.
  // 6 x 5 from 11: [11,15) is only 4 long -> 20. 2 x 1 from 3 -> 3 (inside the first step).
  it('starts at notBefore when it falls inside a step that fits', () => {
    assert.equal(hand().earliestStart(3, 10, 12), 12);
    assert.equal(hand().earliestStart(6, 5, 11), 20);
    assert.equal(hand().earliestStart(6, 4, 11), 11);
    assert.equal(hand().earliestStart(2, 1, 3), 3);
  });

  // 2 processors are free everywhere: any duration starts at once.
  it('starts at once when the minimum over all time is enough, whatever the duration', () => {
    assert.equal(hand().earliestStart(2, 1e9, 0), 0);
    assert.equal(hand().earliestStart(10, 1e9, 0), 40);
  });

  it('is Infinity for a job wider than the machine', () => {
    assert.equal(hand().earliestStart(11, 1, 0), Infinity);
  });

  it('clamps notBefore to the origin', () => {
    const profile = AvailabilityProfile.fromSteps(10, [[100, 4], [150, 10]]);
    assert.equal(profile.earliestStart(4, 10, 0), 100);
    assert.equal(profile.earliestStart(5, 10, 0), 150);
  });
});

describe('availability profile: advance', () => {
  // | advance to | steps                              |
  // | 12         | [12,6] [15,3] [20,8] [40,10]       |
  // | 15         | [15,3] [20,8] [40,10]              |
  // | 14 (past)  | unchanged                          |
  // | 100        | [100,10]                           |
  it('drops the steps before now and starts the profile at now with the value then', () => {
    const profile = AvailabilityProfile.fromSteps(10, [[0, 2], [10, 6], [15, 3], [20, 8], [40, 10]]);
    profile.advance(12);
    assert.equal(profile.origin, 12);
    assert.deepEqual(profile.steps(), [[12, 6], [15, 3], [20, 8], [40, 10]]);
    profile.advance(15);
    assert.deepEqual(profile.steps(), [[15, 3], [20, 8], [40, 10]]);
    profile.advance(14);
    assert.equal(profile.origin, 15);
    assert.deepEqual(profile.steps(), [[15, 3], [20, 8], [40, 10]]);
    profile.advance(100);
    assert.deepEqual(profile.steps(), [[100, 10]]);
  });

  // After advance(12): add(5, 25, 4) only changes [12, 25): 6+4 = 10 to 15,
  // 3+4 = 7 to 20, 8+4 = 12 to 25 (a release beyond what is held is plain addition).
  it('clamps holds that began before the origin to the origin', () => {
    const profile = AvailabilityProfile.fromSteps(10, [[0, 2], [10, 6], [15, 3], [20, 8], [40, 10]]);
    profile.advance(12);
    profile.add(5, 25, 4);
    assert.deepEqual(profile.steps(), [[12, 10], [15, 7], [20, 12], [25, 8], [40, 10]]);
    profile.add(0, 12, 5);
    assert.deepEqual(profile.steps(), [[12, 10], [15, 7], [20, 12], [25, 8], [40, 10]]);
  });

  it('earliestStart never answers before the advanced origin', () => {
    const profile = new AvailabilityProfile(4, 0);
    profile.reserve(0, 10, 4);
    profile.advance(7);
    assert.equal(profile.earliestStart(1, 1, 0), 10);
    assert.equal(profile.earliestStart(1, 1, 8), 10);
    profile.release(0, 10, 4);
    assert.equal(profile.earliestStart(4, 3, 0), 7);
  });
});

/**
 * The naive model: one free count per second from `origin` up to HORIZON; every
 * hold ends before HORIZON, so after it the whole machine is free.
 */
class NaiveProfile {
  private free: number[];
  origin: number;
  constructor(
    readonly capacity: number,
    origin: number,
    readonly horizon: number,
  ) {
    this.origin = origin;
    this.free = new Array<number>(horizon).fill(capacity);
  }
  add(start: number, end: number, delta: number): void {
    for (let t = Math.max(start, this.origin); t < end; t++) this.free[t] += delta;
  }
  freeAt(t: number): number {
    return t < this.horizon ? this.free[t] : this.capacity;
  }
  advance(now: number): void {
    if (now > this.origin) this.origin = now;
  }
  earliestStart(size: number, duration: number, notBefore: number): number {
    if (size > this.capacity) return Infinity;
    for (let t = Math.max(notBefore, this.origin); ; t++) {
      let fits = true;
      for (let u = t; u < t + duration && u < this.horizon; u++) {
        if (this.free[u] < size) {
          fits = false;
          t = u; // the next candidate is after u
          break;
        }
      }
      if (fits) return t;
    }
  }
  steps(): Array<[number, number]> {
    const out: Array<[number, number]> = [[this.origin, this.freeAt(this.origin)]];
    for (let t = this.origin + 1; t <= this.horizon; t++) {
      const value = this.freeAt(t);
      if (value !== out[out.length - 1][1]) out.push([t, value]);
    }
    return out;
  }
}

describe('availability profile against a naive per-second model', () => {
  // 4000 seeded operations on a 16-processor machine: reservations that fit
  // (placed by the naive model's earliestStart or at random feasible spots),
  // releases of held reservations in random order, advances of the origin, and
  // queries of earliestStart and freeAt. After every operation the steps must
  // equal the naive model's and be canonical. Both forms of the profile: the
  // tree, and the flat arrays the queue projection uses for short queues.
  const forms = { tree: (capacity: number) => new AvailabilityProfile(capacity, 0), flat: (capacity: number) => new FlatProfile(capacity, 0, 4) };
  for (const [form, make] of Object.entries(forms)) for (const seed of [1, 2, 3]) {
    it(`${form}: matches the naive model step for step over 4000 random operations (seed ${seed})`, () => {
      const random = new SeededRandom(seed);
      const capacity = 16;
      const horizon = 6000;
      const profile = make(capacity);
      const naive = new NaiveProfile(capacity, 0, horizon);
      const held: Array<{ start: number; duration: number; size: number }> = [];
      let queries = 0;
      for (let op = 0; op < 4000; op++) {
        const origin = naive.origin;
        const roll = random.next();
        if (roll < 0.4) {
          const size = random.int(1, capacity);
          const duration = random.int(1, 60);
          const notBefore = origin + random.int(0, 200);
          const start = naive.earliestStart(size, duration, notBefore);
          assert.equal(profile.earliestStart(size, duration, notBefore), start, `op ${op}: earliestStart(${size}, ${duration}, ${notBefore})`);
          queries++;
          if (start + duration < horizon && random.chance(0.7)) {
            profile.reserve(start, duration, size);
            naive.add(start, start + duration, -size);
            held.push({ start, duration, size });
          }
        } else if (roll < 0.75 && held.length > 0) {
          const [slot] = held.splice(random.int(0, held.length - 1), 1);
          profile.release(slot.start, slot.duration, slot.size);
          naive.add(slot.start, slot.start + slot.duration, slot.size);
        } else if (roll < 0.85) {
          const now = origin + random.int(0, 20);
          profile.advance(now);
          naive.advance(now);
          // A hold entirely in the past is gone: drop it from the releasable set.
          for (let i = held.length - 1; i >= 0; i--) if (held[i].start + held[i].duration <= now) held.splice(i, 1);
        } else {
          const t = origin + random.int(0, 300);
          assert.equal(profile.freeAt(t), naive.freeAt(t), `op ${op}: freeAt(${t})`);
        }
        const steps = profile.steps();
        assert.ok(isCanonical(steps), `op ${op}: steps not canonical: ${JSON.stringify(steps)}`);
        assert.deepEqual(steps, naive.steps(), `op ${op}`);
        assert.equal(profile.origin, naive.origin);
      }
      assert.ok(queries > 1000, `only ${queries} earliestStart queries`);
    });
  }
});

describe('flat profile built from steps', () => {
  it('fromSteps and clear + append give the steps as given, and answer earliestStart as the tree does', () => {
    const random = new SeededRandom(9);
    const reused = new FlatProfile(64, 0, 2);
    for (let round = 0; round < 200; round++) {
      const steps: Array<[number, number]> = [];
      let time = random.int(0, 100);
      for (let i = random.int(1, 30); i > 0; i--) {
        let free = random.int(0, 64);
        if (steps.length > 0 && free === steps[steps.length - 1][1]) free = (free + 1) % 65;
        steps.push([time, free]);
        time += random.int(1, 50);
      }
      const tree = AvailabilityProfile.fromSteps(64, steps);
      const flat = FlatProfile.fromSteps(64, steps);
      reused.clear();
      for (const [t, free] of steps) reused.append(t, free);
      assert.deepEqual(flat.steps(), steps);
      assert.deepEqual(reused.steps(), steps);
      for (let query = 0; query < 20; query++) {
        const size = random.int(1, 70);
        const duration = random.int(1, 200);
        const notBefore = random.int(0, time + 50);
        const expected = tree.earliestStart(size, duration, notBefore);
        assert.equal(flat.earliestStart(size, duration, notBefore), expected, `round ${round}: earliestStart(${size}, ${duration}, ${notBefore})`);
        assert.equal(reused.earliestStart(size, duration, notBefore), expected);
      }
    }
  });
});
