// The controller's answers in the API vocabulary (src/api/types.ts): jobs,
// nodes, status and "when will it start", built from the engine's state.

import { publicReason } from './authz.js';
import { holdMark, QueueOrderKeys, QueuePacker, toOffset, typeLetter, type ApiQueue } from '../api/queue.js';
import type { ApiDeadline, JobType } from '../api/types.js';
import type { DeadlineSpec, JobSpec } from '../jobspec/types.js';
import type { ApiClusterStatus, ApiHolder, ApiReservation, ApiJob, ApiJobWithEvents, ApiNode, ApiPlan, ApiPlanItem, ApiWhatIf, ApiWhen } from '../api/types.js';
import type { PlanHold } from '../core/node-plan.js';
import type { JobId } from '../core/types.js';
import { expandPattern } from '../jobspec/pattern.js';
import type { JobRecord, StoredJobEvent } from '../store/events.js';
import type { ClusterConfig } from '../config/cluster.js';
import { deadlineGuaranteed, type ControllerEngine, type DeadlineAdmission, type NodeStatus, type PlannedItem } from './engine.js';
import { ownerOf, type Reservation } from './reservations.js';
import { arrayTaskOf } from './arrays.js';
import { formatTaskIds } from '../jobspec/array.js';
import { isoTime, isoOrNull } from '../api/durations.js';

export const VERSION = '0.1.0';

const iso = isoOrNull;

export function apiJob(engine: ControllerEngine, record: JobRecord): ApiJob {
  const spec = engine.specOf(record);
  const limitSeconds = spec.timeLimitSeconds === 'UNLIMITED' ? null : spec.timeLimitSeconds;
  const plannedMs = record.state === 'PENDING' ? engine.plannedStartMs(record.id) : null;
  const startMs = record.startTimeMs ?? plannedMs;
  const task = arrayTaskOf(record);
  const names = { jobId: record.id, user: record.user, name: record.name, ...(task === undefined ? {} : { array: { jobId: task.jobId, taskId: task.taskId } }) };
  const inDir = (path: string) => (path.startsWith('/') ? path : `${spec.workingDir}/${path}`);
  const stdoutPath = inDir(expandPattern(spec.output, names));
  return {
    id: record.id,
    name: record.name,
    user: record.user,
    state: record.state,
    reason: (record.state === 'PENDING' ? engine.waitingReason(record.id) : undefined) ?? record.reason,
    partition: record.partition,
    nodes: [...record.nodes],
    // A job that ran knows its nodes; a pending one shows its minimum (-n may spread it wider: taskLayout).
    nodeCount: record.nodes.length > 0 ? record.nodes.length : spec.nodes.min,
    ntasks: spec.ntasks ?? spec.nodes.min,
    cpusPerTask: spec.cpusPerTask,
    memoryMiB: spec.memoryMiB ?? null,
    timeLimitSeconds: limitSeconds,
    submitTime: iso(record.submitTimeMs)!,
    startTime: iso(record.startTimeMs),
    plannedStart: iso(plannedMs),
    firstPlannedStart: iso(record.state === 'PENDING' ? engine.firstPromiseMs(record.id as JobId) : record.plannedStartMs),
    predictedEnd: startMs !== null && limitSeconds !== null && record.endTimeMs === null ? iso(startMs + endAfterSeconds(engine, record, limitSeconds) * 1000) : null,
    endTime: iso(record.endTimeMs),
    exitCode: record.exitCode,
    workingDir: spec.workingDir,
    // An interactive job's output goes to the user's terminal, not to files.
    stdoutPath: spec.interactive === undefined ? stdoutPath : null,
    stderrPath: spec.interactive !== undefined ? null : spec.error === undefined ? stdoutPath : inDir(expandPattern(spec.error, names)),
    requeue: spec.requeue,
    ...(spec.checkpoint === undefined ? {} : {
      checkpoint: {
        intervalSeconds: spec.checkpoint.intervalSeconds ?? null, durationSeconds: spec.checkpoint.durationSeconds,
        programClass: spec.checkpoint.programClass ?? engine.programClassOf(spec)?.name ?? '?',
      },
    }),
    restarts: record.requeueCount,
    type: jobTypeOf(spec),
    deadline: iso(spec.deadline?.atMs),
    guaranteed: deadlineGuaranteed(record),
    ...(task === undefined ? {} : { arrayJobId: task.jobId, arrayTaskId: task.taskId }),
    ...(spec.account === undefined ? {} : { account: spec.account }),
    ...(spec.comment === undefined ? {} : { comment: spec.comment }),
    ...(spec.mailType === undefined ? {} : { mailType: [...spec.mailType] }),
    ...(spec.mailUser === undefined ? {} : { mailUser: spec.mailUser }),
  };
}

/** A job's type from its spec (seed 000 2.1.3): interactive (taras run / alloc), priority (a deadline) or normal. */
export function jobTypeOf(spec: JobSpec): JobType {
  return spec.interactive !== undefined ? 'interactive' : spec.deadline !== undefined ? 'priority' : 'normal';
}

/** What the plan says of a priority job's deadline (null for other jobs). */
export function apiDeadline(engine: ControllerEngine, record: JobRecord): ApiDeadline | null {
  const deadline = engine.specOf(record).deadline;
  if (deadline === undefined) return null;
  const job = apiJob(engine, record);
  const endMs = record.endTimeMs ?? (job.predictedEnd === null ? null : Date.parse(job.predictedEnd));
  const atRisk = record.state === 'PENDING' && engine.deadlineAtRisk(record.id as JobId);
  return deadlineStatus(deadline, deadlineGuaranteed(record) === true, endMs, record.endTimeMs !== null, atRisk);
}

/** What POST /jobs tells a priority job's submitter: the check made before it was stored. */
export function admittedDeadline(engine: ControllerEngine, record: JobRecord, admission: DeadlineAdmission): ApiDeadline | null {
  const deadline = engine.specOf(record).deadline;
  return deadline === undefined ? null : deadlineStatus(deadline, admission.guaranteed, admission.plannedEndMs, false, false);
}

function deadlineStatus(deadline: DeadlineSpec, guaranteed: boolean, endMs: number | null, ended: boolean, atRisk: boolean): ApiDeadline {
  const shortfall = endMs === null ? null : Math.max(0, Math.ceil((endMs - deadline.atMs) / 1000));
  const by = isoTime(deadline.atMs);
  const late = shortfall === null ? 'it has no planned start now' : `its planned end is ${shortfall} s after it`;
  let text: string;
  if (ended) text = shortfall === 0 ? `ended by its deadline ${by}` : `ended ${shortfall} s after its deadline ${by}`;
  else if (guaranteed && !atRisk) text = `guaranteed to end by ${by}`;
  else if (guaranteed) text = `not guaranteed any more: no queue place lets it end by ${by} (${late}); nodes must be freed for it`;
  else text = shortfall === 0 ? `not guaranteed to end by ${by}: planned to end in time, ahead of normal jobs` : `not guaranteed to end by ${by}: ${late} (the plan could not meet it at submission; it runs ahead of normal jobs)`;
  return { deadline: by, policy: deadline.policy, guaranteed, plannedEnd: iso(endMs), shortfallSeconds: shortfall, atRisk, text };
}

/** How long after its start a job ends at the latest: its limit, and for a running job the core's end (its limit plus the time it was suspended). */
function endAfterSeconds(engine: ControllerEngine, record: JobRecord, limitSeconds: number): number {
  if (record.state === 'PENDING') return limitSeconds;
  return Math.max(limitSeconds, engine.scheduler.state.getRunning(record.id)?.job.estimate ?? limitSeconds);
}

/** Rows GET /queue's build works through between pauses (queueBuild): 50,000 jobs are ten pieces of a few milliseconds. */
export const QUEUE_SLICE_ROWS = 5000;

/**
 * `GET /queue`: the records in queue order (running by start, pending by
 * planned start, finished by end; ties by id), packed straight into the
 * run-length encoded columns of ApiQueue. Sorts an index by precomputed keys
 * and reads each record once.
 * With `onlyDirsOf`, working directories (--long) are shown for that user's
 * jobs only (a user who is not an administrator); others get ''.
 *
 * A generator that pauses (yields) every `sliceRows` rows, so that the
 * controller serves other requests between pieces (runSliced): 50,000 jobs
 * take tens of milliseconds in all. What must come from one instant of the
 * engine is read before the first pause: the planned starts and so the order.
 * The records are immutable (a change replaces a job's record), so the rest
 * reads the snapshot it was given.
 */
export function* queueBuild(
  engine: ControllerEngine, records: readonly JobRecord[], long: boolean, status: ApiClusterStatus, onlyDirsOf?: string, unfoldArrays = false, reasons = false,
  sliceRows = QUEUE_SLICE_ROWS,
): Generator<void, ApiQueue, void> {
  const n = records.length;
  // The planned starts, all from the plan of this instant; the rest reads the immutable records.
  const starts = new Array<number | null>(n);
  for (let i = 0; i < n; i++) {
    const record = records[i];
    starts[i] = record.startTimeMs ?? (record.state === 'PENDING' ? engine.plannedStartMs(record.id) : null);
  }
  yield;
  // Job arrays as squeue shows them: a task that runs (or ended) on its own line as 12_3; the pending
  // tasks of an array on one line, 12_[4-15%4], where the first of them is in the queue (unless unfolded, squeue -r).
  const tasks = new Array<ReturnType<typeof arrayTaskOf>>(n);
  const pendingTasks = new Map<number, number[]>();
  const keys = new QueueOrderKeys(n);
  for (let i = 0; i < n; i++) {
    if (i > 0 && i % sliceRows === 0) yield;
    const record = records[i];
    keys.set(i, record.state, starts[i], record.endTimeMs, record.id);
    const task = tasks[i] = arrayTaskOf(record);
    if (unfoldArrays || task === undefined || record.state !== 'PENDING') continue;
    let list = pendingTasks.get(task.jobId);
    if (list === undefined) pendingTasks.set(task.jobId, list = []);
    list.push(task.taskId);
  }
  const order = keys.order();
  yield;
  const folded = new Set<number>();
  const base = Math.floor(Date.parse(status.now) / 1000);
  const packer = new QueuePacker(status, base, long, reasons);
  for (let k = 0; k < n; k++) {
    if (k > 0 && k % sliceRows === 0) yield;
    const i = order[k];
    const record = records[i];
    const task = tasks[i];
    let label: string | null = null;
    if (task !== undefined) {
      const pending = record.state === 'PENDING' ? pendingTasks.get(task.jobId) : undefined;
      if (pending === undefined || pending.length === 1) label = `${task.jobId}_${task.taskId}`;
      else if (folded.has(task.jobId)) continue;
      else {
        folded.add(task.jobId);
        label = `${task.jobId}_[${formatTaskIds(pending.sort((a, b) => a - b), task.throttle)}]`;
      }
    }
    const spec = engine.specOf(record);
    const limitSeconds = spec.timeLimitSeconds === 'UNLIMITED' ? null : spec.timeLimitSeconds;
    const start = toOffset(starts[i], base);
    packer.add(
      record.id, record.user, record.state, record.partition, record.nodes.length === 0 ? '' : record.nodes.join(','), record.nodes.length > 0 ? record.nodes.length : spec.nodes.min,
      start, start !== null && limitSeconds !== null && record.endTimeMs === null ? start + limitSeconds : null, toOffset(record.endTimeMs, base), record.name,
      typeLetter(jobTypeOf(spec)), toOffset(spec.deadline?.atMs ?? null, base), label,
      record.state === 'PENDING' && record.held ? holdMark(record.reason) : null,
    );
    if (long) {
      packer.addLong((spec.ntasks ?? spec.nodes.min) * spec.cpusPerTask, spec.memoryMiB ?? null, Math.floor(record.submitTimeMs / 1000) - base, limitSeconds,
        onlyDirsOf === undefined || record.user === onlyDirsOf ? spec.workingDir : '');
    }
    // As apiJob says it (squeue's %R), as of this piece of the build.
    if (reasons) {
      const reason = (record.state === 'PENDING' ? engine.waitingReason(record.id) : undefined) ?? record.reason;
      packer.addReason(onlyDirsOf === undefined || record.user === onlyDirsOf ? reason : publicReason(record.state, reason));
    }
  }
  return packer.finish();
}

/** queueBuild run to its end at once (tests, and callers with nothing to serve meanwhile). */
export function apiQueue(engine: ControllerEngine, records: readonly JobRecord[], long: boolean, status: ApiClusterStatus, onlyDirsOf?: string, unfoldArrays = false, reasons = false): ApiQueue {
  const build = queueBuild(engine, records, long, status, onlyDirsOf, unfoldArrays, reasons);
  for (;;) {
    const step = build.next();
    if (step.done) return step.value;
  }
}

export function apiJobWithEvents(engine: ControllerEngine, record: JobRecord, events: readonly StoredJobEvent[]): ApiJobWithEvents {
  return {
    ...apiJob(engine, record),
    checkpoints: events.filter(({ event }) => event.type === 'checkpointed').map(({ timeMs }) => iso(timeMs)!),
    events: events.map(({ timeMs, event }) => {
      const { type, ...detail } = event as { type: string } & Record<string, unknown>;
      if (type === 'submitted') return { time: iso(timeMs)!, type, detail: { user: detail.user, partition: detail.partition } };
      return { time: iso(timeMs)!, type, detail };
    }),
  };
}

/** Each node's partitions, in file order: built once per configuration (a scan per node was quadratic: 20 s at 100,000 nodes). */
const partitionsByNode = new WeakMap<ClusterConfig, ReadonlyMap<string, readonly string[]>>();

function partitionsOf(config: ClusterConfig): ReadonlyMap<string, readonly string[]> {
  let map = partitionsByNode.get(config);
  if (map === undefined) {
    const built = new Map<string, string[]>();
    for (const partition of config.partitions) {
      for (const name of partition.nodes) {
        let list = built.get(name);
        if (list === undefined) built.set(name, (list = []));
        list.push(partition.name);
      }
    }
    partitionsByNode.set(config, (map = built));
  }
  return map;
}

/** The jobs holding each node (running and completing ones). */
function jobsByNode(engine: ControllerEngine): Map<string, { id: number; user: string }[]> {
  const jobsOn = new Map<string, { id: number; user: string }[]>();
  for (const record of engine.active.values()) {
    for (const node of record.nodes) {
      let list = jobsOn.get(node);
      if (list === undefined) jobsOn.set(node, (list = []));
      list.push({ id: record.id, user: record.user });
    }
  }
  return jobsOn;
}

/** A node's state as `taras nodes` shows it, from its status, its free CPUs and whether jobs hold it. */
function nodeState(status: NodeStatus, cpus: number, freeCpus: number, hasJobs: boolean): ApiNode['state'] {
  const busy = cpus - freeCpus > 0 || hasJobs;
  return !status.up ? 'down' : status.drained ? (busy ? 'draining' : 'drained') : !busy ? 'idle' : freeCpus === 0 ? 'allocated' : 'mixed';
}

/** Nodes as `GET /nodes` shows them, in cluster.toml's order; `only`: just those named (one pass over the nodes). */
export function apiNodes(engine: ControllerEngine, only?: readonly string[]): ApiNode[] {
  const wanted = only === undefined ? undefined : new Set(only);
  const nodes = wanted === undefined ? engine.config.nodes : engine.config.nodes.filter((node) => wanted.has(node.name));
  const known = nodeFacts(engine);
  return nodes.flatMap((node) => apiNode(engine, node, known) ?? []);
}

/** What every node's entry reads: the jobs on each node and each node's partitions. */
interface NodeFacts {
  readonly jobsOn: ReadonlyMap<string, { id: number; user: string }[]>;
  readonly partitions: ReadonlyMap<string, readonly string[]>;
  /** The engine and the version of its jobs they were made from. */
  readonly engine: ControllerEngine;
  readonly version: number;
}

const nodeFacts = (engine: ControllerEngine): NodeFacts => ({
  jobsOn: jobsByNode(engine), partitions: partitionsOf(engine.config), engine, version: engine.active.version,
});

/** How many nodes `GET /nodes` makes and sends at a time (see apiNodePieces). */
const NODES_PER_PIECE = 1000;

/**
 * `GET /nodes` as pieces of one JSON array (JsonPieces): a thousand nodes at a
 * time, with other requests served between pieces. 100,000 nodes take about
 * a second to list on a small machine: no one else waits for all of it.
 */
export function* apiNodePieces(current: () => ControllerEngine): Generator<string> {
  const nodes = current().config.nodes; // the nodes as the listing began (a reconfiguration meanwhile: those still known)
  let known: NodeFacts | null = null;
  let opened = false;
  for (let from = 0; from < nodes.length; from += NODES_PER_PIECE) {
    const engine = current();
    // Jobs may have started or ended since the last piece: counted again only then.
    if (known?.engine !== engine || known.version !== engine.active.version) known = nodeFacts(engine);
    const texts: string[] = [];
    for (const node of nodes.slice(from, from + NODES_PER_PIECE)) {
      const shown = apiNode(engine, node, known);
      if (shown !== undefined) texts.push(JSON.stringify(shown));
    }
    if (texts.length === 0) continue;
    yield `${opened ? ',' : '['}${texts.join(',')}`;
    opened = true;
  }
  yield opened ? ']' : '[]';
}

/** One node; undefined if the controller no longer has it (reconfigured while a listing went on). */
function apiNode(engine: ControllerEngine, node: ClusterConfig['nodes'][number], { jobsOn, partitions }: NodeFacts): ApiNode | undefined {
  const status = engine.nodes.get(node.name);
  if (status === undefined) return undefined;
  const free = engine.pool.free(node.name);
  const jobs = jobsOn.get(node.name) ?? [];
  return {
    name: node.name, state: nodeState(status, node.cpus, free.cpus, jobs.length > 0), reason: status.reason, cpus: node.cpus,
    cpusAllocated: node.cpus - free.cpus, memoryMiB: node.memoryMiB,
    memoryAllocatedMiB: node.memoryMiB - free.memoryMiB, features: [...node.features],
    partitions: [...(partitions.get(node.name) ?? [])],
    jobs, lastHeartbeat: iso(status.lastHeartbeatMs),
  };
}

type Counts = ApiClusterStatus['nodes'] & ApiClusterStatus['jobs'];

/** The last counts per engine, with the versions they were made from: recounted only after a change. */
const lastCounts = new WeakMap<ControllerEngine, { key: string; counts: Counts }>();

/** The controller's summary; its counts take one pass over the nodes and the active jobs, and only after something changed. */
export function apiStatus(engine: ControllerEngine, nowMs: number, motd: string | null): ApiClusterStatus {
  const key = `${engine.active.version}.${engine.nodeVersion}`;
  let last = lastCounts.get(engine);
  if (last?.key !== key) lastCounts.set(engine, (last = { key, counts: countAll(engine) }));
  const { pending, running, ...nodes } = last.counts;
  return {
    up: true, version: VERSION, cluster: engine.config.name, policy: engine.config.policy, placement: engine.config.placement,
    now: iso(nowMs)!, nodes, jobs: { pending, running }, motd,
    windows: engine.listReservations().map((r) => ({ name: r.name, kind: r.kind, start: iso(r.startMs)!, end: iso(r.endMs)!, nodes: [...r.nodes] })),
    ...dayNightStatus(engine),
  };
}

function dayNightStatus(engine: ControllerEngine): Pick<ApiClusterStatus, 'dayNight'> {
  const config = engine.config.dayNight;
  if (config === undefined) return {};
  const { dayText: day, dayMaxNodeMinutes, dayMaxTimeSeconds, nightMaxNodeMinutes, queuedLimitNodeMinutes } = config;
  return { dayNight: { now: engine.isDayNow() ? 'day' : 'night', day, holiday: engine.holiday, dayMaxNodeMinutes, dayMaxTimeSeconds, nightMaxNodeMinutes, queuedLimitNodeMinutes } };
}

/** Nodes by state and jobs by state, building no node objects. */
function countAll(engine: ControllerEngine): Counts {
  const counts = { total: 0, idle: 0, allocated: 0, mixed: 0, down: 0, drained: 0 };
  const held = new Set<string>();
  let pending = 0;
  let running = 0;
  for (const record of engine.active.values()) {
    record.state === 'PENDING' ? pending++ : running++;
    for (const node of record.nodes) held.add(node);
  }
  for (const node of engine.config.nodes) {
    const state = nodeState(engine.nodes.get(node.name)!, node.cpus, engine.pool.free(node.name).cpus, held.has(node.name));
    counts.total++;
    if (state === 'draining') counts.drained++;
    else counts[state]++;
  }
  return { ...counts, pending, running };
}

/** At most this many holders in `taras when` ("and N more" for the rest). */
const MAX_HOLDERS = 5;

export function apiWhen(engine: ControllerEngine, record: JobRecord): ApiWhen {
  const job = apiJob(engine, record);
  if (record.state !== 'PENDING') {
    const explanation = record.state === 'RUNNING' || record.state === 'SUSPENDED'
      ? `Job ${record.id} is ${record.state === 'RUNNING' ? 'running' : 'suspended'} since ${job.startTime} on ${record.nodes.join(',')}.`
      : `Job ${record.id} has ended: ${record.state}.`;
    return {
      job, plannedStart: job.startTime, predictedEnd: job.predictedEnd, position: null, waitsFor: [], explanation,
      plannedNodes: record.nodes.length > 0 ? [...record.nodes] : null, heldBy: [], heldByMore: 0, moved: null, deadline: apiDeadline(engine, record),
    };
  }
  const pending = [...engine.active.values()]
    .filter((r) => r.state === 'PENDING')
    .map((r) => ({ id: r.id, planned: engine.plannedStartMs(r.id) ?? Infinity }))
    .sort((a, b) => a.planned - b.planned || a.id - b.id);
  const position = pending.findIndex((p) => p.id === record.id) + 1;
  const id = record.id as JobId;
  const plannedMs = engine.plannedStartMs(id);
  const plannedNodes = engine.plannedNodesOf(id);
  const holders = plannedMs === null ? [] : engine.heldBy(id).map((hold) => holderOf(engine, hold, plannedNodes ?? []));
  holders.sort((a, b) => Date.parse(b.until) - Date.parse(a.until) || a.id.localeCompare(b.id, 'en', { numeric: true }));
  const waitsFor = holders.filter((h) => h.kind === 'running')
    .map((h) => ({ id: Number(h.id), user: h.user ?? '', predictedEnd: h.until }));
  const explanation = plannedMs === null ? unplannedExplanation(engine, record) : '';
  return {
    job, plannedStart: iso(plannedMs), predictedEnd: job.predictedEnd, position, waitsFor, explanation,
    plannedNodes: plannedNodes === null ? null : [...plannedNodes], heldBy: holders.slice(0, MAX_HOLDERS),
    heldByMore: Math.max(0, holders.length - MAX_HOLDERS), moved: engine.movedBecause(id), reservation: reservationOf(engine, record),
    deadline: apiDeadline(engine, record),
  };
}

function reservationOf(engine: ControllerEngine, record: JobRecord): ApiWhen['reservation'] {
  const reservation = engine.reservationOf(record);
  return reservation === undefined ? null : { name: reservation.name, start: iso(reservation.startMs)!, end: iso(reservation.endMs)! };
}

/** A hold in the plan as `taras when` names it: whose, until when, on which of the job's nodes. */
function holderOf(engine: ControllerEngine, hold: PlanHold, nodes: readonly string[]): ApiHolder {
  const on = hold.nodes.filter((name) => nodes.includes(name));
  const until = iso(hold.end * 1000)!;
  const { kind, name } = ownerOf(hold.owner);
  if (kind === 'job') {
    const holder = engine.active.get(Number(name) as JobId);
    return { kind: holder?.state === 'PENDING' ? 'planned' : 'running', id: name, user: holder?.user ?? null, until, nodes: on };
  }
  return { kind, id: name, user: null, until, nodes: on };
}

/** Why a pending job has no planned start: which of its requirements no node that counts can meet. */
function unplannedExplanation(engine: ControllerEngine, record: JobRecord): string {
  // Held, or waiting for its dependencies, its --begin, its array's %N or the night: that, not the nodes, is why.
  if (record.held) return `It is held (${record.reason ?? 'held'}): it is planned once released (taras release ${record.id}).`;
  const waiting = engine.waitingReason(record.id as JobId);
  if (waiting !== undefined) return `It waits: ${waiting}.`;
  const spec = engine.specOf(record);
  const partition = spec.partition ?? engine.config.defaultPartition;
  const members = new Set(engine.config.partitions.find((p) => p.name === partition)?.nodes ?? []);
  const counting = engine.config.nodes.filter((node) => members.has(node.name) && engine.pool.counts(node.name));
  const features = spec.constraint?.anyOf[0] ?? [];
  const unmet: string[] = [];
  const withFeatures = counting.filter((node) => features.every((f) => node.features.includes(f)));
  if (features.length > 0 && withFeatures.length === 0) unmet.push(`the features ${features.join(', ')}`);
  const memory = spec.memoryMiB ?? 0;
  if (memory > 0 && !withFeatures.some((node) => node.memoryMiB >= memory)) unmet.push(`${memory} MiB of memory per node`);
  if (!withFeatures.some((node) => node.cpus >= spec.cpusPerTask)) unmet.push(`${spec.cpusPerTask} CPUs per task`);
  if (spec.reservation !== undefined) {
    const reservation = engine.reservationOf(record);
    if (reservation === undefined) return `Its reservation ${spec.reservation} no longer exists (deleted, or ended before it could run): cancel it, or submit it again without --reservation.`;
    if (reservation.endMs - Math.max(reservation.startMs, engine.nowMs()) < 1000 * engine.plannedEstimateSeconds(record.id as JobId)) {
      return `What is left of reservation ${reservation.name} is shorter than its time limit.`;
    }
    return `Its reservation ${reservation.name} cannot hold it with the jobs planned in it ahead of it.`;
  }
  const out = engine.config.partitions.find((p) => p.name === partition)?.nodes.filter((name) => !engine.pool.counts(name)) ?? [];
  const outText = out.length === 0 ? '' : ` (${out.join(', ')} ${out.length === 1 ? 'is' : 'are'} out)`;
  if (!engine.couldBePlanned(record.id as JobId)) {
    return unmet.length > 0
      ? `No node of partition ${partition} that is up and taking jobs has ${unmet.join(', or ')}${outText}; it is planned once such nodes are back.`
      : `Fewer than the ${spec.nodes.min} nodes it needs in partition ${partition} are up and taking jobs${outText}; it is planned once they are back.`;
  }
  return 'A job ahead of it waits for nodes that are down or drained, and under this policy no job passes it.';
}

/** A reservation or window as the API shows it, with the active jobs that asked for it. */
export function apiReservation(engine: ControllerEngine, reservation: Reservation, nowMs: number): ApiReservation {
  const jobs = [...engine.active.values()].filter((record) => engine.asksFor(record, reservation)).map((record) => record.id as number);
  return {
    name: reservation.name, kind: reservation.kind, state: reservation.startMs <= nowMs ? 'ACTIVE' : 'PLANNED',
    start: iso(reservation.startMs)!, end: iso(reservation.endMs)!,
    nodes: [...reservation.nodes], users: [...reservation.users], reason: reservation.reason, createdBy: reservation.createdBy, jobs: jobs.sort((a, b) => a - b),
  };
}

/** The what-if answer: per job, then the mean and worst change and how many moved which way. */
export function apiWhatIf(policy: string, rows: readonly { id: JobId; user: string; nowMs: number | null; thenMs: number | null }[]): ApiWhatIf {
  const jobs = rows.map((row) => ({
    id: row.id as number, user: row.user, now: iso(row.nowMs), then: iso(row.thenMs),
    changeSeconds: row.nowMs === null || row.thenMs === null ? null : Math.round((row.thenMs - row.nowMs) / 1000),
  }));
  const both = jobs.filter((job) => job.changeSeconds !== null) as (typeof jobs[number] & { changeSeconds: number })[];
  let worst: ApiWhatIf['worst'] = null;
  for (const job of both) {
    if (worst === null || job.changeSeconds > worst.changeSeconds) worst = { id: job.id, changeSeconds: job.changeSeconds };
  }
  return {
    policy, jobs,
    meanChangeSeconds: both.length === 0 ? null : Math.round(both.reduce((sum, job) => sum + job.changeSeconds, 0) / both.length),
    worst,
    earlier: both.filter((job) => job.changeSeconds < 0).length,
    later: both.filter((job) => job.changeSeconds > 0).length,
    same: both.filter((job) => job.changeSeconds === 0).length,
    lostPlan: jobs.filter((job) => job.now !== null && job.then === null).length,
    gainedPlan: jobs.filter((job) => job.now === null && job.then !== null).length,
  };
}

/** GET /plan: every running and pending job on its nodes over [start, end), and the reservations and windows. */
export function apiPlan(engine: ControllerEngine, nowMs: number): ApiPlan {
  const { running, pending, unplanned } = engine.planItems();
  const endIso = (id: JobId, end: number) => (engine.specOf(engine.active.get(id)!).timeLimitSeconds === 'UNLIMITED' ? null : iso(end * 1000));
  const jobItem = (item: PlannedItem, state: 'RUNNING' | 'PENDING'): ApiPlanItem => {
    const record = engine.active.get(item.id)!;
    const startMs = state === 'RUNNING' && record.startTimeMs !== null ? record.startTimeMs : item.start * 1000;
    return {
      kind: 'job', id: String(item.id), name: record.name, user: record.user, state, nodes: [...item.nodes],
      start: iso(startMs)!, end: endIso(item.id, item.end),
    };
  };
  const items = [
    ...running.filter((r) => engine.active.has(r.id)).map((r) => jobItem(r, 'RUNNING')),
    ...pending.filter((p) => engine.active.has(p.id)).map((p) => jobItem(p, 'PENDING')),
    ...engine.listReservations().map((r): ApiPlanItem => ({
      kind: r.kind, id: r.name, name: r.name, user: null, state: r.kind === 'maintenance' ? 'MAINT' : 'RESERVED',
      nodes: [...r.nodes], start: iso(r.startMs)!, end: iso(r.endMs),
    })),
  ];
  return { now: iso(nowMs)!, nodes: engine.config.nodes.map((node) => node.name), items, unplanned: [...unplanned] };
}


