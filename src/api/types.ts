// The JSON vocabulary of the controller's API and of every `--json` output:
// one shape per thing (job, node, cluster status), used by the controller,
// the CLI and the web view alike. Times are ISO 8601 strings in UTC (null when
// unknown); durations are seconds; memory is MiB.

export type JobState =
  | 'PENDING'
  | 'RUNNING'
  | 'COMPLETING'
  | 'COMPLETED'
  | 'FAILED'
  | 'CANCELLED'
  | 'TIMEOUT'
  | 'NODE_FAIL'
  | 'OUT_OF_MEMORY'
  /** Stopped on its nodes (taras suspend, or preempted with preempt_mode = "suspend"). */
  | 'SUSPENDED'
  /** Ended by a preemption that does not requeue (preempt_mode = "cancel"). */
  | 'PREEMPTED'
  /** Slurm's: a job with --deadline-policy cancel that could no longer end by its deadline. */
  | 'DEADLINE';

/** The largest request body the controller takes (413 past it): a submission, its script included, must fit. */
export const MAX_REQUEST_BODY_BYTES = 1024 * 1024;

export const finishedStates: readonly JobState[] = ['COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT', 'NODE_FAIL', 'OUT_OF_MEMORY', 'PREEMPTED', 'DEADLINE'];

/** Seed 000 2.1.3's job types (one letter in `taras queue`: N, P, I). */
export type JobType = 'normal' | 'priority' | 'interactive';

/** A priority job's deadline as `taras when` and `taras submit` tell it. */
export interface ApiDeadline {
  deadline: string;
  policy: 'guarantee' | 'cancel';
  guaranteed: boolean;
  /** Its planned (or, running, predicted) end; null: no plan. */
  plannedEnd: string | null;
  /** How far the planned end is past the deadline (0: in time; null: no plan). */
  shortfallSeconds: number | null;
  /** A guaranteed job no queue place lets end in time any more (nodes lost, a job past its limit...). */
  atRisk: boolean;
  /** One sentence: "guaranteed to end by ..." or why not. */
  text: string;
}

/** POST /jobs: the new job's id; for a priority job, what the plan says of its deadline. */
export interface ApiSubmitted {
  id: number;
  deadline?: ApiDeadline;
  /** A priority job that runs without a guarantee, or as a normal job (priority quota short): why. */
  warning?: string;
}

/** POST /jobs/test-only (sbatch --test-only): where the plan would start the job; nothing is stored. */
export interface ApiTestOnly {
  /** The id the next job will get (sbatch prints it). */
  nextId: number;
  /** Planned start (ISO 8601), or null: the nodes that count cannot hold it now. */
  start: string | null;
  startMs: number | null;
  nodes: string[];
  processors: number;
  partition: string;
}

export interface ApiJob {
  id: number;
  name: string;
  user: string;
  state: JobState;
  /** Why a pending job waits, or why a job ended as it did (human text). */
  reason: string | null;
  partition: string;
  /** Allocated nodes (running or finished), else []. */
  nodes: string[];
  nodeCount: number;
  ntasks: number;
  cpusPerTask: number;
  memoryMiB: number | null;
  timeLimitSeconds: number | null;
  submitTime: string;
  startTime: string | null;
  /** Planned start of a pending job: the scheduler's prediction. */
  plannedStart: string | null;
  /**
   * The first start it was planned at (after its first pass): for a started
   * job, logged with its start, so promise and reality can be compared. null
   * before its first pass, with no plan yet, or logged before Taras kept it.
   */
  firstPlannedStart?: string | null;
  /** Start + time limit for running jobs, planned start + limit for pending ones. */
  predictedEnd: string | null;
  endTime: string | null;
  exitCode: number | null;
  /** null: private (shown to the job's owner and administrators only), as are the paths and event details. */
  workingDir: string | null;
  stdoutPath: string | null;
  stderrPath: string | null;
  requeue: boolean;
  /** The job checkpoints itself (taras submit --checkpoint-duration); absent: it does not. */
  checkpoint?: { intervalSeconds: number | null; durationSeconds: number; programClass: string };
  /** How many times it was put back in the queue (preempted, requeued, node failure): 0 on its first run. */
  restarts?: number;
  /** normal, priority (a deadline: seed 000 2.2.3) or interactive. */
  type: JobType;
  /** A priority job's deadline; null for other jobs. */
  deadline: string | null;
  /** sbatch --account, --comment, --mail-type, --mail-user as given; absent when not. */
  account?: string;
  comment?: string;
  mailType?: string[];
  mailUser?: string;
  /** Whether a priority job was accepted with a guarantee (the plan met its deadline); null for other jobs. */
  guaranteed: boolean | null;
  /** A task of a job array (sbatch --array): the array's id (its first task's job id) and this task's id; shown as `12_3`. Absent for other jobs. */
  arrayJobId?: number;
  arrayTaskId?: number;
}

export interface ApiJobEvent {
  time: string;
  type: string;
  /** Event-specific details (nodes, signal, exit code, state...). */
  detail: Record<string, unknown>;
}

/** `GET /jobs?after=ID&limit=N`: jobs by id, at most 1,000; `next` is the `after` of the next page, null after the last. */
export interface ApiJobPage {
  jobs: ApiJob[];
  next: number | null;
}

export interface ApiJobWithEvents extends ApiJob {
  events: ApiJobEvent[];
  /** When each checkpoint finished (the job said so, or exited after its preemption signal), oldest first. */
  checkpoints?: string[];
}

export type NodeState = 'idle' | 'allocated' | 'mixed' | 'down' | 'drained' | 'draining';

export interface ApiNode {
  name: string;
  state: NodeState;
  /** Why it is down or drained (admin text or "no heartbeat for 60 s"). */
  reason: string | null;
  cpus: number;
  cpusAllocated: number;
  memoryMiB: number;
  memoryAllocatedMiB: number;
  features: string[];
  partitions: string[];
  /** Jobs on this node with their users. */
  jobs: { id: number; user: string }[];
  lastHeartbeat: string | null;
}

/** A partition as cluster.toml defines it (GET /partitions: sinfo, scontrol show partition). */
export interface ApiPartition {
  name: string;
  nodes: string[];
  isDefault: boolean;
  /** null: no limit. */
  maxTimeSeconds: number | null;
  defaultTimeSeconds: number | null;
  maxNodes: number | null;
  priority: number;
  preemptMode: string;
}

export interface ApiClusterStatus {
  up: boolean;
  version: string;
  cluster: string;
  policy: string;
  placement: string;
  /** The controller's clock, so clients show "now" as the scheduler sees it. */
  now: string;
  nodes: { total: number; idle: number; allocated: number; mixed: number; down: number; drained: number };
  jobs: { pending: number; running: number };
  motd: string | null;
  /** Day and night queues (`[day_night]`), when configured: which period it is now, the day window, the holiday switch. */
  dayNight?: { now: 'day' | 'night'; day: string; holiday: boolean; dayMaxNodeMinutes: number; dayMaxTimeSeconds: number; nightMaxNodeMinutes: number; queuedLimitNodeMinutes: number };
  /** Maintenance windows (and reservations) not yet ended, by start: every planned start moves around them. */
  windows?: { name: string; kind: 'reservation' | 'maintenance'; start: string; end: string; nodes: string[] }[];
  /** The controller's Unix socket: a local CLI that reached /status over TCP uses it instead (verified by the kernel). */
  socket?: string;
  /** The controller's uid: MUNGE credentials are restricted to it (munge --restrict-uid), so no other user can decode them first. */
  uid?: number;
}

/** "When will it start?" (spwhen): the plan and why the job waits. */
export interface ApiWhen {
  job: ApiJob;
  plannedStart: string | null;
  predictedEnd: string | null;
  /** Position among pending jobs in scheduling order (1 = next). */
  position: number | null;
  /** Jobs whose resources it waits for (running jobs ending before its planned start). */
  waitsFor: { id: number; user: string; predictedEnd: string | null }[];
  /** What the other fields do not say, as a sentence (why a pending job has no planned start); often ''. */
  explanation: string;
  /** The nodes it is planned on (pending) or runs on; null: no plan. */
  plannedNodes: string[] | null;
  /**
   * What holds it: everything on its planned nodes that ends at its planned
   * start (running jobs, jobs ahead planned there, reservations, maintenance
   * windows), at most 5; `more` counts the rest.
   */
  heldBy: ApiHolder[];
  heldByMore: number;
  /** Why its planned start moved later than first planned (null: it has not). */
  moved: string | null;
  /** The advance reservation it runs in, if any (its window bounds the plan). */
  reservation?: { name: string; start: string; end: string } | null;
  /** A priority job's deadline: guaranteed or not, and by how much it would miss. */
  deadline?: ApiDeadline | null;
}

/** Something a pending job waits for on its planned nodes. */
export interface ApiHolder {
  kind: 'running' | 'planned' | 'reservation' | 'maintenance';
  /** A job's id as text, or a reservation's or window's name. */
  id: string;
  /** The job's owner (null for reservations and windows). */
  user: string | null;
  /** When it lets go of the nodes (ISO 8601). */
  until: string;
  /** Which of the job's planned nodes it holds. */
  nodes: string[];
}

/**
 * One bar of the plan (GET /plan): a running or pending job, an advance
 * reservation or a maintenance window, holding `nodes` over [start, end).
 */
export interface ApiPlanItem {
  kind: 'job' | 'reservation' | 'maintenance';
  /** The job's id as text, or the reservation's or window's name. */
  id: string;
  /** The job's name, or the reservation's / window's name. */
  name: string;
  /** The job's owner (null for reservations and windows). */
  user: string | null;
  /** RUNNING or PENDING for jobs; RESERVED for reservations; MAINT for maintenance windows. */
  state: 'RUNNING' | 'PENDING' | 'RESERVED' | 'MAINT';
  nodes: string[];
  /** ISO 8601 times; `end` null: no end known (unlimited). */
  start: string;
  end: string | null;
}

/** The whole current plan: what `taras plan` draws and the web view will. */
export interface ApiPlan {
  /** The controller's clock when the plan was made (ISO 8601). */
  now: string;
  /** Every node of the cluster in configuration order (rows of a Gantt chart). */
  nodes: string[];
  /** Running jobs, then pending jobs in queue order, then reservations and windows. */
  items: ApiPlanItem[];
  /** Pending jobs with no planned start (no node that counts can hold them now), by id. */
  unplanned: number[];
}

/** An advance reservation or maintenance window (GET /reservations). */
export interface ApiReservation {
  name: string;
  kind: 'reservation' | 'maintenance';
  /** ACTIVE: its window has begun; PLANNED: not yet. */
  state: 'ACTIVE' | 'PLANNED';
  start: string;
  end: string;
  nodes: string[];
  /** Who may run jobs in it; empty: administrators only. */
  users: string[];
  reason: string;
  createdBy: string;
  /** Pending and running jobs that asked for it. */
  jobs: number[];
}

/** POST /whatif: every pending job's planned start now and under the change. */
export interface ApiWhatIf {
  policy: string;
  jobs: { id: number; user: string; now: string | null; then: string | null; changeSeconds: number | null }[];
  /** Over the jobs planned both now and then: mean and worst (largest delay; the largest gain when none is later) change in seconds. */
  meanChangeSeconds: number | null;
  worst: { id: number; changeSeconds: number } | null;
  earlier: number;
  later: number;
  same: number;
  /** Planned now, with no plan under the change (and the reverse). */
  lostPlan: number;
  gainedPlan: number;
}

/** Errors: every non-2xx response body. */
export interface ApiError {
  error: string;
  /** What the caller can do about it. */
  fix?: string;
}

/** What POST /jobs/cancel did to one job. */
export interface ApiCancelResult {
  id: number;
  /** The job's state after the request (null: no such job). */
  state: JobState | null;
  /** cancelled: a pending job ended; signalled: a running job was sent SIGTERM; ended: it had already ended (its state); refused: not yours or not found. */
  result: 'cancelled' | 'signalled' | 'ended' | 'refused';
  /** One line for the user. */
  message: string;
  /** An array's task as squeue shows it (12_3), from hold, release, requeue, suspend and resume; absent for other jobs. */
  task?: string;
}

/** Linux signal names a job may ask for in `--signal` (without SIG), as `kill -l` lists them. */
export const SIGNAL_NAMES: readonly string[] = ['HUP', 'INT', 'QUIT', 'ILL', 'TRAP', 'ABRT', 'BUS', 'FPE', 'KILL', 'USR1', 'SEGV', 'USR2', 'PIPE', 'ALRM',
  'TERM', 'STKFLT', 'CHLD', 'CONT', 'STOP', 'TSTP', 'TTIN', 'TTOU', 'URG', 'XCPU', 'XFSZ', 'VTALRM', 'PROF', 'WINCH', 'IO', 'PWR', 'SYS'];

/**
 * The highest signal number a job may ask for: Linux's standard signals, SIGNAL_NAMES in order. Not the
 * real-time ones (32 to 64): Node reports a death by one as exit 0, so the supervisor would record it COMPLETED.
 */
export const MAX_SIGNAL_NUMBER = SIGNAL_NAMES.length;

/** A signal as a job spec keeps it: one of SIGNAL_NAMES, or a number from 1 to MAX_SIGNAL_NUMBER written plainly. */
export const isSpecSignal = (text: string): boolean => SIGNAL_NAMES.includes(text) || (/^[1-9]\d?$/.test(text) && Number(text) <= MAX_SIGNAL_NUMBER);

/** A reservation's name: 1 to 64 letters, digits, _ . - (the API, the job option, the store). */
export const RESERVATION_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
export const RESERVATION_NAME_RULE = 'a reservation name (1 to 64 letters, digits, _ . -)';

/** The policies that plan on nodes (what-if, reservations); cluster.toml's `policy` takes the same names. */
export const NODE_POLICIES = ['fcfs', 'easy', 'conservative'] as const;

/**
 * `GET /acct?start=MS&end=MS[&users=a,b|&all=1][&states=S,..][&jobs=ID,..][&after=ID&limit=N]` (`taras acct`,
 * sacct): every job that existed in the window, by id, whatever its state, kept for good; `next` pages on.
 */
export interface ApiAcctJob {
  id: number;
  user: string;
  name: string;
  partition: string;
  state: JobState;
  reason: string | null;
  submitMs: number;
  eligibleMs: number;
  startMs: number | null;
  endMs: number | null;
  /** The first planned start it was promised (once started), or the latest plan while pending. */
  plannedStartMs: number | null;
  nodes: readonly string[];
  allocCpus: number | null;
  /** Null: UNLIMITED. */
  timeLimitSeconds: number | null;
  exitCode: number | null;
  exitSignal: string | null;
  cpuSeconds: number | null;
  userCpuSeconds: number | null;
  systemCpuSeconds: number | null;
  maxRssKiB: number | null;
  requeueCount: number;
  /** An array task's array id and task id (sacct's JobID 12_3); null for other jobs. */
  arrayJobId: number | null;
  arrayTaskId: number | null;
}

export interface ApiAcctPage {
  jobs: ApiAcctJob[];
  next: number | null;
}

/**
 * `GET /acct?format=rows[&fields=a,b]`: the same jobs as arrays of values, in
 * the order `columns` names (ApiAcctJob's fields, all or those asked for and
 * the id): a quarter of the bytes or less, no object per job; pages of up to
 * 100,000 jobs.
 */
export interface ApiAcctRows {
  columns: (keyof ApiAcctJob)[];
  rows: unknown[][];
  next: number | null;
  /** The %N of throttled arrays with tasks not ended, by array id (only when arrayJobId is among the columns, and some exist). */
  throttles?: Record<string, number>;
}

/** `GET /report?start=MS&end=MS` (`taras report`, sreport's cluster utilization by user): usage per user in the window. */
export interface ApiUsageReport {
  startMs: number;
  endMs: number;
  /** The machine's CPUs times the window: what 100 % is. */
  cpuSecondsAvailable: number;
  users: ApiUserUsage[];
}

export interface ApiUserUsage {
  user: string;
  /** Jobs that ran (any part of them) in the window. */
  jobs: number;
  /** Allocated CPUs times the part of their run inside the window (sreport's allocated CPU time). */
  allocCpuSeconds: number;
  /** Measured CPU time (user + system) of those of its jobs that ended in the window. */
  usedCpuSeconds: number;
  /** Mean of start minus eligible, over its jobs that started in the window; null when none did. */
  meanWaitSeconds: number | null;
  /** allocCpuSeconds / cpuSecondsAvailable. */
  share: number;
}
