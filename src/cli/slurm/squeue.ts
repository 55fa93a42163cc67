// `squeue`: Slurm's job listing, from the controller's GET /queue (packed
// columns, with each job's reason; GET /jobs for --json), in Slurm's
// formats (default "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R", -l, --start,
// -o), filters (--me, -u, -j, -t, -p, -n) and sort (-S, default "P,t,-p").
// Priority: Taras has no priority numbers; a job's place in the scheduling
// order stands for it (%Q counts down from the number of jobs listed).

import type { Command } from 'commander';
import type { ApiJob, ApiPlan, JobState } from '../../api/types.js';
import { compressHostlist } from '../../config/hostlist.js';
import { queueOrderOf, queueSegments, SEGMENT_COLUMNS, unpackQueue, type ApiQueue, type QueueSegment } from '../../api/queue.js';
import { parseArrayJobId } from '../../jobspec/array.js';
import { formatLine, namedBy, pad, parseFormat, parseJobStates, slurmDuration, slurmLimit, slurmTime, slurmJobRefs, stateCode } from './format.js';
import { LineChunks, printable } from '../render/text.js';
import { isoOrNull } from '../../api/durations.js';

export const SQUEUE_DEFAULT_FORMAT = '%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R';
export const SQUEUE_LONG_FORMAT = '%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R';
export const SQUEUE_START_FORMAT = '%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R';
/** Ended jobs stay listed this long, as Slurm's controller keeps them (MinJobAge's default). */
export const MIN_JOB_AGE_SECONDS = 300;

const HEADERS: Record<string, string> = {
  i: 'JOBID', A: 'JOBID', j: 'NAME', u: 'USER', t: 'ST', T: 'STATE', M: 'TIME', l: 'TIME_LIMIT', L: 'TIME_LEFT', D: 'NODES',
  R: 'NODELIST(REASON)', P: 'PARTITION', S: 'START_TIME', e: 'END_TIME', C: 'CPUS', N: 'NODELIST', r: 'REASON', Q: 'PRIORITY',
  p: 'PRIORITY', V: 'SUBMIT_TIME', Z: 'WORK_DIR', m: 'MIN_MEMORY', Y: 'SCHEDNODES', a: 'ACCOUNT', q: 'QOS',
};
/** Fields Slurm does not cut to their width (node lists, durations). */
const UNCUT = new Set(['N', 'Y', 'M', 'l', 'L']);
const DEFAULT_STATES: readonly JobState[] = ['PENDING', 'RUNNING', 'SUSPENDED', 'COMPLETING'];

/**
 * One job as squeue needs it: times in epoch ms. Made from GET /queue's
 * packed columns (no per-job ISO strings: 50,000 jobs in a few tens of ms)
 * or from an ApiJob (--json, scontrol).
 */
export interface SqJob {
  id: number;
  /** The id shown: an array task's `12_3`, or its pending tasks folded, `12_[4-15%4]`; null: the id. */
  label: string | null;
  name: string;
  user: string;
  state: JobState;
  partition: string;
  /** Allocated nodes, joined by commas ('' while pending). */
  nodes: string;
  nodeCount: number;
  /** The actual start; null before it. */
  startMs: number | null;
  /** A pending job's planned start; null: none. */
  plannedMs: number | null;
  endMs: number | null;
  predictedEndMs: number | null;
  timeLimitSeconds: number | null;
  submitMs: number;
  cpus: number;
  workingDir: string | null;
  memoryMiB: number | null;
  reason: string | null;
}

const ms = (iso: string | null | undefined): number | null => (iso === null || iso === undefined ? null : Date.parse(iso));

/** A row's id as -j matches it: its own, and for array tasks the array's id and the task ids (folded ones: all of them). */
function arrayPlace(job: SqJob): { id: number; arrayJobId?: number; arrayTaskId?: number; arrayTaskIds?: readonly number[] } {
  const parsed = job.label === null ? undefined : parseArrayJobId(job.label.replace(/%\d+\]$/, ']'));
  if (parsed?.taskIds === undefined) return { id: job.id };
  return { id: job.id, arrayJobId: parsed.id, arrayTaskId: parsed.taskIds[0], arrayTaskIds: parsed.taskIds };
}

/**
 * squeue -j over GET /queue's rows, where an array's pending tasks are one row (12_[4-15]): that row when the
 * array's id is named; a task named by 12_5 or by its own job id on a row of its own (12_5), as Slurm prints
 * it, taken from `tasks` (GET /queue?array=1: every task on its own row; asked for when hidesNamedTask).
 */
export function rowsNamed(rows: readonly SqJob[], refs: readonly (number | string)[], tasks: readonly SqJob[] = []): SqJob[] {
  const named = namedBy(refs);
  const numbers = new Set(refs.filter((ref): ref is number => typeof ref === 'number'));
  // Arrays whose folded row is not named whole: their named tasks come from `tasks`.
  const split = new Set<number>();
  const shown: SqJob[] = [];
  for (const row of rows) {
    const place = arrayPlace(row);
    if (place.arrayJobId !== undefined && place.arrayTaskIds!.length > 1 && !numbers.has(place.arrayJobId)) split.add(place.arrayJobId);
    else if (named(place)) shown.push(row);
  }
  for (const task of tasks) {
    const place = arrayPlace(task);
    if (task.state === 'PENDING' && place.arrayJobId !== undefined && split.has(place.arrayJobId) && named(place)) shown.push(task);
  }
  return shown;
}

/** Whether a folded row (12_[4-15]) may hold a task that `refs` name (12_5, or a job id no other row has): rowsNamed then needs `tasks`. */
export function hidesNamedTask(rows: readonly SqJob[], refs: readonly (number | string)[]): boolean {
  const seen = new Set<number>();
  const folded = new Set<number>();
  for (const row of rows) {
    const place = arrayPlace(row);
    if (place.arrayJobId !== undefined && place.arrayTaskIds!.length > 1) folded.add(place.arrayJobId);
    else seen.add(row.id);
    if (place.arrayJobId !== undefined) seen.add(place.arrayJobId);
  }
  return folded.size > 0 && refs.some((ref) => (typeof ref === 'number' ? !seen.has(ref) : folded.has(parseArrayJobId(ref)?.id ?? -1)));
}

/** An ApiJob as squeue reads it. */
export function sqJobOf(job: ApiJob): SqJob {
  return {
    id: job.id, label: job.arrayJobId === undefined || job.arrayTaskId === undefined ? null : `${job.arrayJobId}_${job.arrayTaskId}`,
    name: job.name, user: job.user, state: job.state, partition: job.partition, nodes: job.nodes.join(','), nodeCount: job.nodeCount,
    startMs: ms(job.startTime), plannedMs: job.state === 'PENDING' ? ms(job.plannedStart) : null, endMs: ms(job.endTime), predictedEndMs: ms(job.predictedEnd),
    timeLimitSeconds: job.timeLimitSeconds, submitMs: Date.parse(job.submitTime), cpus: job.ntasks * job.cpusPerTask, workingDir: job.workingDir,
    memoryMiB: job.memoryMiB, reason: job.reason,
  };
}

/** GET /queue?long=1&reasons=1 as squeue reads it (pending array tasks folded as Slurm folds them). */
export function sqJobsOfQueue(api: ApiQueue): SqJob[] {
  const table = unpackQueue(api);
  const text = table.strings;
  const base = table.timeBase * 1000;
  const at = (offset: number | null): number | null => (offset === null ? null : base + offset * 1000);
  const jobs = new Array<SqJob>(table.id.length);
  for (let i = 0; i < jobs.length; i++) {
    const state = text[table.state[i]] as JobState;
    const start = at(table.start[i]);
    const label = table.label?.[i];
    const reason = table.reason?.[i];
    jobs[i] = {
      id: table.id[i], label: label === null || label === undefined ? null : text[label], name: text[table.name[i]], user: text[table.user[i]], state,
      partition: text[table.partition[i]], nodes: text[table.nodes[i]], nodeCount: table.nodeCount[i],
      startMs: state === 'PENDING' ? null : start, plannedMs: state === 'PENDING' ? start : null, endMs: at(table.endTime[i]), predictedEndMs: at(table.end[i]),
      timeLimitSeconds: table.long?.limitSeconds[i] ?? null, submitMs: base + (table.long?.submit[i] ?? 0) * 1000, cpus: table.long?.cpus[i] ?? 0,
      workingDir: table.long === undefined || text[table.long.workingDir[i]] === '' ? null : text[table.long.workingDir[i]],
      memoryMiB: table.long?.memoryMiB[i] ?? null, reason: reason === null || reason === undefined ? null : text[reason],
    };
  }
  return jobs;
}

/** One job with what squeue derives from the listing: its reason code and priority rank. */
export interface SqueueJob {
  job: SqJob;
  reason: string;
  priority: number;
  schedNodes: string | null;
}

/** Slurm's reason code for a job (the word squeue shows in parentheses). */
export function reasonCode(job: Pick<SqJob, 'state' | 'reason'>, firstPendingOfPartition: boolean): string {
  const text = job.reason ?? '';
  switch (job.state) {
    case 'PENDING': {
      // Taras's own reasons that start with Slurm's word.
      const token = /^(JobHeldUser|JobHeldAdmin|DependencyNeverSatisfied|Dependency|BeginTime|JobArrayTaskLimit|QueuedWorkLimit)\b/.exec(text)?.[1];
      if (token !== undefined) return token;
      if (/depend/i.test(text)) return 'Dependency';
      if (/held by an? admin|admin.*hold/i.test(text)) return 'JobHeldAdmin';
      if (/\bheld\b|\bhold\b/i.test(text)) return 'JobHeldUser';
      if (/begin|not before/i.test(text)) return 'BeginTime';
      return firstPendingOfPartition ? 'Resources' : 'Priority';
    }
    case 'FAILED': return 'NonZeroExitCode';
    case 'TIMEOUT': return 'TimeLimit';
    case 'OUT_OF_MEMORY': return 'OutOfMemory';
    case 'DEADLINE': return 'DeadLine';
    case 'NODE_FAIL': return 'NodeDown';
    default: return 'None';
  }
}

/** Jobs in Taras's queue order, with reason codes and priority ranks. */
export function squeueJobs(jobs: readonly SqJob[], plan: ApiPlan | null): SqueueJob[] {
  const ordered = queueOrderOf(jobs, (job) => ({ state: job.state, id: job.id, endTime: job.endMs, start: job.startMs ?? job.plannedMs })).map((i) => jobs[i]);
  const planned = new Map<string, string[]>();
  for (const item of plan?.items ?? []) if (item.kind === 'job' && item.state === 'PENDING') planned.set(item.id, item.nodes);
  const seenPartition = new Set<string>();
  // The same reason text gives the same code: worked out once per text (50,000 pending jobs share a few).
  const codes = new Map<string, string>();
  return ordered.map((job, index) => {
    const first = job.state === 'PENDING' && !seenPartition.has(job.partition);
    if (job.state === 'PENDING') seenPartition.add(job.partition);
    const nodes = planned.get(String(job.id));
    const key = `${job.state} ${first ? 1 : 0} ${job.reason ?? ''}`;
    let reason = codes.get(key);
    if (reason === undefined) codes.set(key, (reason = reasonCode(job, first)));
    return { job, reason, priority: ordered.length - index, schedNodes: nodes === undefined ? null : compressHostlist(nodes) };
  });
}

/** Seconds the job has run (0 while pending). */
export function timeUsed(job: SqJob, nowMs: number): number {
  if (job.startMs === null || job.state === 'PENDING') return 0;
  return Math.max(0, Math.floor(((job.endMs ?? nowMs) - job.startMs) / 1000));
}

const showsReason = (state: JobState) => ['PENDING', 'TIMEOUT', 'OUT_OF_MEMORY', 'DEADLINE', 'FAILED'].includes(state);

const nodeList = (job: SqJob): string => (job.nodes === '' ? '' : compressHostlist(job.nodes.split(',')));

/** The text of one %-field of one job. */
export function jobField(entry: SqueueJob, letter: string, nowMs: number, timeZone?: string): string {
  const { job } = entry;
  switch (letter) {
    case 'i': return job.label ?? String(job.id);
    case 'A': return String(job.id);
    // What users wrote (names, reasons with them, directories) never carries terminal escapes to another user's screen.
    case 'j': return printable(job.name);
    case 'u': return printable(job.user);
    case 't': return stateCode(job.state);
    case 'T': return job.state;
    case 'M': return slurmDuration(timeUsed(job, nowMs));
    case 'l': return slurmLimit(job.timeLimitSeconds);
    case 'L': return job.timeLimitSeconds === null ? 'UNLIMITED' : slurmDuration(Math.max(0, job.timeLimitSeconds - timeUsed(job, nowMs)));
    case 'D': return String(job.nodeCount);
    case 'R': return showsReason(job.state) ? `(${printable(entry.reason)})` : nodeList(job);
    case 'N': return nodeList(job);
    case 'r': return printable(entry.reason);
    case 'P': return job.partition;
    case 'S': return slurmTime(isoOrNull(job.startMs ?? (job.state === 'PENDING' ? job.plannedMs : null)), timeZone);
    case 'e': return slurmTime(isoOrNull(job.endMs ?? job.predictedEndMs), timeZone);
    case 'V': return slurmTime(isoOrNull(job.submitMs), timeZone);
    case 'C': return String(job.cpus);
    case 'Q': case 'p': return String(entry.priority);
    case 'Z': return job.workingDir === null ? '(null)' : printable(job.workingDir);
    case 'm': return job.memoryMiB === null ? '0' : `${job.memoryMiB}M`;
    case 'Y': return entry.schedNodes ?? '(null)';
    case 'a': case 'q': return '(null)';
    default: return '';
  }
}

type Key = (entry: SqueueJob, nowMs: number) => string | number;
const SORT_KEYS: Record<string, Key> = {
  i: (e) => e.job.id, A: (e) => e.job.id, j: (e) => e.job.name, u: (e) => e.job.user, P: (e) => e.job.partition,
  t: (e) => stateCode(e.job.state), T: (e) => e.job.state, p: (e) => e.priority, Q: (e) => e.priority,
  M: (e, now) => timeUsed(e.job, now), l: (e) => e.job.timeLimitSeconds ?? Infinity, D: (e) => e.job.nodeCount,
  C: (e) => e.job.cpus, S: (e) => e.job.startMs ?? e.job.plannedMs ?? Infinity,
  e: (e) => e.job.endMs ?? e.job.predictedEndMs ?? Infinity, V: (e) => e.job.submitMs,
  N: (e) => e.job.nodes,
};

/** Sorts by a Slurm sort spec such as "P,t,-p" (the first key counts most; `-` reverses a key). */
export function sortJobs(entries: SqueueJob[], spec: string, nowMs: number): SqueueJob[] {
  const keys = spec.split(',').filter((word) => word !== '').map((word) => {
    const reverse = word.startsWith('-');
    const letter = word.replace(/^[+-]/, '');
    const key = SORT_KEYS[letter];
    if (key === undefined) throw new Error(`squeue: error: Invalid sort specification: ${letter} (Taras sorts by ${Object.keys(SORT_KEYS).join(' ')})`);
    return { key, sign: reverse ? -1 : 1 };
  });
  return entries.slice().sort((a, b) => {
    for (const { key, sign } of keys) {
      const x = key(a, nowMs);
      const y = key(b, nowMs);
      if (x !== y) return (x < y ? -1 : 1) * sign;
    }
    return 0;
  });
}

export interface SqueueOptions {
  format?: string;
  long?: boolean;
  start?: boolean;
  noheader?: boolean;
  sort?: string;
  states?: JobState[];
  users?: string[];
  /** -j: job ids, an array's id (all its tasks), ARRAYID_TASK, ARRAYID_[TASKS]. */
  jobs?: (number | string)[];
  partitions?: string[];
  names?: string[];
  nowMs: number;
  timeZone?: string;
}

/** Which states a listing shows: -t's, else pending (--start), else what Slurm shows by default. */
export const statesShown = (options: Pick<SqueueOptions, 'states' | 'start'>): readonly JobState[] =>
  options.states ?? (options.start ? ['PENDING'] : DEFAULT_STATES);

/** The squeue text: the header line unless --noheader, then one line per job. */
export function renderSqueue(jobs: readonly SqJob[], plan: ApiPlan | null, options: SqueueOptions): string {
  const format = parseFormat(options.format ?? (options.start ? SQUEUE_START_FORMAT : options.long ? SQUEUE_LONG_FORMAT : SQUEUE_DEFAULT_FORMAT), new Set(Object.keys(HEADERS)), 'squeue');
  const states = statesShown(options);
  const fresh = options.nowMs - MIN_JOB_AGE_SECONDS * 1000;
  const shown = (options.jobs === undefined ? jobs : rowsNamed(jobs, options.jobs)).filter((job) => states.includes(job.state)
    && (job.endMs === null || job.endMs >= fresh)
    && (options.users === undefined || options.users.includes(job.user))
    && (options.partitions === undefined || options.partitions.includes(job.partition))
    && (options.names === undefined || options.names.includes(job.name)));
  const entries = sortJobs(squeueJobs(shown, plan), options.sort ?? (options.start ? 'S' : 'P,t,-p'), options.nowMs);
  const lines: string[] = [];
  if (options.long) lines.push(ctime(options.nowMs, options.timeZone));
  if (!options.noheader) lines.push(formatLine(format, (letter) => HEADERS[letter], new Set(['R', 'N', 'Y'])));
  for (const entry of entries) lines.push(formatLine(format, (letter) => jobField(entry, letter, options.nowMs, options.timeZone), UNCUT));
  return lines.map((line) => `${line}\n`).join('');
}

/** Sort keys whose value is the same over a segment of GET /queue (p and Q: the queue order itself). */
const SEGMENT_SORT_KEYS = new Set(['P', 't', 'T', 'u', 'j', 'p', 'Q']);
/** Runs of spaces by length, for padding. */
const SPACES = Array.from({ length: 64 }, (_, n) => ' '.repeat(n));
/** Fields whose text changes from row to row within a segment. */
const ROW_FIELDS = new Set(['i', 'A', 'M', 'L', 'S', 'e', 'V', 'Q', 'p']);

/**
 * renderSqueue straight from GET /queue's runs (its `reasons=1&long=1`
 * answer), a segment at a time: the cells that are the same over a segment
 * (user, partition, name, state, reason...) are made once, only the id and
 * the times once per row, and no object is made per job. The same text as
 * renderSqueue(sqJobsOfQueue(api)); null when the request needs the row by
 * row path (-j, %Y, a sort by a key that changes within a segment).
 */
export function renderSqueueQueue(api: ApiQueue, options: SqueueOptions, sink?: (chunk: string) => void): string | null {
  const format = parseFormat(options.format ?? (options.start ? SQUEUE_START_FORMAT : options.long ? SQUEUE_LONG_FORMAT : SQUEUE_DEFAULT_FORMAT), new Set(Object.keys(HEADERS)), 'squeue');
  if (options.jobs !== undefined || format.fields.some((field) => field.letter === 'Y')) return null;
  const keys = (options.sort ?? (options.start ? 'S' : 'P,t,-p')).split(',').filter((word) => word !== '').map((word) => ({ letter: word.replace(/^[+-]/, ''), sign: word.startsWith('-') ? -1 : 1 }));
  if (keys.some((key) => !SEGMENT_SORT_KEYS.has(key.letter))) return null;
  const byPriority = keys.findIndex((key) => key.letter === 'p' || key.letter === 'Q');
  const segmentKeys = byPriority < 0 ? keys : keys.slice(0, byPriority);
  // +p: the lowest priority (the queue's end) first among equal keys.
  const reversed = byPriority >= 0 && keys[byPriority].sign === 1;
  const text = api.strings;
  const col = (name: (typeof SEGMENT_COLUMNS)[number]): number => SEGMENT_COLUMNS.indexOf(name);
  const [ID, USER, STATE, PARTITION, NODES, NODE_COUNT, START, LENGTH, END_TIME, NAME, CPUS, MEMORY, SUBMIT, LIMIT, WORKDIR, LABEL, REASON] =
    (['id', 'user', 'state', 'partition', 'nodes', 'nodeCount', 'start', 'length', 'endTime', 'name', 'cpus', 'memoryMiB', 'submit', 'limitSeconds', 'workingDir', 'label', 'reason'] as const).map(col);
  const states = statesShown(options);
  const fresh = options.nowMs - MIN_JOB_AGE_SECONDS * 1000;
  const base = api.timeBase * 1000;
  const at = (offset: number | null): number | null => (offset === null ? null : base + offset * 1000);
  const str = (index: number | null): string | null => (index === null ? null : text[index]);
  // The shown segments in queue order; the first pending row of each partition on a unit of its own (its reason may be Resources).
  interface Unit { segment: QueueSegment; from: number; rows: number; index: number; first: boolean }
  const units: Unit[] = [];
  const seenPartition = new Set<string>();
  let shownRows = 0;
  for (const segment of queueSegments(api)) {
    const f = segment.first;
    const state = text[f[STATE]!] as JobState;
    const endMs = at(f[END_TIME]);
    if (!states.includes(state) || (endMs !== null && endMs < fresh)) continue;
    if (options.users !== undefined && !options.users.includes(text[f[USER]!])) continue;
    if (options.partitions !== undefined && !options.partitions.includes(text[f[PARTITION]!])) continue;
    if (options.names !== undefined && !options.names.includes(text[f[NAME]!])) continue;
    const partition = text[f[PARTITION]!];
    if (state === 'PENDING' && !seenPartition.has(partition)) {
      seenPartition.add(partition);
      units.push({ segment, from: 0, rows: 1, index: shownRows, first: true });
      if (segment.rows > 1) units.push({ segment, from: 1, rows: segment.rows - 1, index: shownRows + 1, first: false });
    } else {
      units.push({ segment, from: 0, rows: segment.rows, index: shownRows, first: false });
    }
    shownRows += segment.rows;
  }
  if (reversed) units.reverse();
  const keyOf = (unit: Unit, letter: string): string => {
    const f = unit.segment.first;
    if (letter === 'P') return text[f[PARTITION]!];
    if (letter === 't') return stateCode(text[f[STATE]!] as JobState);
    if (letter === 'T') return text[f[STATE]!];
    if (letter === 'u') return text[f[USER]!];
    return text[f[NAME]!];
  };
  if (segmentKeys.length > 0) {
    units.sort((a, b) => {
      for (const { letter, sign } of segmentKeys) {
        const x = keyOf(a, letter);
        const y = keyOf(b, letter);
        if (x !== y) return (x < y ? -1 : 1) * sign;
      }
      return 0;
    });
  }
  const lines = new LineChunks(sink);
  if (options.long) lines.push(ctime(options.nowMs, options.timeZone));
  if (!options.noheader) lines.push(formatLine(format, (letter) => HEADERS[letter], new Set(['R', 'N', 'Y'])));
  // One job object and one entry, their values set before each line (no object per row or per segment).
  const job: SqJob = {
    id: 0, label: null, name: '', user: '', state: 'PENDING', partition: '', nodes: '', nodeCount: 0, startMs: null, plannedMs: null, endMs: null,
    predictedEndMs: null, timeLimitSeconds: null, submitMs: 0, cpus: 0, workingDir: null, memoryMiB: null, reason: null,
  };
  const entry: SqueueJob = { job, reason: '', priority: 0, schedNodes: null };
  const codes = new Map<string, string>();
  const rowField = format.fields.map((field) => ROW_FIELDS.has(field.letter));
  // Each field's padded cell by its text: a queue of similar jobs pads each value once.
  const padded = format.fields.map(() => new Map<string, string>());
  const cellOf = (c: number, keep = false): string => {
    const field = format.fields[c];
    const value = jobField(entry, field.letter, options.nowMs, options.timeZone);
    if (!keep) {
      // Ids and times, each its own: right-justified numbers shorter than their field take a cached run of spaces
      // (ASCII: their length is their width; other fields may hold wide characters, which pad measures).
      if (rowField[c] && field.right && value.length < field.width && field.width - value.length < SPACES.length) return SPACES[field.width - value.length] + value + field.suffix;
      return pad(value, field.width, field.right, !UNCUT.has(field.letter)) + field.suffix;
    }
    const known = padded[c].get(value);
    if (known !== undefined) return known;
    const cell = pad(value, field.width, field.right, !UNCUT.has(field.letter)) + field.suffix;
    if (padded[c].size < 10_000) padded[c].set(value, cell);
    return cell;
  };
  const fixed: (string | null)[] = format.fields.map(() => null);
  let f: (number | null)[] = [];
  let step: number[] = [];
  let unit: Unit = units[0];
  /** Whether the unit's row-by-row cells read times (else only the id and the priority change from row to row). */
  let rowTimes = true;
  const setRow = (j: number): void => {
    const row = unit.from + j;
    job.id = f[ID]! + step[ID] * row;
    entry.priority = shownRows - (unit.index + j);
    if (!rowTimes) return;
    const start = f[START] === null ? null : at(f[START]! + step[START] * row);
    job.startMs = job.state === 'PENDING' ? null : start;
    job.plannedMs = job.state === 'PENDING' ? start : null;
    job.predictedEndMs = start === null || f[LENGTH] === null ? null : start + f[LENGTH]! * 1000;
    job.submitMs = f[SUBMIT] === null ? 0 : base + (f[SUBMIT]! + step[SUBMIT] * row) * 1000;
  };
  for (unit of units) {
    ({ first: f, step } = unit.segment);
    job.label = str(f[LABEL]);
    job.name = text[f[NAME]!];
    job.user = text[f[USER]!];
    job.state = text[f[STATE]!] as JobState;
    job.partition = text[f[PARTITION]!];
    job.nodes = text[f[NODES]!];
    job.nodeCount = f[NODE_COUNT]!;
    job.endMs = at(f[END_TIME]);
    job.timeLimitSeconds = f[LIMIT];
    job.cpus = f[CPUS] ?? 0;
    job.workingDir = f[WORKDIR] === null || text[f[WORKDIR]!] === '' ? null : text[f[WORKDIR]!];
    job.memoryMiB = f[MEMORY];
    job.reason = str(f[REASON]);
    const codeKey = `${job.state} ${unit.first ? 1 : 0} ${job.reason ?? ''}`;
    let code = codes.get(codeKey);
    if (code === undefined) codes.set(codeKey, (code = reasonCode(job, unit.first)));
    entry.reason = code;
    rowTimes = true;
    setRow(0);
    rowTimes = false;
    // The cells that do not change over the unit: all of them in a unit of one row; else all but the id, the
    // priority and the times that move (a running job's time used and left, the start and end, the submit time).
    const moves = unit.rows > 1;
    const startMoves = moves && f[START] !== null && step[START] !== 0;
    for (let c = 0; c < fixed.length; c++) {
      const letter = format.fields[c].letter;
      const varies = moves && rowField[c] && (letter === 'i' ? job.label === null
        : letter === 'M' || letter === 'L' ? startMoves && job.state !== 'PENDING'
          : letter === 'S' || letter === 'e' ? startMoves : letter === 'V' ? step[SUBMIT] !== 0 : true);
      fixed[c] = varies ? null : cellOf(c, !rowField[c]);
      if (varies && 'MLSeV'.includes(letter)) rowTimes = true;
    }
    for (let k = 0; k < unit.rows; k++) {
      const j = reversed ? unit.rows - 1 - k : k;
      if (k > 0 || reversed) setRow(j);
      let line = format.prefix;
      for (let c = 0; c < fixed.length; c++) line += fixed[c] ?? cellOf(c);
      lines.push(line);
    }
  }
  return lines.end();
}

/** The time line squeue -l and sinfo -l start with (C's ctime: "Mon Nov 23 22:50:42 2026"). */
export function ctime(nowMs: number, timeZone?: string): string {
  const parts = new Intl.DateTimeFormat('en-US', { timeZone, weekday: 'short', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit', year: 'numeric', hourCycle: 'h23' })
    .formatToParts(new Date(nowMs));
  const get = (type: string) => parts.find((part) => part.type === type)?.value ?? '';
  return `${get('weekday')} ${get('month')} ${get('day').padStart(2)} ${get('hour')}:${get('minute')}:${get('second')} ${get('year')}`;
}

const list = (text: string) => text.split(',').map((word) => word.trim()).filter((word) => word !== '');

export function registerSqueue(program: Command): void {
  program
    .description('view the job queue as Slurm\'s squeue does (served by Taras)')
    .option('--me', 'only your own jobs')
    .option('-u, --user <users>', 'only these users\' jobs (comma list)')
    .option('-j, --jobs <ids>', 'only these jobs (comma list)')
    .option('-t, --states <states>', 'only these states: names or codes, comma list (PD,R or PENDING,RUNNING), or all')
    .option('-p, --partition <partitions>', 'only these partitions (comma list)')
    .option('-n, --name <names>', 'only jobs with these names (comma list)')
    .option('-o, --format <format>', 'fields to print, e.g. "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"')
    .option('-S, --sort <keys>', 'sort keys, e.g. "P,t,-p" (the default) or "-i"')
    .option('--start', 'pending jobs with their planned start and nodes')
    .option('-h, --noheader', 'no header line')
    .option('-l, --long', 'the state in full and the time limit; the current time first')
    .option('--json', 'print the jobs as JSON (Taras\'s job vocabulary under "jobs")')
    .option('--controller <address>', 'controller address (default $TARAS_CONTROLLER)')
    .helpOption('--help', 'show this help')
    .addHelpText('after', `
Formats follow Slurm: %[.]WIDTH LETTER, "." right-justifies. Fields: %i %j %u %t %T %M %l %L %D %R %P %S %e %V %C %N %r %Q %Z %m %Y.
Examples:
  squeue --me
  squeue -t PD,R -p batch
  squeue -h -o "%i %t"
  squeue --start
`)
    .action(async (flags: Record<string, string | boolean | undefined>) => {
      const { withClient, listAllJobs, printJson } = await import('../controller-client.js');
      const { userInfo } = await import('node:os');
      const text = (key: string) => (typeof flags[key] === 'string' ? flags[key] as string : undefined);
      const users = [...(text('user') !== undefined ? list(text('user')!) : []), ...(flags.me ? [userInfo().username] : [])];
      let jobIds: (number | string)[] | undefined;
      if (text('jobs') !== undefined) {
        jobIds = slurmJobRefs([text('jobs')!], (word) => `squeue: error: Invalid job id specified: ${word} (give job ids as squeue shows them: 12, 12_3, 12_[1-3])`);
      }
      const options: SqueueOptions = {
        format: text('format'), long: flags.long === true, start: flags.start === true, noheader: flags.noheader === true, sort: text('sort'),
        states: text('states') === undefined ? undefined : parseJobStates(text('states')!, 'squeue'),
        users: users.length > 0 ? users : undefined, jobs: jobIds, partitions: text('partition') === undefined ? undefined : list(text('partition')!),
        names: text('name') === undefined ? undefined : list(text('name')!), nowMs: Date.now(),
      };
      // Checked before anything is asked of the controller.
      if (options.format !== undefined) parseFormat(options.format, new Set(Object.keys(HEADERS)), 'squeue');
      if (options.sort !== undefined) sortJobs([], options.sort, 0);
      await withClient(text('controller'), async (api) => {
        const query = new URLSearchParams();
        if (options.users?.length === 1) query.set('user', options.users[0]);
        query.set('state', statesShown(options).join(','));
        const needPlan = options.start === true || (options.format ?? '').includes('Y');
        const plan = needPlan ? api.get<ApiPlan>('/plan') : Promise.resolve(null);
        if (flags.json) {
          // The full vocabulary, one job per listed id (array tasks each on their own).
          const [jobs, planned] = await Promise.all([listAllJobs(api, query), plan]);
          const text = renderSqueue(jobs.map(sqJobOf), planned, { ...options, format: '%A', noheader: true });
          const ids = text.split('\n').filter((line) => line !== '').map(Number);
          const byId = new Map(jobs.map((job) => [job.id, job]));
          return printJson({ jobs: ids.map((id) => byId.get(id)) });
        }
        // Only what the format shows: the --long columns (limit, CPUs, submit time, directory, memory) and the reasons cost the controller a look at each job.
        const letters = parseFormat(options.format ?? (options.start ? SQUEUE_START_FORMAT : options.long ? SQUEUE_LONG_FORMAT : SQUEUE_DEFAULT_FORMAT), new Set(Object.keys(HEADERS)), 'squeue')
          .fields.map((field) => field.letter).join('') + (options.sort ?? '');
        if (/[lLCVZm]/.test(letters)) query.set('long', '1');
        if (/[Rr]/.test(letters)) query.set('reasons', '1');
        const [queue, planned] = await Promise.all([api.get<ApiQueue>(`/queue?${query}`), plan]);
        // Drawn a segment at a time, written a chunk at a time (LineChunks); the row-by-row path when it cannot be.
        const write = (chunk: string) => process.stdout.write(chunk);
        if ((planned === null ? renderSqueueQueue(queue, options, write) : null) !== null) return;
        const rows = sqJobsOfQueue(queue);
        if (options.jobs === undefined) return write(renderSqueue(rows, planned, options));
        // -j 12_5 (or the task's own id) of a task inside a folded row: the tasks one by one (squeue -r's listing).
        query.set('array', '1');
        const tasks = hidesNamedTask(rows, options.jobs) ? sqJobsOfQueue(await api.get<ApiQueue>(`/queue?${query}`)) : [];
        write(renderSqueue(rowsNamed(rows, options.jobs, tasks), planned, { ...options, jobs: undefined }));
      });
    });
}
