// What a job sees when it starts: its environment (the submitting shell's,
// as --export says, plus the TARAS_* variables), its output files and the
// node file listing its nodes (like Argonne's SPnodes.<jid>).

import { isAbsolute, join } from 'node:path';
import { compressHostlist } from '../config/hostlist.js';
import { expandPattern } from '../jobspec/pattern.js';
import type { JobSpec } from '../jobspec/types.js';

export interface LaunchInput {
  readonly jobId: number;
  readonly user: string;
  readonly nodes: readonly string[];
  readonly cpusOnNode: number;
  readonly spec: JobSpec;
  /** The environment of the shell that submitted (sent with the submission). */
  readonly submitEnv: Readonly<Record<string, string>>;
  /** The directory `taras submit` ran in. */
  readonly submitDir: string;
  /** Where the agent writes the node file. */
  readonly nodefilePath: string;
  /** A task of a job array (the start order's `array`). */
  readonly array?: { readonly jobId: number; readonly taskId: number; readonly count: number; readonly min: number; readonly max: number; readonly step: number };
  /** The partition the job runs in (the controller's start order; absent from older controllers). */
  readonly partition?: string;
}

export interface Launch {
  readonly env: Record<string, string>;
  readonly workingDir: string;
  readonly stdoutPath: string;
  readonly stderrPath: string;
  /** Contents of the node file: one allocated node per line. */
  readonly nodefile: string;
}

/** Kept even with --export=NONE, so the script can find a shell and its home. */
const MINIMAL = ['PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG'];

/** Variables the agent sets for one run of a job (restart, preemption signal): never inherited from the submitting shell. */
const RUN_OWN = new Set(['TARAS_RESTART', 'TARAS_RESTART_COUNT', 'TARAS_PREEMPT_SIGNAL', 'SLURM_RESTART_COUNT']);

/**
 * Slurm's names for a job's variables (README: "The job's environment"). A job submitted from inside another
 * job must not keep the outer job's value of one that this job does not set (SLURM_MEM_PER_NODE...): all go first.
 */
export const SLURM_JOB_VARIABLES = [
  'SLURM_JOB_ID', 'SLURM_JOBID', 'SLURM_JOB_NAME', 'SLURM_JOB_NODELIST', 'SLURM_NODELIST', 'SLURM_NNODES', 'SLURM_JOB_NUM_NODES',
  'SLURM_NTASKS', 'SLURM_NPROCS', 'SLURM_CPUS_PER_TASK', 'SLURM_CPUS_ON_NODE', 'SLURM_MEM_PER_NODE', 'SLURM_JOB_PARTITION',
  'SLURM_SUBMIT_DIR', 'SLURM_SUBMIT_HOST', 'SLURM_JOB_USER', 'SLURM_NTASKS_PER_NODE', 'SLURM_RESTART_COUNT', 'SLURM_MEM_PER_CPU',
] as const;

export function jobLaunch(input: LaunchInput): Launch {
  const { spec, submitEnv } = input;
  const env: Record<string, string> = {};
  if (spec.export.all) Object.assign(env, submitEnv);
  else for (const name of MINIMAL) if (submitEnv[name] !== undefined) env[name] = submitEnv[name];
  for (const variable of spec.export.variables) {
    const value = variable.value ?? submitEnv[variable.name];
    if (value !== undefined) env[variable.name] = value;
  }
  // A job submitted from inside a restarted or checkpointing job must not inherit that run's own variables (it
  // would "restart"): the agent adds this run's own after this (restartAction, checkpoint signals).
  for (const name of Object.keys(env)) if (RUN_OWN.has(name) || name.startsWith('TARAS_CHECKPOINT_')) delete env[name];
  const { array } = input;
  for (const name of SLURM_JOB_VARIABLES) delete env[name];
  const names = { jobId: input.jobId, user: input.user, name: spec.name, ...(array === undefined ? {} : { array: { jobId: array.jobId, taskId: array.taskId } }) };
  const workingDir = spec.workingDir;
  const inWorkingDir = (path: string) => (isAbsolute(path) ? path : join(workingDir, path));
  const stdoutPath = inWorkingDir(expandPattern(spec.output, names));
  const stderrPath = spec.error === undefined ? stdoutPath : inWorkingDir(expandPattern(spec.error, names));
  Object.assign(env, {
    TARAS_JOB_ID: String(input.jobId),
    TARAS_JOB_NAME: spec.name,
    TARAS_JOB_USER: input.user,
    TARAS_NODELIST: compressHostlist(input.nodes),
    TARAS_NNODES: String(input.nodes.length),
    TARAS_NTASKS: String(spec.ntasks ?? input.nodes.length),
    TARAS_CPUS_ON_NODE: String(input.cpusOnNode),
    TARAS_SUBMIT_DIR: input.submitDir,
    TARAS_NODEFILE: input.nodefilePath,
  });
  // A job array's task: sbatch's SLURM_ARRAY_* and their TARAS_ARRAY_* twins; never inherited from the submitting shell.
  for (const name of Object.keys(env)) if (name.startsWith('SLURM_ARRAY_') || name.startsWith('TARAS_ARRAY_')) delete env[name];
  if (array !== undefined) {
    const values = { JOB_ID: array.jobId, TASK_ID: array.taskId, TASK_COUNT: array.count, TASK_MAX: array.max, TASK_MIN: array.min, TASK_STEP: array.step };
    for (const [suffix, value] of Object.entries(values)) {
      env[`SLURM_ARRAY_${suffix}`] = String(value);
      env[`TARAS_ARRAY_${suffix}`] = String(value);
    }
  }
  const slurm: Record<string, string | undefined> = {
    SLURM_JOB_ID: env.TARAS_JOB_ID, SLURM_JOBID: env.TARAS_JOB_ID, SLURM_JOB_NAME: spec.name, SLURM_JOB_USER: input.user,
    SLURM_JOB_NODELIST: env.TARAS_NODELIST, SLURM_NODELIST: env.TARAS_NODELIST,
    SLURM_NNODES: env.TARAS_NNODES, SLURM_JOB_NUM_NODES: env.TARAS_NNODES, SLURM_NTASKS: env.TARAS_NTASKS, SLURM_NPROCS: env.TARAS_NTASKS,
    SLURM_CPUS_PER_TASK: String(spec.cpusPerTask), SLURM_CPUS_ON_NODE: env.TARAS_CPUS_ON_NODE,
    SLURM_MEM_PER_NODE: spec.memoryMiB === undefined || spec.memPerCpuMiB !== undefined ? undefined : String(spec.memoryMiB),
    SLURM_MEM_PER_CPU: spec.memPerCpuMiB === undefined ? undefined : String(spec.memPerCpuMiB),
    SLURM_NTASKS_PER_NODE: spec.ntasksPerNode === undefined ? undefined : String(spec.ntasksPerNode),
    SLURM_JOB_PARTITION: input.partition ?? spec.partition, SLURM_SUBMIT_DIR: input.submitDir, SLURM_SUBMIT_HOST: spec.submitHost,
  };
  for (const [name, value] of Object.entries(slurm)) if (value !== undefined) env[name] = value;
  return { env, workingDir, stdoutPath, stderrPath, nodefile: input.nodes.map((n) => `${n}\n`).join('') };
}
