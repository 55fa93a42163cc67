// The CCS packing primitives against the worked example of seed 002 (section
// 3.2, figures 4-8; see spec/simulation.md), once in minutes as the paper
// prints it and once in seconds as the shells will use it.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  packFCFSStar,
  packFFDH,
  packFFDHStar,
  packFFIH,
  packingFigures,
  type PackRequest,
  type Packing,
} from '../src/core/ccs.js';
import { jobId } from '../src/core/types.js';

const CAPACITY = 16;
// Figure 4: the paper's percentages of the machine times 16 processors.
const SIZES = [1, 16, 1, 16, 2, 8, 2, 8, 4, 4];
const DURATIONS_MINUTES = [25, 50, 10, 5, 20, 40, 20, 10, 15, 30];

function example(secondsPerUnit: number): PackRequest[] {
  return SIZES.map((size, i) => ({
    id: jobId(i + 1),
    size,
    duration: DURATIONS_MINUTES[i] * secondsPerUnit,
  }));
}

/** Starts of requests 1..10, in the example's unit. */
function startsOf(packing: Packing, secondsPerUnit: number): number[] {
  return SIZES.map((_, i) => packing.start.get(jobId(i + 1))! / secondsPerUnit);
}

/** Utilisation in percent, rounded to the decimals the paper prints. */
const percent = (utilization: number, decimals: number): number =>
  Math.round(utilization * 100 * 10 ** decimals) / 10 ** decimals;

/** Independent check of a plan: at no instant do running requests exceed the machine. */
function assertFits(requests: readonly PackRequest[], packing: Packing, capacity: number): void {
  for (const probe of requests) {
    const t = packing.start.get(probe.id)!;
    const busy = requests
      .filter((r) => packing.start.get(r.id)! <= t && t < packing.start.get(r.id)! + r.duration)
      .reduce((sum, r) => sum + r.size, 0);
    assert.ok(busy <= capacity, `${busy} processors busy at ${t} on a machine of ${capacity}`);
  }
}

for (const [unit, secondsPerUnit] of [
  ['minutes', 1],
  ['seconds', 60],
] as const) {
  describe(`the paper's example in ${unit}`, () => {
    const requests = example(secondsPerUnit);

    it('FFDH: makespan 115, utilisation 85.6 %, mean wait 63.0', () => {
      const packing = packFFDH(requests, CAPACITY);
      const figures = packingFigures(requests, packing, CAPACITY);
      assert.equal(figures.makespan, 115 * secondsPerUnit);
      assert.equal(percent(figures.utilization, 1), 85.6);
      assert.equal(figures.meanWait, 63.0 * secondsPerUnit);
      // Levels: {2} at 0, {6,10,1,5,3} at 50, {7,9,8} at 90, {4} at 110.
      assert.deepEqual(startsOf(packing, secondsPerUnit), [50, 0, 50, 110, 50, 50, 90, 90, 90, 50]);
    });

    it('FFIH: makespan 120, utilisation 82.03 %, mean wait 18.5', () => {
      const packing = packFFIH(requests, CAPACITY);
      const figures = packingFigures(requests, packing, CAPACITY);
      assert.equal(figures.makespan, 120 * secondsPerUnit);
      assert.equal(percent(figures.utilization, 2), 82.03);
      assert.equal(figures.meanWait, 18.5 * secondsPerUnit);
      // Levels on the reversed list: {4} at 0, {8,3,9,7,1} at 5, {5,10,6} at 30, {2} at 70.
      assert.deepEqual(startsOf(packing, secondsPerUnit), [5, 70, 5, 0, 30, 30, 5, 5, 5, 30]);
    });

    it('FFDH*: fills gaps inside levels: makespan 110, utilisation 89.49 %, mean wait 60.5', () => {
      const packing = packFFDHStar(requests, CAPACITY);
      const figures = packingFigures(requests, packing, CAPACITY);
      assert.equal(figures.makespan, 110 * secondsPerUnit);
      assert.equal(percent(figures.utilization, 2), 89.49);
      assert.equal(figures.meanWait, 60.5 * secondsPerUnit);
      assert.deepEqual(startsOf(packing, secondsPerUnit), [50, 0, 50, 105, 50, 50, 70, 90, 90, 50]);
    });

    it('FCFS*: conservative backfilling from 0: makespan 120, utilisation 82.03 %, mean wait 27.0', () => {
      const packing = packFCFSStar(requests, CAPACITY);
      const figures = packingFigures(requests, packing, CAPACITY);
      assert.equal(figures.makespan, 120 * secondsPerUnit);
      assert.equal(percent(figures.utilization, 2), 82.03);
      assert.equal(figures.meanWait, 27.0 * secondsPerUnit);
      assert.deepEqual(startsOf(packing, secondsPerUnit), [0, 25, 0, 75, 0, 80, 0, 0, 10, 80]);
    });

    it('no packing ever uses more processors than the machine has', () => {
      for (const pack of [packFFDH, packFFIH, packFFDHStar, packFCFSStar]) {
        assertFits(requests, pack(requests, CAPACITY), CAPACITY);
      }
    });
  });
}

describe('edge cases', () => {
  const primitives = [packFFDH, packFFIH, packFFDHStar, packFCFSStar];

  it('a single request starts at 0 and the makespan is its duration', () => {
    const requests: PackRequest[] = [{ id: jobId(7), size: 4, duration: 600 }];
    for (const pack of primitives) {
      const packing = pack(requests, CAPACITY);
      assert.equal(packing.start.get(jobId(7)), 0);
      assert.deepEqual(packingFigures(requests, packing, CAPACITY), {
        makespan: 600,
        utilization: 0.25,
        meanWait: 0,
      });
    }
  });

  it('an empty request list packs to makespan 0', () => {
    for (const pack of primitives) {
      const packing = pack([], CAPACITY);
      assert.equal(packing.start.size, 0);
      assert.deepEqual(packingFigures([], packing, CAPACITY), { makespan: 0, utilization: 0, meanWait: 0 });
    }
  });

  it('a request wider than the machine is rejected, naming the request and both sizes', () => {
    const requests: PackRequest[] = [
      { id: jobId(1), size: 2, duration: 60 },
      { id: jobId(42), size: 17, duration: 60 },
    ];
    for (const pack of primitives) {
      assert.throws(
        () => pack(requests, CAPACITY),
        (error: unknown) =>
          error instanceof Error && /request 42 asks for 17 processors but the machine has 16/.test(error.message),
      );
    }
  });
});
