// Conservative backfilling (Mu'alem & Feitelson 2001) with compression, as the
// spec defines it: every queued job holds a reservation, each pass re-reserves
// them in queue order at their earliest start, and no job ever starts later
// than its first promise.
//
// Compression skips jobs that provably cannot move, and bounds the search of
// those that might. A job reserved at t could only move to an earlier t' if
// capacity grew since it was placed at some point p < t inside [t', t' + its
// estimate) (the earlier windows failed at a point before t, as it fitted from
// t on). Capacity grows only when a job ends early, a queued job leaves, or
// another job moves earlier (freeing [max(old, new + estimate), old +
// estimate)). Each entry keeps the span of such gains since it was placed
// (earliest start, latest end): if the span starts at or after its
// reservation, it stays; otherwise t' lies in [gain start - estimate,
// min(reservation, gain end)). The result is identical to compressing every
// job from scratch (test/reference compares them job by job).

import { Arrivals } from './arrivals.js';
import { AvailabilityProfile } from '../profile.js';
import type { QueueEntry, SchedulerState } from '../state.js';
import type { RunningJob, Seconds } from '../types.js';
import { predictedEnd } from '../types.js';
import { reserveEarliest, StartBounds } from '../start-bounds.js';
import type { Policy } from './policy.js';
import { runningProfile } from './projection.js';

export class ConservativePolicy implements Policy {
  readonly name = 'conservative';
  private profile: AvailabilityProfile;
  /** Span of the capacity gains since the last pass (early ends, cancellations). */
  private pendingGainFrom: Seconds = Infinity;
  private pendingGainTo: Seconds = -Infinity;
  /** Entries queued since the last pass, in queue order: they have no reservation yet. */
  private readonly arrivals = new Arrivals();
  /** Some entry carries a gain from before its reservation (it may move at the next pass). */
  private carriedDirty = false;
  /** No queued reservation is earlier than this (a lower bound). */
  private earliestReservation: Seconds = Infinity;
  /** Earliest-start bounds for arrivals, valid while the profile only loses capacity. */
  private readonly bounds = new StartBounds();
  /** The state's capacityVersion and capacityLossVersion the profile was built for (node pools: which nodes count in plans). */
  private capacityVersion = 0;
  private lossVersion = 0;
  /**
   * A due job did not start only because nodes expected back do not take jobs
   * yet: plan everything again at the next pass, so that it stays ahead of the
   * jobs behind it (moving it behind their reservations would let them pass).
   */
  private replanNext = false;

  constructor(processors: number, origin: Seconds) {
    this.profile = new AvailabilityProfile(processors, origin);
  }

  /**
   * Nodes came back and none left: capacity only grew, so every promise can
   * be kept. The profile is rebuilt on the larger capacity with every
   * reservation where it was, jobs that had none (waiting for nodes that were
   * out) are planned as arrivals, and compression moves jobs earlier.
   */
  private regain(state: SchedulerState, now: Seconds): void {
    this.profile = runningProfile(state, now);
    this.capacityVersion = state.capacityVersion;
    this.arrivals.clear();
    for (const entry of state.queue) {
      if (Number.isFinite(entry.reservation)) this.profile.reserve(entry.reservation, entry.job.estimate, entry.job.size);
      else {
        entry.reservation = NaN;
        this.arrivals.push(entry);
      }
    }
    this.noteGain(-Infinity, Infinity); // compress everything at the next pass (it also clears the bounds)
  }

  /** Takes over a state rebuilt elsewhere: running holds, then reservations in queue order (as after a gain). */
  adopt(state: SchedulerState, now: Seconds): void {
    this.lossVersion = state.capacityLossVersion;
    this.regain(state, now);
  }

  /**
   * A node stopped counting in plans (down, drained): the capacity every
   * reservation was made against shrank. Promises cannot all be kept then, so
   * every waiting job is planned again from scratch, in queue order, against
   * the running jobs on the nodes that count now. (Also after a due job could
   * not start only because nodes expected back take no jobs yet.)
   */
  private replan(state: SchedulerState, now: Seconds): void {
    this.replanNext = false;
    this.profile = runningProfile(state, now);
    this.capacityVersion = state.capacityVersion;
    this.lossVersion = state.capacityLossVersion;
    this.arrivals.clear();
    for (const entry of state.queue) {
      entry.reservation = NaN;
      entry.gainFrom = Infinity;
      entry.gainTo = -Infinity;
      entry.freedFrom = Infinity;
      entry.freedTo = -Infinity;
      this.arrivals.push(entry);
    }
    this.bounds.clear();
    this.pendingGainFrom = Infinity;
    this.pendingGainTo = -Infinity;
    this.carriedDirty = false;
    this.earliestReservation = Infinity;
  }

  onSubmit(entry: QueueEntry): void {
    // Arrivals are reserved in queue order: behind arrivals of the same or a higher priority.
    this.arrivals.add(entry);
  }

  onEnd(run: RunningJob, at: Seconds, released: number): void {
    const end = predictedEnd(run);
    if (at < end && released > 0) {
      this.profile.add(at, end, released);
      this.noteGain(at, end);
    }
  }

  private noteGain(from: Seconds, to: Seconds): void {
    this.bounds.clear();
    if (from < this.pendingGainFrom) this.pendingGainFrom = from;
    if (to > this.pendingGainTo) this.pendingGainTo = to;
  }

  onCancel(entry: QueueEntry): void {
    if (Number.isNaN(entry.reservation)) {
      this.arrivals.remove(entry);
      return;
    }
    this.profile.release(entry.reservation, entry.job.estimate, entry.job.size);
    this.noteGain(entry.reservation, entry.reservation + entry.job.estimate);
  }

  schedule(state: SchedulerState, now: Seconds): QueueEntry[] {
    if (this.replanNext || state.capacityLossVersion !== this.lossVersion) this.replan(state, now);
    else if (state.capacityVersion !== this.capacityVersion) this.regain(state, now);
    const profile = this.profile;
    profile.advance(now);
    const gainFrom = this.pendingGainFrom;
    const gainTo = this.pendingGainTo;
    this.pendingGainFrom = Infinity;
    this.pendingGainTo = -Infinity;
    const queue = state.queue;

    // 1. Compression, in queue order (only if some capacity appeared since, or
    //    a reservation fell into the past, which the spec's events never cause).
    const compressed = gainFrom < Infinity || this.carriedDirty || this.earliestReservation < now;
    if (compressed) this.compress(queue, now, gainFrom, gainTo);

    // 2. Arrivals of this instant, in queue order.
    this.reserveArrivals(state, now);
    if (!compressed && this.earliestReservation > now) return [];

    // 3. Start what is due; after a compression, hand each remaining entry the
    //    gains made after it in this pass.
    const started: QueueEntry[] = [];
    let laterFrom = Infinity;
    let laterTo = -Infinity;
    let earliest = Infinity;
    let dirty = false;
    for (let index = queue.length - 1; index >= 0; index--) {
      const entry = queue[index];
      if (compressed) {
        entry.gainFrom = laterFrom;
        entry.gainTo = laterTo;
        if (entry.freedFrom < laterFrom) laterFrom = entry.freedFrom;
        if (entry.freedTo > laterTo) laterTo = entry.freedTo;
        entry.freedFrom = Infinity;
        entry.freedTo = -Infinity;
      }
      if (entry.reservation === now) {
        started.push(entry);
        continue;
      }
      if (entry.reservation < earliest) earliest = entry.reservation;
      if (entry.gainFrom < entry.reservation) dirty = true;
    }
    this.earliestReservation = earliest;
    this.carriedDirty = dirty;
    started.reverse();
    const begun: QueueEntry[] = [];
    for (const entry of started) {
      const nodes = state.tryPlace(entry.job);
      // In processors the profile is the state: a due job always fits (on nodes, policies/nodes.ts plans instead).
      if (nodes === null) throw new Error(`conservative: job ${entry.job.id} is due at ${now} but does not fit: the profile and the state disagree`);
      state.startJob(entry, now, nodes);
      begun.push(entry);
    }
    state.dropStarted(new Set(begun));
    return begun;
  }

  /**
   * Moves each reserved entry to its earliest start, in queue order. A start
   * before the reservation needs no lifting of the job: on [t, reservation)
   * it holds nothing, and from its reservation on its own hold makes room.
   */
  private compress(queue: readonly QueueEntry[], now: Seconds, gainFrom: Seconds, gainTo: Seconds): void {
    const profile = this.profile;
    for (const entry of queue) {
      const old = entry.reservation;
      // Unreserved, or waiting for nodes that are out (planned again when they change).
      if (!Number.isFinite(old)) continue;
      const from = entry.gainFrom < gainFrom ? entry.gainFrom : gainFrom;
      const to = entry.gainTo > gainTo ? entry.gainTo : gainTo;
      entry.gainFrom = Infinity;
      entry.gainTo = -Infinity;
      if (from >= old && old >= now) continue;
      const { size, estimate } = entry.job;
      let start: Seconds;
      if (old >= now) {
        start = profile.earliestStart(size, estimate, Math.max(now, from - estimate), Math.min(old, to), old);
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
        entry.freedFrom = Math.max(old, start + estimate);
        entry.freedTo = old + estimate;
        if (entry.freedFrom < gainFrom) gainFrom = entry.freedFrom;
        if (entry.freedTo > gainTo) gainTo = entry.freedTo;
      }
    }
  }

  /** Reserves the arrivals in queue order; one that waits for nodes that are out gets no reservation (Infinity). */
  private reserveArrivals(state: SchedulerState, now: Seconds): void {
    for (const entry of this.arrivals.take()) {
      entry.reservation = state.plannable(entry.job)
        ? reserveEarliest(this.profile, this.bounds, entry.job.size, entry.job.estimate, now)
        : Infinity;
      if (entry.reservation < this.earliestReservation) this.earliestReservation = entry.reservation;
    }
  }

  /** Reservations are the plan; after a change of capacity without a pass since, they are made again. */
  plan(state: SchedulerState, now: Seconds): void {
    // A gain only: the reservations stand (promises hold); the next pass compresses them.
    const blocked = this.replanNext;
    if (state.capacityLossVersion === this.lossVersion && !blocked) return;
    this.replan(state, now);
    this.profile.advance(now);
    this.reserveArrivals(state, now);
    // Still blocked: the next pass plans again too (this plan only shows where things stand).
    this.replanNext = blocked;
  }

  /** The profile as it stands (running holds plus reservations), for tests and displays. */
  steps(): Array<[Seconds, number]> {
    return this.profile.steps();
  }
}
