// The controller's engine: owns the queue and the node state, feeds the core
// scheduler every event, verifies each start the core proposes against live
// node state (seed 002's verify step), and commits every fact to the store
// before acting on it. It knows no transport: the daemon wires HTTP and the
// agents to it, and tests drive it directly.

import { HELD_BY_ADMIN, isEndState } from '../store/events.js';
import { isDay, jobClass, nightWindow, nodeMinutes, type JobClass } from '../config/day-night.js';
import type { ClusterConfig, PartitionSpec } from '../config/cluster.js';
import { CHECKPOINT_DEFAULTS, type ProgramClass, type RestartAction } from '../config/checkpoint.js';
import { compressHostlist } from '../config/hostlist.js';
import { NodePool } from '../core/placement.js';
import { Scheduler, type PolicyName } from '../core/scheduler.js';
import type { PlanHold } from '../core/node-plan.js';
import { chooseVictims, type PreemptionCandidate, type PreemptionNode, type VictimChoice } from '../core/preemption.js';
import type { JobId, JobRequest, ResourceRequest } from '../core/types.js';
import { checkBody, formatProblems, JobSpecSchema, LIMITS } from '../api/schema.js';
import { nodeAllowed, suitableNodes, taskLayout, validateAgainstCluster, type ClusterNodeShape, type Rejection } from '../jobspec/cluster.js';
import type { JobSpec, WarnSignal } from '../jobspec/types.js';
import { beginDeadlineConflict, parseMailType, parseMailUser } from '../jobspec/values.js';
import { checkPattern } from '../jobspec/pattern.js';
import { NODE_POLICIES, RESERVATION_NAME, type ApiCancelResult } from '../api/types.js';
import type { EndState, JobRecord, JobState, JobUsage, JsonObject, TransitionEvent } from '../store/events.js';
import type { Store } from '../store/store.js';
import { arrayIdOf, arrayOrder, arrayRefusals, ArrayThrottle, arrayTaskOf, expandArray, firstTaskReader, resolveJobRange, scriptOf, sharedScriptGone, sharedTaskOf, withArrayShared } from './arrays.js';
import { RunMarksBook, type PreemptAsked } from './run-marks.js';
import { holdOf, holdOwner, readReservations, RESERVATIONS_SETTING, toStored, type Reservation, type ReservationKind } from './reservations.js';
import { isoTime } from '../api/durations.js';

/** How much earlier than strictly needed a deadline's victims are preempted: delivery, the end's report, the next pass. */
const DEADLINE_PREEMPT_MARGIN_SECONDS = 3;

/** Key of the verified submitter's uid in a stored request. */
const SUBMIT_UID = 'submitUid';

/** A job on its nodes over [start, end) in the plan (seconds). */
export interface PlannedItem {
  readonly id: JobId;
  readonly start: number;
  readonly end: number;
  readonly nodes: readonly string[];
}

/** Key of the stamp of the reservation a job was accepted into (its creation time): a later one of the same name is another. */
const RESERVATION_STAMP = 'reservationCreatedMs';

/** Key of a priority job's guarantee in its stored request: whether the plan met its deadline at submission. */
const DEADLINE_GUARANTEED = 'deadlineGuaranteed';

/** Key of the warning a submitter was given at acceptance (a deadline that cannot be guaranteed): a retried submission is told it again. */
const ADMISSION_WARNING = 'admissionWarning';

/** A stored request without the controller's own additions (storedRequest): the spec as submitted. */
function specPart(request: JsonObject): JsonObject {
  const { [SUBMIT_UID]: _uid, [RESERVATION_STAMP]: _stamp, [DEADLINE_GUARANTEED]: _guaranteed, [ADMISSION_WARNING]: _warning, ...spec } = request;
  return spec;
}

/**
 * The spec as stored, with the controller's own additions (the verified uid,
 * the reservation's stamp, a deadline's guarantee and warning) and never a value of those keys the body carried.
 */
function storedRequest(spec: JobSpec, uid: number | undefined, reservation: Reservation | undefined, admission?: Pick<DeadlineAdmission, 'guaranteed' | 'warning'>): JsonObject {
  const clean = specPart(spec as unknown as JsonObject);
  return {
    ...clean, ...(uid === undefined ? {} : { [SUBMIT_UID]: uid }), ...(reservation === undefined ? {} : { [RESERVATION_STAMP]: reservation.createdMs }),
    ...(admission === undefined || spec.deadline === undefined ? {} : { [DEADLINE_GUARANTEED]: admission.guaranteed }),
    ...(admission?.warning ? { [ADMISSION_WARNING]: admission.warning } : {}),
  };
}

/** The warning the job's submitter was given when it was accepted, if any. */
export function admissionWarning(record: JobRecord): string | null {
  const warning = (record.request as { [ADMISSION_WARNING]?: unknown })[ADMISSION_WARNING];
  return typeof warning === 'string' ? warning : null;
}

/** Whether a stored priority job was accepted with a guarantee. */
export function deadlineGuaranteed(record: JobRecord): boolean | null {
  const spec = record.request as { deadline?: unknown; [DEADLINE_GUARANTEED]?: boolean };
  return spec.deadline === undefined ? null : spec[DEADLINE_GUARANTEED] === true;
}

/**
 * The priority quota hook (seed 000 2.1.6, 2.2.3): whether the user may run
 * this job with priority. A job whose priority quota is short runs as a
 * normal job, with a warning. Quota come with accounts later: always allows.
 */
export function priorityQuotaAllows(_user: string, _spec: JobSpec): { allowed: true } | { allowed: false; warning: string } {
  return { allowed: true };
}

/** Ids of jobs checked before they are stored (above every real id, so they sort after the queue's jobs). */
const DRAFT_ID = Number.MAX_SAFE_INTEGER;
/**
 * The most jobs one dependency may name, an array's tasks counted each time its id is written: every pass looks
 * each of them up (1,000 ids of a 10,000-task array held the controller for minutes). As many as 100 items of
 * 1,000 plain ids named before an array's id stood for all its tasks.
 */
const MAX_DEPENDENCY_JOBS = 100_000;

/** What the submitter is told of a priority job's deadline (POST /jobs). */
export interface DeadlineAdmission {
  readonly guaranteed: boolean;
  readonly plannedEndMs: number | null;
  readonly shortfallSeconds: number | null;
  readonly warning: string | null;
}

/** The plan's answer on a deadline (deadlineVerdict): met, never (no plan ever could), or not now (short, or no node plans here). */
type DeadlineVerdict =
  | { readonly met: true; readonly plannedEndMs: number }
  | { readonly met: false; readonly never: true; readonly words: string }
  | { readonly met: false; readonly never: false; readonly planless: true; readonly words: string }
  | {
    readonly met: false; readonly never: false; readonly planless: false; readonly words: string; readonly why: string; readonly miss: string;
    readonly plannedEndMs: number | null; readonly shortfallSeconds: number | null;
  };

/** One updateMany's guaranteed jobs kept so far (readmitDeadline): as the core will see them, and their ids (their old selves). */
interface UpdateBatch {
  readonly ahead: JobRequest[];
  readonly without: Set<JobId>;
}

/** One job's update, checked (checkedUpdate): the event to store; a guaranteed job checked again, its admission. */
interface CheckedUpdate {
  readonly id: JobId;
  readonly event: TransitionEvent;
  readonly delta: Record<string, string | number>;
  readonly readmitted: DeadlineAdmission | undefined;
}

/** A time limit in a sentence. */
function limitWords(limit: JobSpec['timeLimitSeconds']): string {
  return limit === 'UNLIMITED' ? 'no time limit' : `a time limit of ${limit} s`;
}

/**
 * --exclusive: whole nodes. The core gives a job the same CPUs and memory on every node, so the job takes nodes of
 * one shape (CPUs, memory), the smallest shape with enough nodes that hold its tasks, all of their CPUs and memory.
 */
function exclusiveResources(
  spec: JobSpec, layout: { nodes: number; cpusPerNode: number }, suitable: readonly ClusterNodeShape[], eligible: ReadonlySet<string>,
): ResourceRequest | undefined {
  const fitting = suitable.filter((node) => eligible.has(node.name) && node.cpus >= layout.cpusPerNode);
  const shapes = [...new Set(fitting.map((node) => `${node.cpus}/${node.memoryMiB}`))]
    .map((key) => fitting.filter((node) => `${node.cpus}/${node.memoryMiB}` === key))
    .filter((nodes) => nodes.length >= layout.nodes)
    .sort((a, b) => a[0].cpus - b[0].cpus || a[0].memoryMiB - b[0].memoryMiB);
  if (shapes.length === 0) return undefined;
  const [first] = shapes[0];
  return {
    nodes: layout.nodes, cpusPerNode: first.cpus, memoryMiBPerNode: first.memoryMiB, features: spec.constraint?.anyOf[0] ?? [],
    eligibleNodes: new Set(shapes[0].map((node) => node.name)),
  };
}

/** --nice within the partition: a fraction of one priority tier (|nice| <= 10,000), so it never passes another partition's jobs. */
const niceShare = (spec: JobSpec): number => (spec.nice ?? 0) / 1_000_000;

/** The spec fields a job's resources depend on (partition, features, memory, CPUs, tasks, nodes), as one key. */
function shapeOf(spec: JobSpec): string {
  return `${spec.partition ?? ''}\n${spec.constraint?.text ?? ''}\n${spec.memoryMiB ?? ''}\n${spec.cpusPerTask}\n${spec.ntasks ?? ''}\n${spec.nodes.min}\n${spec.nodes.max ?? ''}`
    + `\n${spec.memPerCpuMiB ?? ''}\n${spec.nodelist?.join(',') ?? ''}\n${spec.exclude?.join(',') ?? ''}\n${spec.exclusive === true ? 'x' : ''}`;
}

/** What an agent needs to start a job: the batch script runs on the first node. */
export interface StartOrder {
  readonly jobId: JobId;
  /** Which run of the job this is (0, then +1 per requeue): reports carry it back, so an old run's report cannot end a new one. */
  readonly run: number;
  readonly user: string;
  /** The submitter's uid as the controller verified it (absent for jobs stored before it was kept): an agent whose passwd says otherwise refuses the job. */
  readonly uid?: number;
  readonly name: string;
  readonly nodes: readonly string[];
  readonly cpusOnNode: number;
  readonly spec: JobSpec;
  /** The job's --signal, else cluster.toml's warn_signal; null: no warning signal before the limit. */
  readonly warnSignal: WarnSignal | null;
  /** From the cluster configuration: SIGKILL this long after the limit's SIGTERM. */
  readonly killGraceSeconds: number;
  /** A job that checkpoints (spec.checkpoint): its program class's signals, its interval and duration. Absent: a plain job. */
  readonly checkpoint?: { periodicSignal: string; preemptSignal: string; intervalSeconds: number | null; durationSeconds: number } | null;
  /** This run restarts the job from its checkpoint: how to tell it (the program class's restart action). Absent or null: a fresh start. */
  readonly restart?: RestartAction | null;
  /** An interactive job's session (cluster.toml's interactive_grace, _idle, _warn); absent for batch jobs. */
  readonly interactive?: { readonly graceSeconds: number; readonly idleSeconds: number; readonly warnSeconds: number };
  /** A task of a job array: the array's id, the task id, and the array's count, min, max and step (SLURM_ARRAY_*). */
  readonly array?: { readonly jobId: number; readonly taskId: number; readonly count: number; readonly min: number; readonly max: number; readonly step: number };
  /** The partition it runs in (the job's, else the default): SLURM_JOB_PARTITION. */
  readonly partition?: string;
}

/** The controller's side of the agents (HTTP in the daemon, direct calls in tests). */
/**
 * What AgentLink.start rejects with when the order may not have reached the agent (no agent for the node, the
 * connection refused, reset or timed out): the job is put back in the queue, not failed. Any other rejection
 * is the agent's answer (it refused the job): the job ends NODE_FAIL.
 */
export class AgentUnreachable extends Error {
  constructor(message: string, readonly code: string) {
    super(message);
    this.name = 'AgentUnreachable';
  }
}

/**
 * What AgentLink.start rejects with when the order may or may not have arrived (the connection was reset or
 * timed out after it was sent): the job stays as started, unconfirmed, and the agent's next registration
 * says whether it runs there (else it is requeued: it never ran), or node_timeout ends it.
 */
export class AgentAnswerLost extends Error {
  constructor(message: string, readonly code: string) {
    super(message);
    this.name = 'AgentAnswerLost';
  }
}

/** After a start that did not reach its agent, the node takes no job for this long, and then once its agent registers again. */
export const UNREACHABLE_PAUSE_MS = 10_000;

export interface AgentLink {
  start(order: StartOrder): Promise<void>;
  signal(node: string, jobId: JobId, signal: string, cancel: boolean, extras?: SignalExtras): Promise<void>;
  /** A running job's new time limit (scontrol update TimeLimit=; null: none) for the supervisor of its run `run`; absent: the agents take none (tests). */
  setTimeLimit?(node: string, jobId: JobId, run: number, seconds: number | null): Promise<void>;
  /** A new time limit for the tasks of a job's step on `node` (their job's limit changed); absent: the agents take none (tests). */
  setTaskLimit?(node: string, jobId: JobId, stepId: number, seconds: number | null): Promise<void>;
}

/** A signal request's other forms: a preemption (SIGKILL `graceSeconds` after the signal unless the job exits), a suspend or a resume. */
export interface SignalExtras {
  readonly preempt?: boolean;
  readonly graceSeconds?: number;
  readonly reason?: string;
  readonly suspend?: boolean;
  readonly resume?: boolean;
}

/** A refused submission: every reason, each naming the problem. */
export class SubmitRefused extends Error {
  /** `forbidden`: refused because the job is another user's (the API's 403), not because of the request (409). */
  constructor(readonly reasons: readonly string[], readonly forbidden = false) {
    super(reasons.join('; '));
    this.name = 'SubmitRefused';
  }
}

export interface NodeStatus {
  up: boolean;
  drained: boolean;
  reason: string | null;
  lastHeartbeatMs: number | null;
  /** When a start order last failed to reach this node's agent (see UNREACHABLE_PAUSE_MS). */
  unreachableAtMs?: number;
}

/** What an agent says of a job it ran, when it (re)registers or a job ends. */
export interface JobReport {
  readonly jobId: JobId;
  /** The run the report is about (from the start order); absent from reports that come from the controller itself. */
  readonly run?: number;
  readonly state: 'RUNNING' | EndState;
  readonly exitCode: number | null;
  readonly endTimeMs: number | null;
  readonly reason?: string;
  /** What its processes used and the signal that ended its main process, as its supervisor measured them (ended runs). */
  readonly signal?: string | null;
  readonly cpuSeconds?: number | null;
  readonly userCpuSeconds?: number | null;
  readonly systemCpuSeconds?: number | null;
  readonly maxRssKiB?: number | null;
}

/** The usage and end signal of a report, as the `ended` event keeps them (nothing when the agent measured nothing). */
function endedUsage(report: JobReport): { usage?: JobUsage; signal?: string } {
  const usage: JobUsage = {
    cpuSeconds: report.cpuSeconds ?? null, userCpuSeconds: report.userCpuSeconds ?? null,
    systemCpuSeconds: report.systemCpuSeconds ?? null, maxRssKiB: report.maxRssKiB ?? null,
  };
  return {
    ...(Object.values(usage).some((value) => value !== null) ? { usage } : {}),
    ...(report.signal === null || report.signal === undefined ? {} : { signal: report.signal }),
  };
}

/** What to do at start-up with a stored job this configuration can never run: end it FAILED (a start) or refuse the configuration (a reconfigure). */
export type StrandedJobs = 'fail' | 'refuse';

/** A submission as the daemon hands it over: `idempotencyKey` makes a retry answer the first job. */
export interface Submission {
  readonly user: string;
  /** The verified caller's uid: kept with the job, so an agent can refuse a user whose uid differs on its node. */
  readonly uid?: number;
  readonly spec: JobSpec;
  readonly idempotencyKey?: string;
  /**
   * Whether the submitter may run jobs in a reservation with these users (the
   * daemon: root, an administrator or one of them). Absent: trusted callers
   * (tests, the engine's own resubmissions) may.
   */
  readonly mayUseReservation?: (users: readonly string[]) => boolean;
}

/** One submission's outcome in a batch: its id (`replayed`: a retry of a key already stored), or why it was refused. */
/** A submission stored (or replayed), or refused: SubmitRefused for a request the cluster cannot take, another error for a fault of ours in checking it. */
export type Accepted = { readonly id: JobId; readonly replayed: boolean } | { readonly refused: Error };

/** Above every partition priority: an immediate interactive job is first in the queue. */
const INTERACTIVE_PRIORITY = 1_000_000_000;
/** How long past the victims' checkpoints an interactive job may take to start. */
const INTERACTIVE_START_SLACK_SECONDS = 10;

/** A year stands for "no limit" in the time profile. */
const UNLIMITED_SECONDS = 365 * 86400;

/**
 * Pending and running jobs in memory, without the submitting shell's
 * environment: that is most of a request (dozens of variables) and only an
 * agent needs it, once, in the start order, which is built from the stored
 * record. 50,000 queued jobs then take a fraction of the heap and of the
 * collector's time.
 */
class ActiveJobs extends Map<JobId, JobRecord> {
  /** Bumped by every change: what was listed from an unchanged version is still true. */
  version = 0;
  /** PENDING jobs by user, kept with every change (the per-user cap is checked on each submission). */
  private readonly pending = new Map<string, number>();
  /** The UTF-8 bytes of their scripts, by user (max_pending_script_size). */
  private readonly pendingScripts = new Map<string, number>();
  /** The ids in each state, kept with every change: a listing of running jobs need not walk a queue of 50,000. */
  private readonly byState = new Map<JobState, Set<JobId>>();
  /** Each job array's tasks that have not ended, by the array's id: a dependency on a whole array reads only these. */
  private readonly arrays = new Map<number, Set<JobId>>();

  /** The tasks of array `arrayId` not ended (none: an empty set). */
  activeTasksOf(arrayId: number): ReadonlySet<JobId> {
    return this.arrays.get(arrayId) ?? new Set();
  }

  pendingOf(user: string): number {
    return this.pending.get(user) ?? 0;
  }

  pendingScriptsOf(user: string): number {
    return this.pendingScripts.get(user) ?? 0;
  }

  /** The jobs in these states (all of them without states), in no particular order. */
  inStates(states: readonly JobState[] | undefined): JobRecord[] {
    if (states === undefined) return [...this.values()];
    const records: JobRecord[] = [];
    for (const state of new Set(states)) for (const id of this.byState.get(state) ?? []) records.push(super.get(id)!);
    return records;
  }

  private index(id: JobId, before: JobRecord | undefined, after: JobRecord | undefined): void {
    if (before?.state === after?.state) return;
    if (before !== undefined) this.byState.get(before.state)?.delete(id);
    if (after === undefined) return;
    let ids = this.byState.get(after.state);
    if (ids === undefined) this.byState.set(after.state, ids = new Set());
    ids.add(id);
  }

  private countPending(record: JobRecord | undefined, by: 1 | -1): void {
    if (record?.state !== 'PENDING') return;
    const count = (this.pending.get(record.user) ?? 0) + by;
    if (count === 0) this.pending.delete(record.user);
    else this.pending.set(record.user, count);
    const scripts = (this.pendingScripts.get(record.user) ?? 0) + by * Buffer.byteLength(record.script);
    if (count === 0 || scripts <= 0) this.pendingScripts.delete(record.user);
    else this.pendingScripts.set(record.user, scripts);
  }

  override set(id: JobId, record: JobRecord): this {
    this.version++;
    // Map's constructor calls set before the fields above exist; it is never given entries here.
    const before = super.get(id);
    this.countPending(before, -1);
    this.countPending(record, 1);
    this.index(id, before, record);
    const arrayId = before === undefined ? arrayIdOf(record) : undefined;
    if (arrayId !== undefined) {
      let tasks = this.arrays.get(arrayId);
      if (tasks === undefined) this.arrays.set(arrayId, tasks = new Set());
      tasks.add(id);
    }
    const request = record.request as { submitEnv?: unknown };
    if (request.submitEnv === undefined) return super.set(id, record);
    const { submitEnv: _environment, ...slim } = request;
    return super.set(id, { ...record, request: slim as JsonObject });
  }

  override delete(id: JobId): boolean {
    this.version++;
    const before = super.get(id);
    this.countPending(before, -1);
    this.index(id, before, undefined);
    const arrayId = before === undefined ? undefined : arrayIdOf(before);
    const tasks = arrayId === undefined ? undefined : this.arrays.get(arrayId);
    if (tasks !== undefined && tasks.delete(id) && tasks.size === 0) this.arrays.delete(arrayId!);
    return super.delete(id);
  }
}

/** What `scontrol update` changes of a pending job. */
export interface JobChanges { readonly name?: string; readonly partition?: string; readonly timeLimitSeconds?: number | 'UNLIMITED' }

export class ControllerEngine {
  readonly pool: NodePool;
  readonly scheduler: Scheduler;
  /** Pending and running jobs, as last committed (less the submit environment: see ActiveJobs). */
  readonly active: ActiveJobs = new ActiveJobs();
  readonly nodes = new Map<string, NodeStatus>();
  private readonly partitionNodes = new Map<string, ReadonlySet<string>>();
  /** resourcesOf's answers (or refusals) by the spec fields they depend on. */
  private readonly resourcesByShape = new Map<string, ResourceRequest | SubmitRefused>();
  /** Whether any set of nodes could ever hold a job of that shape (all idle), by the same key. */
  private readonly placeableByShape = new Map<string, boolean>();
  private dirty = true;
  /**
   * Signals to running jobs that have not reached their agent yet, by job and kind (`slotOf`: an end, cancel
   * or preemption, a suspend or resume, a time limit, and each step's limit on each of its nodes, kept apart):
   * the node to send to.
   */
  private readonly undeliveredOrders = new Map<string, { id: JobId; node: string; run: number; how: Delivery }>();
  private readonly ordersInFlight = new Set<string>();
  /** Each running job's pending cancel or preemption and suspended time, kept with the events stored (no store reads per pass). */
  private readonly marks = new RunMarksBook();
  /** Seconds of a suspended job's open suspension already added to its end in the core (keepSuspendedEndsMoving). */
  private readonly extendedWhileSuspended = new Map<JobId, number>();
  /** Running jobs whose start the agent has not yet confirmed (order in flight). */
  private readonly startsInFlight = new Set<JobId>();
  /** Running jobs an agent has confirmed (accepted the start, or reported them running). */
  private readonly confirmed = new Set<JobId>();
  /**
   * Until when a node whose agent has not registered since this controller
   * started still counts in plans: node_timeout after the start (a reconfigure
   * keeps the deadlines; a node it adds gets its own).
   */
  private readonly expectedUntilMs = new Map<string, number>();
  /**
   * The distinct values of expectedUntilMs not yet passed at the last
   * checkNodes (one per start or reconfigure, in practice): only when one
   * passes, or a node goes down, can a node's standing in the pool change
   * there, so the once-a-second check need not visit 100,000 nodes otherwise.
   */
  private readonly deadlines = new Set<number>();
  private lastCheckMs = -Infinity;
  /** When planned starts were last computed (null: stale since the last pass). */
  private plannedAt: number | null = null;
  /** Bumped when a new plan differs from the last one (see listingVersion). */
  private planVersion = 0;
  private lastReservations: Float64Array = new Float64Array(0);
  /** Until when (epoch ms) the last plan is shown rather than made again, after one that took long. */
  private planStaleUntilMs = 0;
  /** Whether the plan made by the last ensurePlan was compared with lastReservations yet. */
  private planCompared = false;
  /**
   * Bumped whenever a node's status may have changed (every change goes
   * through refreshNode): with `active.version` (which moves with every start
   * and end, so with free CPUs too) it says when node counts need recounting.
   */
  nodeVersion = 0;

  constructor(
    readonly config: ClusterConfig,
    private readonly store: Store,
    private readonly agents: AgentLink,
    private readonly clockMs: () => number = Date.now,
    private readonly log: (line: string) => void = () => {},
    private readonly stranded: StrandedJobs = 'fail',
  ) {
    this.pool = new NodePool(config.nodes, config.placement);
    this.startedMs = clockMs();
    for (const node of config.nodes) {
      this.expectedUntilMs.set(node.name, clockMs() + config.nodeTimeoutSeconds * 1000);
      this.deadlines.add(this.expectedUntilMs.get(node.name)!);
      // A node is down until its agent registers; until node_timeout has passed it still counts in plans.
      this.nodes.set(node.name, { up: false, drained: false, reason: 'no agent has registered yet', lastHeartbeatMs: null });
      this.refreshNode(node.name);
    }
    for (const partition of config.partitions) this.partitionNodes.set(partition.name, new Set(partition.nodes));
    this.scheduler = new Scheduler(config.policy, { processors: this.pool.totalCpus }, this.nowSeconds(), this.pool);
    // Before the queue: a job in a reservation is planned within it.
    for (const reservation of readReservations(store.setting(RESERVATIONS_SETTING), log)) {
      const gone = reservation.nodes.filter((name) => !this.nodes.has(name));
      if (gone.length > 0) log(`reservation ${reservation.name}: its nodes ${gone.join(', ')} are no longer in the configuration; it keeps the others`);
      const nodes = reservation.nodes.filter((name) => this.nodes.has(name));
      if (nodes.length > 0) this.reservations.set(reservation.name, { ...reservation, nodes });
      this.lastReservationCreatedMs = Math.max(this.lastReservationCreatedMs, reservation.createdMs);
    }
    if (this.scheduler.plansOnNodes) this.scheduler.setExternalHolds([...this.reservations.values()].map(holdOf));
    else if (this.reservations.size > 0) {
      log(`policy ${config.policy} does not plan on nodes: the ${this.reservations.size} reservations and maintenance windows are not in its plans (use fcfs, easy or conservative)`);
    }
    this.recover();
  }

  /** The first planned start of pending jobs (epoch ms), and the jobs queued since the last pass that have none yet. */
  private readonly firstPromises = new Map<JobId, number>();
  private unpromised: JobId[] = [];

  private lastReservationCreatedMs = 0;

  /** The reservation a job was accepted into, while it exists (a later one of the same name is not it). */
  reservationOf(record: JobRecord): Reservation | undefined {
    const name = this.specOf(record).reservation;
    const found = name === undefined ? undefined : this.reservations.get(name);
    return found !== undefined && this.asksFor(record, found) ? found : undefined;
  }

  /** Whether the job was accepted into this reservation (by name and creation stamp; deleted or not). */
  asksFor(record: JobRecord, reservation: Reservation): boolean {
    const stamp = (record.request as { [RESERVATION_STAMP]?: number })[RESERVATION_STAMP];
    return this.specOf(record).reservation === reservation.name && (stamp === undefined || stamp === reservation.createdMs);
  }

  /** Advance reservations and maintenance windows, by name. */
  readonly reservations = new Map<string, Reservation>();

  /** A free name for a maintenance window starting at `startMs`: maint-YYYYMMDD-HHMM (UTC), then -2, -3... */
  windowName(startMs: number): string {
    const stamp = isoTime(startMs).slice(0, 16).replace(/[-:]/g, '').replace('T', '-');
    let name = `maint-${stamp}`;
    for (let n = 2; this.reservations.has(name); n++) name = `maint-${stamp}-${n}`;
    return name;
  }

  /** Every reservation and window not yet ended, by start. */
  listReservations(): Reservation[] {
    return [...this.reservations.values()].sort((a, b) => a.startMs - b.startMs || a.name.localeCompare(b.name));
  }

  /**
   * Creates a reservation or maintenance window after checking all of it;
   * stored before it is planned. With `nodeCount`, the first nodes in
   * configuration order that no running job and no other reservation holds
   * during the window. Returns it and the running jobs whose limits reach
   * into it (they are not stopped; nothing new starts there meanwhile).
   */
  createReservation(request: {
    name: string; kind: ReservationKind; startMs: number; endMs: number; nodes?: readonly string[]; nodeCount?: number;
    users: readonly string[]; reason: string; createdBy: string;
  }): { reservation: Reservation; overlapping: JobId[] } {
    const problems: string[] = [];
    if (!this.scheduler.plansOnNodes) problems.push(`reservations need the policy fcfs, easy or conservative (this cluster uses ${this.config.policy})`);
    if (!RESERVATION_NAME.test(request.name)) problems.push(`'${request.name}' is not a reservation name: 1 to 64 letters, digits, _ . -`);
    if (this.reservations.has(request.name)) problems.push(`a reservation named ${request.name} exists; delete it first or pick another name`);
    if (!(request.endMs > request.startMs)) problems.push('its end must come after its start');
    if (!(request.endMs > this.clockMs())) problems.push('it would end in the past');
    const unknown = (request.nodes ?? []).filter((name) => !this.nodes.has(name));
    if (unknown.length > 0) problems.push(`no node named ${unknown.join(', ')}`);
    if (problems.length > 0) throw new SubmitRefused(problems);
    const start = Math.floor(request.startMs / 1000);
    const end = Math.ceil(request.endMs / 1000);
    // Reservations do not overlap one another on a node (Slurm's default); maintenance windows may overlap anything.
    const clashes = (name: string) => request.kind === 'reservation' && [...this.reservations.values()].some((other) =>
      other.kind === 'reservation' && other.nodes.includes(name) && other.startMs < request.endMs && request.startMs < other.endMs);
    let nodes: string[];
    if (request.nodes !== undefined && request.nodes.length > 0) {
      nodes = [...new Set(request.nodes)];
      // Both: they must agree (the count was ignored: a reservation of other size than asked for).
      if (request.nodeCount !== undefined && request.nodeCount !== nodes.length) {
        throw new SubmitRefused([`the nodes (--nodelist) name ${nodes.length} node(s) and the count (--nodes) says ${request.nodeCount}: give one of them, or a count that matches`]);
      }
      const taken = nodes.filter(clashes);
      if (taken.length > 0) throw new SubmitRefused([`${taken.join(', ')} ${taken.length === 1 ? 'is' : 'are'} in another reservation then; pick other nodes or another time`]);
    } else {
      const count = request.nodeCount ?? 0;
      if (!(count >= 1)) throw new SubmitRefused(['give the nodes (--nodelist) or how many (--nodes N)']);
      // The first nodes no running job, reservation or window takes during the window.
      nodes = this.scheduler.wholeNodesFree(start, end, this.nowSeconds()).slice(0, count);
      if (nodes.length < count) {
        throw new SubmitRefused([`only ${nodes.length} of the ${count} nodes are free for the whole window (running jobs, other reservations or nodes out hold the rest); ask for fewer, name them with --nodelist, or pick a later start`]);
      }
    }
    // Its creation time tells it from an earlier reservation of the same name (jobs keep the one they were accepted into).
    const createdMs = Math.max(this.clockMs(), this.lastReservationCreatedMs + 1);
    this.lastReservationCreatedMs = createdMs;
    const reservation: Reservation = {
      name: request.name, kind: request.kind, startMs: request.startMs, endMs: request.endMs, nodes, users: [...request.users], reason: request.reason, createdBy: request.createdBy, createdMs,
    };
    const overlapping = this.scheduler.state.running
      .filter((run) => run.nodes.some((name) => nodes.includes(name)) && run.start + run.job.estimate > start)
      .map((run) => run.job.id);
    this.reservations.set(reservation.name, reservation);
    this.storeReservations([reservation.name]);
    return { reservation, overlapping };
  }

  /** Deletes a reservation or window; its pending jobs wait with no plan until they are cancelled or given another. */
  deleteReservation(name: string): Reservation {
    const reservation = this.reservations.get(name);
    if (reservation === undefined) throw new SubmitRefused([`no reservation named ${name}; list them with \`taras reserve list\``]);
    this.reservations.delete(name);
    this.storeReservations([name]);
    return reservation;
  }

  /** Forgets reservations and windows that have ended (checked every second by the daemon). */
  expireReservations(): Reservation[] {
    const now = this.clockMs();
    const ended = [...this.reservations.values()].filter((r) => r.endMs <= now);
    if (ended.length === 0) return [];
    for (const r of ended) this.reservations.delete(r.name);
    this.storeReservations(ended.map((r) => r.name));
    for (const r of ended) this.log(`${r.kind} ${r.name} ended`);
    return ended;
  }

  /** Stores the reservations, then plans with them; pending jobs that name one of `changed` are planned again, in their places. */
  private storeReservations(changed: readonly string[]): void {
    this.store.setSetting(RESERVATIONS_SETTING, toStored([...this.reservations.values()]));
    if (this.scheduler.plansOnNodes) this.scheduler.setExternalHolds([...this.reservations.values()].map(holdOf));
    for (const record of this.active.values()) {
      const name = this.specOf(record).reservation;
      if (record.state !== 'PENDING' || record.held || name === undefined || !changed.includes(name)) continue;
      this.scheduler.replaceQueued(this.coreRequest(record));
    }
    this.plannedAt = null;
    this.dirty = true;
  }

  /**
   * Why the submitter may not submit this job in its reservation (empty: it
   * may): the reservation exists and has not ended, `mayUse` says the
   * submitter is one of its users (or an administrator), and its nodes in the job's partition can hold the
   * job within its time.
   */
  reservationRefusals(spec: JobSpec, mayUse: (users: readonly string[]) => boolean): string[] {
    if (spec.reservation === undefined) return [];
    const reservation = this.reservations.get(spec.reservation);
    if (reservation === undefined) return [`no reservation named ${spec.reservation}; list them with \`taras reserve list\``];
    if (!mayUse(reservation.users)) return [`you are not one of the users of reservation ${reservation.name}; ask an administrator to add you`];
    const completed = spec.timeLimitSeconds === undefined ? this.complete(spec) : spec;
    const lengthSeconds = (reservation.endMs - Math.max(reservation.startMs, this.clockMs())) / 1000;
    if (completed.timeLimitSeconds === 'UNLIMITED' || completed.timeLimitSeconds > lengthSeconds) {
      return [`its time limit is longer than what is left of reservation ${reservation.name} (${Math.floor(lengthSeconds / 60)} min); ask for less time (--time)`];
    }
    const inside = this.resourcesIn(reservation, this.resourcesOf(completed));
    if (!inside.placeable) {
      const names = [...inside.request.eligibleNodes!].join(', ') || 'none';
      return [`the nodes of reservation ${reservation.name} in partition ${this.partitionOf(completed).name} (${names}) can never hold the job`];
    }
    return [];
  }

  /** A job's resources narrowed to the reservation's nodes (within its partition's), and whether those could ever hold it. */
  private resourcesIn(reservation: Reservation, resources: ResourceRequest): { request: ResourceRequest; placeable: boolean } {
    const request = { ...resources, eligibleNodes: new Set(reservation.nodes.filter((name) => resources.eligibleNodes?.has(name) ?? true)) };
    return { request, placeable: this.pool.couldEverPlace(request) };
  }

  private nowSeconds(): number {
    return Math.floor(this.clockMs() / 1000);
  }

  /**
   * Rebuilds the core's state from the store: the queue in order, running
   * jobs on their nodes. A stored job this configuration can never run (the
   * cluster shrank, or a row an older version let in) ends FAILED with the
   * reason, logged, and the rest start as usual; a reconfigure (`stranded`
   * 'refuse') throws instead and keeps the old configuration.
   */
  private recover(): void {
    // Running tasks of a throttled array hold their slots before the pending ones are admitted.
    for (const record of this.store.runningJobs()) this.throttle.running(record);
    // Arrays' first tasks, for their other tasks' checks: pending ones were recovered before (id order).
    const firstOf = firstTaskReader((id) => this.recordOf(id as JobId));
    for (const record of this.store.pendingJobs()) {
      const failure = this.recoverOne(record, firstOf, () => {
        if (!record.held && this.throttle.admit(record)) {
          // In its place (priority, then key): a moved job's key is not its submission order.
          this.enqueue(record, true);
          this.unpromised.push(record.id);
          this.noteStartDeadline(record);
        }
      });
      if (failure === undefined) this.active.set(record.id, record);
    }
    for (const record of this.store.runningJobs()) {
      const gone = record.nodes.filter((name) => !this.nodes.has(name));
      if (gone.length > 0) {
        this.lostWithItsNodes(record, gone);
        continue;
      }
      const failure = this.recoverOne(record, firstOf, () => {
        this.marks.replay(record.id, this.store.events(record.id));
        // Suspended for a preemption (a partition's job): out of the core until its nodes are free again, as before the restart.
        if (record.state === 'SUSPENDED' && this.marks.get(record.id)?.byPreemption === true) {
          this.suspendedForPartition.add(record.id);
          return;
        }
        // Time spent suspended does not count against the limit: the job's end moves later by the closed
        // suspensions; an open one moves it as it goes (keepSuspendedEndsMoving).
        const request = this.coreRequest(record);
        const extended = { ...request, estimate: request.estimate + this.marks.suspendedSeconds(record.id) };
        this.scheduler.adoptRunning(extended, Math.floor((record.startTimeMs ?? this.clockMs()) / 1000), record.nodes);
      });
      if (failure !== undefined) continue;
      this.active.set(record.id, record);
      // A cancel accepted before the restart may not have reached the agent: send it again (the agent
      // may not be back yet; checkNodes retries).
      if (holdsNodes(record.state) && this.cancelRequested(record.id)) this.deliverOrder(record.id, record.nodes[0], record.requeueCount);
      else if (holdsNodes(record.state) && this.preemptRequested(record.id) !== undefined) this.redeliverPreempt(record);
      else if (holdsNodes(record.state)) this.redeliverPause(record);
      this.redeliverLimit(record);
    }
    if (this.active.size > 0) this.log(`recovered ${this.active.size} pending and running jobs from the store`);
  }

  /**
   * A job the store says runs on nodes this configuration does not have (cluster.toml lost them while it
   * ran): as Slurm does, its node failed: NODE_FAIL, or back to the queue if it asked (--requeue). A
   * reconfigure (`stranded` 'refuse') is refused instead, and the old configuration kept.
   */
  private lostWithItsNodes(record: JobRecord, gone: readonly string[]): void {
    const names = nodeList(gone);
    if (this.stranded === 'refuse') {
      throw new SubmitRefused([`job ${record.id} runs on ${names}, which this configuration does not have; wait for it to end, or cancel it (taras cancel ${record.id}), then reconfigure`]);
    }
    let reason = `${gone.length === 1 ? 'node' : 'nodes'} ${names} ${gone.length === 1 ? 'is' : 'are'} no longer in the cluster's configuration`;
    // Requeued only if this configuration could run it (a job that asked for the lost nodes by name cannot).
    const refusals = this.specOf(record).requeue ? this.refusals(this.specOf(record)) : [];
    if (refusals.length > 0) reason += `; not requeued: ${refusals.join('; ')}`;
    this.marks.replay(record.id, this.store.events(record.id));
    this.active.set(record.id, record);
    this.jobReport({ jobId: record.id, state: 'NODE_FAIL', exitCode: null, endTimeMs: this.clockMs(), reason }, refusals.length === 0);
    const now = this.store.job(record.id)!;
    this.log(`job ${record.id} (${record.user}) ran on ${names}, which the configuration no longer has: ${now.state === 'PENDING' ? 'requeued (--requeue)' : `ended ${now.state}`}`);
  }

  /**
   * A start order that did not reach the agent of `node` (it is down or restarting): the job never ran, so it
   * goes back to the queue in its place (a new run: should the order have arrived after all, the agent's next
   * registration has that run killed), or ends CANCELLED if a cancel came meanwhile; the node takes no job
   * until its agent registers again, UNREACHABLE_PAUSE_MS later at the earliest.
   */
  private startNotDelivered(id: JobId, run: number, node: string, error: AgentUnreachable): void {
    const status = this.nodes.get(node);
    if (status !== undefined && status.up) {
      status.up = false;
      status.unreachableAtMs = this.clockMs();
      if (!status.drained) status.reason = `its agent could not be reached (${error.code}); it takes jobs again when the agent registers`;
      this.refreshNode(node);
      this.log(`node ${node}: its agent could not be reached (${error.message}); no jobs go there until it registers again`);
    }
    this.startLost(id, run, `its start did not reach the agent of ${node} (${error.code})`);
  }

  /** A run whose start order never reached its agent: requeued (a new run), or CANCELLED if a cancel was asked. */
  private startLost(id: JobId, run: number, why: string): void {
    const record = this.active.get(id);
    if (record === undefined || !holdsNodes(record.state) || record.requeueCount !== run) return;
    if (this.cancelRequested(id)) {
      this.jobReport({ jobId: id, run, state: 'NODE_FAIL', exitCode: null, endTimeMs: this.clockMs(), reason: why });
      return;
    }
    this.log(`job ${id}: ${why}; it never ran, and waits in the queue again`);
    this.requeueRun(id, why, this.clockMs());
    this.dirty = true;
  }

  /** A task that would run an empty script ends FAILED instead (a damaged or hand-edited database). */
  private failShared(id: JobId, firstId: number): void {
    const reason = sharedScriptGone(firstId);
    this.log(`job ${id} ended FAILED: ${reason}`);
    this.append(id, { type: 'ended', state: 'FAILED', exitCode: null, reason }, this.clockMs());
    this.active.delete(id);
    this.dirty = true;
  }

  /** Runs `take` (queue or adopt the job); a job it cannot take ends FAILED (or, on a reconfigure, the error is thrown). Returns the reason if it ended. */
  private recoverOne(record: JobRecord, firstOf: (id: number) => JobRecord | undefined, take: () => void): string | undefined {
    let reason: string | undefined;
    // The schema without the environment (checked at submission; only the agent reads it): a third of the cost,
    // about 4 µs a job, 0.2 s for 50,000 queued jobs.
    const { submitEnv: _environment, ...withoutEnvironment } = specPart(record.request as JsonObject);
    let request = withoutEnvironment;
    // A task after an array's first keeps no script text of its own: it is checked with the text it will run, its first task's.
    const script = request.script as { text?: unknown } | null | undefined;
    const firstId = script?.text === '' ? sharedTaskOf(record) : undefined;
    if (firstId !== undefined) {
      const text = scriptOf(record, firstOf);
      // Not the configuration's doing: said as it is. (A reconfigure takes the task as it is, with a stand-in
      // text for the check: the running engine may go on, and the start fails it with this reason.)
      if (text === undefined && this.stranded !== 'refuse') return this.endedAtStartUp(record, sharedScriptGone(firstId));
      request = { ...request, script: { ...script, text: text ?? '#' } };
    }
    const checked = checkBody(JobSpecSchema, request, 'request');
    if (!checked.ok) {
      reason = `its stored request is not valid (${formatProblems(checked.problems)})`;
    } else {
      try {
        take();
        return undefined;
      } catch (error) {
        if (!(error instanceof SubmitRefused || error instanceof RangeError)) throw error;
        reason = error instanceof SubmitRefused ? error.message : 'no set of nodes of this cluster can hold it, even when all are idle';
      }
    }
    if (this.stranded === 'refuse') throw new SubmitRefused([`job ${record.id}: ${reason}`]);
    return this.endedAtStartUp(record, `this cluster can no longer run it: ${reason}`);
  }

  /** A stored job recovery cannot take ends FAILED with the reason, logged. Returns the reason. */
  private endedAtStartUp(record: JobRecord, reason: string): string {
    this.log(`job ${record.id} (${record.user}) ended FAILED at start-up: ${reason}`);
    this.append(record.id, { type: 'ended', state: 'FAILED', exitCode: null, reason }, this.clockMs());
    return reason;
  }

  /** A job's record: the engine's own while it is pending or running (without the environment), else the store's. */
  recordOf(id: JobId): JobRecord | undefined {
    return this.active.get(id) ?? this.store.job(id);
  }

  specOf(record: JobRecord): JobSpec {
    return record.request as unknown as JobSpec;
  }

  /**
   * What a running job holds on each of its nodes, for its steps (srun inside
   * the job): CPUs and memory per node, the verified uid it runs as, its
   * tasks and CPUs per task, and when its time limit ends (null: none).
   */
  allocationOf(record: JobRecord): { cpusPerNode: number; memoryMiBPerNode: number; uid: number | undefined; ntasks: number; cpusPerTask: number; endsAtMs: number | null } {
    const spec = this.specOf(record);
    const resources = this.resourcesOf(spec, record.nodes);
    const limit = spec.timeLimitSeconds;
    const suspended = this.suspendedSecondsOf(record.id);
    return {
      cpusPerNode: resources.cpusPerNode, memoryMiBPerNode: resources.memoryMiBPerNode, uid: (spec as { [SUBMIT_UID]?: number })[SUBMIT_UID],
      ntasks: spec.ntasks ?? record.nodes.length, cpusPerTask: spec.cpusPerTask,
      endsAtMs: limit === 'UNLIMITED' || limit === undefined || record.startTimeMs === null ? null : record.startTimeMs + (limit + suspended) * 1000,
    };
  }

  private partitionOf(spec: JobSpec): PartitionSpec {
    const name = spec.partition ?? this.config.defaultPartition;
    const partition = this.config.partitions.find((p) => p.name === name);
    if (!partition) throw new SubmitRefused([`no such partition '${name}'`]);
    return partition;
  }

  /**
   * The nodes, CPUs and memory the job takes on each node (sbatch's -n:
   * `taskLayout`). A running job keeps the node count it started with.
   * `--mem 0` (all of each node's memory) reserves, on each node, the memory
   * of the smallest node that could hold the job: all of it where the nodes
   * are alike. Throws SubmitRefused when no set of nodes can ever hold it.
   */
  private resourcesOf(spec: JobSpec, runningOn?: readonly string[]): ResourceRequest {
    if (runningOn !== undefined && runningOn.length > 0) return this.computeResources(spec, runningOn);
    // Asked three times per submission (refusal, commit, core request), and a pass of the cluster's nodes each
    // time: jobs of the same shape share one answer (the configuration is fixed for this engine's life).
    const key = shapeOf(spec);
    const known = this.resourcesByShape.get(key);
    if (known !== undefined) {
      if (known instanceof SubmitRefused) throw known;
      return known;
    }
    try {
      const resources = this.computeResources(spec);
      if (this.resourcesByShape.size < 10_000) this.resourcesByShape.set(key, resources);
      return resources;
    } catch (error) {
      if (error instanceof SubmitRefused && this.resourcesByShape.size < 10_000) this.resourcesByShape.set(key, error);
      throw error;
    }
  }

  private computeResources(spec: JobSpec, runningOn?: readonly string[]): ResourceRequest {
    const partition = this.partitionOf(spec);
    const inPartition = this.partitionNodes.get(partition.name)!;
    // --nodelist / --exclude narrow the partition's nodes.
    const eligibleNodes = spec.nodelist === undefined && spec.exclude === undefined
      ? inPartition : new Set([...inPartition].filter((name) => nodeAllowed(spec, name)));
    const suitable = suitableNodes(spec, this.config.nodes.filter((node) => eligibleNodes.has(node.name)));
    const layout = runningOn !== undefined && runningOn.length > 0
      ? { nodes: runningOn.length, cpusPerNode: Math.ceil((spec.ntasks ?? runningOn.length) / runningOn.length) * spec.cpusPerTask }
      : taskLayout(spec, suitable, partition.maxNodes ?? Infinity);
    const refusal = () => new SubmitRefused([`no set of nodes of partition ${partition.name} can hold the job, even when all are idle`]);
    if (layout === undefined || (spec.memoryMiB === 0 && suitable.length === 0)) throw refusal();
    if (spec.exclusive === true) {
      const whole = exclusiveResources(spec, layout, suitable, eligibleNodes);
      if (whole === undefined) throw refusal();
      return whole;
    }
    // (Folded, not spread into Math.min: a spread of 200,000 values overflows the stack.)
    const memoryMiBPerNode = spec.memoryMiB === 0
      ? suitable.reduce((least, node) => (node.cpus >= layout.cpusPerNode ? Math.min(least, node.memoryMiB) : least), Infinity)
      : spec.memPerCpuMiB !== undefined ? spec.memPerCpuMiB * layout.cpusPerNode // --mem-per-cpu: per CPU on the node
        : spec.memoryMiB ?? 0;
    return { nodes: layout.nodes, cpusPerNode: layout.cpusPerNode, memoryMiBPerNode, features: spec.constraint?.anyOf[0] ?? [], eligibleNodes };
  }

  /**
   * The core's view of a job: processors, nodes and limits from its spec. `probe`: a view of the job as it
   * would be (an update checked first), which notes nothing about the job (its night window stays as it is).
   */
  private coreRequest(record: JobRecord, probe = false): JobRequest {
    const spec = this.specOf(record);
    const partition = this.partitionOf(spec);
    let resources = this.resourcesOf(spec, record.state === 'PENDING' ? undefined : record.nodes);
    const limit = this.limitOf(spec, partition);
    let window: JobRequest['window'];
    if (spec.reservation !== undefined && record.state === 'PENDING') {
      // Within its reservation: its nodes, its time. One that is gone (deleted, ended) leaves the job with no plan.
      // The reservation it was accepted into, not a later one of the same name (another window, other users).
      const reservation = this.reservationOf(record);
      const owner = holdOwner({ kind: reservation?.kind ?? 'reservation', name: spec.reservation });
      const inside = reservation === undefined ? undefined : this.resourcesIn(reservation, resources);
      if (reservation === undefined || !inside!.placeable) window = { owner, start: Infinity, end: Infinity };
      else {
        window = { owner, start: Math.floor(reservation.startMs / 1000), end: Math.ceil(reservation.endMs / 1000) };
        resources = inside!.request;
      }
    }
    if (window === undefined && record.state === 'PENDING' && this.queueOf(spec, resources.nodes, limit) === 'night') window = this.nightWindowOf(record.id, limit, !probe);
    const notBefore = record.state === 'PENDING' ? this.notBeforeOf(record, spec) : null;
    if (notBefore !== null) {
      // --begin and dependencies bound the start only, as a window's start does (a job waiting for one is nobody's head).
      window = window === undefined ? { owner: NOT_BEFORE_OWNER, start: notBefore, end: Infinity } : { ...window, start: Math.max(window.start, notBefore) };
    }
    const deadline = spec.deadline === undefined ? {} : { deadline: Math.floor(spec.deadline.atMs / 1000), guaranteed: deadlineGuaranteed(record) === true };
    return {
      // The queue's order: priority, then this key (the id: submission order; or the place a move gave it).
      id: record.id, submitTime: record.queuePlace?.key ?? record.id, size: resources.nodes * resources.cpusPerNode, estimate: Math.max(1, limit),
      user: 0, queue: 0, partition: 0, priority: record.queuePlace?.priority ?? partition.priority + this.interactiveBoost(spec) - niceShare(spec), resources, ...(window === undefined ? {} : { window }), ...deadline,
    };
  }

  /**
   * The spec as it will be stored: a missing time limit is the partition's
   * default_time (as Slurm's DefaultTime), and none is a refusal.
   */
  complete(spec: JobSpec): JobSpec {
    const completed = this.completeTime(spec);
    // An interactive job runs at most interactive_max_time (seed 000 2.2.2: the lower of the two limits).
    const max = completed.interactive === undefined ? null : this.config.interactive.maxTimeSeconds;
    if (max === null || (completed.timeLimitSeconds !== 'UNLIMITED' && completed.timeLimitSeconds <= max)) return completed;
    return { ...completed, timeLimitSeconds: max };
  }

  private completeTime(spec: JobSpec): JobSpec {
    if (spec.timeLimitSeconds !== undefined) return spec;
    const name = spec.partition ?? this.config.defaultPartition;
    const partition = this.config.partitions.find((p) => p.name === name);
    const fallback = partition?.defaultTimeSeconds ?? null;
    if (partition === undefined) return spec; // refusals names the partition
    if (fallback === null) {
      throw new SubmitRefused([`the job gives no time limit and partition ${partition.name} has no default_time: give one (--time, e.g. 30 for 30 minutes; timeLimitSeconds in the API)`]);
    }
    return { ...spec, timeLimitSeconds: fallback };
  }

  /**
   * sbatch --test-only: the checks of a submission, then where the plan would start the job if it were
   * submitted now. Nothing is stored. Throws SubmitRefused as `submit` does.
   */
  testOnly(spec: JobSpec, caller: { user: string; uid?: number }, mayUseReservation: (users: readonly string[]) => boolean = () => true): { startMs: number | null; nodes: readonly string[]; processors: number; partition: string } {
    const reasons = this.submissionRefusals(spec);
    // The checks a real submission meets, the reservation's and the deadline's included: --test-only answers what sbatch would.
    if (reasons.length === 0) reasons.push(...this.reservationRefusals(spec, mayUseReservation));
    if (reasons.length > 0) throw new SubmitRefused(reasons);
    const { spec: completed, admission } = this.admitAtSubmission(caller.user, this.complete(spec), () => []);
    const request = this.coreRequest(this.draftRecord(completed, DRAFT_ID, caller.uid, admission?.guaranteed));
    const slot = this.scheduler.probe(request, this.nowSeconds());
    return { startMs: slot === undefined ? null : slot.start * 1000, nodes: slot?.nodes ?? [], processors: request.size, partition: this.partitionOf(completed).name };
  }

  /** The id the next submitted job will get. */
  nextJobId(): number {
    return this.store.nextJobId();
  }

  /** Why this cluster cannot take the job (empty: it can). */
  /**
   * A new submission's refusals: what the CLI refuses (src/jobspec), refused through the API as well and
   * in the same words, then the cluster's (refusals). A stored job (an update, a requeue) meets only the
   * cluster's: an array's later tasks keep no script text of their own.
   */
  submissionRefusals(spec: JobSpec): string[] {
    const reasons: string[] = [];
    if (!spec.script.text.startsWith('#!')) reasons.push('a batch script must start with #! and an interpreter, e.g. #!/bin/bash');
    else if (/\r(\n|$)/.test(spec.script.text)) reasons.push('the script has DOS line breaks (\\r\\n): convert it with dos2unix');
    if (spec.memoryMiB !== undefined && spec.memPerCpuMiB !== undefined) reasons.push('--mem and --mem-per-cpu are mutually exclusive (as in Slurm): give one of them');
    // In the submitter's time zone (the TZ of the shell that submitted it), as the CLI words it.
    const conflict = spec.beginMs === undefined || spec.deadline === undefined ? undefined : beginDeadlineConflict(spec.beginMs, spec.deadline.atMs, (spec as { submitEnv?: Readonly<Record<string, string>> }).submitEnv?.TZ);
    if (conflict !== undefined) reasons.push(conflict);
    for (const [flag, pattern] of [['--output', spec.output], ['--error', spec.error]] as const) {
      const problem = pattern === undefined ? undefined : checkPattern(pattern);
      if (problem !== undefined) reasons.push(`${flag}: ${problem}`);
    }
    return reasons.length > 0 ? reasons : this.refusals(spec);
  }

  refusals(spec: JobSpec, allowed: readonly Rejection['kind'][] = []): string[] {
    if (spec.timeLimitSeconds === undefined || spec.interactive !== undefined) {
      try {
        spec = this.complete(spec);
      } catch (error) {
        return [...(error as SubmitRefused).reasons];
      }
    }
    const reasons = validateAgainstCluster(spec, this.config).filter((rejection) => !allowed.includes(rejection.kind)).map((rejection) => rejection.message);
    reasons.push(...arrayRefusals(spec, this.config));
    reasons.push(...this.checkpointRefusals(spec));
    // Through the API as through the CLI: mail goes only to an address checked strictly, for events Slurm names.
    if (spec.mailUser !== undefined) {
      const address = parseMailUser(spec.mailUser);
      if (!address.ok) reasons.push(`--mail-user ${address.message}`);
    }
    if (spec.mailType !== undefined) {
      const types = parseMailType(spec.mailType.join(','));
      if (!types.ok) reasons.push(`--mail-type ${types.message}`);
    }
    if ((spec.constraint?.anyOf.length ?? 0) > 1) {
      reasons.push(`--constraint '${spec.constraint!.text}': alternatives (|) are not supported yet; ask for one set of features (a&b)`);
    }
    if (reasons.length > 0) return reasons;
    // The last word is the core's: a job it could never place is refused here, never stored.
    try {
      const resources = this.resourcesOf(spec);
      // Like the resources, a question of the configuration only: once per shape, not a pass over the nodes per submission.
      const shape = shapeOf(spec);
      let placeable = this.placeableByShape.get(shape);
      if (placeable === undefined) {
        placeable = this.pool.couldEverPlace(resources);
        if (this.placeableByShape.size < 10_000) this.placeableByShape.set(shape, placeable);
      }
      if (!placeable) return ['no set of nodes of this cluster can hold the job, even when all are idle'];
      const queue = this.queueOf(spec, resources.nodes, this.limitOf(spec));
      if (queue !== null && queue !== 'day' && queue !== 'night') return [queue];
      let named = 0;
      for (const item of spec.dependency?.items ?? []) {
        for (const ref of [...item.ids, ...(item.tasks ?? [])]) {
          const resolved = resolveJobRange(ref, (id) => this.active.get(id as JobId) ?? this.store.job(id as JobId));
          if ('error' in resolved) {
            const why = resolved.error.startsWith('no job') ? `there is ${resolved.error}` : resolved.error;
            return [`--dependency ${spec.dependency!.text}: ${why}; give ids that taras queue (or taras queue --all) lists`];
          }
          named += 'count' in resolved ? resolved.count : resolved.ids.length;
          // One whole array may always be named, however large the cluster lets arrays be.
          const most = Math.max(MAX_DEPENDENCY_JOBS, this.config.maxArraySize ?? 0);
          if (named > most) {
            return [`--dependency ${spec.dependency!.text}: names more than ${most} jobs (an array's id stands for every one of its tasks, each time it is written); name each array once`];
          }
        }
      }
    } catch (error) {
      if (error instanceof SubmitRefused) return [...error.reasons];
      throw error;
    }
    return [];
  }

  /** How many PENDING jobs (held ones included) the user has now. */
  pendingOf(user: string): number {
    return this.active.pendingOf(user);
  }

  /** The UTF-8 bytes of the scripts of the user's PENDING jobs (max_pending_script_size). */
  pendingScriptsOf(user: string): number {
    return this.active.pendingScriptsOf(user);
  }

  /** A pass is due even without an event (time moved on: planned starts may have come due). */
  touch(): void {
    this.dirty = true;
  }

  /**
   * Validates and durably records submissions (one transaction for the
   * batch), then queues them. Returns the ids once committed: only then is a
   * submission acknowledged.
   */
  submit(jobs: readonly Submission[]): JobId[] {
    const reasons = jobs.flatMap(({ spec }, index) =>
      this.submissionRefusals(spec).map((reason) => (jobs.length > 1 ? `job ${index + 1}: ${reason}` : reason)));
    if (reasons.length > 0) throw new SubmitRefused(reasons);
    return this.accept(jobs);
  }

  /** Commits and queues jobs already checked with `refusals` (tests and `submit`); throws the first refusal. */
  accept(jobs: readonly Submission[]): JobId[] {
    return this.acceptEach(jobs).map((outcome) => {
      if ('refused' in outcome) throw outcome.refused;
      return outcome.id;
    });
  }

  /**
   * Commits a batch (one transaction) and queues it, each submission on its
   * own: one the cluster cannot take is refused before the commit without
   * failing the others; a key already stored answers its first job
   * (`replayed`), never a second one. Returns once committed: the daemon
   * answers after `durable()`.
   */
  acceptEach(jobs: readonly Submission[]): Accepted[] {
    const outcomes: (Accepted | undefined)[] = jobs.map(() => undefined);
    const admitted: { index: number; submission: Submission; spec: JobSpec; admission?: DeadlineAdmission }[] = [];
    // The jobs admitted ahead in this batch, as the core will see them: made only for a deadline check (most batches have none).
    const drafts: (() => JobRequest)[] = [];
    const batchAhead: JobRequest[] = [];
    const aheadOf = (): JobRequest[] => {
      while (batchAhead.length < drafts.length) batchAhead.push(drafts[batchAhead.length]());
      return batchAhead;
    };
    const arrayKeys = new Map<string, number>();
    const sameKey: { index: number; first: number }[] = [];
    jobs.forEach((submission, index) => {
      try {
        // An array with a key stored before is answered at once: its tasks must not be stored again.
        const earlier = submission.spec.array === undefined || submission.idempotencyKey === undefined ? undefined : this.store.jobForKey(submission.user, submission.idempotencyKey);
        if (earlier !== undefined) {
          outcomes[index] = { id: earlier, replayed: true };
          return;
        }
        // The same key twice in this batch: the second answers the first's id after the commit.
        const keyed = submission.spec.array === undefined || submission.idempotencyKey === undefined ? undefined : `${submission.user}\n${submission.idempotencyKey}`;
        if (keyed !== undefined && arrayKeys.has(keyed)) {
          sameKey.push({ index, first: arrayKeys.get(keyed)! });
          return;
        }
        if (keyed !== undefined) arrayKeys.set(keyed, index);
        const completed = this.complete(submission.spec);
        this.resourcesOf(completed); // throws for a job no node set can hold
        // Checked again at the commit: the reservation may have been deleted since the submission was checked.
        const inReservation = this.reservationRefusals(completed, submission.mayUseReservation ?? (() => true));
        if (inReservation.length > 0) throw new SubmitRefused(inReservation);
        const { spec, admission } = this.admitAtSubmission(submission.user, completed, aheadOf);
        // The jobs admitted ahead of it in this batch count in the next one's deadline check.
        if (this.scheduler.plansOnNodes) drafts.push(() => this.coreRequest(this.draftRecord(spec, DRAFT_ID - jobs.length + index, submission.uid, admission?.guaranteed)));
        admitted.push({ index, submission, spec, admission });
      } catch (error) {
        // Nothing is stored yet: a fault in checking one submission (a bug of ours) fails that one alone, never the batch.
        if (!(error instanceof SubmitRefused)) this.log(`checking a submission of ${submission.user} failed: ${(error as Error).stack ?? String(error)}`);
        outcomes[index] = { refused: error instanceof Error ? error : new Error(String(error)) };
      }
    });
    const nowMs = this.clockMs();
    // An array's tasks are stored one job each, in order and in this one transaction (src/controller/arrays.ts).
    const rows = admitted.flatMap((entry, position) => expandArray(entry.spec).map((spec, task) => ({ position, spec, first: task === 0 })));
    const records = this.store.submitRecords(
      rows.map(({ position, spec, first }) => {
        const { submission: { user, uid, idempotencyKey }, admission } = admitted[position];
        return {
          user, name: spec.name, partition: spec.partition ?? this.config.defaultPartition, scriptPath: spec.script.path,
          // The verified uid rides in the stored request (no schema change); only the start order reads it.
          script: spec.script.text, request: storedRequest(spec, uid, spec.reservation === undefined ? undefined : this.reservations.get(spec.reservation), admission),
          ...(first ? { idempotencyKey } : {}),
        };
      }),
      nowMs,
    );
    records.forEach((record, row) => {
      const { position, first } = rows[row];
      const { index } = admitted[position];
      if (record.replayed) {
        outcomes[index] = { id: record.id, replayed: true };
        return;
      }
      if (first) outcomes[index] = { id: record.id, replayed: false };
      const { admission } = admitted[position];
      if (admission !== undefined) this.admissions.set(record.id, admission);
      if (admission?.guaranteed) this.countedAtAcceptance.set(record.id, this.pool.countedNodes().length);
      // A priority job's submitter and `taras when` read its plan at once: the next read plans again (not only the next pass).
      if (admission !== undefined) this.plannedAt = null;
      if (admission !== undefined && this.admissions.size > 10_000) this.admissions.delete(this.admissions.keys().next().value!);
      this.active.set(record.id, record);
      try {
        // A task of a throttled array past its %N waits out of the core (arrays.ts ArrayThrottle).
        if (!record.held && this.throttle.admit(record)) this.enqueue(record);
        this.unpromised.push(record.id);
        this.noteStartDeadline(record);
      } catch (error) {
        // Checked above, so this is a bug; the job is stored and answered, so it ends FAILED rather than failing the batch.
        const reason = `the scheduler refused it after it was stored: ${(error as Error).message}`;
        this.log(`job ${record.id}: ${reason}`);
        this.active.delete(record.id);
        this.append(record.id, { type: 'ended', state: 'FAILED', exitCode: null, reason }, nowMs);
      }
    });
    this.dirty = true;
    for (const { index, first } of sameKey) {
      const answer = outcomes[first]!;
      outcomes[index] = 'refused' in answer ? answer : { id: answer.id, replayed: true };
    }
    return outcomes as Accepted[];
  }

  /** What each priority job's submitter was told (POST /jobs answers it once; bounded). */
  private readonly admissions = new Map<JobId, DeadlineAdmission>();

  /** What the submitter of this job is told of its deadline (once: the answer to POST /jobs). */
  takeAdmission(id: JobId): DeadlineAdmission | null {
    const admission = this.admissions.get(id) ?? null;
    this.admissions.delete(id);
    return admission;
  }

  /** A record for a spec not stored yet: what coreRequest needs to see the job as the core will. */
  private draftRecord(spec: JobSpec, id: number, uid: number | undefined, guaranteed: boolean | undefined): JobRecord {
    const request = storedRequest(spec, uid, spec.reservation === undefined ? undefined : this.reservations.get(spec.reservation), guaranteed === undefined ? undefined : { guaranteed, warning: null });
    return { id: id as JobId, request, state: 'PENDING', nodes: [], submitTimeMs: this.clockMs() } as unknown as JobRecord;
  }

  /**
   * A submission's deadline (none: nothing to admit): the priority quota's say, then admitDeadline with the
   * jobs `batchAhead` of it. Returns the spec as it is stored (without its deadline if the quota refuses
   * it) and what the submitter is told; throws SubmitRefused for a deadline the cluster refuses.
   */
  private admitAtSubmission(user: string, spec: JobSpec, batchAhead: () => readonly JobRequest[]): { spec: JobSpec; admission?: DeadlineAdmission } {
    if (spec.deadline === undefined) return { spec };
    const quota = priorityQuotaAllows(user, spec);
    if (quota.allowed) return { spec, admission: this.admitDeadline(spec, batchAhead()) };
    const { deadline: _dropped, ...normal } = spec;
    return { spec: normal, admission: { guaranteed: false, plannedEndMs: null, shortfallSeconds: null, warning: `${quota.warning}: it runs as a normal job` } };
  }

  /**
   * The deadline check at submission (seed 000 2.2.3), on the plan: met (a
   * guarantee), short (no guarantee: it runs first among normal jobs, and
   * the submitter is told by how much it would miss), or refused (no plan
   * could ever meet it; or --deadline-policy cancel and the plan cannot).
   */
  private admitDeadline(spec: JobSpec, batchAhead: readonly JobRequest[]): DeadlineAdmission {
    const verdict = this.deadlineVerdict(spec, this.coreRequest(this.draftRecord(spec, DRAFT_ID, undefined, true)), batchAhead);
    const cancel = spec.deadline!.policy === 'cancel';
    if (verdict.met) return { guaranteed: true, plannedEndMs: verdict.plannedEndMs, shortfallSeconds: 0, warning: null };
    if (verdict.never) throw new SubmitRefused([`${verdict.words}; give a later --deadline or a shorter --time`]);
    if (verdict.planless) {
      if (cancel) throw new SubmitRefused([`deadlines need the policy fcfs, easy or conservative (this cluster uses ${this.config.policy})`]);
      return { guaranteed: false, plannedEndMs: null, shortfallSeconds: null, warning: `${verdict.words}; the job runs as a normal job` };
    }
    if (cancel) {
      throw new SubmitRefused([`the deadline ${isoTime(spec.deadline!.atMs)} cannot be met (${verdict.why}): ${verdict.miss}; with --deadline-policy cancel the job is refused: give a later deadline or leave the policy out`]);
    }
    return {
      guaranteed: false, plannedEndMs: verdict.plannedEndMs, shortfallSeconds: verdict.shortfallSeconds,
      warning: `${verdict.words}; the job runs as early as possible, ahead of normal jobs`,
    };
  }

  /**
   * The plan's answer on a deadline, for an acceptance (admitDeadline) and for an update of a guaranteed job
   * (readmitDeadline): `probe` is the job as the core will see it, with the jobs `batchAhead` of it and without
   * the queued jobs `without` (an updated job's old self). `words`: why it is not met, as the submitter is told.
   */
  private deadlineVerdict(spec: JobSpec, probe: JobRequest, batchAhead: readonly JobRequest[], without?: ReadonlySet<JobId>): DeadlineVerdict {
    const when = isoTime(spec.deadline!.atMs);
    if (!this.scheduler.plansOnNodes) return { met: false, never: false, planless: true, words: `policy ${this.config.policy} does not plan on nodes: the deadline ${when} cannot be guaranteed` };
    const check = this.scheduler.deadlineCheck(probe, this.nowSeconds(), batchAhead, without);
    if (check.verdict === 'never') {
      return { met: false, never: true, words: `the deadline ${when} can never be met: with ${limitWords(spec.timeLimitSeconds)} the job could end at ${isoTime(check.earliestEnd * 1000)} at the earliest, even on an idle cluster` };
    }
    if (check.verdict === 'met') return { met: true, plannedEndMs: check.plannedEnd * 1000 };
    const why = check.cause === 'other-deadlines' ? 'guaranteed jobs with earlier deadlines come first' : 'the nodes it needs are taken until then';
    const miss = Number.isFinite(check.shortfall) ? `it would end ${check.shortfall} s after it (planned end ${isoTime(check.plannedEnd * 1000)})` : 'the nodes that count now cannot hold it';
    return {
      met: false, never: false, planless: false, why, miss, words: `the deadline ${when} cannot be guaranteed (${why}): ${miss}`,
      plannedEndMs: Number.isFinite(check.plannedEnd) ? check.plannedEnd * 1000 : null, shortfallSeconds: Number.isFinite(check.shortfall) ? check.shortfall : null,
    };
  }

  /**
   * A pending guaranteed job's update that could cost its deadline (a new partition, a longer time limit): checked
   * again as at acceptance, as the job will be after it (its place in the queue kept), with the jobs `batch` updated
   * before it and without their old selves and its own. Met: the job stays guaranteed, and `batch` takes it. Else
   * SubmitRefused, in the words the submitter would be told.
   */
  private readmitDeadline(record: JobRecord, updated: JobSpec, delta: Record<string, string | number>, batch: UpdateBatch): DeadlineAdmission {
    const changed = { ...record, request: { ...record.request, ...delta } } as JobRecord;
    // The core's view of it as it would be; a night job's window stays noted as it is now, not as it would be.
    const probe = this.coreRequest(changed, true);
    const verdict = this.deadlineVerdict(updated, probe, batch.ahead, new Set([...batch.without, record.id]));
    if (!verdict.met) {
      const spec = this.specOf(record);
      const asked = [
        ...(delta.partition === undefined ? [] : [`move to partition ${delta.partition}`]),
        ...(delta.timeLimitSeconds === undefined ? [] : [`take ${limitWords(updated.timeLimitSeconds)}`]),
      ];
      const keep = [
        ...(delta.partition === undefined ? [] : [`its partition (${spec.partition ?? this.config.defaultPartition})`]),
        ...(delta.timeLimitSeconds === undefined ? [] : [`its time limit (${spec.timeLimitSeconds === 'UNLIMITED' ? 'UNLIMITED' : `${spec.timeLimitSeconds} s`})`]),
      ];
      throw new SubmitRefused([`job ${record.id} cannot ${asked.join(' and ')} and keep its deadline guaranteed: ${verdict.words}; keep ${keep.join(' and ')}, `
        + `or cancel it (taras cancel ${record.id}) and submit it again without --deadline or with a later one`]);
    }
    batch.ahead.push(probe);
    batch.without.add(record.id);
    return { guaranteed: true, plannedEndMs: verdict.plannedEndMs, shortfallSeconds: 0, warning: null };
  }

  /** A guaranteed job checked again at an update (readmitDeadline) and kept: tracked from now as one just accepted. */
  private readmitted(id: JobId, admission: DeadlineAdmission): void {
    this.countedAtAcceptance.set(id, this.pool.countedNodes().length);
    this.deadlineLogged.delete(id);
    this.deadlineDueHandled.delete(id);
    // An answer to its submission not taken yet says the new plan.
    if (this.admissions.has(id)) this.admissions.set(id, admission);
  }

  /** Guaranteed jobs whose loss of guarantee was logged, and those handed to deadlineNeedsNodes or ended DEADLINE. */
  private readonly deadlineLogged = new Set<JobId>();
  private readonly deadlineDueHandled = new Set<JobId>();
  /** When this engine started (a job submitted before was accepted by a controller that was down meanwhile, or restarted). */
  private startedMs = 0;
  /** How many nodes counted in plans when each guaranteed job was accepted (fewer later: nodes lost). */
  private readonly countedAtAcceptance = new Map<JobId, number>();

  /** Why a guaranteed job's deadline is at risk or missed: the seed's excuses first, else what changed in the plan. */
  private deadlineCause(record: JobRecord): string {
    const counted = this.pool.countedNodes().length;
    const atAcceptance = this.countedAtAcceptance.get(record.id);
    if (atAcceptance !== undefined && counted < atAcceptance) return `nodes lost: ${atAcceptance - counted} of the nodes that counted when it was accepted are down or drained`;
    if (record.submitTimeMs < this.startedMs) return 'the controller was down: it was accepted before the controller restarted';
    // Interactive jobs started since it was accepted (spec.interactive comes with interactive jobs; none before).
    const interactive = [...this.active.values()].filter((other) => other.state === 'RUNNING' && (other.startTimeMs ?? 0) >= record.submitTimeMs
      && (other.request as { interactive?: unknown }).interactive !== undefined).map((other) => other.id);
    if (interactive.length > 0) return `interactive jobs in between (${interactive.slice(0, 5).join(', ')})`;
    const overdue = this.scheduler.state.running.filter((run) => run.start + run.job.estimate <= this.nowSeconds()).map((run) => run.job.id);
    if (overdue.length > 0) return `plan changed: running jobs past their time limit (${overdue.slice(0, 5).join(', ')})`;
    return 'plan changed: jobs with earlier deadlines, reservations or maintenance windows took its place';
  }

  /**
   * After a pass: guaranteed jobs that lost their guarantee are logged once
   * with the cause; one that had to start by now and did not is ended
   * DEADLINE (--deadline-policy cancel) or handed to deadlineNeedsNodes.
   */
  private checkDeadlines(now: number): void {
    // Forget jobs that left now and then (the sets only ever hold priority jobs).
    for (const kept of [this.deadlineLogged, this.deadlineDueHandled, this.countedAtAcceptance]) {
      if (kept.size > this.active.size) for (const id of kept.keys()) if (!this.active.has(id)) kept.delete(id);
    }
    // The jobs at risk, not the whole queue: this runs every pass, and a queue may hold 50,000 jobs.
    for (const id of [...this.scheduler.atRiskJobs()]) {
      const entry = this.scheduler.state.getQueued(id);
      if (entry === undefined || !entry.job.guaranteed || this.deadlineLogged.has(id)) continue;
      const record = this.active.get(id);
      if (record === undefined) continue;
      this.deadlineLogged.add(id);
      const cause = this.deadlineCause(record);
      this.log(`job ${id}: its deadline ${isoTime(entry.job.deadline! * 1000)} can no longer be guaranteed (${cause})`);
      this.active.set(id, this.append(id, { type: 'deadline', missed: false, cause }, this.clockMs()));
    }
    this.preemptForDeadlines(now);
    for (const { id, latestStart } of this.scheduler.deadlinesDue(now)) {
      if (this.deadlineDueHandled.has(id)) continue;
      const record = this.active.get(id);
      if (record?.state !== 'PENDING') continue;
      this.deadlineDueHandled.add(id);
      if (this.specOf(record).deadline?.policy === 'cancel') {
        const reason = `DeadLine: it could no longer end by its deadline ${isoTime(this.specOf(record).deadline!.atMs)} (${this.deadlineCause(record)})`;
        this.log(`job ${id} ended DEADLINE: ${reason}`);
        this.append(id, { type: 'ended', state: 'DEADLINE', exitCode: null, reason }, this.clockMs());
        this.scheduler.cancel(id);
        this.active.delete(id);
        this.dirty = true;
        continue;
      }
      this.deadlineNeedsNodes(id, latestStart);
    }
  }

  /**
   * Guaranteed jobs (policy guarantee) no queue place lets start by their
   * latest start: their victims are preempted that victim's checkpoint time
   * before it (seed 000 2.2.3: wait as long as the deadline allows, then
   * checkpoint and remove a running job), so the nodes are free in time.
   */
  private preemptForDeadlines(now: number): void {
    for (const atRisk of [...this.scheduler.atRiskJobs()]) {
      const entry = this.scheduler.state.getQueued(atRisk);
      if (entry === undefined) continue;
      const { id, deadline, estimate, resources } = entry.job;
      if (!entry.job.guaranteed || deadline === undefined || resources === undefined || this.deadlineDueHandled.has(id) || !this.scheduler.atRisk(id)) continue;
      const record = this.active.get(id);
      if (record?.state !== 'PENDING' || this.specOf(record).deadline?.policy !== 'guarantee') continue;
      const latestStart = deadline - estimate;
      const choice = this.choosePreemption(resources, (victim) => this.preemptableForDeadline(victim));
      // A margin for the signal to arrive, the victim's end to be reported and the next pass to start the job.
      if (choice === null || choice.victims.length === 0 || now < latestStart - choice.waitSeconds - DEADLINE_PREEMPT_MARGIN_SECONDS) continue;
      this.deadlineDueHandled.add(id);
      this.deadlineNeedsNodes(id, latestStart, choice);
    }
  }

  /**
   * Deadline jobs preempt normal batch jobs that lose no work for good: ones
   * that checkpoint or may be requeued (--requeue); never an interactive or
   * another priority job.
   */
  private preemptableForDeadline(victim: JobRecord): boolean {
    const spec = this.specOf(victim);
    return spec.deadline === undefined && (spec as { interactive?: unknown }).interactive === undefined && (spec.checkpoint !== undefined || spec.requeue);
  }

  /** Whether a guaranteed job is waiting for the moment to preempt for it (the once-a-second check passes again while one is). */
  get deadlinesAtRisk(): boolean {
    for (const id of this.scheduler.atRiskJobs()) {
      if (this.scheduler.state.getQueued(id)?.job.guaranteed === true && !this.deadlineDueHandled.has(id)) return true;
    }
    return false;
  }

  /**
   * A guaranteed job had to start by `latestStartS` to end by its deadline and
   * its nodes are not free: the scheduler checkpoints and removes running jobs
   * to make room (seed 000 2.2.3), the one furthest into its limit since its
   * last (re)start first, never an interactive or another priority job; the
   * victims restart from their checkpoints afterwards. Called once per job,
   * at the first pass at or after its latest start.
   */
  private deadlineNeedsNodes(id: JobId, latestStartS: number, chosen?: VictimChoice): void {
    const request = this.scheduler.state.getQueued(id)?.job.resources;
    const latest = isoTime(latestStartS * 1000);
    const choice = chosen ?? (request === undefined ? null : this.choosePreemption(request, (victim) => this.preemptableForDeadline(victim)));
    if (choice === null || choice.victims.length === 0) {
      const cause = 'no running job can be preempted to free the nodes it needs (the jobs holding them are interactive, priority, or neither checkpoint nor may be requeued; or nodes are lost)';
      this.log(`job ${id}: must start by ${latest} to meet its deadline: ${cause}`);
      this.active.set(id, this.append(id, { type: 'deadline', missed: false, cause }, this.clockMs()));
      return;
    }
    for (const victim of choice.victims) this.preempt(victim, `preempted for job ${id}, which must start by ${latest} to meet its deadline`);
    this.log(`job ${id}: must start by ${latest} to meet its deadline: preempted job${choice.victims.length === 1 ? '' : 's'} ${choice.victims.join(', ')} (nodes free in about ${choice.waitSeconds} s)`);
  }

  /**
   * The running jobs to checkpoint and remove so a job asking `request` can
   * start now (core chooseVictims, seed 000's rule: the longest run relative
   * to its limit since its last restart goes first), among those `may`
   * allows and not already ending; null when no such set frees enough.
   */
  private choosePreemption(request: ResourceRequest, may: (victim: JobRecord) => boolean): VictimChoice | null {
    const now = this.nowSeconds();
    const candidates: PreemptionCandidate[] = [];
    for (const run of this.scheduler.state.running) {
      const victim = this.active.get(run.job.id);
      if (!victim || victim.state !== 'RUNNING' || !run.job.resources || !may(victim)) continue;
      if (this.cancelRequested(victim.id) || this.preemptRequested(victim.id) !== undefined) continue;
      const spec = this.specOf(victim);
      candidates.push({
        id: victim.id, nodes: run.nodes, cpusPerNode: run.job.resources.cpusPerNode, memoryMiBPerNode: run.job.resources.memoryMiBPerNode,
        startedAt: run.start, limit: run.job.estimate, waitSeconds: spec.checkpoint?.durationSeconds ?? this.partitionOf(spec).graceTimeSeconds ?? 0,
      });
    }
    return chooseVictims(request, this.preemptionNodes(), candidates, 'longest-relative', now);
  }

  /** Every node's free capacity now, as chooseVictims takes it. */
  private preemptionNodes(): PreemptionNode[] {
    return this.config.nodes.map((node) => {
      const free = this.pool.free(node.name);
      return { name: node.name, freeCpus: free.cpus, freeMemoryMiB: free.memoryMiB, features: node.features, accepting: this.pool.accepts(node.name) };
    });
  }

  /** A priority job that ended after its deadline: logged, with the cause. */
  private noteMissedDeadline(record: JobRecord, endMs: number): void {
    const deadline = this.specOf(record).deadline;
    if (deadline === undefined || endMs <= deadline.atMs) return;
    const cause = deadlineGuaranteed(record) ? this.deadlineCause(record) : 'it was accepted without a guarantee (the plan could not meet it at submission)';
    this.log(`job ${record.id}: missed its deadline ${isoTime(deadline.atMs)} by ${Math.ceil((endMs - deadline.atMs) / 1000)} s (${cause})`);
    this.append(record.id, { type: 'deadline', missed: true, cause: `ended ${Math.ceil((endMs - deadline.atMs) / 1000)} s after its deadline: ${cause}` }, endMs);
  }

  /** One scheduling pass if anything changed: verify and carry out the core's starts. */
  schedule(): JobId[] {
    if (!this.dirty || this.stopping) return [];
    const now = this.nowSeconds();
    this.keepSuspendedEndsMoving(now, false);
    this.dirty = false;
    const started: JobId[] = [];
    this.plannedAt = null;
    this.releaseThrottled();
    this.admitOverLimit();
    this.refreshDependencies();
    // Arrays' first tasks, read once a pass: they hold the script and environment their tasks start with (the
    // store's record: the engine's own keeps no environment).
    const firstOf = firstTaskReader((id) => this.store.job(id as JobId));
    for (const job of this.scheduler.pass(now)) {
      const nodes = this.scheduler.nodesOf(job.id) ?? [];
      const refused = nodes.find((name) => !this.nodes.get(name)?.up || this.nodes.get(name)?.drained);
      if (refused === undefined && this.dependent.has(job.id) && this.dependencyOf(job.id) !== 'met') {
        // Planned after its predecessor's predicted end, which came before the predecessor ended: it waits.
        this.scheduler.unstart(job.id, now);
        continue;
      }
      if (refused !== undefined) {
        this.log(`verify: job ${job.id} was placed on ${refused}, which is not available; it waits`);
        this.scheduler.unstart(job.id, now);
        continue;
      }
      // An array's task runs the script and environment its first task holds for it: never an empty script.
      const waiting = this.active.get(job.id);
      const firstId = waiting === undefined ? undefined : sharedTaskOf(waiting);
      if (waiting !== undefined && firstId !== undefined && scriptOf(waiting, firstOf) === undefined) {
        this.scheduler.unstart(job.id, now);
        this.scheduler.cancel(job.id);
        this.failShared(job.id, firstId);
        continue;
      }
      // The first start it was promised goes into the log with the real one (a job that starts in its first pass was promised now).
      const promisedMs = this.firstPromises.get(job.id) ?? now * 1000;
      this.firstPromises.delete(job.id);
      const record = this.append(job.id, { type: 'started', nodes, promisedMs }, this.clockMs());
      this.active.set(job.id, record);
      started.push(job.id);
      const stored = withArrayShared(this.specOf(record), firstId === undefined ? undefined : firstOf(firstId));
      // --mem 0 (all of each node's memory): the agent limits the job to what was reserved for it on each node.
      // --mem-per-cpu likewise: the job is limited to what it reserved on each node.
      const spec = (stored.memoryMiB === 0 || stored.memPerCpuMiB !== undefined || stored.exclusive === true) && job.resources ? { ...stored, memoryMiB: job.resources.memoryMiBPerNode } : stored;
      const order: StartOrder = {
        jobId: job.id, run: record.requeueCount, user: record.user, uid: (spec as { [SUBMIT_UID]?: number })[SUBMIT_UID], name: record.name, nodes, cpusOnNode: job.resources?.cpusPerNode ?? job.size, spec,
        warnSignal: spec.signal ?? this.config.warnSignal, killGraceSeconds: this.config.killGraceSeconds,
        partition: spec.partition ?? this.config.defaultPartition,
        ...this.checkpointOrder(record),
        ...(spec.interactive === undefined ? {} : { interactive: this.interactiveSession() }),
        ...arrayOrder(record),
      };
      this.startsInFlight.add(job.id);
      this.agents.start(order).then(() => {
        this.startsInFlight.delete(job.id);
        this.confirmed.add(job.id);
      }, (error: unknown) => {
        this.startsInFlight.delete(job.id);
        // The controller is stopping (its store closed under the order): the next start re-adopts or re-runs it.
        if (!this.store.isOpen) return;
        if (error instanceof AgentUnreachable) {
          this.startNotDelivered(job.id, record.requeueCount, nodes[0], error);
          return;
        }
        if (error instanceof AgentAnswerLost) {
          // Perhaps it runs: never run twice. The agent's next registration (or node_timeout) decides.
          this.log(`job ${job.id}: no answer from the agent of ${nodes[0]} to its start (${error.code}); it may run there: its next registration says`);
          return;
        }
        this.log(`job ${job.id}: the agent of ${nodes[0]} refused to start it (${(error as Error).message})`);
        this.jobReport({ jobId: job.id, state: 'NODE_FAIL', exitCode: null, endTimeMs: this.clockMs(), reason: `start failed on ${nodes[0]}: ${(error as Error).message}` });
      });
    }
    this.endLateInteractive();
    this.notePromises();
    this.preemptForPartitions(now);
    this.checkDeadlines(now);
    return started;
  }

  // ---- shutdown modes (seed 000 3.2.2) ----

  /** The controller is shutting down: nothing more starts (jobs requeued by the shutdown start at the next start). */
  private stopping = false;

  /**
   * `taras admin shutdown --mode`: 'checkpoint' preempts every running job
   * (requeue: one that checkpoints restarts from its checkpoint at the next
   * start; one that does not is requeued from its start with --requeue, else
   * ends PREEMPTED); 'kill' cancels them; 'leave-running' touches nothing.
   * Nothing starts from here on. Returns how long until the jobs are expected gone.
   */
  shutdownJobs(mode: ShutdownMode): { waitSeconds: number; jobs: JobId[] } {
    this.stopping = true;
    if (mode === 'leave-running') return { waitSeconds: 0, jobs: [] };
    let waitSeconds = 0;
    const jobs: JobId[] = [];
    for (const record of [...this.active.values()]) {
      if (!holdsNodes(record.state)) continue;
      jobs.push(record.id);
      waitSeconds = Math.max(waitSeconds, this.endForShutdown(record, mode, 'the controller is shutting down', 'the shutdown'));
    }
    return { waitSeconds, jobs };
  }

  /** Ends one running job as the shutdown mode says (`reason` of a preemption, `by` of a cancel); how long until it is gone. */
  private endForShutdown(record: JobRecord, mode: 'checkpoint' | 'kill', reason: string, by: string): number {
    if (mode === 'kill' || record.state === 'COMPLETING') {
      this.cancel(record.id, by, true);
      return this.config.killGraceSeconds;
    }
    return this.preempt(record.id, reason, 'requeue').waitSeconds;
  }

  /** Whether any job still holds nodes (a shutdown waits for none). */
  get jobsHoldNodes(): boolean {
    return [...this.active.values()].some((record) => holdsNodes(record.state));
  }

  /** What a maintenance window does to the jobs that would run into it (`shutdown --at T --mode`), by window name; stored. */
  windowModes(): Record<string, 'checkpoint' | 'kill'> {
    return { ...((this.store.setting(WINDOW_MODES_SETTING) as Record<string, 'checkpoint' | 'kill'> | undefined) ?? {}) };
  }

  /** Gives a maintenance window a shutdown mode: at its start, jobs running into it are checkpointed (their checkpoints end by then) or killed. */
  setWindowMode(name: string, mode: ShutdownMode): void {
    const window = this.reservations.get(name);
    if (window === undefined || window.kind !== 'maintenance') throw new SubmitRefused([`no maintenance window named ${name}; list them with \`taras reserve list\``]);
    const modes = this.windowModes();
    if (mode === 'leave-running') delete modes[name];
    else modes[name] = mode;
    this.store.setSetting(WINDOW_MODES_SETTING, modes);
  }

  /**
   * Once a second: jobs that would still run when a maintenance window with
   * a mode starts get, in mode 'checkpoint', the preemption signal early
   * enough that their checkpoint ends by the window's start (others at the
   * start), or in mode 'kill' are cancelled at its start. Requeued jobs wait
   * until after the window (the plan keeps them out of it).
   */
  applyWindowModes(): void {
    const modes = this.windowModes();
    const nowMs = this.clockMs();
    let changed = false;
    for (const [name, mode] of Object.entries(modes)) {
      const window = this.reservations.get(name);
      if (window === undefined) {
        delete modes[name];
        changed = true;
        continue;
      }
      for (const record of [...this.active.values()]) {
        if (!holdsNodes(record.state) || !record.nodes.some((node) => window.nodes.includes(node))) continue;
        if (this.cancelRequested(record.id) || this.preemptRequested(record.id) !== undefined) continue;
        const spec = this.specOf(record);
        const limitMs = spec.timeLimitSeconds === 'UNLIMITED' ? Infinity : spec.timeLimitSeconds * 1000;
        if ((record.startTimeMs ?? 0) + limitMs + this.suspendedSecondsOf(record.id) * 1000 <= window.startMs) continue; // it ends before the window
        const leadMs = mode === 'checkpoint' ? (spec.checkpoint?.durationSeconds ?? 0) * 1000 : 0;
        if (nowMs < window.startMs - leadMs) continue;
        this.log(`job ${record.id}: maintenance window ${name} starts ${isoTime(window.startMs)}: ${mode === 'kill' ? 'cancelled' : 'checkpointed and requeued'}`);
        this.endForShutdown(record, mode, `shutdown (maintenance window ${name} at ${isoTime(window.startMs)})`, `maintenance window ${name}`);
      }
    }
    if (changed) this.store.setSetting(WINDOW_MODES_SETTING, modes);
  }

  /** Pending jobs waiting for the jobs preempted for them (partition preemption): not preempted for again meanwhile. */
  private readonly preemptedFor = new Map<JobId, readonly JobId[]>();
  /** Jobs suspended for a higher-priority partition's job: out of the core until their nodes can hold them again. */
  private readonly suspendedForPartition = new Set<JobId>();

  /**
   * Slurm's partition preemption (PreemptType=partition_prio): a pending job
   * that cannot start now may take the nodes of running jobs of partitions
   * with a lower priority whose preempt_mode is not "off"; as few and as
   * recently started victims as possible (core chooseVictims,
   * 'fewest-recent'), each preempted with its own partition's mode. Jobs
   * suspended for it resume once their nodes are free again.
   */
  private preemptForPartitions(now: number): void {
    this.resumeSuspendedForPartition(now);
    const byName = new Map(this.config.partitions.map((p) => [p.name, p]));
    if (!this.config.partitions.some((p) => (p.preemptMode ?? 'off') !== 'off')) return;
    for (const [id, victims] of this.preemptedFor) {
      if (this.active.get(id)?.state !== 'PENDING' || victims.every((v) => !holdsNodes(this.active.get(v)?.state ?? 'COMPLETED') || this.suspendedForPartition.has(v))) this.preemptedFor.delete(id);
    }
    let looked = 0;
    for (const entry of this.scheduler.state.queue) {
      if (++looked > 20) break; // the front of the queue: a deep queue is not searched every pass
      const record = this.active.get(entry.job.id);
      // A job in a reservation or maintenance window starts in it, not now: no one is preempted for it.
      if (!record || record.held || this.preemptedFor.has(record.id) || !entry.job.resources || entry.job.window !== undefined) continue;
      const priority = byName.get(record.partition)?.priority ?? 0;
      const candidates: (PreemptionCandidate & { mode: 'requeue' | 'cancel' | 'suspend' })[] = [];
      for (const run of this.scheduler.state.running) {
        const victim = this.active.get(run.job.id);
        const partition = victim === undefined ? undefined : byName.get(victim.partition);
        const mode = partition?.preemptMode ?? 'off';
        if (!victim || victim.state !== 'RUNNING' || !partition || mode === 'off' || partition.priority >= priority) continue;
        if (this.cancelRequested(victim.id) || this.preemptRequested(victim.id) !== undefined) continue;
        const spec = this.specOf(victim);
        if (spec.interactive !== undefined) continue; // a terminal session is never a partition-preemption victim
        candidates.push({
          id: victim.id, nodes: run.nodes, cpusPerNode: run.job.resources?.cpusPerNode ?? 0, memoryMiBPerNode: run.job.resources?.memoryMiBPerNode ?? 0,
          startedAt: run.start, limit: run.job.estimate, waitSeconds: mode === 'suspend' ? 0 : spec.checkpoint?.durationSeconds ?? partition.graceTimeSeconds ?? 0, mode,
        });
      }
      if (candidates.length === 0) continue;
      const nodes = this.config.nodes.map((node) => {
        const free = this.pool.free(node.name);
        return { name: node.name, freeCpus: free.cpus, freeMemoryMiB: free.memoryMiB, features: node.features, accepting: this.pool.accepts(node.name) };
      });
      const choice = chooseVictims(entry.job.resources, nodes, candidates, 'fewest-recent', now);
      if (choice === null || choice.victims.length === 0) continue;
      // Freed, the victims' nodes must hold it now for its whole limit: a reservation or maintenance window on
      // them (which the plan keeps it out of) would leave it waiting, and the victims preempted for nothing.
      const freed = new Set(choice.victims.flatMap((v) => candidates.find((c) => c.id === v)!.nodes));
      if (this.holdOnNodesWithin(freed, now, entry.job.estimate)) continue;
      this.preemptedFor.set(record.id, choice.victims);
      for (const victimId of choice.victims) {
        const victim = candidates.find((c) => c.id === victimId)!;
        const reason = `${PARTITION_PREEMPTION}${record.id} of partition ${record.partition} (priority ${priority})`;
        this.log(`job ${victimId}: ${reason} (preempt_mode ${victim.mode})`);
        if (victim.mode === 'suspend') this.suspendForPartition(victimId, reason, now, record.id);
        else this.preempt(victimId, reason, victim.mode);
      }
    }
  }

  /** Whether a reservation or maintenance window takes any of `nodes` between `now` and `seconds` later. */
  private holdOnNodesWithin(nodes: ReadonlySet<string>, now: number, seconds: number): boolean {
    const [fromMs, toMs] = [now * 1000, (now + seconds) * 1000];
    for (const reservation of this.reservations.values()) {
      if (reservation.startMs < toMs && reservation.endMs > fromMs && reservation.nodes.some((name) => nodes.has(name))) return true;
    }
    return false;
  }

  /** Suspends a job and gives its nodes back to the core (PreemptMode=SUSPEND, preempt(..., 'suspend')): the preemptor starts on them at the next pass. */
  private suspendForPartition(id: JobId, reason: string, now: number, preemptor?: JobId): void {
    this.suspend(id, reason, { by: 'preemption', preemptor });
    if (this.scheduler.nodesOf(id) !== undefined) this.scheduler.end(id, now);
    this.suspendedForPartition.add(id);
    this.dirty = true;
  }

  /** Jobs suspended for a partition's job go back on their nodes, and are resumed, once those can hold them again. */
  private resumeSuspendedForPartition(now: number): void {
    for (const id of this.suspendedForPartition) {
      const record = this.active.get(id);
      if (!record || record.state !== 'SUSPENDED') {
        this.suspendedForPartition.delete(id);
        continue;
      }
      // Being cancelled or preempted: it ends where it is, out of the core.
      if (this.cancelRequested(id) || this.preemptRequested(id) !== undefined) continue;
      const request = this.coreRequest(record);
      const fits = record.nodes.every((name) => {
        const free = this.pool.free(name);
        return free.cpus >= (request.resources?.cpusPerNode ?? 0) && free.memoryMiB >= (request.resources?.memoryMiBPerNode ?? 0);
      });
      if (!fits) continue;
      this.suspendedForPartition.delete(id);
      this.resume(id, 'its nodes are free again');
      // Back in the core on its nodes, its limit longer by the whole time it was suspended.
      this.scheduler.adoptRunning({ ...request, estimate: request.estimate + this.suspendedSecondsOf(id) }, Math.floor((record.startTimeMs ?? 0) / 1000), record.nodes);
    }
  }

  /**
   * Pending interactive jobs that must start by a time (epoch ms): under
   * `interactive = "immediate"` at once (the first pass after the
   * submission), with --immediate=S within S seconds. Past it they end
   * CANCELLED with the reason: nothing waits.
   */
  private readonly mustStartBy = new Map<JobId, { byMs: number; why: 'policy' | 'flag'; seconds: number; freeing: boolean }>();

  /** Immediate interactive jobs go to the front of the queue, after running jobs (seed 000 5.4.3): above every partition priority. */
  private interactiveBoost(spec: JobSpec): number {
    return spec.interactive !== undefined && this.config.interactive.policy === 'immediate' ? INTERACTIVE_PRIORITY : 0;
  }

  /** Jobs that must start by a time: immediate interactive jobs, and any job with --immediate=S (`taras submit --immediate`, sbatch's). */
  private noteStartDeadline(record: JobRecord): void {
    const spec = this.specOf(record);
    const asked = spec.interactive;
    const flagSeconds = asked?.immediateSeconds ?? spec.immediateSeconds;
    if (flagSeconds === undefined && (asked === undefined || this.config.interactive.policy !== 'immediate')) return;
    const seconds = flagSeconds ?? 0;
    this.mustStartBy.set(record.id, { byMs: record.submitTimeMs + seconds * 1000, why: flagSeconds === undefined ? 'policy' : 'flag', seconds, freeing: false });
  }

  /** Pending jobs' reasons the log does not hold (freeNodesForInteractive), until they start or end. */
  private readonly waitingReasons = new Map<JobId, string>();

  /** Ends the jobs that did not start in time (after a pass: those that could start have); an immediate interactive job first has nodes freed for it. */
  private endLateInteractive(): void {
    if (this.mustStartBy.size === 0) return;
    const nowMs = this.clockMs();
    for (const [id, deadline] of this.mustStartBy) {
      const record = this.active.get(id);
      if (record?.state !== 'PENDING') {
        this.mustStartBy.delete(id);
        this.waitingReasons.delete(id);
        continue;
      }
      if (nowMs < deadline.byMs) continue;
      if (this.config.interactive.policy === 'immediate' && !deadline.freeing && this.specOf(record).interactive !== undefined) {
        // Artaras: nodes are freed for an interactive job by preempting batch jobs (never for a batch job's --immediate).
        const freeing = this.freeNodesForInteractive(id, deadline.why === 'policy' ? null : deadline.seconds);
        if (freeing !== null) {
          this.mustStartBy.set(id, { ...deadline, byMs: nowMs + (freeing.waitSeconds + INTERACTIVE_START_SLACK_SECONDS) * 1000, freeing: true });
          continue;
        }
      }
      const reason = deadline.why === 'flag'
        ? `not started within ${deadline.seconds} s (--immediate=${deadline.seconds}); try again later or ask for fewer resources`
        : 'no nodes free for it now (interactive = "immediate": an interactive job starts at once or not at all); '
          + 'try again later, ask for fewer nodes or CPUs, or submit a batch job with taras submit';
      this.mustStartBy.delete(id);
      this.waitingReasons.delete(id);
      // sbatch --immediate ends a batch job here too.
      this.log(`job ${id} (${this.specOf(record).interactive === undefined ? 'batch' : 'interactive'}): ${reason}`);
      this.append(id, { type: 'ended', state: 'CANCELLED', exitCode: null, reason }, nowMs);
      this.scheduler.cancel(id);
      this.active.delete(id);
      this.dirty = true;
    }
  }

  /**
   * Frees nodes for an immediate interactive job (seed 000 2.2.2): running
   * batch jobs are checkpointed and removed, the one that has run longest
   * relative to its limit since its last (re)start first (chooseVictims,
   * 'longest-relative'); never an interactive job, and only jobs that lose
   * no work for good (they checkpoint or may be requeued: they go back to
   * the queue and restart when nodes allow). Nothing is preempted when the
   * victims' checkpoints would take longer than `maxWaitSeconds`
   * (--immediate=S). The job's reason says whom it waits for and how long,
   * which `taras run` shows (Ctrl-C aborts). Null: nothing can be freed.
   */
  private freeNodesForInteractive(id: JobId, maxWaitSeconds: number | null = null): { waitSeconds: number } | null {
    const record = this.active.get(id);
    const request = this.scheduler.state.getQueued(id)?.job.resources;
    if (record === undefined || request === undefined) return null;
    const choice = this.choosePreemption(request, (victim) => {
      const spec = this.specOf(victim);
      return spec.interactive === undefined && (spec.checkpoint !== undefined || spec.requeue);
    });
    if (choice === null || choice.victims.length === 0 || (maxWaitSeconds !== null && choice.waitSeconds > maxWaitSeconds)) return null;
    for (const victim of choice.victims) this.preempt(victim, `preempted for interactive job ${id} of ${record.user}`);
    const victims = choice.victims.map((victim) => `${victim} (${this.active.get(victim)?.user ?? '?'})`).join(', ');
    const text = `freeing nodes for it: job${choice.victims.length === 1 ? '' : 's'} ${victims} ${choice.victims.length === 1 ? 'checkpoints' : 'checkpoint'} and `
      + `${choice.victims.length === 1 ? 'leaves' : 'leave'} within ${choice.waitSeconds} s`;
    this.waitingReasons.set(id, text);
    this.log(`job ${id} (interactive): ${text}`);
    return { waitSeconds: choice.waitSeconds };
  }

  /** Why a pending job waits, where the engine knows more than its log (an interactive job waiting for its victims' checkpoints). */
  waitingReason(id: JobId): string | undefined {
    // Slurm's reason for a task held back by its array's %N.
    if (this.throttle.isWaiting(id)) return 'JobArrayTaskLimit: its array runs at most as many tasks at once as its %N';
    return this.waitingReasons.get(id) ?? this.overLimitReason(id) ?? this.dependencyReason(id) ?? this.nightReason(id);
  }

  // ---- hold and release, --begin, dependencies (seed 004 2.2.5; Slurm's semantics) ----

  /**
   * `taras hold` / `scontrol hold`: pending jobs leave the queue's plan and keep their place. A user holds only
   * their own jobs; an administrator's hold is `JobHeldAdmin`, which only an administrator releases.
   */
  holdMany(ids: readonly JobId[], user: string, admin: boolean): ApiCancelResult[] {
    return [...new Set(ids)].map((id) => this.queueControl(id, user, admin,
      (record) => (record.state === 'PENDING' ? null : `job ${id} is ${record.state}: only pending jobs can be held`), 'held'));
  }

  /** `taras release` / `scontrol release`: held jobs go back to the queue, in their place. */
  releaseMany(ids: readonly JobId[], user: string, admin: boolean): ApiCancelResult[] {
    return [...new Set(ids)].map((id) => this.queueControl(id, user, admin, (record) => {
      if (record.state !== 'PENDING' || !record.held) return `job ${id} is not held`;
      if (record.reason === HELD_BY_ADMIN && !admin) return `job ${id} was held by an administrator (JobHeldAdmin): only an administrator can release it`;
      return null;
    }, 'released'));
  }

  private queueControl(id: JobId, user: string, admin: boolean, check: (record: JobRecord) => string | null, event: 'held' | 'released'): ApiCancelResult {
    const access = this.access(id, user, admin, event === 'held' ? 'hold' : 'release');
    if ('refusal' in access) return refusedOutcome(id, access);
    const { record } = access;
    const refusal = check(record);
    if (refusal !== null) return { id, state: record.state, result: 'refused', message: refusal };
    const current = this.active.get(id)!;
    if (event === 'held') {
      if (!current.held || (admin && current.reason !== HELD_BY_ADMIN)) {
        // A user's hold made an administrator's: released first, then held again (the log keeps both).
        if (current.held) this.append(id, { type: 'released' }, this.clockMs());
        const held = this.append(id, { type: 'held', by: admin ? 'admin' : 'user' }, this.clockMs());
        this.active.set(id, held);
        this.scheduler.cancel(id);
        this.overLimit.delete(id);
        this.dirty = true;
        this.plannedAt = null;
      }
      return { id, state: 'PENDING', result: 'cancelled', message: `job ${id} held${admin && current.user !== user ? ' (administrator hold)' : ''}` };
    }
    const released = this.append(id, { type: 'released' }, this.clockMs());
    this.active.set(id, released);
    // A task of a throttled array goes through its %N as at submission (one held while it waited for a slot still waits there).
    if (!this.throttle.isWaiting(id) && this.throttle.admit(released)) this.enqueue(released, true);
    this.unpromised.push(id);
    this.dirty = true;
    this.plannedAt = null;
    return { id, state: 'PENDING', result: 'cancelled', message: `job ${id} released` };
  }

  /**
   * `taras pause` (Argonne's sppause, seed 004 2.2.5): the user's waiting jobs are passed over by the scheduler,
   * keeping their place, until `unpause` (spunpause). Without ids: every pending interactive job of the user, as
   * sppause does. A pause is a hold with reason `Paused`; a held job is not paused (its hold says more).
   */
  pauseMany(ids: readonly JobId[] | null, user: string, admin: boolean): ApiCancelResult[] {
    const chosen = ids ?? [...this.active.values()].filter((r) => r.user === user && r.state === 'PENDING' && !r.held && this.specOf(r).interactive !== undefined).map((r) => r.id);
    return [...new Set(chosen)].map((id) => {
      const access = this.access(id, user, admin, 'pause');
      if ('refusal' in access) return refusedOutcome(id, access);
      const { record } = access;
      if (record.state !== 'PENDING') return { id, state: record.state, result: 'refused' as const, message: `job ${id} is ${record.state}: only waiting jobs can be paused` };
      if (record.held) return { id, state: record.state, result: 'refused' as const, message: `job ${id} is held already (${record.reason ?? 'held'})` };
      const paused = this.append(id, { type: 'held', by: 'user', reason: PAUSED }, this.clockMs());
      this.active.set(id, paused);
      this.scheduler.cancel(id);
      this.overLimit.delete(id);
      this.dirty = true;
      this.plannedAt = null;
      return { id, state: 'PENDING' as const, result: 'cancelled' as const, message: `job ${id} paused` };
    });
  }

  /** `taras unpause` (spunpause): paused jobs wait again in their place. Without ids: every paused job of the user. */
  unpauseMany(ids: readonly JobId[] | null, user: string, admin: boolean): ApiCancelResult[] {
    const chosen = ids ?? [...this.active.values()].filter((r) => r.user === user && r.held && r.reason === PAUSED).map((r) => r.id);
    return [...new Set(chosen)].map((id) => this.queueControl(id, user, admin,
      (record) => (record.state === 'PENDING' && record.held && record.reason === PAUSED ? null : `job ${id} is not paused`), 'released'))
      .map((result) => (result.result === 'refused' ? result : { ...result, message: `job ${result.id} unpaused` }));
  }

  // ---- taras move (seed 000 3.1.4) and scontrol update ----

  /**
   * `taras move ID --after OTHER` (0: the front). The queue is ordered by priority tier, then a key (the job id,
   * or the key a move gave): the job takes OTHER's tier and a key between OTHER's and the next job's. A user moves
   * only their own jobs, and only to a later place whose planned start is not earlier than the one it has; an
   * administrator moves any job anywhere and is warned of priority jobs that would then miss their deadlines.
   * Conservative plans every waiting job again in the new order. Throws SubmitRefused (`forbidden`: not theirs).
   */
  move(id: JobId, after: number, user: string, admin: boolean): { id: JobId; after: number; beforeMs: number | null; thenMs: number | null; warnings: string[] } {
    const record = this.ownedJob(id, user, admin, 'move');
    if (record.state !== 'PENDING') throw new SubmitRefused([`job ${id} is ${record.state}: only pending jobs can be moved in the queue`]);
    if (after === id) throw new SubmitRefused([`job ${id} cannot be moved after itself: give another pending job's id, or 0 for the front`]);
    const current = this.active.get(id)!;
    const cmp = (a: JobRequest, b: JobRequest): number => (b.priority ?? 0) - (a.priority ?? 0) || a.submitTime - b.submitTime || a.id - b.id;
    // Every pending job in queue order: the core's queue, and those out of it for now (held, throttled, over a limit).
    const queued = this.scheduler.state.queue.map((entry) => entry.job);
    const inCore = new Set(queued.map((job) => job.id));
    const outside = [...this.active.values()].filter((r) => r.state === 'PENDING' && !inCore.has(r.id)).map((r) => this.coreRequest(r));
    const order = [...queued, ...outside].sort(cmp);
    const mine = order.find((job) => job.id === id) ?? this.coreRequest(current);
    const others = order.filter((job) => job.id !== id);
    let place: { key: number; priority: number };
    if (after === 0) {
      const head = others[0];
      place = head === undefined ? { key: mine.submitTime, priority: mine.priority ?? 0 } : { key: head.submitTime - 1, priority: head.priority ?? 0 };
    } else {
      const at = others.findIndex((job) => job.id === after);
      if (at < 0) {
        const target = this.active.get(after as JobId) ?? this.store.job(after as JobId);
        throw new SubmitRefused([target === undefined ? `there is no job ${after}: give the id of a pending job (taras queue lists them), or 0 for the front`
          : `job ${after} is ${target.state}: a job can only be moved after a pending job (or 0: the front)`]);
      }
      const target = others[at];
      const next = others[at + 1];
      const priority = target.priority ?? 0;
      const key = next === undefined || (next.priority ?? 0) !== priority ? target.submitTime + 1 : (target.submitTime + next.submitTime) / 2;
      if (!(key > target.submitTime) || (next !== undefined && (next.priority ?? 0) === priority && !(key < next.submitTime))) {
        throw new SubmitRefused([`no room left between job ${target.id} and job ${next!.id} in the queue order: move job ${next!.id} first, or move job ${id} after another job`]);
      }
      place = { key, priority };
    }
    const moved: JobRequest = { ...mine, submitTime: place.key, priority: place.priority };
    if (!admin && !(cmp(moved, mine) > 0)) {
      throw new SubmitRefused([`job ${id} can only be moved further back in the queue (seed 000: a user gives up a place, never takes one); job ${after === 0 ? 'at the front' : after} is ahead of it. An administrator can move it forward`]);
    }
    // The plans before and after, each from scratch in queue order on a copy (what-if): nothing changes until the checks pass.
    let beforeMs = this.plannedStartMs(id);
    let thenMs: number | null = null;
    const warnings: string[] = [];
    if (this.scheduler.plansOnNodes && inCore.has(id)) {
      const now = this.nowSeconds();
      const before = this.planCopy(this.config.policy as PolicyName, queued);
      const then = this.planCopy(this.config.policy as PolicyName, [...queued.filter((job) => job.id !== id), moved].sort(cmp));
      before.plan(now);
      then.plan(now);
      const startOf = (copy: Scheduler, job: number): number | null => { const s = copy.plannedStart(job as JobId); return s === undefined ? null : s * 1000; };
      beforeMs = startOf(before, id);
      thenMs = startOf(then, id);
      if (!admin && beforeMs !== null && (thenMs === null ? false : thenMs < beforeMs)) {
        throw new SubmitRefused([`moving job ${id} after ${after === 0 ? 'the front' : `job ${after}`} would plan it to start earlier (${isoTime(thenMs!)} instead of `
          + `${isoTime(beforeMs)}); a user may only move a job to a later start. Choose a job further back`]);
      }
      for (const job of queued) {
        if (job.deadline === undefined) continue;
        const was = startOf(before, job.id);
        const will = startOf(then, job.id);
        const missesNow = will === null || will / 1000 + job.estimate > job.deadline;
        const missedBefore = was === null || was / 1000 + job.estimate > job.deadline;
        if (missesNow && !missedBefore) warnings.push(`job ${job.id} (${this.active.get(job.id)?.user ?? '?'}) would miss its deadline ${isoTime(job.deadline * 1000)}`);
      }
    }
    const stored = this.append(id, { type: 'moved', after, key: place.key, priority: place.priority, by: admin && record.user !== user ? 'admin' : 'user' }, this.clockMs());
    this.active.set(id, stored);
    if (inCore.has(id)) this.scheduler.replaceQueued(this.coreRequest(stored));
    this.scheduler.reorder();
    this.dirty = true;
    this.plannedAt = null;
    this.log(`job ${id} moved after ${after === 0 ? 'the front' : `job ${after}`} by ${user}${warnings.length > 0 ? `: ${warnings.join('; ')}` : ''}`);
    return { id, after, beforeMs, thenMs, warnings };
  }

  /**
   * `scontrol update JobId=ID TimeLimit=.. Partition=.. JobName=..` (`taras update`): a pending job's time limit,
   * partition or name. As in Slurm, its owner may raise the time limit within the partition's MaxTime (a running
   * job's, or a guaranteed deadline job's, only lower; an administrator sets any); the job is checked again as a
   * submission would be (the partition's limits, nodes, access; a guaranteed deadline, when its partition changes or
   * its limit grows) before anything is stored, and keeps its place in the queue (a new partition brings that
   * partition's priority tier).
   */
  update(id: JobId, changes: JobChanges, user: string, admin: boolean): JobRecord {
    const [outcome] = this.updateMany([id], changes, user, admin);
    if (outcome instanceof SubmitRefused) throw outcome;
    return outcome;
  }

  /**
   * update() of several jobs (scontrol update of an array's tasks): each checked on its own, the changes stored
   * in one commit and the queue reordered once (one reorder per job took 63 s for 10,000 tasks). Each job's
   * answer: its record, or why not.
   */
  updateMany(ids: readonly JobId[], changes: JobChanges, user: string, admin: boolean): (JobRecord | SubmitRefused)[] {
    // Guaranteed jobs checked again count in the next ones' checks as they will be (arrays' tasks moved together).
    const batch: UpdateBatch = { ahead: [], without: new Set() };
    const outcomes = ids.map((id): JobRecord | SubmitRefused | CheckedUpdate => {
      try {
        return this.checkedUpdate(id, changes, user, admin, batch);
      } catch (error) {
        if (error instanceof SubmitRefused) return error;
        throw error;
      }
    });
    const asked = outcomes.filter((outcome): outcome is CheckedUpdate => 'event' in outcome);
    if (asked.length === 0) return outcomes as (JobRecord | SubmitRefused)[];
    const stored = new Map(this.store.appendMany(asked.map(({ id, event }) => ({ jobId: id, event })), this.clockMs(), (id) => this.active.get(id)).map((record) => [record.id, record]));
    let reorder = false;
    for (const { id, delta, readmitted } of asked) {
      const record = stored.get(id)!;
      this.active.set(id, record);
      if (record.state === 'PENDING') reorder = this.scheduler.replaceQueued(this.coreRequest(record)) || reorder;
      else if (delta.timeLimitSeconds !== undefined) this.newRunningLimit(record);
      if (readmitted !== undefined) this.readmitted(id, readmitted);
      const kept = readmitted === undefined ? '' : ` (its deadline checked again: still guaranteed, planned end ${isoTime(readmitted.plannedEndMs!)})`;
      this.log(`job ${id} updated by ${user}: ${Object.entries(delta).map(([key, value]) => `${key}=${value}`).join(' ')}${kept}`);
    }
    if (reorder) this.scheduler.reorder();
    this.dirty = true;
    this.plannedAt = null;
    return outcomes.map((outcome) => ('event' in outcome ? stored.get(outcome.id)! : outcome));
  }

  /** Told when a running job's time limit changed (the daemon's job steps take it up). */
  onRunningLimit: ((id: JobId) => void) | null = null;
  /** A job step's tasks' time limit as it stands (the daemon's job steps); undefined once the step has ended. */
  stepLimitOf: ((id: JobId, stepId: number) => number | null | undefined) | null = null;

  /**
   * A running (or suspended) job's time limit changed: its end in the core moves with it (the time it was
   * suspended still added), and its supervisor is told, until the order gets through (deliverOrder's retries;
   * a restart sends it again: recover).
   */
  private newRunningLimit(record: JobRecord): void {
    if (this.scheduler.state.getRunning(record.id) !== undefined) {
      const request = this.coreRequest(record);
      const held = this.marks.suspendedSeconds(record.id) + (this.extendedWhileSuspended.get(record.id) ?? 0);
      this.scheduler.reviseRunning({ ...request, estimate: request.estimate + held });
    }
    this.deliverOrder(record.id, record.nodes[0], record.requeueCount, this.limitDelivery(record.id));
    this.onRunningLimit?.(record.id);
  }

  /**
   * One job's update, checked: the event to store (none when nothing changes: its record); throws SubmitRefused.
   * As Slurm's _update_job: a pending job's fields, checked as a submission would be (a user stays within the
   * partition's MaxTime, an administrator need not; a guaranteed deadline is checked again, readmitDeadline); a
   * running or suspended job's time limit only, which its owner may lower and only an administrator raise; an
   * ended job, nothing. `batch`: the guaranteed jobs of the same updateMany kept before it.
   */
  private checkedUpdate(id: JobId, changes: JobChanges, user: string, admin: boolean, batch: UpdateBatch): JobRecord | CheckedUpdate {
    const record = this.ownedJob(id, user, admin, 'update');
    if (isEndState(record.state) || record.state === 'COMPLETING') {
      throw new SubmitRefused([`job ${id} has already finished (${record.state}): only pending and running jobs can be updated`]);
    }
    const running = record.state !== 'PENDING';
    const spec = this.specOf(record);
    const asked = changes.timeLimitSeconds;
    if (running) {
      // As Slurm: a running job's name and time limit change, its partition does not.
      if (changes.partition !== undefined) throw new SubmitRefused([`job ${id} is ${record.state}: only its TimeLimit and JobName can be updated (Partition only while it is pending)`]);
      if (asked !== undefined && (this.cancelRequested(id) || this.preemptRequested(id) !== undefined)) {
        throw new SubmitRefused([`job ${id} is ending (cancelled or preempted): its time limit can no longer be updated`]);
      }
    }
    // A pending job's owner may raise its limit (within MaxTime, as Slurm) unless its deadline was guaranteed for the
    // limit it has: a longer one would move its latest start earlier and preempt other users' jobs for it.
    const guaranteed = !running && deadlineGuaranteed(record) === true;
    if (asked !== undefined && (running || guaranteed) && !admin) {
      const now = spec.timeLimitSeconds;
      const raises = now !== 'UNLIMITED' && (asked === 'UNLIMITED' || asked > (now ?? Infinity));
      if (raises && guaranteed) {
        throw new SubmitRefused([`job ${id}: only an administrator can raise the time limit of a job whose deadline is guaranteed (it was guaranteed for ${now} s); give a lower one, or submit again with the longer one`]);
      }
      if (raises) {
        throw new SubmitRefused([`job ${id} is ${record.state}: only an administrator can raise its time limit (it is ${now} s); give a lower one, or ask an administrator`]);
      }
    }
    const delta: Record<string, string | number> = {};
    if (changes.name !== undefined && changes.name !== spec.name) delta.name = changes.name;
    if (changes.partition !== undefined && changes.partition !== (spec.partition ?? this.config.defaultPartition)) delta.partition = changes.partition;
    if (asked !== undefined && asked !== spec.timeLimitSeconds) delta.timeLimitSeconds = asked;
    if (Object.keys(delta).length === 0) return record;
    const updated = { ...spec, ...delta } as JobSpec;
    // An administrator's time limit may pass the partition's MaxTime (Slurm checks it for users only); a limit an
    // administrator gave stays the owner's to keep while they change its name (neither limit nor partition changes).
    const keepsLimit = delta.timeLimitSeconds === undefined && delta.partition === undefined;
    const reasons = this.refusals(updated, admin || keepsLimit ? ['over-time-limit'] : []);
    // refusals checks an interactive job as its submission, at most interactive_max_time (complete): a user's new limit stays there too.
    const interactiveMax = spec.interactive === undefined ? null : this.config.interactive.maxTimeSeconds;
    if (!admin && interactiveMax !== null && delta.timeLimitSeconds !== undefined && (asked === 'UNLIMITED' || (asked ?? 0) > interactiveMax)) {
      reasons.push(`an interactive job runs at most interactive_max_time (${interactiveMax} s); give at most that`);
    }
    if (reasons.length > 0) throw new SubmitRefused(reasons.map((reason) => `job ${id} cannot be updated: ${reason}`));
    if (updated.reservation !== undefined) {
      const inReservation = this.reservationRefusals(updated, () => true);
      if (inReservation.length > 0) throw new SubmitRefused(inReservation.map((reason) => `job ${id} cannot be updated: ${reason}`));
    }
    // Its guarantee was for its partition and time limit: a new partition, or a longer limit (an administrator's), is
    // checked again as at acceptance; last, once all else passed. A lower limit only helps its deadline.
    const recheck = guaranteed && (delta.partition !== undefined || (delta.timeLimitSeconds !== undefined && this.limitOf(updated) > this.limitOf(spec)));
    const readmitted = recheck ? this.readmitDeadline(record, updated, delta, batch) : undefined;
    return { id, event: { type: 'updated', changes: delta, by: admin && record.user !== user ? 'admin' : 'user' }, delta, readmitted };
  }

  /**
   * `scontrol update JobId=12 ArrayTaskThrottle=N`: at most N tasks of array 12 run at once (0: no limit), as
   * Slurm. Stored as an `updated` event of each task not ended (its array text's %N), so a restart keeps it.
   * Running tasks go on and hold their slots (lowering it stops none); pending ones wait for a slot, or join
   * the queue in their place when it allows. Throws SubmitRefused (`forbidden`: not the caller's array).
   */
  setArrayThrottle(arrayId: JobId, limit: number, user: string, admin: boolean): JobRecord[] {
    const first = this.ownedJob(arrayId, user, admin, 'update');
    const task = arrayTaskOf(first);
    if (task === undefined || task.jobId !== arrayId) {
      const named = task === undefined ? `job ${arrayId} is not a job array` : `job ${arrayId} is task ${task.jobId}_${task.taskId}`;
      throw new SubmitRefused([`${named}: ArrayTaskThrottle is set on an array's id (JobId=${task?.jobId ?? 12}), as Slurm`]);
    }
    // Its tasks not ended (pending and running ones), in task order.
    const live = [...this.active.activeTasksOf(arrayId)].sort((a, b) => a - b).map((id) => this.active.get(id)!);
    if (live.length === 0) throw new SubmitRefused([`array ${arrayId} has ended: no task of it is pending or running`]);
    const text = (live[0].request.array as { text: string }).text.replace(/%\d+$/, '') + (limit > 0 ? `%${limit}` : '');
    // Its stored text is checked at every start as a submission's (red team: a 4,096-character --array given %N was stored
    // longer, and a restart ended every task FAILED, the running ones too, "its stored request is not valid").
    if (text.length > LIMITS.textChars) {
      throw new SubmitRefused([`array ${arrayId}: its --array text with %${limit} would be ${text.length} characters, more than the ${LIMITS.textChars} a job array's text may have; submit it again with a shorter one (ranges: 0-99 rather than 0,1,2,...)`]);
    }
    const by = admin && first.user !== user ? 'admin' : 'user';
    const stored = this.store.appendMany(live.map((record) => ({
      jobId: record.id, event: { type: 'updated', changes: { array: { ...(record.request.array as JsonObject), text } }, by } as const,
    })), this.clockMs(), (id) => this.active.get(id));
    for (const record of stored) this.active.set(record.id, record);
    // Out of the core and the old slots, then in again in task order, as at a restart.
    const pending = stored.filter((record) => record.state === 'PENDING');
    for (const record of pending) this.scheduler.cancel(record.id);
    this.throttle.reset(arrayId, limit > 0 ? limit : undefined, stored.filter((record) => record.state !== 'PENDING').map((record) => record.id));
    for (const record of pending) if (!record.held && !this.overLimit.has(record.id) && this.throttle.admit(record)) this.enqueue(record, true);
    this.dirty = true;
    this.plannedAt = null;
    this.log(`array ${arrayId}: ArrayTaskThrottle=${limit} by ${user}`);
    return stored;
  }

  /** A copy of the scheduler with the running jobs and the given queue (in this order) and the controller's holds; nothing planned yet. */
  private planCopy(policy: PolicyName, queue: readonly JobRequest[], drain: ReadonlySet<string> = new Set()): Scheduler {
    const now = this.nowSeconds();
    const pool = new NodePool(this.config.nodes, this.config.placement);
    for (const node of this.config.nodes) {
      const drained = drain.has(node.name);
      pool.setAccepting(node.name, !drained && this.pool.accepts(node.name), !drained && this.pool.counts(node.name));
    }
    const copy = new Scheduler(policy, { processors: pool.totalCpus }, now, pool);
    for (const run of this.scheduler.state.running) copy.adoptRunning(run.job, run.start, run.nodes);
    for (const job of queue) copy.submit(job, true);
    copy.setExternalHolds([...this.reservations.values()].map(holdOf));
    return copy;
  }

  /** Pending jobs with a dependency: the start bound (s) last given to the core, or null when none could be planned. */
  private readonly dependent = new Map<JobId, number | null>();
  /** Jobs whose dependency can never be met (DependencyNeverSatisfied): out of the core. */
  private readonly neverSatisfied = new Set<JobId>();

  /** The earliest start (s) --begin and an unmet dependency allow; null: no bound. Infinity: none can be planned yet. */
  private notBeforeOf(record: JobRecord, spec: JobSpec): number | null {
    let bound: number | null = spec.beginMs === undefined ? null : Math.ceil(spec.beginMs / 1000);
    if (spec.dependency !== undefined) {
      const state = this.dependencyState(record, spec);
      if (record.id !== DRAFT_ID) this.dependent.set(record.id, state.kind === 'wait' ? state.notBefore : null);
      if (state.kind === 'wait') bound = Math.max(bound ?? -Infinity, state.notBefore);
    }
    return bound;
  }

  private dependencyOf(id: JobId): 'met' | 'wait' | 'never' {
    const record = this.active.get(id);
    if (record === undefined) return 'never';
    const spec = this.specOf(record);
    return spec.dependency === undefined ? 'met' : this.dependencyState(record, spec).kind;
  }

  /**
   * Where a job's dependency stands (Slurm's meanings): after — the jobs started (or were cancelled before
   * starting), +MIN after their start; afterany — they ended; afterok — they COMPLETED (exit 0), never if one
   * ended otherwise; afternotok — they ended otherwise, never if one COMPLETED (of an array named by its id:
   * all its tasks ended and one did not complete, never if all did); singleton — every earlier job of the same
   * user and name has ended. An array's id stands for all its tasks, ARRAYID_TASK for one. `,` needs every
   * item, `?` one. While it waits, `notBefore` is when the plan says it can be met (predecessors' planned or
   * predicted starts and ends; Infinity when one has no plan).
   */
  private dependencyState(record: JobRecord, spec: JobSpec): { kind: 'met' } | { kind: 'never' } | { kind: 'wait'; notBefore: number } {
    const dependency = spec.dependency!;
    const itemStates = dependency.items.map((item) => {
      const groups = item.type === 'singleton'
        ? [{ jobs: [...this.active.values()].filter((other) => (other.id as number) < (record.id as number) && other.user === record.user && other.name === record.name), array: false }]
        // Each id once: an id written again names the same jobs (afterany:A:A:... must not look at A's tasks each time).
        : [...new Set([...item.ids, ...(item.tasks ?? [])])].map((ref) => this.dependencyJobs(ref));
      let notBefore = -Infinity;
      let kind: 'met' | 'wait' | 'never' = 'met';
      for (const group of groups) {
        // afternotok on a whole array: met once all its tasks ended and one of them did not complete.
        const anyFailed = item.type === 'afternotok' && group.array;
        let failed = false;
        let waits = false;
        // A whole array's ended tasks, counted: met for after and afterany; afterok needs all completed.
        if (group.ends !== undefined && group.ends.notCompleted > 0) {
          if (item.type === 'afterok') return { kind: 'never' as const, notBefore };
          failed = true;
        }
        for (const other of group.jobs) {
          if (other === undefined) return { kind: 'never' as const, notBefore };
          const ended = !this.active.has(other.id) || other.endTimeMs !== null;
          const startS = ended ? 0 : other.startTimeMs !== null ? other.startTimeMs / 1000 : this.plannedStartMs(other.id) === null ? Infinity : this.plannedStartMs(other.id)! / 1000;
          if (item.type === 'after') {
            const offset = (item.minutes ?? 0) * 60;
            if (ended || (other.startTimeMs !== null && this.nowSeconds() >= other.startTimeMs / 1000 + offset)) continue;
            kind = 'wait';
            notBefore = Math.max(notBefore, startS + offset);
            continue;
          }
          if (ended) {
            const ok = other.state === 'COMPLETED';
            failed ||= !ok;
            if ((item.type === 'afterok' && !ok) || (item.type === 'afternotok' && ok && !anyFailed)) return { kind: 'never' as const, notBefore };
            continue;
          }
          kind = 'wait';
          waits = true;
          notBefore = Math.max(notBefore, startS + this.limitOf(this.specOf(other)));
        }
        if (anyFailed && !failed && !waits) return { kind: 'never' as const, notBefore };
      }
      return { kind, notBefore };
    });
    const pick = dependency.all
      ? (itemStates.some((s) => s.kind === 'never') ? 'never' : itemStates.every((s) => s.kind === 'met') ? 'met' : 'wait')
      : (itemStates.some((s) => s.kind === 'met') ? 'met' : itemStates.every((s) => s.kind === 'never') ? 'never' : 'wait');
    if (pick !== 'wait') return { kind: pick };
    const waiting = itemStates.filter((s) => s.kind === 'wait').map((s) => Math.ceil(s.notBefore));
    return { kind: 'wait', notBefore: dependency.all ? Math.max(...waiting) : Math.min(...waiting) };
  }

  /**
   * The jobs a dependency's id names, as Slurm reads it: job N, every task of array N (`array`), one task (12_3);
   * [undefined] for none. For a whole array, only its tasks not ended, and `ends`: how many ended, and did not
   * complete (counted in the store once for each task that ends, not read task by task at every pass).
   */
  private dependencyJobs(ref: number | string): { jobs: (JobRecord | undefined)[]; array: boolean; ends?: { ended: number; notCompleted: number } } {
    const lookup = (id: number) => this.active.get(id as JobId) ?? this.store.job(id as JobId);
    const resolved = resolveJobRange(ref, lookup);
    if ('error' in resolved) return { jobs: [undefined], array: false };
    if (!resolved.array) return { jobs: resolved.ids.map(lookup), array: false };
    const arrayId = resolved.first as JobId;
    const live = this.active.activeTasksOf(arrayId);
    let ends = this.arrayEnds.get(arrayId);
    if (ends === undefined || ends.ended !== resolved.count - live.size) this.arrayEnds.set(arrayId, ends = this.store.arrayEnds(arrayId));
    return { jobs: [...live].map((id) => this.active.get(id)), array: true, ends };
  }

  /** Each array a dependency named whole: its ended tasks, counted (see dependencyJobs). An ended task never runs again. */
  private readonly arrayEnds = new Map<number, { ended: number; notCompleted: number }>();

  /** Before each pass: dependent jobs whose predecessors' plans moved get their new start bound; one that can never be met leaves the queue. */
  /** Told of a job left pending whose dependency can never be met (the daemon's mailer: INVALID_DEPEND). */
  onDependencyNeverSatisfied: ((record: JobRecord) => void) | null = null;

  private refreshDependencies(): void {
    if (this.dependent.size === 0) return;
    for (const [id, last] of [...this.dependent]) {
      const record = this.active.get(id);
      if (record?.state !== 'PENDING') {
        this.dependent.delete(id);
        this.neverSatisfied.delete(id);
        continue;
      }
      if (record.held) continue;
      const spec = this.specOf(record);
      const state = this.dependencyState(record, spec);
      if (state.kind === 'never') {
        this.dependent.delete(id);
        this.scheduler.cancel(id);
        if (this.config.killInvalidDepend === true) {
          const reason = `its dependency (${spec.dependency!.text}) can never be satisfied (kill_invalid_depend)`;
          this.append(id, { type: 'ended', state: 'CANCELLED', exitCode: null, reason }, this.clockMs());
          this.active.delete(id);
        } else {
          this.neverSatisfied.add(id);
          this.onDependencyNeverSatisfied?.(record);
        }
        continue;
      }
      const bound = state.kind === 'wait' ? state.notBefore : null;
      if (bound !== last) this.scheduler.replaceQueued(this.coreRequest(record));
      if (state.kind === 'met') this.dependent.delete(id);
    }
  }

  private dependencyReason(id: JobId): string | undefined {
    const record = this.active.get(id);
    if (record === undefined || record.held) return undefined;
    if (this.neverSatisfied.has(id)) return `DependencyNeverSatisfied: ${this.specOf(record).dependency?.text ?? ''} can never be met; cancel it (taras cancel ${id})`;
    if (this.dependent.has(id)) return `Dependency: waits for ${this.specOf(record).dependency?.text ?? ''}`;
    const begin = this.specOf(record).beginMs;
    if (begin !== undefined && begin > this.clockMs()) return `BeginTime: not before ${isoTime(begin)} (--begin)`;
    return undefined;
  }

  // ---- the queued-work limit (seed 004's Queue_Supervisor) ----

  /** Jobs held back by the queued-work limit, in submission order; out of the core until their user's queued work allows. */
  private readonly overLimit = new Map<JobId, { key: string; minutes: number }>();
  /** The node-minutes and queue key of each job let into the core under the limit (a pending job's share of its user's queued work). */
  private readonly queuedShare = new Map<JobId, { key: string; minutes: number }>();
  /** Queued node-minutes per user and queue, counted from the core's queue at the first need after a pass, then kept up as jobs are let in. */
  private queuedWork: Map<string, number> | null = null;

  /** A pending job goes into the core, unless its user's queued work in its queue is at the limit already. */
  private enqueue(record: JobRecord, inPlace = false): void {
    const share = this.limitShareOf(record);
    if (share !== null) {
      const work = this.queuedWorkNow();
      const queued = work.get(share.key) ?? 0;
      if (queued >= this.config.dayNight!.queuedLimitNodeMinutes) {
        this.overLimit.set(record.id, share);
        return;
      }
      work.set(share.key, queued + share.minutes);
      this.queuedShare.set(record.id, share);
    }
    this.scheduler.submit(this.coreRequest(record), inPlace);
  }

  private limitShareOf(record: JobRecord): { key: string; minutes: number } | null {
    const limit = this.config.dayNight?.queuedLimitNodeMinutes ?? 0;
    if (limit === 0) return null;
    const spec = this.specOf(record);
    const nodes = this.resourcesOf(spec).nodes;
    const seconds = this.limitOf(spec);
    const queue = this.queueOf(spec, nodes, seconds);
    if (queue !== 'day' && queue !== 'night') return null;
    return { key: `${record.user}\u0000${queue}`, minutes: nodeMinutes(nodes, seconds) };
  }

  private queuedWorkNow(): Map<string, number> {
    if (this.queuedWork !== null) return this.queuedWork;
    const work = new Map<string, number>();
    for (const entry of this.scheduler.state.queue) {
      const share = this.queuedShare.get(entry.job.id);
      if (share !== undefined) work.set(share.key, (work.get(share.key) ?? 0) + share.minutes);
    }
    if (this.queuedShare.size > 2 * this.scheduler.state.queue.length + 1000) {
      const queued = new Set(this.scheduler.state.queue.map((entry) => entry.job.id));
      for (const id of this.queuedShare.keys()) if (!queued.has(id)) this.queuedShare.delete(id);
    }
    this.queuedWork = work;
    return work;
  }

  /** Before each pass: held-back jobs whose user's queued work has fallen below the limit go into the core, oldest first, in their place. */
  private admitOverLimit(): void {
    this.queuedWork = null;
    if (this.overLimit.size === 0) return;
    const limit = this.config.dayNight?.queuedLimitNodeMinutes ?? 0;
    const work = this.queuedWorkNow();
    for (const [id, share] of [...this.overLimit]) {
      const record = this.active.get(id);
      if (record?.state !== 'PENDING' || record.held || limit === 0) {
        this.overLimit.delete(id);
        if (record?.state === 'PENDING' && !record.held) this.scheduler.submit(this.coreRequest(record), true);
        continue;
      }
      const queued = work.get(share.key) ?? 0;
      if (queued >= limit) continue;
      this.overLimit.delete(id);
      work.set(share.key, queued + share.minutes);
      this.queuedShare.set(id, share);
      this.scheduler.submit(this.coreRequest(record), true);
      this.unpromised.push(id);
    }
  }

  private overLimitReason(id: JobId): string | undefined {
    const share = this.overLimit.get(id);
    if (share === undefined) return undefined;
    const [user, queue] = share.key.split('\u0000');
    const queued = this.queuedWorkNow().get(share.key) ?? 0;
    return `QueuedWorkLimit: ${user} has ${queued} node-minutes queued in the ${queue} queue, at the limit of ${this.config.dayNight!.queuedLimitNodeMinutes} `
      + '(queued_limit_node_minutes); it joins the queue, in its place, as earlier jobs start';
  }

  // ---- day and night queues (seed 004; src/config/day-night.ts) ----

  /** Pending night jobs in the core: the latest start (ms) their night window allows; past it they get the next night. */
  private readonly nightJobs = new Map<JobId, number>();
  private holidayOn: boolean | null = null;

  /** The time limit the core plans with. */
  private limitOf(spec: JobSpec, partition = this.partitionOf(spec)): number {
    return spec.timeLimitSeconds === 'UNLIMITED' || spec.timeLimitSeconds === undefined ? partition.maxTimeSeconds ?? UNLIMITED_SECONDS : spec.timeLimitSeconds;
  }

  /** The day or night queue of a batch job, or why it fits neither; null: no day and night queues here (or an interactive or reservation job). */
  queueOf(spec: JobSpec, nodes: number, limitSeconds: number): JobClass | string | null {
    const config = this.config.dayNight;
    if (config === undefined || spec.interactive !== undefined || spec.reservation !== undefined) return null;
    return jobClass(config, nodes, limitSeconds);
  }

  /** The holiday switch (`taras admin holiday`): every period is night while it is on. Stored. */
  get holiday(): boolean {
    this.holidayOn ??= this.store.setting(HOLIDAY_SETTING) === true;
    return this.holidayOn;
  }

  setHoliday(on: boolean): void {
    this.store.setSetting(HOLIDAY_SETTING, on);
    this.holidayOn = on;
    for (const id of [...this.nightJobs.keys()]) this.renewNightWindow(id);
    this.plannedAt = null;
    this.dirty = true;
  }

  /** Is it day now (day jobs only start; night jobs wait)? Null: no day and night queues. */
  isDayNow(): boolean | null {
    const config = this.config.dayNight;
    return config === undefined ? null : isDay(config, this.clockMs(), this.holiday);
  }

  private nightWindowOf(id: JobId, limitSeconds: number, note = true): JobRequest['window'] {
    const found = nightWindow(this.config.dayNight!, this.clockMs(), limitSeconds, this.holiday);
    if (note && id !== DRAFT_ID && id > 0) this.nightJobs.set(id, found === null ? Infinity : found.endMs - limitSeconds * 1000);
    if (found === null) return { owner: NIGHT_OWNER, start: Infinity, end: Infinity };
    if (found.endMs === Infinity) return undefined; // a holiday: no window
    return { owner: NIGHT_OWNER, start: Math.floor(found.startMs / 1000), end: Math.floor(found.endMs / 1000) };
  }

  private renewNightWindow(id: JobId): void {
    const record = this.active.get(id);
    if (record?.state !== 'PENDING' || record.held) {
      this.nightJobs.delete(id);
      return;
    }
    this.scheduler.replaceQueued(this.coreRequest(record));
  }

  /** Each second: a night job that can no longer start and end within its night gets the next night. */
  refreshNightWindows(): void {
    if (this.nightJobs.size === 0) return;
    const nowMs = this.clockMs();
    let renewed = false;
    for (const [id, latestStartMs] of [...this.nightJobs]) {
      if (this.active.get(id)?.state !== 'PENDING') this.nightJobs.delete(id);
      else if (nowMs > latestStartMs) {
        this.renewNightWindow(id);
        renewed = true;
      }
    }
    if (renewed) {
      this.plannedAt = null;
      this.dirty = true;
    }
  }

  private nightReason(id: JobId): string | undefined {
    const config = this.config.dayNight;
    if (config === undefined || !this.nightJobs.has(id) || this.holiday) return undefined;
    const window = this.scheduler.state.getQueued(id)?.job.window;
    if (window === undefined || window.owner !== NIGHT_OWNER) return undefined;
    const at = Number.isFinite(window.start) ? ` (the next night long enough: ${isoTime(window.start * 1000)} to ${isoTime(window.end * 1000)})` : '';
    return `night job: over ${config.dayMaxNodeMinutes} node-minutes or ${config.dayMaxTimeSeconds / 3600} h, it starts only at night and ends before the day (${config.dayText})${at}`;
  }

  /**
   * The first planned start of each job queued since the last pass (kept in
   * memory until it starts, then written with its start): what `taras
   * submit` and `taras when` showed it first. A job with no plan yet gets
   * its first one at a later pass.
   */
  private notePromises(): void {
    if (this.unpromised.length === 0) return;
    this.ensurePlan();
    const waiting: JobId[] = [];
    for (const id of this.unpromised) {
      if (this.active.get(id)?.state !== 'PENDING') continue;
      const planned = this.scheduler.plannedStart(id);
      if (planned === undefined) waiting.push(id);
      else this.firstPromises.set(id, planned * 1000);
    }
    this.unpromised = waiting;
    // Jobs cancelled before they started leave their promise behind: forget those now and then.
    if (this.firstPromises.size > this.active.size) {
      for (const id of this.firstPromises.keys()) if (!this.active.has(id)) this.firstPromises.delete(id);
    }
  }

  /** What an interactive job's supervisor needs of cluster.toml. */
  private interactiveSession(): NonNullable<StartOrder['interactive']> {
    const { graceSeconds, idleSeconds, warnSeconds } = this.config.interactive;
    return { graceSeconds, idleSeconds, warnSeconds };
  }

  /** The first planned start of a pending job (epoch ms), null before its first pass or with no plan yet. */
  firstPromiseMs(id: JobId): number | null {
    return this.firstPromises.get(id) ?? null;
  }

  /** Stores an event of a job and notes it in the in-memory marks of its run. */
  private append(id: JobId, event: TransitionEvent, timeMs: number): JobRecord {
    // The store takes the active record rather than read the job's whole request, except for a start: its
    // record goes to the agent with the submit environment, which active records leave out (ActiveJobs).
    const record = this.store.append(id, event, timeMs, event.type === 'started' ? undefined : this.active.get(id));
    this.marks.note(id, event, timeMs);
    if (event.type !== 'suspended' && event.type !== 'signalled' && event.type !== 'checkpointed' && event.type !== 'deadline') this.extendedWhileSuspended.delete(id);
    return record;
  }

  /** Whether a pass is due (an event arrived since the last one). */
  get needsPass(): boolean {
    return this.dirty;
  }

  /**
   * A job's fate as its agent reports it: ended (with the real end time and exit code) or still running.
   * `mayRequeue` false: a NODE_FAIL ends the job even if it asked for --requeue (this configuration could not run it).
   */
  jobReport(report: JobReport, mayRequeue = true): void {
    const record = this.active.get(report.jobId);
    if (!record || record.state === 'PENDING') return;
    if (report.run !== undefined && report.run !== record.requeueCount) {
      this.log(`job ${report.jobId}: ignored a report about run ${report.run}; the job is on run ${record.requeueCount}`);
      return;
    }
    if (report.state === 'RUNNING') {
      this.confirmed.add(report.jobId);
      return;
    }
    this.confirmed.delete(report.jobId);
    const endMs = report.endTimeMs ?? this.clockMs();
    const spec = this.specOf(record);
    // A job being cancelled is not requeued when its node fails: it ends CANCELLED, as asked.
    const cancelled = (report.state === 'NODE_FAIL' || report.state === 'PREEMPTED') && this.cancelRequested(report.jobId);
    const preempting = cancelled ? undefined : this.preemptRequested(report.jobId);
    // A checkpointing job that exited cleanly (code 0) after its preemption signal (preempted or at its limit) made its checkpoint.
    if (spec.checkpoint !== undefined && report.exitCode === 0 && (report.state === 'PREEMPTED' || report.state === 'TIMEOUT' || preempting !== undefined)) {
      this.append(report.jobId, { type: 'checkpointed', by: 'exit' }, endMs);
    }
    const endedAnyway = report.state === 'COMPLETED' || report.state === 'FAILED' || report.state === 'OUT_OF_MEMORY';
    if ((preempting !== undefined && !endedAnyway) || (report.state === 'PREEMPTED' && !cancelled)) {
      // Preempted (Slurm's PreemptMode): back to the queue in its place, keeping its id and history, or ended PREEMPTED.
      // Slurm's words: a job requeued by hand is "requeued by X", one taken off its nodes "preempted: why".
      const asked = preempting?.reason ?? report.reason ?? 'preempted';
      const why = asked.startsWith('requeued by ') ? asked : `preempted: ${asked}`;
      if ((preempting?.mode ?? 'cancel') === 'requeue') this.requeueRun(report.jobId, why, endMs, preempting?.asNew === true);
      else {
        this.append(report.jobId, { type: 'ended', state: 'PREEMPTED', exitCode: report.exitCode, reason: why, ...endedUsage(report) }, endMs);
        this.endInCore(report.jobId, Math.floor(endMs / 1000));
        this.active.delete(report.jobId);
      }
    } else if (report.state === 'NODE_FAIL' && spec.requeue && mayRequeue && !cancelled) {
      this.requeueRun(report.jobId, report.reason ?? 'node failure', endMs);
    } else {
      const ended = cancelled
        ? { type: 'ended' as const, state: 'CANCELLED' as const, exitCode: report.exitCode, reason: `cancelled; ${report.reason ?? 'its node failed'} before the job ended`, ...endedUsage(report) }
        : { type: 'ended' as const, state: report.state, exitCode: report.exitCode, reason: report.reason, ...endedUsage(report) };
      this.noteMissedDeadline(record, endMs);
      this.append(report.jobId, ended, endMs);
      this.endInCore(report.jobId, Math.floor(endMs / 1000));
      this.active.delete(report.jobId);
    }
    this.dirty = true;
  }

  /** The core forgets a running job; one suspended for a preemption is no longer in it (its nodes were given back). */
  private endInCore(id: JobId, at: number): void {
    this.suspendedForPartition.delete(id);
    if (this.scheduler.nodesOf(id) !== undefined) this.scheduler.end(id, at);
  }

  /**
   * Puts a job that held nodes back in the queue, in its place (priority, submit time, id), for its next run;
   * `asNew` (the owner's own requeue): as if submitted now, behind the jobs queued meanwhile.
   */
  private requeueRun(id: JobId, reason: string, atMs: number, asNew = false): void {
    // As new: behind every job submitted so far (ids are given in submission order), ahead of later ones.
    this.append(id, { type: 'requeued', reason, ...(asNew ? { asNew, queueKey: this.store.nextJobId() - 0.5 } : {}) }, atMs);
    this.endInCore(id, Math.floor(atMs / 1000));
    const requeued = this.store.job(id)!;
    this.active.set(id, requeued);
    this.scheduler.submit(this.coreRequest(requeued), true);
    this.unpromised.push(id); // a new run gets a new first promise
  }

  // ---- checkpoints, preemption, requeue, suspend (seed 000 2.4; Slurm's PreemptMode, scontrol requeue/suspend) ----

  /** The program classes in force (cluster.toml's, else the built-in "script" and "spmd"). */
  get programClasses(): readonly ProgramClass[] {
    return this.config.programClasses ?? CHECKPOINT_DEFAULTS.classes;
  }

  /** The job's program class: the one it named, else the first configured. */
  programClassOf(spec: JobSpec): ProgramClass | undefined {
    const name = spec.checkpoint?.programClass;
    return name === undefined ? this.programClasses[0] : this.programClasses.find((c) => c.name === name);
  }

  /** Why the job's checkpoint request does not fit this cluster (its program class, the maxima, its time limit). */
  private checkpointRefusals(spec: JobSpec): string[] {
    const checkpoint = spec.checkpoint;
    if (checkpoint === undefined) return [];
    const reasons: string[] = [];
    if (this.programClassOf(spec) === undefined) {
      reasons.push(`no program class '${checkpoint.programClass}' in this cluster: use one of ${this.programClasses.map((c) => c.name).join(', ')} (--program-class)`);
    }
    const maxInterval = this.config.maxCheckpointIntervalSeconds ?? CHECKPOINT_DEFAULTS.maxIntervalSeconds;
    const maxDuration = this.config.maxCheckpointDurationSeconds ?? CHECKPOINT_DEFAULTS.maxDurationSeconds;
    if (checkpoint.intervalSeconds !== undefined && checkpoint.intervalSeconds > maxInterval) {
      reasons.push(`--checkpoint-interval of ${checkpoint.intervalSeconds} s is longer than this cluster's max_checkpoint_interval (${maxInterval} s): ask for a shorter one`);
    }
    if (checkpoint.durationSeconds > maxDuration) {
      reasons.push(`--checkpoint-duration of ${checkpoint.durationSeconds} s is longer than this cluster's max_checkpoint_duration (${maxDuration} s): make the checkpoint faster or ask an administrator`);
    }
    if (typeof spec.timeLimitSeconds === 'number' && checkpoint.durationSeconds >= spec.timeLimitSeconds) {
      reasons.push(`--checkpoint-duration (${checkpoint.durationSeconds} s) must be shorter than the time limit (${spec.timeLimitSeconds} s): the last checkpoint starts that long before the limit`);
    }
    return reasons;
  }

  /** The start order's checkpoint fields: the class's signals, and on a run after a checkpoint its restart action. */
  private checkpointOrder(record: JobRecord): Pick<StartOrder, 'checkpoint' | 'restart'> {
    const spec = this.specOf(record);
    const programClass = spec.checkpoint === undefined ? undefined : this.programClassOf(spec);
    if (spec.checkpoint === undefined || programClass === undefined) return {};
    const checkpointed = record.requeueCount > 0 && this.store.events(record.id).some(({ event }) => event.type === 'checkpointed');
    return {
      checkpoint: { periodicSignal: programClass.periodicSignal, preemptSignal: programClass.preemptSignal, intervalSeconds: spec.checkpoint.intervalSeconds ?? null, durationSeconds: spec.checkpoint.durationSeconds },
      restart: checkpointed ? programClass.restart : null,
    };
  }

  /** The preemption asked for the job's current run (a `signalled` event with `preempt` since its last start), if any. */
  private preemptRequested(id: JobId): PreemptAsked | undefined {
    return this.marks.get(id)?.preempt;
  }

  /** Seconds the job's current run has spent suspended (each suspended..resumed, and one still open). */
  suspendedSecondsOf(id: JobId): number {
    return this.marks.suspendedSeconds(id, this.clockMs());
  }

  /**
   * A job suspended on its nodes (not for a preemption) stays in the core, where its time limit would run out
   * while it is stopped: its end there moves later as the suspension goes on (at each pass, and at once when it
   * would look overdue), by whole seconds not yet given (the rest at its resume).
   */
  private keepSuspendedEndsMoving(now: number, onlyOverdue: boolean): void {
    for (const id of this.marks.suspended) {
      const since = this.marks.get(id)?.suspendedSinceMs;
      const run = this.scheduler.state.getRunning(id);
      if (since === null || since === undefined || run === undefined) continue;
      if (onlyOverdue && run.start + run.job.estimate > now + 1) continue;
      const owed = Math.floor((now * 1000 - since) / 1000) - (this.extendedWhileSuspended.get(id) ?? 0);
      if (owed <= 0) continue;
      this.scheduler.extendRunning(id, owed);
      this.extendedWhileSuspended.set(id, (this.extendedWhileSuspended.get(id) ?? 0) + owed);
      this.plannedAt = null;
      this.dirty = true;
    }
  }

  /**
   * Preempts a running (or suspended) job: the one mechanism interactive
   * and deadline jobs and partition preemption use. A job that checkpoints
   * gets its program class's preemption signal and is killed if it has not
   * exited a checkpoint duration later; any other job gets SIGTERM and
   * SIGKILL after its partition's grace_time. Then, with mode 'requeue', it
   * goes back to the queue in its place and restarts (from its checkpoint,
   * with the class's restart action); a job that neither checkpoints nor
   * allows requeue (--requeue) ends PREEMPTED instead, as does every job with
   * mode 'cancel'. Mode 'suspend' stops it on its nodes and gives them to the
   * core at once; it resumes there, by itself, once they are free again.
   * Returns how long until its nodes are expected free. `force`: requeue
   * even a job without --requeue (taras requeue, as scontrol requeue).
   */
  preempt(id: JobId, reason: string, mode: 'requeue' | 'cancel' | 'suspend' = 'requeue', force = false, asNew = false): { waitSeconds: number } {
    const record = this.active.get(id);
    if (!record || !holdsNodes(record.state)) throw new SubmitRefused([`job ${id} is not running (${record?.state ?? this.store.job(id)?.state ?? 'no such job'}); only running or suspended jobs can be preempted`]);
    if (mode === 'suspend') {
      // Its nodes go back to the core at once; it resumes there once they are free again.
      if (record.state === 'RUNNING') this.suspendForPartition(id, `${SUSPENDED_BY_PREEMPTION}${reason}`, this.nowSeconds());
      return { waitSeconds: 0 };
    }
    const pending = this.preemptRequested(id);
    if (pending !== undefined) return { waitSeconds: Math.max(0, Math.ceil(pending.graceSeconds - (this.clockMs() - pending.atMs) / 1000)) };
    if (this.cancelRequested(id)) return { waitSeconds: this.config.killGraceSeconds };
    const spec = this.specOf(record);
    const programClass = spec.checkpoint === undefined ? undefined : this.programClassOf(spec);
    const signal = programClass?.preemptSignal ?? 'SIGTERM';
    const graceSeconds = spec.checkpoint?.durationSeconds ?? this.partitionOf(spec).graceTimeSeconds ?? 0;
    const outcome = mode === 'requeue' && (programClass !== undefined || spec.requeue || force) ? 'requeue' : 'cancel';
    const signalled = this.append(id, { type: 'signalled', signal, reason, preempt: outcome, graceSeconds, ...(asNew && outcome === 'requeue' ? { requeueAsNew: true } : {}) }, this.clockMs());
    this.active.set(id, signalled);
    this.log(`job ${id}: preempted (${reason}): ${signal}, killed after ${graceSeconds} s unless it exits; then ${outcome === 'requeue' ? 'requeued' : 'ended PREEMPTED'}`);
    this.deliverOrder(id, record.nodes[0], record.requeueCount, { signal, cancel: false, extras: { preempt: true, graceSeconds, reason } });
    return { waitSeconds: graceSeconds };
  }

  /** A preemption accepted before a restart whose signal may not have reached the agent: sent again (the supervisor keeps the first). */
  private redeliverPreempt(record: JobRecord): void {
    const pending = this.preemptRequested(record.id);
    if (pending === undefined) return;
    const graceSeconds = Math.max(0, Math.ceil(pending.graceSeconds - (this.clockMs() - pending.atMs) / 1000));
    this.deliverOrder(record.id, record.nodes[0], record.requeueCount, { signal: pending.signal, cancel: false, extras: { preempt: true, graceSeconds, reason: pending.reason } });
  }

  /** The signal that puts a job in its last asked suspend/resume state, if it was ever suspended in this run. */
  private pauseDelivery(id: JobId): Delivery | undefined {
    const pause = this.marks.get(id)?.pause;
    return pause === 'suspend' ? SUSPEND : pause === 'resume' ? RESUME : undefined;
  }

  /** The order that gives a running job's supervisor its time limit as it stands now. */
  private limitDelivery(id: JobId): LimitDelivery {
    const limit = this.specOf(this.active.get(id)!).timeLimitSeconds;
    return { limitSeconds: limit === 'UNLIMITED' || limit === undefined ? null : limit };
  }

  /**
   * A running job whose time limit was ever updated (scontrol update TimeLimit=): its limit as it stands, sent
   * to its agent again after a controller restart or when the agent registers again (an agent that was down, or
   * an order lost on the way); the supervisor takes a limit it already has as done.
   */
  private redeliverLimit(record: JobRecord): void {
    // A job being cancelled or preempted ends anyway: its limit is no longer its supervisor's concern.
    if (this.cancelRequested(record.id) || this.preemptRequested(record.id) !== undefined) return;
    if (record.amended?.timeLimitSeconds === undefined || !holdsNodes(record.state)) return;
    // Acknowledged by its supervisor already (a registration doubles as a heartbeat, every few seconds).
    if (this.marks.get(record.id)?.limitDelivered === this.limitDelivery(record.id).limitSeconds) return;
    this.deliverOrder(record.id, record.nodes[0], record.requeueCount, this.limitDelivery(record.id));
  }

  /**
   * After a restart: a suspend or resume stored before it may not have reached the agent; the last one is sent
   * again (the supervisor takes one it already carried out as done).
   */
  private redeliverPause(record: JobRecord): void {
    const how = this.pauseDelivery(record.id);
    if (how !== undefined) this.deliverOrder(record.id, record.nodes[0], record.requeueCount, how);
  }

  /** Whether `user` may act on the job: its owner, or an administrator. */
  private ownedJob(id: JobId, user: string, admin: boolean, action: string): JobRecord {
    const access = this.access(id, user, admin, action);
    if ('refusal' in access) throw new SubmitRefused([access.refusal], access.record !== undefined);
    return access.record;
  }

  /** The job, if `user` may `action` it (its owner, or an administrator); else why not, in the words every command uses. */
  private access(id: JobId, user: string, admin: boolean, action: string): { record: JobRecord } | { refusal: string; record?: JobRecord } {
    const record = this.recordOf(id);
    if (record === undefined) return { refusal: `no job ${id}` };
    if (record.user !== user && !admin) return { refusal: `job ${id} belongs to ${record.user}; only they or an administrator can ${action} it`, record };
    return { record };
  }

  /**
   * `taras requeue` (scontrol requeue): a running or suspended job is
   * preempted and goes back to the queue in its place; one that checkpoints
   * gets its preemption signal first and restarts from its checkpoint.
   */
  requeue(id: JobId, user: string, admin = user === 'root'): { waitSeconds: number } {
    const record = this.ownedJob(id, user, admin, 'requeue');
    if (!holdsNodes(record.state)) {
      throw new SubmitRefused([`job ${id} is ${record.state}: only running or suspended jobs can be requeued (a pending job already waits in the queue)`]);
    }
    // The owner's own requeue queues it as if submitted now (Slurm resets a requeued job's eligibility): a job
    // cannot requeue itself before its limit again and again at the head of the queue. An administrator's keeps its place.
    return this.preempt(id, `requeued by ${user}`, 'requeue', true, !admin);
  }

  /** `taras checkpointed`: the job (its owner) says a checkpoint is done; during a preemption, it need not be waited for any longer. */
  checkpointed(id: JobId, user: string, admin = user === 'root'): JobRecord {
    const record = this.ownedJob(id, user, admin, 'record a checkpoint of');
    if (!holdsNodes(record.state)) throw new SubmitRefused([`job ${id} is ${record.state}: only a running job can report a checkpoint`]);
    if (this.specOf(record).checkpoint === undefined) {
      throw new SubmitRefused([`job ${id} was not submitted as a checkpointing job: submit it with --checkpoint-duration (and --checkpoint-interval)`]);
    }
    const stored = this.append(id, { type: 'checkpointed', by: 'job' }, this.clockMs());
    this.active.set(id, stored);
    const pending = this.preemptRequested(id);
    // Its last checkpoint is done: the job is ended now rather than at the end of its checkpoint duration.
    if (pending !== undefined) void this.agents.signal(record.nodes[0], id, 'SIGKILL', false).catch(() => undefined);
    return stored;
  }

  /**
   * `taras suspend` (scontrol suspend; administrators): every process of
   * the job is stopped on its nodes, which stay allocated to it; its time
   * limit is held by the supervisor. Stored first; a job whose agent cannot
   * be reached is resumed in the log and the error thrown.
   */
  suspend(id: JobId, reason: string, preemptor?: { by: 'preemption'; preemptor?: JobId }): JobRecord {
    const record = this.active.get(id);
    if (!record || record.state !== 'RUNNING') throw new SubmitRefused([`job ${id} is ${record?.state ?? this.store.job(id)?.state ?? 'unknown'}: only running jobs can be suspended`]);
    if (this.cancelRequested(id) || this.preemptRequested(id) !== undefined) throw new SubmitRefused([`job ${id} is ending (cancelled or preempted): it cannot be suspended`]);
    const suspended = this.append(id, { type: 'suspended', reason, by: preemptor?.by ?? 'admin', ...(preemptor?.preemptor === undefined ? {} : { preemptor: preemptor.preemptor }) }, this.clockMs());
    this.active.set(id, suspended);
    this.undeliveredOrders.delete(`${id}:pause`); // an undelivered resume is superseded
    this.agents.signal(record.nodes[0], id, SUSPEND.signal, SUSPEND.cancel, SUSPEND.extras).catch((error: unknown) => {
      if (this.active.get(id)?.state !== 'SUSPENDED') return;
      this.log(`job ${id}: could not suspend it on ${record.nodes[0]} (${(error as Error).message}); it runs on`);
      this.active.set(id, this.append(id, { type: 'resumed', reason: `the suspend did not reach its node: ${(error as Error).message}` }, this.clockMs()));
    });
    return suspended;
  }

  /** `taras resume`: continues a suspended job; its limit, and so its end in the plan, moves later by the time it was stopped. */
  resume(id: JobId, reason: string): JobRecord {
    const record = this.active.get(id);
    if (!record || record.state !== 'SUSPENDED') throw new SubmitRefused([`job ${id} is ${record?.state ?? this.store.job(id)?.state ?? 'unknown'}: only suspended jobs can be resumed`]);
    if (this.suspendedForPartition.has(id)) throw new SubmitRefused([`job ${id} was suspended by a preemption (${record.reason ?? ''}); it resumes by itself once its nodes are free`]);
    const since = this.marks.get(id)?.suspendedSinceMs ?? this.clockMs();
    const given = this.extendedWhileSuspended.get(id) ?? 0;
    const resumed = this.append(id, { type: 'resumed', reason }, this.clockMs());
    this.active.set(id, resumed);
    // The core's end of the job moves later by the time it was stopped (less what it was given while stopped): later jobs move with it.
    if (this.scheduler.nodesOf(id) !== undefined) this.scheduler.extendRunning(id, Math.round((this.clockMs() - since) / 1000) - given);
    this.plannedAt = null;
    this.dirty = true;
    this.deliverOrder(id, record.nodes[0], record.requeueCount, RESUME);
    return resumed;
  }

  /** Cancels a job of `user` (any job when `admin`: root or a configured administrator): a pending one ends at once, a running one is signalled. */
  cancel(id: JobId, user: string, admin = user === 'root'): JobRecord {
    return this.cancelRecord(this.ownedJob(id, user, admin, 'cancel'), user);
  }

  /** Cancels the job of `record`, which `user` may cancel: see cancel. */
  private cancelRecord(record: JobRecord, user: string): JobRecord {
    const { id } = record;
    if (record.state === 'PENDING') {
      const ended = this.append(id, { type: 'ended', state: 'CANCELLED', exitCode: null, reason: `cancelled by ${user}` }, this.clockMs());
      this.scheduler.cancel(id);
      this.active.delete(id);
      this.dirty = true;
      return ended;
    }
    if (record.state === 'RUNNING' || record.state === 'SUSPENDED') {
      const signalled = this.append(id, { type: 'signalled', signal: 'SIGTERM', reason: `cancelled by ${user}`, cancel: true }, this.clockMs());
      this.active.set(id, signalled);
      this.deliverOrder(id, record.nodes[0], signalled.requeueCount);
      return signalled;
    }
    return record;
  }

  /** `ids`, each once, pending jobs first (in their order), then the others: the order a set of cancels goes in. */
  pendingFirst(ids: readonly JobId[]): JobId[] {
    const unique = [...new Set(ids)];
    const isPending = (id: JobId) => this.active.get(id)?.state === 'PENDING';
    return [...unique.filter(isPending), ...unique.filter((id) => !isPending(id))];
  }

  /**
   * Cancels a set of jobs in one request: the pending ones first, all in this
   * one turn of the event loop, so none of them starts while the running
   * ones are being signalled. Each job has its own outcome (a job that is not
   * the caller's, or does not exist, does not stop the others).
   */
  cancelMany(ids: readonly JobId[], user: string, admin = user === 'root'): ApiCancelResult[] {
    const ordered = this.pendingFirst(ids);
    const results = new Map<JobId, ApiCancelResult>();
    for (const id of ordered) {
      const access = this.access(id, user, admin, 'cancel');
      // The refusals name their job ("no job 7", "job 7 belongs to ..."), as holdMany's do: not prefixed again.
      if ('refusal' in access) results.set(id, refusedOutcome(id, access));
      else results.set(id, cancelOutcome(id, access.record.state, this.cancelRecord(access.record, user).state, arrayTaskOf(access.record)));
    }
    return [...new Set(ids)].map((id) => results.get(id)!);
  }

  /** The user's pending and running jobs (for `taras cancel --all`). */
  activeJobsOf(user: string): JobId[] {
    return [...this.active.values()].filter((r) => r.user === user && (r.state === 'PENDING' || holdsNodes(r.state))).map((r) => r.id);
  }

  /**
   * A step of the job's run `run` has a new time limit (stepLimitOf): its tasks on `node` are told through their
   * agent, and, as the job's own limit, the order is retried until the agent has carried it out (deliverOrder),
   * sent at once when the agent registers again, and dropped once the step or the run has ended. Only the
   * limit as it stands is sent.
   */
  deliverStepLimit(id: JobId, run: number, node: string, stepId: number): void {
    const how = this.isCurrentRun(id, run) ? this.stepLimitDelivery(id, stepId) : undefined;
    if (how !== undefined) this.deliverOrder(id, node, run, how);
  }

  private stepLimitDelivery(id: JobId, stepId: number): LimitDelivery | undefined {
    const limitSeconds = this.stepLimitOf?.(id, stepId);
    return limitSeconds === undefined ? undefined : { limitSeconds, stepId };
  }

  /**
   * What a slot is to carry now: for a suspend or resume, a job's or a step's time limit, the last one asked
   * (the state to reach the job); an end, itself. Undefined when nothing is to be sent any more (the step has
   * ended). The job's run must be current.
   */
  private latestDelivery(id: JobId, how: Delivery): Delivery | undefined {
    if (!('limitSeconds' in how)) return how.extras?.suspend === true || how.extras?.resume === true ? this.pauseDelivery(id) ?? how : how;
    return how.stepId === undefined ? this.limitDelivery(id) : this.stepLimitDelivery(id, how.stepId);
  }

  /**
   * Sends an order to the job's agent: a signal (a cancel by default, a suspend or resume, a warning), or a
   * new time limit for the job or for one step's tasks. One that does not get through (the agent is
   * restarting, the machine is overloaded) is kept and sent again, as it stands then, at each `checkNodes`
   * (every second) and when the agent registers again, while that run of the job holds its nodes; a
   * controller that restarts (or reconfigures) finds the cancel or limit in the job's log and sends it again
   * (`recover`).
   */
  private deliverOrder(id: JobId, node: string, run: number, how: Delivery = CANCEL): void {
    const slot = slotOf(id, how, node);
    this.ordersInFlight.add(slot);
    const sent = !('limitSeconds' in how)
      ? this.agents.signal(node, id, how.signal, how.cancel, how.extras)
      : how.stepId === undefined
        ? this.agents.setTimeLimit?.(node, id, run, how.limitSeconds) ?? Promise.resolve()
        : this.agents.setTaskLimit?.(node, id, how.stepId, how.limitSeconds) ?? Promise.resolve();
    sent.then(() => {
      this.ordersInFlight.delete(slot);
      // The job's own limit, once its supervisor has it, is not sent again at every registration of its agent.
      const marks = this.marks.get(id);
      if ('limitSeconds' in how && how.stepId === undefined && marks !== undefined && this.isCurrentRun(id, run)) marks.limitDelivered = how.limitSeconds;
      // A later signal of the same kind may wait in the slot meanwhile: only this one is delivered.
      // A limit is the same order as any other of the same value (only the latest matters): one waiting with it is done too.
      const waiting = this.undeliveredOrders.get(slot);
      const same = waiting !== undefined && (waiting.how === how || ('limitSeconds' in how && 'limitSeconds' in waiting.how && waiting.run === run && waiting.how.limitSeconds === how.limitSeconds));
      if (same) this.undeliveredOrders.delete(slot);
      // Two limits on their way at once may arrive in either order: the one that arrived last must be the limit as it stands.
      if ('limitSeconds' in how && this.isCurrentRun(id, run) && !this.ordersInFlight.has(slot)) {
        const latest = this.latestDelivery(id, how);
        if (latest !== undefined && 'limitSeconds' in latest && latest.limitSeconds !== how.limitSeconds) this.deliverOrder(id, node, run, latest);
      }
    }, (error: unknown) => {
      this.ordersInFlight.delete(slot);
      if (!this.isCurrentRun(id, run)) return;
      const latest = this.latestDelivery(id, how);
      if (latest === undefined) {
        this.undeliveredOrders.delete(slot);
        return;
      }
      if (!this.undeliveredOrders.has(slot)) {
        const what = !('limitSeconds' in how) ? 'signal it' : how.stepId === undefined ? 'give it its new time limit' : `give step ${how.stepId}'s tasks their new time limit`;
        this.log(`job ${id}: could not ${what} on ${node} (${(error as Error).message}); will retry`);
      }
      this.undeliveredOrders.set(slot, { id, node, run, how: latest });
    });
  }

  /**
   * Orders still waiting for their agent (all, or those for `nodes`) are sent again, each as it stands now;
   * those of runs or steps that have ended are dropped.
   */
  private sendUndelivered(nodes?: ReadonlySet<string>): void {
    for (const [slot, waiting] of this.undeliveredOrders) {
      if (nodes !== undefined && !nodes.has(waiting.node)) continue;
      const how = this.isCurrentRun(waiting.id, waiting.run) ? this.latestDelivery(waiting.id, waiting.how) : undefined;
      if (how === undefined) {
        this.undeliveredOrders.delete(slot);
      } else if (!this.ordersInFlight.has(slot)) {
        // Kept as sent: its delivery clears the slot (deliverOrder compares the order itself).
        this.undeliveredOrders.set(slot, { ...waiting, how });
        this.deliverOrder(waiting.id, waiting.node, waiting.run, how);
      }
    }
  }

  private isCurrentRun(id: JobId, run: number): boolean {
    const record = this.active.get(id);
    return record !== undefined && holdsNodes(record.state) && record.requeueCount === run;
  }

  /** Whether the job's current run was asked to be cancelled (a cancel `signalled` event since its last start). */
  private cancelRequested(id: JobId): boolean {
    return this.marks.get(id)?.cancel === true;
  }

  /** An agent (re)registered its nodes and reports what it knows of its jobs. */
  agentRegistered(nodeNames: readonly string[], reports: readonly JobReport[]): { jobId: JobId; run: number | undefined }[] {
    const nowMs = this.clockMs();
    for (const name of nodeNames) {
      const status = this.nodes.get(name);
      if (!status) throw new SubmitRefused([`node ${name} is not in the cluster configuration`]);
      // A node whose agent could not be reached a moment ago stays out a little longer: an agent that
      // registers but cannot be reached would otherwise take (and requeue) a job at every heartbeat.
      if (status.unreachableAtMs !== undefined && nowMs - status.unreachableAtMs < UNREACHABLE_PAUSE_MS) continue;
      status.unreachableAtMs = undefined;
      status.up = true;
      status.lastHeartbeatMs = nowMs;
      if (!status.drained) status.reason = null;
      this.refreshNode(name);
    }
    for (const report of reports) this.jobReport(report);
    // A time limit updated while the agent was away (or whose order was lost): its jobs get the limit as it stands.
    for (const report of reports) {
      const record = this.active.get(report.jobId);
      if (report.state === 'RUNNING' && record !== undefined && (report.run === undefined || report.run === record.requeueCount) && nodeNames.includes(record.nodes[0])) this.redeliverLimit(record);
    }
    // Orders that wait for this agent (a step's new time limit, a signal) go now rather than at the next check.
    if (this.undeliveredOrders.size > 0) this.sendUndelivered(new Set(nodeNames));
    // Jobs this controller believes run on these nodes but the agent does not
    // know: their start was lost (the controller died before the agent got it).
    const reported = new Set(reports.map((r) => r.jobId));
    for (const record of [...this.active.values()]) {
      if (!holdsNodes(record.state) || !nodeNames.includes(record.nodes[0])) continue;
      if (reported.has(record.id) || this.startsInFlight.has(record.id) || this.confirmed.has(record.id)) continue;
      // The agent keeps every run it was given until the controller has its end: one it does not know never ran.
      this.startLost(record.id, record.requeueCount, `the agent of ${record.nodes[0]} never received its start`);
    }
    this.dirty = true;
    // Processes the agent still runs for jobs that ended or moved meanwhile (a node back from DOWN): to be killed.
    return reports
      .filter((r) => r.state === 'RUNNING')
      .filter((r) => {
        const record = this.active.get(r.jobId);
        return !record || !holdsNodes(record.state) || (r.run !== undefined && r.run !== record.requeueCount) || !nodeNames.includes(record.nodes[0]);
      })
      .map((r) => ({ jobId: r.jobId, run: r.run }));
  }

  heartbeat(nodeNames: readonly string[]): void {
    const nowMs = this.clockMs();
    for (const name of nodeNames) {
      const status = this.nodes.get(name);
      if (status?.up) status.lastHeartbeatMs = nowMs;
    }
  }

  /**
   * Nodes silent past the timeout go down, and so do nodes whose agent has not
   * registered within node_timeout of the controller's start; their jobs end as
   * NODE_FAIL (or are requeued). Returns the nodes that went down.
   */
  checkNodes(): string[] {
    // A guaranteed job at risk is preempted for a victim's checkpoint time before its latest start: look every second.
    if (this.deadlinesAtRisk) this.dirty = true;
    this.sendUndelivered();
    this.keepSuspendedEndsMoving(this.nowSeconds(), true);
    const cutoff = this.clockMs() - this.config.nodeTimeoutSeconds * 1000;
    const downed: string[] = [];
    for (const [name, status] of this.nodes) {
      if (!status.up || (status.lastHeartbeatMs ?? 0) >= cutoff) continue;
      status.up = false;
      status.reason = `no heartbeat for ${this.config.nodeTimeoutSeconds} s`;
      downed.push(name);
    }
    // The core learns of every change (a pass is due); nodes whose agent never came after a (re)start
    // stop counting once node_timeout has passed, and jobs the store says run there end as on a node
    // that went down.
    const neverCame: string[] = [];
    const nowMs = this.clockMs();
    let deadlinePassed = false;
    for (const deadline of this.deadlines) {
      if (deadline > nowMs) continue;
      if (deadline > this.lastCheckMs) deadlinePassed = true;
      this.deadlines.delete(deadline);
    }
    this.lastCheckMs = nowMs;
    const toRefresh = deadlinePassed ? this.nodes.keys() : downed;
    for (const name of toRefresh) {
      const status = this.nodes.get(name)!;
      const counted = this.pool.counts(name);
      if (!this.refreshNode(name)) continue;
      this.dirty = true;
      if (counted && !status.up && status.lastHeartbeatMs === null) {
        status.reason = `no agent has registered within ${this.config.nodeTimeoutSeconds} s of the controller's start`;
        neverCame.push(name);
      }
    }
    if (downed.length > 0) this.log(`nodes down (no heartbeat): ${nodeList(downed)}`);
    if (neverCame.length > 0) this.log(`nodes down (no agent since the controller started): ${nodeList(neverCame)}`);
    for (const name of neverCame) downed.push(name); // (a loop: a spread of 200,000 names overflows the stack)
    if (downed.length === 0) return downed;
    const isDown = new Set(downed);
    for (const record of [...this.active.values()]) {
      const lost = record.state === 'PENDING' ? undefined : record.nodes.find((node) => isDown.has(node));
      if (lost !== undefined) {
        this.jobReport({ jobId: record.id, state: 'NODE_FAIL', exitCode: null, endTimeMs: this.clockMs(), reason: `node ${lost} went down` });
      }
    }
    return downed;
  }

  /** Drained nodes finish their jobs but take no new ones. */
  drain(nodeNames: readonly string[], reason: string, drained = true): void {
    const unknown = nodeNames.filter((name) => !this.nodes.has(name));
    if (unknown.length > 0) throw new SubmitRefused([`no node named ${unknown.join(', ')}`]); // and nothing changed
    for (const name of nodeNames) {
      const status = this.nodes.get(name)!;
      status.drained = drained;
      status.reason = drained ? reason : status.up ? null : status.reason;
      this.refreshNode(name);
    }
    this.dirty = true;
  }

  /** Takes over the node states (up, drained, heartbeat) of the engine this one replaces (reconfigure). */
  inheritNodeStates(previous: ControllerEngine): void {
    for (const [name, status] of previous.nodes) {
      const mine = this.nodes.get(name);
      if (!mine) continue;
      this.expectedUntilMs.set(name, previous.expectedUntilMs.get(name) ?? 0);
      this.deadlines.add(this.expectedUntilMs.get(name)!);
      Object.assign(mine, status);
      this.refreshNode(name);
    }
    this.dirty = true;
  }

  /**
   * Tells the core whether a node takes jobs (up, not drained) and whether it
   * counts in plans: one that takes jobs, or whose agent has not registered
   * yet since the controller started, for up to node_timeout (after a
   * restart the agents come back one by one: a job that needs them all keeps
   * its place meanwhile, as Slurm keeps node states across a restart). A
   * change makes the last plan stale. Returns whether anything changed.
   */
  private refreshNode(name: string): boolean {
    this.nodeVersion++;
    const status = this.nodes.get(name)!;
    const accepting = status.up && !status.drained;
    const expected = !status.up && !status.drained && status.lastHeartbeatMs === null
      && this.clockMs() < (this.expectedUntilMs.get(name) ?? 0);
    const counted = accepting || expected;
    if (this.pool.accepts(name) === accepting && this.pool.counts(name) === counted) return false; // heartbeats repeat what is known
    this.pool.setAccepting(name, accepting, counted);
    this.plannedAt = null;
    return true;
  }

  /** Whether a pending job could be planned on the nodes that count now (false: it waits for nodes that are out). */
  couldBePlanned(id: JobId): boolean {
    return this.scheduler.couldBePlanned(id);
  }

  /** Planned start (epoch ms) of a pending job after the last pass. */
  plannedStartMs(id: JobId): number | null {
    // Planned starts cost a projection of the whole queue for fcfs and easy and
    // decide nothing, so they are computed when asked for, once per pass.
    this.ensurePlan();
    if (this.throttle.isWaiting(id)) return this.throttledStartMs(id);
    const seconds = this.scheduler.plannedStart(id);
    return seconds === undefined ? null : seconds * 1000;
  }

  /** Tasks of arrays with a %N throttle that wait out of the core for a slot. */
  private readonly throttle = new ArrayThrottle();

  /** The %N of each throttled array with tasks not ended, by array id. */
  arrayThrottles(): Map<number, number> {
    return this.throttle.limits();
  }

  /** Hands the core the waiting tasks of throttled arrays whose slots freed (each pass). */
  private releaseThrottled(): void {
    this.throttle.invalidate();
    for (const id of this.throttle.release((task) => this.active.has(task as JobId), (task) => this.active.get(task as JobId)?.held === true)) {
      const record = this.active.get(id as JobId)!;
      this.scheduler.submit(this.coreRequest(record));
      this.unpromised.push(record.id);
      this.noteStartDeadline(record);
    }
  }

  /** A waiting task's planned start: when a slot of its array frees (the ends of the tasks ahead), never before the plan's now. */
  private throttledStartMs(id: JobId): number | null {
    const limitMs = (task: number): number => {
      const limit = this.specOf(this.active.get(task as JobId)!).timeLimitSeconds;
      return typeof limit === 'number' ? limit * 1000 : Infinity;
    };
    const endOf = (task: number): number | null => {
      const record = this.active.get(task as JobId);
      if (record === undefined) return this.clockMs();
      const start = record.startTimeMs ?? this.plannedStartMs(task as JobId);
      return start === null ? null : start + limitMs(task);
    };
    return this.throttle.plannedStart(id, this.clockMs(), endOf, limitMs);
  }

  /** Whether a pending guaranteed job can no longer end by its deadline in any queue place (after the last plan). */
  deadlineAtRisk(id: JobId): boolean {
    this.ensurePlan();
    return this.scheduler.atRisk(id);
  }

  /** The time limit the plan gives a queued job, in seconds (0 if it is not queued). */
  plannedEstimateSeconds(id: JobId): number {
    return this.scheduler.state.getQueued(id)?.job.estimate ?? 0;
  }

  /**
   * What-if on the live queue: the planned start of every pending job now and
   * under a change (another policy, nodes drained, a window or reservation
   * added), computed on a copy; nothing here changes. `then` null: no plan
   * under the change.
   */
  whatIf(change: { policy?: PolicyName; drain?: readonly string[]; window?: { startMs: number; endMs: number; nodes: readonly string[] } }):
    { id: JobId; user: string; nowMs: number | null; thenMs: number | null }[] {
    const policy = change.policy ?? this.config.policy;
    const problems: string[] = [];
    if (!(NODE_POLICIES as readonly string[]).includes(policy)) problems.push(`what-if plans with ${NODE_POLICIES.join(', ')}, not ${policy}`);
    const unknown = [...new Set([...(change.drain ?? []), ...(change.window?.nodes ?? [])])].filter((name) => !this.nodes.has(name));
    if (unknown.length > 0) problems.push(`no node named ${unknown.slice(0, 10).join(', ')}${unknown.length > 10 ? ` and ${unknown.length - 10} more` : ''}`);
    if (change.window && !(change.window.endMs > change.window.startMs)) problems.push('the window must end after it starts');
    if (problems.length > 0) throw new SubmitRefused(problems);
    const now = this.nowSeconds();
    const copy = this.planCopy(policy, this.scheduler.state.queue.map((entry) => entry.job), new Set(change.drain ?? []));
    const holds = [...this.reservations.values()].map(holdOf);
    if (change.window) {
      holds.push({ owner: 'maintenance:what-if', start: Math.floor(change.window.startMs / 1000), end: Math.ceil(change.window.endMs / 1000), nodes: [...new Set(change.window.nodes)], cpus: 0, memoryMiB: 0, whole: true });
    }
    copy.setExternalHolds(holds);
    copy.plan(now);
    return this.scheduler.state.queue.map((entry) => {
      const then = copy.plannedStart(entry.job.id);
      return { id: entry.job.id, user: this.active.get(entry.job.id)?.user ?? '?', nowMs: this.plannedStartMs(entry.job.id), thenMs: then === undefined ? null : then * 1000 };
    });
  }

  /** The nodes a job runs on or is planned on (after the last plan); null: none. */
  plannedNodesOf(id: JobId): readonly string[] | null {
    this.ensurePlan();
    return this.scheduler.plannedNodes(id) ?? null;
  }

  /** What holds a pending job at its planned start on its planned nodes (see Scheduler.heldBy). */
  heldBy(id: JobId): PlanHold[] {
    this.ensurePlan();
    return this.scheduler.heldBy(id);
  }

  /** Why a pending job's planned start moved later than first planned, as a sentence; null if it did not. */
  movedBecause(id: JobId): string | null {
    this.ensurePlan();
    switch (this.scheduler.movedBecause(id)) {
      case 'capacity': return 'its planned start moved later because capacity was taken away after it was planned (a node down or drained, a reservation or maintenance window added)';
      case 'not-free': return 'its planned start moved later because its nodes were not free at that time (a job past its time limit, or a node not yet back)';
      case 'deadline': return 'its planned start moved later because a priority job moved ahead of it to meet its deadline';
      case 'reordered': return 'its planned start moved later because a job was moved ahead of it in the queue (taras move)';
      default: return null;
    }
  }

  /** The whole plan: running jobs, pending jobs with their planned nodes and starts, and the holds the controller added. */
  planItems(): { running: PlannedItem[]; pending: PlannedItem[]; unplanned: JobId[] } {
    this.ensurePlan();
    const running = this.scheduler.state.running.map((run) => ({ id: run.job.id, start: run.start, end: run.start + run.job.estimate, nodes: run.nodes }));
    const pending: PlannedItem[] = [];
    const unplanned: JobId[] = [];
    for (const entry of this.scheduler.state.queue) {
      const nodes = this.scheduler.plannedNodes(entry.job.id);
      const start = this.scheduler.plannedStart(entry.job.id);
      if (nodes === undefined || start === undefined) unplanned.push(entry.job.id);
      else pending.push({ id: entry.job.id, start, end: start + entry.job.estimate, nodes });
    }
    return { running, pending, unplanned };
  }

  /** The controller's clock (epoch ms): what views compare times with. */
  nowMs(): number {
    return this.clockMs();
  }

  /** Plans the queue once per pass, noting whether the plan differs from the previous one. */
  private ensurePlan(): void {
    if (this.plannedAt !== null) return;
    // A plan that took long (EASY's planned starts of a deep queue on many nodes, rebuilt after a job
    // ended) is shown as it was for a while: ten times what it took, at most 5 s. Starts never wait for it.
    const nowMs = this.clockMs();
    if (nowMs < this.planStaleUntilMs) return;
    this.plannedAt = this.nowSeconds();
    const began = performance.now();
    this.scheduler.plan(this.plannedAt);
    const took = performance.now() - began;
    this.planStaleUntilMs = took > 250 ? nowMs + Math.min(5000, 10 * took) : 0;
    this.planCompared = false;
  }

  /**
   * Changes whenever what a job listing shows could have changed: a job's
   * record, a planned start (checked against the previous plan), or the
   * set of nodes that take jobs. Brings the plan up to date first.
   */
  listingVersion(): string {
    this.ensurePlan();
    // Compared with the previous plan only when a listing asks (a pass over the queue: not once per pass).
    if (!this.planCompared) {
      this.planCompared = true;
      const reservations = this.scheduler.queuedReservations();
      if (!sameReservations(reservations, this.lastReservations)) this.planVersion++;
      this.lastReservations = reservations;
    }
    return `${this.active.version}.${this.planVersion}.${this.pool.acceptingVersion}`;
  }
}

/**
 * An order for a running job's agent, re-sent until it gets through: a signal (a cancel, a preemption, a
 * resume), or the job's time limit as it stands (`limitSeconds`, null: none; scontrol update TimeLimit=), or
 * with `stepId`, that step's tasks' limit as it stands.
 */
type Delivery = SignalDelivery | LimitDelivery;
type LimitDelivery = { readonly limitSeconds: number | null; readonly stepId?: number };
type SignalDelivery = { readonly signal: string; readonly cancel: boolean; readonly extras?: SignalExtras };

const CANCEL: Delivery = { signal: 'SIGTERM', cancel: true };

/**
 * A job's delivery slot: its end (cancel, preemption), its suspend/resume, its time limit and each step's
 * limit on each node of the step (`node`: where the order goes) are kept and retried apart.
 */
const slotOf = (id: JobId, how: Delivery, node: string): string => ('limitSeconds' in how
  ? (how.stepId === undefined ? `${id}:limit` : `${id}:step ${how.stepId} on ${node}`)
  : `${id}:${how.extras?.suspend === true || how.extras?.resume === true ? 'pause' : 'end'}`);

const SUSPEND: SignalDelivery = { signal: 'SIGSTOP', cancel: false, extras: { suspend: true } };
const RESUME: SignalDelivery = { signal: 'SIGCONT', cancel: false, extras: { resume: true } };

/** `taras admin shutdown --mode`: what becomes of running jobs (seed 000 3.2.2). */
export const SHUTDOWN_MODES = ['leave-running', 'checkpoint', 'kill'] as const;
export type ShutdownMode = (typeof SHUTDOWN_MODES)[number];

/** How the reason of a partition preemption starts (a job suspended so is recognised after a restart). */
const PARTITION_PREEMPTION = 'preempted by job ';

/** How the reason of a job suspended by `preempt(..., 'suspend')` starts. */
const SUSPENDED_BY_PREEMPTION = 'preempted (suspended): ';

/** The store setting of maintenance windows' shutdown modes. */
const WINDOW_MODES_SETTING = 'windowShutdownModes';
const HOLIDAY_SETTING = 'holiday';
/** The core's window owner of jobs waiting for --begin or a dependency (no hold has it). */
const NOT_BEFORE_OWNER = 'not-before';
/** The reason of a paused job (taras pause, Argonne's P). */
const PAUSED = 'Paused';
/** The core's window owner of night jobs (no hold has it: the window only bounds when they run). */
const NIGHT_OWNER = 'night-queue';

/** States in which a job holds its nodes and has processes there. */
export const holdsNodes = (state: JobState): boolean => state === 'RUNNING' || state === 'COMPLETING' || state === 'SUSPENDED';

/** What a cancel did, from the job's state before and after it. */
/** A refusal of `access` as the per-job outcome the queue commands answer (cancel, hold, release, pause). */
function refusedOutcome(id: JobId, denied: { refusal: string; record?: JobRecord }): ApiCancelResult {
  return { id, state: denied.record?.state ?? null, result: 'refused', message: denied.refusal };
}

/** What a cancel did to a job, in words; an array's task is named as squeue shows it (12_3), with its own id. */
function cancelOutcome(id: JobId, before: JobState, after: JobState, task?: { jobId: number; taskId: number }): ApiCancelResult {
  const job = task === undefined ? `job ${id}` : `job ${task.jobId}_${task.taskId} (${id})`;
  if (before === 'PENDING') return { id, state: after, result: 'cancelled', message: `${job}: cancelled` };
  if (before === 'RUNNING' || before === 'SUSPENDED') return { id, state: after, result: 'signalled', message: `${job}: being cancelled (signalled)` };
  if (before === 'COMPLETING') return { id, state: after, result: 'ended', message: `${job}: already ending (COMPLETING); nothing to cancel` };
  return { id, state: after, result: 'ended', message: `${job}: already ended (${after}); nothing to cancel` };
}

/** Node names for a log line: a hostlist (100,000 names of a range are one short text), else the names. */
function nodeList(names: readonly string[]): string {
  try {
    return compressHostlist(names);
  } catch {
    return names.join(', ');
  }
}

function sameReservations(a: Float64Array, b: Float64Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i] && !(Number.isNaN(a[i]) && Number.isNaN(b[i]))) return false;
  return true;
}
