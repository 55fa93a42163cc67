// The controller's durable state in one SQLite file (better-sqlite3, WAL).
// Every change is an event appended to a job's log, with the job's row (the
// cache of replay(log)) updated in the same transaction; a method returns only
// after its transaction has committed (it survives a killed process), and
// `durable()` resolves once every commit so far is on the disk (it survives
// power loss): acknowledge after that.

import { closeSync, fdatasync, fdatasyncSync, fsyncSync, linkSync, openSync, readdirSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import type { Database as Connection, Statement } from 'better-sqlite3';
import type { JobId } from '../core/types.js';
import { isAlive } from '../os/processes.js';
import {
  applyEvent, replay, submittedEvent,
  type EpochMs, type JobRecord, type JobState, type JsonValue, type NewJob, type StoredJobEvent, type TransitionEvent,
} from './events.js';
import { ACCOUNTING_COLUMNS, ACCOUNTING_FIELDS, accountingRow, eventPayload, JOB_COLUMNS, recordToRow, rowToEvent, rowToRecord, SELECT_JOBS, type AccountingRow, type EventRow, type JobRow, type JoinedJobRow } from './rows.js';
import { migrate, MIGRATIONS, SCHEMA_VERSION, schemaVersionOf } from './schema.js';

/** A problem with the database file itself; the message names the file and the fix. */
export class StoreError extends Error {
  constructor(readonly path: string, detail: string) {
    super(`${path}: ${detail}`);
    this.name = 'StoreError';
  }
}

/**
 * How commits reach the disk.
 * - `barrier` (default): SQLite writes each commit to the WAL file before the
 *   method returns (synchronous NORMAL: it survives kill -9) and `durable()`
 *   fdatasyncs the WAL, one sync for every commit made before it started
 *   (group commit). Acknowledge after `durable()` and the acknowledgement
 *   survives power loss. Where the sync runs depends on the disk: see
 *   `durable()`.
 * - `full`: synchronous FULL, SQLite fsyncs the WAL inside every commit, on
 *   the calling thread; `durable()` resolves at once.
 * - `process`: synchronous NORMAL and no barrier: survives a killed process,
 *   may lose the last commits on power loss. For benchmarks and tests only.
 */
export type Durability = 'barrier' | 'full' | 'process';

export interface StoreOptions {
  readonly durability?: Durability;
  /**
   * The barrier syncs on the calling thread while its syncs take less than
   * this on average (milliseconds), else on libuv's thread pool. Default
   * SYNC_IN_PLACE_BELOW_MS; 0: always on the pool; Infinity: always in place.
   */
  readonly syncInPlaceBelowMs?: number;
}

/**
 * A sync shorter than this (ms, on average) is done on the event loop's own
 * thread. Handing it to another thread and back costs two thread wake-ups,
 * which on a busy virtual machine (2 cores, the measurements in
 * src/store/README.md) cost more than an SSD's fdatasync of a few pages; a
 * slower disk must not hold up the event loop, so its syncs go to the pool.
 */
export const SYNC_IN_PLACE_BELOW_MS = 2;
/** Weight of the newest sync in the running average that chooses where the next one runs. */
const SYNC_AVERAGE_WEIGHT = 0.2;

export interface JobFilter {
  readonly user?: string;
  readonly states?: readonly JobState[];
  /** Hide jobs that ended before this time (retention); jobs that have not ended are always shown. */
  readonly endedSinceMs?: EpochMs;
  /** Only jobs with a larger id (a page's cursor). */
  readonly afterId?: number;
  /** Only the tasks of the array with this id (its first task's id), through the jobs_by_array index. */
  readonly arrayId?: number;
  /** At most this many (the first by id). */
  readonly limit?: number;
}

/**
 * `taras acct`'s question (sacct's): jobs that existed during [fromMs, toMs] (submitted by its end, not ended
 * before its start), of these users, states and ids, by id; a page of them with afterId and limit.
 */
export interface AccountingQuery {
  readonly fromMs: EpochMs;
  readonly toMs: EpochMs;
  readonly users?: readonly string[];
  readonly states?: readonly JobState[];
  /** Jobs by their ids; an array's id also names every task of the array (sacct -j 12). */
  readonly jobIds?: readonly number[];
  /** Array tasks as ARRAYID_TASK (12_3); with jobIds, a job named by either is listed. */
  readonly arrayTasks?: readonly string[];
  readonly afterId?: number;
  readonly limit?: number;
}

/**
 * One user's use of a window [fromMs, toMs] (usageTotals), summed by SQLite: jobs that ran in it, CPU-milliseconds
 * allocated inside it, CPU seconds used by those that ended in it, and waits of those that started in it.
 */
export interface UsageTotals {
  readonly user: string;
  readonly jobs: number;
  readonly allocCpuMs: number;
  readonly usedCpuSeconds: number;
  readonly waits: number;
  readonly waitedMs: number;
}

/** A submission: the job, and optionally the client's key for retrying it safely. */
export type Submission = NewJob & { readonly idempotencyKey?: string };

/** What submitRecords answers per submission: the new job's record, or (`replayed`) the job its key created before. */
export type SubmittedRecord = JobRecord & { readonly replayed?: true };

export interface JobTransition {
  readonly jobId: JobId;
  readonly event: TransitionEvent;
}

const INSERT_JOB = `INSERT INTO jobs (${JOB_COLUMNS.join(', ')}) VALUES (${JOB_COLUMNS.map((c) => `@${c}`).join(', ')})`;
/** The columns an append may change (updateRow): all but the id. last_seq changes with every event. */
const UPDATED_COLUMNS = JOB_COLUMNS.filter((column) => column !== 'id');
const INSERT_EVENT = 'INSERT INTO job_events (job_id, seq, time_ms, type, payload) VALUES (?, ?, ?, ?, ?)';

/** Recomputes every jobs row from job_events; runs inside the caller's transaction. */
function rebuildRows(db: Connection): number {
  db.prepare('DELETE FROM jobs').run();
  const insert = db.prepare(INSERT_JOB);
  // better-sqlite3 cannot write while a read is open, so the log is read in slices of job ids.
  const slice = db.prepare('SELECT job_id, seq, time_ms, type, payload FROM job_events WHERE job_id >= ? AND job_id < ? ORDER BY job_id, seq');
  const highest = (db.prepare('SELECT max(job_id) AS id FROM job_events').get() as { id: number | null }).id ?? 0;
  const jobsPerSlice = 1000;
  let rows = 0;
  for (let low = 0; low <= highest; low += jobsPerSlice) {
    let log: StoredJobEvent[] = [];
    const flush = (): void => {
      if (log.length === 0) return;
      insert.run(recordToRow(replay(log)));
      rows++;
      log = [];
    };
    for (const row of slice.all(low, low + jobsPerSlice) as EventRow[]) {
      if (log.length > 0 && log[0].jobId !== row.job_id) flush();
      log.push(rowToEvent(row));
    }
    flush();
  }
  // A purged job stays purged (the rows are new; its submitted event says when).
  db.prepare("UPDATE jobs SET purged_ms = (SELECT json_extract(payload, '$.purgedMs') FROM job_events WHERE job_id = jobs.id AND seq = 1)").run();
  return rows;
}

/** What purgeFinished is asked to purge. */
export interface PurgeRequest {
  /** Jobs that ran and ended at or before this. */
  readonly ranEndedByMs: EpochMs;
  /** Jobs that ended without ever starting (cancelled, failed before a start) at or before this. */
  readonly pendingEndedByMs: EpochMs;
  /** The time written into each purged event. */
  readonly nowMs: EpochMs;
  /** The number of tasks of an array, from its stored `array.text` (the tasks after the first take its script and environment). */
  readonly arrayTasks: (text: string) => number | undefined;
  /** Stop after this many jobs, or once this long has passed (checked before each job; the controller answers nothing meanwhile). */
  readonly limit?: number;
  readonly budgetMs?: number;
}

/**
 * A finished job's submitted event without its script, arguments, environment, exported variables and
 * interactive command. The big fields are replaced first, in one pass over the payload (json_replace adds
 * no field a request did not have); the rest works on the small result. About 4 ms for a 1.8 MB payload.
 */
const PURGE_EVENT = `UPDATE job_events SET payload = json_remove(json_set(json_replace(payload,
  '$.script', '', '$.request.script.text', '', '$.request.script.args', json('[]'), '$.request.submitEnv', NULL,
  '$.request.export.variables', json('[]'), '$.request.interactive.command', json('[]')), '$.purgedMs', ?), '$.request.submitEnv')
  WHERE job_id = ? AND seq = 1`;
/** A job that ran (or was requeued, which only a job that ran is): the purge's two kinds, and what keeps an array's script. */
const RAN = '(start_time_ms IS NOT NULL OR requeue_count > 0)';
/** Candidates in end order, after a cursor; each kind of job by its own partial index (the WHERE repeats its condition), which covers the query. */
const PURGE_CANDIDATES = (ran: boolean) => `SELECT id, end_time_ms AS endMs FROM jobs INDEXED BY ${ran ? 'jobs_purge_ran' : 'jobs_purge_pending'}
  WHERE purged_ms IS NULL AND end_time_ms IS NOT NULL
    AND ${ran ? RAN : 'start_time_ms IS NULL AND requeue_count = 0'}
    AND end_time_ms <= ? AND (end_time_ms, id) > (?, ?)
  ORDER BY end_time_ms, id LIMIT ?`;
/** Candidates read at a time. */
const PURGE_PAGE = 64;

/** SQLite's words for a file that is not (or no longer) a sound database. */
const DAMAGED_CODES = new Set(['SQLITE_NOTADB', 'SQLITE_CORRUPT', 'SQLITE_CORRUPT_VTAB', 'SQLITE_CORRUPT_SEQUENCE', 'SQLITE_CORRUPT_INDEX']);

/** True for an error SQLite raises on a damaged file (at open or at any later read). */
export function isDamagedDatabase(error: unknown): boolean {
  return DAMAGED_CODES.has((error as { code?: unknown } | null)?.code as string);
}

/** The one-line refusal for a damaged file: what it is and the two ways out. */
export function damagedStoreError(path: string, error: unknown): StoreError {
  return new StoreError(path, `the database is damaged or is not a Taras database (${(error as Error).message}); restore it from a backup, `
    + `or move it aside (mv ${path} ${path}.damaged) to start a new, empty cluster (job ids start again at 1)`);
}

function checkTime(path: string, atMs: EpochMs): void {
  if (!Number.isSafeInteger(atMs) || atMs < 0) throw new StoreError(path, `time ${atMs} is not a whole number of milliseconds since the epoch`);
}

/**
 * A list of values in a query, as one parameter (a JSON array read by json_each), each value once: a
 * statement per list length let any user grow the controller's memory without bound (GET /acct?jobs=1,1,...
 * with 2,000 ids held 831 MB, quadratic in the length).
 */
/**
 * The records of a query's rows, each row made a record as it is read and then dropped. Taking all the rows
 * first (`all()`) held every row's text (the submitted event's payload: script and environment) beside the
 * records parsed from it: a restart held each pending job's script twice until recovery ended, and a
 * controller within its heap before the restart ran out of it while starting.
 */
function recordsOf(statement: Statement, params: readonly (string | number)[] = []): JobRecord[] {
  const records: JobRecord[] = [];
  for (const row of statement.iterate(...params) as IterableIterator<JoinedJobRow>) records.push(rowToRecord(row));
  return records;
}

const LIST_PARAMETER = '(SELECT value FROM json_each(?))';
const listParameter = (values: readonly (string | number)[]): string => JSON.stringify([...new Set(values)]);
/** Filter statements kept at most (see Store.prepared). */
const MAX_FILTER_STATEMENTS = 256;

export class Store {
  private readonly insertJob: Statement;
  private readonly insertEvent: Statement;
  private readonly selectJob: Statement;
  private readonly selectLastSeq: Statement;
  private readonly selectEvents: Statement;
  private readonly selectPending: Statement;
  private readonly selectRunning: Statement;
  private readonly selectFinishedBefore: Statement;
  private readonly selectKey: Statement;
  private readonly selectArrayEnds: Statement;
  private readonly insertKey: Statement;
  private readonly deleteKeysBefore: Statement;
  private readonly filterStatements = new Map<string, Statement>();
  /** Told of every event once its transaction has committed, with the job's record after it (the event log). */
  readonly committedListeners: ((stored: StoredJobEvent, record: JobRecord) => void)[] = [];
  private committed: [StoredJobEvent, JobRecord][] = [];
  /** Write transactions committed so far, and how many of them are known to be on the disk. */
  private commits = 0;
  private syncedCommits = 0;
  private syncing = false;
  /** fdatasyncs done by the barrier so far, and how many of them on the calling thread (in place). */
  syncs = 0;
  syncsInPlace = 0;
  /** Running average of the barrier's sync times (ms): below syncInPlaceBelowMs, the next sync runs in place. */
  private syncAverageMs = 0;
  /** An in-place sync is due at the end of this turn of the event loop. */
  private syncDue: NodeJS.Immediate | null = null;
  private walFd: number | null = null;
  /** Set by the first failed sync: every later durable() rejects with it. */
  private syncFailure: StoreError | null = null;
  private readonly syncWaiters: { commits: number; resolve: () => void; reject: (error: Error) => void }[] = [];


  /** Use openStore. */
  constructor(
    readonly path: string, private readonly db: Connection, readonly durability: Durability = 'barrier',
    private readonly syncInPlaceBelowMs = SYNC_IN_PLACE_BELOW_MS,
  ) {
    this.insertJob = db.prepare(INSERT_JOB);
    this.insertEvent = db.prepare(INSERT_EVENT);
    this.selectJob = db.prepare(`${SELECT_JOBS} WHERE jobs.id = ?`);
    this.selectLastSeq = db.prepare('SELECT last_seq FROM jobs WHERE id = ?').pluck();
    this.selectEvents = db.prepare('SELECT job_id, seq, time_ms, type, payload FROM job_events WHERE job_id = ? ORDER BY seq');
    this.selectPending = db.prepare(`${SELECT_JOBS} WHERE jobs.state = 'PENDING' ORDER BY jobs.submit_time_ms, jobs.id`);
    this.selectRunning = db.prepare(`${SELECT_JOBS} WHERE jobs.state IN ('RUNNING', 'COMPLETING', 'SUSPENDED') ORDER BY jobs.start_time_ms, jobs.id`);
    this.selectFinishedBefore = db.prepare(`${SELECT_JOBS} WHERE jobs.end_time_ms < ? ORDER BY jobs.end_time_ms, jobs.id`);
    this.selectKey = db.prepare('SELECT job_id FROM idempotency_keys WHERE user_name = ? AND key = ?').pluck();
    // Written as the jobs_by_array index is, so SQLite uses it.
    this.selectArrayEnds = db.prepare(`SELECT count(*) AS ended, coalesce(sum(state <> 'COMPLETED'), 0) AS notCompleted FROM jobs
      WHERE id - array_index = ? AND array_index IS NOT NULL AND end_time_ms IS NOT NULL`);
    this.insertKey = db.prepare('INSERT INTO idempotency_keys (user_name, key, job_id, created_ms) VALUES (?, ?, ?, ?)');
    this.deleteKeysBefore = db.prepare('DELETE FROM idempotency_keys WHERE created_ms < ?');
  }

  /** False once closed. */
  get isOpen(): boolean {
    return this.db.open;
  }

  get schemaVersion(): number {
    return schemaVersionOf(this.db);
  }

  /** The connection's fsync policy, as SQLite reports it. */
  get synchronous(): 'OFF' | 'NORMAL' | 'FULL' | 'EXTRA' {
    return (['OFF', 'NORMAL', 'FULL', 'EXTRA'] as const)[this.db.pragma('synchronous', { simple: true }) as number];
  }

  /**
   * Submits a batch in one transaction (one fsync for all: group commit) and
   * returns their new ids in order. All or none are stored.
   */
  submitMany(jobs: readonly NewJob[], atMs: EpochMs): JobId[] {
    return this.submitRecords(jobs, atMs).map((record) => record.id);
  }

  /**
   * As submitMany, returning each new job's record (what `job(id)` would read
   * back). A submission whose idempotency key its user has used before stores
   * nothing and answers that job's record, marked `replayed`; a new key is
   * stored in the same transaction as its job, so it survives exactly when
   * the job does.
   */
  submitRecords(jobs: readonly Submission[], atMs: EpochMs): SubmittedRecord[] {
    checkTime(this.path, atMs);
    return this.write(() =>
      jobs.map((job): SubmittedRecord => {
        if (job.idempotencyKey !== undefined) {
          const earlier = this.selectKey.get(job.user, job.idempotencyKey) as number | undefined;
          if (earlier !== undefined) return { ...this.job(earlier as JobId)!, replayed: true };
        }
        // The row is built by the same fold as replay, so row == replay(log) by construction;
        // the id is SQLite's next one, so the fold runs with a placeholder.
        const event = submittedEvent(job);
        const provisional = applyEvent(undefined, { jobId: 0 as JobId, seq: 1, timeMs: atMs, event });
        const id = Number(this.insertJob.run({ ...recordToRow(provisional), id: null }).lastInsertRowid) as JobId;
        this.insertEvent.run(id, 1, atMs, event.type, eventPayload(event));
        if (this.committedListeners.length > 0) this.committed.push([{ jobId: id, seq: 1, timeMs: atMs, event }, { ...provisional, id }]);
        if (job.idempotencyKey !== undefined) this.insertKey.run(job.user, job.idempotencyKey, id, atMs);
        return { ...provisional, id };
      }),
    );
  }

  /**
   * How many tasks of job array `arrayId` have ended, and how many of those did not complete (a dependency
   * on the whole array): one count over the array's index (jobs_by_array), not a record per task.
   */
  arrayEnds(arrayId: JobId): { ended: number; notCompleted: number } {
    return this.selectArrayEnds.get(arrayId) as { ended: number; notCompleted: number };
  }

  /** The job a user's idempotency key created, if it is still remembered. */
  jobForKey(user: string, key: string): JobId | undefined {
    return this.selectKey.get(user, key) as JobId | undefined;
  }

  /** Forgets keys older than `cutoffMs` (a retry comes within seconds; a day is kept). Returns how many. */
  forgetKeysBefore(cutoffMs: EpochMs): number {
    return this.write(() => this.deleteKeysBefore.run(cutoffMs).changes);
  }

  submit(job: NewJob, atMs: EpochMs): JobId {
    return this.submitMany([job], atMs)[0];
  }

  /**
   * Appends events to existing jobs in one transaction and returns each job's
   * record after its event. An event that does not fit its job's state throws
   * a TransitionError and nothing of the batch is stored.
   *
   * `known`: the caller's copy of a job's record, as this store returned it
   * last (the controller's active jobs). It is used when the job's row is
   * still at that record's sequence number, which costs one read of an
   * integer instead of the row with its request (the submitted JSON, the
   * environment included: most of an append's time). Else the row is read.
   * The records returned are made from it, so they hold what it holds (the
   * controller's leave the submit environment out: it does not pass them
   * for a start). The row's columns do not depend on what it leaves out.
   */
  appendMany(transitions: readonly JobTransition[], atMs: EpochMs, known?: (id: JobId) => JobRecord | undefined): JobRecord[] {
    checkTime(this.path, atMs);
    // Every check (the job exists, the event fits its state) before the first write: a refusal leaves nothing
    // to take back, so inside a batch the writes need no savepoint of their own (checkedWrite).
    const check = () => {
      const latest = new Map<JobId, JobRecord>();
      return transitions.map(({ jobId, event }) => {
        const current = latest.get(jobId) ?? this.current(jobId, known?.(jobId));
        if (current === undefined) throw new StoreError(this.path, `job ${jobId} does not exist`);
        const next = applyEvent(current, { jobId, seq: current.lastSeq + 1, timeMs: atMs, event });
        latest.set(jobId, next);
        return { current, next };
      });
    };
    return this.checkedWrite(check, (changes) => changes.map(({ current, next }, at) => {
      const { jobId, event } = transitions[at];
      this.insertEvent.run(jobId, next.lastSeq, atMs, event.type, eventPayload(event));
      this.updateRow(recordToRow(current), recordToRow(next));
      if (this.committedListeners.length > 0) this.committed.push([{ jobId, seq: next.lastSeq, timeMs: atMs, event }, next]);
      return next;
    }));
  }

  /**
   * Writes the columns of a jobs row that differ between `before` (the row as
   * stored) and `after`. SQLite rewrites the entries of each index on a
   * column an UPDATE sets, changed or not, and every index of the table is on
   * some column: setting only the changed ones halves an append's write.
   */
  private updateRow(before: JobRow, after: JobRow): void {
    const changed: (typeof UPDATED_COLUMNS)[number][] = [];
    for (const column of UPDATED_COLUMNS) if (before[column] !== after[column]) changed.push(column);
    // Each kind of event changes a few columns, the same each time: few statements (prepared keeps them, bounded).
    const statement = this.prepared(`UPDATE jobs SET ${changed.map((column) => `${column} = ?`).join(', ')} WHERE id = ?`);
    statement.run(...changed.map((column) => after[column]), after.id);
  }

  append(jobId: JobId, event: TransitionEvent, atMs: EpochMs, known?: JobRecord): JobRecord {
    return this.appendMany([{ jobId, event }], atMs, known === undefined ? undefined : () => known)[0];
  }

  /** A job's record: `known` if its row is still at that record's sequence number, else read. */
  private current(id: JobId, known: JobRecord | undefined): JobRecord | undefined {
    if (known !== undefined && known.id === id && this.selectLastSeq.get(id) === known.lastSeq) return known;
    return this.job(id);
  }

  /** The id the next job will get (AUTOINCREMENT's sequence + 1): what sbatch --test-only names. */
  nextJobId(): number {
    const row = this.db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'jobs'").get() as { seq: number } | undefined;
    return (row?.seq ?? 0) + 1;
  }

  job(id: JobId): JobRecord | undefined {
    const row = this.selectJob.get(id) as JoinedJobRow | undefined;
    return row === undefined ? undefined : rowToRecord(row);
  }

  /** A job's log in order (empty for an unknown id). */
  events(id: JobId): StoredJobEvent[] {
    return (this.selectEvents.all(id) as EventRow[]).map(rowToEvent);
  }

  jobWithEvents(id: JobId): { job: JobRecord; events: StoredJobEvent[] } | undefined {
    return this.db.transaction(() => {
      const job = this.job(id);
      return job === undefined ? undefined : { job, events: this.events(id) };
    })();
  }

  /** PENDING jobs (held ones included, flagged) in queue order: submit time, then id. */
  pendingJobs(): JobRecord[] {
    return recordsOf(this.selectPending);
  }

  /** Jobs holding nodes: RUNNING, COMPLETING and SUSPENDED, by start time. */
  runningJobs(): JobRecord[] {
    return recordsOf(this.selectRunning);
  }

  /** Jobs matching every given condition, by id (a page of them with afterId and limit). */
  jobs(filter: JobFilter = {}): JobRecord[] {
    const conditions: string[] = [];
    const params: (string | number)[] = [];
    if (filter.user !== undefined) {
      conditions.push('jobs.user_name = ?');
      params.push(filter.user);
    }
    if (filter.states !== undefined) {
      conditions.push(`jobs.state IN ${LIST_PARAMETER}`);
      params.push(listParameter(filter.states));
    }
    if (filter.endedSinceMs !== undefined) {
      conditions.push('(jobs.end_time_ms IS NULL OR jobs.end_time_ms >= ?)');
      params.push(filter.endedSinceMs);
    }
    if (filter.afterId !== undefined) {
      conditions.push('jobs.id > ?');
      params.push(filter.afterId);
    }
    if (filter.arrayId !== undefined) {
      // Written as the jobs_by_array index is, so SQLite uses it.
      conditions.push('jobs.array_index IS NOT NULL AND jobs.id - jobs.array_index = ?');
      params.push(filter.arrayId);
    }
    let sql = `${SELECT_JOBS}${conditions.length > 0 ? ` WHERE ${conditions.join(' AND ')}` : ''} ORDER BY jobs.id`;
    if (filter.limit !== undefined) {
      sql += ' LIMIT ?';
      params.push(filter.limit);
    }
    return recordsOf(this.prepared(sql), params);
  }

  /**
   * Jobs for accounting, read from the row columns alone. Ended jobs are found through the end-time indexes
   * (only the window's rows are read); jobs that have not ended are few (the active ones) and found by state.
   */
  accounting(query: AccountingQuery): AccountingRow[] {
    return this.accountingRaw(query).map(accountingRow);
  }

  private accountingRaw(query: AccountingQuery): unknown[][] {
    const { sql, params } = this.accountingSql(query);
    return this.prepared(sql).raw(true).all(...params) as unknown[][];
  }

  /**
   * As accounting, the page as JSON (UTF-8 bytes) made by SQLite itself (an
   * array of rows, each an array in ACCOUNTING_FIELDS order): no JavaScript
   * value per job, so a page of 100,000 costs the controller one string.
   * `count` rows; `lastId` the last one's id (null: none). `fields`: those
   * of ACCOUNTING_FIELDS to write, in that order (default: all).
   */
  accountingJson(query: AccountingQuery, fields: readonly (typeof ACCOUNTING_FIELDS)[number][] = ACCOUNTING_FIELDS): { json: Buffer; count: number; lastId: number | null } {
    const { sql, params } = this.accountingSql(query);
    const values = fields.map((field) => (field === 'nodes' ? 'json(nodes)' : field)).join(', ');
    // As a BLOB: the UTF-8 bytes as SQLite made them, never decoded into a JavaScript string and encoded again.
    const row = this.prepared(`SELECT CAST(json_group_array(json_array(${values}) ORDER BY id) AS BLOB) AS json, count(*) AS count, max(id) AS lastId FROM (${sql})`)
      .get(...params) as { json: Buffer; count: number; lastId: number | null };
    return row;
  }

  /**
   * Each user's use of the window [fromMs, toMs] (`taras report`), from the jobs `accounting` lists for it, summed
   * by SQLite: no row reaches JavaScript, so a window of 100,000 jobs does not hold the controller for their
   * rows. Jobs still running count to `nowMs`. Only `user`'s when given.
   */
  usageTotals(fromMs: EpochMs, toMs: EpochMs, nowMs: EpochMs, user?: string): UsageTotals[] {
    const statement = this.prepared(`SELECT user_name AS user, count(*) AS jobs,
        sum(coalesce(alloc_cpus, 0) * max(0, min(coalesce(end_time_ms, @now), @to) - max(start_time_ms, @from))) AS allocCpuMs,
        sum(CASE WHEN end_time_ms BETWEEN @from AND @to THEN coalesce(cpu_seconds, 0) ELSE 0 END) AS usedCpuSeconds,
        sum(start_time_ms BETWEEN @from AND @to) AS waits,
        sum(CASE WHEN start_time_ms BETWEEN @from AND @to
          THEN max(0, start_time_ms - coalesce(eligible_time_ms, submit_time_ms)) ELSE 0 END) AS waitedMs
      FROM jobs
      WHERE start_time_ms IS NOT NULL AND submit_time_ms <= @to
        AND (end_time_ms >= @from OR (end_time_ms IS NULL AND state IN ('PENDING', 'RUNNING', 'COMPLETING', 'SUSPENDED')))
        AND (min(coalesce(end_time_ms, @now), @to) > max(start_time_ms, @from) OR start_time_ms BETWEEN @from AND @to)
        ${user === undefined ? '' : 'AND user_name = @user'}
      GROUP BY user_name`);
    return statement.all({ from: fromMs, to: toMs, now: nowMs, ...(user === undefined ? {} : { user }) }) as UsageTotals[];
  }

  private accountingSql(query: AccountingQuery): { sql: string; params: (string | number)[] } {
    const common: string[] = [];
    const params: (string | number)[] = [];
    const list = (column: string, values: readonly (string | number)[]) => {
      common.push(`${column} IN ${LIST_PARAMETER}`);
      params.push(listParameter(values));
    };
    if (query.users !== undefined) list('user_name', query.users);
    if (query.states !== undefined) list('state', query.states);
    if (query.jobIds !== undefined || query.arrayTasks !== undefined) {
      common.push(`(id IN ${LIST_PARAMETER} OR id - array_index IN ${LIST_PARAMETER} OR ((id - array_index) || '_' || array_task_id) IN ${LIST_PARAMETER})`);
      params.push(listParameter(query.jobIds ?? []), listParameter(query.jobIds ?? []), listParameter(query.arrayTasks ?? []));
    }
    if (query.afterId !== undefined) {
      common.push('id > ?');
      params.push(query.afterId);
    }
    const where = common.map((condition) => ` AND ${condition}`).join('');
    let sql = `SELECT ${ACCOUNTING_COLUMNS} FROM jobs WHERE end_time_ms >= ? AND submit_time_ms <= ?${where}
      UNION ALL SELECT ${ACCOUNTING_COLUMNS} FROM jobs WHERE state IN ('PENDING', 'RUNNING', 'COMPLETING', 'SUSPENDED') AND end_time_ms IS NULL AND submit_time_ms <= ?${where}
      ORDER BY id`;
    const all: (string | number)[] = [query.fromMs, query.toMs, ...params, query.toMs, ...params];
    if (query.limit !== undefined) {
      sql += ' LIMIT ?';
      all.push(query.limit);
    }
    return { sql, params: all };
  }

  /**
   * A statement of a query built from a filter, prepared once per shape. The
   * shapes are few (a list is one parameter, LIST_PARAMETER); should they ever
   * pass MAX_FILTER_STATEMENTS, the kept ones are let go and made again.
   */
  private prepared(sql: string): Statement {
    let statement = this.filterStatements.get(sql);
    if (statement === undefined) {
      statement = this.db.prepare(sql);
      if (this.filterStatements.size >= MAX_FILTER_STATEMENTS) this.filterStatements.clear();
      this.filterStatements.set(sql, statement);
    }
    return statement;
  }

  /** Finished jobs that ended before `cutoffMs`: past retention, kept here but hidden from the queue. */
  finishedBefore(cutoffMs: EpochMs): JobRecord[] {
    return (this.selectFinishedBefore.all(cutoffMs) as JoinedJobRow[]).map(rowToRecord);
  }

  private purgeStatements: { ran: Statement; pending: Statement; array: Statement; event: Statement; row: Statement; unfinished: Statement; lastRanEnd: Statement } | undefined;
  /**
   * Arrays' first tasks whose other tasks have all ended, with the last end of those that ran (null: none
   * ran): their script and environment stay until then plus keep_finished. Ended tasks never change again (the
   * log would take a requeue after an end, but the engine requeues only running jobs).
   */
  private readonly arraysEnded = new Map<number, number | null>();
  /**
   * Where each kind's scan stopped (end time, id): the next call goes on from there, and starts again from
   * the oldest once it reaches the end, so jobs it must pass over (an array's first task whose other tasks
   * run, or ran within keep_finished) cost one look per round, not one per call.
   */
  private readonly purgeCursors = { pending: [-Infinity, 0] as [number, number], ran: [-Infinity, 0] as [number, number] };
  private purgeCalls = 0;

  /**
   * Retention: purges the script, its arguments, the submitter's environment, the exported variables and
   * an interactive job's command from finished jobs' submitted events (the only rewrite job_events allows),
   * in end order, and marks their rows. The rest of each job (its request's sizes and paths, states, times,
   * usage) stays for `taras acct`. The first task of an array keeps its script and environment (which the
   * other tasks read there when they start and when their script is asked for) until every other task has
   * ended and those that ran ended keep_finished ago. Returns how many jobs it purged.
   */
  purgeFinished(request: PurgeRequest): number {
    checkTime(this.path, request.nowMs);
    const statements = this.purgeStatements ??= {
      ran: this.db.prepare(PURGE_CANDIDATES(true)),
      pending: this.db.prepare(PURGE_CANDIDATES(false)),
      array: this.db.prepare("SELECT json_extract(payload, '$.request.array') FROM job_events WHERE job_id = ? AND seq = 1").pluck(),
      event: this.db.prepare(PURGE_EVENT),
      row: this.db.prepare('UPDATE jobs SET purged_ms = ? WHERE id = ?'),
      // The other tasks of an array: whether one has not ended (the first found will do), then the last end of those that ran.
      unfinished: this.db.prepare('SELECT 1 FROM jobs WHERE id > ? AND id < ? AND end_time_ms IS NULL LIMIT 1').pluck(),
      lastRanEnd: this.db.prepare(`SELECT max(end_time_ms) FROM jobs WHERE id > ? AND id < ? AND ${RAN}`).pluck(),
    };
    const limit = request.limit ?? 256;
    const deadline = performance.now() + (request.budgetMs ?? 20);
    // Out of jobs or time; the time only once a job was looked at (each call makes progress).
    const spent = (): boolean => purged >= limit || (looked > 0 && performance.now() >= deadline);
    let purged = 0;
    let looked = 0;
    const kinds = [['pending', statements.pending, request.pendingEndedByMs], ['ran', statements.ran, request.ranEndedByMs]] as const;
    // Each kind first in turn: a backlog of one (a flood of cancels) does not hold the other back for good.
    for (const [kind, candidates, endedBy] of this.purgeCalls++ % 2 === 0 ? kinds : [kinds[1], kinds[0]]) {
      let wrapped = false;
      while (!spent()) {
        const start = this.purgeCursors[kind];
        const page = candidates.all(endedBy, start[0], start[1], PURGE_PAGE) as { id: number; endMs: number }[];
        if (page.length === 0) {
          // The end: from the oldest again, once a call.
          this.purgeCursors[kind] = [-Infinity, 0];
          if (wrapped || start[0] === -Infinity) break;
          wrapped = true;
          continue;
        }
        // One transaction for the page, the time checked before each job; each job in a savepoint of its own,
        // so one that cannot be purged (a damaged payload) is passed over until the next round, not the page.
        let reached = start;
        this.write(() => {
          for (const job of page) {
            if (spent()) break;
            looked++;
            reached = [job.endMs, job.id];
            try {
              const array = statements.array.get(job.id) as string | null | undefined;
              if (this.arrayStillNeeds(job.id, array ?? null, request, statements)) continue;
              this.db.transaction(() => {
                statements.event.run(request.nowMs, job.id); // the trigger reads the row's purged_ms: the event first
                statements.row.run(request.nowMs, job.id);
              })();
              purged++;
              this.arraysEnded.delete(job.id);
            } catch {
              // Left as it is; looked at again when the scan comes round.
            }
          }
        });
        this.purgeCursors[kind] = reached;
      }
    }
    return purged;
  }

  /** When a job's script and environment were purged (purgeFinished); null while they are stored, undefined for no such job. */
  purgedAt(id: JobId): EpochMs | null | undefined {
    const row = this.prepared('SELECT purged_ms AS purgedMs FROM jobs WHERE id = ?').get(id) as { purgedMs: number | null } | undefined;
    return row?.purgedMs;
  }

  /**
   * Whether a job is an array's first task whose script and environment its other tasks still need: one has
   * not ended, or one that ran ended less than keep_finished ago (a task that never started keeps nothing
   * after its end). Decided by the tasks' times, not by whether they were purged: a task that cannot be
   * purged (a damaged payload) does not keep the first task's environment for good.
   */
  private arrayStillNeeds(id: number, array: string | null, request: PurgeRequest, statements: { unfinished: Statement; lastRanEnd: Statement }): boolean {
    if (array === null) return false;
    const { text, index } = JSON.parse(array) as { text?: unknown; index?: unknown };
    if (index !== 0 || typeof text !== 'string') return false;
    const tasks = request.arrayTasks(text) ?? 1;
    if (tasks <= 1) return false;
    let lastRanEnd = this.arraysEnded.get(id);
    if (lastRanEnd === undefined) {
      if (statements.unfinished.get(id, id + tasks) !== undefined) return true;
      // A walk over the array's rows (about 1 ms for 10,000): once they have all ended, its answer is kept.
      if (this.arraysEnded.size >= 10_000) this.arraysEnded.clear();
      this.arraysEnded.set(id, lastRanEnd = (statements.lastRanEnd.get(id, id + tasks) as number | null) ?? null);
    }
    return lastRanEnd !== null && lastRanEnd > request.ranEndedByMs;
  }

  /** Recomputes every jobs row from the event log; returns the number of jobs. */
  rebuild(): number {
    return this.write(() => rebuildRows(this.db));
  }

  setting(key: string): JsonValue | undefined {
    const row = this.db.prepare('SELECT value FROM settings WHERE key = ?').get(key) as { value: string } | undefined;
    return row === undefined ? undefined : (JSON.parse(row.value) as JsonValue);
  }

  setSetting(key: string, value: JsonValue): void {
    this.write(() => this.db.prepare('INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value')
      .run(key, JSON.stringify(value)));
  }

  deleteSetting(key: string): void {
    this.write(() => this.db.prepare('DELETE FROM settings WHERE key = ?').run(key));
  }

  /** Inside batch(): writes join its transaction. */
  private batching = false;
  /** Writes of the open batch that went in (each a savepoint): its caller has acted on them in memory. */
  private batchWrites = 0;
  /** The failure of a batch's write that had no savepoint (checkedWrite): the batch rolls back whole. */
  private brokenBatch: unknown = undefined;
  /** Batches begun so far, and the last one rolled back after its writes (durable() asked inside it rejects). */
  private batchCount = 0;
  private abortedBatch: { readonly batch: number; readonly error: unknown } | null = null;

  /**
   * Told when a batch that had taken writes is rolled back after all (its body threw past them, or the
   * commit failed: a full or failing disk). Its caller acted on those writes in memory, which is now ahead
   * of the file: the controller stops (as on a failed sync) and starts again from the file.
   */
  readonly batchAbortedListeners: ((error: unknown) => void)[] = [];

  /**
   * Runs `body` with every write it makes in one transaction (all or none), and tells the commit's listeners
   * once it is in: an action on an array's 10,000 tasks is one commit, not 10,000 (4 s of the event loop).
   * A batch inside a batch is the same batch.
   */
  batch<T>(body: () => T): T {
    if (this.batching) return body();
    this.batchWrites = 0;
    this.brokenBatch = undefined;
    this.batchCount++;
    try {
      return this.write(() => {
        this.batching = true;
        try {
          const result = body();
          // A write without its own savepoint failed part way (checkedWrite): none of the batch may stay.
          if (this.brokenBatch !== undefined) throw this.brokenBatch;
          return result;
        } finally {
          this.batching = false;
        }
      });
    } catch (error) {
      if (this.batchWrites > 0) {
        this.abortedBatch = { batch: this.batchCount, error };
        for (const listener of this.batchAbortedListeners) listener(error);
      }
      throw error;
    } finally {
      this.batchWrites = 0;
      this.brokenBatch = undefined;
    }
  }

  /**
   * A write whose refusals all come from `check`, which only reads; `apply` then writes what it found. Alone, one
   * transaction (as write). Inside a batch, `apply` runs without a savepoint of its own: a savepoint copies every
   * page its writes touch first, which made cancelling 50,000 jobs in one batch cost half as much again. Should
   * `apply` fail anyway (a full disk), the whole batch is taken back, even if its body goes on.
   */
  private checkedWrite<C, T>(check: () => C, apply: (checked: C) => T): T {
    if (!this.batching) return this.write(() => apply(check()));
    const checked = check();
    const told = this.committed.length;
    try {
      const result = apply(checked);
      this.batchWrites++;
      return result;
    } catch (error) {
      this.committed.length = told;
      this.brokenBatch ??= error;
      throw error;
    }
  }

  /** One write transaction (BEGIN IMMEDIATE), counted for the durability barrier; inside batch(), part of it. */
  private write<T>(body: () => T): T {
    if (this.batching) {
      // A savepoint: a write that fails inside the batch takes back its own part only, as it would alone.
      const told = this.committed.length;
      try {
        const result = this.db.transaction(body)();
        this.batchWrites++;
        return result;
      } catch (error) {
        this.committed.length = told;
        throw error;
      }
    }
    let result: T;
    try {
      result = this.db.transaction(body).immediate();
    } catch (error) {
      this.committed = []; // rolled back: nothing to tell
      throw error;
    }
    this.commits++;
    const committed = this.committed;
    this.committed = [];
    for (const [stored, record] of committed) {
      for (const listener of this.committedListeners) {
        try {
          listener(stored, record);
        } catch {
          // A listener's failure (a full disk under the event log) does not undo or fail a committed change.
        }
      }
    }
    return result;
  }

  /**
   * Resolves once every commit made before the call is on the disk. With the
   * `barrier` durability, one fdatasync of the WAL serves every commit made
   * before it began (group commit). While the disk's syncs are quick (on
   * average under syncInPlaceBelowMs) the sync runs on this thread at the end
   * of the current turn of the event loop, so every commit of the turn shares
   * it and no other thread is woken; on a slower disk it runs on libuv's
   * thread pool, off the event loop, and callers that arrive meanwhile share
   * the next one. Rejects if the disk refuses (the caller must not
   * acknowledge then). Asked inside batch() (an order to an agent sent by an
   * action the batch stores), it counts the batch's commit too: the batch
   * (synchronous) has committed by the next microtask.
   */
  durable(options: { now?: boolean } = {}): Promise<void> {
    if (this.batching) {
      const batch = this.batchCount;
      // Rolled back after its writes (batchAbortedListeners): what the order follows from is not stored, so it does not leave.
      return Promise.resolve().then(() => (this.abortedBatch?.batch === batch ? Promise.reject(this.abortedBatch.error) : this.durable(options)));
    }
    if (this.syncFailure !== null) return Promise.reject(this.syncFailure);
    if (this.durability !== 'barrier' || this.syncedCommits >= this.commits || this.path === ':memory:') return Promise.resolve();
    if (!this.db.open) return Promise.reject(new StoreError(this.path, 'the store was closed before its last commits were synced'));
    const promise = new Promise<void>((resolve, reject) => this.syncWaiters.push({ commits: this.commits, resolve, reject }));
    // `now`: the caller has made the turn's last commit, so an in-place sync need not wait for the end of the turn.
    if (options.now === true && !this.syncing && this.syncAverageMs < this.syncInPlaceBelowMs) {
      if (this.syncDue !== null) clearImmediate(this.syncDue);
      this.syncInPlace();
    } else {
      this.syncNext();
    }
    return promise;
  }

  private syncNext(): void {
    if (this.syncing || this.syncDue !== null || this.syncWaiters.length === 0) return;
    if (this.syncAverageMs < this.syncInPlaceBelowMs) {
      this.syncDue = setImmediate(() => this.syncInPlace());
      return;
    }
    const fd = this.walFd ?? this.openWal();
    if (fd === null) return;
    const through = this.commits;
    const began = performance.now();
    this.syncing = true;
    fdatasync(fd, (error) => {
      this.syncing = false;
      this.synced(through, performance.now() - began, error);
    });
  }

  /** The sync of the commits made so far, on this thread (the end of a turn of the event loop: syncNext). */
  private syncInPlace(): void {
    this.syncDue = null;
    const fd = this.walFd ?? this.openWal();
    if (fd === null) return;
    const through = this.commits;
    const began = performance.now();
    let failure: Error | null = null;
    try {
      fdatasyncSync(fd);
    } catch (error) {
      failure = error as Error;
    }
    this.syncsInPlace++;
    this.synced(through, performance.now() - began, failure);
  }

  /** The WAL's descriptor for the barrier's syncs; null (the waiters refused) if it cannot be opened. */
  private openWal(): number | null {
    try {
      // SQLite keeps the -wal file (same inode) while this connection is open; it restarts it in place after checkpoints.
      this.walFd = openSync(`${this.path}-wal`, 'r');
      return this.walFd;
    } catch (error) {
      this.failWaiters(new StoreError(this.path, `cannot open the write-ahead log to sync it (${(error as Error).message})`));
      return null;
    }
  }

  /** A sync of the commits through `through` ended (in `ms`, failed with `error`): its waiters are answered. */
  private synced(through: number, ms: number, error: Error | null): void {
    this.syncs++;
    if (error) {
      // After a failed fsync the kernel may have dropped the dirty pages and cleared the error: a later
      // sync could succeed without the lost commits. Nothing is acknowledged again (PostgreSQL does the same).
      this.syncFailure = new StoreError(this.path, `the disk refused to sync the write-ahead log (${error.message}); nothing more is acknowledged: check the disk and free space, then restart`);
      this.failWaiters(this.syncFailure);
      return;
    }
    // A pool sync's time includes the two thread hand-offs, so a disk must be clearly quicker to bring syncs back in place.
    this.syncAverageMs += (ms - this.syncAverageMs) * SYNC_AVERAGE_WEIGHT;
    this.syncedCommits = Math.max(this.syncedCommits, through);
    let kept = 0;
    for (const waiter of this.syncWaiters) {
      if (waiter.commits <= through) waiter.resolve();
      else this.syncWaiters[kept++] = waiter;
    }
    this.syncWaiters.length = kept;
    this.syncNext();
  }

  private failWaiters(error: Error): void {
    for (const waiter of this.syncWaiters.splice(0)) waiter.reject(error);
  }

  close(): void {
    if (this.syncDue !== null) clearImmediate(this.syncDue);
    this.syncDue = null;
    this.db.close();
    if (this.walFd !== null) closeSync(this.walFd);
    this.walFd = null;
    this.failWaiters(new StoreError(this.path, 'the store was closed before its last commits were synced'));
  }
}

/** The file's size in bytes; undefined when there is no such file (or it cannot be inspected: opening says why). */
function fileSize(path: string): number | undefined {
  try {
    return statSync(path).size;
  } catch {
    return undefined;
  }
}

/** SQLite's connection to `file` (the database at `path`, or the file it is being made in). */
function connect(path: string, file: string, verb: 'create' | 'open'): Connection {
  try {
    return new Database(file);
  } catch (error) {
    throw new StoreError(path, `cannot ${verb} the database (${(error as Error).message}); check that the directory exists and is writable`);
  }
}

/** Every pending migration, in one transaction. */
function migrateAll(db: Connection): void {
  db.transaction(() => {
    if (migrate(db, MIGRATIONS).rebuildRows) rebuildRows(db);
  }).immediate();
}

/** Files a creator killed mid-way left (`PATH.new-PID`, its journal): those of this process and of PIDs no longer running. */
function removeLeftovers(path: string): void {
  const prefix = `${basename(path)}.new-`;
  let names: string[];
  try {
    names = readdirSync(dirname(path));
  } catch {
    return; // creating says what is wrong with the directory
  }
  for (const name of names) {
    const match = name.startsWith(prefix) ? /^(\d+)(-journal)?$/.exec(name.slice(prefix.length)) : null;
    if (match === null) continue;
    const pid = Number(match[1]);
    if (pid === process.pid || !isAlive(pid)) rmSync(join(dirname(path), name), { force: true });
  }
}

/**
 * Creates a new database at `path` whole or not at all: made under another
 * name, its schema committed and synced, then linked into place. A crash
 * midway leaves no file at `path` (the next start creates it again), never
 * an empty or half-made one (which openStore refuses). Another process
 * that created it first wins; its database is used.
 */
function createDatabase(path: string): void {
  const temporary = `${path}.new-${process.pid}`;
  removeLeftovers(path);
  const db = connect(path, temporary, 'create');
  try {
    migrateAll(db);
  } catch (error) {
    db.close();
    rmSync(temporary, { force: true });
    throw new StoreError(path, `cannot create the database (${(error as Error).message}); check the disk and free space`);
  }
  db.close();
  syncFile(temporary, fsyncSync);
  try {
    linkSync(temporary, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw new StoreError(path, `cannot create the database (${(error as Error).message}); check that the directory is writable`);
  } finally {
    rmSync(temporary, { force: true });
  }
  syncFile(dirname(path), fsyncSync); // the new name
}

/** Puts what is written to `path` (a file or a directory) on the disk. */
function syncFile(path: string, sync: (fd: number) => void): void {
  const fd = openSync(path, 'r');
  try {
    sync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Opens (or creates) the database at `path`: WAL, the `barrier` durability by
 * default, and every pending migration applied in one transaction. A file written by a
 * newer Taras is refused rather than guessed at; an empty (0-byte) or damaged
 * file is refused with a StoreError saying how to restore or move it aside.
 */
export function openStore(path: string, options: StoreOptions = {}): Store {
  const durability = options.durability ?? 'barrier';
  // SQLite takes an empty file for a new database: a truncated or wrongly copied file would then
  // start a new cluster silently, with job ids back at 1. A new database is created only where none is.
  const size = path === ':memory:' ? null : fileSize(path);
  if (size === 0) {
    throw new StoreError(path, 'the database file is empty (0 bytes): it holds no cluster, and a new one is not started over it '
      + `(job ids would start again at 1); restore it from a backup, or move it aside (mv ${path} ${path}.empty) to start a new cluster`);
  }
  if (size === undefined) createDatabase(path);
  const db = connect(path, path, 'open');
  try {
    db.pragma('busy_timeout = 5000');
    const mode = db.pragma('journal_mode = WAL', { simple: true });
    if (mode !== 'wal' && path !== ':memory:') {
      throw new StoreError(path, `cannot switch to WAL mode (journal_mode is '${String(mode)}'); use a local filesystem`);
    }
    db.pragma(`synchronous = ${durability === 'full' ? 'FULL' : 'NORMAL'}`);
    const version = schemaVersionOf(db);
    if (version > SCHEMA_VERSION) {
      throw new StoreError(path, `schema version ${version} is newer than this Taras understands (${SCHEMA_VERSION}); run a newer Taras or restore a backup`);
    }
    if (version < SCHEMA_VERSION) {
      migrateAll(db);
      // A fresh schema is on the disk before anything is built on it.
      if (durability === 'barrier' && path !== ':memory:') syncFile(`${path}-wal`, fdatasyncSync);
    }
  } catch (error) {
    db.close();
    if (error instanceof StoreError) throw error;
    if (isDamagedDatabase(error)) throw damagedStoreError(path, error);
    throw new StoreError(path, `cannot use the database (${(error as Error).message}); is it a Taras database?`);
  }
  return new Store(path, db, durability, options.syncInPlaceBelowMs);
}
