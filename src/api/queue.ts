// `GET /queue`: what `taras queue` shows, in the order it shows it, as
// parallel columns with the strings interned once and run-length encoded, so
// that 50,000 similar jobs travel as kilobytes. Times are seconds after a base
// on the wire and milliseconds in QueueRow; `GET /jobs` and every `--json`
// keep the full vocabulary of types.ts. The controller builds the table from
// its records directly into runs (controller/views.ts `apiQueue` with QueuePacker);
// `queueRowOf`/`sortQueue`/`encodeQueue` build the same from ApiJobs (the
// renderer's tests, and test/controller-daemon.test.ts checks both agree).
// No Node imports.

import { finishedStates, type ApiClusterStatus, type ApiJob, type JobState } from './types.js';

/** One job as the queue table needs it. */
export interface QueueRow {
  id: number;
  user: string;
  state: JobState;
  partition: string;
  /** Allocated nodes, [] while pending. */
  nodes: string[];
  nodeCount: number;
  /** Actual start, or the planned start of a pending job (ms), null when none. */
  start: number | null;
  /** Predicted end (start + limit) of a job that has not ended (ms), else null. */
  end: number | null;
  /** When a finished job ended (ms): finished jobs are listed by it. */
  endTime: number | null;
  name: string;
  // --long only (absent otherwise):
  cpus?: number;
  memoryMiB?: number | null;
  submit?: number;
  limitSeconds?: number | null;
  workingDir?: string;
}

/**
 * The queue as parallel columns, one entry per job in queue order, so 50,000
 * jobs are a handful of arrays of small numbers rather than 50,000 objects.
 * String columns hold indexes into `strings`; times are seconds after
 * `timeBase` (negative: before). Travels run-length encoded (ApiQueue).
 */
export interface QueueTable {
  status: ApiClusterStatus;
  /**
   * Epoch seconds that every time column counts from (the controller's now):
   * small offsets stay small integers in both JavaScript engines and the JSON.
   */
  timeBase: number;
  strings: string[];
  id: number[];
  user: number[];
  state: number[];
  partition: number[];
  /** Index of the allocated nodes joined by commas ('' while pending). */
  nodes: number[];
  nodeCount: number[];
  start: (number | null)[];
  end: (number | null)[];
  endTime: (number | null)[];
  name: number[];
  /** With long=1 only. */
  long?: {
    cpus: number[];
    memoryMiB: (number | null)[];
    submit: number[];
    limitSeconds: (number | null)[];
    workingDir: number[];
  };
}

/** Queue sections in display order. */
export const enum Group {
  Running = 0,
  Pending = 1,
  Finished = 2,
}

export function groupOf(state: JobState): Group {
  if (state === 'PENDING') return Group.Pending;
  if (finishedStates.includes(state)) return Group.Finished;
  return Group.Running;
}

function sortKey(row: QueueRow, group: Group): number {
  const by = group === Group.Finished ? row.endTime : row.start;
  return by === null ? Infinity : by;
}

/** Running first by start, then pending by planned start (none last), then finished by end; ties by id. */
export function sortQueue(rows: QueueRow[]): QueueRow[] {
  const keyed = rows.map((row) => {
    const group = groupOf(row.state);
    return { row, group, key: sortKey(row, group) };
  });
  keyed.sort((a, b) => a.group - b.group || (a.key === b.key ? 0 : a.key < b.key ? -1 : 1) || a.row.id - b.row.id);
  return keyed.map(({ row }) => row);
}

const millis = (iso: string | null): number | null => (iso === null ? null : Date.parse(iso));

/** A row from the full vocabulary (the renderer's tests and any client holding ApiJobs). */
export function queueRowOf(job: ApiJob): QueueRow {
  return {
    id: job.id, user: job.user, state: job.state, partition: job.partition, nodes: job.nodes, nodeCount: job.nodeCount,
    start: millis(job.startTime ?? (job.state === 'PENDING' ? job.plannedStart : null)), end: millis(job.predictedEnd),
    endTime: millis(job.endTime), name: job.name,
    cpus: job.ntasks * job.cpusPerTask, memoryMiB: job.memoryMiB, submit: Date.parse(job.submitTime), limitSeconds: job.timeLimitSeconds,
    workingDir: job.workingDir,
  };
}

/** Epoch milliseconds as seconds after `base` (epoch seconds). */
export const toOffset = (ms: number | null, base: number): number | null => (ms === null ? null : Math.floor(ms / 1000) - base);

/** Back: an offset after `base` as epoch milliseconds. */
export const fromOffset = (offset: number | null, base: number): number | null => (offset === null ? null : (base + offset) * 1000);

/** Builds an ApiQueue one job at a time (in queue order), interning strings. */
export class QueueEncoder {
  readonly queue: QueueTable;
  private readonly indexOf = new Map<string, number>();

  constructor(status: ApiClusterStatus, long: boolean) {
    this.queue = {
      status, timeBase: Math.floor(Date.parse(status.now) / 1000), strings: [], id: [], user: [], state: [], partition: [], nodes: [], nodeCount: [], start: [], end: [], endTime: [], name: [],
      ...(long ? { long: { cpus: [], memoryMiB: [], submit: [], limitSeconds: [], workingDir: [] } } : {}),
    };
  }

  /**
   * An interner for one column: neighbours in the queue mostly share user,
   * state, partition and name, so a repeat of the previous value skips the map.
   */
  column(): (text: string) => number {
    let last: string | undefined;
    let lastIndex = -1;
    return (text) => {
      if (text !== last) {
        last = text;
        lastIndex = this.intern(text);
      }
      return lastIndex;
    };
  }

  /** The index of `text` in strings (added if new). Public for encoders that fill the columns themselves. */
  intern(text: string): number {
    let index = this.indexOf.get(text);
    if (index === undefined) {
      index = this.queue.strings.length;
      this.queue.strings.push(text);
      this.indexOf.set(text, index);
    }
    return index;
  }

  /** Appends a row (times in ms; the --long fields are used only when the encoder is long). */
  add(row: QueueRow): void {
    const q = this.queue;
    q.id.push(row.id);
    q.user.push(this.intern(row.user));
    q.state.push(this.intern(row.state));
    q.partition.push(this.intern(row.partition));
    q.nodes.push(this.intern(row.nodes.length === 0 ? '' : row.nodes.join(',')));
    q.nodeCount.push(row.nodeCount);
    q.start.push(toOffset(row.start, q.timeBase));
    q.end.push(toOffset(row.end, q.timeBase));
    q.endTime.push(toOffset(row.endTime, q.timeBase));
    q.name.push(this.intern(row.name));
    if (q.long) {
      q.long.cpus.push(row.cpus ?? 0);
      q.long.memoryMiB.push(row.memoryMiB ?? null);
      q.long.submit.push(toOffset(row.submit ?? null, q.timeBase) ?? 0);
      q.long.limitSeconds.push(row.limitSeconds ?? null);
      q.long.workingDir.push(this.intern(row.workingDir ?? ''));
    }
  }
}

/** Rows (in queue order) to the wire. */
export function encodeQueue(status: ApiClusterStatus, rows: readonly QueueRow[], long: boolean): QueueTable {
  const encoder = new QueueEncoder(status, long);
  for (const row of rows) encoder.add(row);
  return encoder.queue;
}

/**
 * A column run-length encoded: `[value, repeat, value, repeat, ...]`. A long
 * queue is mostly runs (one user's array of jobs: same user, state,
 * partition, name, limit), so 50,000 jobs travel as kilobytes.
 */
export type Runs = (number | null)[];

/** The answer of `GET /queue[?user=U][&state=S,...][&long=1]`: a QueueTable with its columns as runs. */
export interface ApiQueue {
  status: ApiClusterStatus;
  timeBase: number;
  strings: string[];
  count: number;
  /**
   * Every column as Runs. `id` and `start` hold the difference from the
   * previous row's value (null starts are kept as null and skipped);
   * `length` is `end - start` (null when there is no predicted end).
   */
  columns: {
    id: Runs; user: Runs; state: Runs; partition: Runs; nodes: Runs; nodeCount: Runs; start: Runs; length: Runs; endTime: Runs; name: Runs;
    cpus?: Runs; memoryMiB?: Runs; submit?: Runs; limitSeconds?: Runs; workingDir?: Runs;
  };
}

function fromRuns(runs: Runs, count: number, what: string): (number | null)[] {
  const values = new Array<number | null>(count);
  let at = 0;
  for (let k = 0; k < runs.length; k += 2) {
    const value = runs[k];
    const end = at + (runs[k + 1] as number);
    if (!(end <= count)) throw new Error(`GET /queue: column ${what} has more than ${count} values`);
    while (at < end) values[at++] = value;
  }
  if (at !== count) throw new Error(`GET /queue: column ${what} has ${at} values, expected ${count}`);
  return values;
}

function sums(differencesOf: readonly (number | null)[]): (number | null)[] {
  let previous = 0;
  return differencesOf.map((difference) => (difference === null ? null : (previous += difference)));
}

/** One column's runs, built a value at a time. */
class RunColumn {
  readonly runs: Runs = [];
  private last: number | null = null;

  push(value: number | null): void {
    const runs = this.runs;
    if (runs.length > 0 && value === this.last) (runs[runs.length - 1] as number)++;
    else {
      runs.push(value, 1);
      this.last = value;
    }
  }
}

/** Runs of the differences from the previous non-null value (nulls kept). */
class DifferenceColumn extends RunColumn {
  private previous = 0;

  override push(value: number | null): void {
    if (value === null) return super.push(null);
    super.push(value - this.previous);
    this.previous = value;
  }
}

/**
 * Builds an ApiQueue a job at a time, in queue order, straight into runs (no
 * 50,000-entry arrays on the way): what the controller answers GET /queue with.
 * Strings are interned; times are epoch seconds made relative to `timeBase`
 * by the caller.
 */
export class QueuePacker {
  private readonly strings: string[] = [];
  private readonly indexOf = new Map<string, number>();
  private count = 0;
  private readonly id = new DifferenceColumn();
  private readonly user = new RunColumn();
  private readonly state = new RunColumn();
  private readonly partition = new RunColumn();
  private readonly nodes = new RunColumn();
  private readonly nodeCount = new RunColumn();
  private readonly start = new DifferenceColumn();
  private readonly length = new RunColumn();
  private readonly endTime = new RunColumn();
  private readonly name = new RunColumn();
  private readonly long: { cpus: RunColumn; memoryMiB: RunColumn; submit: DifferenceColumn; limitSeconds: RunColumn; workingDir: RunColumn } | null;

  constructor(readonly status: ApiClusterStatus, readonly timeBase: number, long: boolean) {
    this.long = long ? { cpus: new RunColumn(), memoryMiB: new RunColumn(), submit: new DifferenceColumn(), limitSeconds: new RunColumn(), workingDir: new RunColumn() } : null;
  }

  intern(text: string): number {
    let index = this.indexOf.get(text);
    if (index === undefined) {
      index = this.strings.length;
      this.strings.push(text);
      this.indexOf.set(text, index);
    }
    return index;
  }

  /** One job; `start`, `end`, `endTime` in seconds after timeBase; `nodes` the allocated nodes joined by commas. */
  add(id: number, user: string, state: string, partition: string, nodes: string, nodeCount: number,
    start: number | null, end: number | null, endTime: number | null, name: string): void {
    this.count++;
    this.id.push(id);
    this.user.push(this.intern(user));
    this.state.push(this.intern(state));
    this.partition.push(this.intern(partition));
    this.nodes.push(this.intern(nodes));
    this.nodeCount.push(nodeCount);
    this.start.push(start);
    this.length.push(end === null || start === null ? null : end - start);
    this.endTime.push(endTime);
    this.name.push(this.intern(name));
  }

  /** The --long fields of the job just added (only for a packer made with `long`). */
  addLong(cpus: number, memoryMiB: number | null, submit: number, limitSeconds: number | null, workingDir: string): void {
    const long = this.long!;
    long.cpus.push(cpus);
    long.memoryMiB.push(memoryMiB);
    long.submit.push(submit);
    long.limitSeconds.push(limitSeconds);
    long.workingDir.push(this.intern(workingDir));
  }

  finish(): ApiQueue {
    const columns: ApiQueue['columns'] = {
      id: this.id.runs, user: this.user.runs, state: this.state.runs, partition: this.partition.runs, nodes: this.nodes.runs,
      nodeCount: this.nodeCount.runs, start: this.start.runs, length: this.length.runs, endTime: this.endTime.runs, name: this.name.runs,
    };
    if (this.long) {
      columns.cpus = this.long.cpus.runs;
      columns.memoryMiB = this.long.memoryMiB.runs;
      columns.submit = this.long.submit.runs;
      columns.limitSeconds = this.long.limitSeconds.runs;
      columns.workingDir = this.long.workingDir.runs;
    }
    return { status: this.status, timeBase: this.timeBase, strings: this.strings, count: this.count, columns };
  }
}

/** A QueueTable for the wire (the same encoding as QueuePacker, from arrays). */
export function packQueue(table: QueueTable): ApiQueue {
  const packer = new QueuePacker(table.status, table.timeBase, table.long !== undefined);
  const text = table.strings;
  for (const string of text) packer.intern(string); // the same indexes as the table's
  for (let i = 0; i < table.id.length; i++) {
    packer.add(table.id[i], text[table.user[i]], text[table.state[i]], text[table.partition[i]], text[table.nodes[i]], table.nodeCount[i],
      table.start[i], table.end[i], table.endTime[i], text[table.name[i]]);
    const long = table.long;
    if (long) packer.addLong(long.cpus[i], long.memoryMiB[i], long.submit[i], long.limitSeconds[i], text[long.workingDir[i]]);
  }
  return packer.finish();
}

/** Back from the wire; a malformed answer throws, naming the column. */
export function unpackQueue(api: ApiQueue): QueueTable {
  const { count, columns } = api;
  const column = (name: keyof ApiQueue['columns']): (number | null)[] => fromRuns(columns[name] ?? [], count, name);
  const start = sums(column('start'));
  const length = column('length');
  const numbers = (values: (number | null)[]): number[] => values as number[];
  const table: QueueTable = {
    status: api.status, timeBase: api.timeBase, strings: api.strings,
    id: numbers(sums(column('id'))), user: numbers(column('user')), state: numbers(column('state')), partition: numbers(column('partition')),
    nodes: numbers(column('nodes')), nodeCount: numbers(column('nodeCount')), start,
    end: length.map((span, i) => (span === null || start[i] === null ? null : start[i]! + span)), endTime: column('endTime'), name: numbers(column('name')),
  };
  if (columns.cpus !== undefined) {
    table.long = {
      cpus: numbers(column('cpus')), memoryMiB: column('memoryMiB'), submit: numbers(sums(column('submit'))),
      limitSeconds: column('limitSeconds'), workingDir: numbers(column('workingDir')),
    };
  }
  return table;
}
