// The policy interface: one scheduling pass over the state at an instant.
// A policy starts jobs through `state.startJob` and says when every queued job
// is planned to start. Planning policies keep their own availability profile
// and learn about ends and cancellations through the optional hooks.

import type { QueueEntry, SchedulerState } from '../state.js';
import type { RunningJob, Seconds } from '../types.js';

export interface Policy {
  readonly name: string;
  /** Runs one pass at `now`; returns the entries it started, in start order. */
  schedule(state: SchedulerState, now: Seconds): QueueEntry[];
  /** Sets every queued entry's `reservation` to its planned start after the pass. */
  plan(state: SchedulerState, now: Seconds): void;
  /** A job joined the queue: at the back, unless its priority put it further forward (then `reordered` is true). */
  onSubmit?(entry: QueueEntry, reordered: boolean): void;
  /**
   * A running job ended at `at` (possibly before its predicted end), giving
   * `released` processors back to plans (state.releaseOf: its size, or on a
   * node pool its CPUs on nodes that take new jobs).
   */
  onEnd?(run: RunningJob, at: Seconds, released: number): void;
  /** A queued job left the queue without starting. */
  onCancel?(entry: QueueEntry): void;
  /** The shell changed the queue's order on purpose (a job moved): plans follow the new order from the next pass. */
  onReorder?(): void;
  /** The state was rebuilt by the shell (jobs adopted after a restart): drop cached plans. */
  adopt?(state: SchedulerState, now: Seconds): void;
  /** The next instant after `now` at which the policy needs a pass though nothing else happens. */
  nextWakeup?(now: Seconds): Seconds | undefined;
}
