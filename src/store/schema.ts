// The database schema as an ordered list of migrations. The file's version is
// `PRAGMA user_version`; opening runs every later migration in one transaction.
// The jobs table is a cache of the event log, so a migration that changes its
// shape asks for a rebuild from the events instead of converting rows.

import type { Database } from 'better-sqlite3';

export interface Migration {
  /** 1, 2, ...: the file's user_version after this migration. */
  readonly version: number;
  readonly description: string;
  readonly up: (db: Database) => void;
  /** Recompute every jobs row from job_events after this migration (store.ts does it). */
  readonly rebuildRows?: boolean;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: 'event log, job rows, settings',
    up: (db) => {
      db.exec(`
        -- The source of truth: one row per fact, never updated or deleted.
        CREATE TABLE job_events (
          job_id  INTEGER NOT NULL,
          seq     INTEGER NOT NULL,
          time_ms INTEGER NOT NULL,
          type    TEXT    NOT NULL,
          payload TEXT    NOT NULL,  -- JSON: the event without its type
          PRIMARY KEY (job_id, seq)
        ) WITHOUT ROWID;
        CREATE TRIGGER job_events_no_update BEFORE UPDATE ON job_events
          BEGIN SELECT RAISE(ABORT, 'job_events is append-only'); END;
        CREATE TRIGGER job_events_no_delete BEFORE DELETE ON job_events
          BEGIN SELECT RAISE(ABORT, 'job_events is append-only'); END;

        -- The job id sequence and a cache of replay(events) per job.
        -- AUTOINCREMENT: ids are never reused, even if rows are wiped for a rebuild.
        CREATE TABLE jobs (
          id               INTEGER PRIMARY KEY AUTOINCREMENT,
          user_name        TEXT    NOT NULL,
          job_name         TEXT    NOT NULL,
          partition_name   TEXT    NOT NULL,
          script_path      TEXT,
          script           TEXT    NOT NULL,
          request          TEXT    NOT NULL,  -- JSON object
          state            TEXT    NOT NULL,
          submit_time_ms   INTEGER NOT NULL,
          start_time_ms    INTEGER,
          end_time_ms      INTEGER,
          exit_code        INTEGER,
          nodes            TEXT    NOT NULL,  -- JSON array of node names
          planned_start_ms INTEGER,
          reserved_nodes   TEXT    NOT NULL,  -- JSON array of node names
          last_seq         INTEGER NOT NULL
        );

        CREATE TABLE settings (
          key   TEXT PRIMARY KEY,
          value TEXT NOT NULL  -- JSON
        ) WITHOUT ROWID;
      `);
    },
  },
  {
    version: 2,
    description: 'hold, reason and requeue count on job rows; indexes for the queue queries',
    up: (db) => {
      db.exec(`
        ALTER TABLE jobs ADD COLUMN held INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE jobs ADD COLUMN reason TEXT;
        ALTER TABLE jobs ADD COLUMN requeue_count INTEGER NOT NULL DEFAULT 0;
        -- Pending queue order and running lists; per-user listings; retention scans.
        CREATE INDEX jobs_by_state ON jobs (state, submit_time_ms, id);
        CREATE INDEX jobs_by_user ON jobs (user_name, id);
        CREATE INDEX jobs_by_end ON jobs (end_time_ms) WHERE end_time_ms IS NOT NULL;
      `);
    },
    // The new columns are derived from the log (held/released, requeued events).
    rebuildRows: true,
  },
  {
    version: 3,
    description: 'events in a rowid table, script and request only in the submitted event (a quarter of the bytes per submission)',
    up: (db) => {
      db.exec(`
        -- Both are in the job's first event (seq 1, submitted); rows join it when read.
        ALTER TABLE jobs DROP COLUMN script;
        ALTER TABLE jobs DROP COLUMN request;

        -- A WITHOUT ROWID table keeps at most about 1 kB of a row in its page and moves the rest
        -- to an overflow page of its own (4 kB): a submitted event with the submitter's environment
        -- took a whole extra page. A rowid table keeps rows up to about 4 kB in place.
        CREATE TABLE job_events_v3 (
          job_id  INTEGER NOT NULL,
          seq     INTEGER NOT NULL,
          time_ms INTEGER NOT NULL,
          type    TEXT    NOT NULL,
          payload TEXT    NOT NULL,  -- JSON: the event without its type
          UNIQUE (job_id, seq)
        );
        INSERT INTO job_events_v3 (job_id, seq, time_ms, type, payload)
          SELECT job_id, seq, time_ms, type, payload FROM job_events ORDER BY job_id, seq;
        DROP TABLE job_events;
        ALTER TABLE job_events_v3 RENAME TO job_events;
        CREATE TRIGGER job_events_no_update BEFORE UPDATE ON job_events
          BEGIN SELECT RAISE(ABORT, 'job_events is append-only'); END;
        CREATE TRIGGER job_events_no_delete BEFORE DELETE ON job_events
          BEGIN SELECT RAISE(ABORT, 'job_events is append-only'); END;
      `);
    },
  },
  {
    version: 4,
    description: 'idempotency keys: a retried submission answers the job its key first created',
    up: (db) => {
      db.exec(`
        -- Written in the submission's transaction: a key is stored exactly when its job is.
        CREATE TABLE idempotency_keys (
          user_name  TEXT    NOT NULL,
          key        TEXT    NOT NULL,
          job_id     INTEGER NOT NULL,
          created_ms INTEGER NOT NULL,
          PRIMARY KEY (user_name, key)
        ) WITHOUT ROWID;
        CREATE INDEX idempotency_keys_by_time ON idempotency_keys (created_ms);
      `);
    },
  },
  {
    version: 5,
    description: 'accounting: eligible time, allocated CPUs, CPU time, peak memory and end signal on job rows; indexes for time windows',
    up: (db) => {
      db.exec(`
        ALTER TABLE jobs ADD COLUMN eligible_time_ms INTEGER;
        ALTER TABLE jobs ADD COLUMN alloc_cpus INTEGER;
        ALTER TABLE jobs ADD COLUMN cpu_seconds REAL;
        ALTER TABLE jobs ADD COLUMN user_cpu_seconds REAL;
        ALTER TABLE jobs ADD COLUMN system_cpu_seconds REAL;
        ALTER TABLE jobs ADD COLUMN max_rss_kib INTEGER;
        ALTER TABLE jobs ADD COLUMN exit_signal TEXT;
        ALTER TABLE jobs ADD COLUMN time_limit_s INTEGER;  -- null: UNLIMITED
        -- taras acct / report: jobs of one user that ended in a window (all users: jobs_by_end).
        CREATE INDEX jobs_by_user_end ON jobs (user_name, end_time_ms) WHERE end_time_ms IS NOT NULL;
      `);
    },
    // Old rows get the new columns from their events (usage stays null where the log has none).
    rebuildRows: true,
  },
  {
    version: 6,
    description: 'queue control: a moved job\'s place in the queue order and the request fields an update changed',
    up: (db) => {
      db.exec(`
        ALTER TABLE jobs ADD COLUMN queue_place TEXT;  -- JSON {key, priority}: taras move
        ALTER TABLE jobs ADD COLUMN amended TEXT;      -- JSON: fields of the request scontrol update changed
      `);
    },
  },
  {
    version: 7,
    description: "retention: a finished job's script and environment are purged from its submitted event (store.ts purgeFinished)",
    up: (db) => {
      db.exec(`
        -- The log stays append-only but for one rewrite: a finished job's submitted event loses its script,
        -- arguments and environment once (its payload gains purgedMs). Nothing else of any event may change.
        DROP TRIGGER job_events_no_update;
        CREATE TRIGGER job_events_no_update BEFORE UPDATE ON job_events
          WHEN NOT (OLD.type = 'submitted' AND NEW.type = 'submitted' AND NEW.job_id = OLD.job_id AND NEW.seq = OLD.seq
            AND NEW.time_ms = OLD.time_ms AND json_extract(OLD.payload, '$.purgedMs') IS NULL
            AND json_extract(NEW.payload, '$.purgedMs') IS NOT NULL)
          BEGIN SELECT RAISE(ABORT, 'job_events is append-only (only the purge of a finished job''s script and environment rewrites its submitted event)'); END;
        ALTER TABLE jobs ADD COLUMN purged_ms INTEGER;  -- when its script and environment were purged; null: stored
        -- What the purge looks for: jobs that ended while pending (at once) and jobs that ran (keep_finished after their end).
        CREATE INDEX jobs_purge_pending ON jobs (end_time_ms, id) WHERE purged_ms IS NULL AND end_time_ms IS NOT NULL AND start_time_ms IS NULL;
        CREATE INDEX jobs_purge_ran ON jobs (end_time_ms, id) WHERE purged_ms IS NULL AND end_time_ms IS NOT NULL AND start_time_ms IS NOT NULL;
      `);
    },
  },
  {
    version: 8,
    description: "retention: the purge's trigger asks the job's row (not its megabytes of payload), refuses an unfinished job; a requeued job counts as one that ran",
    up: (db) => {
      db.exec(`
        -- The log stays append-only but for one rewrite: a finished job's submitted event loses its script,
        -- arguments and environment once (its payload gains purgedMs). The trigger asks the job's row (cheap:
        -- the payload may be megabytes) that the job has ended and is not purged yet; the event keeps its job,
        -- seq, type and time. It does not compare the payload's other fields: the purge (store.ts) alone writes it.
        DROP TRIGGER job_events_no_update;
        CREATE TRIGGER job_events_no_update BEFORE UPDATE ON job_events
          WHEN NOT (OLD.type = 'submitted' AND NEW.type = 'submitted' AND NEW.job_id = OLD.job_id AND NEW.seq = OLD.seq
            AND NEW.time_ms = OLD.time_ms AND json_extract(NEW.payload, '$.purgedMs') IS NOT NULL
            AND (SELECT end_time_ms IS NOT NULL AND purged_ms IS NULL FROM jobs WHERE id = OLD.job_id) IS 1)
          BEGIN SELECT RAISE(ABORT, 'job_events is append-only (only the purge of a finished job''s script and environment rewrites its submitted event)'); END;
        -- What the purge looks for: jobs that ended without ever starting (at once) and jobs that ran (keep_finished
        -- after their end; a requeued job ran, though its row's start time is cleared).
        DROP INDEX jobs_purge_pending;
        DROP INDEX jobs_purge_ran;
        CREATE INDEX jobs_purge_pending ON jobs (end_time_ms, id) WHERE purged_ms IS NULL AND end_time_ms IS NOT NULL AND start_time_ms IS NULL AND requeue_count = 0;
        CREATE INDEX jobs_purge_ran ON jobs (end_time_ms, id) WHERE purged_ms IS NULL AND end_time_ms IS NOT NULL AND (start_time_ms IS NOT NULL OR requeue_count > 0);
      `);
    },
  },
  {
    version: 9,
    description: "an array's tasks after the first store no script text of their own (they share the first task's): older versions, which would fail them at start-up, refuse the file",
    up: () => {
      // Nothing to change in the tables: the version alone keeps an older Taras from reading such tasks as invalid.
    },
  },
  {
    version: 10,
    description: "accounting: an array task's place in its array and its task id on its row (sacct's JobID 12_3, sacct -j 12 for every task)",
    up: (db) => {
      db.exec(`
        -- The array's id is its first task's: id - array_index (the index, not the id: a row is inserted before SQLite gives its id).
        ALTER TABLE jobs ADD COLUMN array_index INTEGER;    -- null: not an array task
        ALTER TABLE jobs ADD COLUMN array_task_id INTEGER;
        -- From the submitted event's request.array {taskId, index}, which the purge keeps. A payload that is no
        -- JSON (damaged) is passed over, as the purge passes it: json_type would fail the migration, and the start.
        UPDATE jobs SET (array_index, array_task_id) = (
          SELECT json_extract(payload, '$.request.array.index'), json_extract(payload, '$.request.array.taskId')
          FROM job_events WHERE job_id = jobs.id AND seq = 1 AND CASE WHEN json_valid(payload)
            THEN json_type(payload, '$.request.array.index') = 'integer' AND json_type(payload, '$.request.array.taskId') = 'integer' END);
        CREATE INDEX jobs_by_array ON jobs (id - array_index) WHERE array_index IS NOT NULL;
      `);
    },
  },
];

export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1].version;

export const schemaVersionOf = (db: Database): number => db.pragma('user_version', { simple: true }) as number;

/**
 * Runs the migrations after the file's version, inside the caller's transaction
 * (the version bump commits with the schema change or not at all).
 * Returns whether any of them asks for a rebuild of the jobs rows.
 */
export function migrate(db: Database, migrations: readonly Migration[] = MIGRATIONS): { from: number; to: number; rebuildRows: boolean } {
  const from = schemaVersionOf(db);
  let rebuildRows = false;
  let to = from;
  for (const migration of migrations) {
    if (migration.version <= from) continue;
    if (migration.version !== to + 1) throw new Error(`migrations must be numbered 1, 2, ... without gaps: ${to} is followed by ${migration.version}`);
    migration.up(db);
    db.pragma(`user_version = ${migration.version}`);
    rebuildRows ||= migration.rebuildRows === true;
    to = migration.version;
  }
  return { from, to, rebuildRows };
}
