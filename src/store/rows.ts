// Conversions between SQLite rows and the store's values: job records to and
// from the jobs table, events to and from job_events (type column + JSON payload).

import { jobId } from '../core/types.js';
import {
  JOB_EVENT_TYPES, JOB_STATES,
  type JobEvent, type JobEventType, type JobRecord, type JobState, type JsonObject, type QueuePlace, type StoredJobEvent,
} from './events.js';

/** A jobs row as written: the cached state of the job (script and request are in its submitted event). */
export interface JobRow {
  id: number;
  user_name: string;
  job_name: string;
  partition_name: string;
  script_path: string | null;
  state: string;
  held: number;
  reason: string | null;
  submit_time_ms: number;
  start_time_ms: number | null;
  end_time_ms: number | null;
  exit_code: number | null;
  nodes: string;
  planned_start_ms: number | null;
  reserved_nodes: string;
  requeue_count: number;
  eligible_time_ms: number | null;
  alloc_cpus: number | null;
  cpu_seconds: number | null;
  user_cpu_seconds: number | null;
  system_cpu_seconds: number | null;
  max_rss_kib: number | null;
  exit_signal: string | null;
  time_limit_s: number | null;
  /** JSON {key, priority} of a moved job (taras move), else null. */
  queue_place: string | null;
  /** JSON of the request's fields changed by `updated` events, else null. */
  amended: string | null;
  /** An array task's place in its array (its array's id is id - array_index) and its task id; null for other jobs. */
  array_index: number | null;
  array_task_id: number | null;
  last_seq: number;
}

/** A jobs row as read (SELECT_JOBS): joined with the payload of the job's submitted event. */
export interface JoinedJobRow extends JobRow {
  submitted: string;
}

/** Jobs rows with their submitted event's payload; add WHERE/ORDER BY on jobs columns. */
export const SELECT_JOBS = 'SELECT jobs.*, submitted.payload AS submitted FROM jobs JOIN job_events AS submitted ON submitted.job_id = jobs.id AND submitted.seq = 1';

export interface EventRow {
  job_id: number;
  seq: number;
  time_ms: number;
  type: string;
  payload: string;
}

/** Columns in the order of the insert statement's placeholders (store.ts). */
export const JOB_COLUMNS = [
  'id', 'user_name', 'job_name', 'partition_name', 'script_path', 'state', 'held', 'reason',
  'submit_time_ms', 'start_time_ms', 'end_time_ms', 'exit_code', 'nodes', 'planned_start_ms', 'reserved_nodes',
  'requeue_count', 'eligible_time_ms', 'alloc_cpus', 'cpu_seconds', 'user_cpu_seconds', 'system_cpu_seconds', 'max_rss_kib', 'exit_signal', 'time_limit_s', 'queue_place', 'amended',
  'array_index', 'array_task_id', 'last_seq',
] as const;

/** CPUs a request asks for (sacct's AllocCPUS): tasks (or nodes) times CPUs per task; null for a request without them. */
export function requestedCpus(request: JsonObject): number | null {
  const perTask = request.cpusPerTask;
  const tasks = request.ntasks ?? (request.nodes as { min?: unknown } | null | undefined)?.min;
  return typeof perTask === 'number' && typeof tasks === 'number' ? tasks * perTask : null;
}

/** An array task's place in its array and task id, from its request's `array` (the controller's); undefined for other jobs. */
function arrayPlaceOf(record: JobRecord): { index: number; taskId: number } | undefined {
  const array = record.request.array as { taskId?: unknown; index?: unknown } | null | undefined;
  return Number.isInteger(array?.taskId) && Number.isInteger(array?.index) ? { index: array!.index as number, taskId: array!.taskId as number } : undefined;
}

export function recordToRow(record: JobRecord): JobRow {
  const array = arrayPlaceOf(record);
  return {
    id: record.id,
    user_name: record.user,
    job_name: record.name,
    partition_name: record.partition,
    script_path: record.scriptPath,
    state: record.state,
    held: record.held ? 1 : 0,
    reason: record.reason,
    submit_time_ms: record.submitTimeMs,
    start_time_ms: record.startTimeMs,
    end_time_ms: record.endTimeMs,
    exit_code: record.exitCode,
    nodes: JSON.stringify(record.nodes),
    planned_start_ms: record.plannedStartMs,
    reserved_nodes: JSON.stringify(record.reservedNodes),
    requeue_count: record.requeueCount,
    eligible_time_ms: record.eligibleTimeMs,
    alloc_cpus: requestedCpus(record.request),
    cpu_seconds: record.usage?.cpuSeconds ?? null,
    user_cpu_seconds: record.usage?.userCpuSeconds ?? null,
    system_cpu_seconds: record.usage?.systemCpuSeconds ?? null,
    max_rss_kib: record.usage?.maxRssKiB ?? null,
    exit_signal: record.exitSignal,
    time_limit_s: typeof record.request.timeLimitSeconds === 'number' ? record.request.timeLimitSeconds : null,
    queue_place: record.queuePlace === null ? null : JSON.stringify(record.queuePlace),
    amended: record.amended === null ? null : JSON.stringify(record.amended),
    array_index: array?.index ?? null,
    array_task_id: array?.taskId ?? null,
    last_seq: record.lastSeq,
  };
}

function jobState(value: string, id: number): JobState {
  if ((JOB_STATES as readonly string[]).includes(value)) return value as JobState;
  throw new Error(`job ${id}: unknown state '${value}' in the jobs table (written by a newer Taras? run rebuild)`);
}

export function rowToRecord(row: JoinedJobRow): JobRecord {
  const { script: stored, request: submitted } = JSON.parse(row.submitted) as { script?: string; request: JsonObject };
  const script = stored ?? requestScript(submitted) ?? '';
  const amended = row.amended === null || row.amended === undefined ? null : JSON.parse(row.amended) as JsonObject;
  const request = amended === null ? submitted : { ...submitted, ...amended };
  return {
    id: jobId(row.id),
    user: row.user_name,
    name: row.job_name,
    partition: row.partition_name,
    scriptPath: row.script_path,
    script,
    request,
    state: jobState(row.state, row.id),
    held: row.held === 1,
    reason: row.reason,
    submitTimeMs: row.submit_time_ms,
    startTimeMs: row.start_time_ms,
    endTimeMs: row.end_time_ms,
    exitCode: row.exit_code,
    nodes: JSON.parse(row.nodes) as string[],
    plannedStartMs: row.planned_start_ms,
    reservedNodes: JSON.parse(row.reserved_nodes) as string[],
    requeueCount: row.requeue_count,
    eligibleTimeMs: row.eligible_time_ms ?? row.submit_time_ms,
    usage: row.cpu_seconds === null && row.user_cpu_seconds === null && row.system_cpu_seconds === null && row.max_rss_kib === null ? null
      : { cpuSeconds: row.cpu_seconds, userCpuSeconds: row.user_cpu_seconds, systemCpuSeconds: row.system_cpu_seconds, maxRssKiB: row.max_rss_kib },
    exitSignal: row.exit_signal,
    queuePlace: row.queue_place === null || row.queue_place === undefined ? null : JSON.parse(row.queue_place) as QueuePlace,
    amended,
    lastSeq: row.last_seq,
  };
}

/** The payload column: the event without its type (which has its own column). */
/** The script text a submitted event's request carries (the CLI sends the script there too), if it does. */
function requestScript(request: unknown): string | undefined {
  const text = (request as { script?: { text?: unknown } } | null | undefined)?.script?.text;
  return typeof text === 'string' ? text : undefined;
}

/**
 * An event's payload as stored: the event without its type. A submitted event's script is left out when its
 * request holds the same text (it always does from the CLI): stored once, not twice (a 1 MiB script took
 * 2 MiB); reading puts it back (rowToEvent, rowToRecord).
 */
export function eventPayload(event: JobEvent): string {
  const { type: _type, ...payload } = event;
  if (event.type === 'submitted' && requestScript(event.request) === event.script) {
    const { script: _script, ...rest } = payload as typeof payload & { script?: string };
    return JSON.stringify(rest);
  }
  return JSON.stringify(payload);
}

export function rowToEvent(row: EventRow): StoredJobEvent {
  if (!(JOB_EVENT_TYPES as readonly string[]).includes(row.type)) {
    throw new Error(`job ${row.job_id} event ${row.seq}: unknown type '${row.type}' (written by a newer Taras?)`);
  }
  const payload = JSON.parse(row.payload) as { script?: string; request?: unknown };
  if (row.type === 'submitted' && payload.script === undefined) payload.script = requestScript(payload.request) ?? '';
  const event = { type: row.type as JobEventType, ...payload } as JobEvent;
  return { jobId: jobId(row.job_id), seq: row.seq, timeMs: row.time_ms, event };
}

/** What `taras acct` and `taras report` read of a job: its row's columns only (no script, no request). */
export interface AccountingRow {
  readonly id: number;
  readonly user: string;
  readonly name: string;
  readonly partition: string;
  readonly state: JobState;
  readonly reason: string | null;
  readonly submitMs: number;
  readonly eligibleMs: number;
  readonly startMs: number | null;
  readonly endMs: number | null;
  /** The first planned start it was given (once started), or the latest plan while pending. */
  readonly plannedStartMs: number | null;
  readonly nodes: readonly string[];
  readonly allocCpus: number | null;
  /** Null: UNLIMITED. */
  readonly timeLimitSeconds: number | null;
  readonly exitCode: number | null;
  readonly exitSignal: string | null;
  readonly cpuSeconds: number | null;
  readonly userCpuSeconds: number | null;
  readonly systemCpuSeconds: number | null;
  readonly maxRssKiB: number | null;
  readonly requeueCount: number;
  /** An array task's array id and task id (sacct's JobID 12_3); null for other jobs. */
  readonly arrayJobId: number | null;
  readonly arrayTaskId: number | null;
}

/** The columns SELECT_ACCOUNTING reads, as AccountingRow names them. */
export const ACCOUNTING_COLUMNS = `id, user_name AS user, job_name AS name, partition_name AS partition, state, reason,
  submit_time_ms AS submitMs, coalesce(eligible_time_ms, submit_time_ms) AS eligibleMs, start_time_ms AS startMs, end_time_ms AS endMs,
  planned_start_ms AS plannedStartMs, nodes, alloc_cpus AS allocCpus, time_limit_s AS timeLimitSeconds, exit_code AS exitCode,
  exit_signal AS exitSignal, cpu_seconds AS cpuSeconds, user_cpu_seconds AS userCpuSeconds, system_cpu_seconds AS systemCpuSeconds,
  max_rss_kib AS maxRssKiB, requeue_count AS requeueCount, id - array_index AS arrayJobId, array_task_id AS arrayTaskId`;

const KNOWN_STATES: ReadonlySet<string> = new Set(JOB_STATES);

/** AccountingRow's fields in the order of ACCOUNTING_COLUMNS (GET /acct?format=rows sends rows as arrays in this order). */
export const ACCOUNTING_FIELDS = [
  'id', 'user', 'name', 'partition', 'state', 'reason', 'submitMs', 'eligibleMs', 'startMs', 'endMs', 'plannedStartMs', 'nodes', 'allocCpus',
  'timeLimitSeconds', 'exitCode', 'exitSignal', 'cpuSeconds', 'userCpuSeconds', 'systemCpuSeconds', 'maxRssKiB', 'requeueCount', 'arrayJobId', 'arrayTaskId',
] as const satisfies readonly (keyof AccountingRow)[];

/** A row read with ACCOUNTING_COLUMNS in raw mode (values in column order): one object, built field by field (100,000 rows a query). */
export function accountingRow(row: unknown[]): AccountingRow {
  const state = row[4] as string;
  if (!KNOWN_STATES.has(state)) jobState(state, row[0] as number);
  const nodes = row[11] as string;
  return {
    id: row[0] as number, user: row[1] as string, name: row[2] as string, partition: row[3] as string, state: state as JobState,
    reason: row[5] as string | null, submitMs: row[6] as number, eligibleMs: row[7] as number, startMs: row[8] as number | null,
    endMs: row[9] as number | null, plannedStartMs: row[10] as number | null, nodes: nodes === '[]' ? [] : (JSON.parse(nodes) as string[]),
    allocCpus: row[12] as number | null, timeLimitSeconds: row[13] as number | null, exitCode: row[14] as number | null,
    exitSignal: row[15] as string | null, cpuSeconds: row[16] as number | null, userCpuSeconds: row[17] as number | null,
    systemCpuSeconds: row[18] as number | null, maxRssKiB: row[19] as number | null, requeueCount: row[20] as number,
    arrayJobId: row[21] as number | null, arrayTaskId: row[22] as number | null,
  };
}
