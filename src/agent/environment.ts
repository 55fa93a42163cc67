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
const RUN_OWN = new Set(['TARAS_RESTART', 'TARAS_RESTART_COUNT', 'TARAS_PREEMPT_SIGNAL']);

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
  return { env, workingDir, stdoutPath, stderrPath, nodefile: input.nodes.map((n) => `${n}\n`).join('') };
}
