// Slurm's output formats, as squeue, sinfo and scontrol print them: the
// `-o` format strings (`%.18i %-8j`), field padding and truncation, durations
// (M:SS, H:MM:SS, D-HH:MM:SS), times (2026-11-23T22:50:42, local, "N/A" when
// unknown), hostlists (node[01-04]) and the compact job state codes. Written
// from Slurm's man pages and src/squeue/print.c, src/sinfo/print.c. Pure: no I/O.

import type { JobState } from '../../api/types.js';
import { parseArrayJobId } from '../../jobspec/array.js';
import { cutToWidth, padToWidth } from '../render/text.js';

/**
 * Job ids as Slurm's commands take them, comma lists included: 12, 12_3 (a task of job array 12), 12_[1-3,7]:
 * numbers, and the array forms as text, which the controller resolves. `invalid` makes the refusal's words.
 */
export function slurmJobRefs(words: readonly string[], invalid: (word: string) => string): (number | string)[] {
  return words.flatMap((word) => word.split(/,(?![^[]*\])/)).filter((word) => word !== '').map((word) => {
    const parsed = parseArrayJobId(word);
    if (parsed === undefined) throw new Error(invalid(word));
    return parsed.taskIds === undefined ? parsed.id : word.trim();
  });
}

/**
 * Whether a list of refs names a job (or task): by its id, its array's id (all the array's tasks), or its
 * ARRAYID_TASK; a row standing for several pending tasks (`arrayTaskIds`, squeue's folded 12_[4-15]) by any of them.
 */
export function namedBy(refs: readonly (number | string)[]): (job: { id: number; arrayJobId?: number; arrayTaskId?: number; arrayTaskIds?: readonly number[] }) => boolean {
  // Parsed once, for every row to be matched against.
  const ids = new Set<number>();
  const tasksOf = new Map<number, Set<number>>();
  for (const ref of refs) {
    if (typeof ref === 'number') {
      ids.add(ref);
      continue;
    }
    const parsed = parseArrayJobId(ref);
    if (parsed === undefined) continue;
    const tasks = tasksOf.get(parsed.id) ?? new Set<number>();
    for (const task of parsed.taskIds ?? []) tasks.add(task);
    tasksOf.set(parsed.id, tasks);
  }
  return (job) => {
    if (ids.has(job.id) || (job.arrayJobId !== undefined && ids.has(job.arrayJobId))) return true;
    const tasks = job.arrayJobId === undefined ? undefined : tasksOf.get(job.arrayJobId);
    if (tasks === undefined) return false;
    return (job.arrayTaskIds ?? (job.arrayTaskId === undefined ? [] : [job.arrayTaskId])).some((task) => tasks.has(task));
  };
}

/** One `%[.|-][width]letter` of a format string, with the text that follows it up to the next field. */
export interface FormatField {
  letter: string;
  /** 0: as wide as the value (no padding, no cut). */
  width: number;
  right: boolean;
  suffix: string;
}

export interface ParsedFormat {
  /** Text before the first field. */
  prefix: string;
  fields: FormatField[];
}

/** The widest field a format may ask for: past it a column is no table (and %999999999i ran out of memory). */
export const MAX_FIELD_WIDTH = 1000;

/**
 * A `-o/--format` string as Slurm reads it: `%` starts a field, an optional
 * `.` right-justifies it, digits give its width, one letter names it, and
 * whatever follows (spaces, `|`) is printed after it. `-` before the width
 * (left-justified) is accepted as well: it is Slurm's default.
 */
export function parseFormat(format: string, known: ReadonlySet<string>, command: string): ParsedFormat {
  const parts = format.split('%');
  const fields: FormatField[] = [];
  for (const token of parts.slice(1)) {
    const match = /^([.-]?)(\d*)([A-Za-z])([^]*)$/.exec(token);
    if (!match) throw new Error(`${command}: error: invalid format specification "%${token}": a field is %[.]WIDTH LETTER, e.g. %.18i or %-8j`);
    const [, align, digits, letter, suffix] = match;
    if (!known.has(letter)) throw new Error(`${command}: error: the format field %${letter} is not supported by Taras (supported: ${[...known].map((l) => `%${l}`).join(' ')})`);
    const width = digits === '' ? 0 : Number(digits);
    if (width > MAX_FIELD_WIDTH) throw new Error(`${command}: error: the width of "%${align}${digits}${letter}" is more than ${MAX_FIELD_WIDTH}; give a width of at most ${MAX_FIELD_WIDTH}, or none (as wide as the value)`);
    fields.push({ letter, width, right: align === '.', suffix });
  }
  return { prefix: parts[0], fields };
}

/**
 * One value in a field of `width` terminal columns (0: as is): right-justified
 * (padded on the left) or left (padded on the right), cut to the width when
 * `cut` (Slurm cuts names but not node lists or durations). Wide characters
 * take two columns, and a cut never splits a character (Slurm's cuts bytes).
 */
export function pad(value: string, width: number, right: boolean, cut = true): string {
  if (width <= 0) return value;
  return padToWidth(cut ? cutToWidth(value, width).text : value, width, right);
}

/** A line of the format: each field's value from `value(letter)`, padded, with its suffix. */
export function formatLine(format: ParsedFormat, value: (letter: string) => string, uncut: ReadonlySet<string> = new Set()): string {
  let line = format.prefix;
  for (const field of format.fields) line += pad(value(field.letter), field.width, field.right, !uncut.has(field.letter)) + field.suffix;
  return line;
}

/** A duration as Slurm prints it: M:SS, H:MM:SS or D-HH:MM:SS (INVALID when negative or over a year). */
export function slurmDuration(seconds: number): string {
  const total = Math.floor(seconds);
  if (total < 0 || total > 365 * 86_400) return 'INVALID';
  const two = (n: number) => String(n).padStart(2, '0');
  const s = total % 60;
  const m = Math.floor(total / 60) % 60;
  const h = Math.floor(total / 3600) % 24;
  const d = Math.floor(total / 86_400);
  if (d > 0) return `${d}-${two(h)}:${two(m)}:${two(s)}`;
  if (h > 0) return `${h}:${two(m)}:${two(s)}`;
  return `${m}:${two(s)}`;
}

/** A time limit: UNLIMITED when none. */
export const slurmLimit = (seconds: number | null): string => (seconds === null ? 'UNLIMITED' : slurmDuration(seconds));

/** An ISO time as Slurm prints times by default (local, 2026-11-23T22:50:42); N/A when none. */
export function slurmTime(iso: string | null | undefined, timeZone?: string): string {
  if (iso === null || iso === undefined) return 'N/A';
  const parts = new Intl.DateTimeFormat('en-CA', {
    timeZone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23',
  }).formatToParts(new Date(iso));
  const get = (type: string) => parts.find((part) => part.type === type)?.value ?? '00';
  return `${get('year')}-${get('month')}-${get('day')}T${get('hour')}:${get('minute')}:${get('second')}`;
}

/** Slurm's compact job state codes (squeue %t). */
const STATE_CODES: Record<JobState, string> = {
  PENDING: 'PD', RUNNING: 'R', COMPLETING: 'CG', COMPLETED: 'CD', FAILED: 'F', CANCELLED: 'CA', TIMEOUT: 'TO',
  NODE_FAIL: 'NF', OUT_OF_MEMORY: 'OOM', SUSPENDED: 'S', PREEMPTED: 'PR', DEADLINE: 'DL',
};

export const stateCode = (state: JobState): string => STATE_CODES[state] ?? state;

/** Every job state by its name or its code (case-insensitive), as squeue -t and scancel -t take them. */
export function parseJobStates(text: string, command: string): JobState[] {
  const byName = new Map<string, JobState>();
  for (const [state, code] of Object.entries(STATE_CODES) as [JobState, string][]) {
    byName.set(state, state);
    byName.set(code, state);
  }
  byName.set('CANCELED', 'CANCELLED');
  const states: JobState[] = [];
  for (const raw of text.split(',').map((word) => word.trim()).filter((word) => word !== '')) {
    if (raw.toUpperCase() === 'ALL') return Object.keys(STATE_CODES) as JobState[];
    const state = byName.get(raw.toUpperCase());
    if (state === undefined) throw new Error(`${command}: error: invalid job state specified: ${raw} (give names or codes such as PENDING,RUNNING or PD,R, or all)`);
    if (!states.includes(state)) states.push(state);
  }
  return states;
}
