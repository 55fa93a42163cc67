// Summary figures of a simulation, as the spec defines them.

import type { SimulationResult } from './simulator.js';

export interface Summary {
  policy: string;
  procs: number;
  jobs: number;
  skipped: number;
  meanWait: number;
  meanBoundedSlowdown: number;
  utilization: number;
  makespan: number;
  /** Mean |actual start - prediction at submission|. */
  predictionMeanAbsError: number;
  /** Share of jobs whose prediction at submission was exact. */
  predictionExactShare: number;
  /** CCS normalised mean error, 100 / (N * Emax) * sum |error| (0 when every prediction held). */
  predictionEV: number;
  /** Jobs that started later than predicted. */
  predictionLate: number;
}

export function summarise(result: SimulationResult): Summary {
  const outcomes = result.outcomes;
  const n = outcomes.length;
  let waitSum = 0;
  let slowdownSum = 0;
  let work = 0;
  let firstSubmit = Infinity;
  let lastEnd = -Infinity;
  let absErrorSum = 0;
  let maxAbsError = 0;
  let exact = 0;
  let late = 0;
  for (const { job, start, predictedStart } of outcomes) {
    const wait = start - job.request.submitTime;
    const run = job.runtime;
    waitSum += wait;
    slowdownSum += Math.max(1, (wait + run) / Math.max(run, 10));
    work += job.request.size * run;
    firstSubmit = Math.min(firstSubmit, job.request.submitTime);
    lastEnd = Math.max(lastEnd, start + run);
    const error = start - predictedStart;
    const absError = Math.abs(error);
    absErrorSum += absError;
    if (absError > maxAbsError) maxAbsError = absError;
    if (error === 0) exact++;
    if (error > 0) late++;
  }
  const makespan = n > 0 ? lastEnd - firstSubmit : 0;
  return {
    policy: result.policy,
    procs: result.processors,
    jobs: n,
    skipped: result.skipped,
    meanWait: n > 0 ? waitSum / n : 0,
    meanBoundedSlowdown: n > 0 ? slowdownSum / n : 0,
    utilization: makespan > 0 ? work / (result.processors * makespan) : 0,
    makespan,
    predictionMeanAbsError: n > 0 ? absErrorSum / n : 0,
    predictionExactShare: n > 0 ? exact / n : 0,
    predictionEV: maxAbsError > 0 ? (100 / (n * maxAbsError)) * absErrorSum : 0,
    predictionLate: late,
  };
}
