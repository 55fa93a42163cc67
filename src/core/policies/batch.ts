// CCS batch policies (seed 002, section 3.2): when the previous batch is done
// (all its jobs started and the machine empty: a scheduling point), take the
// whole waiting room as a request list, pack it with a level-oriented
// primitive, and start each job at its packed time. Jobs arriving meanwhile
// wait for the next batch. Packed starts need not coincide with any end or
// arrival, so the policy asks its shell for a wake-up at the next one.

import type { Packing, PackRequest } from '../ccs.js';
import { packFCFSStar, packFFDH, packFFDHStar, packFFIH } from '../ccs.js';
import type { QueueEntry, SchedulerState } from '../state.js';
import type { Seconds } from '../types.js';
import type { Policy } from './policy.js';

export const batchPackers = {
  ffdh: packFFDH,
  ffih: packFFIH,
  'ffdh-star': packFFDHStar,
  'fcfs-star': packFCFSStar,
} as const satisfies Record<string, (requests: readonly PackRequest[], capacity: number) => Packing>;

export type BatchPolicyName = keyof typeof batchPackers;

const requestsOf = (entries: readonly QueueEntry[]): PackRequest[] =>
  entries.map(({ job }) => ({ id: job.id, size: job.size, duration: job.estimate }));

export class BatchPolicy implements Policy {
  /** Entries of the current batch that have not started yet. */
  private batch = new Set<QueueEntry>();
  /** Planned end of the current batch (start of the next at the latest). */
  private batchEnd: Seconds = -Infinity;

  constructor(readonly name: BatchPolicyName) {}

  schedule(state: SchedulerState, now: Seconds): QueueEntry[] {
    if (this.batch.size === 0 && state.running.length === 0 && state.queue.length > 0) {
      const packing = batchPackers[this.name](requestsOf(state.queue), state.processors);
      for (const entry of state.queue) {
        entry.reservation = now + packing.start.get(entry.job.id)!;
        this.batch.add(entry);
      }
      this.batchEnd = now + packing.makespan;
    }
    const started: QueueEntry[] = [];
    for (const entry of this.batch) {
      if (entry.reservation === now) {
        // Batch policies plan processors only; on a node pool an unplaceable
        // job waits for the next batch.
        const nodes = state.tryPlace(entry.job);
        if (nodes === null) {
          entry.reservation = NaN;
          this.batch.delete(entry);
          continue;
        }
        state.startJob(entry, now, nodes);
        started.push(entry);
        this.batch.delete(entry);
      }
    }
    state.dropStarted(new Set(started));
    return started;
  }

  /** Batch members keep their packed start; the rest are packed as the next batch. */
  plan(state: SchedulerState, now: Seconds): void {
    const waiting = state.queue.filter((entry) => !this.batch.has(entry));
    if (waiting.length === 0) return;
    const next = Math.max(now, this.batchEnd);
    const packing = batchPackers[this.name](requestsOf(waiting), state.processors);
    for (const entry of waiting) entry.reservation = next + packing.start.get(entry.job.id)!;
  }

  onCancel(entry: QueueEntry): void {
    this.batch.delete(entry);
  }

  nextWakeup(now: Seconds): Seconds | undefined {
    let next = Infinity;
    for (const entry of this.batch) if (entry.reservation > now && entry.reservation < next) next = entry.reservation;
    return next === Infinity ? undefined : next;
  }
}
