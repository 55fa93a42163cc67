// sacct's vocabulary for `taras acct`: field names and widths, the fixed-width
// layout (a header, a dashed line, `+` on a truncated value), the parsable
// forms, Slurm's state names and short forms, and sacct's time forms for
// -S/-E. Pure: the caller passes the clock.

import type { ApiAcctJob, JobState } from '../api/types.js';
import { clockDuration } from '../api/durations.js';
import { cutToWidth, displayWidth, LineChunks, padToWidth, printable } from './render/text.js';
import { MAX_FIELD_WIDTH } from './slurm/format.js';
import { slurmTaskString } from '../jobspec/array.js';
import { holdMark } from '../api/queue.js';

/**
 * A row as sacct prints it: a job, or the pending tasks of an array still in its meta record on one row
 * (`foldedTasks` 4-15%2, `foldedTaskIds` the tasks; the other fields those of the first task, JobIDRaw the array's id).
 */
export type AcctRow = ApiAcctJob & { readonly foldedTasks?: string; readonly foldedTaskIds?: readonly number[] };

/**
 * sacct's rows of job arrays. Slurm keeps an array's pending tasks in one meta record (JobIDRaw the array's
 * id) and lists it after the array's other rows, 12_[4-15%2] (see slurmTaskString); a task that started, was
 * requeued, or was held on its own has a record of its own (12_3), as has an array's only pending task. A
 * task counts as held on its own when it is held and another pending task of its array is not (the whole
 * array held stays one row). sacct --array: rows unfolded. `throttles`: the %N of throttled arrays, by
 * array id; `bitstrLen`: SLURM_BITSTR_LEN (bitstrLenOf).
 */
export function foldPendingTasks(jobs: readonly ApiAcctJob[], throttles: Readonly<Record<string, number>> = {}, bitstrLen = 64): AcctRow[] {
  const meta = new Map<number, ApiAcctJob[]>();
  const lastRow = new Map<number, ApiAcctJob>();
  for (const job of jobs) {
    if (typeof job.arrayJobId !== 'number') continue;
    lastRow.set(job.arrayJobId, job);
    if (job.state !== 'PENDING' || typeof job.arrayTaskId !== 'number' || job.requeueCount > 0) continue;
    let tasks = meta.get(job.arrayJobId);
    if (tasks === undefined) meta.set(job.arrayJobId, tasks = []);
    tasks.push(job);
  }
  const folded = new Map<ApiAcctJob, AcctRow>();
  const inFold = new Set<ApiAcctJob>();
  for (const [arrayJobId, pending] of meta) {
    const held = pending.filter((job) => holdMark(job.reason) !== null);
    const tasks = held.length === pending.length ? pending : pending.filter((job) => holdMark(job.reason) === null);
    if (tasks.length < 2) continue;
    for (const job of tasks) inFold.add(job);
    const taskIds = tasks.map((job) => job.arrayTaskId!).sort((a, b) => a - b);
    folded.set(lastRow.get(arrayJobId)!, { ...tasks[0], foldedTasks: slurmTaskString(taskIds, throttles[String(arrayJobId)], bitstrLen), foldedTaskIds: taskIds });
  }
  if (folded.size === 0) return jobs as AcctRow[];
  const rows: AcctRow[] = [];
  for (const job of jobs) {
    if (!inFold.has(job)) rows.push(job);
    const fold = folded.get(job);
    if (fold !== undefined) rows.push(fold);
  }
  return rows;
}

/** One column: its width (negative: left-justified, as sacct's JobID), the job fields its value reads, and its value. */
interface Field {
  readonly name: string;
  /** Every field of the job `value` reads (the controller sends only what the columns use). */
  readonly uses: readonly (keyof ApiAcctJob)[];
  readonly width: number;
  readonly value: (job: AcctRow, nowMs: number) => string;
}

const two = (n: number) => String(n).padStart(2, '0');

/** Slurm's time stamp (local time, no zone): 2026-11-23T14:05:09; `Unknown` when not (yet) known. */
export function slurmTime(ms: number | null): string {
  if (ms === null) return 'Unknown';
  const d = new Date(ms);
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}T${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

/** Elapsed and Timelimit: `HH:MM:SS`, or `D-HH:MM:SS` from one day on. */
export const slurmDuration = clockDuration;

/** TotalCPU, UserCPU, SystemCPU: `MM:SS.mmm` under an hour, then `HH:MM:SS` and `D-HH:MM:SS` (sacct's form). */
export function slurmCpuTime(seconds: number | null): string {
  if (seconds === null) return '';
  const millis = Math.round(seconds * 1000);
  const whole = Math.floor(millis / 1000);
  if (whole >= 3600) return slurmDuration(whole);
  return `${two(Math.floor(whole / 60))}:${two(whole % 60)}.${String(millis % 1000).padStart(3, '0')}`;
}

const SIGNAL_NUMBERS: Record<string, number> = {
  SIGHUP: 1, SIGINT: 2, SIGQUIT: 3, SIGILL: 4, SIGTRAP: 5, SIGABRT: 6, SIGBUS: 7, SIGFPE: 8, SIGKILL: 9, SIGUSR1: 10, SIGSEGV: 11,
  SIGUSR2: 12, SIGPIPE: 13, SIGALRM: 14, SIGTERM: 15, SIGCHLD: 17, SIGCONT: 18, SIGSTOP: 19, SIGTSTP: 20, SIGXCPU: 24, SIGXFSZ: 25,
};

/** sacct's ExitCode: `code:signal` (the signal's number; 0 when it exited). */
export function exitCodeField(job: Pick<ApiAcctJob, 'exitCode' | 'exitSignal'>): string {
  const signal = job.exitSignal === null ? 0 : SIGNAL_NUMBERS[job.exitSignal] ?? (Number(job.exitSignal.replace(/^SIG/, '')) || 0);
  return `${job.exitCode ?? 0}:${signal}`;
}

/** Seconds the job has run: to its end, or to now while it runs; 0 before it starts. */
const elapsedSeconds = (job: ApiAcctJob, nowMs: number): number =>
  job.startMs === null ? 0 : ((job.endMs ?? nowMs) - job.startMs) / 1000;

/** sacct's CPU time: the user and system time together (TotalCPU). */
const totalCpu = (job: ApiAcctJob): number | null =>
  job.userCpuSeconds !== null && job.systemCpuSeconds !== null ? job.userCpuSeconds + job.systemCpuSeconds : job.cpuSeconds;

const nodeCount = (job: ApiAcctJob): number => job.nodes.length;

/** sacct's fields Taras has, by sacct's name (matched case-insensitively), with sacct's default widths. */
export const FIELDS: readonly Field[] = [
  // An array's task as Slurm names it, ARRAYID_TASK (its own id is JobIDRaw); its pending tasks folded, ARRAYID_[TASKS].
  { name: 'JobID', uses: ['id', 'arrayJobId', 'arrayTaskId'], width: -12, value: (j) => (typeof j.arrayJobId !== 'number' ? String(j.id)
    : j.foldedTasks !== undefined ? `${j.arrayJobId}_[${j.foldedTasks}]` : `${j.arrayJobId}_${j.arrayTaskId}`) },
  // A folded row stands for the array's meta record, which has the array's id.
  { name: 'JobIDRaw', uses: ['id', 'arrayJobId'], width: -12, value: (j) => String(j.foldedTasks !== undefined ? j.arrayJobId : j.id) },
  { name: 'JobName', uses: ['name'], width: 10, value: (j) => j.name },
  { name: 'Partition', uses: ['partition'], width: 10, value: (j) => j.partition },
  // Taras has no accounts: the column is there (sacct's default layout) and empty.
  { name: 'Account', uses: [], width: 10, value: () => '' },
  { name: 'AllocCPUS', uses: ['startMs', 'allocCpus'], width: 10, value: (j) => (j.startMs === null ? '0' : String(j.allocCpus ?? 0)) },
  { name: 'ReqCPUS', uses: ['allocCpus'], width: 8, value: (j) => String(j.allocCpus ?? 0) },
  { name: 'NCPUS', uses: ['startMs', 'allocCpus'], width: 10, value: (j) => (j.startMs === null ? '0' : String(j.allocCpus ?? 0)) },
  { name: 'State', uses: ['state'], width: 10, value: (j) => j.state },
  { name: 'ExitCode', uses: ['exitCode', 'exitSignal'], width: 8, value: (j) => exitCodeField(j) },
  { name: 'User', uses: ['user'], width: 9, value: (j) => j.user },
  { name: 'Submit', uses: ['submitMs'], width: 19, value: (j) => slurmTime(j.submitMs) },
  { name: 'Eligible', uses: ['eligibleMs'], width: 19, value: (j) => slurmTime(j.eligibleMs) },
  { name: 'Start', uses: ['startMs'], width: 19, value: (j) => slurmTime(j.startMs) },
  { name: 'End', uses: ['endMs'], width: 19, value: (j) => slurmTime(j.endMs) },
  // Taras's first promise: the planned start the job was given (sacct has no such field).
  { name: 'PlannedStart', uses: ['plannedStartMs'], width: 19, value: (j) => slurmTime(j.plannedStartMs) },
  // sacct's Planned: how long the job waited (or has waited) eligible before it started.
  { name: 'Planned', uses: ['startMs', 'endMs', 'eligibleMs'], width: 10, value: (j, now) => slurmDuration(((j.startMs ?? j.endMs ?? now) - j.eligibleMs) / 1000) },
  { name: 'Elapsed', uses: ['startMs', 'endMs'], width: 10, value: (j, now) => slurmDuration(elapsedSeconds(j, now)) },
  { name: 'ElapsedRaw', uses: ['startMs', 'endMs'], width: 10, value: (j, now) => String(Math.floor(elapsedSeconds(j, now))) },
  { name: 'CPUTime', uses: ['startMs', 'endMs', 'allocCpus'], width: 10, value: (j, now) => slurmDuration(elapsedSeconds(j, now) * (j.startMs === null ? 0 : j.allocCpus ?? 0)) },
  { name: 'CPUTimeRAW', uses: ['startMs', 'endMs', 'allocCpus'], width: 10, value: (j, now) => String(Math.floor(elapsedSeconds(j, now) * (j.startMs === null ? 0 : j.allocCpus ?? 0))) },
  { name: 'TotalCPU', uses: ['userCpuSeconds', 'systemCpuSeconds', 'cpuSeconds'], width: 10, value: (j) => slurmCpuTime(totalCpu(j)) },
  { name: 'UserCPU', uses: ['userCpuSeconds'], width: 10, value: (j) => slurmCpuTime(j.userCpuSeconds) },
  { name: 'SystemCPU', uses: ['systemCpuSeconds'], width: 10, value: (j) => slurmCpuTime(j.systemCpuSeconds) },
  { name: 'MaxRSS', uses: ['maxRssKiB'], width: 10, value: (j) => (j.maxRssKiB === null ? '' : `${j.maxRssKiB}K`) },
  { name: 'NodeList', uses: ['nodes'], width: 15, value: (j) => (j.nodes.length === 0 ? 'None assigned' : compactNodes(j.nodes)) },
  { name: 'NNodes', uses: ['nodes'], width: 8, value: (j) => String(nodeCount(j)) },
  { name: 'Timelimit', uses: ['timeLimitSeconds'], width: 10, value: (j) => (j.timeLimitSeconds === null ? 'UNLIMITED' : slurmDuration(j.timeLimitSeconds)) },
  { name: 'TimelimitRaw', uses: ['timeLimitSeconds'], width: 10, value: (j) => (j.timeLimitSeconds === null ? 'UNLIMITED' : String(Math.floor(j.timeLimitSeconds / 60))) },
  { name: 'Reason', uses: ['reason'], width: 20, value: (j) => j.reason ?? 'None' },
  { name: 'Restarts', uses: ['requeueCount'], width: 8, value: (j) => String(j.requeueCount) },
];

/** sacct's default columns (`sacct` with no --format). */
export const DEFAULT_FORMAT = 'JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode';

/** node01,node02,node03 -> node[01-03]: consecutive numbers with one prefix and width. */
export function compactNodes(nodes: readonly string[]): string {
  const groups: { prefix: string; width: number; numbers: number[] }[] = [];
  const plain: string[] = [];
  for (const node of nodes) {
    const match = /^(.*?)(\d+)$/.exec(node);
    if (!match) {
      plain.push(node);
      continue;
    }
    const [prefix, digits] = [match[1], match[2]];
    let group = groups.find((g) => g.prefix === prefix && g.width === digits.length);
    if (!group) groups.push((group = { prefix, width: digits.length, numbers: [] }));
    group.numbers.push(Number(digits));
  }
  const parts = groups.map(({ prefix, width, numbers }) => {
    const sorted = [...numbers].sort((a, b) => a - b);
    if (sorted.length === 1) return `${prefix}${String(sorted[0]).padStart(width, '0')}`;
    const ranges: string[] = [];
    for (let i = 0; i < sorted.length;) {
      let j = i;
      while (j + 1 < sorted.length && sorted[j + 1] === sorted[j] + 1) j++;
      const from = String(sorted[i]).padStart(width, '0');
      ranges.push(j === i ? from : `${from}-${String(sorted[j]).padStart(width, '0')}`);
      i = j + 1;
    }
    return `${prefix}[${ranges.join(',')}]`;
  });
  return [...parts, ...plain].join(',');
}

export interface Column {
  readonly field: Field;
  readonly width: number;
}

/** `--format JobID,JobName%30,State%-12`: columns with sacct's widths or the `%N` given (negative: left-justified). */
export function parseFormat(text: string): { ok: true; columns: Column[] } | { ok: false; message: string } {
  const columns: Column[] = [];
  for (const item of text.split(',').map((part) => part.trim()).filter((part) => part !== '')) {
    const match = /^([A-Za-z]+)(?:%(-?\d+))?$/.exec(item);
    const field = match ? FIELDS.find((f) => f.name.toLowerCase() === match[1].toLowerCase()) : undefined;
    if (!match || !field) {
      return { ok: false, message: `--format: '${item}' is not a field Taras knows; give NAME or NAME%WIDTH among ${FIELDS.map((f) => f.name).join(', ')}` };
    }
    const width = match[2] === undefined ? field.width : Number(match[2]);
    if (width === 0) return { ok: false, message: `--format: '${item}' has width 0; give a width of 1 or more` };
    if (Math.abs(width) > MAX_FIELD_WIDTH) return { ok: false, message: `--format: '${item}' is wider than ${MAX_FIELD_WIDTH}; give a width of at most ${MAX_FIELD_WIDTH}` };
    columns.push({ field, width });
  }
  if (columns.length === 0) return { ok: false, message: '--format: no fields given; e.g. --format JobID,State,Elapsed' };
  return { ok: true, columns };
}

/**
 * One fixed-width cell as sacct prints it: right-justified (left for a negative width), `+` marking a cut, then a space.
 * Widths are terminal columns (wide characters take two), and a cut never splits a character.
 */
function cell(value: string, width: number): string {
  const size = Math.abs(width);
  const shown = displayWidth(value) > size ? `${cutToWidth(value, size - 1).text}+` : value;
  return `${padToWidth(shown, size, width >= 0)} `;
}

export type Layout = 'table' | 'parsable' | 'parsable2' | 'csv';

/**
 * The lines sacct prints: header (unless `noHeader`), the dashed line (table only), one line per job;
 * with `sink`, handed to it in chunks as they are made (stdout: see LineChunks), and '' returned.
 */
export function renderAcct(jobs: readonly AcctRow[], columns: readonly Column[], layout: Layout, noHeader: boolean, nowMs: number, sink?: (chunk: string) => void): string {
  const lines = new LineChunks(sink);
  // Names, reasons and comments are the users' own text: no control character reaches the terminal or breaks a row.
  const values = (job: AcctRow) => columns.map((c) => printable(c.field.value(job, nowMs)));
  const csvCell = (value: string) => (/[",\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value);
  const joined = (cells: string[]): string => {
    if (layout === 'table') return cells.map((value, i) => cell(value, columns[i].width)).join('');
    if (layout === 'csv') return cells.map(csvCell).join(',');
    return cells.join('|') + (layout === 'parsable' ? '|' : '');
  };
  if (!noHeader) {
    lines.push(joined(columns.map((c) => c.field.name)));
    if (layout === 'table') lines.push(columns.map((c) => `${'-'.repeat(Math.abs(c.width))} `).join(''));
  }
  for (const job of jobs) lines.push(joined(values(job)));
  return lines.end();
}

/**
 * --json: each row with the chosen fields by sacct's names and the full record under `job`; a folded row
 * (sacct's meta record of an array's pending tasks) also has `tasks`, the ids of the tasks it stands for,
 * and its `job` is the first of them.
 */
export function acctJson(rows: readonly AcctRow[], columns: readonly Column[], nowMs: number): unknown {
  return {
    jobs: rows.map((row) => {
      const { foldedTasks, foldedTaskIds, ...job } = row;
      const fields = Object.fromEntries(columns.map((c) => [c.field.name, c.field.value(row, nowMs)]));
      return foldedTaskIds === undefined ? { ...fields, job } : { ...fields, job, tasks: foldedTaskIds };
    }),
  };
}

/** Slurm's state names and their short forms (sacct -s). */
const STATE_CODES: Record<string, JobState> = {
  PD: 'PENDING', R: 'RUNNING', CG: 'COMPLETING', S: 'SUSPENDED', CD: 'COMPLETED', F: 'FAILED', CA: 'CANCELLED',
  TO: 'TIMEOUT', NF: 'NODE_FAIL', OOM: 'OUT_OF_MEMORY', PR: 'PREEMPTED', DL: 'DEADLINE',
};
const STATE_NAMES = [...new Set(Object.values(STATE_CODES))];

/** `-s CD,F,cancelled`: the states, by name or short form, any case. */
export function parseStates(text: string): { ok: true; states: JobState[] } | { ok: false; message: string } {
  const states: JobState[] = [];
  for (const item of text.split(',').map((part) => part.trim().toUpperCase()).filter((part) => part !== '')) {
    const state = STATE_CODES[item] ?? STATE_NAMES.find((name) => name === item);
    if (state === undefined) {
      return { ok: false, message: `--state: '${item}' is not a job state; give names or short forms: ${Object.entries(STATE_CODES).map(([code, name]) => `${code} ${name}`).join(', ')}` };
    }
    if (!states.includes(state)) states.push(state);
  }
  return { ok: true, states };
}

const TIME_FORMS = 'HH:MM[:SS], YYYY-MM-DD[THH:MM[:SS]], MMDD[YY][-HH:MM[:SS]], MM/DD[/YY][-HH:MM[:SS]], MM.DD[.YY][-HH:MM[:SS]], '
  + 'today, midnight, noon, now, now-N[seconds|minutes|hours|days|weeks] (now-1days)';

const UNIT_SECONDS: Record<string, number> = {
  '': 1, s: 1, sec: 1, secs: 1, second: 1, seconds: 1, m: 60, min: 60, mins: 60, minute: 60, minutes: 60,
  h: 3600, hour: 3600, hours: 3600, d: 86_400, day: 86_400, days: 86_400, w: 604_800, week: 604_800, weeks: 604_800,
};

/** sacct's -S/-E time forms, in local time, as epoch ms (a time of day alone is today's). */
export function parseSacctTime(flag: string, raw: string, nowMs: number): { ok: true; ms: number } | { ok: false; message: string } {
  const text = raw.trim().toLowerCase();
  const bad = { ok: false as const, message: `${flag} '${raw}': not a time sacct reads; give ${TIME_FORMS}` };
  const now = new Date(nowMs);
  const local = (y: number, mo: number, d: number, h = 0, mi = 0, s = 0) => {
    const value = new Date(y, mo - 1, d, h, mi, s);
    const valid = value.getFullYear() === y && value.getMonth() === mo - 1 && value.getDate() === d && h < 24 && mi < 60 && s < 60;
    return valid ? { ok: true as const, ms: value.getTime() } : bad;
  };
  const today = [now.getFullYear(), now.getMonth() + 1, now.getDate()] as const;
  const relative = /^now(?:\s*([+-])\s*(\d+)\s*([a-z]*))?$/.exec(text);
  if (relative) {
    if (relative[1] === undefined) return { ok: true, ms: nowMs };
    const unit = UNIT_SECONDS[relative[3]];
    if (unit === undefined) return bad;
    return { ok: true, ms: nowMs + (relative[1] === '-' ? -1 : 1) * Number(relative[2]) * unit * 1000 };
  }
  if (text === 'today' || text === 'midnight') return local(...today);
  if (text === 'noon') return local(...today, 12);
  const clockOf = (part: string | undefined): [number, number, number] | null => {
    if (part === undefined) return [0, 0, 0];
    const clock = /^(\d{1,2}):(\d{2})(?::(\d{2}))?$/.exec(part);
    return clock ? [Number(clock[1]), Number(clock[2]), Number(clock[3] ?? 0)] : null;
  };
  const year = (yy: string | undefined) => (yy === undefined ? today[0] : yy.length === 2 ? 2000 + Number(yy) : Number(yy));
  const clockOnly = /^\d{1,2}:\d{2}(?::\d{2})?$/.test(text) ? clockOf(text) : null;
  if (clockOnly) return local(...today, ...clockOnly);
  const iso = /^(\d{4})-(\d{2})-(\d{2})(?:t(\d{1,2}:\d{2}(?::\d{2})?))?$/.exec(text);
  if (iso) {
    const clock = clockOf(iso[4]);
    return clock ? local(Number(iso[1]), Number(iso[2]), Number(iso[3]), ...clock) : bad;
  }
  const dated = /^(\d{2})(?:([/.])?)(\d{2})(?:\2(\d{2}|\d{4}))?(?:-(\d{1,2}:\d{2}(?::\d{2})?))?$/.exec(text)
    ?? /^(\d{2})()(\d{2})(\d{2})?(?:-(\d{1,2}:\d{2}(?::\d{2})?))?$/.exec(text);
  if (dated) {
    const clock = clockOf(dated[5]);
    return clock ? local(year(dated[4]), Number(dated[1]), Number(dated[3]), ...clock) : bad;
  }
  return bad;
}

/** Midnight of today in local time: sacct's default start. */
export function midnightOf(nowMs: number): number {
  const now = new Date(nowMs);
  return new Date(now.getFullYear(), now.getMonth(), now.getDate()).getTime();
}
