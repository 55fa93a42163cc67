// The store's writer thread (started by writer.ts, never run directly): its
// own connection to the database, which inserts each batch of submissions in
// one transaction, puts the write-ahead log on the disk with fdatasync, and
// only then answers with the new ids. The main thread meanwhile serves
// requests and gathers the next batch.

import { closeSync, fdatasyncSync, openSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { insertSubmissions, submissionStatements, type Inserted, type SubmissionRow } from './submissions.js';

export interface WriterRequest {
  readonly seq: number;
  readonly atMs: number;
  readonly rows: readonly SubmissionRow[];
}

export type WriterAnswer =
  /** Batch `seq` is committed and on the disk. */
  | { readonly seq: number; readonly inserted: Inserted[] }
  /** Its transaction failed and was rolled back: nothing of the batch is stored. */
  | { readonly seq: number; readonly failed: string }
  /** Committed, but the disk refused the sync: nothing may be acknowledged any more. */
  | { readonly seq: number; readonly syncFailed: string };

if (parentPort !== null) {
  const port = parentPort;
  const { path } = workerData as { path: string };
  const db = new Database(path);
  db.pragma('busy_timeout = 5000');
  db.pragma('synchronous = NORMAL'); // the sync is ours, after each commit
  const statements = submissionStatements(db);
  // The main thread's connection keeps the -wal file (the same inode) open until the store closes.
  const wal = openSync(`${path}-wal`, 'r');
  const insert = db.transaction((request: WriterRequest) => insertSubmissions(statements, request.rows, request.atMs));
  port.on('message', (request: WriterRequest | 'close') => {
    if (request === 'close') {
      db.close();
      closeSync(wal);
      port.close();
      return;
    }
    let inserted: Inserted[];
    try {
      inserted = insert.immediate(request);
    } catch (error) {
      port.postMessage({ seq: request.seq, failed: (error as Error).message } satisfies WriterAnswer);
      return;
    }
    // Here, not on libuv's pool: one message back per batch, and the batch after it
    // (sent once this one is answered) gathers every submission that came meanwhile.
    try {
      fdatasyncSync(wal);
    } catch (error) {
      port.postMessage({ seq: request.seq, syncFailed: (error as Error).message } satisfies WriterAnswer);
      return;
    }
    port.postMessage({ seq: request.seq, inserted } satisfies WriterAnswer);
  });
}
