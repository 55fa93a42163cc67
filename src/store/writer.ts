// The store's writer thread, seen from the main thread: Store.submitDurably
// hands it batches of submissions, one transaction and one fdatasync each
// (writer-thread.ts), and gets the new ids once they are on the disk. SQLite
// and the sync then cost the event loop nothing; the main thread builds the
// rows beforehand and the records afterwards.

import { Worker } from 'node:worker_threads';
import type { EpochMs } from './events.js';
import type { Inserted, SubmissionRow } from './submissions.js';
import type { WriterAnswer, WriterRequest } from './writer-thread.js';

export class WriterFailure extends Error {
  /** True when nothing may be acknowledged any more (a sync failed, or the thread stopped); false for one failed transaction. */
  constructor(message: string, readonly fatal: boolean) {
    super(message);
    this.name = 'WriterFailure';
  }
}

interface Waiter {
  readonly resolve: (inserted: Inserted[]) => void;
  readonly reject: (error: WriterFailure) => void;
}

export class SubmissionWriter {
  private readonly worker: Worker;
  private next = 1;
  /** Batches not yet answered, by seq. */
  private readonly waiting = new Map<number, Waiter>();
  private stopped: WriterFailure | null = null;

  /** `onFatal` is told once if the thread stops or a sync fails. */
  constructor(path: string, private readonly onFatal: (error: WriterFailure) => void) {
    this.worker = new Worker(new URL('./writer-thread.js', import.meta.url), { workerData: { path } });
    this.worker.unref(); // kept alive only while a batch is waiting (insert)
    this.worker.on('message', (answer: WriterAnswer) => this.answered(answer));
    this.worker.on('error', (error) => this.stop(new WriterFailure(`the store's writer thread failed (${error.message})`, true)));
    this.worker.on('exit', (code) => this.stop(new WriterFailure(`the store's writer thread stopped (exit code ${code})`, true)));
  }

  /** Inserts the rows in one transaction, in the order of the calls; resolves with their ids once committed and on the disk. */
  insert(rows: readonly SubmissionRow[], atMs: EpochMs): Promise<Inserted[]> {
    if (this.stopped !== null) return Promise.reject(this.stopped);
    const seq = this.next++;
    return new Promise((resolve, reject) => {
      if (this.waiting.size === 0) this.worker.ref();
      this.waiting.set(seq, { resolve, reject });
      this.worker.postMessage({ seq, atMs, rows } satisfies WriterRequest);
    });
  }

  /** Stops the thread once the batches sent so far are done (its connection closes). */
  close(): void {
    if (this.stopped !== null) return;
    this.stopped = new WriterFailure('the store is closed', false);
    this.worker.postMessage('close');
  }

  private answered(answer: WriterAnswer): void {
    const waiter = this.waiting.get(answer.seq);
    if (waiter === undefined) return;
    this.waiting.delete(answer.seq);
    if (this.waiting.size === 0) this.worker.unref();
    if ('inserted' in answer) return waiter.resolve(answer.inserted);
    if ('failed' in answer) return waiter.reject(new WriterFailure(answer.failed, false));
    // Committed: the ids are real, but the batch may not be acknowledged.
    const failure = new WriterFailure(answer.syncFailed, true);
    waiter.reject(failure);
    this.stop(failure);
  }

  private stop(failure: WriterFailure): void {
    const unexpected = this.stopped === null || this.waiting.size > 0;
    this.stopped ??= failure;
    for (const waiter of this.waiting.values()) waiter.reject(failure);
    this.waiting.clear();
    if (unexpected && failure.fatal) this.onFatal(failure);
  }
}
