// Workloads shared by the reference comparison and the invariant tests: the
// shared traces (read in place, optionally a prefix) and seeded random
// workloads from the project's generator, reshaped to stress ties (coarse
// times, bursts of simultaneous submits) and estimates (exact, inflated).

import { join } from 'node:path';
import { SeededRandom } from '../../src/core/random.js';
import { generateWorkload } from '../../src/sim/workload.js';
import { normalise, parseSwf, readSwf, type Workload } from '../../src/sim/swf.js';
import type { ReferenceJob } from './reference.js';

export const TRACES_DIR = '/work/shared/traces';

export interface NamedWorkload {
  readonly name: string;
  readonly workload: Workload;
}

/** A shared trace on the machine size of its header, limited to its first `records` lines if given. */
export async function traceWorkload(file: string, records?: number): Promise<NamedWorkload> {
  const trace = await readSwf(join(TRACES_DIR, file));
  const processors = trace.headerProcessors;
  if (processors === undefined) throw new Error(`${file}: no MaxProcs or MaxNodes header`);
  const kept = records === undefined ? trace : { ...trace, records: trace.records.slice(0, records) };
  const name = records === undefined ? file : `${file} (first ${records} records)`;
  return { name, workload: normalise(kept, processors) };
}

const VARIANTS = [
  'as generated',
  'exact estimates',
  'coarse times',
  'coarse times, exact estimates',
  'bursts of simultaneous submits',
  'inflated estimates',
] as const;
type Variant = (typeof VARIANTS)[number];

const MACHINE_SIZES = [8, 16, 32, 64, 128];
const TIME_GRAINS_SECONDS = [60, 300, 900, 3600];

// SWF field positions (0-based).
const SUBMIT = 1;
const RUNTIME = 3;
const ESTIMATE = 8;

const roundUp = (value: number, grain: number): number => Math.ceil(value / grain) * grain;
const roundDown = (value: number, grain: number): number => Math.floor(value / grain) * grain;

/** Reshapes one generated job (all 18 fields) as the variant says. */
function reshape(fields: number[], variant: Variant, grain: number, burstSeconds: number, rng: SeededRandom): void {
  const exact = variant === 'exact estimates' || variant === 'coarse times, exact estimates';
  const coarse = variant === 'coarse times' || variant === 'coarse times, exact estimates' || variant === 'bursts of simultaneous submits';
  if (coarse) {
    // Submits and runtimes on a grid: many jobs arrive and end at the same instant.
    fields[SUBMIT] = roundDown(fields[SUBMIT], grain);
    fields[RUNTIME] = roundUp(fields[RUNTIME], grain);
    fields[ESTIMATE] = roundUp(fields[ESTIMATE], grain);
  }
  if (variant === 'bursts of simultaneous submits') fields[SUBMIT] = roundDown(fields[SUBMIT], burstSeconds);
  if (exact) fields[ESTIMATE] = fields[RUNTIME];
  if (variant === 'inflated estimates') fields[ESTIMATE] = fields[RUNTIME] * rng.int(2, 40);
}

/** `count` seeded random workloads, 50-300 jobs, P in 8..128, load 0.5-1.2, cycling through the variants. */
export function randomWorkloads(count: number, seed: number): NamedWorkload[] {
  const rng = new SeededRandom(seed);
  const workloads: NamedWorkload[] = [];
  for (let index = 0; index < count; index++) {
    const variant = VARIANTS[index % VARIANTS.length];
    const jobs = rng.int(50, 300);
    const procs = MACHINE_SIZES[rng.int(0, MACHINE_SIZES.length - 1)];
    const load = Math.round(rng.uniform(0.5, 1.2) * 100) / 100;
    const workloadSeed = rng.int(1, 1_000_000_000);
    const grain = TIME_GRAINS_SECONDS[rng.int(0, TIME_GRAINS_SECONDS.length - 1)];
    const burstSeconds = rng.int(4, 24) * 3600;
    const lines = [...generateWorkload({ jobs, procs, load, seed: workloadSeed })].map((line) => {
      if (line.startsWith(';')) return line;
      const fields = line.split(' ').map(Number);
      reshape(fields, variant, grain, burstSeconds, rng);
      return fields.join(' ');
    });
    const name = `random #${index} (${variant}, ${jobs} jobs, P=${procs}, load ${load}, seed ${workloadSeed}` +
      (variant.includes('coarse') || variant.includes('bursts') ? `, grain ${grain} s` : '') +
      (variant.includes('bursts') ? `, bursts every ${burstSeconds} s` : '') + ')';
    workloads.push({ name, workload: normalise(parseSwf(lines.join('\n'), name), procs) });
  }
  return workloads;
}

/**
 * `count` tiny seeded workloads on a few processors with times of a few
 * seconds: dense in ties and in off-by-one boundaries (a job ending one second
 * before another's reservation, an estimate exactly reaching a shadow time).
 */
export function tinyWorkloads(count: number, seed: number): NamedWorkload[] {
  const rng = new SeededRandom(seed);
  const workloads: NamedWorkload[] = [];
  for (let index = 0; index < count; index++) {
    const procs = rng.int(1, 6);
    const lines = Array.from({ length: rng.int(3, 12) }, (_, i) => {
      const runtime = rng.int(1, 8);
      const estimate = rng.chance(0.5) ? runtime : runtime + rng.int(1, 10);
      const size = rng.int(1, procs);
      return `${i + 1} ${rng.int(0, 15)} -1 ${runtime} ${size} -1 -1 ${size} ${estimate} -1 1 1 -1 -1 1 1 -1 -1`;
    });
    const name = `tiny #${index} (P=${procs}; id/submit/runtime/size/estimate: ${lines.map((l) => l.split(' ').filter((_, f) => [0, 1, 3, 4, 8].includes(f)).join('/')).join(', ')})`;
    workloads.push({ name, workload: normalise(parseSwf(lines.join('\n'), name), procs) });
  }
  return workloads;
}

/** The simulator's normalised jobs in the reference's plain shape. */
export function referenceJobs(workload: Workload): ReferenceJob[] {
  return workload.jobs.map(({ request, runtime }) => ({
    id: request.id,
    submit: request.submitTime,
    size: request.size,
    estimate: request.estimate,
    runtime,
  }));
}
