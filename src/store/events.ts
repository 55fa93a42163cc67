// A job's life as a log of facts (Flux's eventlog): the event types, the job
// record derived from them, and `replay`, the pure fold from one to the other.
// The store checks every append against this same fold, so a log that was
// accepted always replays, and the jobs table is only a cache of `replay`.

import type { JobId } from '../core/types.js';

/** Wall-clock time in milliseconds since the Unix epoch (the controller's clock). */
export type EpochMs = number;

export type JsonValue = string | number | boolean | null | readonly JsonValue[] | { readonly [key: string]: JsonValue };
export type JsonObject = { readonly [key: string]: JsonValue };

/** How a job left the system; the last state it ever has (unless requeued). */
export const END_STATES = ['COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT', 'NODE_FAIL', 'OUT_OF_MEMORY', 'PREEMPTED', 'DEADLINE'] as const;
export type EndState = (typeof END_STATES)[number];
/** SUSPENDED: stopped (SIGSTOP) on its nodes, which it keeps (Slurm's scontrol suspend, PreemptMode=SUSPEND). */
export const JOB_STATES = ['PENDING', 'RUNNING', 'COMPLETING', 'SUSPENDED', ...END_STATES] as const;
export type JobState = (typeof JOB_STATES)[number];

export const isEndState = (state: JobState): state is EndState => (END_STATES as readonly string[]).includes(state);

/** What a submission records: who, what, where, plus the full request as the controller parsed it. */
export interface NewJob {
  readonly user: string;
  readonly name: string;
  readonly partition: string;
  /** Where the script came from on the submitting host, when it came from a file. */
  readonly scriptPath: string | null;
  /** The script's contents at submission (the file may change or vanish later). */
  readonly script: string;
  /** Every option of the request (nodes, limits, output patterns, ...); opaque to the store. */
  readonly request: JsonObject;
}

/** CPU time (seconds) and peak memory of a job's processes; null: not measured on its node. */
export interface JobUsage {
  readonly cpuSeconds: number | null;
  readonly userCpuSeconds: number | null;
  readonly systemCpuSeconds: number | null;
  readonly maxRssKiB: number | null;
}

export type JobEvent =
  | ({ readonly type: 'submitted' } & NewJob)
  /** A promise: the job will start by `plannedStartMs` (on `nodes`, when the policy reserves nodes). */
  | { readonly type: 'planned'; readonly plannedStartMs: EpochMs; readonly nodes: readonly string[] }
  /** `promisedMs`: the first planned start the job was given (absent in logs written before it was kept). */
  | { readonly type: 'started'; readonly nodes: readonly string[]; readonly promisedMs?: EpochMs | null }
  | { readonly type: 'signalled'; readonly signal: string; readonly reason?: string; /** A cancel (the job is to end CANCELLED), not a plain signal. */ readonly cancel?: boolean;
      /** A preemption: the job is to be requeued (or end PREEMPTED) once it exits or is killed `graceSeconds` later. */
      readonly preempt?: 'requeue' | 'cancel'; readonly graceSeconds?: number;
      /** The owner's own `taras requeue`: requeued, the job queues as if submitted then (not in its old place). */
      readonly requeueAsNew?: boolean }
  /** The job finished a checkpoint: it said so (`taras checkpointed`) or exited after the preemption signal. */
  | { readonly type: 'checkpointed'; readonly by: 'job' | 'exit' }
  /**
   * Stopped on its nodes (SIGSTOP), which it keeps; `resumed` continues it. `by` 'preemption': suspended for
   * another job (a partition's, or preempt(..., 'suspend'): `preemptor` when known); its nodes went back to the
   * core and it resumes by itself once they are free again.
   */
  | { readonly type: 'suspended'; readonly reason?: string; readonly by?: 'admin' | 'preemption'; readonly preemptor?: JobId }
  | { readonly type: 'resumed'; readonly reason?: string }
  /** The job's processes are gone or going; its nodes are being cleaned up. */
  | { readonly type: 'completing' }
  /**
   * `usage`: what the job's processes used, as its supervisor measured it (absent in logs written before it was
   * carried, and for jobs that never ran); `signal`: the signal that ended the job's main process (SIGKILL...).
   */
  | { readonly type: 'ended'; readonly state: EndState; readonly exitCode: number | null; readonly reason?: string; readonly usage?: JobUsage; readonly signal?: string | null }
  /** Back to the queue with its original submit time (node failure with --requeue, admin requeue). */
  | { readonly type: 'requeued'; readonly reason?: string; /** Queued as if submitted now (the owner's own requeue): its submit time becomes the requeue's. */ readonly asNew?: boolean;
      /** With asNew: its place in the queue order (behind every job submitted before the requeue); absent in older logs. */ readonly queueKey?: number }
  /**
   * `taras move ID --after OTHER` (seed 000 3.1.4): the pending job's place in the queue order, as the key and
   * priority tier it sorts by (the queue is ordered by priority, then key); `after` is the job it was put behind (0: the front).
   */
  | { readonly type: 'moved'; readonly after: number; readonly key: number; readonly priority: number; readonly by?: 'user' | 'admin' }
  /** `scontrol update` / `taras update`: the request's fields that changed (a pending job's name, partition, timeLimitSeconds; a running one's timeLimitSeconds; an array's text). */
  | { readonly type: 'updated'; readonly changes: JsonObject; readonly by?: 'user' | 'admin' }
  /** `by` admin: an administrator's hold, which its owner cannot release (Slurm's JobHeldAdmin); absent: the user's. */
  | { readonly type: 'held'; readonly reason?: string; readonly by?: 'user' | 'admin' }
  | { readonly type: 'released' }
  /** A priority job's deadline guarantee was lost or its deadline missed, and why (seed 000 2.2.3's excuses, or what changed in the plan). */
  | { readonly type: 'deadline'; readonly missed: boolean; readonly cause: string };

export type JobEventType = JobEvent['type'];

/** A held job's reason: Slurm's names for a user's and an administrator's hold. */
export const HELD_BY_USER = 'JobHeldUser';
export const HELD_BY_ADMIN = 'JobHeldAdmin';
/** Every event but the first: what happens to a job that exists. */
export type TransitionEvent = Exclude<JobEvent, { readonly type: 'submitted' }>;

export const JOB_EVENT_TYPES: readonly JobEventType[] = [
  'submitted', 'planned', 'started', 'signalled', 'completing', 'ended', 'requeued', 'held', 'released', 'checkpointed', 'suspended', 'resumed', 'deadline',
  'moved', 'updated',
];

/** An event as stored: which job, its position in that job's log (1, 2, ...), and when. */
export interface StoredJobEvent {
  readonly jobId: JobId;
  readonly seq: number;
  readonly timeMs: EpochMs;
  readonly event: JobEvent;
}

/** A job's current state: exactly what `replay` derives from its events. */
export interface JobRecord extends NewJob {
  readonly id: JobId;
  readonly state: JobState;
  /** A held job stays PENDING but is not considered for starting. */
  readonly held: boolean;
  /** Why it is held, was requeued, or ended (when the event said). */
  readonly reason: string | null;
  readonly submitTimeMs: EpochMs;
  readonly startTimeMs: EpochMs | null;
  readonly endTimeMs: EpochMs | null;
  readonly exitCode: number | null;
  /** Nodes it runs or ran on; empty while pending. */
  readonly nodes: readonly string[];
  /** The latest promise (planned event); kept after the start so prediction can be compared with reality. */
  readonly plannedStartMs: EpochMs | null;
  readonly reservedNodes: readonly string[];
  readonly requeueCount: number;
  /** When it could first start (Slurm's Eligible): its submission, or its last release from a hold. */
  readonly eligibleTimeMs: EpochMs;
  /** What its last run used (from its `ended` event); null while it runs, and for old logs and jobs that never ran. */
  readonly usage: JobUsage | null;
  /** The signal that ended its main process (sacct's ExitCode `0:9`); null when it exited or is not known. */
  readonly exitSignal: string | null;
  /** Its place in the queue order when moved (or requeued as new): the key and priority tier it sorts by; null: by submission. */
  readonly queuePlace: QueuePlace | null;
  /** The request's fields changed since submission (`updated` events), already merged into `request`; null: none. */
  readonly amended: JsonObject | null;
  /** Seq of the last event applied: the next append is lastSeq + 1. */
  readonly lastSeq: number;
}

/** A moved job's place: sorted by `priority` (null: its partition's), then `key` (the job id of an unmoved job). */
export interface QueuePlace {
  readonly key: number;
  readonly priority: number | null;
}

/** An event that does not fit the job's state: a caller's bug or a race (cancel after end). */
export class TransitionError extends Error {
  constructor(
    readonly jobId: JobId,
    readonly from: JobState | 'nothing',
    readonly eventType: JobEventType,
    detail: string,
  ) {
    super(`job ${jobId}: cannot apply '${eventType}' to ${from === 'nothing' ? 'a job with no events' : `a ${from} job`}: ${detail}`);
    this.name = 'TransitionError';
  }
}

const RUNNING_STATES: readonly JobState[] = ['RUNNING', 'COMPLETING', 'SUSPENDED'];

/** Which states each event may follow, and why not otherwise (the message names the fix). */
function refuse(record: JobRecord, event: TransitionEvent): string | undefined {
  const { state, held } = record;
  switch (event.type) {
    case 'planned':
      return state === 'PENDING' ? undefined : 'only pending jobs get a planned start';
    case 'started':
      if (state !== 'PENDING') return 'only pending jobs start';
      if (held) return 'release the job before starting it';
      return event.nodes.length > 0 ? undefined : 'a start needs at least one node';
    case 'signalled':
      return RUNNING_STATES.includes(state) ? undefined : 'only running or completing jobs have processes to signal';
    case 'completing':
      return state === 'RUNNING' ? undefined : 'only running jobs go to COMPLETING';
    case 'ended':
      if (RUNNING_STATES.includes(state)) return undefined;
      if (state === 'PENDING') {
        return event.state === 'CANCELLED' || event.state === 'FAILED' || event.state === 'DEADLINE' ? undefined : 'a job that never started can only end CANCELLED or FAILED (or DEADLINE: --deadline-policy cancel)';
      }
      return 'the job has already ended';
    case 'requeued':
      return state === 'PENDING' ? 'the job is already pending' : undefined;
    case 'held':
      if (state !== 'PENDING') return 'only pending jobs can be held';
      return held ? 'the job is already held' : undefined;
    case 'released':
      return state === 'PENDING' && held ? undefined : 'only held pending jobs can be released';
    case 'checkpointed':
      return RUNNING_STATES.includes(state) ? undefined : 'only running jobs checkpoint';
    case 'suspended':
      return state === 'RUNNING' ? undefined : 'only running jobs can be suspended';
    case 'resumed':
      return state === 'SUSPENDED' ? undefined : 'only suspended jobs can be resumed';
    case 'deadline':
      return undefined;
    case 'moved':
      return state === 'PENDING' ? undefined : 'only pending jobs can be moved in the queue';
    case 'updated':
      // An array's %N (scontrol update ArrayTaskThrottle) is the whole array's: its running tasks take it too; a
      // running or suspended job's time limit and name change (scontrol update TimeLimit= JobName=), its other fields do not.
      if (state === 'PENDING') return undefined;
      if (RUNNING_STATES.includes(state) && Object.keys(event.changes).every((key) => key === 'array')) return undefined;
      return (state === 'RUNNING' || state === 'SUSPENDED') && Object.keys(event.changes).every((key) => key === 'array' || key === 'timeLimitSeconds' || key === 'name')
        ? undefined : 'only pending jobs can be updated (running ones: their time limit and name)';
  }
}

/** The first event of a job: exactly the NewJob fields, whatever else the caller's object carries. */
export function submittedEvent(job: NewJob): JobEvent {
  const { user, name, partition, scriptPath, script, request } = job;
  return { type: 'submitted', user, name, partition, scriptPath, script, request };
}

/** The fields of a job that has not run (yet, or again after a requeue). */
const NOT_RUN = {
  startTimeMs: null,
  endTimeMs: null,
  exitCode: null,
  nodes: [],
  plannedStartMs: null,
  reservedNodes: [],
  usage: null,
  exitSignal: null,
} as const satisfies Partial<JobRecord>;

/** A usage with at least one measurement, else null (a row stores the same either way). */
function measured(usage: JobUsage | undefined): JobUsage | null {
  if (usage === undefined || Object.values(usage).every((value) => value === null || value === undefined)) return null;
  const { cpuSeconds = null, userCpuSeconds = null, systemCpuSeconds = null, maxRssKiB = null } = usage;
  return { cpuSeconds, userCpuSeconds, systemCpuSeconds, maxRssKiB };
}

/** The record after one more event; throws TransitionError when the event does not fit. */
export function applyEvent(record: JobRecord | undefined, stored: StoredJobEvent): JobRecord {
  const { event, jobId, seq, timeMs } = stored;
  if (record === undefined) {
    if (event.type !== 'submitted') throw new TransitionError(jobId, 'nothing', event.type, "a job's log starts with 'submitted'");
    if (seq !== 1) throw new TransitionError(jobId, 'nothing', event.type, `the first event has seq 1, not ${seq}`);
    const { user, name, partition, scriptPath, script, request } = event; // only known fields, whatever the log held
    // Submitted with --hold: held by its user from the start (in the same event, so no crash can run it first).
    const held = (request as { hold?: unknown } | null)?.hold === true;
    return {
      id: jobId, user, name, partition, scriptPath, script, request,
      state: 'PENDING', held, reason: held ? HELD_BY_USER : null, submitTimeMs: timeMs, eligibleTimeMs: timeMs, ...NOT_RUN, requeueCount: 0,
      queuePlace: null, amended: null, lastSeq: 1,
    };
  }
  if (event.type === 'submitted') throw new TransitionError(jobId, record.state, event.type, 'a job is submitted once');
  if (jobId !== record.id) throw new TransitionError(jobId, record.state, event.type, `the event belongs to job ${jobId}, not ${record.id}`);
  if (seq !== record.lastSeq + 1) {
    throw new TransitionError(jobId, record.state, event.type, `expected seq ${record.lastSeq + 1}, got ${seq}`);
  }
  const why = refuse(record, event);
  if (why !== undefined) throw new TransitionError(jobId, record.state, event.type, why);

  const next = { ...record, lastSeq: seq };
  switch (event.type) {
    case 'planned':
      return { ...next, plannedStartMs: event.plannedStartMs, reservedNodes: event.nodes };
    case 'started':
      return { ...next, state: 'RUNNING', reason: null, startTimeMs: timeMs, nodes: event.nodes, plannedStartMs: event.promisedMs ?? next.plannedStartMs };
    case 'signalled':
      return next;
    case 'completing':
      return { ...next, state: 'COMPLETING' };
    case 'ended':
      return { ...next, state: event.state, reason: event.reason ?? null, endTimeMs: timeMs, exitCode: event.exitCode, usage: measured(event.usage), exitSignal: event.signal ?? null };
    case 'requeued':
      // Keeps submit time (and so its place in the queue) and the hold flag; forgets the run.
      return { ...next, ...NOT_RUN, state: 'PENDING', reason: event.reason ?? null, requeueCount: record.requeueCount + 1,
        ...(event.asNew === true ? { submitTimeMs: timeMs, eligibleTimeMs: timeMs, queuePlace: event.queueKey === undefined ? null : { key: event.queueKey, priority: null } } : {}) };
    case 'held':
      return { ...next, held: true, reason: event.by === 'admin' ? HELD_BY_ADMIN : event.reason ?? HELD_BY_USER };
    case 'released':
      return { ...next, held: false, reason: null, eligibleTimeMs: timeMs };
    case 'checkpointed':
      return next;
    case 'suspended':
      return { ...next, state: 'SUSPENDED', reason: event.reason ?? null };
    case 'resumed':
      return { ...next, state: 'RUNNING', reason: null };
    case 'deadline':
      return next;
    case 'moved':
      return { ...next, queuePlace: { key: event.key, priority: event.priority } };
    case 'updated': {
      const amended = { ...(record.amended ?? {}), ...event.changes };
      const request = { ...record.request, ...event.changes };
      return {
        ...next, request, amended,
        ...(typeof event.changes.name === 'string' ? { name: event.changes.name } : {}),
        ...(typeof event.changes.partition === 'string' ? { partition: event.changes.partition } : {}),
      };
    }
  }
}

/** A job's state from its whole log, in seq order. Pure: the same log always gives the same record. */
export function replay(events: readonly StoredJobEvent[]): JobRecord {
  let record: JobRecord | undefined;
  for (const stored of events) record = applyEvent(record, stored);
  if (record === undefined) throw new Error('replay: a job needs at least its submitted event');
  return record;
}
