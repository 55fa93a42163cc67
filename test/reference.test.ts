// The simulator (src/core + src/sim) against the plain reference implementation
// of spec/simulation.md (test/reference/reference.ts), job by job: every job's
// start and its prediction at submission, for the three policies, on the
// shared traces and on seeded random workloads. The reference compresses every
// queued job at every pass, so agreement under conservative also shows that the
// real policy's skipping of jobs that cannot move changes nothing.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SeededRandom } from '../src/core/random.js';
import { simulate } from '../src/sim/simulator.js';
import { referencePolicies, referenceSimulate, StepProfile, type ReferenceJob, type ReferencePolicy } from './reference/reference.js';
import { randomWorkloads, referenceJobs, tinyWorkloads, traceWorkload, type NamedWorkload } from './reference/workloads.js';

const RANDOM_WORKLOADS = 240;
const RANDOM_SEED = 20_240_611;
const TINY_WORKLOADS = 3000;
const TINY_SEED = 99;
const SHOWN_MISMATCHES = 5;

/**
 * One line per job whose start or prediction differs: policy, workload, job,
 * expected (reference) and actual; earliest divergence first, as later ones
 * usually follow from it.
 */
function mismatches(policy: ReferencePolicy, { name, workload }: NamedWorkload): string[] {
  const actual = simulate(workload, policy).outcomes;
  const expected = referenceSimulate(referenceJobs(workload), workload.processors, policy);
  assert.equal(actual.length, expected.length, `${policy} on ${name}: ${actual.length} outcomes, reference has ${expected.length}`);
  const found: Array<{ time: number; line: string }> = [];
  actual.forEach((outcome, index) => {
    const reference = expected[index];
    const id = outcome.job.request.id;
    assert.equal(id, reference.id, `${policy} on ${name}: outcome ${index} is job ${id}, reference has job ${reference.id}`);
    if (outcome.start !== reference.start) {
      found.push({
        time: Math.min(outcome.start, reference.start),
        line: `${policy} on ${name}: job ${id} start expected ${reference.start}, actual ${outcome.start}`,
      });
    }
    if (outcome.predictedStart !== reference.prediction) {
      found.push({
        time: outcome.job.request.submitTime,
        line: `${policy} on ${name}: job ${id} prediction at submission expected ${reference.prediction}, actual ${outcome.predictedStart}`,
      });
    }
  });
  return found.sort((a, b) => a.time - b.time).map((m) => m.line);
}

function assertNone(found: readonly string[]): void {
  const shown = found.slice(0, SHOWN_MISMATCHES).join('\n');
  const more = found.length > SHOWN_MISMATCHES ? `\n... and ${found.length - SHOWN_MISMATCHES} more` : '';
  assert.equal(found.length, 0, `${found.length} mismatches against the reference:\n${shown}${more}`);
}

describe('the reference implementation', () => {
  it('finds the same earliest start as a second-by-second scan of the holds', () => {
    const rng = new SeededRandom(7);
    for (let round = 0; round < 300; round++) {
      const processors = rng.int(1, 12);
      const profile = new StepProfile(processors);
      const used = new Array<number>(80).fill(0);
      for (let hold = rng.int(0, 8); hold > 0; hold--) {
        const from = rng.int(0, 40);
        const to = from + rng.int(1, 30);
        const size = rng.int(1, processors);
        if (used.slice(from, to).some((u) => u + size > processors)) continue;
        profile.add(from, to, -size);
        for (let t = from; t < to; t++) used[t] += size;
      }
      const from = rng.int(0, 50);
      const size = rng.int(1, processors);
      const duration = rng.int(1, 20);
      let scanned = from;
      while (used.slice(scanned, scanned + duration).some((u) => u + size > processors)) scanned++;
      assert.equal(profile.earliestStart(from, size, duration), scanned, `round ${round}: ${size} processors for ${duration} s from ${from}`);
    }
  });

  it('reproduces the CCS worked example: conservative starts 0, 25, 0, 75, 0, 80, 0, 0, 10, 80 minutes', () => {
    const sizes = [1, 16, 1, 16, 2, 8, 2, 8, 4, 4];
    const minutes = [25, 50, 10, 5, 20, 40, 20, 10, 15, 30];
    const jobs: ReferenceJob[] = sizes.map((size, i) => ({ id: i + 1, submit: 0, size, estimate: minutes[i] * 60, runtime: minutes[i] * 60 }));
    const starts = referenceSimulate(jobs, 16, 'conservative').map((o) => o.start / 60);
    assert.deepEqual(starts, [0, 25, 0, 75, 0, 80, 0, 0, 10, 80]);
  });

  // Argonne SP (seed 004, 2.7.2-2.7.6): 128 nodes, A..G queued at 0; D waits for B (shadow 1 h, extra 40).
  const HOUR = 3600;
  const argonne = (e: [number, number], f: [number, number]): ReferenceJob[] =>
    ([[32, 2 * HOUR], [64, HOUR], [24, 3 * HOUR], [32, 2 * HOUR], e, f, [4, HOUR / 2]] as const).map(([size, estimate], i) => ({
      id: i + 1, submit: 0, size, estimate, runtime: estimate,
    }));

  it('reproduces the Argonne example, part 4a: only G (4 nodes, 30 min) backfills while D waits for B', () => {
    const starts = referenceSimulate(argonne([16, HOUR], [16, 8 * HOUR]), 128, 'easy').map((o) => o.start);
    assert.deepEqual(starts, [0, 0, 0, HOUR, HOUR, HOUR, 0]);
  });

  it('reproduces the Argonne example, part 4b: F (8 nodes, 480 min) backfills within the extra nodes', () => {
    const starts = referenceSimulate(argonne([16, HOUR], [8, 8 * HOUR]), 128, 'easy').map((o) => o.start);
    assert.equal(starts[5], 0);
    assert.equal(starts[3], HOUR);
  });
});

// Whole traces where the reference is fast enough; lublin under fcfs grows a
// queue whose projection the reference recomputes at every arrival, so a prefix.
const TRACE_CASES: ReadonlyArray<{ file: string; records?: number; policies: readonly ReferencePolicy[] }> = [
  { file: 'ccs-example.swf', policies: referencePolicies },
  { file: 'SDSC-SP2-1998-5k-sample.swf', policies: referencePolicies },
  { file: 'NASA-iPSC-1993-3.1-cln.swf', policies: referencePolicies },
  { file: 'lublin-256.swf', records: 3000, policies: ['fcfs'] },
  { file: 'lublin-256.swf', policies: ['easy', 'conservative'] },
];

describe('the simulator matches the reference job by job, start and prediction at submission', () => {
  for (const { file, records, policies } of TRACE_CASES) {
    for (const policy of policies) {
      const label = records === undefined ? file : `the first ${records} records of ${file}`;
      it(`${policy} on ${label}`, async () => {
        assertNone(mismatches(policy, await traceWorkload(file, records)));
      });
    }
  }

  const random = randomWorkloads(RANDOM_WORKLOADS, RANDOM_SEED);
  for (const policy of referencePolicies) {
    it(`${policy} on ${RANDOM_WORKLOADS} random workloads (ties in time, exact and inflated estimates)`, () => {
      assertNone(random.flatMap((named) => mismatches(policy, named)));
    });
  }

  const tiny = tinyWorkloads(TINY_WORKLOADS, TINY_SEED);
  for (const policy of referencePolicies) {
    it(`${policy} on ${TINY_WORKLOADS} tiny workloads (a few processors, times of a few seconds)`, () => {
      assertNone(tiny.flatMap((named) => mismatches(policy, named)));
    });
  }
});
