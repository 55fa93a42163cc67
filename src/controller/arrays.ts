// Job arrays in the controller: a submission with spec.array becomes one job
// per task (as Slurm stores them), committed in one transaction; each task's
// stored spec carries its task id and its index in the array, so the array's
// id (the first task's job id) is the task's id less its index. The text is
// parsed once per distinct text (cached): 10,000 tasks share one parse.

import type { ClusterConfig } from '../config/cluster.js';
import { arrayFacts, DEFAULT_MAX_ARRAY_SIZE, formatTaskIds, parseArrayJobId, parseArraySpec, type ArrayFacts, type ArrayTasks } from '../jobspec/array.js';
import type { JobSpec } from '../jobspec/types.js';
import type { JobRecord } from '../store/events.js';

/** One task of an array, as the start order, the environment and the listings see it. */
export interface ArrayTaskInfo extends ArrayFacts {
  /** The array's id: its first task's job id (SLURM_ARRAY_JOB_ID, %A). */
  readonly jobId: number;
  readonly taskId: number;
  readonly throttle?: number;
}

const parsed = new Map<string, { tasks: ArrayTasks; facts: ArrayFacts }>();

/** --array's tasks and facts for a text this controller accepted (stored texts were checked when stored). */
function parsedArray(text: string): { tasks: ArrayTasks; facts: ArrayFacts } | undefined {
  let known = parsed.get(text);
  if (known === undefined) {
    // Stored texts are read without the size cap: a lowered max_array_size must not strand stored tasks.
    const result = parseArraySpec(text, Number.MAX_SAFE_INTEGER);
    if (!result.ok) return undefined;
    known = { tasks: result.value, facts: arrayFacts(result.value.taskIds) };
    if (parsed.size > 1000) parsed.clear();
    parsed.set(text, known);
  }
  return known;
}

/** parseArraySpec's answers by cap and text: every task of an array carries its text, checked again at each update. */
const checkedTexts = new Map<string, ReturnType<typeof parseArraySpec>>();

function checkedArray(text: string, config: Pick<ClusterConfig, 'maxArraySize'>): ReturnType<typeof parseArraySpec> {
  const max = config.maxArraySize ?? DEFAULT_MAX_ARRAY_SIZE;
  const key = `${max}:${text}`;
  let result = checkedTexts.get(key);
  if (result === undefined) {
    result = parseArraySpec(text, max);
    if (checkedTexts.size > 1000) checkedTexts.clear();
    checkedTexts.set(key, result);
  }
  return result;
}

/** Why this array request is refused (empty: it is fine or not an array). */
export function arrayRefusals(spec: JobSpec, config: Pick<ClusterConfig, 'maxArraySize'>): string[] {
  if (spec.array === undefined) return [];
  const result = checkedArray(spec.array.text, config);
  const reasons = result.ok ? [] : [`--array ${result.message}`];
  if (spec.interactive !== undefined) reasons.push('--array: arrays are for batch jobs (taras submit), as in Slurm; leave --array out of taras run/alloc');
  if (spec.deadline !== undefined) reasons.push('--array: an array cannot have a --deadline (give each job its own submission)');
  return reasons;
}

/** How many jobs a submission makes: its tasks (1 for a plain job or an array refused later). */
export function taskCount(spec: JobSpec, config: Pick<ClusterConfig, 'maxArraySize'>): number {
  if (spec.array === undefined) return 1;
  const result = checkedArray(spec.array.text, config);
  return result.ok ? result.value.taskIds.length : 1;
}

/** The specs to store for a submission: one per task (each with its task id and index), or the spec itself. */
export function expandArray(spec: JobSpec): JobSpec[] {
  if (spec.array === undefined) return [spec];
  const { text } = spec.array;
  const known = parsedArray(text);
  if (known === undefined) return [spec];
  // The submitting shell's environment and the script's text (most of a request) are stored once, with the
  // first task; the others take them from there when they start (withArrayShared): 10,000 copies of the
  // environment were half the commit, and a 10,000-task array kept 10,000 copies of its script.
  const { submitEnv: _environment, ...withoutEnvironment } = spec as JobSpec & { submitEnv?: unknown };
  const sharing = { ...withoutEnvironment, script: { ...spec.script, text: '' } };
  return known.tasks.taskIds.map((taskId, index) => ({ ...(index === 0 ? spec : sharing), array: { text, taskId, index } }));
}

/**
 * The id of the array a task belongs to (its first task's id); undefined for a plain job. From the stored
 * index alone, so it holds even for a text that no longer parses.
 */
export function arrayIdOf(record: Pick<JobRecord, 'id' | 'request'>): number | undefined {
  const index = (record.request as { array?: { index?: unknown } }).array?.index;
  return typeof index === 'number' && Number.isSafeInteger(index) && index >= 0 && index < record.id ? record.id - index : undefined;
}

/** The id of the first task of the array whose script and environment this task shares; undefined for a first task or a plain job. */
export function sharedTaskOf(record: Pick<JobRecord, 'id' | 'request'>): number | undefined {
  const arrayId = arrayIdOf(record);
  return arrayId === record.id ? undefined : arrayId;
}

/**
 * A task's spec for its start order: with the submitting shell's environment and the script's text, which
 * only its array's first task stores (`first`, the record of sharedTaskOf's id; undefined for a job that
 * shares nothing). Tasks stored before the script was shared carry their own text.
 */
export function withArrayShared(spec: JobSpec, first: Pick<JobRecord, 'request' | 'script'> | undefined): JobSpec {
  const needsEnvironment = (spec as { submitEnv?: unknown }).submitEnv === undefined;
  const needsScript = spec.script.text === '';
  if (first === undefined || (!needsEnvironment && !needsScript)) return spec;
  const submitEnv = needsEnvironment ? (first.request as { submitEnv?: unknown }).submitEnv : undefined;
  return {
    ...spec,
    ...(submitEnv === undefined ? {} : { submitEnv }),
    ...(needsScript ? { script: { ...spec.script, text: first.script } } : {}),
  } as JobSpec;
}

/** Why a task whose array's first task no longer holds the script it shares cannot run (it ends FAILED). */
export const sharedScriptGone = (firstId: number): string => `its array's first task (job ${firstId}) no longer holds the script the task shares with it`;

/**
 * `read` remembering what it read: arrays' first tasks, each read once however many of its tasks (up to
 * 10,000) ask, for one recovery or one scheduling pass.
 */
export function firstTaskReader<R>(read: (id: number) => R | undefined): (id: number) => R | undefined {
  const seen = new Map<number, R | undefined>();
  return (id) => {
    if (!seen.has(id)) seen.set(id, read(id));
    return seen.get(id);
  };
}

/**
 * A job's script text as submitted: a task that shares its array's first task's reads it there; undefined
 * when that is gone (the first task was purged, keep_finished after the last of the array's tasks that ran
 * ended; or a damaged database).
 */
export function scriptOf(record: Pick<JobRecord, 'id' | 'request' | 'script'>, lookup: (id: number) => Pick<JobRecord, 'script'> | undefined): string | undefined {
  const firstId = record.script === '' ? sharedTaskOf(record) : undefined;
  if (firstId === undefined) return record.script;
  const text = lookup(firstId)?.script;
  return text === undefined || text === '' ? undefined : text;
}

/** How many tasks a stored array text makes; undefined for a text that no longer parses. */
export function arrayTaskTotal(text: string): number | undefined {
  return parsedArray(text)?.tasks.taskIds.length;
}

/** A stored job's place in its array; undefined for a job that is not a task. */
export function arrayTaskOf(record: Pick<JobRecord, 'id' | 'request'>): ArrayTaskInfo | undefined {
  const array = (record.request as { array?: { text?: unknown; taskId?: unknown; index?: unknown } }).array;
  if (array === undefined || typeof array.text !== 'string' || typeof array.taskId !== 'number' || typeof array.index !== 'number') return undefined;
  const known = parsedArray(array.text);
  if (known === undefined) return undefined;
  return { ...known.facts, jobId: record.id - array.index, taskId: array.taskId, ...(known.tasks.throttle === undefined ? {} : { throttle: known.tasks.throttle }) };
}

/** The start order's `array` for a task (spread into the order); {} for other jobs. */
export function arrayOrder(record: Pick<JobRecord, 'id' | 'request'>): { array?: { jobId: number; taskId: number; count: number; min: number; max: number; step: number } } {
  const task = arrayTaskOf(record);
  if (task === undefined) return {};
  const { jobId, taskId, count, min, max, step } = task;
  return { array: { jobId, taskId, count, min, max, step } };
}

/**
 * The `%N` throttle (sbatch --array=...%N): at most N tasks of an array are
 * in the core at once (queued or running); the others wait here, out of the
 * core, in task order, and are handed to it as tasks end. So the core can
 * never start more than N. Their planned starts follow from the ends of the
 * tasks ahead (`plannedStarts`): each waiting task takes the slot that frees
 * first.
 */
export class ArrayThrottle {
  private readonly arrays = new Map<number, { limit: number; released: Set<number>; waiting: number[]; next: number }>();
  private readonly waitingIds = new Map<number, number>();
  private estimates: Map<number, number | null> | null = null;

  private entry(task: ArrayTaskInfo) {
    let entry = this.arrays.get(task.jobId);
    if (entry === undefined) this.arrays.set(task.jobId, entry = { limit: task.throttle!, released: new Set(), waiting: [], next: 0 });
    return entry;
  }

  /** A task already running (at recovery): it holds a slot. */
  running(record: Pick<JobRecord, 'id' | 'request'>): void {
    const task = arrayTaskOf(record);
    if (task?.throttle !== undefined) this.entry(task).released.add(record.id);
  }

  /** Whether a pending job goes to the core now (a plain job, or a task with a free slot); false: it waits here. */
  admit(record: Pick<JobRecord, 'id' | 'request'>): boolean {
    const task = arrayTaskOf(record);
    if (task?.throttle === undefined) return true;
    const entry = this.entry(task);
    this.estimates = null;
    if (entry.released.size < entry.limit && entry.next >= entry.waiting.length) {
      entry.released.add(record.id);
      return true;
    }
    entry.waiting.push(record.id);
    this.waitingIds.set(record.id, task.jobId);
    return false;
  }

  /**
   * A new %N for an array (none: no limit): its `running` tasks hold slots, its waiting tasks are let go; the
   * caller admits its pending tasks again, in order (they carry the new %N).
   */
  reset(arrayId: number, limit: number | undefined, running: readonly number[]): void {
    const entry = this.arrays.get(arrayId);
    if (entry !== undefined) for (const id of entry.waiting.slice(entry.next)) this.waitingIds.delete(id);
    this.arrays.delete(arrayId);
    if (limit !== undefined) this.arrays.set(arrayId, { limit, released: new Set(running), waiting: [], next: 0 });
    this.estimates = null;
  }

  /** The %N of each throttled array that has tasks not ended, by the array's id (sacct's folded 12_[4-15%2]). */
  limits(): Map<number, number> {
    return new Map([...this.arrays].map(([arrayId, entry]) => [arrayId, entry.limit]));
  }

  /** Whether this job waits for a slot of its array (not in the core). */
  isWaiting(id: number): boolean {
    return this.waitingIds.has(id);
  }

  /**
   * The tasks that go to the core now: slots freed by tasks no longer
   * `active` go to the next waiting ones (skipping those gone, and those
   * `held`, which stay waiting).
   */
  release(active: (id: number) => boolean, held: (id: number) => boolean): number[] {
    const out: number[] = [];
    for (const [arrayId, entry] of this.arrays) {
      for (const id of entry.released) if (!active(id)) entry.released.delete(id);
      const skipped: number[] = [];
      while (entry.released.size < entry.limit && entry.next < entry.waiting.length) {
        const id = entry.waiting[entry.next++];
        if (!active(id)) {
          this.waitingIds.delete(id);
          continue;
        }
        if (held(id)) {
          skipped.push(id);
          continue;
        }
        this.waitingIds.delete(id);
        entry.released.add(id);
        out.push(id);
      }
      // Put back in place (a new array, not a spread into splice's arguments: held tasks may be hundreds of thousands).
      if (skipped.length > 0) entry.waiting = [...entry.waiting.slice(0, entry.next), ...skipped, ...entry.waiting.slice(entry.next)];
      if (entry.next > 1024 && entry.next * 2 > entry.waiting.length) {
        entry.waiting = entry.waiting.slice(entry.next);
        entry.next = 0;
      }
      if (entry.released.size === 0 && entry.next >= entry.waiting.length) this.arrays.delete(arrayId);
    }
    if (out.length > 0) this.estimates = null;
    return out;
  }

  /** Planned starts must be worked out again (a pass ran, a task started or ended). */
  invalidate(): void {
    this.estimates = null;
  }

  /**
   * A waiting task's planned start (ms): the slots free when the tasks
   * ahead end (`endOf`: a task's planned or predicted end, ms, null: not
   * known); each waiting task takes the slot that frees first and holds it
   * `limitMs`. null when an end ahead is not known.
   */
  plannedStart(id: number, nowMs: number, endOf: (id: number) => number | null, limitMs: (id: number) => number): number | null {
    const arrayId = this.waitingIds.get(id);
    if (arrayId === undefined) return null;
    if (this.estimates === null) this.estimates = new Map();
    if (!this.estimates.has(id)) {
      const entry = this.arrays.get(arrayId)!;
      const ends = [...entry.released].map(endOf);
      const known = !ends.includes(null);
      const slots = (ends as number[]).map((end) => Math.max(end, nowMs)).sort((a, b) => a - b);
      while (slots.length < entry.limit) slots.unshift(nowMs);
      for (let i = entry.next; i < entry.waiting.length; i++) {
        const waiting = entry.waiting[i];
        if (!this.waitingIds.has(waiting)) continue;
        // The earliest free slot: slots stay sorted (insert the new end in place).
        const start = slots.shift()!;
        this.estimates.set(waiting, known ? start : null);
        const end = start + limitMs(waiting);
        let at = slots.findIndex((value) => value > end);
        if (at < 0) at = slots.length;
        slots.splice(at, 0, end);
      }
    }
    return this.estimates.get(id) ?? null;
  }
}

/** The job ids of an array's tasks, in task order: consecutive from the array's id. */
export function arrayMembers(arrayId: number, task: ArrayTaskInfo): number[] {
  return Array.from({ length: task.count }, (_, index) => arrayId + index);
}

/**
 * What a job id as users write it names (the one resolver every route uses:
 * cancel, show, hold, release): `N` is job N, or, when N is an array's id,
 * every task of the array (as scancel N); `N_T` is task T of array N. An
 * error names what is wrong.
 */
export function resolveJobRef(ref: string | number, lookup: (id: number) => Pick<JobRecord, 'id' | 'request'> | undefined): { ids: number[]; array: boolean } | { error: string } {
  const resolved = resolveJobRange(ref, lookup);
  return 'count' in resolved ? { ids: Array.from({ length: resolved.count }, (_, index) => resolved.first + index), array: true } : resolved;
}

/**
 * As resolveJobRef, with a whole array as its first id and its count of tasks (ids first to first + count - 1),
 * not every id: what a check at every scheduling pass needs of an array of 10,000 tasks.
 */
export function resolveJobRange(ref: string | number, lookup: (id: number) => Pick<JobRecord, 'id' | 'request'> | undefined):
  { first: number; count: number; array: true } | { ids: number[]; array: false } | { error: string } {
  const parsedRef = parseArrayJobId(String(ref));
  if (parsedRef === undefined) return { error: `'${ref}' is not a job id: write N or, for tasks of a job array, ARRAYID_TASK (12_3) or ARRAYID_[TASKS] (12_[1-3,7]), as \`taras queue\` shows them` };
  const record = lookup(parsedRef.id);
  if (record === undefined) return { error: `no job ${parsedRef.id}` };
  const task = arrayTaskOf(record);
  const isArray = task !== undefined && task.jobId === parsedRef.id;
  if (parsedRef.taskIds === undefined) return isArray ? { first: parsedRef.id, count: task.count, array: true } : { ids: [parsedRef.id], array: false };
  const written = String(ref).trim().slice(String(parsedRef.id).length);
  if (!isArray) return { error: `job ${parsedRef.id} is not a job array: write ${task === undefined ? parsedRef.id : `${task.jobId}_${task.taskId}`} without ${written}` };
  const taskIds = parsedArray((record.request as { array: { text: string } }).array.text)!.tasks.taskIds;
  const ids: number[] = [];
  for (const taskId of parsedRef.taskIds) {
    const index = binarySearch(taskIds, taskId);
    if (index < 0) return { error: `array ${parsedRef.id} has no task ${taskId} (its tasks: ${formatTaskIds(taskIds)})` };
    ids.push(parsedRef.id + index);
  }
  return { ids, array: false };
}

function binarySearch(values: readonly number[], wanted: number): number {
  let low = 0;
  let high = values.length - 1;
  while (low <= high) {
    const middle = (low + high) >> 1;
    if (values[middle] === wanted) return middle;
    if (values[middle] < wanted) low = middle + 1;
    else high = middle - 1;
  }
  return -1;
}
