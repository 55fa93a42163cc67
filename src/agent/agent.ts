// `taras agent`: serves one or more nodes (`--virtual 16x8`: sixteen in one
// process, each job still a real process). It registers its nodes with the
// controller and keeps doing so as a heartbeat, starts each job under its own
// supervisor (which outlives the agent), and reports every end with its real
// exit status and end time. A restarted agent re-adopts the job directories
// it finds and reports what happened while it was away. Jobs run as the user
// who submitted them, which takes an agent running as root. Each start draws a
// boot id, given to the controller at registration: the controller's signed
// requests name it, so one captured before a restart is refused after it.

import { randomUUID } from 'node:crypto';
import { createConnection, Socket } from 'node:net';
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { constants as osConstants, userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import type { StartOrder } from '../controller/engine.js';
import { ApiRequestError, createApiClient, daemonPeer, UntrustedPeerError, type ControllerTarget } from '../net/client.js';
import { givenControllerUid } from '../net/controller-uid.js';
import { agentDestination, type ClusterKey } from '../net/hmac.js';
import { lineLog } from '../net/log.js';
import { makeFolder, tightenMode } from '../net/private-files.js';
import { createApiServer, RouteError } from '../net/server.js';
import { relayLines } from '../net/stream.js';
import { detectCgroupMode } from './cgroup.js';
import { jobLaunch } from './environment.js';
import type { WarnSignal } from '../jobspec/types.js';
import { MAX_SIGNAL_NUMBER } from '../api/types.js';
import {
  cancelStartingSupervisor, hasEnded, isAlive, isPositiveOrNull, isSignalName, jobFiles, prepareJobDir, processStartTicks, readStatus, recordNotStarted, requestSignal, requestTimeLimit, SupervisorLauncher, type Result, type SignalName,
  type CheckpointSignals, type SupervisorSpec,
} from './jobdir.js';
import { lookupUser } from './users.js';
import { parseStepOrder, StepTasks } from './steps.js';

export interface AgentOptions {
  readonly controller: ControllerTarget;
  readonly nodes: readonly string[];
  readonly dataDir: string;
  readonly clusterKey: ClusterKey | null;
  /** The longest interval between heartbeats (default 5 s); the controller may ask for shorter ones. */
  readonly heartbeatMs?: number;
  /**
   * How long a job run's directory stays once the controller has acknowledged its end (default 60 s: time
   * to read its supervisor log); then it is removed. The job's output files are the user's and stay.
   */
  readonly keepJobDirsMs?: number;
  readonly log: (line: string) => void;
}

export interface RunningAgent {
  readonly url: string;
  close(): Promise<void>;
}

interface Report {
  jobId: number;
  run: number;
  state: string;
  exitCode: number | null;
  endTimeMs: number | null;
  reason?: string;
  /** What the job used and the signal that ended it (ended runs only). */
  signal?: string | null;
  cpuSeconds?: number | null;
  userCpuSeconds?: number | null;
  systemCpuSeconds?: number | null;
  maxRssKiB?: number | null;
}

const REPORTED = 'reported';

/** Output an interactive job's supervisor keeps while no client is attached. */
const INTERACTIVE_BUFFER_BYTES = 1024 * 1024;
/** How long (x 50 ms) a stream request waits for a just-started job's supervisor to listen: within the controller's 5 s to open the stream. */
const STREAM_WAIT_TRIES = 70;

/** The ids to run a job of `user` with: null for the agent's own user (root's jobs run as root); an error when they cannot be used. */
export function credentialsFor(user: string, verifiedUid?: number): Result<{ uid: number; gid: number } | null> {
  const found = lookupUser(user);
  if (!found.ok) return found;
  // The controller verified the submitter's uid; a node where that name is another uid would run the job as someone else.
  if (verifiedUid !== undefined && found.value.uid !== verifiedUid) {
    return { ok: false, error: `user ${user} is uid ${found.value.uid} on this node but uid ${verifiedUid} where the job was submitted: make the user's uid the same on every node` };
  }
  const agentUid = process.getuid!();
  if (found.value.uid === agentUid) return { ok: true, value: null };
  if (agentUid !== 0) return { ok: false, error: `the agent runs as ${userInfo().username} and cannot start jobs for ${user}; run agents as root` };
  return { ok: true, value: { uid: found.value.uid, gid: found.value.gid } };
}

/** The start order's warning signal as the supervisor takes it: none, or a Node signal name, when and to whom. */
export function warningOf(signal: WarnSignal | null | undefined): Result<Pick<SupervisorSpec, 'warnSignal' | 'warnBeforeSeconds' | 'warnBatchOnly'>> {
  if (signal === null || signal === undefined) return { ok: true, value: { warnSignal: 'SIGUSR1', warnBeforeSeconds: 0, warnBatchOnly: false } };
  const name = /^\d+$/.test(signal.signal)
    ? Object.entries(osConstants.signals).find(([, number]) => number === Number(signal.signal))?.[0]
    : `SIG${signal.signal}`;
  // Only an order from before real-time signals were refused at submission (MAX_SIGNAL_NUMBER) gets here.
  if (name === undefined || !isSignalName(name)) return { ok: false, error: `--signal ${signal.signal}: not a signal Taras can send; use a name such as USR1 or a number from 1 to ${MAX_SIGNAL_NUMBER}` };
  // 0 s before the limit means no warning to the supervisor; sbatch sends it at the limit, so do it a moment before.
  return { ok: true, value: { warnSignal: name, warnBeforeSeconds: Math.max(signal.beforeSeconds, 0.001), warnBatchOnly: signal.batchOnly } };
}

/** What a signal request may carry besides the signal: a preemption (with its grace), a suspend or a resume. */
type SignalExtras = { preempt?: boolean; graceSeconds?: number; reason?: string; suspend?: boolean; resume?: boolean };

/**
 * A checkpointing job's signals for the supervisor, its TARAS_CHECKPOINT_*
 * variables, and on a restart from its checkpoint (the start order's
 * `restart`: the program class's restart action) `-Restart` after its
 * arguments and/or TARAS_RESTART=1 (seed 000 2.4.2).
 */
export function restartOf(order: Pick<StartOrder, 'checkpoint' | 'restart' | 'run'>): { args: string[]; env: Record<string, string>; checkpoint: CheckpointSignals | null } {
  const env: Record<string, string> = { TARAS_RESTART_COUNT: String(order.run), SLURM_RESTART_COUNT: String(order.run) };
  const checkpoint = (order.checkpoint ?? null) as CheckpointSignals | null; // signal names this node checks (parseSpec)
  if (checkpoint !== null) {
    Object.assign(env, {
      TARAS_CHECKPOINT_DURATION: String(checkpoint.durationSeconds), TARAS_CHECKPOINT_SIGNAL: checkpoint.periodicSignal, TARAS_PREEMPT_SIGNAL: checkpoint.preemptSignal,
      ...(checkpoint.intervalSeconds === null ? {} : { TARAS_CHECKPOINT_INTERVAL: String(checkpoint.intervalSeconds) }),
    });
  }
  const action = order.restart ?? null;
  if (action === 'env' || action === 'both') env.TARAS_RESTART = '1';
  return { args: action === 'arg' || action === 'both' ? ['-Restart'] : [], env, checkpoint };
}

/**
 * The job directory (DATA/jobs/ID.RUN): root's (the agent's) and 0700, so no
 * other user, the job's own included, can see the job's environment or plant
 * files in it. What the job reads itself (its script and node file) goes in
 * a folder of its own beside it: makeJobFiles.
 */
export function makeJobDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
}

/** The folder of what a job reads itself, beside its job directory. */
export const jobFilesDir = (dir: string): string => `${resolve(dir)}.files`;

/**
 * DATA/jobs/ID.RUN.files: the job's script and node file, its user's (0700
 * and 0600), in a folder that stays root's: 0710 with the user's primary
 * group, so the job reaches them by name while no one but root can add,
 * remove or list anything there (nothing planted, no disk filled, and root
 * removes it as it removes its own). A folder left from before is removed
 * first.
 */
export function makeJobFiles(dir: string, runAs: { uid: number; gid: number } | null, files: readonly { name: string; text: string; mode: number }[]): string {
  const folder = jobFilesDir(dir);
  rmSync(folder, { recursive: true, force: true });
  mkdirSync(folder, { mode: 0o700 });
  for (const file of files) {
    const path = join(folder, file.name);
    writeFileSync(path, file.text, { mode: file.mode, flag: 'wx' });
    chmodSync(path, file.mode);
    if (runAs !== null) chownSync(path, runAs.uid, runAs.gid);
  }
  if (runAs !== null) {
    chownSync(folder, process.getuid!(), runAs.gid);
    chmodSync(folder, 0o710);
  }
  return folder;
}

export async function startAgent(options: AgentOptions): Promise<RunningAgent> {
  const { log } = options;
  const jobsDir = join(options.dataDir, 'jobs');
  // Searchable, not listable: a job's user reaches its own files folder (script, nodefile) by name only.
  makeFolder(options.dataDir, 0o711, log, 'agent data folder');
  makeFolder(jobsDir, 0o711, log, 'job folder');
  // A supervisor is kept started ahead, so a job starts without waiting for Node to start.
  const launcher = new SupervisorLauncher(join(options.dataDir, 'standby-supervisors.log'));
  const netLog = lineLog(log);
  const controllerText = 'baseUrl' in options.controller ? options.controller.baseUrl : `unix:${options.controller.socketPath}`;
  // Only root's, our own or TARAS_CONTROLLER_UID's process (as the CLI) is taken for the controller: another user's on its
  // port (while it restarts) would get our registration and reports, and its answer's kill list would kill the jobs it names.
  const controllerUid = givenControllerUid();
  const controller = createApiClient({ ...options.controller, peer: options.controller.peer ?? daemonPeer(`the controller ${controllerText}`, () => controllerUid) },
    { clusterKey: options.clusterKey ?? undefined, timeoutMs: 5000 });
  /** Job runs (JOBDIR jobs/ID.RUN) whose end is not yet acknowledged by the controller. */
  const watched = new Map<string, { jobId: number; run: number; dir: string }>();
  const runKey = (jobId: number, run: number) => `${jobId}.${run}`;
  const track = (jobId: number, run: number) => {
    const dir = join(jobsDir, runKey(jobId, run));
    watched.set(runKey(jobId, run), { jobId, run, dir });
    return dir;
  };
  /** Directories of runs whose end the controller has (REPORTED), and since when: removed keepJobDirsMs later. */
  const finalRuns = new Map<string, number>();
  const keepJobDirsMs = options.keepJobDirsMs ?? 60_000;
  /** Removes the directories of final runs whose time is up and whose supervisor has exited (it writes its status, then leaves). */
  const removeFinalRuns = () => {
    for (const [dir, sinceMs] of finalRuns) {
      if (Date.now() - sinceMs < keepJobDirsMs) continue;
      const status = readStatus(dir);
      if (status && isAlive(status.supervisorPid, status.supervisorStartTicks)) continue;
      try {
        rmSync(dir, { recursive: true, force: true });
        rmSync(jobFilesDir(dir), { recursive: true, force: true });
        finalRuns.delete(dir);
      } catch (error) {
        log(`could not remove the job directory ${dir} (${(error as Error).message}); trying again later`);
      }
    }
  };
  /** Supervisors this agent launched: until one writes its status, its pid (and start time: pids are reused) say whether it lives. */
  const launchedPid = new Map<string, { pid: number; startTicks: number | null }>();

  const reportOf = (jobId: number, run: number, dir: string): Report | null => {
    const status = readStatus(dir);
    if (hasEnded(status)) {
      return {
        jobId, run, state: status.state, exitCode: status.exitCode, endTimeMs: Date.parse(status.endTime), reason: status.reason ?? undefined,
        signal: status.signal, cpuSeconds: status.cpuSeconds, userCpuSeconds: status.userCpuSeconds ?? null,
        systemCpuSeconds: status.systemCpuSeconds ?? null, maxRssKiB: status.maxRssKiB,
      };
    }
    if (status && isAlive(status.supervisorPid, status.supervisorStartTicks)) return null;
    const launched = launchedPid.get(runKey(jobId, run));
    if (!status && launched !== undefined && isAlive(launched.pid, launched.startTicks)) return null; // still starting
    // The supervisor is gone without an end status (it was killed): the job's fate is unknown.
    return { jobId, run, state: 'NODE_FAIL', exitCode: null, endTimeMs: Date.now(), reason: 'its supervisor died without recording an end' };
  };
  /** The directory of the latest run of a job this agent knows. */
  const latestRun = (jobId: number) => [...watched.values()].filter((w) => w.jobId === jobId).sort((a, b) => b.run - a.run)[0];

  // Re-adopt what a previous agent left.
  for (const name of readdirSync(jobsDir)) {
    const match = /^(\d+)\.(\d+)$/.exec(name);
    // An older agent made a user's job directory 0710 with the user's group and put the job's script in it:
    // at most that, while its job may still read it; the others at most 0700.
    if (match) tightenMode(join(jobsDir, name), existsSync(join(jobsDir, name, 'script')) ? 0o710 : 0o700, log, 'job directory');
    // A files folder whose job directory is gone (removed just before a crash).
    const files = /^(\d+\.\d+)\.files$/.exec(name);
    if (files && !existsSync(join(jobsDir, files[1]))) rmSync(join(jobsDir, name), { recursive: true, force: true });
    else if (files) tightenMode(join(jobsDir, name), 0o710, log, 'job files folder');
    if (match && !existsSync(join(jobsDir, name, REPORTED))) track(Number(match[1]), Number(match[2]));
    else if (match) finalRuns.set(join(jobsDir, name), Date.now());
  }

  const steps = new StepTasks(jobsDir, launcher, log);
  /** Relays the controller's WebSocket to a session's stream.sock in `dir`, waiting (bounded) for a just-started supervisor to listen. */
  const relayStream = async (dir: string, what: string, accept: () => Promise<import('ws').WebSocket>): Promise<void> => {
    const connect = () => new Promise<Socket | NodeJS.ErrnoException>((resolveSocket) => {
      const connection = createConnection(jobFiles(dir).stream);
      connection.once('connect', () => resolveSocket(connection));
      connection.once('error', resolveSocket);
    });
    // Just started: its supervisor may not listen yet (at most a few seconds).
    let socket = await connect();
    for (let tries = 0; !(socket instanceof Socket) && readStatus(dir) === null && tries < STREAM_WAIT_TRIES; tries++) {
      await new Promise((resolveWait) => setTimeout(resolveWait, 50));
      socket = await connect();
    }
    if (!(socket instanceof Socket)) {
      const status = readStatus(dir);
      throw new RouteError(409, hasEnded(status) ? `${what} has ended (${status.state}${status.reason ? `: ${status.reason}` : ''})` : `${what} has no session here (${socket.code ?? socket.message})`);
    }
    relayLines(await accept(), socket);
  };

  const bootId = randomUUID();
  let destination = '';
  const server = createApiServer({
    destination: () => destination,
    clusterKey: options.clusterKey ?? undefined,
    requireKeyFor: options.clusterKey ? () => true : undefined,
    log: netLog,
    routes: [
      {
        method: 'POST', path: '/start',
        handler: (ctx) => {
          const order = ctx.body as StartOrder & { spec: StartOrder['spec'] & { submitEnv?: Record<string, string>; submitDir?: string } };
          const dir = track(order.jobId, order.run);
          const notStarted = (error: string) => {
            recordNotStarted(dir, order.jobId, error); // reported as the job's end, like any other
            log(`job ${order.jobId} not started: ${error}`);
            return { status: 200, body: { ok: true } };
          };
          const credentials = credentialsFor(order.user, order.uid);
          if (!credentials.ok) return notStarted(credentials.error);
          const runAs = credentials.value;
          // Interactive jobs get no warning signal (no checkpoints: seed 000 2.2.2); their warning is a line on the terminal.
          const warning = warningOf(order.spec.interactive === undefined ? order.warnSignal : null);
          if (!warning.ok) return notStarted(warning.error);
          makeJobDir(dir);
          const nodefilePath = join(jobFilesDir(dir), 'nodefile');
          const scriptPath = join(jobFilesDir(dir), 'script');
          const launch = jobLaunch({
            jobId: order.jobId, user: order.user, nodes: order.nodes, cpusOnNode: order.cpusOnNode, spec: order.spec,
            submitEnv: order.spec.submitEnv ?? {}, submitDir: order.spec.submitDir ?? order.spec.workingDir, nodefilePath,
            ...(order.array === undefined ? {} : { array: order.array }),
            ...(order.partition === undefined ? {} : { partition: order.partition }),
          });
          // The job's user's alone: a script can hold secrets, and the node file says where the job runs.
          try {
            makeJobFiles(dir, runAs, [{ name: 'script', text: order.spec.script.text, mode: 0o700 }, { name: 'nodefile', text: launch.nodefile, mode: 0o600 }]);
          } catch (error) {
            return notStarted(`cannot write the job's script and node file on this node (${(error as Error).message})`);
          }
          const limit = order.spec.timeLimitSeconds;
          const asked = order.spec.interactive;
          // taras alloc: the user's login shell, from this node's passwd.
          const loginShell = (): string => { const found = lookupUser(order.user); return found.ok && found.value.shell !== '' ? found.value.shell : '/bin/sh'; };
          // Interactive jobs take no checkpoints (seed 000 2.2.2): no signals, no restart action.
          const restart = asked === undefined ? restartOf(order) : { args: [] as string[], env: {} as Record<string, string>, checkpoint: null };
          // `taras checkpointed` (and any taras command) inside the job reaches this controller unless the job says otherwise.
          if (launch.env.TARAS_CONTROLLER === undefined) restart.env.TARAS_CONTROLLER = controllerText;
          const args = asked === undefined ? [...order.spec.script.args, ...restart.args] : asked.command.length > 0 ? asked.command : [loginShell()];
          const prepared = prepareJobDir(dir, {
            interactive: asked === undefined ? null : {
              pty: asked.pty, cols: asked.cols ?? 80, rows: asked.rows ?? 24, bufferBytes: INTERACTIVE_BUFFER_BYTES,
              graceSeconds: order.interactive?.graceSeconds ?? 300, idleSeconds: order.interactive?.idleSeconds ?? 0, warnSeconds: order.interactive?.warnSeconds ?? 0,
            },
            jobId: order.jobId, script: scriptPath, args, workingDir: launch.workingDir, env: { ...launch.env, ...restart.env },
            stdoutPath: launch.stdoutPath, stderrPath: launch.stderrPath, memoryMiB: order.spec.memoryMiB ?? null,
            timeLimitSeconds: limit === 'UNLIMITED' ? null : limit, ...warning.value, killGraceSeconds: order.killGraceSeconds,
            umask: order.spec.umask ?? 0o022, ...(order.spec.openMode === undefined ? {} : { openMode: order.spec.openMode }), uid: runAs?.uid ?? null, gid: runAs?.gid ?? null, checkpoint: restart.checkpoint,
          });
          if (!prepared.ok) throw new RouteError(400, `job ${order.jobId}: ${prepared.error}`);
          const launched = launcher.launch(dir);
          if (!launched.ok) throw new RouteError(500, `job ${order.jobId}: ${launched.error}`);
          launchedPid.set(runKey(order.jobId, order.run), { pid: launched.value, startTicks: processStartTicks(launched.value) });
          log(`job ${order.jobId} started on ${order.nodes.join(',')} as ${order.user} (supervisor ${launched.value})`);
          return { status: 200, body: { ok: true } };
        },
      },
      {
        method: 'POST', path: '/steps/start',
        handler: (ctx) => {
          steps.start(parseStepOrder(ctx.body));
          return { status: 200, body: { ok: true } };
        },
      },
      {
        method: 'POST', path: '/steps/kill',
        handler: async (ctx) => {
          const { jobId, stepId, reason } = (ctx.body ?? {}) as { jobId?: unknown; stepId?: unknown; reason?: unknown };
          if (!Number.isSafeInteger(jobId)) throw new RouteError(400, 'steps/kill needs a jobId');
          const killed = await steps.kill(jobId as number, Number.isSafeInteger(stepId) ? stepId as number : null, typeof reason === 'string' ? reason : 'its job ended');
          return { status: 200, body: { ok: true, killed } };
        },
      },
      {
        // A job's time limit was raised: its steps' tasks here take theirs (the controller says what is left of it).
        // A living task not told is a 409: the controller sends the order again until every one has it.
        method: 'POST', path: '/steps/limit',
        handler: async (ctx) => {
          const { jobId, stepId, timeLimitSeconds } = (ctx.body ?? {}) as { jobId?: unknown; stepId?: unknown; timeLimitSeconds?: unknown };
          if (!Number.isSafeInteger(jobId) || !Number.isSafeInteger(stepId) || !isPositiveOrNull(timeLimitSeconds)) {
            throw new RouteError(400, 'steps/limit needs a jobId, a stepId and timeLimitSeconds (a positive number of seconds, or null for none)');
          }
          const told = await steps.setLimit(jobId as number, stepId as number, timeLimitSeconds as number | null);
          return { status: 200, body: { ok: true, told } };
        },
      },
      {
        method: 'POST', path: '/signal',
        handler: async (ctx) => {
          const { jobId, signal, cancel, ...more } = ctx.body as { jobId: number; signal: SignalName; cancel: boolean } & SignalExtras;
          const known = latestRun(jobId);
          if (!known) throw new RouteError(404, `this agent runs no job ${jobId}`);
          const extras: SignalExtras = {
            ...(more.preempt === true ? { preempt: true, graceSeconds: Number(more.graceSeconds ?? 0), reason: String(more.reason ?? 'preempted') } : {}),
            ...(more.suspend === true ? { suspend: true } : {}), ...(more.resume === true ? { resume: true } : {}),
          };
          const reply = await requestSignal(known.dir, signal, { cancel, ...extras });
          const waiting = launchedPid.get(runKey(jobId, known.run));
          if (!reply.ok && cancel && readStatus(known.dir) === null && waiting !== undefined && isAlive(waiting.pid, waiting.startTicks)) {
            // A supervisor still starting the job (or waiting for an interactive job's first client) has no control
            // socket yet: SIGTERM cancels it (it records the cancel, see supervisor.ts stopSignals).
            if (await cancelStartingSupervisor(waiting.pid, waiting.startTicks)) return { status: 200, body: { ok: true, pid: waiting.pid } };
          }
          if (!reply.ok) throw new RouteError(409, reply.error);
          return { status: 200, body: reply };
        },
      },
      {
        // scontrol update TimeLimit= of a running job: its supervisor arms its timers again (a limit already passed: TIMEOUT now).
        method: 'POST', path: '/limit',
        handler: async (ctx) => {
          const { jobId, run, timeLimitSeconds } = (ctx.body ?? {}) as { jobId?: unknown; run?: unknown; timeLimitSeconds?: unknown };
          if (!Number.isSafeInteger(jobId) || !isPositiveOrNull(timeLimitSeconds)) throw new RouteError(400, 'limit needs a jobId and timeLimitSeconds (a positive number of seconds, or null for none)');
          const known = latestRun(jobId as number);
          if (!known || (Number.isSafeInteger(run) && run !== known.run)) throw new RouteError(404, `this agent runs no job ${jobId as number}${Number.isSafeInteger(run) ? ` (run ${run as number})` : ''}`);
          const reply = await requestTimeLimit(known.dir, timeLimitSeconds as number | null);
          if (!reply.ok) throw new RouteError(409, reply.error);
          return { status: 200, body: reply };
        },
      },
    ],
    upgrades: [
      {
        // An interactive job's stream, for the controller (signed like its other requests): relayed to the supervisor's stream.sock.
        method: 'GET', path: '/jobs/:id/stream',
        handler: async (_ctx, accept) => {
          const jobId = Number(_ctx.params.id);
          // ?run=N: a run whose end was reported already (its session waits for a late client) is no longer watched.
          const run = Number(_ctx.query.get('run') ?? NaN);
          const known = Number.isSafeInteger(run) && run >= 0 ? { dir: join(jobsDir, runKey(jobId, run)) } : latestRun(jobId);
          if (!known) throw new RouteError(404, `this agent runs no job ${jobId}`);
          await relayStream(known.dir, `job ${jobId}`, accept);
        },
      },
      {
        // One task of a job step (srun inside a job): the task's supervisor, waiting for the controller to connect its stream.
        method: 'GET', path: '/jobs/:id/steps/:step/:task/stream',
        handler: async (ctx, accept) => {
          const [jobId, stepId, task, run] = [ctx.params.id, ctx.params.step, ctx.params.task, ctx.query.get('run') ?? ''].map(Number);
          if (![jobId, stepId, task, run].every((value) => Number.isSafeInteger(value) && value >= 0)) throw new RouteError(400, 'a step stream needs a job id, step id, task and ?run=N');
          await relayStream(steps.dirOf(jobId, run, stepId, task), `task ${task} of step ${jobId}.${stepId}`, accept);
        },
      },
    ],
  });
  const bound = await server.listen({ port: 0, host: '127.0.0.1' });
  const url = bound.tcp!.url;
  destination = agentDestination(options.nodes, new URL(url).host, bootId);

  const markReported = (reports: readonly Report[]) => {
    for (const report of reports) {
      const key = runKey(report.jobId, report.run);
      const known = watched.get(key);
      if (known) {
        writeFileSync(join(known.dir, REPORTED), '');
        finalRuns.set(known.dir, Date.now());
      }
      watched.delete(key);
      launchedPid.delete(key);
    }
  };
  const endedReports = (): Report[] => {
    const reports: Report[] = [];
    for (const { jobId, run, dir } of watched.values()) {
      const report = reportOf(jobId, run, dir);
      if (report) reports.push(report);
    }
    return reports;
  };

  const maxHeartbeatMs = options.heartbeatMs ?? 5000;
  let heartbeatMs = maxHeartbeatMs;
  let registered = false;
  let lastRefusal = '';
  const register = async () => {
    const reports = endedReports();
    const running = [...watched.values()].filter((w) => !reports.some((r) => r.jobId === w.jobId && r.run === w.run))
      .map(({ jobId, run }) => ({ jobId, run, state: 'RUNNING', exitCode: null, endTimeMs: null }));
    try {
      const answer = await controller.post<{ heartbeatMs?: number; kill?: { jobId: number; run?: number }[] }>(
        // Our uid (signed with the rest): the controller takes only root's, its own or this one's process for this agent.
        '/agent/register', { url, nodes: options.nodes, bootId, reports: [...reports, ...running], ...(process.getuid === undefined ? {} : { uid: process.getuid() }) });
      markReported(reports);
      // Processes of runs the controller has ended or moved elsewhere while this node was away.
      for (const { jobId, run } of answer?.kill ?? []) {
        const known = run === undefined ? latestRun(jobId) : watched.get(runKey(jobId, run));
        if (!known) continue;
        log(`job ${jobId} run ${known.run}: the controller no longer runs it here; killing it`);
        void requestSignal(known.dir, 'SIGKILL', { cancel: true, reason: 'the controller no longer runs this job here' });
      }
      // The controller sets the pace from its node_timeout; ours is the slowest we go.
      const paceMs = answer?.heartbeatMs;
      heartbeatMs = typeof paceMs === 'number' && paceMs > 0 ? Math.min(maxHeartbeatMs, paceMs) : maxHeartbeatMs;
      if (!registered) log(`registered ${options.nodes.length} node(s) with the controller`);
      registered = true;
      lastRefusal = '';
    } catch (error) {
      if (error instanceof ApiRequestError || error instanceof UntrustedPeerError) {
        // The controller answered but refused us (a wrong key, a bad request): say why here too, once until it changes.
        const refusal = error instanceof UntrustedPeerError ? `not registered: ${error.message} (${error.fix})`
          : `the controller refused this agent's registration (HTTP ${error.status}): ${error.error}${error.fix ? ` (${error.fix})` : ''}`;
        if (refusal !== lastRefusal) log(refusal);
        lastRefusal = refusal;
      } else if (registered) {
        log(`controller not reachable: ${(error as Error).message}`);
      }
      registered = false;
    }
  };
  const watch = async () => {
    if (!registered) return;
    const reports = endedReports();
    if (reports.length === 0) return;
    try {
      await controller.post('/agent/report', { reports });
      markReported(reports);
    } catch {
      registered = false; // re-register (with these reports) at the next heartbeat
    }
  };

  let stopped = false;
  let lastBeat = 0;
  const loop = async () => {
    while (!stopped) {
      if (!registered || Date.now() - lastBeat >= heartbeatMs) {
        lastBeat = Date.now();
        await register();
      } else {
        await watch();
      }
      removeFinalRuns();
      steps.sweep();
      await new Promise((resolve) => setTimeout(resolve, registered ? 100 : 500));
    }
  };
  const running = loop();
  log(`agent for ${options.nodes.length} node(s) listening on ${url}`);
  // Say how jobs will be confined: cgroup v2, the v1 hierarchies, or rlimits only.
  const confinement = detectCgroupMode();
  log(`job limits: ${confinement.mode === 'rlimit' ? `rlimits only (${confinement.reason})` : confinement.reason}`);

  return {
    url,
    close: async () => {
      stopped = true;
      launcher.close();
      await running;
      await server.close(500);
      controller.close();
    },
  };
}
