// Conservative backfilling (Mu'alem & Feitelson 2001) with compression, as the
// spec defines it: every queued job holds a reservation, each pass re-reserves
// them in queue order at their earliest start, and no job ever starts later
// than its first promise.
//
// Compression skips jobs that provably cannot move. A job reserved at t could
// only move earlier if capacity grew somewhere before t since it was placed
// (its earlier windows failed at a point before t, as it fitted from t on).
// Capacity grows only when a job ends early, a queued job leaves, or another
// job moves earlier (freeing [max(old, new + estimate), old + estimate)). So
// each entry tracks the earliest such gain since it was placed; if that is not
// before its reservation, re-reserving it would give the same start. The
// result is identical to compressing every job, at a fraction of the cost.

import { AvailabilityProfile } from '../profile.js';
import type { QueueEntry, SchedulerState } from '../state.js';
import type { RunningJob, Seconds } from '../types.js';
import { predictedEnd } from '../types.js';
import { reserveEarliest, StartBounds } from '../start-bounds.js';
import type { Policy } from './policy.js';

export class ConservativePolicy implements Policy {
  readonly name = 'conservative';
  private profile: AvailabilityProfile;
  /** Earliest capacity gain since the last pass (early ends, cancellations). */
  private pendingGain: Seconds = Infinity;
  /** Entries queued since the last pass, in queue order: they have no reservation yet. */
  private arrivals: QueueEntry[] = [];
  /** Some entry carries a gain from before its reservation (it may move at the next pass). */
  private carriedDirty = false;
  /** No queued reservation is earlier than this (a lower bound). */
  private earliestReservation: Seconds = Infinity;
  /** Earliest-start bounds for arrivals, valid while the profile only loses capacity. */
  private readonly bounds = new StartBounds();

  constructor(processors: number, origin: Seconds) {
    this.profile = new AvailabilityProfile(processors, origin);
  }

  /** Takes over a state rebuilt elsewhere: running holds, then reservations in queue order. */
  adopt(state: SchedulerState, now: Seconds): void {
    this.profile = new AvailabilityProfile(state.processors, now);
    this.arrivals = [];
    for (const run of state.running) this.profile.add(now, Math.max(predictedEnd(run), now + 1), -run.job.size);
    for (const entry of state.queue) {
      if (Number.isNaN(entry.reservation)) this.arrivals.push(entry);
      else this.profile.reserve(entry.reservation, entry.job.estimate, entry.job.size);
    }
    this.bounds.clear();
    this.pendingGain = -Infinity; // compress everything at the next pass
  }

  onSubmit(entry: QueueEntry): void {
    this.arrivals.push(entry);
  }

  onEnd(run: RunningJob, at: Seconds): void {
    const end = predictedEnd(run);
    if (at < end) {
      this.profile.add(at, end, run.job.size);
      this.bounds.clear();
      if (at < this.pendingGain) this.pendingGain = at;
    }
  }

  onCancel(entry: QueueEntry): void {
    if (Number.isNaN(entry.reservation)) {
      this.arrivals = this.arrivals.filter((e) => e !== entry);
      return;
    }
    this.profile.release(entry.reservation, entry.job.estimate, entry.job.size);
    this.bounds.clear();
    if (entry.reservation < this.pendingGain) this.pendingGain = entry.reservation;
  }

  schedule(state: SchedulerState, now: Seconds): QueueEntry[] {
    const profile = this.profile;
    profile.advance(now);
    const gainFloor = this.pendingGain;
    this.pendingGain = Infinity;
    const queue = state.queue;

    // 1. Compression, in queue order (only if some capacity appeared since, or
    //    a reservation fell into the past, which the spec's events never cause).
    const compressed = gainFloor < Infinity || this.carriedDirty || this.earliestReservation < now;
    if (compressed) this.compress(queue, now, gainFloor);

    // 2. Arrivals of this instant, in queue order.
    for (const entry of this.arrivals) {
      entry.reservation = reserveEarliest(profile, this.bounds, entry.job.size, entry.job.estimate, now);
      if (entry.reservation < this.earliestReservation) this.earliestReservation = entry.reservation;
    }
    this.arrivals.length = 0;
    if (!compressed && this.earliestReservation > now) return [];

    // 3. Start what is due; after a compression, hand each remaining entry the
    //    gains made after it in this pass.
    const started: QueueEntry[] = [];
    let laterGain = Infinity;
    let earliest = Infinity;
    let dirty = false;
    for (let index = queue.length - 1; index >= 0; index--) {
      const entry = queue[index];
      if (compressed) {
        entry.gainSincePlaced = laterGain;
        if (entry.gainThisPass < laterGain) laterGain = entry.gainThisPass;
        entry.gainThisPass = Infinity;
      }
      if (entry.reservation === now) {
        started.push(entry);
        continue;
      }
      if (entry.reservation < earliest) earliest = entry.reservation;
      if (entry.gainSincePlaced < entry.reservation) dirty = true;
    }
    this.earliestReservation = earliest;
    this.carriedDirty = dirty;
    started.reverse();
    for (const entry of started) state.startJob(entry, now);
    state.dropStarted(new Set(started));
    return started;
  }

  /**
   * Moves each reserved entry to its earliest start, in queue order. A start
   * before the reservation needs no lifting of the job: on [t, reservation)
   * it holds nothing, and from its reservation on its own hold makes room.
   */
  private compress(queue: readonly QueueEntry[], now: Seconds, gainFloor: Seconds): void {
    const profile = this.profile;
    for (const entry of queue) {
      const old = entry.reservation;
      if (Number.isNaN(old)) continue;
      const gain = entry.gainSincePlaced < gainFloor ? entry.gainSincePlaced : gainFloor;
      entry.gainSincePlaced = Infinity;
      if (gain >= old && old >= now) continue;
      const { size, estimate } = entry.job;
      let start: Seconds;
      if (old >= now) {
        start = profile.earliestStart(size, estimate, now, old);
        if (start === Infinity) continue;
        profile.release(old, estimate, size);
      } else {
        // A reservation in the past (never with the spec's events): lift and re-reserve.
        profile.release(old, estimate, size);
        start = profile.earliestStart(size, estimate, now);
      }
      profile.reserve(start, estimate, size);
      entry.reservation = start;
      this.bounds.clear();
      if (start < old) {
        const freedFrom = Math.max(old, start + estimate);
        entry.gainThisPass = freedFrom;
        if (freedFrom < gainFloor) gainFloor = freedFrom;
      }
    }
  }
  /** Reservations are the plan: nothing to do. */
  plan(): void {}

  /** The profile as it stands (running holds plus reservations), for tests and displays. */
  steps(): Array<[Seconds, number]> {
    return this.profile.steps();
  }
}
