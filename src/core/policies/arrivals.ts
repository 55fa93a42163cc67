// The entries queued since a planning policy's last pass, waiting to be
// planned at the next one, in queue order. A cancelled one is dropped when
// the list is taken, not by a walk of the list each time: cancelling many
// jobs just after they came (or after a loss of capacity made every queued
// job an arrival again) costs one walk, not one per job.

import type { QueueEntry } from '../state.js';

export class Arrivals {
  private entries: QueueEntry[] = [];
  private readonly gone = new Set<QueueEntry>();

  /** Behind every arrival (still queued) of the same or a higher priority. */
  add(entry: QueueEntry): void {
    const priority = entry.job.priority ?? 0;
    let at = this.entries.length;
    while (at > 0 && (this.gone.has(this.entries[at - 1]) || (this.entries[at - 1].job.priority ?? 0) < priority)) at--;
    this.entries.splice(at, 0, entry);
  }

  /** At the back (the caller adds them in queue order). */
  push(entry: QueueEntry): void {
    this.entries.push(entry);
  }

  /** The entry left the queue: it is not planned (nothing happens if it is not an arrival). */
  remove(entry: QueueEntry): void {
    if (this.entries.length > 0) this.gone.add(entry);
  }

  clear(): void {
    this.entries = [];
    this.gone.clear();
  }

  /** The arrivals still queued, in order; the list is left empty. */
  take(): QueueEntry[] {
    const gone = this.gone;
    const live = gone.size === 0 ? this.entries : this.entries.filter((entry) => !gone.has(entry));
    this.clear();
    return live;
  }
}
