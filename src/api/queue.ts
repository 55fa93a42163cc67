// `GET /queue`: what `taras queue` shows, in the order it shows it, as
// parallel columns with the strings interned once and run-length encoded, so
// that 50,000 similar jobs travel as kilobytes. Times are seconds after a base
// on the wire and milliseconds in QueueRow; `GET /jobs` and every `--json`
// keep the full vocabulary of types.ts. The controller packs its records
// straight into runs (controller/views.ts `apiQueue` with QueuePacker);
// `queueRowOf`/`sortQueue`/`packRows` build the same from ApiJobs, through
// the same order (queueOrderOf) and the same packer. `queueSegments` reads
// the answer without unpacking it (how `taras queue` draws it);
// `unpackQueue` turns it back into plain columns.
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
  /** The job type's letter (N normal, P priority, I interactive); absent: N. */
  type?: string;
  /** A priority job's deadline (ms); absent or null: none. */
  deadline?: number | null;
  /** A job array's task: the id shown (`12_3`). */
  label?: string;
  /** A pending job held back (Argonne's spq): h held by its user, H by an administrator, P paused; absent: not held. */
  hold?: string;
  /** With reasons=1 only: why it waits (or why it ended), as GET /jobs says; null: none. */
  reason?: string | null;
}

/** The hold mark of a pending job from its reason (Slurm's JobHeldUser, JobHeldAdmin; Taras's Paused); null: not held. */
export const holdMark = (reason: string | null | undefined): string | null =>
  (reason === 'JobHeldUser' ? 'h' : reason === 'JobHeldAdmin' ? 'H' : reason === 'Paused' ? 'P' : null);

/** The letter `taras queue` shows for a job type. */
export const typeLetter = (type: string | undefined): string => (type === 'priority' ? 'P' : type === 'interactive' ? 'I' : 'N');

/** The type column's values on the wire: the index of the letter here (not interned: a queue of normal jobs sends no strings for it). */
export const TYPE_LETTERS = ['N', 'P', 'I'] as const;

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
  /** Only when some job is not normal: the type letter's index in TYPE_LETTERS, and the deadline (seconds after timeBase, null: none). */
  type?: number[];
  deadline?: (number | null)[];
  /** Only when some row is a job array's: the string shown as its id (`12_3`, `12_[4-15%4]` for its pending tasks folded), null for other jobs. */
  label?: (number | null)[];
  /** Only when some job is held: its mark (index in strings: h, H or P), null for the others. */
  hold?: (number | null)[];
  /** With reasons=1 only: each job's reason (index in strings), null for none. */
  reason?: (number | null)[];
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
const enum Group {
  Running = 0,
  Pending = 1,
  Finished = 2,
}

function groupOf(state: JobState): Group {
  if (state === 'PENDING') return Group.Pending;
  if (finishedStates.includes(state)) return Group.Finished;
  return Group.Running;
}

/**
 * The sort keys of the queue's order (queueOrderOf), filled a job at a time by
 * `set` (in as many pieces as the caller likes), then sorted once by `order`.
 */
export class QueueOrderKeys {
  private readonly groups: Uint8Array;
  private readonly keys: Float64Array;
  private readonly ids: Float64Array;

  constructor(readonly length: number) {
    this.groups = new Uint8Array(length);
    this.keys = new Float64Array(length);
    this.ids = new Float64Array(length);
  }

  /** Job `i`'s keys: its state, its (planned) start, when it ended, its id. */
  set(i: number, state: JobState, start: number | null, endTime: number | null, id: number): void {
    const group = groupOf(state);
    const by = group === Group.Finished ? endTime : start;
    this.groups[i] = group;
    this.keys[i] = by === null ? Infinity : by;
    this.ids[i] = id;
  }

  /** The indexes in queue order. */
  order(): number[] {
    const { length: n, groups, keys, ids } = this;
    const order = new Array<number>(n);
    for (let i = 0; i < n; i++) order[i] = i;
    return order.sort((a, b) => groups[a] - groups[b] || (keys[a] === keys[b] ? 0 : keys[a] < keys[b] ? -1 : 1) || ids[a] - ids[b]);
  }
}

/**
 * The queue's order, as indexes into the given columns: running jobs first by
 * start, then pending jobs by planned start (none last), then finished jobs
 * by end; ties by id. Times in any one unit; null for none. The one rule for
 * the controller (GET /queue) and for listings built from ApiJobs.
 */
export function queueOrderOf<T>(items: readonly T[], job: (item: T, index: number) => { state: JobState; start: number | null; endTime: number | null; id: number }): number[] {
  const keys = new QueueOrderKeys(items.length);
  for (let i = 0; i < items.length; i++) {
    const { state, start, endTime, id } = job(items[i], i);
    keys.set(i, state, start, endTime, id);
  }
  return keys.order();
}

/** Rows in queue order (see queueOrderOf). */
export function sortQueue(rows: readonly QueueRow[]): QueueRow[] {
  return queueOrderOf(rows, (row) => row).map((i) => rows[i]);
}

const millis = (iso: string | null): number | null => (iso === null ? null : Date.parse(iso));

/** A row from the full vocabulary (the renderer's tests and any client holding ApiJobs). */
export function queueRowOf(job: ApiJob): QueueRow {
  return {
    id: job.id, user: job.user, state: job.state, partition: job.partition, nodes: job.nodes, nodeCount: job.nodeCount,
    start: millis(job.startTime ?? (job.state === 'PENDING' ? job.plannedStart : null)), end: millis(job.predictedEnd),
    endTime: millis(job.endTime), name: job.name,
    cpus: job.ntasks * job.cpusPerTask, memoryMiB: job.memoryMiB, submit: Date.parse(job.submitTime), limitSeconds: job.timeLimitSeconds,
    workingDir: job.workingDir ?? undefined,
    type: typeLetter(job.type), deadline: millis(job.deadline ?? null),
    ...(job.arrayJobId === undefined || job.arrayTaskId === undefined ? {} : { label: `${job.arrayJobId}_${job.arrayTaskId}` }),
    ...(job.state === 'PENDING' && holdMark(job.reason) !== null ? { hold: holdMark(job.reason)! } : {}),
  };
}

/** Epoch milliseconds as seconds after `base` (epoch seconds). */
export const toOffset = (ms: number | null, base: number): number | null => (ms === null ? null : Math.floor(ms / 1000) - base);

/** Rows (in queue order, times in ms) packed as the controller packs its records (what `GET /queue` answers). */
export function packRows(status: ApiClusterStatus, rows: readonly QueueRow[], long: boolean): ApiQueue {
  const base = Math.floor(Date.parse(status.now) / 1000);
  const packer = new QueuePacker(status, base, long);
  for (const row of rows) {
    packer.add(row.id, row.user, row.state, row.partition, row.nodes.join(','), row.nodeCount,
      toOffset(row.start, base), toOffset(row.end, base), toOffset(row.endTime, base), row.name, row.type, toOffset(row.deadline ?? null, base), row.label ?? null, row.hold ?? null);
    if (long) packer.addLong(row.cpus ?? 0, row.memoryMiB ?? null, toOffset(row.submit ?? null, base) ?? 0, row.limitSeconds ?? null, row.workingDir ?? '');
  }
  return packer.finish();
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
    /** Only when some job is not normal (a priority or interactive job): the type letter (its index in TYPE_LETTERS) and the deadline (seconds after timeBase, or null). */
    type?: Runs; deadline?: Runs;
    /** Only when some row is a job array's: the id shown (index in strings: `12_3`, `12_[4-15%4]`), null for other jobs. */
    label?: Runs;
    /** Only when some job is held: its mark (index in strings: h user hold, H administrator hold, P paused), null for the others. */
    hold?: Runs;
    /** With reasons=1 only (squeue's %R): each job's reason (index in strings), null for none. */
    reason?: Runs;
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
  private readonly type = new RunColumn();
  private readonly deadline = new RunColumn();
  private readonly label = new RunColumn();
  private labelled = false;
  private readonly hold = new RunColumn();
  private holding = false;
  /** Whether a job that is not normal was added: only then do the type and deadline columns travel. */
  private typed = false;
  private readonly long: { cpus: RunColumn; memoryMiB: RunColumn; submit: DifferenceColumn; limitSeconds: RunColumn; workingDir: RunColumn } | null;
  private readonly reason: RunColumn | null;

  /** @param reasons whether each job's reason travels too (addReason after each add) */
  constructor(readonly status: ApiClusterStatus, readonly timeBase: number, long: boolean, reasons = false) {
    this.long = long ? { cpus: new RunColumn(), memoryMiB: new RunColumn(), submit: new DifferenceColumn(), limitSeconds: new RunColumn(), workingDir: new RunColumn() } : null;
    this.reason = reasons ? new RunColumn() : null;
  }

  /** The reason of the job just added (only for a packer made with `reasons`). */
  addReason(reason: string | null): void {
    this.reason!.push(reason === null ? null : this.intern(reason));
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

  /** One job; `start`, `end`, `endTime`, `deadline` in seconds after timeBase; `nodes` the allocated nodes joined by commas; `type` its letter (N, P, I). */
  add(id: number, user: string, state: string, partition: string, nodes: string, nodeCount: number,
    start: number | null, end: number | null, endTime: number | null, name: string, type = 'N', deadline: number | null = null, label: string | null = null,
    hold: string | null = null): void {
    if (type !== 'N' || deadline !== null) this.typed = true;
    this.type.push(Math.max(0, (TYPE_LETTERS as readonly string[]).indexOf(type)));
    this.deadline.push(deadline);
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
    // A job array's row: the id shown (`12_3`, `12_[4-15%4]`).
    if (label !== null) this.labelled = true;
    this.label.push(label === null ? null : this.intern(label));
    if (hold !== null) this.holding = true;
    this.hold.push(hold === null ? null : this.intern(hold));
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
    if (this.typed) {
      columns.type = this.type.runs;
      columns.deadline = this.deadline.runs;
    }
    if (this.labelled) columns.label = this.label.runs;
    if (this.holding) columns.hold = this.hold.runs;
    if (this.reason) columns.reason = this.reason.runs;
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
  const packer = new QueuePacker(table.status, table.timeBase, table.long !== undefined, table.reason !== undefined);
  const text = table.strings;
  for (const string of text) packer.intern(string); // the same indexes as the table's
  for (let i = 0; i < table.id.length; i++) {
    packer.add(table.id[i], text[table.user[i]], text[table.state[i]], text[table.partition[i]], text[table.nodes[i]], table.nodeCount[i],
      table.start[i], table.end[i], table.endTime[i], text[table.name[i]], TYPE_LETTERS[table.type?.[i] ?? 0], table.deadline?.[i] ?? null,
      table.label?.[i] == null ? null : text[table.label[i]!], table.hold?.[i] == null ? null : text[table.hold[i]!]);
    const long = table.long;
    if (long) packer.addLong(long.cpus[i], long.memoryMiB[i], long.submit[i], long.limitSeconds[i], text[long.workingDir[i]]);
    if (table.reason) packer.addReason(table.reason[i] === null ? null : text[table.reason[i]!]);
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
  if (columns.type !== undefined) {
    table.type = numbers(column('type'));
    table.deadline = column('deadline');
  }
  if (columns.label !== undefined) table.label = column('label');
  if (columns.hold !== undefined) table.hold = column('hold');
  if (columns.reason !== undefined) table.reason = column('reason');
  if (columns.cpus !== undefined) {
    table.long = {
      cpus: numbers(column('cpus')), memoryMiB: column('memoryMiB'), submit: numbers(sums(column('submit'))),
      limitSeconds: column('limitSeconds'), workingDir: numbers(column('workingDir')),
    };
  }
  return table;
}

/** The columns of an ApiQueue in the order QueueSegment indexes them. */
export const SEGMENT_COLUMNS = [
  'id', 'user', 'state', 'partition', 'nodes', 'nodeCount', 'start', 'length', 'endTime', 'name',
  'cpus', 'memoryMiB', 'submit', 'limitSeconds', 'workingDir', 'type', 'deadline', 'label', 'hold', 'reason',
] as const satisfies readonly (keyof ApiQueue['columns'])[];

/** The columns that travel as differences from the previous row: within a run they grow by the run's value per row. */
const DIFFERENCE_COLUMNS: ReadonlySet<string> = new Set(['id', 'start', 'submit']);

/**
 * Consecutive rows over which every column stays within one of its runs:
 * each column's value at the segment's first row (`first`, indexed as
 * SEGMENT_COLUMNS; null for none) and what it grows by per row (`step`: only
 * id, start and submit grow; 0 for the others). A queue of 50,000 similar
 * jobs is a few thousand segments, so a renderer can make each cell once per
 * segment instead of once per row.
 */
export interface QueueSegment {
  rows: number;
  first: (number | null)[];
  step: number[];
}

/** The columns only a `long=1` answer has: all of them or none. */
const LONG_COLUMNS: ReadonlySet<string> = new Set(['cpus', 'memoryMiB', 'submit', 'limitSeconds', 'workingDir']);

/** The columns that travel only when some job needs them (not normal, an array's, held) or when asked (reasons=1): absent, all null. */
const TYPE_COLUMNS: ReadonlySet<string> = new Set(['type', 'deadline', 'label', 'hold', 'reason']);

/** An ApiQueue as segments, without unpacking it; a malformed answer throws, naming the column. Without `long=1`, the long columns are all null. */
export function queueSegments(api: ApiQueue): QueueSegment[] {
  const { count } = api;
  if (!Number.isSafeInteger(count) || count < 0) throw new Error(`GET /queue: count ${String(count)} is not a number of jobs`);
  const long = api.columns.cpus !== undefined;
  const m = SEGMENT_COLUMNS.length;
  const runs = SEGMENT_COLUMNS.map((name) => {
    const column = api.columns[name];
    if (column !== undefined) return column;
    if ((LONG_COLUMNS.has(name) && !long) || TYPE_COLUMNS.has(name)) return count > 0 ? [null, count] : [];
    throw new Error(`GET /queue: column ${name} is missing`);
  });
  const difference = SEGMENT_COLUMNS.map((name) => DIFFERENCE_COLUMNS.has(name));
  const next = new Array<number>(m).fill(0);
  const left = new Array<number>(m).fill(0);
  const sum = new Array<number>(m).fill(0);
  const segments: QueueSegment[] = [];
  for (let row = 0; row < count;) {
    let rows = count - row;
    for (let c = 0; c < m; c++) {
      while (left[c] === 0) {
        if (next[c] >= runs[c].length) throw new Error(`GET /queue: column ${SEGMENT_COLUMNS[c]} has ${row} values, expected ${count}`);
        const repeat = runs[c][next[c] + 1];
        if (typeof repeat !== 'number' || !Number.isSafeInteger(repeat) || repeat < 0) throw new Error(`GET /queue: column ${SEGMENT_COLUMNS[c]} has a run of ${String(repeat)} values`);
        left[c] = repeat;
        next[c] += 2;
      }
      if (left[c] < rows) rows = left[c];
    }
    const first = new Array<number | null>(m);
    const step = new Array<number>(m);
    for (let c = 0; c < m; c++) {
      const value = runs[c][next[c] - 2];
      if (difference[c] && value !== null) {
        first[c] = sum[c] + value;
        step[c] = value;
        sum[c] += value * rows;
      } else {
        first[c] = value;
        step[c] = 0;
      }
      left[c] -= rows;
    }
    segments.push({ rows, first, step });
    row += rows;
  }
  for (let c = 0; c < m; c++) {
    // Runs of no values at the end are harmless (the packer writes none).
    while (next[c] < runs[c].length && runs[c][next[c] + 1] === 0) next[c] += 2;
    if (left[c] !== 0 || next[c] < runs[c].length) throw new Error(`GET /queue: column ${SEGMENT_COLUMNS[c]} has more than ${count} values`);
  }
  return segments;
}
