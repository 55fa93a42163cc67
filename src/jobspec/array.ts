// Job arrays as sbatch's --array takes them: a comma list of task ids and
// ranges, each range with an optional `:step`, and an optional `%N` at the
// end (at most N tasks of the array run at once). `0-15:4%4` is tasks 0, 4,
// 8 and 12, at most four at once; `1,3,5-9` is 1, 3, 5, 6, 7, 8, 9.
// Task ids are below the cluster's max_array_size (Slurm's MaxArraySize).
// Pure: no I/O.

/** An array request as written and as parsed: the task ids, ascending and distinct, and the throttle. */
export interface ArrayTasks {
  readonly text: string;
  readonly taskIds: readonly number[];
  /** `%N`: at most this many tasks run at once; absent: no limit. */
  readonly throttle?: number;
}

/** What every task of an array is told (SLURM_ARRAY_TASK_COUNT, _MIN, _MAX, _STEP). */
export interface ArrayFacts {
  readonly count: number;
  readonly min: number;
  readonly max: number;
  /** The gap between consecutive task ids when it is the same everywhere, else 1 (one task: 1). */
  readonly step: number;
}

/** Slurm's default MaxArraySize is 1001; Taras allows 0-9999 and 1-10000 by default. */
export const DEFAULT_MAX_ARRAY_SIZE = 10_001;

/** The largest max_array_size a cluster may set (Slurm's limit): what the CLI checks before the controller checks its own. */
export const MAX_ARRAY_SIZE_LIMIT = 4_000_001;
/** The most task ids one ARRAYID_[TASKS] may name (the array's id names all of them). */
export const MAX_TASKS_NAMED = 100_000;

const FORM = 'write ids and ranges such as 0-15, 1,3,5-9 or 0-15:4, optionally ending in %N (at most N tasks at once), e.g. --array=0-99%10';

/**
 * Parses `--array`'s value. `maxArraySize`: every task id must be below it
 * (Slurm's MaxArraySize). Errors name the part that is wrong and the form.
 */
export function parseArraySpec(raw: string, maxArraySize = DEFAULT_MAX_ARRAY_SIZE, maxNamed = maxArraySize): { ok: true; value: ArrayTasks } | { ok: false; message: string } {
  const text = raw.trim();
  const fail = (what: string) => ({ ok: false as const, message: `'${text}': ${what}; ${FORM}` });
  if (text === '') return fail('expected task ids');
  const percent = text.indexOf('%');
  const list = percent < 0 ? text : text.slice(0, percent);
  let throttle: number | undefined;
  if (percent >= 0) {
    const n = text.slice(percent + 1);
    if (!/^\d+$/.test(n) || Number(n) < 1) return fail(`'%${n}' is not a task limit (a whole number from 1)`);
    throttle = Number(n);
  }
  const ids = new Set<number>();
  // Ids named in all, repeats included: ranges repeated in a short text would otherwise cost the reader
  // billions of steps (red team: 1_[0-4000000,...] held the controller for minutes).
  let named = 0;
  for (const part of list.split(',')) {
    const match = /^(\d+)(?:-(\d+)(?::(\d+))?)?$/.exec(part);
    if (!match) return fail(part === '' ? 'an empty item between commas' : `'${part}' is not a task id or range`);
    const first = Number(match[1]);
    const last = match[2] === undefined ? first : Number(match[2]);
    const step = match[3] === undefined ? 1 : Number(match[3]);
    if (last < first) return fail(`the range ${part} ends before it starts`);
    if (step < 1) return fail(`the step in ${part} must be at least 1`);
    if (last >= maxArraySize) {
      return {
        ok: false,
        message: maxArraySize >= MAX_ARRAY_SIZE_LIMIT
          ? `'${text}': task id ${last} is above the largest any cluster allows (${MAX_ARRAY_SIZE_LIMIT - 1}, the most Slurm's MaxArraySize may be); use smaller ids`
          : `'${text}': task id ${last} is above the largest this cluster allows (${maxArraySize - 1}: max_array_size = ${maxArraySize} in cluster.toml, Slurm's MaxArraySize); use smaller ids or ask an administrator to raise it`,
      };
    }
    named += Math.floor((last - first) / step) + 1;
    if (named > maxNamed) return fail(`it names more than ${maxNamed} task ids`);
    for (let id = first; id <= last; id += step) ids.add(id);
  }
  return { ok: true, value: { text, taskIds: [...ids].sort((a, b) => a - b), ...(throttle === undefined ? {} : { throttle }) } };
}

/** Count, min, max and step of an array's task ids (ascending). */
export function arrayFacts(taskIds: readonly number[]): ArrayFacts {
  const min = taskIds[0];
  const max = taskIds[taskIds.length - 1];
  let step = taskIds.length > 1 ? taskIds[1] - taskIds[0] : 1;
  for (let i = 2; i < taskIds.length && step !== 1; i++) if (taskIds[i] - taskIds[i - 1] !== step) step = 1;
  return { count: taskIds.length, min, max, step };
}

/**
 * Task ids in squeue's folded form (without the brackets): runs of
 * consecutive ids as `A-B`, others listed: `1,3,5-9`; with a throttle `%N`.
 */
export function formatTaskIds(taskIds: readonly number[], throttle?: number): string {
  const parts: string[] = [];
  for (let i = 0; i < taskIds.length;) {
    let j = i;
    while (j + 1 < taskIds.length && taskIds[j + 1] === taskIds[j] + 1) j++;
    parts.push(j === i ? String(taskIds[i]) : `${taskIds[i]}-${taskIds[j]}`);
    i = j + 1;
  }
  return parts.join(',') + (throttle === undefined ? '' : `%${throttle}`);
}

/** SLURM_BITSTR_LEN as Slurm reads it (atoi): unset or negative 64, 0 no cut, at most 4096. */
export function bitstrLenOf(value: string | undefined): number {
  if (value === undefined) return 64;
  const n = Number(/^\s*([+-]?\d+)/.exec(value)?.[1] ?? 0);
  return n < 0 ? 64 : Math.min(n, 4096);
}

/**
 * Task ids as Slurm prints an array record's task string (sacct's 12_[...]):
 * a step range `1-21:2` when the ids span more than 10, are more than 5 and
 * are evenly spaced with a gap; else `1,3,5-9` cut to `bitstrLen` (SLURM_BITSTR_LEN;
 * 0: no cut) with `...` at the end; then `%N` for a throttle. `taskIds` ascending.
 */
export function slurmTaskString(taskIds: readonly number[], throttle: number | undefined, bitstrLen = 64): string {
  const { count, min, max, step } = arrayFacts(taskIds);
  let text: string;
  if (max - min > 10 && count > 5 && taskIds[1] !== min + 1 && step > 1) text = `${min}-${max}:${step}`;
  else {
    text = formatTaskIds(taskIds);
    // Slurm formats into a buffer of bitstrLen bytes and marks a cut (or a near-full buffer) with three dots.
    const size = Math.max(bitstrLen, 4);
    if (bitstrLen > 0 && text.length >= size - 2) text = `${text.slice(0, size - 4)}...`;
  }
  return throttle ? `${text}%${throttle}` : text;
}

/** A task's name as Slurm shows it: `ARRAYID_TASK`. */
export function taskName(arrayJobId: number, taskId: number): string {
  return `${arrayJobId}_${taskId}`;
}

/**
 * `12`, `12_3`, `12_[1-3,7]` (as scancel takes them): the job (or array) id
 * and the task ids named; undefined when the text is none of these.
 */
export function parseArrayJobId(text: string): { id: number; taskIds?: number[] } | undefined {
  const match = /^(\d+)(?:_(\d+|\[[^\]]+\]))?$/.exec(text.trim());
  if (!match) return undefined;
  const id = Number(match[1]);
  if (!Number.isSafeInteger(id) || id < 1) return undefined;
  if (match[2] === undefined) return { id };
  // A task id past what a number holds exactly is none (12_99999999999999999999 was told 'no task 100000000000000000000').
  if (!match[2].startsWith('[')) return Number.isSafeInteger(Number(match[2])) ? { id, taskIds: [Number(match[2])] } : undefined;
  const inner = parseArraySpec(match[2].slice(1, -1), MAX_ARRAY_SIZE_LIMIT, MAX_TASKS_NAMED);
  return inner.ok && inner.value.throttle === undefined ? { id, taskIds: [...inner.value.taskIds] } : undefined;
}
