// A second, deliberately plain implementation of the trace-replay semantics of
// spec/simulation.md (fcfs, easy, conservative with compression, predictions),
// written apart from src/core so tests can compare the two job by job.
// Slow and obvious on purpose: plain arrays, a step-list profile rebuilt at
// every pass, and compression of every queued job at every pass, as the spec
// words it (no shortcut that skips jobs which cannot move).

/** The spec's three queueing policies (the batch packings are not replay policies). */
export const referencePolicies = ['fcfs', 'easy', 'conservative'] as const;
export type ReferencePolicy = (typeof referencePolicies)[number];

/** A job after the spec's normalisation (0 < runtime <= estimate, 1 <= size <= P). */
export interface ReferenceJob {
  readonly id: number;
  readonly submit: number;
  readonly size: number;
  readonly estimate: number;
  readonly runtime: number;
}

export interface ReferenceOutcome {
  readonly id: number;
  readonly start: number;
  /** Planned start after the pass of the job's submit instant. */
  readonly prediction: number;
}

/**
 * Free processors over time as a list of steps: free[i] holds on
 * [times[i], times[i + 1]), the last step forever. Boundaries are never
 * merged; a step equal to its neighbour is harmless.
 */
export class StepProfile {
  private readonly times: number[] = [-Infinity];
  private readonly free: number[];

  constructor(processors: number) {
    this.free = [processors];
  }

  /** Adds `delta` free processors over [from, to). */
  add(from: number, to: number, delta: number): void {
    const first = this.boundaryAt(from);
    const last = this.boundaryAt(to);
    for (let i = first; i < last; i++) this.free[i] += delta;
  }

  /** The earliest t >= from with at least `size` free throughout [t, t + duration). */
  earliestStart(from: number, size: number, duration: number): number {
    let step = this.stepContaining(from);
    let candidate = from;
    for (;;) {
      let blockedAt = -1;
      for (let i = step; i < this.times.length && this.times[i] < candidate + duration; i++) {
        if (this.free[i] < size) {
          blockedAt = i;
          break;
        }
      }
      if (blockedAt < 0) return candidate;
      // Every start before the end of the blocking step overlaps it.
      step = blockedAt + 1;
      if (step >= this.times.length) throw new Error(`no room for ${size} processors ever: the profile is unbalanced`);
      candidate = this.times[step];
    }
  }

  private stepContaining(t: number): number {
    let i = 0;
    while (i + 1 < this.times.length && this.times[i + 1] <= t) i++;
    return i;
  }

  /** Index of the step starting exactly at t, splitting the step containing t if needed. */
  private boundaryAt(t: number): number {
    const i = this.stepContaining(t);
    if (this.times[i] === t) return i;
    this.times.splice(i + 1, 0, t);
    this.free.splice(i + 1, 0, this.free[i]);
    return i + 1;
  }
}

interface RunningJob {
  readonly job: ReferenceJob;
  readonly start: number;
}

const predictedEnd = (run: RunningJob): number => run.start + run.job.estimate;

/** The machine at one instant, as a pass sees and changes it. */
interface Machine {
  readonly processors: number;
  readonly now: number;
  /** Queue order: arrival order, (submit, id). */
  queue: ReferenceJob[];
  running: RunningJob[];
  /** Conservative only: each queued job's reserved start. */
  readonly reservations: Map<number, number>;
}

function freeProcessors(machine: Machine): number {
  let used = 0;
  for (const run of machine.running) used += run.job.size;
  return machine.processors - used;
}

function startNow(machine: Machine, job: ReferenceJob): void {
  machine.running.push({ job, start: machine.now });
  machine.queue = machine.queue.filter((queued) => queued !== job);
  machine.reservations.delete(job.id);
}

function fcfsPass(machine: Machine): void {
  while (machine.queue.length > 0 && machine.queue[0].size <= freeProcessors(machine)) {
    startNow(machine, machine.queue[0]);
  }
}

function easyPass(machine: Machine): void {
  fcfsPass(machine);
  if (machine.queue.length === 0) return;
  const head = machine.queue[0];
  const now = machine.now;
  let free = freeProcessors(machine);

  const byPredictedEnd = [...machine.running].sort((a, b) => predictedEnd(a) - predictedEnd(b) || a.job.id - b.job.id);
  let available = free;
  let shadowTime = NaN;
  for (const run of byPredictedEnd) {
    available += run.job.size;
    if (available >= head.size) {
      shadowTime = predictedEnd(run);
      break;
    }
  }
  let extra = free - head.size;
  for (const run of byPredictedEnd) if (predictedEnd(run) <= shadowTime) extra += run.job.size;

  for (const job of machine.queue.slice(1)) {
    const endsByShadow = now + job.estimate <= shadowTime;
    if (job.size <= free && (endsByShadow || job.size <= extra)) {
      startNow(machine, job);
      free -= job.size;
      if (!endsByShadow) extra -= job.size;
    }
  }
}

function conservativePass(machine: Machine): void {
  const now = machine.now;
  const profile = new StepProfile(machine.processors);
  for (const run of machine.running) profile.add(now, predictedEnd(run), -run.job.size);
  for (const job of machine.queue) {
    const reserved = machine.reservations.get(job.id);
    if (reserved !== undefined) profile.add(reserved, reserved + job.estimate, -job.size);
  }
  // 1. Compression: every job holding a reservation, in queue order.
  for (const job of machine.queue) {
    const reserved = machine.reservations.get(job.id);
    if (reserved === undefined) continue;
    profile.add(reserved, reserved + job.estimate, job.size);
    const start = profile.earliestStart(now, job.size, job.estimate);
    profile.add(start, start + job.estimate, -job.size);
    machine.reservations.set(job.id, start);
  }
  // 2. This instant's arrivals, in queue order.
  for (const job of machine.queue) {
    if (machine.reservations.has(job.id)) continue;
    const start = profile.earliestStart(now, job.size, job.estimate);
    profile.add(start, start + job.estimate, -job.size);
    machine.reservations.set(job.id, start);
  }
  // 3. Whatever is due starts.
  for (const job of [...machine.queue]) if (machine.reservations.get(job.id) === now) startNow(machine, job);
}

/**
 * The queue projection: each queued job, in queue order, reserved at its
 * earliest start against the running jobs and the jobs projected before it;
 * under fcfs, never before the planned start of the job ahead.
 */
function projectQueue(machine: Machine, inOrder: boolean): Map<number, number> {
  const now = machine.now;
  const profile = new StepProfile(machine.processors);
  for (const run of machine.running) profile.add(now, predictedEnd(run), -run.job.size);
  const planned = new Map<number, number>();
  let plannedAhead = now;
  for (const job of machine.queue) {
    const from = inOrder ? Math.max(now, plannedAhead) : now;
    const start = profile.earliestStart(from, job.size, job.estimate);
    profile.add(start, start + job.estimate, -job.size);
    planned.set(job.id, start);
    plannedAhead = start;
  }
  return planned;
}

/** Replays `jobs` on `processors` processors; outcomes in (submit, id) order. */
export function referenceSimulate(jobs: readonly ReferenceJob[], processors: number, policy: ReferencePolicy): ReferenceOutcome[] {
  const arrivals = [...jobs].sort((a, b) => a.submit - b.submit || a.id - b.id);
  const starts = new Map<number, number>();
  const predictions = new Map<number, number>();
  let queue: ReferenceJob[] = [];
  let running: RunningJob[] = [];
  const reservations = new Map<number, number>();
  let nextArrival = 0;

  while (nextArrival < arrivals.length || running.length > 0) {
    let now = nextArrival < arrivals.length ? arrivals[nextArrival].submit : Infinity;
    for (const run of running) now = Math.min(now, run.start + run.job.runtime);

    // 1. Ends. 2. Arrivals. 3. One pass.
    running = running.filter((run) => run.start + run.job.runtime !== now);
    const arrived: ReferenceJob[] = [];
    while (nextArrival < arrivals.length && arrivals[nextArrival].submit === now) {
      arrived.push(arrivals[nextArrival]);
      queue.push(arrivals[nextArrival]);
      nextArrival++;
    }
    const machine: Machine = { processors, now, queue, running, reservations };
    if (policy === 'fcfs') fcfsPass(machine);
    else if (policy === 'easy') easyPass(machine);
    else conservativePass(machine);
    queue = machine.queue;
    running = machine.running;
    for (const run of running) if (run.start === now) starts.set(run.job.id, now);

    if (arrived.length > 0) {
      const planned = policy === 'conservative' ? reservations : projectQueue(machine, policy === 'fcfs');
      for (const job of arrived) predictions.set(job.id, starts.has(job.id) ? starts.get(job.id)! : planned.get(job.id)!);
    }
  }
  return arrivals.map((job) => ({ id: job.id, start: starts.get(job.id)!, prediction: predictions.get(job.id)! }));
}
