// Domain types of the scheduling core. Everything here is plain data: the
// shells (simulator, controller) build these values and hand them in.

declare const jobIdBrand: unique symbol;
/** A job's identifier. Numeric (SWF job numbers, controller sequence numbers). */
export type JobId = number & { readonly [jobIdBrand]: true };
export const jobId = (n: number): JobId => n as JobId;

/** Time in integer seconds on the shell's clock (SWF: seconds since trace start). */
export type Seconds = number;

/**
 * Concrete resources a job needs on a cluster of nodes. Absent for trace
 * replay, where a job is just `size` processors of a homogeneous machine.
 */
export interface ResourceRequest {
  readonly nodes: number;
  readonly cpusPerNode: number;
  /** Memory per node; 0 asks for none in particular. */
  readonly memoryMiBPerNode: number;
  /** Features every allocated node must have. */
  readonly features: readonly string[];
  /** Nodes the job may use (its partition's); absent = every node. */
  readonly eligibleNodes?: ReadonlySet<string>;
}

/** What a user asked for: the core's view of a job before it runs. */
export interface JobRequest {
  readonly id: JobId;
  readonly submitTime: Seconds;
  /** Processors requested (the machine is homogeneous for now; see core README). */
  readonly size: number;
  /** The user's runtime estimate (wall-clock limit), > 0. */
  readonly estimate: Seconds;
  readonly user: number;
  readonly queue: number;
  readonly partition: number;
  /**
   * Higher goes first (Slurm's partition PriorityTier): the queue is ordered
   * by priority, then arrival. Absent counts as 0; trace replay has none.
   */
  readonly priority?: number;
  /** Node-level needs; `size` is then nodes x cpusPerNode. */
  readonly resources?: ResourceRequest;
  /**
   * On node plans: runs only within an advance reservation, whose hold in the
   * plan (`owner`) it may use, starting at or after `start` and ending by `end`.
   */
  readonly window?: { readonly owner: string; readonly start: Seconds; readonly end: Seconds };
  /**
   * A priority job (seed 000 2.2.3): it must end by this instant. On node
   * plans (policies/deadline-order.ts) a guaranteed one keeps its FCFS place
   * when that meets the deadline, else moves to the latest queue place that
   * does; one without a guarantee goes ahead of normal jobs, earliest deadline first.
   */
  readonly deadline?: Seconds;
  /** Accepted with a guarantee (the plan met the deadline at submission). */
  readonly guaranteed?: boolean;
}

/** The latest start at which a job with a deadline still ends by it. */
export const latestStartOf = (job: JobRequest): Seconds => job.deadline! - job.estimate;

export const isGuaranteed = (job: JobRequest): boolean => job.deadline !== undefined && job.guaranteed === true;

/** A job holding processors from `start` until it ends (predicted: start + estimate). */
export interface RunningJob {
  readonly job: JobRequest;
  readonly start: Seconds;
  /** The nodes placement chose (empty without a node pool). */
  readonly nodes: readonly string[];
}

export const predictedEnd = (r: RunningJob): Seconds => r.start + r.job.estimate;

/** The machine the core schedules: P identical processors. */
export interface Machine {
  readonly processors: number;
}
