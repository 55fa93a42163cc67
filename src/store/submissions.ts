// The inserts that store new jobs (Store.submitRecords): a jobs row, the
// submitted event, the idempotency key. The rows are worked out before the
// transaction begins (submissionDraft), so it holds the write lock for the
// SQL only.

import type { Database as Connection, Statement } from 'better-sqlite3';
import type { JobId } from '../core/types.js';
import { applyEvent, submittedEvent, type EpochMs, type JobEvent, type JobRecord, type NewJob } from './events.js';
import { eventPayload, JOB_COLUMNS, recordToRow, type JobRow } from './rows.js';

export const INSERT_JOB = `INSERT INTO jobs (${JOB_COLUMNS.join(', ')}) VALUES (${JOB_COLUMNS.map((c) => `@${c}`).join(', ')})`;
export const INSERT_EVENT = 'INSERT INTO job_events (job_id, seq, time_ms, type, payload) VALUES (?, ?, ?, ?, ?)';

/** A submission: the job, and optionally the client's key for retrying it safely. */
export type Submission = NewJob & { readonly idempotencyKey?: string };

/** What the inserts of one submission need, all plain values. */
export interface SubmissionRow {
  /** The jobs row; SQLite gives the id. */
  readonly row: Omit<JobRow, 'id'> & { id: null };
  /** The submitted event's payload (JSON). */
  readonly payload: string;
  readonly user: string;
  readonly key?: string;
}

/** A submission ready to be inserted, and the record it becomes (with a placeholder id until then). */
export interface SubmissionDraft extends SubmissionRow {
  readonly event: JobEvent;
  readonly provisional: JobRecord;
}

/** The new job's id, or the job that the same user's key created before (nothing was inserted). */
export type Inserted = { readonly id: JobId } | { readonly earlier: JobId };

export function submissionDraft(job: Submission, atMs: EpochMs): SubmissionDraft {
  // The row is built by the same fold as replay, so row == replay(log) by construction;
  // the id is SQLite's next one, so the fold runs with a placeholder.
  const event = submittedEvent(job);
  const provisional = applyEvent(undefined, { jobId: 0 as JobId, seq: 1, timeMs: atMs, event });
  return {
    event, provisional, row: { ...recordToRow(provisional), id: null }, payload: eventPayload(event), user: job.user,
    ...(job.idempotencyKey === undefined ? {} : { key: job.idempotencyKey }),
  };
}

export interface SubmissionStatements {
  readonly insertJob: Statement;
  readonly insertEvent: Statement;
  readonly selectKey: Statement;
  readonly insertKey: Statement;
}

export function submissionStatements(db: Connection): SubmissionStatements {
  return {
    insertJob: db.prepare(INSERT_JOB),
    insertEvent: db.prepare(INSERT_EVENT),
    selectKey: db.prepare('SELECT job_id FROM idempotency_keys WHERE user_name = ? AND key = ?').pluck(),
    insertKey: db.prepare('INSERT INTO idempotency_keys (user_name, key, job_id, created_ms) VALUES (?, ?, ?, ?)'),
  };
}

/**
 * Inserts the submissions in order, inside the caller's transaction. A key
 * its user has used before inserts nothing and answers that job; a new key
 * is stored with its job, so it survives exactly when the job does.
 */
export function insertSubmissions(statements: SubmissionStatements, rows: readonly SubmissionRow[], atMs: EpochMs): Inserted[] {
  return rows.map(({ row, payload, user, key }): Inserted => {
    if (key !== undefined) {
      const earlier = statements.selectKey.get(user, key) as JobId | undefined;
      if (earlier !== undefined) return { earlier };
    }
    const id = Number(statements.insertJob.run(row).lastInsertRowid) as JobId;
    statements.insertEvent.run(id, 1, atMs, 'submitted', payload);
    if (key !== undefined) statements.insertKey.run(user, key, id, atMs);
    return { id };
  });
}
