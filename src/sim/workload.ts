// Synthetic workload generator: a seeded, reproducible stream of SWF lines for
// simulations and benchmarks of any size and load.
//
// The model, per job (parameters in the constants below):
// - arrivals: a non-homogeneous Poisson process whose rate follows a daily
//   cycle (t = 0 is midnight; busy from 9:00 to 17:00, quiet at night);
// - size: a share of serial jobs, the rest log-uniform over 2..P, most of
//   them rounded to a power of two;
// - runtime: a mixture of two lognormals (short test runs, long production
//   runs), 1 s .. 36 h;
// - estimate: runtime / accuracy, accuracy uniform in (0.05, 1], rounded UP
//   to the next round limit (5 min .. 36 h), so estimates are often far above
//   the runtime; a share of jobs is killed at its limit (runtime = estimate,
//   status 0);
// - user: 1..50, Zipf-like activity (user k submits about 1/k as often as user 1).
// The offered load sum(size * runtime) / (P * (last submit - first submit))
// equals the requested load: the arrival process is stretched to the span the
// total work needs. Two passes over the same seeded streams (one to measure
// the work, one to emit) keep memory constant for any number of jobs.

import { SeededRandom, WeightedChoice } from '../core/random.js';

export interface WorkloadOptions {
  /** Number of jobs, >= 1. */
  jobs: number;
  /** Machine size P, >= 1; every job fits (1 <= size <= P). */
  procs: number;
  /** Offered load, in (0, 2]. */
  load: number;
  /** 32-bit seed: the same options give byte-identical output. */
  seed: number;
}

/** The round limits users ask for, in seconds: 5m 15m 30m 1h 2h 4h 8h 12h 24h 36h. */
export const ESTIMATE_STEPS_SECONDS: readonly number[] = [
  300, 900, 1800, 3600, 7200, 14400, 28800, 43200, 86400, 129600,
];

const SIZE_MODEL = {
  serialShare: 0.2,
  /** Among parallel jobs, the share rounded to a power of two. */
  powerOfTwoShare: 0.7,
  /** Exponent of the log2-size draw: 1 is log-uniform, larger favours small jobs. */
  smallBias: 1.5,
};

const RUNTIME_MODEL = {
  shortShare: 0.3,
  shortMedianSeconds: 30,
  shortSigma: 1.0,
  longMedianSeconds: 1800,
  longSigma: 1.4,
  minSeconds: 1,
  maxSeconds: 36 * 3600,
};

const ESTIMATE_MODEL = {
  /** runtime / estimate before rounding is uniform in (minAccuracy, 1]. */
  minAccuracy: 0.05,
  killedAtLimitShare: 0.07,
};

const USER_COUNT = 50;
const USER_ACTIVITY = new WeightedChoice(Array.from({ length: USER_COUNT }, (_, rank) => 1 / (rank + 1)));

/** Relative submission rate per hour of the day, hour 0 starting at midnight. */
const HOURLY_SUBMIT_RATE: readonly number[] = [
  0.6, 0.55, 0.5, 0.5, 0.5, 0.55, 0.65, 0.85, 1.15, 1.4, 1.5, 1.5,
  1.35, 1.45, 1.5, 1.5, 1.4, 1.2, 1.0, 0.9, 0.8, 0.75, 0.7, 0.65,
];

// Independent streams, so the arrival draws do not depend on the job draws.
const JOB_STREAM = 1;
const ARRIVAL_STREAM = 2;

const HOUR = 3600;
const DAY = 24 * HOUR;

/**
 * The daily cycle as a clock change. "Busy time" runs at the normalised
 * submission rate (mean 1, so a whole day of busy time is a day of wall time):
 * a unit-rate Poisson process in busy time is the cycled process in wall time.
 */
const dailyCycle = (() => {
  const mean = HOURLY_SUBMIT_RATE.reduce((a, b) => a + b, 0) / HOURLY_SUBMIT_RATE.length;
  const rate = HOURLY_SUBMIT_RATE.map((r) => r / mean);
  /** busyAtHourStart[h]: busy seconds from midnight to the start of hour h (25 entries). */
  const busyAtHourStart = [0];
  for (const r of rate) busyAtHourStart.push(busyAtHourStart[busyAtHourStart.length - 1] + r * HOUR);
  const busyPerDay = busyAtHourStart[24];

  const busyTimeAt = (wall: number): number => {
    const days = Math.floor(wall / DAY);
    const inDay = wall - days * DAY;
    const hour = Math.min(23, Math.floor(inDay / HOUR));
    return days * busyPerDay + busyAtHourStart[hour] + rate[hour] * (inDay - hour * HOUR);
  };

  const wallTimeAt = (busy: number): number => {
    const days = Math.floor(busy / busyPerDay);
    const inDay = busy - days * busyPerDay;
    let hour = 0;
    while (hour < 23 && busyAtHourStart[hour + 1] <= inDay) hour++;
    return days * DAY + hour * HOUR + (inDay - busyAtHourStart[hour]) / rate[hour];
  };

  const peakToQuiet = Math.max(...rate) / Math.min(...rate);
  return { busyTimeAt, wallTimeAt, peakToQuiet };
})();

interface SyntheticJob {
  size: number;
  runtimeSeconds: number;
  estimateSeconds: number;
  killedAtLimit: boolean;
  user: number;
}

function largestPowerOfTwoAtMost(n: number): number {
  return 2 ** Math.floor(Math.log2(n));
}

function drawSize(rng: SeededRandom, procs: number): number {
  if (procs === 1 || rng.chance(SIZE_MODEL.serialShare)) return 1;
  // Biased to small jobs: wide jobs are rarer, as in production logs.
  const exponent = 1 + (Math.log2(procs) - 1) * rng.next() ** SIZE_MODEL.smallBias;
  if (rng.chance(SIZE_MODEL.powerOfTwoShare)) {
    return Math.min(2 ** Math.round(exponent), largestPowerOfTwoAtMost(procs));
  }
  return Math.min(procs, Math.max(2, Math.round(2 ** exponent)));
}

function drawRuntime(rng: SeededRandom): number {
  const m = RUNTIME_MODEL;
  const seconds = rng.chance(m.shortShare)
    ? rng.lognormal(Math.log(m.shortMedianSeconds), m.shortSigma)
    : rng.lognormal(Math.log(m.longMedianSeconds), m.longSigma);
  return Math.min(m.maxSeconds, Math.max(m.minSeconds, Math.round(seconds)));
}

/** The smallest round limit >= seconds (the largest limit caps it). */
function roundUpToLimit(seconds: number): number {
  for (const step of ESTIMATE_STEPS_SECONDS) if (step >= seconds) return step;
  return ESTIMATE_STEPS_SECONDS[ESTIMATE_STEPS_SECONDS.length - 1];
}

function drawJob(rng: SeededRandom, procs: number): SyntheticJob {
  const size = drawSize(rng, procs);
  const demand = drawRuntime(rng);
  const killedAtLimit = rng.chance(ESTIMATE_MODEL.killedAtLimitShare);
  const accuracy = 1 - rng.uniform(0, 1 - ESTIMATE_MODEL.minAccuracy); // in (minAccuracy, 1]
  const user = USER_ACTIVITY.draw(rng) + 1;
  if (killedAtLimit) {
    // The user's limit was below what the job needed: it ran until the limit.
    const limit = roundUpToLimit(demand);
    return { size, runtimeSeconds: limit, estimateSeconds: limit, killedAtLimit, user };
  }
  const estimateSeconds = roundUpToLimit(demand / accuracy);
  return { size, runtimeSeconds: demand, estimateSeconds, killedAtLimit, user };
}

export function validateWorkloadOptions(o: WorkloadOptions): string | undefined {
  if (!Number.isSafeInteger(o.jobs) || o.jobs < 1) return `jobs must be a positive integer, got ${o.jobs}`;
  if (!Number.isSafeInteger(o.procs) || o.procs < 1) return `procs must be a positive integer, got ${o.procs}`;
  if (!(o.load > 0 && o.load <= 2)) return `load must be a number in (0, 2], got ${o.load}`;
  if (!Number.isInteger(o.seed) || o.seed < 0 || o.seed > 0xffffffff) {
    return `seed must be an integer in 0..4294967295, got ${o.seed}`;
  }
  return undefined;
}

function headerLines(o: WorkloadOptions): string[] {
  const r = RUNTIME_MODEL;
  const percent = (share: number): string => `${Math.round(share * 100)}%`;
  const limits = ESTIMATE_STEPS_SECONDS.map((s) => (s < HOUR ? `${s / 60}m` : `${s / HOUR}h`)).join(' ');
  return [
    '; Version: 2',
    '; Computer: Taras synthetic',
    `; MaxJobs: ${o.jobs}`,
    `; MaxRecords: ${o.jobs}`,
    `; MaxProcs: ${o.procs}`,
    '; MaxQueues: 1',
    '; MaxPartitions: 1',
    `; Note: generated by taras workload generate --jobs ${o.jobs} --procs ${o.procs} --load ${o.load} --seed ${o.seed}`,
    `; Note: arrivals: Poisson, rate follows a daily cycle (t = 0 is midnight, busiest hour ${dailyCycle.peakToQuiet.toFixed(1)}x the quietest)`,
    `; Note: gaps scaled so sum(size*runtime) / (MaxProcs * (last submit - first submit)) = ${o.load}`,
    `; Note: sizes: ${percent(SIZE_MODEL.serialShare)} serial, others log-uniform over 2..MaxProcs, ${percent(SIZE_MODEL.powerOfTwoShare)} of those powers of two`,
    `; Note: runtimes: lognormal mixture, ${percent(r.shortShare)} median ${r.shortMedianSeconds} s (sigma ${r.shortSigma}), ` +
      `${percent(1 - r.shortShare)} median ${r.longMedianSeconds} s (sigma ${r.longSigma}), ${r.minSeconds} s .. ${r.maxSeconds / HOUR} h`,
    `; Note: estimates: runtime / U(${ESTIMATE_MODEL.minAccuracy}, 1] rounded up to ${limits}`,
    `; Note: ${percent(ESTIMATE_MODEL.killedAtLimitShare)} of jobs killed at their limit (runtime = estimate, status 0)`,
    `; Note: users 1..${USER_COUNT}, Zipf activity; queue 1, partition 1; unknown fields -1`,
  ];
}

/** Pass 1: the total work and the busy-time of the last arrival, replaying pass 2's draws. */
function measure(o: WorkloadOptions): { work: number; lastUnitArrival: number } {
  const jobRng = new SeededRandom(o.seed, JOB_STREAM);
  const arrivalRng = new SeededRandom(o.seed, ARRIVAL_STREAM);
  let work = 0;
  let unitArrival = 0;
  for (let id = 1; id <= o.jobs; id++) {
    if (id > 1) unitArrival += arrivalRng.exponential(1);
    const job = drawJob(jobRng, o.procs);
    work += job.size * job.runtimeSeconds;
  }
  return { work, lastUnitArrival: unitArrival };
}

/**
 * SWF text lines (without line terminators): the header comments, then one
 * 18-field line per job, job numbers 1..jobs, submit times non-decreasing from 0.
 */
export function* generateWorkload(o: WorkloadOptions): Generator<string> {
  const invalid = validateWorkloadOptions(o);
  if (invalid !== undefined) throw new RangeError(`generateWorkload: ${invalid}`);

  const { work, lastUnitArrival } = measure(o);
  const spanSeconds = work / (o.procs * o.load);
  // Stretch unit-rate busy time so the last arrival lands exactly at spanSeconds.
  const busyPerUnit = lastUnitArrival > 0 ? dailyCycle.busyTimeAt(spanSeconds) / lastUnitArrival : 0;

  yield* headerLines(o);

  const jobRng = new SeededRandom(o.seed, JOB_STREAM);
  const arrivalRng = new SeededRandom(o.seed, ARRIVAL_STREAM);
  let unitArrival = 0;
  for (let id = 1; id <= o.jobs; id++) {
    if (id > 1) unitArrival += arrivalRng.exponential(1);
    const job = drawJob(jobRng, o.procs);
    const submit = Math.round(dailyCycle.wallTimeAt(unitArrival * busyPerUnit));
    const status = job.killedAtLimit ? 0 : 1;
    // Fields: id submit wait runtime alloc cpu mem reqProcs reqTime reqMem status user group exe queue partition prev think
    yield `${id} ${submit} -1 ${job.runtimeSeconds} ${job.size} -1 -1 ${job.size} ${job.estimateSeconds} -1 ${status} ${job.user} -1 -1 1 1 -1 -1`;
  }
}
