// Job steps in the controller: `srun CMD` inside a running job (Slurm's job
// steps). `POST /jobs/:id/steps` checks the request against the job's
// allocation and lays the tasks out on its nodes (block distribution: the
// first nodes take one task more when the count does not divide); the
// caller then opens `GET /jobs/:id/steps/:step/attach` (a WebSocket), and the
// controller starts every task at its node's agent (src/agent/steps.ts),
// connects to each task's stream and merges them for srun: output frames
// carry their task and their number in the task's stream (each passed on
// once; srun's acknowledgements go back to the task's supervisor, which keeps
// what srun has not acknowledged for a reattach or a resume), input and
// signals go to every task (srun's defaults); each task's end goes to srun
// as it comes (`ended`, numbered in the task's stream: its supervisor keeps it
// until srun acknowledges it), and the last frame lists every task's end. Only the job's owner (and
// root) may run steps in it, and every task runs as the job's user. A task
// never outlives its job: when the job ends (any way) or srun goes away, the
// agents kill the step's tasks; each task's time limit is what is left of the
// job's (given again when the job's is raised: jobLimitChanged; the engine
// retries that order until the agent has carried it out). A task's stream
// that closes before its end (its agent restarted) is opened again once the
// agent is back (STEP_REATTACH_MS); the task's supervisor ran on meanwhile.
// A restart of the controller does not end a step either: srun asks to resume
// it (resumeRoute, authorised as an attach), and its tasks' streams are opened
// again (those srun has the end of already are named in `?ended=`, and left
// alone: their supervisors may be gone); step ids are kept on the disk so
// that none is given twice, with each live step's start and limits, so that
// a resumed step still takes its job's raised limit.

import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { WebSocket } from 'ws';
import type { StepBody } from '../api/schema.js';
import { compressHostlist } from '../config/hostlist.js';
import type { JobId } from '../core/types.js';
import { HOW_TO_AUTHENTICATE, type Caller } from '../net/identity.js';
import { MAX_BODY_DEPTH, nestedDeeperThan, RouteError, type RequestContext, type UpgradeRoute } from '../net/server.js';
import type { JobRecord } from '../store/events.js';
import type { ControllerEngine } from './engine.js';
import { FrameQueue } from '../net/frame-queue.js';
import { readOutputFrame, writeOutputFrame } from '../net/output-frame.js';
import { closeWhenSent, sendTracked } from '../net/stream.js';
import type { StepTaskOrder } from '../agent/steps.js';

/** One task of a step: its rank, node, the node's index in the step and the task's rank on that node. */
export interface StepTask {
  readonly task: number;
  readonly node: string;
  readonly nodeId: number;
  readonly localId: number;
}

export interface StepLayout {
  readonly nodes: readonly string[];
  readonly tasks: readonly StepTask[];
  readonly cpusPerTask: number;
}

/**
 * Lays a step out on its job's nodes (pure): the error names the problem and
 * the fix. Without -n the step has the job's tasks when it spans all the
 * job's nodes, else one task per node; without -N it spans as many of the
 * job's nodes as it has tasks (all, at most).
 */
export function stepLayout(jobNodes: readonly string[], allocation: { cpusPerNode: number; ntasks: number; cpusPerTask: number },
  request: Pick<StepBody, 'ntasks' | 'nodes' | 'cpusPerTask' | 'overcommit'>): StepLayout | string {
  if (request.nodes !== undefined && request.nodes > jobNodes.length) {
    return `the job has ${jobNodes.length} node(s) and the step asks for ${request.nodes} (-N): ask for at most ${jobNodes.length}`;
  }
  const nodeCount = request.nodes ?? Math.min(request.ntasks ?? jobNodes.length, jobNodes.length);
  const ntasks = request.ntasks ?? (nodeCount === jobNodes.length ? Math.max(allocation.ntasks, nodeCount) : nodeCount);
  if (ntasks < nodeCount) return `${ntasks} task(s) (-n) cannot cover ${nodeCount} node(s) (-N): every node of a step runs at least one task; ask for -n ${nodeCount} or -N ${ntasks}`;
  const cpusPerTask = request.cpusPerTask ?? allocation.cpusPerTask;
  const nodes = jobNodes.slice(0, nodeCount);
  const base = Math.floor(ntasks / nodeCount);
  const extra = ntasks % nodeCount;
  const most = (base + (extra > 0 ? 1 : 0)) * cpusPerTask;
  if (most > allocation.cpusPerNode && request.overcommit !== true) {
    return `the step puts ${base + (extra > 0 ? 1 : 0)} task(s) of ${cpusPerTask} CPU(s) on a node where the job has ${allocation.cpusPerNode} CPU(s): `
      + 'ask for fewer tasks (-n), fewer CPUs per task (-c), more nodes (-N), or --overcommit';
  }
  const tasks: StepTask[] = [];
  nodes.forEach((node, nodeId) => {
    const count = base + (nodeId < extra ? 1 : 0);
    for (let localId = 0; localId < count; localId++) tasks.push({ task: tasks.length, node, nodeId, localId });
  });
  return { nodes, tasks, cpusPerTask };
}

/** Slurm's SLURM_STEP_TASKS_PER_NODE: `2(x3),1`. */
export function tasksPerNodeText(tasks: readonly StepTask[], nodes: number): string {
  const counts = Array.from({ length: nodes }, (_, nodeId) => tasks.filter((t) => t.nodeId === nodeId).length);
  const parts: string[] = [];
  for (let i = 0; i < counts.length;) {
    let j = i;
    while (j < counts.length && counts[j] === counts[i]) j++;
    parts.push(j - i > 1 ? `${counts[i]}(x${j - i})` : String(counts[i]));
    i = j;
  }
  return parts.join(',');
}

/** What the step's tasks add to the caller's environment (Slurm's names and Taras's). */
export function taskEnvironment(base: Readonly<Record<string, string>>, jobId: number, stepId: number, layout: StepLayout, task: StepTask): Record<string, string> {
  const nodelist = compressHostlist(layout.nodes);
  const own: Record<string, string> = {
    SLURM_JOB_ID: String(jobId), SLURM_JOBID: String(jobId),
    SLURM_STEP_ID: String(stepId), SLURM_STEPID: String(stepId), SLURM_PROCID: String(task.task), SLURM_LOCALID: String(task.localId),
    SLURM_NODEID: String(task.nodeId), SLURMD_NODENAME: task.node, SLURM_STEP_NODELIST: nodelist, SLURM_STEP_NUM_NODES: String(layout.nodes.length),
    SLURM_STEP_NUM_TASKS: String(layout.tasks.length), SLURM_STEP_TASKS_PER_NODE: tasksPerNodeText(layout.tasks, layout.nodes.length),
    SLURM_NTASKS: String(layout.tasks.length), SLURM_NPROCS: String(layout.tasks.length), SLURM_NNODES: String(layout.nodes.length),
    SLURM_NODELIST: nodelist, SLURM_CPUS_PER_TASK: String(layout.cpusPerTask),
    TARAS_STEP_ID: String(stepId), TARAS_PROCID: String(task.task), TARAS_LOCALID: String(task.localId), TARAS_NODEID: String(task.nodeId),
    TARAS_STEP_NODELIST: nodelist, TARAS_STEP_NUM_TASKS: String(layout.tasks.length),
  };
  return { ...base, ...own };
}

/** A step's tasks' time limit: its own (srun -t) within what is left of its job's (null: the job has none). */
const stepLimit = (own: number | undefined, left: number | null): number | null =>
  (left === null ? own ?? null : Math.min(own ?? Infinity, left));

/** The controller's side of the agents for steps (HTTP, signed, in the daemon). */
export interface StepLink {
  startTask(node: string, order: StepTaskOrder): Promise<void>;
  openTaskStream(node: string, jobId: JobId, run: number, stepId: number, task: number): Promise<WebSocket>;
  killTasks(node: string, jobId: JobId, stepId: number | null, reason: string): Promise<void>;
}

export interface StepDeps {
  readonly engine: () => ControllerEngine;
  readonly findJob: (id: JobId) => JobRecord;
  readonly parseId: (raw: string) => JobId;
  readonly link: StepLink;
  readonly killGraceSeconds: () => number;
  readonly log: (line: string) => void;
  /** Where the next step id of each running job is kept across restarts of the controller (none: in memory only). */
  readonly stepIdsFile?: string;
}

/** A task's end as srun reports it. */
export interface TaskEnd {
  readonly task: number;
  readonly node: string;
  readonly state: string;
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly reason: string | null;
}

interface Step {
  readonly jobId: JobId;
  readonly run: number;
  readonly stepId: number;
  readonly user: string;
  readonly layout: StepLayout;
  /** Each task's launch order, made when srun attaches: a step waiting for it holds its environment once, not once per task. */
  readonly orders: () => StepTaskOrder[];
  readonly createdMs: number;
  /** The step's own limit (srun -t), if it asked for one. */
  readonly ownLimitSeconds: number | undefined;
  /** Its tasks' limit: the own one, or what was left of the job's when it was made (again when the job's changes). */
  limitSeconds: number | null;
  /** Whether its limit changed after its tasks' orders were made: resendLimits sends it again. */
  limitChanged: boolean;
  attached: boolean;
  /** Taken up again after a restart of the controller (resumeRoute) with no record of its start (a step-ids.json of an older controller): its tasks keep their limit. */
  readonly startUnknown?: boolean;
  /** Set once srun is attached: ends the step (kills its tasks) with a note to srun. */
  stop?: (note: string) => void;
}

/** A step not attached to within this long is forgotten (nothing of it was started). */
const ATTACH_WITHIN_MS = 30_000;
/** Step tasks (running, or waiting for their srun to attach) one job, and one user, may have at once. */
const MAX_STEP_TASKS_PER_JOB = 256;
const MAX_STEP_TASKS_PER_USER = 1024;
/** A step's environment, names and values (red team: 256 steps of 0.9 MB each held 250 MB for 30 s). */
const MAX_STEP_ENVIRONMENT_CHARS = 256 * 1024;
/**
 * A task whose stream closed before its end (its agent restarted) is reattached to for this long: its agent
 * registers again and its supervisor keeps the task and its output meanwhile (src/agent/steps.ts STEP_GRACE_SECONDS,
 * which is longer). Past it, the task is ended as FAILED and its agent's grace kills it.
 */
export const STEP_REATTACH_MS = 30_000;
/** How often a lost task's stream is tried again. */
const REATTACH_EVERY_MS = 500;
/** Past this many bytes unsent to srun, the tasks' streams are no longer read until it takes them. */
const HIGH_WATER_BYTES = 1024 * 1024;
/** A step being killed: how long its tasks' ends are waited for before those not heard from are ended here (their agent is away). */
const STOP_WAIT_MS = 5000;
/**
 * ...unless srun is still attached and taking their output slowly (a slow reader behind it): then they are waited for
 * while srun makes progress, up to this long after its last (as each supervisor waits for it, src/agent/session.ts),
 * and never longer than this after the kill. Meanwhile the step still counts toward the caps on step tasks.
 */
const PACED_STOP_WAIT_MS = 15 * 60 * 1000;
/** srun's input kept for tasks that have not taken it (srun itself stops reading stdin at 1 MiB not taken by all), in bytes and in frames. */
const INPUT_LOG_BYTES = 2 * 1024 * 1024;
const INPUT_LOG_ENTRIES = 65_536;

const mayRunSteps = (caller: Caller, owner: string): boolean => caller.uid === 0 || caller.user === owner;

/** step-ids.json's key for the live steps' starts (an older controller reads only its job ids' numbers, and skips it). */
const STEP_STARTS_KEY = 'steps';

/** What a restarted controller needs of a live step to give it its job's raised limit: as create() made it. */
interface StepStart {
  readonly run: number;
  readonly createdMs: number;
  readonly ownLimitSeconds: number | undefined;
  readonly limitSeconds: number | null;
  /** Its limit changed after its tasks started (an order that may have been on its way when the controller stopped). */
  readonly limitChanged: boolean;
}

/** A StepStart read from step-ids.json, or null when it is not one (the step then resumes with its start unknown). */
function keptStepStart(value: unknown): StepStart | null {
  if (typeof value !== 'object' || value === null) return null;
  const { run, createdMs, own, limit, changed } = value as Record<string, unknown>;
  const positive = (x: unknown): boolean => Number.isSafeInteger(x) && (x as number) > 0;
  if (!Number.isSafeInteger(run) || (run as number) < 0 || !positive(createdMs)) return null;
  if (own !== undefined && !positive(own)) return null;
  if (limit !== null && !positive(limit)) return null;
  return { run: run as number, createdMs: createdMs as number, ownLimitSeconds: own as number | undefined, limitSeconds: limit as number | null, limitChanged: changed === true };
}

export class JobSteps {
  private readonly nextStep = new Map<JobId, number>();
  /** Live steps' starts read from step-ids.json at this controller's start, by `job.step`, for their resume. */
  private readonly stepStarts = new Map<string, StepStart>();
  private readonly steps = new Map<string, Step>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly deps: StepDeps) {
    if (deps.stepIdsFile !== undefined && existsSync(deps.stepIdsFile)) {
      try {
        const kept = JSON.parse(readFileSync(deps.stepIdsFile, 'utf8')) as Record<string, unknown>;
        for (const [job, next] of Object.entries(kept)) if (Number.isSafeInteger(next) && (next as number) > 0) this.nextStep.set(Number(job) as JobId, next as number);
        // Each live step's start and limits (an older file has none: those steps resume with their start unknown).
        const steps = kept[STEP_STARTS_KEY];
        if (typeof steps === 'object' && steps !== null && !Array.isArray(steps)) {
          for (const [key, start] of Object.entries(steps as Record<string, unknown>)) {
            const known = keptStepStart(start);
            if (/^\d+\.\d+$/.test(key) && known !== null) this.stepStarts.set(key, known);
          }
        }
      } catch (error) {
        deps.log(`could not read the step ids of ${deps.stepIdsFile} (${(error as Error).message}): new steps may be refused by agents holding a step of the same id`);
      }
    }
    this.sweeper = setInterval(() => this.sweep(), 1000);
    this.sweeper.unref();
  }

  close(): void {
    clearInterval(this.sweeper);
    for (const step of this.steps.values()) step.stop?.('the controller is stopping');
  }

  /** The job a step of `caller` runs in (creating or resuming it): theirs (or root's to use), and RUNNING. */
  private runningJobOf(caller: Caller, id: JobId): JobRecord {
    const record = this.deps.findJob(id);
    if (!mayRunSteps(caller, record.user)) throw new RouteError(403, `job ${id} belongs to ${record.user}: only its owner may run steps in it`, 'run srun inside your own jobs');
    if (record.state !== 'RUNNING') {
      throw new RouteError(409, `job ${id} is ${record.state}, not RUNNING: steps run inside a running job`, record.state === 'PENDING' ? `wait for its start (taras when ${id})` : 'submit a new job');
    }
    return record;
  }

  /** POST /jobs/:id/steps: checks and lays out the step; nothing runs until srun attaches. */
  create(caller: Caller, id: JobId, body: StepBody): { jobId: JobId; stepId: number; nodes: string; tasks: readonly StepTask[] } {
    const record = this.runningJobOf(caller, id);
    // A step's environment is held until srun attaches (30 s), once per task: its size is bounded as a program's is.
    const environmentSize = Object.entries(body.env ?? {}).reduce((sum, [name, value]) => sum + name.length + value.length + 2, 0);
    if (environmentSize > MAX_STEP_ENVIRONMENT_CHARS) {
      throw new RouteError(400, `job ${id}: the step's environment has ${environmentSize} characters, more than ${MAX_STEP_ENVIRONMENT_CHARS} (what Linux passes to a program is about as much)`,
        'unset large variables before srun');
    }
    const allocation = this.deps.engine().allocationOf(record);
    const layout = stepLayout(record.nodes, allocation, body);
    if (typeof layout === 'string') throw new RouteError(400, `job ${id}: ${layout}`);
    // As Slurm, a step lives within its job's memory: asking for more is refused, not granted.
    if (body.memoryMiB !== undefined && allocation.memoryMiBPerNode > 0 && body.memoryMiB > allocation.memoryMiBPerNode) {
      throw new RouteError(400, `job ${id}: the step asks for ${body.memoryMiB} MiB of memory per node, more than the job's ${allocation.memoryMiBPerNode} MiB: memory required by the step is not available`,
        `ask for at most ${allocation.memoryMiBPerNode} MiB (--mem ${allocation.memoryMiBPerNode}M), or leave --mem out to use the job's`);
    }
    const nowMs = Date.now();
    const leftSeconds = allocation.endsAtMs === null ? null : Math.ceil((allocation.endsAtMs - nowMs) / 1000);
    if (leftSeconds !== null && leftSeconds <= 0) throw new RouteError(409, `job ${id} has reached its time limit: no step can start in it`);
    const limit = stepLimit(body.timeLimitSeconds, leftSeconds);
    // Each task is a supervisor on its node and a launch order held here: a job, and a user, run a bounded number at once.
    let inJob = 0;
    let ofUser = 0;
    for (const step of this.steps.values()) {
      if (step.jobId === id) inJob += step.layout.tasks.length;
      if (step.user === caller.user) ofUser += step.layout.tasks.length;
    }
    if (inJob + layout.tasks.length > MAX_STEP_TASKS_PER_JOB) {
      throw new RouteError(429, `job ${id} runs ${inJob} step tasks; with ${layout.tasks.length} more it would pass ${MAX_STEP_TASKS_PER_JOB}, the most one job runs at once`, 'wait for some steps to end (srun without & waits), or run fewer tasks');
    }
    if (ofUser + layout.tasks.length > MAX_STEP_TASKS_PER_USER) {
      throw new RouteError(429, `${caller.user} runs ${ofUser} step tasks; with ${layout.tasks.length} more they would pass ${MAX_STEP_TASKS_PER_USER}, the most one user runs at once`, 'wait for some steps to end, or run fewer tasks');
    }
    const stepId = this.nextStep.get(id) ?? 0;
    this.nextStep.set(id, stepId + 1);
    const memory = body.memoryMiB ?? (allocation.memoryMiBPerNode > 0 ? allocation.memoryMiBPerNode : null);
    const step: Step = {
      jobId: id, run: record.requeueCount, stepId, user: caller.user, layout, createdMs: nowMs, attached: false, ownLimitSeconds: body.timeLimitSeconds, limitSeconds: limit, limitChanged: false,
      orders: () => layout.tasks.map((task): StepTaskOrder => ({
        jobId: id, run: record.requeueCount, stepId, task: task.task, user: record.user, ...(allocation.uid === undefined ? {} : { uid: allocation.uid }),
        command: body.command, env: taskEnvironment(body.env, id, stepId, layout, task), workingDir: body.workingDir, umask: body.umask,
        timeLimitSeconds: step.limitSeconds, memoryMiB: memory, killGraceSeconds: this.deps.killGraceSeconds(),
      })),
    };
    this.steps.set(`${id}.${stepId}`, step);
    this.keepStepIds(); // its id and its start, on the disk before the answer
    this.deps.log(`job ${id}: step ${stepId} (${layout.tasks.length} task(s) on ${compressHostlist(layout.nodes)}) for ${caller.user}: ${body.command.join(' ').slice(0, 200)}`);
    return { jobId: id, stepId, nodes: compressHostlist(layout.nodes), tasks: layout.tasks };
  }

  /**
   * The next step id of every running job, on the disk before the step is answered: a restarted controller gives
   * none of a live step's ids again (its srun resumes it: resumeRoute). Jobs no longer running are left out.
   */
  private keepStepIds(): void {
    const file = this.deps.stepIdsFile;
    if (file === undefined) return;
    const kept: Record<string, unknown> = {};
    // Running jobs are the engine's active ones: no read of the store for those that ended.
    const active = this.deps.engine().active;
    for (const [job, next] of [...this.nextStep]) {
      if (active.get(job)?.state === 'RUNNING') kept[String(job)] = next;
      else this.nextStep.delete(job);
    }
    const starts: Record<string, unknown> = {};
    for (const [key, step] of this.steps) {
      if (step.startUnknown === true || active.get(step.jobId)?.state !== 'RUNNING') continue;
      starts[key] = {
        run: step.run, createdMs: step.createdMs, ...(step.ownLimitSeconds === undefined ? {} : { own: step.ownLimitSeconds }), limit: step.limitSeconds, ...(step.limitChanged ? { changed: true } : {}),
      };
    }
    kept[STEP_STARTS_KEY] = starts;
    const temporary = `${file}.tmp`;
    writeFileSync(temporary, JSON.stringify(kept), { mode: 0o600 });
    renameSync(temporary, file);
  }

  /**
   * The job's time limit changed (scontrol update TimeLimit=): each of its steps' tasks gets what is left of the
   * job's from the step's start (its own srun -t if that is less), as when it was made; the agents of its nodes
   * tell the tasks' supervisors, the order retried by the engine until each agent has carried it out (an agent
   * that cannot be reached then gets it once it can: engine.deliverStepLimit). A lowered limit needs nothing
   * here: the job's end kills its steps.
   */
  jobLimitChanged(id: JobId): void {
    let record: JobRecord;
    try {
      record = this.deps.findJob(id);
    } catch {
      return;
    }
    const { endsAtMs } = this.deps.engine().allocationOf(record);
    let changed = false;
    for (const step of this.steps.values()) {
      // A resumed step whose start is not known (a limit from now would be wrong): its tasks keep theirs, within the job's.
      if (step.jobId !== id || step.run !== record.requeueCount || step.startUnknown === true) continue;
      const left = endsAtMs === null ? null : Math.max(1, Math.ceil((endsAtMs - step.createdMs) / 1000));
      const limit = stepLimit(step.ownLimitSeconds, left);
      if (limit === step.limitSeconds) continue;
      step.limitSeconds = limit;
      changed = true;
      if (!step.attached) continue; // its tasks start with it
      step.limitChanged = true;
      this.giveLimit(step, step.layout.nodes);
    }
    if (changed) this.keepStepIds(); // a step resumed after a restart compares the next change with this one
  }

  /** The limit of a step's tasks as it stands; undefined once the step is over (the engine's retries stop). */
  limitOf(id: JobId, stepId: number): number | null | undefined {
    return this.steps.get(`${id}.${stepId}`)?.limitSeconds;
  }

  /**
   * Every running step whose limit changed since its start is given it again: a new engine (a reconfigure)
   * has no record of the orders still on their way. The supervisors take a limit they have as done.
   */
  resendLimits(): void {
    for (const step of this.steps.values()) if (step.attached && step.limitChanged) this.giveLimit(step, step.layout.nodes);
  }

  private giveLimit(step: Step, nodes: readonly string[]): void {
    const engine = this.deps.engine();
    for (const node of nodes) engine.deliverStepLimit(step.jobId, step.run, node, step.stepId);
  }

  /** Every second: steps of jobs that have ended are killed; steps never attached to are forgotten. */
  private sweep(): void {
    const nowMs = Date.now();
    for (const [key, step] of this.steps) {
      if (!step.attached) {
        if (nowMs - step.createdMs > ATTACH_WITHIN_MS) this.steps.delete(key);
        continue;
      }
      let record: JobRecord | null;
      try {
        record = this.deps.findJob(step.jobId);
      } catch {
        record = null;
      }
      if (record === null || record.state !== 'RUNNING' || record.requeueCount !== step.run) {
        step.stop?.(`job ${step.jobId} ended (${record?.state ?? 'gone'}${record?.reason ? `: ${record.reason}` : ''}): its step ${step.stepId} is killed`);
      }
    }
  }

  private killTasks(step: Step, reason: string): void {
    for (const node of step.layout.nodes) {
      this.deps.link.killTasks(node, step.jobId, step.stepId, reason).catch((error: unknown) => {
        this.deps.log(`job ${step.jobId} step ${step.stepId}: could not ask ${node} to kill its tasks (${(error as Error).message}); their time limit ends them`);
      });
    }
  }

  /** The verified caller of a step's route (401 without one) and the job it names. */
  private stepRequest(ctx: RequestContext, doing: string): { caller: Caller; id: JobId } {
    const caller = ctx.caller;
    if (caller === null) throw new RouteError(401, `no verified identity: ${doing} a job step needs to know who you are`, HOW_TO_AUTHENTICATE);
    return { caller, id: this.deps.parseId(ctx.params.id) };
  }

  attachRoute(): UpgradeRoute {
    return {
      method: 'GET', path: '/jobs/:id/steps/:step/attach',
      handler: async (ctx: RequestContext, accept) => {
        const { caller, id } = this.stepRequest(ctx, 'running');
        const key = `${id}.${Number(ctx.params.step)}`;
        const step = this.steps.get(key);
        // Another user's step is theirs, whether it waits or runs: 403 before anything else is said of it.
        if (step !== undefined && step.user !== caller.user) throw new RouteError(403, `step ${ctx.params.step} of job ${id} was asked for by ${step.user}: only they may run it`, 'run srun inside your own jobs');
        if (step === undefined || step.attached) throw new RouteError(404, `no step ${ctx.params.step} of job ${id} waits to start`, 'create it first: POST /jobs/ID/steps (srun inside the job)');
        step.attached = true;
        let client: WebSocket;
        try {
          client = await accept();
        } catch (error) {
          this.steps.delete(key);
          throw error;
        }
        this.run(key, step, client, undefined, ctx.query.get('acks') === 'ends');
      },
    };
  }

  /**
   * `GET /jobs/:id/steps/:step/resume/:nodes` (a WebSocket): srun, whose connection dropped before its step's end (the
   * controller restarted), takes the same step up again. `:nodes` is each task's node in rank order, as srun was told at
   * the step's creation. It is authorised as an attach is: a verified caller, the job's owner or root, the job RUNNING;
   * the nodes must be the job's, and the step must not be live here. Its tasks run already: each one's stream is
   * opened at its agent (signed, as every order) before srun is answered, and a task the agent has no session for
   * (404/409: no such step there) refuses the resume. So a caller reaches only tasks of their own job, which run as
   * the job's user. An agent not registered again yet is a 503: srun asks again (every 0.5 s, for 30 s).
   */
  resumeRoute(): UpgradeRoute {
    return {
      method: 'GET', path: '/jobs/:id/steps/:step/resume/:nodes',
      handler: async (ctx: RequestContext, accept) => {
        const { caller, id } = this.stepRequest(ctx, 'resuming');
        const record = this.runningJobOf(caller, id);
        const stepText = ctx.params.step;
        if (!/^\d{1,9}$/.test(stepText)) throw new RouteError(400, `'${stepText}' is not a step id`);
        const stepId = Number(stepText);
        const key = `${id}.${stepId}`;
        if (this.steps.has(key)) throw new RouteError(409, `step ${stepId} of job ${id} is live here already: it cannot be resumed`, 'srun resumes only a step whose controller restarted');
        const nodeNames = ctx.params.nodes.split(','); // decoded by the router already
        if (nodeNames.length === 0 || nodeNames.length > MAX_STEP_TASKS_PER_JOB) throw new RouteError(400, `a step has 1 to ${MAX_STEP_TASKS_PER_JOB} tasks, not ${nodeNames.length}`);
        const stray = nodeNames.find((node) => !record.nodes.includes(node));
        if (stray !== undefined) throw new RouteError(400, `job ${id} has no node '${stray.slice(0, 64)}': a step's tasks run on its job's nodes`);
        const nodes = record.nodes.filter((node) => nodeNames.includes(node));
        // Tasks whose end srun has already (it acknowledged it, so their supervisors may have left): not opened again.
        const endedText = ctx.query.get('ended') ?? '';
        const endedBySrun = new Set<number>();
        for (const part of endedText === '' ? [] : endedText.split(',')) {
          if (!/^\d{1,4}$/.test(part) || Number(part) >= nodeNames.length) throw new RouteError(400, `'${part.slice(0, 16)}' in ?ended= is not a task of this step (0 to ${nodeNames.length - 1})`);
          endedBySrun.add(Number(part));
        }
        if (endedBySrun.size === nodeNames.length) throw new RouteError(400, `every task of step ${stepId} of job ${id} has ended: nothing to resume`, 'srun has every end already');
        const seen = new Map<string, number>();
        const tasks = nodeNames.map((node, task): StepTask => {
          const localId = seen.get(node) ?? 0;
          seen.set(node, localId + 1);
          return { task, node, nodeId: nodes.indexOf(node), localId };
        });
        const run = record.requeueCount;
        // Every task's stream, open before anything is said to srun: the step must really be on the agents.
        const upstreams = new Map<number, WebSocket>();
        const closeAll = (): void => {
          for (const upstream of upstreams.values()) upstream.terminate();
        };
        // srun acknowledges ends (?acks=ends): each supervisor is told at once, before it could take the controller for an older reader.
        const acksEnds = ctx.query.get('acks') === 'ends';
        try {
          for (const task of tasks) {
            if (endedBySrun.has(task.task)) continue;
            const upstream = await this.deps.link.openTaskStream(task.node, id, run, stepId, task.task);
            upstreams.set(task.task, upstream);
            if (acksEnds) upstream.send(JSON.stringify({ t: 'ack', n: 0, ends: true }));
          }
        } catch (error) {
          closeAll();
          const status = (error as { status?: unknown }).status;
          if (status === 404 || status === 409) {
            throw new RouteError(404, `no step ${stepId} of job ${id} runs on its nodes with this layout: nothing to resume (${(error as Error).message})`);
          }
          throw new RouteError(503, `the agents of step ${stepId} of job ${id} cannot be reached yet (${(error as Error).message})`, 'ask again in a moment: agents register again within seconds of a controller restart',
            { 'retry-after': '1' });
        }
        if (this.steps.has(key)) {
          closeAll();
          throw new RouteError(409, `step ${stepId} of job ${id} was resumed meanwhile`);
        }
        // Its start and limits as the controller before this one made them: its tasks then take the job's raised limit.
        const known = this.stepStarts.get(key);
        this.stepStarts.delete(key);
        const start = known !== undefined && known.run === run ? known : undefined;
        const step: Step = {
          jobId: id, run, stepId, user: record.user, layout: { nodes, tasks, cpusPerTask: 0 }, orders: () => [], createdMs: start?.createdMs ?? Date.now(),
          ownLimitSeconds: start?.ownLimitSeconds, limitSeconds: start?.limitSeconds ?? null, limitChanged: start?.limitChanged ?? false, attached: true,
          ...(start === undefined ? { startUnknown: true } : {}),
        };
        this.steps.set(key, step);
        if ((this.nextStep.get(id) ?? 0) <= stepId) this.nextStep.set(id, stepId + 1);
        this.keepStepIds();
        // A raised limit whose order may have been on its way when the controller stopped: given again (a task takes one it has as done).
        if (step.limitChanged) this.giveLimit(step, nodes);
        let client: WebSocket;
        try {
          client = await accept();
        } catch (error) {
          this.steps.delete(key);
          closeAll();
          throw error;
        }
        this.deps.log(`job ${id}: step ${stepId} (${tasks.length} task(s) on ${compressHostlist(nodes)}) resumed by ${caller.user}`);
        this.run(key, step, client, { upstreams, endedBySrun }, acksEnds);
      },
    };
  }

  /** Starts the tasks, merges their streams for srun, and ends the step when every task has ended. */
  private run(key: string, step: Step, client: WebSocket, resumed: { upstreams: ReadonlyMap<number, WebSocket>; endedBySrun: ReadonlySet<number> } | undefined, acksEnds: boolean): void {
    const orders = resumed === undefined ? step.orders() : [];
    const tasks = step.layout.tasks;
    const { link } = this.deps;
    const ends = new Map<number, TaskEnd>();
    const upstreams = new Map<number, WebSocket>();
    /** Per task, the last output (or end) srun acknowledged: given to the task's stream whenever it is opened (again). */
    const srunAcked = new Map<number, number>();
    /** srun acknowledges task ends (its acks say `ends`; an older srun's do not: the controller acknowledges them as it passes them on). */
    let srunAcksEnds = acksEnds;
    /** Per task, the number of its end passed to srun and not acknowledged yet: acknowledged here if srun goes away first. */
    const endsUnacked = new Map<number, number>();
    const ackFrame = (n: number): string => JSON.stringify({ t: 'ack', n, ...(srunAcksEnds ? { ends: true } : {}) });
    let finished = false;
    /**
     * srun's input and signals, numbered (`i`: by srun; here for an older srun), kept until every task that has not
     * ended has taken them: a task whose stream opens (its start) or opens again (its agent restarted) is sent what
     * it has not taken. A supervisor that says what it took (`inputTaken` in its hello, then `inack` frames) is sent
     * again what it did not say; an older one, what was not sent to it. srun hears each task's word (`inack`) and
     * keeps its input until then, for a resume. Bounded: srun stops reading stdin at 1 MiB not taken, and past
     * INPUT_LOG_BYTES the oldest go.
     */
    const inputLog = new FrameQueue<{ i: number; text: string }>((entry) => entry.text.length);
    let ownInputNumber = 0;
    /** Tasks whose supervisor says what input it took, and what it said; those whose (older) one does not; the last input sent to each. */
    const takesInput = new Set<number>();
    const olderSupervisor = new Set<number>();
    const inputTaken = new Map<number, number>();
    const inputSent = new Map<number, number>();
    const tellTaken = (task: number, i: number): void => send({ t: 'inack', task, i });
    /** Whether srun numbers its input (an older one does not: the supervisors' word is then about nothing it sent). */
    let srunNumbers: boolean | null = null;
    /** The last input a task has: what its supervisor said it took, else (an older supervisor or srun) what was sent to it. */
    const takenBy = (task: number): number => {
      if (takesInput.has(task) && srunNumbers !== false) return inputTaken.get(task) ?? 0;
      if (olderSupervisor.has(task) || srunNumbers === false) return inputSent.get(task) ?? 0;
      return 0; // not heard from yet (its stream's hello): nothing
    };
    /** Input every task still running has taken leaves the log (and what is past its bound). */
    const trimInput = (): void => {
      let upTo = Infinity;
      for (const { task } of tasks) if (!ends.has(task)) upTo = Math.min(upTo, takenBy(task));
      inputLog.dropWhile((entry) => entry.i <= upTo || inputLog.bytes > INPUT_LOG_BYTES || inputLog.length > INPUT_LOG_ENTRIES);
    };
    /** Sends a task's stream the input it has not taken (all of it, for a stream opened the first time). */
    const sendInput = (task: number, upstream: WebSocket): void => {
      const from = takenBy(task);
      for (const entry of inputLog) {
        if (entry.i <= from) continue;
        upstream.send(entry.text);
        inputSent.set(task, entry.i);
      }
      if (olderSupervisor.has(task) && inputSent.has(task)) tellTaken(task, inputSent.get(task)!); // an older supervisor: sent is taken
    };
    /** Frames given to srun's connection, and when it last took one (ws handed it to the system) or acknowledged output. */
    let framesToSrun = 0;
    let srunProgressMs = Date.now();
    /** A frame to srun, as text; every task's stream waits while srun has more than HIGH_WATER_BYTES to take. */
    const sendBytes = (text: string | Buffer): void => {
      if (client.readyState !== client.OPEN) return;
      framesToSrun++;
      sendTracked(client, text, () => {
        srunProgressMs = Date.now();
        if (client.bufferedAmount < HIGH_WATER_BYTES) for (const upstream of upstreams.values()) upstream.resume();
      });
      if (client.bufferedAmount >= HIGH_WATER_BYTES) for (const upstream of upstreams.values()) upstream.pause();
    };
    const send = (frame: object): void => sendBytes(JSON.stringify(frame));
    const finish = (): void => {
      if (finished || ends.size < tasks.length) return;
      finished = true;
      this.steps.delete(key);
      // The ends srun has already (a resume named them) are its own to tell.
      send({ t: 'exit', tasks: [...ends.values()].filter((end) => resumed?.endedBySrun.has(end.task) !== true).sort((a, b) => a.task - b.task) });
      closeWhenSent(client); // srun may be taking its output slowly: what ws holds is not dropped by close()'s 30 s
    };
    /** A task's end (n: its number in the task's stream, from its supervisor): srun gets it now, to keep across a resume and to acknowledge. */
    const ended = (end: TaskEnd, n?: number): void => {
      if (ends.has(end.task)) return;
      ends.set(end.task, end);
      send({ t: 'ended', ...end, ...(n === undefined ? {} : { n }) });
      trimInput(); // it takes no more
      finish();
    };
    let stopping = false;
    step.stop = (note: string) => {
      if (finished || stopping) return; // asked once: the sweep comes back every second until the tasks have ended
      stopping = true;
      send({ t: 'note', text: note });
      this.killTasks(step, note);
      // Tasks that never report (their agent is away) end here, a little after the kill was asked. Those whose streams
      // wait for srun, attached and taking their output slowly, are waited for while it does: their output and real ends
      // are on the way (they were ended CANCELLED and their streams cut after 5 s, dropping the rest of the output).
      let framesBefore = framesToSrun;
      const killedMs = Date.now();
      const giveUpOnSilent = (): void => {
        if (finished) return;
        const nowMs = Date.now();
        const waitingForSrun = client.readyState === client.OPEN && nowMs - srunProgressMs < PACED_STOP_WAIT_MS && nowMs - killedMs < PACED_STOP_WAIT_MS
          && (client.bufferedAmount >= HIGH_WATER_BYTES || framesToSrun !== framesBefore)
          && tasks.some((task) => {
            const upstream = upstreams.get(task.task);
            return !ends.has(task.task) && upstream !== undefined && upstream.readyState === upstream.OPEN;
          });
        framesBefore = framesToSrun;
        if (waitingForSrun) {
          setTimeout(giveUpOnSilent, STOP_WAIT_MS).unref();
          return;
        }
        for (const task of tasks) {
          if (!ends.has(task.task)) ended({ task: task.task, node: task.node, state: 'CANCELLED', exitCode: null, signal: null, reason: note });
        }
        for (const upstream of upstreams.values()) upstream.terminate();
      };
      setTimeout(giveUpOnSilent, STOP_WAIT_MS).unref();
    };
    client.on('message', (data, isBinary) => {
      if (isBinary) return;
      let frame: { t?: unknown };
      // srun's frames are flat: one nested deeper is dropped before JSON.parse (4 MiB of brackets took it 2 s).
      if (nestedDeeperThan(data as Buffer, MAX_BODY_DEPTH)) return;
      try {
        frame = JSON.parse(data.toString());
      } catch {
        return;
      }
      if (frame.t === 'in' || frame.t === 'eof' || frame.t === 'signal') {
        // srun's stdin and signals go to every task (Slurm's default), also to those whose stream opens later.
        const given = (frame as { i?: unknown }).i;
        const numbered = Number.isSafeInteger(given) && (given as number) >= 1;
        srunNumbers ??= numbered;
        let i: number;
        if (numbered) {
          if ((given as number) <= ownInputNumber) return; // once each
          i = given as number;
        } else {
          i = ownInputNumber + 1; // an older srun: numbered here only, its frames passed on as they are
        }
        ownInputNumber = i;
        const text = JSON.stringify(frame);
        inputLog.push({ i, text });
        for (const [task, upstream] of upstreams) {
          if (upstream.readyState !== upstream.OPEN) continue;
          upstream.send(text);
          inputSent.set(task, i);
          if (olderSupervisor.has(task)) tellTaken(task, i);
        }
        trimInput();
      } else if (frame.t === 'ack') {
        // srun has a task's output up to n: its supervisor may forget it (it keeps it until then, for a resume).
        const { task, n, ends: saysEnds } = frame as { task?: unknown; n?: unknown; ends?: unknown };
        if (typeof task !== 'number' || !Number.isSafeInteger(n) || (n as number) < 0 || task < 0 || task >= tasks.length) return;
        if (saysEnds === true) srunAcksEnds = true;
        srunProgressMs = Date.now();
        if ((n as number) >= (srunAcked.get(task) ?? 0)) srunAcked.set(task, n as number);
        if ((endsUnacked.get(task) ?? Infinity) <= (n as number)) endsUnacked.delete(task);
        const upstream = upstreams.get(task);
        if (upstream !== undefined && upstream.readyState === upstream.OPEN) upstream.send(ackFrame(n as number));
      }
    });
    client.on('close', () => {
      // Ends passed to srun that it did not acknowledge: nobody will, so their supervisors may leave now.
      for (const [task, n] of endsUnacked) {
        const upstream = upstreams.get(task);
        if (upstream !== undefined && upstream.readyState === upstream.OPEN) upstream.send(JSON.stringify({ t: 'ack', n }));
      }
      endsUnacked.clear();
      if (!finished) step.stop?.(`srun went away: step ${step.stepId} of job ${step.jobId} is killed`);
    });
    client.on('error', () => undefined);
    client.resume();
    // inputAcks: the tasks' word on srun's input (inack) comes through, so srun may keep its input until then.
    send({ t: 'hello', pty: false, jobId: step.jobId, stepId: step.stepId, nodes: compressHostlist(step.layout.nodes), tasks: step.layout.tasks, inputAcks: true });
    const startTask = async (order: StepTaskOrder): Promise<void> => {
      const node = step.layout.tasks[order.task].node;
      const fail = (reason: string): void => {
        send({ t: 'note', task: order.task, text: `task ${order.task} on ${node}: ${reason}` });
        ended({ task: order.task, node, state: 'FAILED', exitCode: null, signal: null, reason });
      };
      let upstream: WebSocket;
      try {
        await link.startTask(node, order);
        // The job's limit changed while the task was on its way: an order sent before the agent knew it found nothing to tell.
        if (order.timeLimitSeconds !== step.limitSeconds) {
          step.limitChanged = true;
          this.giveLimit(step, [node]);
        }
        upstream = await link.openTaskStream(node, step.jobId, step.run, step.stepId, order.task);
      } catch (error) {
        fail((error as Error).message);
        return;
      }
      if (finished) {
        upstream.terminate();
        return;
      }
      wire(order.task, node, upstream, fail);
    };
    /**
     * The task's stream closed before its end: its agent went away (a crash, an upgrade). The task runs on under
     * its supervisor, which keeps its output while nobody is attached; its stream is opened again once the agent is
     * back (registered again, at its new address), for up to STEP_REATTACH_MS. The supervisor then sends what it
     * kept and, if the task ended meanwhile, its end. Only an agent that does not come back in time, or one that has
     * no session for the task (its supervisor is gone), ends it as FAILED.
     */
    const reattach = async (task: number, node: string, fail: (reason: string) => void): Promise<void> => {
      const deadline = Date.now() + STEP_REATTACH_MS;
      this.deps.log(`job ${step.jobId} step ${step.stepId}: lost the stream of task ${task} on ${node}; reattaching for up to ${STEP_REATTACH_MS / 1000} s`);
      let last = 'its agent did not come back';
      while (!finished && !ends.has(task) && Date.now() < deadline) {
        await new Promise((resolveWait) => setTimeout(resolveWait, REATTACH_EVERY_MS));
        if (finished || ends.has(task)) break;
        let upstream: WebSocket;
        try {
          upstream = await link.openTaskStream(node, step.jobId, step.run, step.stepId, task);
        } catch (error) {
          last = (error as Error).message;
          const status = (error as { status?: unknown }).status;
          // The agent is back and has no session for the task (its supervisor is gone): no use trying again.
          if (status === 404 || status === 409) break;
          continue;
        }
        if (finished || ends.has(task)) {
          upstream.terminate();
          break;
        }
        this.deps.log(`job ${step.jobId} step ${step.stepId}: reattached to task ${task} on ${node}`);
        wire(task, node, upstream, fail);
        return;
      }
      if (!ends.has(task)) fail(`lost the connection to the task before its end, and could not reattach within ${STEP_REATTACH_MS / 1000} s (${last})`);
    };
    /** Per task, the number of the last output frame passed to srun: a reattached supervisor sends again what srun has not acknowledged. */
    const passed = new Map<number, number>();
    /** Whether a task's frame numbered n (undefined: an unnumbered one) is new to srun; noted as passed if so. */
    const firstPass = (task: number, n: number | undefined): boolean => {
      if (n === undefined) return true;
      if (n <= (passed.get(task) ?? 0)) return false;
      passed.set(task, n);
      return true;
    };
    const wire = (task: number, node: string, upstream: WebSocket, fail: (reason: string) => void): void => {
      upstreams.set(task, upstream);
      upstream.on('message', (data, isBinary) => {
        if (isBinary) return;
        // Output, almost every frame: passed on as bytes, with the task's number put in (src/net/output-frame.ts).
        const output = Buffer.isBuffer(data) ? readOutputFrame(data) : null;
        if (output !== null) {
          if (firstPass(task, output.n)) sendBytes(writeOutputFrame({ ...output, task }));
          return;
        }
        let frame: { t?: unknown; d?: unknown; text?: unknown; n?: unknown; i?: unknown; inputTaken?: unknown; state?: unknown; exitCode?: unknown; signal?: unknown; reason?: unknown };
        try {
          frame = JSON.parse(data.toString());
        } catch {
          return;
        }
        // Numbered output (the supervisor's): passed on once, with its number, for srun to acknowledge and to resume from.
        const n = Number.isSafeInteger(frame.n) ? frame.n as number : undefined;
        if (!firstPass(task, n)) return;
        const numbered = n === undefined ? {} : { n };
        if (frame.t === 'hello' || frame.t === 'inack') {
          // What the supervisor took of srun's input (in its hello: it will say so from now on); an older one says nothing.
          const taken = frame.t === 'hello' ? frame.inputTaken : frame.i;
          if (Number.isSafeInteger(taken) && (taken as number) >= 0) {
            takesInput.add(task);
            olderSupervisor.delete(task);
            if ((taken as number) >= (inputTaken.get(task) ?? 0)) inputTaken.set(task, taken as number);
            tellTaken(task, taken as number);
            trimInput();
          } else if (frame.t === 'hello' && !takesInput.has(task)) {
            olderSupervisor.add(task);
            if (inputSent.has(task)) tellTaken(task, inputSent.get(task)!);
            trimInput();
          }
        } else if ((frame.t === 'out' || frame.t === 'err') && typeof frame.d === 'string') send({ t: frame.t, task: task, d: frame.d, ...numbered });
        else if (frame.t === 'note' && typeof frame.text === 'string') send({ t: 'note', task: task, text: frame.text, ...numbered });
        else if (frame.t === 'exit') {
          const end: TaskEnd = {
            task: task, node, state: typeof frame.state === 'string' ? frame.state : 'FAILED', exitCode: typeof frame.exitCode === 'number' ? frame.exitCode : null,
            signal: typeof frame.signal === 'string' ? frame.signal : null, reason: typeof frame.reason === 'string' ? frame.reason : null,
          };
          // Asked before ended(): the step's last end closes srun's connection (finish), and srun's word on it still comes.
          const srunLive = client.readyState === client.OPEN;
          const endedHere = ends.has(task); // by the controller (a kill it gave up on): srun is told no other end
          ended(end, n);
          if (n === undefined) return;
          // srun gone (the step is being killed for it), or an older srun: nobody will acknowledge the end, so the supervisor may leave now.
          if (!srunLive || !srunAcksEnds || endedHere) upstream.send(JSON.stringify({ t: 'ack', n }));
          else endsUnacked.set(task, n);
        }
      });
      upstream.on('close', () => {
        if (upstreams.get(task) === upstream) upstreams.delete(task);
        if (!ends.has(task) && !finished) void reattach(task, node, fail);
      });
      upstream.on('error', () => undefined);
      // What srun has of this task (0: nothing, but it acknowledges): the supervisor forgets it, and waits for srun's word on its end.
      const acked = srunAcked.get(task) ?? (srunAcksEnds ? 0 : undefined);
      if (acked !== undefined) upstream.send(ackFrame(acked));
      sendInput(task, upstream);
      if (client.bufferedAmount < HIGH_WATER_BYTES) upstream.resume();
      else upstream.pause();
    };
    if (resumed === undefined) {
      for (const order of orders) void startTask(order);
      return;
    }
    // A resumed step (the controller restarted): its tasks run already and their streams are open; each sends what it kept.
    for (const task of tasks) {
      if (resumed.endedBySrun.has(task.task)) {
        ends.set(task.task, { task: task.task, node: task.node, state: 'ENDED', exitCode: null, signal: null, reason: null });
        continue;
      }
      const upstream = resumed.upstreams.get(task.task)!;
      const fail = (reason: string): void => {
        send({ t: 'note', task: task.task, text: `task ${task.task} on ${task.node}: ${reason}` });
        ended({ task: task.task, node: task.node, state: 'FAILED', exitCode: null, signal: null, reason });
      };
      wire(task.task, task.node, upstream, fail);
    }
  }
}
