// Conversions between SQLite rows and the store's values: job records to and
// from the jobs table, events to and from job_events (type column + JSON payload).

import { jobId } from '../core/types.js';
import {
  JOB_EVENT_TYPES, JOB_STATES,
  type JobEvent, type JobEventType, type JobRecord, type JobState, type JsonObject, type StoredJobEvent,
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
  'requeue_count', 'last_seq',
] as const;

export function recordToRow(record: JobRecord): JobRow {
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
    last_seq: record.lastSeq,
  };
}

function jobState(value: string, id: number): JobState {
  if ((JOB_STATES as readonly string[]).includes(value)) return value as JobState;
  throw new Error(`job ${id}: unknown state '${value}' in the jobs table (written by a newer Taras? run rebuild)`);
}

export function rowToRecord(row: JoinedJobRow): JobRecord {
  const { script, request } = JSON.parse(row.submitted) as { script: string; request: JsonObject };
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
    lastSeq: row.last_seq,
  };
}

/** The payload column: the event without its type (which has its own column). */
export function eventPayload(event: JobEvent): string {
  const { type: _type, ...payload } = event;
  return JSON.stringify(payload);
}

export function rowToEvent(row: EventRow): StoredJobEvent {
  if (!(JOB_EVENT_TYPES as readonly string[]).includes(row.type)) {
    throw new Error(`job ${row.job_id} event ${row.seq}: unknown type '${row.type}' (written by a newer Taras?)`);
  }
  const event = { type: row.type as JobEventType, ...(JSON.parse(row.payload) as object) } as JobEvent;
  return { jobId: jobId(row.job_id), seq: row.seq, timeMs: row.time_ms, event };
}
