// What the controller keeps in memory of each running job's current run, so
// that a pass or the once-a-second tick reads nothing from the store: a
// cancel or preemption asked for it, the time it spent suspended, whether it
// was suspended for a preemption, and the last suspend or resume (re-sent to
// its agent after a controller restart). Updated with each event the engine
// stores (`note`); rebuilt at start-up from each running job's log.

import type { JobId } from '../core/types.js';
import type { JobEvent, StoredJobEvent } from '../store/events.js';

export interface PreemptAsked {
  readonly mode: 'requeue' | 'cancel';
  readonly reason: string;
  readonly atMs: number;
  readonly graceSeconds: number;
  readonly signal: string;
  /** The owner's own requeue: the job queues as if submitted now. */
  readonly asNew: boolean;
}

export interface RunMarks {
  /** A cancel was asked (a `signalled` event with `cancel`). */
  cancel: boolean;
  /** The first preemption asked. */
  preempt: PreemptAsked | undefined;
  /** Suspended time of closed suspensions (ms), and the start of the open one. */
  suspendedMs: number;
  suspendedSinceMs: number | null;
  /** The open suspension was a preemption's (out of the core until its nodes are free), and for which job. */
  byPreemption: boolean;
  preemptor: JobId | undefined;
  /** The last suspend or resume of the run: the state its agent must be in. */
  pause: 'suspend' | 'resume' | null;
  /** The updated time limit (s, null: none) its supervisor acknowledged while this controller runs; undefined: none yet. */
  limitDelivered?: number | null;
}

/** Legacy logs: a preemption's suspension said so only in its reason. */
const PREEMPTION_REASONS = ['preempted by job ', 'preempted (suspended): '];

export class RunMarksBook {
  private readonly marks = new Map<JobId, RunMarks>();
  /** Jobs whose run is suspended now. */
  readonly suspended = new Set<JobId>();

  get(id: JobId): RunMarks | undefined {
    return this.marks.get(id);
  }

  /** Folds one stored event of the job into its marks. */
  note(id: JobId, event: JobEvent, timeMs: number): void {
    switch (event.type) {
      case 'started':
        this.marks.set(id, { cancel: false, preempt: undefined, suspendedMs: 0, suspendedSinceMs: null, byPreemption: false, preemptor: undefined, pause: null });
        this.suspended.delete(id);
        return;
      case 'ended':
      case 'requeued':
        this.marks.delete(id);
        this.suspended.delete(id);
        return;
      default:
        break;
    }
    const marks = this.marks.get(id);
    if (marks === undefined) return;
    if (event.type === 'signalled') {
      // Logs written before the `cancel` flag existed say so in the reason.
      if (event.cancel === true || event.reason?.startsWith('cancelled by') === true) marks.cancel = true;
      if (event.preempt !== undefined && marks.preempt === undefined) {
        marks.preempt = { mode: event.preempt, reason: event.reason ?? 'preempted', atMs: timeMs, graceSeconds: event.graceSeconds ?? 0, signal: event.signal, asNew: event.requeueAsNew === true };
      }
    } else if (event.type === 'suspended') {
      marks.suspendedSinceMs = timeMs;
      marks.byPreemption = event.by === 'preemption' || (event.by === undefined && PREEMPTION_REASONS.some((start) => event.reason?.startsWith(start) === true));
      marks.preemptor = event.preemptor;
      marks.pause = 'suspend';
      this.suspended.add(id);
    } else if (event.type === 'resumed') {
      if (marks.suspendedSinceMs !== null) marks.suspendedMs += timeMs - marks.suspendedSinceMs;
      marks.suspendedSinceMs = null;
      marks.byPreemption = false;
      marks.preemptor = undefined;
      marks.pause = 'resume';
      this.suspended.delete(id);
    }
  }

  /** Rebuilds a running job's marks from its whole log (at start-up). */
  replay(id: JobId, events: readonly StoredJobEvent[]): void {
    for (const { event, timeMs } of events) this.note(id, event, timeMs);
  }

  /** Whole seconds the run spent suspended: closed suspensions, and with `nowMs` the open one too. */
  suspendedSeconds(id: JobId, nowMs?: number): number {
    const marks = this.marks.get(id);
    if (marks === undefined) return 0;
    const open = nowMs === undefined || marks.suspendedSinceMs === null ? 0 : nowMs - marks.suspendedSinceMs;
    return Math.round((marks.suspendedMs + open) / 1000);
  }
}
