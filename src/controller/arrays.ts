// Job arrays in the controller: a submission with spec.array becomes one job
// per task (as Slurm stores them), committed in one transaction; each task's
// stored spec carries its task id and its index in the array, so the array's
// id (the first task's job id) is the task's id less its index. The text is
// parsed once per distinct text (cached): 10,000 tasks share one parse.

import type { ClusterConfig } from '../config/cluster.js';
import { arrayFacts, DEFAULT_MAX_ARRAY_SIZE, parseArraySpec, type ArrayFacts, type ArrayTasks } from '../jobspec/array.js';
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

/** Why this array request is refused (empty: it is fine or not an array). */
export function arrayRefusals(spec: JobSpec, config: Pick<ClusterConfig, 'maxArraySize'>): string[] {
  if (spec.array === undefined) return [];
  const result = parseArraySpec(spec.array.text, config.maxArraySize ?? DEFAULT_MAX_ARRAY_SIZE);
  const reasons = result.ok ? [] : [`--array ${result.message}`];
  if (spec.interactive !== undefined) reasons.push('--array: arrays are for batch jobs (taras submit), as in Slurm; leave --array out of taras run/alloc');
  if (spec.deadline !== undefined) reasons.push('--array: an array cannot have a --deadline (give each job its own submission)');
  return reasons;
}

/** How many jobs a submission makes: its tasks (1 for a plain job or an array refused later). */
export function taskCount(spec: JobSpec, config: Pick<ClusterConfig, 'maxArraySize'>): number {
  if (spec.array === undefined) return 1;
  const result = parseArraySpec(spec.array.text, config.maxArraySize ?? DEFAULT_MAX_ARRAY_SIZE);
  return result.ok ? result.value.taskIds.length : 1;
}

/** The specs to store for a submission: one per task (each with its task id and index), or the spec itself. */
export function expandArray(spec: JobSpec): JobSpec[] {
  if (spec.array === undefined) return [spec];
  const { text } = spec.array;
  const known = parsedArray(text);
  if (known === undefined) return [spec];
  return known.tasks.taskIds.map((taskId, index) => ({ ...spec, array: { text, taskId, index } }));
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
