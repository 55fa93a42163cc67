// The vocabulary of a job request: what each source (job.toml, #TARAS lines,
// command-line flags, prompt answers) contributes, where each value came from,
// and the complete JobSpec the CLI sends to the controller. Plain data only.

import type { DependencySpec } from './dependency.js';
import type { WarnSignal } from '../config/units.js';
import type { ArrayTasks } from './array.js';

/** Nodes as in `--nodes 2-4`: at least `min`, at most `max` (absent: exactly `min`). */
export interface NodeRange {
  readonly min: number;
  readonly max?: number;
}

/** Wall-clock limit in seconds, or no limit (sbatch `UNLIMITED`, `INFINITE`, `-1`, `0`). */
export type TimeLimit = number | 'UNLIMITED';

/** One variable of `--export`: `NAME` (take its value from the submitting shell) or `NAME=value`. */
export interface ExportVariable {
  readonly name: string;
  readonly value?: string;
}

/**
 * `--export`: `ALL` is { all: true, variables: [] }; `NONE` is { all: false, variables: [] };
 * `ALL,A=1,B` adds to the whole environment; `A=1,B` exports only those (as sbatch does).
 */
export interface ExportSpec {
  readonly all: boolean;
  readonly variables: readonly ExportVariable[];
}

/**
 * `--constraint` in disjunctive form: a node qualifies when it has every feature of at
 * least one alternative. `gpu&ib` is [[gpu, ib]]; `a|b&c` is [[a], [b, c]] (& binds
 * tighter, as in Slurm's feature sets). `text` keeps what the user wrote.
 */
export interface Constraint {
  readonly text: string;
  readonly anyOf: readonly (readonly string[])[];
}

export const OPEN_MODES = ['append', 'truncate'] as const;
export type OpenMode = (typeof OPEN_MODES)[number];

/** sbatch's `--signal=[B:]SIG[@TIME]` (shared with cluster.toml's warn_signal). */
export type { WarnSignal };

export const DEADLINE_POLICIES = ['guarantee', 'cancel'] as const;
export type DeadlinePolicy = (typeof DEADLINE_POLICIES)[number];

/** A priority job's deadline: the instant (epoch ms) it must end by, and what to do when it no longer can. */
export interface DeadlineSpec {
  readonly atMs: number;
  readonly policy: DeadlinePolicy;
}

/** Every item a source can set, by the name the code uses. */
export interface JobValues {
  readonly nodes: NodeRange;
  readonly ntasks: number;
  readonly cpusPerTask: number;
  /** Per node; 0 means all of each node's memory (sbatch `--mem=0`). */
  readonly memoryMiB: number;
  readonly timeLimitSeconds: TimeLimit;
  readonly partition: string;
  readonly name: string;
  readonly workingDir: string;
  /** Patterns with %j, %u, %x, %% (see pattern.ts). */
  readonly output: string;
  readonly error: string;
  readonly export: ExportSpec;
  readonly constraint: Constraint;
  readonly requeue: boolean;
  readonly signal: WarnSignal;
  /** An advance reservation to run in (Slurm's --reservation). */
  readonly reservation: string;
  /** Seconds between periodic checkpoint signals (seed 000 2.4.1). */
  readonly checkpointInterval: number;
  /** Seconds a checkpoint takes at most: the preemption signal comes this long before the job must be gone. */
  readonly checkpointDuration: number;
  /** A [[program_class]] of cluster.toml: the checkpoint signals and how a restart is announced. */
  readonly programClass: string;
  /** Slurm's --deadline as written (now+2hours, 18:00, 2026-12-01T09:00): read at build time (BuildContext.nowMs). */
  readonly deadline: string;
  /** What a deadline means: guarantee (Artaras: a priority job, guaranteed when the plan meets it) or cancel (Slurm's: ended DEADLINE when it no longer can). */
  readonly deadlinePolicy: DeadlinePolicy;
  /** sbatch --hold (-H): submitted held (a user hold): it waits until released. */
  readonly hold: boolean;
  /** sbatch --begin as written (now+1hour, 16:00, tomorrow): read at build time. */
  readonly begin: string;
  /** sbatch --dependency (-d). */
  readonly dependency: DependencySpec;
  /** sbatch's --array: the task ids and the %N throttle. */
  readonly array: ArrayTasks;
  /** sbatch --ntasks-per-node: tasks on each node (sets --ntasks to nodes x N when --ntasks is not given). */
  readonly ntasksPerNode: number;
  /** sbatch --mem-per-cpu in MiB: memory per node is this times the job's CPUs on the node (not with --mem). */
  readonly memPerCpuMiB: number;
  /** sbatch --nodelist/-w: the nodes to run on (expanded host list); --exclude/-x: nodes never to run on. */
  readonly nodelist: readonly string[];
  readonly exclude: readonly string[];
  /** sbatch --open-mode: whether output files are appended to or truncated. */
  readonly openMode: OpenMode;
  /** sbatch --exclusive: whole nodes (all their CPUs and memory). */
  readonly exclusive: boolean;
  /** sbatch --nice[=N] (bare: 100): lower priority within the partition; negative: administrators only. */
  readonly nice: number;
  /** sbatch --account, --comment, --mail-type (BEGIN, END, FAIL, ...), --mail-user: stored and shown by `taras show`. */
  readonly account: string; readonly comment: string; readonly mailType: readonly string[]; readonly mailUser: string;
  /** sbatch --wrap: the command that is the whole script (`#!/bin/sh` and it); no script operand with it. */
  readonly wrap: string;
  /** sbatch --parsable: print only the job id. Not part of the request. */
  readonly parsable: boolean;
  /** sbatch --test-only: check the job and say when it would start; nothing is submitted. Not part of the request. */
  readonly testOnly: boolean;
  /** The batch script's path as given (command operand or job.toml `script`). */
  readonly script: string;
  readonly scriptArgs: readonly string[];
}

export type ItemKey = keyof JobValues;

/** What one source said: any subset of the items. */
export type JobSpecDraft = { readonly [K in ItemKey]?: JobValues[K] };

export type Source = 'file' | 'directive' | 'flag' | 'prompt' | 'default';

/** Where a value (or an error) came from: `run.sh:3 --time`, `job.toml:4 time`, `--time`. */
export interface Origin {
  readonly source: Source;
  readonly file?: string;
  readonly line?: number;
  /** The option or key as the user wrote it: `--time`, `-t`, `time`. */
  readonly option?: string;
}

/** One source's values with the origin of each. Later layers override earlier ones. */
export interface SpecLayer {
  readonly source: Source;
  readonly values: JobSpecDraft;
  readonly origins: { readonly [K in ItemKey]?: Origin };
}

/** A parse or validation problem: the place, the option or key, and what is wrong and how to fix it. */
export interface JobSpecError {
  readonly source: Source | 'request';
  readonly file?: string;
  readonly line?: number;
  readonly option?: string;
  readonly message: string;
}

export type Parsed<T> =
  | { readonly ok: true; readonly value: T; readonly warnings: readonly JobSpecError[] }
  | { readonly ok: false; readonly errors: readonly JobSpecError[]; readonly warnings: readonly JobSpecError[] };

/** A complete, checked job request: what the CLI sends to the controller. */
export interface JobSpec {
  readonly script: { readonly path: string; readonly text: string; readonly args: readonly string[] };
  readonly nodes: NodeRange;
  /** Absent: one task per node (sbatch's default). */
  readonly ntasks?: number;
  readonly cpusPerTask: number;
  /** Absent: no memory request (the node's share as the controller decides); 0: all of it. */
  readonly memoryMiB?: number;
  readonly timeLimitSeconds: TimeLimit;
  /** Absent: the cluster's default partition. */
  readonly partition?: string;
  readonly name: string;
  /** Absolute. */
  readonly workingDir: string;
  readonly output: string;
  /** Absent: standard error goes to the output file (sbatch's default). */
  readonly error?: string;
  readonly export: ExportSpec;
  readonly constraint?: Constraint;
  readonly requeue: boolean;
  /** Absent: no warning signal before the time limit, unless cluster.toml's warn_signal sets one. */
  readonly signal?: WarnSignal;
  readonly ntasksPerNode?: number;
  /** --mem-per-cpu in MiB (memoryMiB absent): the controller reserves this times the job's CPUs on each node. */
  readonly memPerCpuMiB?: number;
  /** Only these nodes (--nodelist), never these (--exclude): node names. */
  readonly nodelist?: readonly string[];
  readonly exclude?: readonly string[];
  /** Absent: the agent's default (append). */
  readonly openMode?: OpenMode;
  /** --exclusive: the job gets whole nodes, all their CPUs and memory (the controller picks nodes of one shape). */
  readonly exclusive?: boolean;
  /** --nice: behind the jobs of its partition with a smaller value (0 when absent); a negative value needs an administrator. */
  readonly nice?: number;
  readonly account?: string;
  readonly comment?: string;
  readonly mailType?: readonly string[];
  readonly mailUser?: string;
  /** The host the job was submitted from (SLURM_SUBMIT_HOST); the CLI adds it, outside buildJobSpec. */
  readonly submitHost?: string;
  /** The submitter's umask (0..0o777): new output files get 0666 & ~umask. Absent: 0o022. */
  readonly umask?: number;
  /** Runs only in this advance reservation, on its nodes and within its time (Slurm's --reservation). */
  readonly reservation?: string;
  /** sbatch --immediate[=S]: ended (CANCELLED, with the reason) unless it starts within S seconds of its submission. */
  readonly immediateSeconds?: number;
  /** The job checkpoints itself (seed 000 2.4): present when it gave --checkpoint-duration. */
  readonly checkpoint?: CheckpointSpec;
  /** A priority job: must end by this deadline (taras submit --deadline, --deadline-policy). */
  readonly deadline?: DeadlineSpec;
  /** An interactive job (`taras run`, `taras alloc`): attached to the user's terminal instead of output files. */
  readonly interactive?: InteractiveRequest;
  /** sbatch --hold: submitted with a user hold. */
  readonly hold?: boolean;
  /** sbatch --begin: not started before this instant (epoch ms). */
  readonly beginMs?: number;
  /** sbatch --dependency: started only once these jobs have (see dependency.ts). */
  readonly dependency?: DependencySpec;
  /** A job array (sbatch --array): one job per task, see ArrayMember. */
  readonly array?: ArrayMember;
}

/**
 * `spec.array`: as submitted, only `text` (--array's value; the controller
 * parses it against its max_array_size). Each task's stored spec adds its
 * task id and its place in the array (the array's id, the first task's job
 * id, is the task's job id less `index`: the tasks are stored in one
 * transaction, with consecutive ids).
 */
export interface ArrayMember {
  readonly text: string;
  readonly taskId?: number;
  readonly index?: number;
}

/** `spec.checkpoint`: the job handles its program class's signals, so it can be preempted and restarted from its checkpoint. */
export interface CheckpointSpec {
  /** Absent: no periodic checkpoint signal, only the preemption signal. */
  readonly intervalSeconds?: number;
  readonly durationSeconds: number;
  /** Absent: the cluster's first program class. */
  readonly programClass?: string;
}

/** What makes a job interactive (stored in its spec). */
export interface InteractiveRequest {
  /** A terminal on the node (the CLI's stdin is one); false: plain pipes, stdout and stderr apart. */
  readonly pty: boolean;
  /** The command and its arguments; empty: the user's login shell (taras alloc). */
  readonly command: readonly string[];
  /** The terminal's size at the start. */
  readonly cols?: number;
  readonly rows?: number;
  /** --immediate=S: the request fails unless the job starts within S seconds. */
  readonly immediateSeconds?: number;
}

/** A JobSpec with the origin of every value, for the summary. */
export interface ResolvedJobSpec {
  readonly spec: JobSpec;
  readonly origins: { readonly [K in ItemKey]?: Origin };
}

/** Renders an error as one line: `run.sh:3: --time: expected ...`. */
export function formatError(error: JobSpecError): string {
  const place = error.file !== undefined
    ? (error.line !== undefined ? `${error.file}:${error.line}` : error.file)
    : error.line !== undefined ? `line ${error.line}` : '';
  const head = [place, error.option].filter((part) => part !== undefined && part !== '').join(': ');
  return head === '' ? error.message : `${head}: ${error.message}`;
}

/** Renders an origin for the summary: `run.sh:3`, `job.toml:4`, `--time`, `default`. */
export function formatOrigin(origin: Origin): string {
  switch (origin.source) {
    case 'directive':
    case 'file':
      return origin.line !== undefined ? `${origin.file ?? ''}:${origin.line}` : origin.file ?? origin.source;
    case 'flag':
      return origin.option?.startsWith('-') ? origin.option : 'command line';
    case 'prompt':
      return 'answered';
    case 'default':
      return 'default';
  }
}
