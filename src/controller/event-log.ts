// The controller's event log (seed 000 3.2.4): one JSON line per event of the
// kinds cluster.toml asks for (`event_log_kinds`), written through pino to
// `event_log`, and rotated by size (`event_log_max_size`): FILE becomes
// FILE.1, FILE.1 becomes FILE.2, ... up to `event_log_keep` old files.
// Job events come from the store once committed; startup, shutdown and
// errors from the daemon.

import { chmodSync, closeSync, existsSync, lstatSync, openSync, readSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import pino, { type Logger } from 'pino';
import type { EventKind, EventLogSettings } from '../config/cluster.js';
import type { JobRecord, StoredJobEvent } from '../store/events.js';
import { isoOrNull } from '../api/durations.js';

const iso = isoOrNull;

/** The time limit a job asked for, in seconds (null: unlimited). */
const limitOf = (record: JobRecord): number | null => (typeof record.request.timeLimitSeconds === 'number' ? record.request.timeLimitSeconds : null);

/** What the event log says of a job event: its kind and fields, or null for events it does not record (planned, held...). */
export function jobEntry(stored: StoredJobEvent, record: JobRecord): { kind: EventKind; fields: Record<string, unknown> } | null {
  const { event } = stored;
  const base = { jobId: stored.jobId, time: iso(stored.timeMs), user: record.user };
  const limit = limitOf(record);
  switch (event.type) {
    case 'submitted': {
      const request = record.request;
      return {
        kind: 'submit',
        fields: {
          ...base, name: record.name, script: record.scriptPath, partition: record.partition, nodes: request.nodes ?? null,
          ntasks: request.ntasks ?? null, cpusPerTask: request.cpusPerTask ?? null, timeLimitSeconds: limit,
          interactive: request.interactive ?? false, deadline: request.deadline ?? null,
          checkpointIntervalSeconds: request.checkpointInterval ?? null, checkpointDurationSeconds: request.checkpointDuration ?? null,
        },
      };
    }
    case 'started':
      return {
        kind: 'start',
        fields: { ...base, nodes: event.nodes, restart: record.requeueCount > 0, promisedStart: iso(record.plannedStartMs),
          estimatedEnd: limit === null ? null : iso(stored.timeMs + limit * 1000) },
      };
    case 'checkpointed':
      return { kind: 'checkpoint', fields: { ...base, final: event.by === 'exit' } };
    case 'ended':
      // A job that never started was removed from the queue; one that ran finished (or was killed).
      if (record.startTimeMs === null) return { kind: 'remove', fields: { ...base, state: event.state, reason: event.reason ?? null } };
      return {
        kind: 'finish',
        fields: {
          ...base, state: event.state, exitCode: event.exitCode, signal: event.signal ?? null, reason: event.reason ?? null,
          start: iso(record.startTimeMs), end: iso(stored.timeMs), timeLimitSeconds: limit, runSeconds: (stored.timeMs - record.startTimeMs) / 1000,
          usage: event.usage ?? null,
        },
      };
    case 'moved':
      // Seed 000 3.2.4: the moved job, the job it was moved after (0: the front), and when.
      return { kind: 'move', fields: { ...base, after: event.after, by: event.by ?? 'user' } };
    default:
      return null;
  }
}

const EVENT_LOG_MODE = 0o600;

/** A refusal of `event_log`'s file, in one line with its fix: the controller does not start. */
export class EventLogError extends Error {}

/** How much of an existing file is read to tell whether it is an event log. */
const FIRST_BYTES = 64 * 1024;

/** How every entry of the log begins (pino writes its level, then its time): what a file of its own starts with. */
const ENTRY_START = /^\{"level":\d+,"time":"/;

/**
 * Whether a file starts as the log does: with an entry's beginning (pino's `{"level":N,"time":"`). The first line
 * itself need not be whole: a startup entry listing 20,000 jobs is over 100 kB, and a crash can cut one short.
 * NUL bytes before it (a file the disk gave back zeroed after a power loss) are passed over. The log is appended
 * to, chmodded and rotated away by name: a file that is not one (the database, a key, anyone's file of root's)
 * must never be taken for it.
 */
function isEventLogFile(path: string): boolean {
  const buffer = Buffer.alloc(FIRST_BYTES);
  const fd = openSync(path, 'r');
  let length: number;
  try {
    length = readSync(fd, buffer, 0, FIRST_BYTES, 0);
  } finally {
    closeSync(fd);
  }
  let from = 0;
  while (from < length && buffer[from] === 0) from++;
  return from === length || ENTRY_START.test(buffer.subarray(from, length).toString('latin1'));
}

/**
 * The controller (root, usually) writes, renames and reopens the event log by
 * name: its folder must be one no other user can write to (else a user could
 * put a link there to a file of root's, which the log would then append to
 * and chmod), and the file and its rotated copies (FILE.1 ... FILE.keep), if
 * there, regular files of ours that are event logs (else the log would append
 * to any file of root's named in cluster.toml, such as the database, and
 * rotate it away). Throws the one line saying which and what to do.
 */
export function checkEventLogPath(settings: Pick<EventLogSettings, 'path' | 'keep'>): void {
  const { path, keep } = settings;
  const euid = process.geteuid?.() ?? 0;
  // The nearest folder that exists (pino makes the rest, as ours).
  let folder = dirname(path);
  while (!existsSync(folder) && dirname(folder) !== folder) folder = dirname(folder);
  const where = statSync(folder);
  if ((where.uid !== euid && where.uid !== 0) || (where.mode & 0o022) !== 0) {
    throw new EventLogError(`event log ${path}: its folder ${folder} may be written by other users (owner uid ${where.uid}, mode ${(where.mode & 0o7777).toString(8)}), `
      + 'who could put a link there to another file: set event_log in cluster.toml to a file in a folder only you can write, such as the data folder');
  }
  for (const file of [path, ...Array.from({ length: keep }, (_, index) => `${path}.${index + 1}`)]) {
    let stats;
    try {
      stats = lstatSync(file);
    } catch {
      continue; // not there yet: made ours, 0600
    }
    const problem = stats.isSymbolicLink() ? 'a symbolic link' : !stats.isFile() ? 'not a regular file' : stats.uid !== euid ? `owned by uid ${stats.uid}`
      : stats.size > 0 && !isEventLogFile(file) ? 'not an event log (it does not begin with one of the log\'s entries)' : null;
    if (problem !== null) {
      throw new EventLogError(`event log ${file} is ${problem}: the log is written, rotated and removed by name only as a file of its own; `
        + 'set event_log in cluster.toml to a new file name, or move this file aside');
    }
  }
}

/** A size-rotated file under pino (sync writes: an entry is on its way to the disk when record returns). */
export class EventLog {
  private readonly destination: ReturnType<typeof pino.destination>;
  private readonly logger: Logger;
  private readonly kinds: ReadonlySet<EventKind>;
  private size: number;

  constructor(private readonly settings: EventLogSettings, private readonly complain: (line: string) => void = () => {}) {
    this.kinds = new Set(settings.kinds);
    // Owner only, as the database: entries name users' jobs, scripts and why they ended. A file
    // left by an older Taras (0644) is narrowed; rotated files keep the mode.
    checkEventLogPath(settings);
    try {
      this.destination = pino.destination({ dest: settings.path, sync: true, mkdir: true, mode: EVENT_LOG_MODE });
      chmodSync(settings.path, EVENT_LOG_MODE);
      this.size = statSync(settings.path).size; // the synchronous destination has just opened (or created) it
    } catch (error) {
      throw new EventLogError(`event log ${settings.path}: cannot open it (${(error as Error).message}): set event_log in cluster.toml to a file in a folder you can write, such as the data folder`);
    }
    const counting = {
      write: (line: string) => {
        this.destination.write(line);
        this.size += Buffer.byteLength(line);
        if (this.size >= this.settings.maxBytes) this.rotate();
      },
    };
    this.logger = pino({ base: undefined, timestamp: pino.stdTimeFunctions.isoTime, messageKey: 'message' }, counting);
  }

  wants(kind: EventKind): boolean {
    return this.kinds.has(kind);
  }

  /** The first write that failed (a full disk): said once through `complain`, never thrown at the caller. */
  failure: Error | null = null;

  record(kind: EventKind, fields: Record<string, unknown>, message = kind): void {
    if (!this.kinds.has(kind)) return;
    try {
      this.logger[kind === 'error' ? 'error' : 'info']({ kind, ...fields }, message);
    } catch (error) {
      if (this.failure === null) this.complain(`event log ${this.settings.path}: cannot write (${(error as Error).message}); entries are lost until it can`);
      this.failure ??= error as Error;
    }
  }

  /** The listener for Store.committedListeners. */
  readonly onJobEvent = (stored: StoredJobEvent, record: JobRecord): void => {
    const entry = jobEntry(stored, record);
    if (entry !== null) this.record(entry.kind, entry.fields);
  };

  private rotate(): void {
    const { path, keep } = this.settings;
    if (keep === 0) rmSync(path, { force: true });
    for (let index = keep - 1; index >= 1; index--) if (existsSync(`${path}.${index}`)) renameSync(`${path}.${index}`, `${path}.${index + 1}`);
    if (keep > 0) renameSync(path, `${path}.1`);
    this.destination.reopen();
    this.size = 0;
  }

  close(): void {
    this.destination.flushSync();
    this.destination.end();
  }
}
