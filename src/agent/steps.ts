// Job steps (`srun CMD` inside a job, Slurm's steps): each task of a step
// runs under a supervisor of its own, as an interactive job does in pipes
// mode (session.ts): the exec helper drops to the job's user first, the
// task's stdout and stderr are streamed over the step directory's stream.sock
// to the controller, which relays them to srun. The controller asks for a
// task with `POST /steps/start` and connects to its stream; the task starts
// once it is connected. Step directories are `jobs/step-JOB.RUN.STEP.TASK`,
// never reported as job ends; `POST /steps/kill` (the job ended) kills every
// task of a job here, and each task's time limit is what was left of its
// job's, so a task never outlives its job even if the controller is gone.

import { chmodSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { RouteError } from '../net/server.js';
import { cancelStartingSupervisor, hasEnded, isAlive, prepareJobDir, processStartTicks, readStatus, recordNotStarted, requestSignal, requestTimeLimit, type SupervisorLauncher } from './jobdir.js';
import { credentialsFor, makeJobDir } from './agent.js';

/** What the controller sends to start one task of a step (validated here again: the agent trusts only its own checks). */
export interface StepTaskOrder {
  readonly jobId: number;
  readonly run: number;
  readonly stepId: number;
  readonly task: number;
  readonly user: string;
  readonly uid?: number;
  readonly command: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly workingDir: string;
  readonly umask: number;
  /** What is left of the job's time limit (null: none). */
  readonly timeLimitSeconds: number | null;
  readonly memoryMiB: number | null;
  readonly killGraceSeconds: number;
}

/**
 * A task with no client (its controller's stream) is killed after this long, and one that ended with none keeps
 * its output and end this long for the next. Longer than the controller's reattach window (STEP_REATTACH_MS in
 * src/controller/steps.ts, 30 s): an agent restart closes the stream, and the controller opens it again through the
 * restarted agent; a controller restart closes it too, and srun's resume of the step opens it again. srun going away kills the task at once (`POST /steps/kill`); a controller gone for good leaves
 * it running this long.
 */
const STEP_GRACE_SECONDS = 40;
/** Output a task keeps while its stream is reconnected. */
const STEP_BUFFER_BYTES = 256 * 1024;

const STEP_DIR = /^step-(\d+)\.(\d+)\.(\d+)\.(\d+)$/;

const isStringArray = (value: unknown): value is string[] => Array.isArray(value) && value.every((item) => typeof item === 'string');
const isCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;

/** The order, checked field by field; a 400 names the first wrong one. */
export function parseStepOrder(body: unknown): StepTaskOrder {
  const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const bad = (field: string, want: string): never => {
    throw new RouteError(400, `step order: ${field} must be ${want}`);
  };
  for (const field of ['jobId', 'run', 'stepId', 'task'] as const) if (!isCount(b[field])) bad(field, 'a whole number');
  if (typeof b.user !== 'string' || b.user === '') bad('user', 'a user name');
  if (b.uid !== undefined && !isCount(b.uid)) bad('uid', 'a uid');
  if (!isStringArray(b.command) || b.command.length === 0) bad('command', 'a non-empty list of strings');
  const env = b.env;
  if (typeof env !== 'object' || env === null || Array.isArray(env) || !Object.values(env).every((value) => typeof value === 'string')) bad('env', 'an object of strings');
  if (typeof b.workingDir !== 'string' || !b.workingDir.startsWith('/')) bad('workingDir', 'an absolute path');
  if (!isCount(b.umask) || (b.umask as number) > 0o777) bad('umask', 'a umask');
  if (b.timeLimitSeconds !== null && !(typeof b.timeLimitSeconds === 'number' && b.timeLimitSeconds > 0 && Number.isFinite(b.timeLimitSeconds))) bad('timeLimitSeconds', 'null or a positive number');
  if (b.memoryMiB !== null && !(typeof b.memoryMiB === 'number' && b.memoryMiB > 0 && Number.isFinite(b.memoryMiB))) bad('memoryMiB', 'null or a positive number');
  if (!(typeof b.killGraceSeconds === 'number' && b.killGraceSeconds >= 0)) bad('killGraceSeconds', 'a number of seconds');
  return b as unknown as StepTaskOrder;
}

interface KnownTask {
  readonly jobId: number;
  readonly stepId: number;
  readonly dir: string;
  launched: { pid: number; startTicks: number | null } | null;
}

export class StepTasks {
  private readonly tasks = new Map<string, KnownTask>();

  private readonly jobsDir: string;
  private readonly wrapper: string;

  constructor(jobsDir: string, private readonly launcher: SupervisorLauncher, private readonly log: (line: string) => void) {
    this.jobsDir = resolve(jobsDir); // the task runs its script from its working directory
    // Every task runs its command through this one wrapper: root's, 0755, nothing secret in it (the task
    // directories are root's alone, 0700).
    this.wrapper = join(dirname(this.jobsDir), 'step-exec');
    writeFileSync(this.wrapper, '#!/bin/sh\nexec "$@"\n', { mode: 0o755 });
    chmodSync(this.wrapper, 0o755);
    // Tasks a previous agent started: killed when their job ends, removed once over.
    for (const name of readdirSync(jobsDir)) {
      const match = STEP_DIR.exec(name);
      if (match) this.tasks.set(name, { jobId: Number(match[1]), stepId: Number(match[3]), dir: join(jobsDir, name), launched: null });
    }
  }

  dirOf(jobId: number, run: number, stepId: number, task: number): string {
    return join(this.jobsDir, `step-${jobId}.${run}.${stepId}.${task}`);
  }

  /** Starts the task's supervisor; the task itself starts once the controller connects to its stream. */
  start(order: StepTaskOrder): void {
    const name = `step-${order.jobId}.${order.run}.${order.stepId}.${order.task}`;
    if (this.tasks.has(name)) throw new RouteError(409, `task ${order.task} of step ${order.jobId}.${order.stepId} was started already`);
    const dir = join(this.jobsDir, name);
    const known: KnownTask = { jobId: order.jobId, stepId: order.stepId, dir, launched: null };
    this.tasks.set(name, known);
    const credentials = credentialsFor(order.user, order.uid);
    if (!credentials.ok) {
      recordNotStarted(dir, order.jobId, credentials.error);
      throw new RouteError(409, credentials.error);
    }
    const runAs = credentials.value;
    makeJobDir(dir);
    const script = this.wrapper;
    const prepared = prepareJobDir(dir, {
      interactive: { pty: false, cols: 80, rows: 24, bufferBytes: STEP_BUFFER_BYTES, graceSeconds: STEP_GRACE_SECONDS, idleSeconds: 0, warnSeconds: 0 },
      jobId: order.jobId, script, args: [...order.command], workingDir: order.workingDir, env: { ...order.env },
      stdoutPath: '/dev/null', stderrPath: '/dev/null', memoryMiB: order.memoryMiB, timeLimitSeconds: order.timeLimitSeconds,
      killGraceSeconds: order.killGraceSeconds, umask: order.umask, uid: runAs?.uid ?? null, gid: runAs?.gid ?? null,
    });
    if (!prepared.ok) throw new RouteError(400, `step ${order.jobId}.${order.stepId} task ${order.task}: ${prepared.error}`);
    const launched = this.launcher.launch(dir);
    if (!launched.ok) throw new RouteError(500, `step ${order.jobId}.${order.stepId} task ${order.task}: ${launched.error}`);
    known.launched = { pid: launched.value, startTicks: processStartTicks(launched.value) };
    this.log(`job ${order.jobId} step ${order.stepId} task ${order.task} started as ${order.user} (supervisor ${launched.value})`);
  }

  /** Kills the tasks of a job (of one step when given): its end, or srun going away. Returns how many were asked. */
  async kill(jobId: number, stepId: number | null, reason: string): Promise<number> {
    // All at once: a task whose supervisor is slow to load must not hold up the others' kill.
    const asked = [...this.tasks.values()].filter((task) => (task.jobId === jobId && (stepId === null || task.stepId === stepId)) && !hasEnded(readStatus(task.dir)));
    await Promise.all(asked.map(async (task) => {
      const reply = await requestSignal(task.dir, 'SIGKILL', { cancel: true, reason });
      // Not started yet (waiting for its stream): the supervisor's SIGTERM cancels it.
      if (!reply.ok && task.launched !== null) await cancelStartingSupervisor(task.launched.pid, task.launched.startTicks);
    }));
    return asked.length;
  }

  /**
   * A step's tasks here take a new time limit (their job's changed); returns how many were told. A task that
   * has not ended and could not be told (its supervisor did not answer, or is still starting) makes it throw a
   * 409, so that the controller sends the order again; a task told the limit it has already changes nothing.
   */
  async setLimit(jobId: number, stepId: number, seconds: number | null): Promise<number> {
    const asked = [...this.tasks.entries()].filter(([, task]) => task.jobId === jobId && task.stepId === stepId && !hasEnded(readStatus(task.dir)));
    const replies = await Promise.all(asked.map(([, task]) => requestTimeLimit(task.dir, seconds)));
    const untold = asked.flatMap(([name, task], i) => {
      const reply = replies[i];
      return reply.ok || hasEnded(readStatus(task.dir)) ? [] : [`${name}: ${reply.error}`];
    });
    if (untold.length > 0) throw new RouteError(409, `step ${jobId}.${stepId}: ${untold.length} of ${asked.length} task(s) here could not be given the new time limit (${untold[0]})`, 'the controller sends it again');
    return asked.length;
  }

  /** Removes the directories of tasks that are over (their supervisor has exited). */
  sweep(): void {
    for (const [name, task] of this.tasks) {
      const status = readStatus(task.dir);
      // A task refused before its start has the agent's own pid as its "supervisor".
      const supervisor = status === null ? task.launched : status.supervisorPid === process.pid ? null : { pid: status.supervisorPid, startTicks: status.supervisorStartTicks };
      if (supervisor !== null && isAlive(supervisor.pid, supervisor.startTicks)) continue;
      try {
        rmSync(task.dir, { recursive: true, force: true });
        this.tasks.delete(name);
      } catch (error) {
        this.log(`could not remove the step directory ${task.dir} (${(error as Error).message}); trying again later`);
      }
    }
  }
}
