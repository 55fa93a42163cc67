// `taras controller`: the engine behind the JSON API, on loopback TCP and a
// Unix socket, with the agents reached over HTTP. Submissions that arrive
// while the previous batch is being synced are committed in one transaction
// (group commit); every change is answered once it is on the disk; a pass
// runs right after every event and once a second for starts that come due.

import { dirname, join } from 'node:path';
import type { ApiQueue } from '../api/queue.js';
import {
  AgentHeartbeatBodySchema, AgentRegisterBodySchema, AgentReportBodySchema, CancelBodySchema, checkBody, DrainBodySchema, EmptyBodySchema, ReservationBodySchema, ShutdownBodySchema, WhatIfBodySchema,
  formatProblems, HolidayBodySchema, JobIdsBodySchema, LIMITS, MoveBodySchema, StepBodySchema, UpdateBodySchema, UpdateJobsBodySchema, PauseBodySchema, MotdBodySchema, SubmitBodySchema, TokenBodySchema,
} from '../api/schema.js';
import { finishedStates, type ApiCancelResult, type ApiJob, type ApiJobPage, type ApiPartition, type ApiSubmitted, type ApiTestOnly, type JobState } from '../api/types.js';
import type { ClusterConfig } from '../config/cluster.js';
import { jobId, type JobId } from '../core/types.js';
import type { JobSpec } from '../jobspec/types.js';
import { ControllerUnreachableError, createApiClient, daemonPeer, openWebSocket, UntrustedPeerError, type ApiClient, type ControllerTarget } from '../net/client.js';
import { agentDestination, type ClusterKey } from '../net/hmac.js';
import { createAuthenticator, HOW_TO_AUTHENTICATE, issueToken, loadOrCreateJwtKey, MAX_TOKEN_SECONDS, type Caller } from '../net/identity.js';
import { perUserShare } from '../net/guard.js';
import { lineLog } from '../net/log.js';
import { makeFolder, octal, setMode, unreachableFolderOf } from '../net/private-files.js';
import { nativeAddon } from '../net/native.js';
import { createApiServer, JsonPieces, RouteError, type RequestContext, type Route } from '../net/server.js';
import { isEndState, JOB_STATES, type EndState, type JobRecord } from '../store/events.js';
import { damagedStoreError, isDamagedDatabase, openStore, type Store } from '../store/store.js';
import { admissionWarning, AgentAnswerLost, AgentUnreachable, ControllerEngine, SubmitRefused, type AgentLink, type SignalExtras, type StartOrder, type Submission } from './engine.js';
import { HeavyReads, LimitRefused, SubmitLimits, UserTurns } from './limits.js';
import { arrayTaskOf, arrayTaskTotal, resolveJobRef, scriptOf, sharedTaskOf, taskCount } from './arrays.js';
import { attachRoute } from './interactive.js';
import { JobSteps } from './steps.js';
import { Mailer, mailSettingsOf } from './mail.js';
import type { StepTaskOrder } from '../agent/steps.js';
import type { StepBody } from '../api/schema.js';
import { accountingRoutes } from './accounting.js';
import { checkEventLogPath, EventLog } from './event-log.js';
import { lockDataDir } from './lock.js';
import { isAdmin, mayActOn, publicJob } from './authz.js';
import { admittedDeadline, apiDeadline, apiJob, apiJobWithEvents, apiNodePieces, apiNodes, apiPlan, apiReservation, apiStatus, apiWhatIf, apiWhen, queueBuild } from './views.js';
import { isoTime } from '../api/durations.js';
import { setImmediate as nextTurn } from 'node:timers/promises';

export interface ControllerOptions {
  readonly config: ClusterConfig;
  /** The file the configuration came from: `admin reconfigure` re-reads it (null: embedded defaults). */
  readonly configPath?: string | null;
  readonly clusterKey: ClusterKey | null;
  readonly log: (line: string) => void;
  /** Listen on this TCP port (0: ephemeral, for tests); default from the config. */
  readonly port?: number;
  /** A heavy read shorter than this never makes its user wait (limits.ts HeavyReads; default 50 ms; tests pass 0). */
  readonly heavyReadFloorMs?: number;
}

export interface RunningController {
  readonly url: string;
  readonly socketPath: string;
  /** The engine in force (a reconfigure replaces it). */
  engine(): ControllerEngine;
  close(): Promise<void>;
}

/** How long a submission's idempotency key is remembered (a retry comes within seconds). */
const IDEMPOTENCY_KEY_MS = 24 * 3600 * 1000;
/**
 * Scheduling passes run at most this often (as Slurm's sched_min_interval): a pass
 * after a change that comes sooner waits for the rest of the interval, and plans
 * everything that arrived meanwhile at once.
 */
const MIN_PASS_INTERVAL_MS = 10;
/**
 * The longest a submission waits for others to share its commit (PostgreSQL's commit_delay). With 8
 * clients on the 2-core test machine the last of a batch's clients is back 1.2 to 1.5 ms after its
 * answer: with 1 ms, 13 to 15 % of batches went before all of them were back, with 2 ms 2 to 3 %.
 */
const COMMIT_DELAY_MS = 2;
/** Jobs an action on many (cancel, hold, release) takes in one turn of the event loop: 30 to 60 ms of cancels on the 2-core machine. */
const BULK_SLICE = 1_000;

/** What a submission's 400 asks for: API clients by the schema, users of taras submit or sbatch by what they typed. */
const SUBMIT_EXAMPLE = '{"spec": {...}} with the fields src/api/schema.ts describes (from taras submit or sbatch: change the flag or directive that sets that field)';

/** The fix of a 410 for a purged script. */
const PURGED_SCRIPT_FIX = 'keep your own copy of scripts you need again; an administrator may raise keep_finished in cluster.toml (Slurm\'s MinJobAge)';

/** The body, checked against its schema: a 400 naming each bad field and what it takes, before anything is done. */
function bodyOf<S extends Parameters<typeof checkBody>[0]>(schema: S, ctx: RequestContext, example: string) {
  const body = ctx.body;
  // No body at all is the schema's to judge (some routes take none); anything but an object is not.
  if (body !== undefined && (body === null || typeof body !== 'object' || Array.isArray(body))) {
    const got = body === null ? 'null' : Array.isArray(body) ? `a list of ${body.length}` : `a ${typeof body}`;
    throw new RouteError(400, `the request body must be a JSON object, and this request has ${got}`, `send ${example}; nothing was changed`);
  }
  const checked = checkBody(schema, body);
  if (!checked.ok) throw new RouteError(400, `the request body is not valid: ${formatProblems(checked.problems)}`, `send ${example}; nothing was changed`);
  return checked.value;
}

/** Agents by node: where to reach each node's agent, and whom requests there are signed for (its nodes, address and boot id). */
class HttpAgents implements AgentLink {
  private readonly clients = new Map<string, { client: ApiClient; destination: string }>();
  private readonly byNode = new Map<string, string>();
  private readonly destinations = new Map<string, string>();
  /** The uid each agent's signed registration gave: its address is taken for it only with a process of root's, ours or this uid behind it. */
  private readonly uids = new Map<string, number>();

  /** @param durable resolves once the controller's commits so far are on the disk: no order leaves before what it follows from. */
  constructor(private readonly clusterKey: ClusterKey | null, private readonly durable: () => Promise<void>) {}

  register(url: string, nodes: readonly string[], bootId: string, uid?: number): void {
    for (const node of nodes) this.byNode.set(node, url);
    this.destinations.set(url, agentDestination(nodes, new URL(url).host, bootId));
    if (uid === undefined) this.uids.delete(url);
    else this.uids.set(url, uid);
  }

  /** The agent at `url`, checked once connected (net/client.ts daemonPeer): another user's process on a dead agent's port gets no order. */
  private target(url: string): ControllerTarget {
    return { baseUrl: url, peer: daemonPeer(`the agent at ${url}`, () => this.uids.get(url)), agent: true };
  }

  private client(node: string): ApiClient {
    const url = this.byNode.get(node);
    if (!url) throw new Error(`no agent has registered node ${node}`);
    const destination = this.destinations.get(url)!;
    const known = this.clients.get(url);
    if (known?.destination === destination) return known.client;
    known?.client.close(); // the agent at this address restarted: a new boot id
    const client = createApiClient(this.target(url), { clusterKey: this.clusterKey ?? undefined, destination });
    this.clients.set(url, { client, destination });
    return client;
  }

  async start(order: StartOrder): Promise<void> {
    const node = order.nodes[0];
    if (!this.byNode.has(node)) throw new AgentUnreachable(`no agent has registered node ${node}`, 'NOAGENT');
    const client = this.client(node);
    await this.durable();
    try {
      await client.post('/start', order);
    } catch (error) {
      // No answer: the order may not have arrived (the engine requeues the job). An answer is the agent's refusal.
      // Another user's process on the agent's port: nothing was sent to it.
      if (error instanceof UntrustedPeerError) throw new AgentUnreachable(error.message, 'UNTRUSTED');
      if (error instanceof ControllerUnreachableError) {
        // Never connected: the order did not arrive. Reset or timed out once sent: it may have.
        if (error.neverSent) throw new AgentUnreachable(`the agent at ${this.byNode.get(node)} could not be reached (${error.code})`, error.code);
        throw new AgentAnswerLost(`the agent at ${this.byNode.get(node)} did not answer (${error.code})`, error.code);
      }
      throw error;
    }
  }

  /** An interactive job's stream at its node's agent, signed for that agent (src/controller/interactive.ts). */
  async openStream(node: string, id: JobId, run: number): Promise<import('ws').WebSocket> {
    return this.openSocket(node, `/jobs/${id}/stream?run=${run}`);
  }

  /** A WebSocket to `path` at the agent of `node`, signed for that agent. */
  private async openSocket(node: string, path: string): Promise<import('ws').WebSocket> {
    const url = this.byNode.get(node);
    if (!url) throw new Error(`no agent has registered node ${node}`);
    return openWebSocket(this.target(url), path, { clusterKey: this.clusterKey ?? undefined, destination: this.destinations.get(url)!, timeoutMs: 5000 });
  }

  /** One task of a job step (src/controller/steps.ts), started at its node's agent; it runs once its stream is open. */
  async startTask(node: string, order: StepTaskOrder): Promise<void> {
    await this.client(node).post('/steps/start', order);
  }

  async openTaskStream(node: string, id: JobId, run: number, stepId: number, task: number): Promise<import('ws').WebSocket> {
    return this.openSocket(node, `/jobs/${id}/steps/${stepId}/${task}/stream?run=${run}`);
  }

  async killTasks(node: string, id: JobId, stepId: number | null, reason: string): Promise<void> {
    await this.client(node).post('/steps/kill', { jobId: id, ...(stepId === null ? {} : { stepId }), reason });
  }

  async setTaskLimit(node: string, id: JobId, stepId: number, seconds: number | null): Promise<void> {
    // As the job's own limit order: not before the change it follows from is on the disk.
    const client = this.client(node);
    await this.durable();
    await client.post('/steps/limit', { jobId: id, stepId, timeLimitSeconds: seconds });
  }

  async signal(node: string, id: JobId, signal: string, cancel: boolean, extras: SignalExtras = {}): Promise<void> {
    const client = this.client(node);
    await this.durable();
    await client.post('/signal', { jobId: id, signal, cancel, ...extras });
  }

  /** A running job's new time limit (null: none), for the supervisor of its run `run` on `node`. */
  async setTimeLimit(node: string, id: JobId, run: number, seconds: number | null): Promise<void> {
    const client = this.client(node);
    await this.durable();
    await client.post('/limit', { jobId: id, run, timeLimitSeconds: seconds });
  }

  close(): void {
    for (const { client } of this.clients.values()) client.close();
  }
}

const parseId = (ctx: RequestContext): JobId => {
  // Digits only (Number() would also read 0x2, 1e0 and " 1" as ids).
  const id = /^[1-9]\d{0,15}$/.test(ctx.params.id) ? Number(ctx.params.id) : NaN;
  if (!Number.isSafeInteger(id)) throw new RouteError(400, `'${ctx.params.id}' is not a job id`, 'job ids are positive integers, as `taras queue` shows them (ARRAYID_TASK for a task of an array)');
  return jobId(id);
};

/** `GET /jobs` pages: at most this many jobs per answer (the default too). */
const MAX_PAGE_JOBS = 1000;

/** `?after=ID&limit=N`: the cursor (0: from the start) and the page size, at most MAX_PAGE_JOBS. */
const pageOf = (ctx: RequestContext): { after: number; limit: number } => {
  const number = (name: string, fallback: number, min: number): number => {
    const text = ctx.query.get(name);
    if (text === null) return fallback;
    const value = /^\d{1,15}$/.test(text) ? Number(text) : NaN;
    if (!(value >= min)) throw new RouteError(400, `'${name}=${text}' is not a whole number of at least ${min}`, `give ${name} as a number, e.g. ?after=0&limit=${MAX_PAGE_JOBS}; the answer's "next" is the next page's after`);
    return value;
  };
  return { after: number('after', 0, 0), limit: Math.min(MAX_PAGE_JOBS, number('limit', MAX_PAGE_JOBS, 1)) };
};

/** The verified caller; 401 for an anonymous request. */
const callerOf = (ctx: RequestContext): Caller => {
  if (!ctx.caller) throw new RouteError(401, `no verified identity: ${ctx.method} ${ctx.path} needs to know who you are`, HOW_TO_AUTHENTICATE);
  return ctx.caller;
};

/** Routes an anonymous caller may use: the controller's status (the CLI finds the socket through it). Agents sign with the cluster key. */
const openToAnonymous = (route: Route): boolean => (route.method === 'GET' && route.path === '/status') || route.path.startsWith('/agent/');

/** Default lifespan of `taras admin token` (scontrol token's default). */
const DEFAULT_TOKEN_SECONDS = 1800;

/**
 * The database as no other user may read it (every user's scripts and
 * environments are in it): taras.db, its -wal and -shm 0600, looser modes
 * left by an older Taras tightened with a log line. Its folder is made private
 * by startController (0700, or 0711 when the socket is in it).
 */
function openPrivateStore(path: string, log: (line: string) => void) {
  for (const file of [path, `${path}-wal`, `${path}-shm`]) setMode(file, 0o600, log, 'database file');
  // SQLite creates the -wal and -shm files with the database file's mode, and that one under the umask.
  const umask = process.umask(0o077);
  try {
    return openStore(path);
  } finally {
    process.umask(umask);
  }
}

/** Runs a generator to its end, a whole turn of the event loop after each pause: others are served meanwhile. */
async function runSliced<T>(build: Generator<void, T, void>): Promise<T> {
  for (;;) {
    const step = build.next();
    if (step.done === true) return step.value;
    await nextTurn();
  }
}

export async function startController(options: ControllerOptions): Promise<RunningController> {
  let { config } = options;
  const { log } = options;
  // Private (every user's scripts are in the database); searchable only when it holds the socket users must reach.
  makeFolder(config.dataDir, dirname(config.socketPath) === config.dataDir ? 0o711 : 0o700, log, 'data folder');
  // A folder others may write would let them aim the event log at a file of root's: refused before anything starts.
  if (config.eventLog !== undefined) checkEventLogPath(config.eventLog);
  // Before the database is opened: a second controller on it is refused with the first one's pid.
  const lock = lockDataDir(config.dataDir);
  const storePath = join(config.dataDir, 'taras.db');
  let store: Store;
  let jwtKey: Uint8Array;
  try {
    jwtKey = loadOrCreateJwtKey(config.jwtKeyPath);
    store = openPrivateStore(storePath, log);
  } catch (error) {
    lock.release();
    throw error;
  }
  // A disk that refuses a sync stops the controller: nothing it holds in memory may be acknowledged any more.
  const durable = (options?: { now?: boolean }) => store.durable(options).catch((error: unknown) => {
    if (store.isOpen) { // not a controller that is shutting down
      log(`fatal: ${(error as Error).message}`);
      setImmediate(() => process.exit(70));
    }
    throw error;
  });
  // So does a many-job action whose commit failed after the engine acted on its writes (Store.batch): the
  // engine's memory is ahead of the file, and a start from the file is the only state to trust.
  store.batchAbortedListeners.push((error) => {
    if (!store.isOpen) return;
    log(`fatal: a many-job action could not be stored, and the controller's memory is ahead of ${storePath}: ${(error as Error).message}; stopping (a start recovers from the file)`);
    setImmediate(() => process.exit(70));
  });
  const agents = new HttpAgents(options.clusterKey, durable);
  let engine: ControllerEngine;
  try {
    // A stored job this configuration can never run ends FAILED (logged) rather than stopping the start.
    engine = new ControllerEngine(config, store, agents, Date.now, log, 'fail');
  } catch (error) {
    // A truncated file can open cleanly and fail only when recovery reads the pages that are gone.
    store.close();
    lock.release();
    throw isDamagedDatabase(error) ? damagedStoreError(storePath, error) : error;
  }
  // Retention (README "Limits"): a finished job's script, arguments and environment are purged from the
  // database keep_finished after its end (Slurm's MinJobAge), at once for a job that never started. Every
  // second, slices of at most 20 ms while there is work, at most 5, with the API served between them: a
  // backlog (an old database, a flood of cancels of 1 MiB scripts) takes at most a tenth of the controller.
  const purgeFinished = (slice = 1): void => {
    if (!store.isOpen) return;
    const now = Date.now();
    try {
      const purged = store.purgeFinished({ ranEndedByMs: now - engine.config.keepFinishedSeconds * 1000, pendingEndedByMs: now, nowMs: now, arrayTasks: arrayTaskTotal });
      if (purged > 0 && slice < 5) setImmediate(() => purgeFinished(slice + 1));
    } catch (error) {
      log(`purging finished jobs' scripts failed (tried again in a second): ${(error as Error).message}`);
    }
  };
  // Keys older than a day are forgotten at start and every hour after (a long-running controller too).
  let keysForgottenAtMs = Date.now();
  store.forgetKeysBefore(keysForgottenAtMs - IDEMPOTENCY_KEY_MS);
  // The event log (cluster.toml's event_log): job events as the store commits them, startup, shutdown, errors.
  const eventLog = config.eventLog === undefined ? null : new EventLog(config.eventLog, log);
  if (eventLog !== null) {
    store.committedListeners.push(eventLog.onJobEvent);
    eventLog.record('startup', { jobs: [...engine.active.keys()] });
  }
  // Mail about jobs (--mail-type): sent once each event is on the disk.
  const mailer = new Mailer(mailSettingsOf(config), (id) => engine.recordOf(jobId(id)), log);
  store.committedListeners.push(mailer.onJobEvent);
  engine.onDependencyNeverSatisfied = mailer.invalidDependency;
  mailer.checkTimeLimits(Date.now(), true, engine.active.values());
  const netLog = eventLog === null ? lineLog(log) : { ...lineLog(log), error: (line: string) => {
    log(line);
    eventLog.record('error', { error: line });
  } };

  // A pass runs soon after every change, but at most once per MIN_PASS_INTERVAL_MS: during a burst
  // of submissions one pass plans every job that arrived since the last, instead of one per commit.
  let scheduled: NodeJS.Timeout | NodeJS.Immediate | null = null;
  let lastPassAt = -Infinity;
  /** An action on many jobs is in progress (inSlices, one at a time): no pass until it is done, so no job of its set starts meanwhile. */
  let slicing = false;
  let passWaiting = false;
  const pass = () => {
    scheduled = null;
    if (slicing) {
      passWaiting = true;
      return;
    }
    lastPassAt = performance.now();
    try {
      engine.schedule();
    } catch (error) {
      log(`scheduling pass failed: ${(error as Error).stack}`);
    }
  };
  const kick = () => {
    if (scheduled !== null) return;
    const wait = lastPassAt + MIN_PASS_INTERVAL_MS - performance.now();
    scheduled = wait > 0 ? setTimeout(pass, wait) : setImmediate(pass);
  };

  /**
   * An action on many jobs (`taras cancel --all`, `scontrol hold|release` of a range): up to BULK_SLICE jobs in a
   * turn of the event loop, each slice its own transaction, so that other users' requests are answered in
   * between (50,000 cancels held the controller 1.5 s in one turn). No scheduling pass runs until the last slice
   * is done: a pending job of the set never starts meanwhile. Such actions go one at a time, with the pass that
   * waited run between two, so that back-to-back actions on many jobs cannot keep every job from starting.
   * `order` gives the ids in the order to act on them; the answers come back in the order of `ids`, each id
   * once. The answer waits for the last slice on the disk (durableRoutes); a controller that dies in between
   * has done the slices before (none was answered).
   */
  let slicedLine: Promise<unknown> = Promise.resolve();
  const inSlices = async <R>(ids: readonly JobId[], act: (slice: readonly JobId[]) => R[], order: (ids: readonly JobId[]) => readonly JobId[] = (all) => all): Promise<R[]> => {
    const unique = [...new Set(ids)];
    if (unique.length <= BULK_SLICE) return store.batch(() => act(unique));
    const sliced = async (): Promise<R[]> => {
      const ordered = order(unique);
      const results = new Map<JobId, R>();
      slicing = true;
      try {
        for (let at = 0; at < ordered.length; at += BULK_SLICE) {
          if (at > 0) await new Promise((resolveTurn) => setImmediate(resolveTurn));
          const slice = ordered.slice(at, at + BULK_SLICE);
          const answers = store.batch(() => act(slice));
          slice.forEach((id, index) => results.set(id, answers[index]));
        }
      } finally {
        slicing = false;
        if (passWaiting) {
          passWaiting = false;
          pass(); // before the next such action begins
        }
      }
      return unique.map((id) => results.get(id)!);
    };
    const turn = slicedLine.then(sliced);
    slicedLine = turn.catch(() => undefined);
    return turn;
  };

  // Group commit: one transaction and one sync for every submission that arrived while the previous batch
  // was being stored (engine.acceptEach, then durable({ now: true })). Each submission is checked on its own before it
  // joins a batch, and answered on its own once the batch is on the disk: one that is refused (or that the
  // engine refuses at the commit) never fails the others committed with it.
  let batch: (Submission & { resolve: (id: JobId) => void; reject: (e: Error) => void })[] = [];
  let storing = false;
  /** The waiting batch goes once it holds this many submissions, or COMMIT_DELAY_MS after its first. */
  let gather = 0;
  let delay: NodeJS.Timeout | null = null;
  const flush = async () => {
    const jobs = batch;
    batch = [];
    batchedByUser.clear(); // queued by acceptEach (engine.pendingOf counts them), or not stored
    batchedScriptsByUser.clear();
    let outcomes;
    try {
      outcomes = engine.acceptEach(jobs);
    } catch (error) {
      // The transaction failed as a whole (the disk): nothing of this batch is stored.
      for (const job of jobs) job.reject(error as Error);
      return;
    }
    kick();
    try {
      // A failed sync stops the controller (the durable wrapper above); nothing of the batch is acknowledged.
      // (Start orders for the batch's jobs wait for the sync too: HttpAgents sends after durable().)
      await durable({ now: true });
    } catch (error) {
      for (const job of jobs) job.reject(error as Error);
      return;
    }
    jobs.forEach((job, index) => {
      const outcome = outcomes[index];
      if ('refused' in outcome) job.reject(outcome.refused);
      else job.resolve(outcome.id);
    });
  };
  /** Stores the waiting batch unless one is being stored (then it goes once that one is on the disk). */
  const flushNext = () => {
    if (storing || batch.length === 0) return;
    if (delay !== null) clearTimeout(delay);
    delay = null;
    const answering = batch.length;
    storing = true;
    gather = 0;
    void flush().finally(() => {
      storing = false;
      // Those just answered mostly submit again at once (a script, a client library): the next batch
      // waits for as many as came back, at most COMMIT_DELAY_MS, so that one commit and one sync
      // serve them and those already waiting, rather than each half of them in turn.
      gather = batch.length + answering;
      if (batch.length === 0) return;
      if (batch.length >= gather) flushNext();
      else delay = setTimeout(flushNext, COMMIT_DELAY_MS);
    });
  };
  // Per-user caps: pending jobs include those accepted into the batch but not yet committed, so a
  // burst that lands in one batch cannot pass the cap.
  const limits = new SubmitLimits(() => engine.config);
  const batchedByUser = new Map<string, number>();
  const batchedScriptsByUser = new Map<string, number>();
  /** Submissions whose key is in a batch not yet answered: a retry that arrives meanwhile waits for the same answer. */
  const keysInFlight = new Map<string, Promise<JobId>>();
  const submitOne = (submission: Submission): Promise<JobId> => {
    const { user, idempotencyKey } = submission;
    const flightKey = idempotencyKey === undefined ? undefined : `${user}\n${idempotencyKey}`;
    if (flightKey !== undefined) {
      const inFlight = keysInFlight.get(flightKey);
      if (inFlight) return inFlight;
      const stored = store.jobForKey(user, idempotencyKey!);
      if (stored !== undefined) return Promise.resolve(stored);
    }
    const answer = new Promise<JobId>((resolve, reject) => {
      // Bytes, as the cap is written ("128M") and as the script's file holds them.
      const scriptBytes = Buffer.byteLength(submission.spec.script.text);
      try {
        limits.admit(user, engine.pendingOf(user) + (batchedByUser.get(user) ?? 0), taskCount(submission.spec, engine.config),
          { pending: engine.pendingScriptsOf(user) + (batchedScriptsByUser.get(user) ?? 0), added: scriptBytes });
      } catch (error) {
        return reject(error);
      }
      const reasons = engine.submissionRefusals(submission.spec);
      // After the key lookup (a retry is answered whatever the reservation is now) and the cluster's own checks.
      if (reasons.length === 0) reasons.push(...engine.reservationRefusals(submission.spec, submission.mayUseReservation ?? (() => false)));
      if (reasons.length > 0) return reject(new SubmitRefused(reasons));
      // Group commit: the submissions that arrive while a batch is being stored share the next one.
      batch.push({ ...submission, resolve, reject });
      if (!storing) {
        // Enough to go: with the others that arrive in this turn of the event loop. Else wait, but not long.
        if (batch.length === Math.max(gather, 1)) setImmediate(flushNext);
        else if (delay === null) delay = setTimeout(flushNext, COMMIT_DELAY_MS);
      }
      batchedByUser.set(user, (batchedByUser.get(user) ?? 0) + taskCount(submission.spec, engine.config));
      batchedScriptsByUser.set(user, (batchedScriptsByUser.get(user) ?? 0) + scriptBytes);
    });
    if (flightKey !== undefined) {
      keysInFlight.set(flightKey, answer);
      const forget = () => keysInFlight.delete(flightKey);
      answer.then(forget, forget);
    }
    return answer;
  };

  const knownAgents = new Set<string>();
  const motd = () => (store.setting('motd') as string | undefined) ?? null;
  /** Active jobs and those finished within the retention time, filtered. */
  const visibleRecords = (filter: { user?: string; states?: JobState[] }): JobRecord[] => {
    const cutoff = Date.now() - config.keepFinishedSeconds * 1000;
    const wantsFinished = filter.states === undefined || filter.states.some((state) => finishedStates.includes(state));
    const records = [...engine.active.values(), ...(wantsFinished ? store.jobs({ states: [...finishedStates], endedSinceMs: cutoff }) : [])];
    return records.filter((r) => (filter.user === undefined || r.user === filter.user) && (filter.states === undefined || filter.states.includes(r.state)));
  };
  /** The first `limit` visible records with an id above `after`, by id, and the cursor of the next page (null: none). */
  const visiblePage = (filter: { user?: string; states?: JobState[]; arrayId?: number }, after: number, limit: number): { records: JobRecord[]; next: number | null } => {
    const wanted = (r: JobRecord) => r.id > after && (filter.user === undefined || r.user === filter.user);
    // An array's tasks not ended are kept by array: a page of them does not walk the whole queue.
    const candidates = filter.arrayId === undefined ? engine.active.inStates(filter.states)
      : [...engine.active.activeTasksOf(filter.arrayId)].map((id) => engine.active.get(id)!).filter((r) => filter.states === undefined || filter.states.includes(r.state));
    const active = candidates.filter(wanted).sort((a, b) => a.id - b.id).slice(0, limit + 1);
    const finished = filter.states === undefined ? [...finishedStates] : filter.states.filter((state) => finishedStates.includes(state));
    const ended = finished.length === 0 ? [] : store.jobs({
      user: filter.user, states: finished, endedSinceMs: Date.now() - config.keepFinishedSeconds * 1000, afterId: after, limit: limit + 1, arrayId: filter.arrayId,
    });
    const merged = [...active, ...ended].sort((a, b) => a.id - b.id);
    const records = merged.slice(0, limit);
    return { records, next: merged.length > limit ? records[records.length - 1].id : null };
  };
  let queueCache: { engine: ControllerEngine; key: string; queue: Promise<ApiQueue> } | null = null;
  const listFilter = (ctx: RequestContext) => {
    // Every word must be a job state (a word that is none is a 400, as squeue -t refuses it).
    const states = ctx.query.get('state')?.toUpperCase().split(',').filter((word) => word !== '') as JobState[] | undefined;
    const unknown = states?.find((state) => !JOB_STATES.includes(state));
    if (unknown !== undefined) throw new RouteError(400, `state=${unknown} is not a job state`, `give states from ${JOB_STATES.join(', ')}, separated by commas`);
    return { user: ctx.query.get('user') ?? undefined, states };
  };
  /** GET /jobs's `?array=12`: the array's id (its tasks only), resolved as every route resolves 12; undefined without it. */
  const arrayFilter = (ctx: RequestContext): number | undefined => {
    const text = ctx.query.get('array');
    if (text === null) return undefined;
    const fix = 'give an array\'s id, as `taras queue` shows its tasks (12 for 12_[0-9]), e.g. GET /jobs?array=12';
    const resolved = resolveJobRef(text, (id) => engine.recordOf(jobId(id)));
    if ('error' in resolved) throw new RouteError(resolved.error.startsWith('no job') ? 404 : 400, `array=${text}: ${resolved.error}`, fix);
    if (!resolved.array) throw new RouteError(400, `array=${text}: ${/_/.test(text) ? 'names tasks, not an array' : `job ${text.trim()} is not a job array`}`, fix);
    return resolved.ids[0];
  };
  /** Each answer about an array's task names it as squeue shows it (12_3), for scontrol's words. */
  const namedTasks = (results: ApiCancelResult[]): ApiCancelResult[] => results.map((result) => {
    const record = engine.recordOf(jobId(result.id));
    const task = record === undefined ? undefined : arrayTaskOf(record);
    return task === undefined ? result : { ...result, task: `${task.jobId}_${task.taskId}` };
  });
  const findJob = (id: JobId) => {
    const record = engine.recordOf(id);
    if (!record) throw new RouteError(404, `no job ${id}`, 'list jobs with `taras queue`');
    return record;
  };
  /**
   * Job ids as users write them, resolved (src/controller/arrays.ts resolveJobRef): N, an array's id
   * (all its tasks), ARRAYID_TASK. `one`: a route about one job takes N as that job and 12_3 as that task.
   * `named`: told of each distinct ref as resolveJobRef resolves it, before its jobs are taken (it may refuse by throwing).
   */
  const resolveIds = (refs: readonly (string | number)[], one = false, named?: (ref: string | number, resolved: ReturnType<typeof resolveJobRef>) => void): JobId[] => {
    // Each job once, in the order first named. An array's id is all its tasks, so 10,000 copies of one (or of
    // overlapping 12_[...]) named it 10,000 times over, held the controller for minutes: the same ref is resolved
    // once, and a request that names jobs it already named more than jobIdsPerRequest times is refused.
    const ids = new Set<JobId>();
    let repeats = 0;
    for (const ref of new Set(refs)) {
      if (one && typeof ref === 'number') return [jobId(ref)];
      const resolved = resolveJobRef(ref, (id) => engine.recordOf(jobId(id)));
      named?.(ref, resolved);
      let these: readonly number[];
      if (!('error' in resolved)) these = one ? resolved.ids.slice(0, 1) : resolved.ids;
      // A plain id that names no job: each id of a set gets its own answer (cancelMany says "no job N", as scancel does).
      else if (!one && /^\d+$/.test(String(ref).trim()) && resolved.error.startsWith('no job')) these = [Number(ref)];
      else throw new RouteError(/^no job|has no task/.test(resolved.error) ? 404 : 400, resolved.error, 'list jobs with `taras queue`');
      for (const id of these) {
        if (ids.has(jobId(id))) repeats++;
        else ids.add(jobId(id));
      }
      if (repeats > LIMITS.jobIdsPerRequest) {
        throw new RouteError(400, `these ids name the same jobs more than ${LIMITS.jobIdsPerRequest} times (${ref} names jobs named before it; an array's id already names every task)`,
          'name each job once; nothing was changed');
      }
    }
    return [...ids];
  };
  /** The `:id` of a route about one job: N or ARRAYID_TASK. */
  const jobIdOf = (ctx: RequestContext): JobId => (/^\d+_\d+$/.test(ctx.params.id) ? resolveIds([ctx.params.id], true)[0] : parseId(ctx));
  /** Root, or in cluster.toml's `admins` (by name or "@group"). */
  const admin = (caller: Caller): boolean => isAdmin(caller, config.admins);
  const requireAdmin = (ctx: RequestContext, what: string): Caller => {
    const caller = callerOf(ctx);
    if (!admin(caller)) {
      throw new RouteError(403, `only administrators may ${what}; you are ${caller.user}`, 'ask an administrator (root, or one listed in `admins` in cluster.toml)');
    }
    return caller;
  };
  /** A job as this caller may see it: whole for its owner and administrators, without private details for others. */
  const shownTo = (caller: Caller, isAdminCaller: boolean) => <T extends ApiJob>(job: T): T =>
    (mayActOn(caller, isAdminCaller, job.user) ? job : publicJob(job));
  const refused = (error: unknown): never => {
    if (error instanceof SubmitRefused) throw new RouteError(400, error.message, 'change the request (see `taras submit --help`)');
    if (error instanceof LimitRefused) {
      throw new RouteError(429, error.message, error.fix, error.retryAfterSeconds === undefined ? undefined : { 'retry-after': String(error.retryAfterSeconds) });
    }
    throw error;
  };
  let closing: (() => Promise<void>) | null = null;
  const steps = new JobSteps({
    engine: () => engine, findJob, parseId: (raw) => parseId({ params: { id: raw } } as unknown as RequestContext), link: agents,
    killGraceSeconds: () => engine.config.killGraceSeconds, log, stepIdsFile: join(config.dataDir, 'step-ids.json'),
  });
  /** The engine's ties to the job steps (again for a new engine: a reconfigure). */
  const tieSteps = (to: ControllerEngine): void => {
    to.onRunningLimit = (id) => steps.jobLimitChanged(id);
    to.stepLimitOf = (id, stepId) => steps.limitOf(id, stepId);
  };
  tieSteps(engine);

  /**
   * POST /jobs/:id/requeue (its owner or an administrator: scontrol
   * requeue), /checkpointed (the job's owner: `taras checkpointed`, from
   * inside the job), /suspend and /resume (administrators: scontrol
   * suspend/resume). A job of another user is a 403; a job in the wrong
   * state a 409. POST /jobs/requeue|suspend|resume take a list of ids
   * (scontrol's: 12 of an array is every task) and answer each job.
   */
  function jobActionRoutes(): Route[] {
    const act = (ctx: RequestContext, action: (id: JobId, caller: Caller) => object): { status: number; body: unknown } =>
      withBody(ctx, EmptyBodySchema, 'an empty body or {}', action);
    /** A job action with its own body: refusals as `act`'s (403 for another's job, 409 otherwise). */
    function withBody<T>(ctx: RequestContext, schema: Parameters<typeof bodyOf>[0], example: string, action: (id: JobId, caller: Caller, body: T) => object): { status: number; body: unknown } {
      const caller = callerOf(ctx);
      const body = bodyOf(schema, ctx, example) as T;
      const id = jobIdOf(ctx);
      findJob(id);
      try {
        const answer = action(id, caller, body);
        kick();
        return { status: 200, body: { ...apiJob(engine, engine.recordOf(id)!), ...answer } };
      } catch (error) {
        if (!(error instanceof SubmitRefused)) throw error;
        if (error.forbidden) throw new RouteError(403, error.message, 'act on your own jobs only');
        throw new RouteError(409, error.message);
      }
    }
    return [
      // taras move (seed 000 3.1.4): behind another pending job, or 0 for the front.
      // srun inside a job: a step of the job's tasks on its nodes (src/controller/steps.ts); run once srun attaches.
      { method: 'POST', path: '/jobs/:id/steps', handler: (ctx) => {
        const caller = callerOf(ctx);
        const body = bodyOf(StepBodySchema, ctx, '{"command": ["hostname"], "ntasks": 2, "workingDir": "/home/ada", "umask": 18, "env": {}}') as StepBody;
        return { status: 200, body: steps.create(caller, jobIdOf(ctx), body) };
      } },
      { method: 'POST', path: '/jobs/:id/move', handler: (ctx) => withBody<{ after: number }>(ctx, MoveBodySchema, '{"after": 12} (0: the front)', (id, caller, body) => {
        const moved = engine.move(id, body.after, caller.user, admin(caller));
        log(`job ${id}: moved after ${body.after} by ${caller.user}`);
        return { move: { after: moved.after, plannedStartBeforeMs: moved.beforeMs, plannedStartAfterMs: moved.thenMs, warnings: moved.warnings } };
      }) },
      // scontrol update JobId=ID TimeLimit= Partition= JobName= (a pending job; a running one: TimeLimit).
      { method: 'POST', path: '/jobs/:id/update', handler: (ctx) => withBody<{ name?: string; partition?: string; timeLimitSeconds?: number | 'UNLIMITED' }>(ctx, UpdateBodySchema,
        '{"timeLimitSeconds": 1800, "partition": "debug", "name": "x"}', (id, caller, body) => {
          engine.update(id, body, caller.user, admin(caller));
          return {};
        }) },
      { method: 'POST', path: '/jobs/:id/requeue', handler: (ctx) => act(ctx, (id, caller) => jobActions.requeue(id, caller)) },
      { method: 'POST', path: '/jobs/:id/checkpointed', handler: (ctx) => act(ctx, (id, caller) => {
        // The job's owner only: an administrator cannot say that someone's program has written its checkpoint.
        engine.checkpointed(id, caller.user, false);
        return {};
      }) },
      ...(['suspend', 'resume'] as const).map((action): Route => ({
        method: 'POST', path: `/jobs/:id/${action}`, handler: (ctx) => {
          const caller = requireAdmin(ctx, `${action} jobs`);
          return act(ctx, (id) => jobActions[action](id, caller));
        },
      })),
      {
        // scontrol update JobId=12 ...: an array's id stands for its tasks not ended (as Slurm), each with its own answer;
        // ArrayTaskThrottle (arrayThrottle) only on an array's id. Every id is resolved before anything changes.
        method: 'POST', path: '/jobs/update', handler: async (ctx) => {
          const caller = callerOf(ctx);
          const { ids, arrayThrottle, ...changes } = bodyOf(UpdateJobsBodySchema, ctx, '{"ids": [12, "12_3"], "timeLimitSeconds": 1800} or {"ids": [12], "arrayThrottle": 4}') as
            { ids: (number | string)[]; arrayThrottle?: number; name?: string; partition?: string; timeLimitSeconds?: number | 'UNLIMITED' };
          // The whole arrays named (their first ids: an ArrayTaskThrottle is theirs), as every id is resolved, each job once.
          const wholeArrays = new Set<number>();
          const all = resolveIds(ids, false, (ref, resolved) => {
            // Every id must name jobs here (an unknown one is 404, not a job's refusal).
            if ('error' in resolved) throw new RouteError(/^no job|has no task/.test(resolved.error) ? 404 : 400, resolved.error, 'list jobs with `taras queue`');
            if (arrayThrottle !== undefined && !resolved.array) {
              throw new RouteError(400, `ArrayTaskThrottle is set on an array's id, and ${ref} is not one (Slurm: "Update of ArrayTaskThrottle is only allowed on ArrayJobId")`,
                'give the array\'s id: scontrol update JobId=12 ArrayTaskThrottle=4');
            }
            if (resolved.array) wholeArrays.add(resolved.ids[0]);
          });
          // Every job named, an array's ended tasks too: each is answered (Slurm says "Job has already finished" of each).
          const jobs = Object.keys(changes).length === 0 ? [] : all;
          const answer = (id: number, outcome: unknown, message: string, arrayEnded?: boolean): ApiCancelResult => {
            const state = engine.recordOf(jobId(id))?.state ?? null;
            if (!(outcome instanceof SubmitRefused)) return { id, state, result: 'cancelled', message };
            // Ended (not another user's job): `ended`, which scontrol reports of a task as Slurm does. A throttle's
            // refusal is of the array: `ended` only when none of its tasks is left (its first one may have ended).
            const ended = !outcome.forbidden && (arrayEnded ?? (state !== null && (isEndState(state) || state === 'COMPLETING')));
            return { id, state, result: ended ? 'ended' : 'refused', message: outcome.message };
          };
          const results: ApiCancelResult[] = [];
          if (arrayThrottle !== undefined) {
            store.batch(() => {
              for (const arrayId of wholeArrays) {
                let outcome: unknown = null;
                try {
                  engine.setArrayThrottle(jobId(arrayId), arrayThrottle, caller.user, admin(caller));
                } catch (error) {
                  if (!(error instanceof SubmitRefused)) throw error;
                  outcome = error;
                }
                results.push(answer(arrayId, outcome, `array ${arrayId}: ArrayTaskThrottle=${arrayThrottle}`, engine.active.activeTasksOf(arrayId).size === 0));
              }
            });
          }
          // Many jobs (an array's 10,000 tasks) go in slices, as a cancel does: others are answered in between.
          const outcomes = await inSlices(jobs, (slice) => engine.updateMany(slice, changes, caller.user, admin(caller)));
          outcomes.forEach((outcome, i) => results.push(answer(jobs[i], outcome, `job ${jobs[i]}: updated`)));
          kick();
          return { status: 200, body: { jobs: namedTasks(results) } };
        },
      },
      ...(['requeue', 'suspend', 'resume'] as const).map((action): Route => ({
        // scontrol requeue|suspend|resume: the listed jobs, an array's id standing for all its tasks (as Slurm); each its own answer.
        method: 'POST', path: `/jobs/${action}`, handler: (ctx) => {
          const caller = action === 'requeue' ? callerOf(ctx) : requireAdmin(ctx, `${action} jobs`);
          const { ids } = bodyOf(JobIdsBodySchema, ctx, '{"ids": [12, "12_3"]}');
          const results = store.batch(() => resolveIds(ids).map((id): ApiCancelResult => {
            const record = engine.recordOf(id);
            if (record === undefined) return { id, state: null, result: 'refused', message: `no job ${id}` };
            try {
              jobActions[action](id, caller);
              return { id, state: engine.recordOf(id)?.state ?? null, result: 'cancelled', message: `job ${id}: ${action}d` };
            } catch (error) {
              if (!(error instanceof SubmitRefused)) throw error;
              return { id, state: record.state, result: 'refused', message: error.message };
            }
          }));
          kick();
          return { status: 200, body: { jobs: namedTasks(results) } };
        },
      })),
    ];
  }
  /** requeue (the job's owner or an administrator), suspend and resume (administrators, checked by their routes) of one job; SubmitRefused when it cannot be. */
  const jobActions: Record<'requeue' | 'suspend' | 'resume', (id: JobId, caller: Caller) => object> = {
    requeue: (id, caller) => {
      const { waitSeconds } = engine.requeue(id, caller.user, admin(caller));
      log(`job ${id}: requeued by ${caller.user}`);
      return { waitSeconds };
    },
    suspend: (id, caller) => {
      engine.suspend(id, `suspended by ${caller.user}`);
      log(`job ${id}: suspended by ${caller.user}`);
      return {};
    },
    resume: (id, caller) => {
      engine.resume(id, `resumed by ${caller.user}`);
      log(`job ${id}: resumed by ${caller.user}`);
      return {};
    },
  };

  const routes: Route[] = [
    {
      method: 'POST', path: '/jobs',
      handler: async (ctx) => {
        const caller = callerOf(ctx);
        const body = bodyOf(SubmitBodySchema, ctx, SUBMIT_EXAMPLE);
        if (caller.uid === 0 && !config.allowRootJobs) {
          throw new RouteError(403, 'this cluster does not run jobs as root (allow_root_jobs = false in cluster.toml)', 'submit as an ordinary user');
        }
        if ((body.spec.nice ?? 0) < 0 && !admin(caller)) {
          throw new RouteError(403, `--nice=${body.spec.nice}: only administrators may raise a job's priority (a negative nice)`, 'give --nice 0 or more, or leave it out');
        }
        // The submitter is the verified caller, always: a spec cannot name another user.
        const id = await submitOne({
          user: caller.user, uid: caller.uid, spec: body.spec as JobSpec, idempotencyKey: body.idempotencyKey,
          // A reservation's users are listed as administrators are (names and "@group"), so the same test serves.
          mayUseReservation: (users) => admin(caller) || isAdmin(caller, users),
        }).catch(refused);
        const answer: ApiSubmitted = { id };
        const admission = engine.takeAdmission(id);
        const record = engine.recordOf(id);
        const deadline = record === undefined ? null : admission !== null ? admittedDeadline(engine, record, admission) : apiDeadline(engine, record);
        if (deadline !== null) answer.deadline = deadline;
        // A retried submission (its key already stored) is told the same warning as the first.
        const warning = admission?.warning ?? (record === undefined ? null : admissionWarning(record));
        if (warning) answer.warning = warning;
        return { status: 201, body: answer };
      },
    },
    {
      // Paged by id: a page serialises at most 1,000 jobs (a pass over the active ones picks them), so a
      // user listing 50,000 jobs holds the event loop for a page at a time, not for the whole listing.
      method: 'GET', path: '/jobs',
      handler: (ctx) => {
        const caller = callerOf(ctx);
        const shown = shownTo(caller, admin(caller));
        const { after, limit } = pageOf(ctx);
        const { records, next } = visiblePage({ ...listFilter(ctx), arrayId: arrayFilter(ctx) }, after, limit);
        const page: ApiJobPage = { jobs: records.map((record): ApiJob => shown(apiJob(engine, record))), next };
        return { status: 200, body: page };
      },
    },
    {
      // `taras queue`: the status and the jobs in queue order, as compact rows (src/api/queue.ts).
      method: 'GET', path: '/queue',
      handler: async (ctx) => {
        const caller = callerOf(ctx);
        const status = apiStatus(engine, Date.now(), motd());
        const long = ctx.query.get('long') === '1';
        // --long shows working directories: only the caller's own, unless an administrator asks.
        const viewer = !long ? '' : admin(caller) ? '*' : caller.user;
        // Listing 50,000 jobs costs tens of milliseconds, built in pieces with other requests served between
        // them (queueBuild). While nothing it shows has changed (no job record, no planned start; finished jobs
        // leave it by the minute), the last answer is reused, and callers that come during a build share it.
        const key = `${ctx.query.toString()} ${engine.listingVersion()} ${Math.floor(Date.now() / 60_000)} ${viewer}`;
        if (queueCache?.engine !== engine || queueCache.key !== key) {
          const build = queueBuild(engine, visibleRecords(listFilter(ctx)), long, status, viewer === '*' ? undefined : viewer, ctx.query.get('array') === '1', ctx.query.get('reasons') === '1');
          const cache = { engine, key, queue: runSliced(build) };
          queueCache = cache;
          // A failed build is not kept: the next caller tries again (this one gets the 500).
          cache.queue.catch(() => {
            if (queueCache === cache) queueCache = null;
          });
        }
        return { status: 200, body: { ...await queueCache.queue, status } };
      },
    },
    { method: 'GET', path: '/jobs/:id', handler: (ctx) => {
      const caller = callerOf(ctx);
      const record = findJob(jobIdOf(ctx));
      return { status: 200, body: shownTo(caller, admin(caller))(apiJobWithEvents(engine, record, store.events(record.id))) };
    } },
    ...jobActionRoutes(),
    // taras acct / taras report: every job, kept for good (src/controller/accounting.ts).
    ...accountingRoutes({
      store, callerOf, isAdmin: admin, nowMs: () => Date.now(), arrayThrottles: () => engine.arrayThrottles(),
      totalCpus: () => engine.config.nodes.reduce((sum, node) => sum + node.cpus, 0),
    }),
    // Like the queue, for every verified user (the guard below refuses anonymous callers).
    { method: 'GET', path: '/reservations', handler: () => {
      return { status: 200, body: { reservations: engine.listReservations().map((r) => apiReservation(engine, r, Date.now())) } };
    } },
    { method: 'GET', path: '/reservations/:name', handler: (ctx) => {
      const found = engine.reservations.get(ctx.params.name);
      if (!found) throw new RouteError(404, `no reservation named ${ctx.params.name}`, 'list them with `taras reserve list`');
      return { status: 200, body: apiReservation(engine, found, Date.now()) };
    } },
    {
      method: 'POST', path: '/reservations',
      handler: (ctx) => {
        const caller = requireAdmin(ctx, 'create reservations and maintenance windows');
        const body = bodyOf(ReservationBodySchema, ctx, '{"name": "N", "startMs": ..., "endMs": ..., "nodes": ["node01"] or "nodeCount": 2}');
        const kind = body.kind ?? 'reservation';
        if (kind === 'reservation' && body.name === undefined) throw new RouteError(400, 'a reservation needs a name', 'add --name NAME');
        let created;
        try {
          created = engine.createReservation({
            name: body.name ?? engine.windowName(body.startMs), kind, startMs: body.startMs, endMs: body.endMs, nodes: body.nodes,
            nodeCount: body.nodeCount, users: body.users ?? [], reason: body.reason ?? '', createdBy: caller.user,
          });
        } catch (error) {
          if (error instanceof SubmitRefused) throw new RouteError(400, error.message, 'nothing was created');
          throw error;
        }
        log(`${kind} ${created.reservation.name} created by ${caller.user}: ${created.reservation.nodes.join(',')} from ${isoTime(body.startMs)} to ${isoTime(body.endMs)}`);
        kick();
        return { status: 201, body: { reservation: apiReservation(engine, created.reservation, Date.now()), overlappingJobs: created.overlapping } };
      },
    },
    {
      method: 'DELETE', path: '/reservations/:name',
      handler: (ctx) => {
        const caller = requireAdmin(ctx, 'delete reservations and maintenance windows');
        let deleted;
        try {
          deleted = engine.deleteReservation(ctx.params.name);
        } catch (error) {
          if (error instanceof SubmitRefused) throw new RouteError(404, error.message);
          throw error;
        }
        log(`${deleted.kind} ${deleted.name} deleted by ${caller.user}`);
        kick();
        return { status: 200, body: apiReservation(engine, deleted, Date.now()) };
      },
    },
    {
      // Read-only (it plans a copy): POST only because the change is a body.
      method: 'POST', path: '/whatif',
      handler: (ctx) => {
        const body = bodyOf(WhatIfBodySchema, ctx, '{"policy": "conservative", "drain": ["node01"], "window": {"startMs": ..., "endMs": ..., "nodes": [...]}}');
        try {
          return { status: 200, body: apiWhatIf(body.policy ?? config.policy, engine.whatIf(body)) };
        } catch (error) {
          if (error instanceof SubmitRefused) throw new RouteError(400, error.message, 'nothing was changed');
          throw error;
        }
      },
    },
    { method: 'GET', path: '/plan', handler: () => {
      return { status: 200, body: apiPlan(engine, Date.now()) };
    } },
    // scontrol write batch_script: the script as stored, for its owner and administrators, while it is kept.
    { method: 'GET', path: '/jobs/:id/script', handler: (ctx) => {
      const caller = callerOf(ctx);
      const record = findJob(jobIdOf(ctx));
      if (!mayActOn(caller, admin(caller), record.user)) {
        throw new RouteError(403, `job ${record.id} belongs to ${record.user}; only they or an administrator may read its script`, 'read the scripts of your own jobs');
      }
      const spec = engine.specOf(record);
      if (spec.interactive !== undefined) throw new RouteError(404, `job ${record.id} is interactive (taras run/alloc): it has no batch script`, 'give the id of a batch job');
      const purgedMs = store.purgedAt(record.id);
      if (purgedMs !== null && purgedMs !== undefined) {
        throw new RouteError(410, `job ${record.id}'s script was purged at ${isoTime(purgedMs)}: Taras keeps a finished job's script and environment `
          + `keep_finished (${engine.config.keepFinishedSeconds} s) after its end, and none of a job that ended without starting (an array's first task keeps the script its tasks share until keep_finished after the last of them that ran ended)`,
          PURGED_SCRIPT_FIX);
      }
      // An array's tasks after the first read the text their first task keeps (until keep_finished after the array's last end).
      const script = scriptOf(record, (id) => engine.recordOf(jobId(id)));
      if (script === undefined) {
        throw new RouteError(410, `job ${record.id} is a task of array ${sharedTaskOf(record)}, whose script its first task no longer holds: `
          + `purged keep_finished (${engine.config.keepFinishedSeconds} s) after the last of the array's tasks that ran ended, or lost from a damaged database`,
          PURGED_SCRIPT_FIX);
      }
      return { status: 200, body: { id: record.id, user: record.user, path: record.scriptPath, script, args: [...spec.script.args] } };
    } },
    { method: 'GET', path: '/jobs/:id/when', handler: (ctx) => {
      const caller = callerOf(ctx);
      const when = apiWhen(engine, findJob(jobIdOf(ctx)));
      return { status: 200, body: { ...when, job: shownTo(caller, admin(caller))(when.job) } };
    } },
    {
      method: 'DELETE', path: '/jobs/:id',
      handler: (ctx) => {
        const id = jobIdOf(ctx);
        findJob(id);
        let record;
        try {
          const caller = callerOf(ctx);
          record = engine.cancel(id, caller.user, admin(caller));
        } catch (error) {
          if (error instanceof SubmitRefused) throw new RouteError(error.forbidden ? 403 : 404, error.message);
          throw error;
        }
        kick();
        return { status: 200, body: apiJob(engine, record) };
      },
    },
    {
      // sbatch --test-only: the submission's checks and its planned start, nothing stored.
      method: 'POST', path: '/jobs/test-only',
      handler: (ctx) => {
        const caller = callerOf(ctx);
        const body = bodyOf(SubmitBodySchema, ctx, SUBMIT_EXAMPLE);
        if ((body.spec.nice ?? 0) < 0 && !admin(caller)) {
          throw new RouteError(403, `--nice=${body.spec.nice}: only administrators may raise a job's priority (a negative nice)`, 'give --nice 0 or more, or leave it out');
        }
        let answer: ApiTestOnly;
        try {
          const plan = engine.testOnly(body.spec as JobSpec, caller, (users) => admin(caller) || isAdmin(caller, users));
          answer = { ...plan, start: plan.startMs === null ? null : isoTime(plan.startMs), nodes: [...plan.nodes], nextId: engine.nextJobId() };
        } catch (error) {
          return refused(error);
        }
        return { status: 200, body: answer };
      },
    },
    {
      // A set of jobs in one request (`taras cancel 1 2 3`, `taras cancel --all`): pending ones never start.
      method: 'POST', path: '/jobs/cancel',
      handler: async (ctx) => {
        const caller = callerOf(ctx);
        const body = bodyOf(CancelBodySchema, ctx, '{"ids": [12, 13]} or {"all": true}');
        // Another user's jobs are refused one by one in the answer, unless the caller is an administrator.
        const ids = body.ids !== undefined ? resolveIds(body.ids) : engine.activeJobsOf(body.user ?? caller.user);
        // One commit per slice (an array's 10,000 tasks: one, not 10,000), pending jobs first in the whole set,
        // as cancelMany orders them within one: a job whose nodes a cancel frees finds no job of the set to take them.
        const results = await inSlices(ids, (slice) => engine.cancelMany(slice, caller.user, admin(caller)), (all) => engine.pendingFirst(all));
        kick();
        return { status: 200, body: { jobs: results } };
      },
    },
    ...(['hold', 'release'] as const).map((action): Route => ({
      // scontrol hold|release: each id its own answer (another user's job is refused; an administrator's hold is JobHeldAdmin).
      method: 'POST', path: `/jobs/${action}`,
      handler: async (ctx) => {
        const caller = callerOf(ctx);
        const { ids } = bodyOf(JobIdsBodySchema, ctx, '{"ids": [12, 13]}');
        const all = resolveIds(ids);
        const results = await inSlices(all, (slice) => (action === 'hold' ? engine.holdMany(slice, caller.user, admin(caller)) : engine.releaseMany(slice, caller.user, admin(caller))));
        kick();
        return { status: 200, body: { jobs: namedTasks(results) } };
      },
    })),
    ...(['pause', 'unpause'] as const).map((action): Route => ({
      // sppause|spunpause: the listed jobs, or (no ids) the caller's waiting interactive jobs / paused jobs.
      method: 'POST', path: `/jobs/${action}`,
      handler: (ctx) => {
        const caller = callerOf(ctx);
        const { ids } = bodyOf(PauseBodySchema, ctx, '{"ids": [12, 13]} or {}');
        const chosen = ids === undefined ? null : resolveIds(ids);
        const results = store.batch(() => (action === 'pause' ? engine.pauseMany(chosen, caller.user, admin(caller)) : engine.unpauseMany(chosen, caller.user, admin(caller))));
        kick();
        return { status: 200, body: { jobs: results } };
      },
    })),
    // Made and sent a thousand nodes at a time, others served between (100,000 nodes: about a second).
    { method: 'GET', path: '/nodes', handler: () => ({ status: 200, body: new JsonPieces(apiNodePieces(() => engine)) }) },
    // sinfo and scontrol show partition (src/cli/slurm/): the partitions of cluster.toml, in its order.
    { method: 'GET', path: '/partitions', handler: () => ({ status: 200, body: engine.config.partitions.map((p): ApiPartition => ({
      name: p.name, nodes: [...p.nodes], isDefault: p.isDefault, maxTimeSeconds: p.maxTimeSeconds, defaultTimeSeconds: p.defaultTimeSeconds ?? null,
      maxNodes: p.maxNodes, priority: p.priority, preemptMode: p.preemptMode ?? 'off',
    })) }) },
    // The socket listened on since the start: a reconfigure (whose file may name another data_dir, or `--data` overrode it) moves no socket.
    { method: 'GET', path: '/status', handler: () => ({ status: 200, body: { ...apiStatus(engine, Date.now(), motd()), socket: options.config.socketPath, uid: process.getuid?.() } }) },
    {
      method: 'POST', path: '/admin/drain',
      handler: (ctx) => {
        requireAdmin(ctx, 'drain or resume nodes');
        const { nodes, reason, resume } = bodyOf(DrainBodySchema, ctx, '{"nodes": ["node01"], "reason": "text"} (or "resume": true)');
        if (!resume && !reason) throw new RouteError(400, 'a drain needs a reason', 'add --reason TEXT');
        try {
          engine.drain(nodes, reason ?? '', !resume); // all or nothing: an unknown name changes no node
        } catch (error) {
          if (error instanceof SubmitRefused) throw new RouteError(400, `${error.message} in this cluster`, 'name nodes as `taras nodes` lists them; nothing was changed');
          throw error;
        }
        kick();
        return { status: 200, body: apiNodes(engine, nodes) };
      },
    },
    {
      method: 'PUT', path: '/admin/motd',
      handler: (ctx) => {
        requireAdmin(ctx, 'set the message of the day');
        const text = bodyOf(MotdBodySchema, ctx, '{"text": "message"}').text ?? '';
        if (text === '') store.deleteSetting('motd');
        else store.setSetting('motd', text);
        return { status: 200, body: { motd: motd() } };
      },
    },
    {
      method: 'PUT', path: '/admin/holiday',
      handler: (ctx) => {
        requireAdmin(ctx, 'switch the holiday period');
        const { on } = bodyOf(HolidayBodySchema, ctx, '{"on": true}');
        if (engine.config.dayNight === undefined) throw new RouteError(409, 'this cluster has no day and night queues: add a [day_night] table to cluster.toml');
        engine.setHoliday(on);
        log(`holiday ${on ? 'on: every period is night' : 'off'} (by ${callerOf(ctx).user})`);
        kick();
        return { status: 200, body: apiStatus(engine, Date.now(), motd()) };
      },
    },
    {
      method: 'POST', path: '/admin/reconfigure',
      handler: async (ctx) => {
        requireAdmin(ctx, 'reconfigure the controller');
        bodyOf(EmptyBodySchema, ctx, 'an empty body or {}');
        if (!options.configPath) {
          throw new RouteError(409, 'this controller runs on embedded defaults: there is no file to reload', 'start it with `taras controller --config cluster.toml`');
        }
        const { readClusterConfig } = await import('../config/load.js');
        const { formatConfigError } = await import('../config/errors.js');
        const parsed = await readClusterConfig(options.configPath);
        // A setting a start ignores (one an older version took) is refused here, with the errors.
        if (!parsed.ok || parsed.ignored.length > 0) {
          throw new RouteError(400, (parsed.ok ? parsed.ignored : parsed.errors).map(formatConfigError).join('\n'), 'fix the file; the old configuration stays in force');
        }
        let next: ControllerEngine;
        try {
          next = new ControllerEngine(parsed.config, store, agents, Date.now, log, 'refuse');
        } catch (error) {
          if (error instanceof SubmitRefused || error instanceof RangeError) {
            throw new RouteError(400, `the new configuration cannot hold the jobs already accepted: ${error.message}`, 'keep their partitions and nodes, or cancel those jobs first; the old configuration stays in force');
          }
          throw error;
        }
        next.inheritNodeStates(engine);
        engine = next;
        config = parsed.config;
        engine.onDependencyNeverSatisfied = mailer.invalidDependency;
        tieSteps(engine);
        steps.resendLimits(); // orders the old engine still retried
        mailer.settings = mailSettingsOf(config);
        log(`reconfigured from ${options.configPath}: policy ${config.policy}, ${config.nodes.length} nodes, ${config.partitions.length} partitions`);
        kick();
        return { status: 200, body: apiStatus(engine, Date.now(), motd()) };
      },
    },
    {
      method: 'POST', path: '/admin/shutdown',
      handler: (ctx) => {
        const caller = requireAdmin(ctx, 'shut the controller down');
        const body = bodyOf(ShutdownBodySchema, ctx, '{"mode": "checkpoint"} (or "kill", "leave-running"; "window": NAME for a maintenance window)') ?? {};
        const mode = body.mode ?? 'leave-running';
        if (body.window !== undefined) {
          try {
            engine.setWindowMode(body.window, mode);
          } catch (error) {
            if (error instanceof SubmitRefused) throw new RouteError(404, error.message);
            throw error;
          }
          log(`maintenance window ${body.window}: shutdown mode ${mode} (set by ${caller.user})`);
          return { status: 200, body: { window: body.window, mode } };
        }
        const { waitSeconds, jobs } = engine.shutdownJobs(mode);
        eventLog?.record('shutdown', { phase: 'started', mode, by: caller.user, jobs });
        log(`shutdown by ${caller.user}, mode ${mode}: ${jobs.length} running job(s) ${mode === 'kill' ? 'cancelled' : mode === 'checkpoint' ? 'checkpointed and requeued' : 'left running'}`);
        // The jobs' ends are recorded before the controller stops: it waits for them (their checkpoint or grace, and a margin).
        const deadline = Date.now() + (mode === 'leave-running' ? 0 : (waitSeconds + config.killGraceSeconds + 5) * 1000);
        const stopWhenDone = (): void => {
          if (Date.now() < deadline && engine.jobsHoldNodes) setTimeout(stopWhenDone, 100);
          else setTimeout(() => void closing?.(), 50);
        };
        stopWhenDone();
        return { status: 202, body: { shutdown: true, mode, jobs, waitSeconds } };
      },
    },
    {
      // `taras admin token` (scontrol token): a bearer token for TCP clients; for yourself, or for anyone if you are an administrator.
      method: 'POST', path: '/admin/token',
      handler: async (ctx) => {
        const caller = callerOf(ctx);
        const { user, lifespanSeconds } = bodyOf(TokenBodySchema, ctx, '{"user": "alice", "lifespanSeconds": 7200} (both optional)') ?? {};
        const lifespan = lifespanSeconds ?? DEFAULT_TOKEN_SECONDS;
        if (lifespan > MAX_TOKEN_SECONDS) {
          throw new RouteError(400, `"lifespanSeconds" must be a whole number of seconds from 1 to ${MAX_TOKEN_SECONDS}`, 'give --lifespan as 30m, 2h or 7d');
        }
        const subject = user ?? caller.user;
        if (subject !== caller.user && !admin(caller)) {
          throw new RouteError(403, `only administrators may issue tokens for other users; you are ${caller.user}`, 'leave out --user to get a token for yourself');
        }
        const account = nativeAddon().userByName(subject);
        if (account === null) throw new RouteError(400, `no user ${subject} on the controller's machine`, 'name an existing user');
        // A token acts as its user: an administrator who is not root must not be able to become root with one.
        if (account.uid === 0 && caller.uid !== 0) throw new RouteError(403, `only root may issue a token for ${subject} (uid 0)`, 'ask root');
        const { token, expiresMs } = await issueToken(jwtKey, subject, lifespan, Date.now());
        log(`token issued to ${caller.user} for ${subject}, valid until ${isoTime(expiresMs)}`);
        return { status: 200, body: { user: subject, token, expires: isoTime(expiresMs) } };
      },
    },
    {
      method: 'POST', path: '/agent/register',
      handler: (ctx) => {
        const { url, nodes, bootId, reports, uid } = bodyOf(AgentRegisterBodySchema, ctx, 'what `taras agent` sends');
        if (!/^http:\/\/[^/]+$/.test(url) || !URL.canParse(url)) {
          throw new RouteError(400, `agent registered with the address ${JSON.stringify(url)}, not http://host:port`, 'run the same Taras version on the agents and the controller');
        }
        agents.register(url, nodes, bootId, uid);
        let kill: { jobId: JobId; run: number | undefined }[] = [];
        try {
          kill = engine.agentRegistered(nodes, (reports ?? []).map((r) => ({ ...r, jobId: jobId(r.jobId), reason: r.reason ?? undefined })));
        } catch (error) {
          refused(error);
        }
        // Registrations double as heartbeats: say so only when an agent appears or moves.
        const key = `${url} ${nodes.join(',')} ${bootId}`;
        if (!knownAgents.has(key)) {
          knownAgents.add(key);
          log(`agent at ${url} registered ${nodes.length} node(s)`);
        }
        kick();
        // The agent beats at a third of node_timeout (as slurmctld pings at SlurmdTimeout/3): one late beat does not down a node.
        return { status: 200, body: { ok: true, heartbeatMs: Math.floor((engine.config.nodeTimeoutSeconds * 1000) / 3), kill } };
      },
    },
    {
      method: 'POST', path: '/agent/heartbeat',
      handler: (ctx) => {
        engine.heartbeat(bodyOf(AgentHeartbeatBodySchema, ctx, 'what `taras agent` sends').nodes);
        return { status: 200, body: { ok: true } };
      },
    },
    {
      method: 'POST', path: '/agent/report',
      handler: (ctx) => {
        for (const report of bodyOf(AgentReportBodySchema, ctx, 'what `taras agent` sends').reports) {
          engine.jobReport({ ...report, state: report.state as EndState, jobId: jobId(report.jobId), reason: report.reason ?? undefined });
        }
        kick();
        return { status: 200, body: { ok: true } };
      },
    },
  ];

  // A change is answered only once it is on the disk (one fdatasync serves every change made before it began).
  const commitsNothing = new Set(['/jobs/:id/steps', '/agent/heartbeat', '/admin/token', '/whatif', '/jobs/test-only']);
  // Reads whose cost grows with the cluster and the queue: one user's take at most a quarter of the controller's time.
  const heavyReads = new HeavyReads(undefined, options.heavyReadFloorMs);
  const HEAVY: ReadonlyMap<string, string> = new Map([
    ['POST /whatif', 'what-if'], ['POST /jobs/test-only', 'test-only submission'], ['GET /acct', 'accounting listing'], ['GET /report', 'usage report'], ['GET /plan', 'plan'],
  ]);
  // Other reads: one a turn of the event loop per user, so that a burst of one user's is served between everyone else's.
  // At most a quarter of the connection cap waiting per user (as WebSocket streams): one user never holds them all.
  // (Read at each request, once the server below exists.)
  const readTurns = new UserTurns(() => perUserShare(server.maxConnections));
  // Nothing about a job is served anonymously: every route but /status (and the agents', signed) needs a verified caller.
  const guarded = routes.map((route): Route => {
    if (openToAnonymous(route)) return route;
    const heavy = HEAVY.get(`${route.method} ${route.path}`);
    // Changes are handled as they come (a submission batch is built from the requests of one turn).
    const change = heavy === undefined && route.method !== 'GET';
    return {
      ...route,
      handler: (ctx) => {
        const caller = callerOf(ctx); // 401 for an anonymous caller
        if (change || admin(caller)) return route.handler(ctx);
        if (heavy !== undefined) return heavyReads.run(caller.user, heavy, () => route.handler(ctx)).catch(refused);
        try {
          return readTurns.run(caller.user, () => route.handler(ctx));
        } catch (error) {
          return refused(error);
        }
      },
    };
  });
  const durableRoutes = guarded.map((route): Route => route.method === 'GET' || commitsNothing.has(route.path) ? route : {
    ...route,
    handler: async (ctx) => {
      const result = await route.handler(ctx);
      await durable();
      return result;
    },
  });
  const server = createApiServer({
    routes: durableRoutes,
    upgrades: [attachRoute({ engine: () => engine, findJob, parseId: (raw) => parseId({ params: { id: raw } } as unknown as RequestContext), openStream: (node, id, run) => agents.openStream(node, id, run),
      graceSeconds: () => engine.config.interactive.graceSeconds }), steps.attachRoute(), steps.resumeRoute()],
    clusterKey: options.clusterKey ?? undefined,
    requireKeyFor: options.clusterKey ? (route) => route.path.startsWith('/agent/') : undefined,
    authenticator: createAuthenticator({ jwtKey, mungeSocket: config.mungeSocket }),
    log: netLog,
    maxConnections: config.maxConnections,
    sendTimeoutMs: config.messageTimeoutSeconds * 1000,
    maxStreamsPerUser: config.maxStreamsPerUser,
    // Credentials that fail (a uid with no passwd entry) still get the status; agents' routes go by the cluster key.
    servedWhenCredentialsFail: (route) => route.method === 'GET' && route.path === '/status',
    bodiesNeedCredentials: true,
  });
  let bound;
  try {
    bound = await server.listen({ port: options.port ?? config.listen.port, host: config.listen.host, socketPath: config.socketPath });
  } catch (error) {
    agents.close();
    store.close();
    lock.release();
    throw error;
  }
  const ticker = setInterval(() => {
    if (Date.now() - keysForgottenAtMs >= 3_600_000) {
      keysForgottenAtMs = Date.now();
      store.forgetKeysBefore(keysForgottenAtMs - IDEMPOTENCY_KEY_MS);
    }
    purgeFinished();
    engine.checkNodes();
    engine.applyWindowModes();
    engine.refreshNightWindows();
    engine.expireReservations();
    engine.touch();
    mailer.checkTimeLimits(Date.now(), false);
    kick();
  }, 1000);
  log(`controller listening on ${bound.tcp?.url} and ${bound.socketPath} (policy ${config.policy}, ${config.nodes.length} nodes)`);
  // Once started (a controller that cannot start says only why, in one line).
  const blocked = unreachableFolderOf(config.socketPath);
  if (blocked !== null) {
    log(`warning: other users cannot reach the socket ${config.socketPath}: ${blocked.folder} is mode ${octal(blocked.mode)} (no search permission for others), `
      + `so their taras has no verified identity; put the data folder (or socket_path in cluster.toml) under a folder everyone can enter, or chmod o+x ${blocked.folder}`);
  }

  closing = async () => {
    clearInterval(ticker);
    if (scheduled !== null) {
      clearTimeout(scheduled as NodeJS.Timeout);
      clearImmediate(scheduled as NodeJS.Immediate);
    }
    steps.close();
    mailer.close();
    const stopping = new RouteError(503, 'the controller is stopping; this request was not run', 'ask again once it is back');
    heavyReads.close(stopping);
    readTurns.close(stopping);
    if (eventLog !== null) {
      eventLog.record('shutdown', { phase: 'finished', jobsLeftRunning: [...engine.active.values()].filter((r) => r.state !== 'PENDING').map((r) => r.id) });
      store.committedListeners.length = 0;
      eventLog.close();
    }
    await server.close(1000);
    agents.close();
    store.close();
    lock.release();
  };
  return { url: bound.tcp!.url, socketPath: bound.socketPath!, engine: () => engine, close: () => closing!() };
}
