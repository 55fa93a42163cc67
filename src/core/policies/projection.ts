// The queue projection (spec "Predictions"): every queued job, in queue order,
// reserved at its earliest start against a profile that holds only the running
// jobs. EASY and FCFS report it as their planned starts.
//
// The projection is kept between passes and extended with each arrival. It
// stays exactly what a rebuild would give as long as the running jobs' holds
// are unchanged from now on and the queue only grew at the back: every job that
// started did so at its planned start (its reservation becomes an identical
// running hold), none ended before its predicted end, none was cancelled, no
// queued job's planned start has passed, and no node started or stopped taking
// jobs. Anything else forces a rebuild.

import { FlatProfile } from '../flat-profile.js';
import { AvailabilityProfile } from '../profile.js';
import { reserveEarliest, StartBounds } from '../start-bounds.js';
import type { QueueEntry, SchedulerState } from '../state.js';
import type { RunningJob, Seconds } from '../types.js';
import { predictedEnd } from '../types.js';

/**
 * Free processors over time given only the running jobs, from `now` on. On a
 * node pool only nodes that take new jobs count: a down or drained node's CPUs
 * are never free in the plan (state.releaseOf).
 */
export function runningProfile(state: SchedulerState, now: Seconds): AvailabilityProfile {
  const steps: Array<[Seconds, number]> = [];
  eachRunningStep(state, now, (time, free) => steps.push([time, free]));
  return AvailabilityProfile.fromSteps(state.processors, steps);
}

/** The canonical steps of runningProfile, in time order, handed to `step` one by one. */
function eachRunningStep(state: SchedulerState, now: Seconds, step: (time: Seconds, free: number) => void): void {
  let time = now;
  let free = state.plannableProcessors;
  for (const run of state.running) {
    const released = state.releaseOf(run);
    if (released === 0) continue;
    // A job past its predicted end (possible only in a live system) is taken to end next second.
    const end = Math.max(predictedEnd(run), now + 1);
    if (end !== time) {
      step(time, free);
      time = end;
    }
    free += released;
  }
  step(time, free);
}

/**
 * Up to this many steps the projection keeps its profile in flat arrays
 * (flat-profile.ts), beyond it in the tree: a projection holds about one step
 * per running job and two per queued job, and is rebuilt after every early
 * end, so short queues (the common case) rebuild without allocating a node
 * per step, and long ones keep the tree's logarithmic updates.
 */
const FLAT_STEPS = 1024;

/** Reservations in one go from which remembering earliest-start bounds is worth its cost. */
const LONG_RUN = 256;

export class QueueProjection {
  private profile: AvailabilityProfile | FlatProfile | null = null;
  /** The flat profile's arrays, kept from one rebuild to the next. */
  private flat: FlatProfile | null = null;
  /** Earliest-start bounds: the projection's profile only loses capacity until rebuilt. */
  private readonly bounds = new StartBounds();
  /** Arrival sequence number of the last entry the projection covers; later ones are new. */
  private lastCoveredSeq = -1;
  /** The state's capacityVersion the projection was built for. */
  private capacityVersion = -1;

  /**
   * @param inOrder no job is planned before the job ahead of it (FCFS): each is
   * reserved at its earliest start not before that.
   */
  constructor(private readonly inOrder: boolean) {}

  invalidate(): void {
    this.profile = null;
  }

  /** A queued entry starts now: the projection survives only if this was its plan. */
  noteStart(entry: QueueEntry, now: Seconds): void {
    if (entry.reservation !== now) this.profile = null;
  }

  noteEnd(run: RunningJob, at: Seconds): void {
    if (at < predictedEnd(run)) this.profile = null;
  }

  /** Sets `reservation` of every queued entry to its planned start. */
  plan(state: SchedulerState, now: Seconds): void {
    const queue = state.queue;
    // A running job past its predicted end (live systems only) changes the holds.
    const overrun = state.running.length > 0 && predictedEnd(state.running[0]) <= now;
    // So does a node that stopped or started taking jobs.
    // A flat profile that grew past its size is rebuilt as a tree.
    const stale = overrun || state.capacityVersion !== this.capacityVersion || (this.profile instanceof FlatProfile && this.profile.size > FLAT_STEPS);
    let from = this.profile && !stale ? this.firstUncovered(queue, now) : -1;
    let profile = this.profile;
    if (profile === null || from < 0) {
      if (state.running.length + 2 * queue.length <= FLAT_STEPS) {
        const flat = this.flat ??= new FlatProfile(state.processors, now, 2 * FLAT_STEPS);
        flat.clear();
        eachRunningStep(state, now, (time, free) => flat.append(time, free));
        profile = this.profile = flat;
      } else {
        profile = this.profile = runningProfile(state, now);
      }
      this.capacityVersion = state.capacityVersion;
      this.bounds.clear();
      from = 0;
    } else {
      profile.advance(now);
    }
    let previous = from > 0 ? queue[from - 1].reservation : now;
    // Remembered bounds pay off only over long runs of reservations.
    const useBounds = queue.length - from >= LONG_RUN;
    for (let index = from; index < queue.length; index++) {
      const job = queue[index].job;
      const { size, estimate } = job;
      const notBefore = this.inOrder && previous > now ? previous : now;
      if (!state.plannable(job)) {
        // Waits for nodes that are out: no planned start, and (fcfs) none for the jobs behind it.
        queue[index].reservation = Infinity;
        if (this.inOrder) previous = Infinity;
        continue;
      }
      if (useBounds) {
        previous = reserveEarliest(profile, this.bounds, size, estimate, notBefore);
      } else {
        previous = profile.earliestStart(size, estimate, notBefore);
        profile.reserve(previous, estimate, size); // bounds stay valid: capacity only shrank
      }
      queue[index].reservation = previous;
    }
    if (queue.length > 0) this.lastCoveredSeq = queue[queue.length - 1].seq;
  }

  /** Index of the first entry to project, or -1 if the cached projection cannot be kept. */
  private firstUncovered(queue: readonly QueueEntry[], now: Seconds): number {
    let from = queue.length;
    while (from > 0 && queue[from - 1].seq > this.lastCoveredSeq) from--;
    for (let index = 0; index < from; index++) if (!(queue[index].reservation >= now)) return -1;
    return from;
  }
}
