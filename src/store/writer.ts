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

/** A batch given to the writer: its ids once committed, and when it is on the disk (here both at once). */
export interface WriterBatch {
  readonly committed: Promise<Inserted[]>;
  /** Resolves once the batch is on the disk; rejects if its commit or a sync failed. Awaited or not, it never goes unhandled. */
  readonly durable: Promise<void>;
}

interface Waiter {
  commit: { resolve: (inserted: Inserted[]) => void; reject: (error: WriterFailure) => void };
  durable: { resolve: () => void; reject: (error: WriterFailure) => void };
}

export class SubmissionWriter {
  private readonly worker: Worker;
  private next = 1;
  /** Batches not yet on the disk, by seq (in order). */
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

  /** Inserts the rows in one transaction, committed in the order of the calls. */
  insert(rows: readonly SubmissionRow[], atMs: EpochMs): WriterBatch {
    const seq = this.next++;
    let waiter!: Waiter;
    const committed = new Promise<Inserted[]>((resolve, reject) => {
      waiter = { commit: { resolve, reject }, durable: { resolve: () => {}, reject: () => {} } };
    });
    const durable = new Promise<void>((resolve, reject) => {
      waiter.durable = { resolve, reject };
    });
    durable.catch(() => {}); // a caller that saw the commit fail need not await this
    if (this.stopped !== null) {
      waiter.commit.reject(this.stopped);
      waiter.durable.reject(this.stopped);
      return { committed, durable };
    }
    if (this.waiting.size === 0) this.worker.ref();
    this.waiting.set(seq, waiter);
    this.worker.postMessage({ seq, atMs, rows } satisfies WriterRequest);
    return { committed, durable };
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
    if ('inserted' in answer) {
      waiter.commit.resolve(answer.inserted);
      waiter.durable.resolve();
    } else if ('failed' in answer) {
      const failure = new WriterFailure(answer.failed, false);
      waiter.commit.reject(failure);
      waiter.durable.reject(failure);
    } else {
      // Committed: the ids are real, but the batch may not be acknowledged.
      const failure = new WriterFailure(answer.syncFailed, true);
      waiter.commit.reject(failure);
      waiter.durable.reject(failure);
      this.stop(failure);
    }
  }

  private stop(failure: WriterFailure): void {
    const unexpected = this.stopped === null || this.waiting.size > 0;
    this.stopped ??= failure;
    for (const waiter of this.waiting.values()) {
      waiter.commit.reject(failure);
      waiter.durable.reject(failure);
    }
    this.waiting.clear();
    if (unexpected && failure.fatal) this.onFatal(failure);
  }
}
