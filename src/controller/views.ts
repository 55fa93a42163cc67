// The controller's answers in the API vocabulary (src/api/types.ts): jobs,
// nodes, status and "when will it start", built from the engine's state.

import { queueOrderOf, QueuePacker, toOffset, type ApiQueue } from '../api/queue.js';
import type { ApiClusterStatus, ApiJob, ApiJobWithEvents, ApiNode, ApiWhen } from '../api/types.js';
import type { JobId } from '../core/types.js';
import { expandPattern } from '../jobspec/pattern.js';
import type { JobRecord, StoredJobEvent } from '../store/events.js';
import type { ControllerEngine } from './engine.js';

export const VERSION = '0.1.0';

const iso = (ms: number | null | undefined): string | null => (ms === null || ms === undefined ? null : new Date(ms).toISOString());

export function apiJob(engine: ControllerEngine, record: JobRecord): ApiJob {
  const spec = engine.specOf(record);
  const limitSeconds = spec.timeLimitSeconds === 'UNLIMITED' ? null : spec.timeLimitSeconds;
  const plannedMs = record.state === 'PENDING' ? engine.plannedStartMs(record.id) : null;
  const startMs = record.startTimeMs ?? plannedMs;
  const names = { jobId: record.id, user: record.user, name: record.name };
  const inDir = (path: string) => (path.startsWith('/') ? path : `${spec.workingDir}/${path}`);
  const stdoutPath = inDir(expandPattern(spec.output, names));
  return {
    id: record.id,
    name: record.name,
    user: record.user,
    state: record.state,
    reason: record.reason,
    partition: record.partition,
    nodes: [...record.nodes],
    nodeCount: spec.nodes.min,
    ntasks: spec.ntasks ?? spec.nodes.min,
    cpusPerTask: spec.cpusPerTask,
    memoryMiB: spec.memoryMiB ?? null,
    timeLimitSeconds: limitSeconds,
    submitTime: iso(record.submitTimeMs)!,
    startTime: iso(record.startTimeMs),
    plannedStart: iso(plannedMs),
    predictedEnd: startMs !== null && limitSeconds !== null && record.endTimeMs === null ? iso(startMs + limitSeconds * 1000) : null,
    endTime: iso(record.endTimeMs),
    exitCode: record.exitCode,
    workingDir: spec.workingDir,
    stdoutPath,
    stderrPath: spec.error === undefined ? stdoutPath : inDir(expandPattern(spec.error, names)),
    requeue: spec.requeue,
  };
}

/**
 * `GET /queue`: the records in queue order (running by start, pending by
 * planned start, finished by end; ties by id), packed straight into the
 * run-length encoded columns of ApiQueue. Sorts an index by precomputed keys
 * and reads each record once: 50,000 jobs take tens of milliseconds.
 * With `onlyDirsOf`, working directories (--long) are shown for that user's
 * jobs only (a user who is not an administrator); others get ''.
 */
export function apiQueue(engine: ControllerEngine, records: readonly JobRecord[], long: boolean, status: ApiClusterStatus, onlyDirsOf?: string): ApiQueue {
  const n = records.length;
  const starts = new Array<number | null>(n);
  const order = queueOrderOf(records, (record, i) => {
    const start = record.startTimeMs ?? (record.state === 'PENDING' ? engine.plannedStartMs(record.id) : null);
    starts[i] = start;
    return { state: record.state, start, endTime: record.endTimeMs, id: record.id };
  });
  const base = Math.floor(Date.parse(status.now) / 1000);
  const packer = new QueuePacker(status, base, long);
  for (let k = 0; k < n; k++) {
    const i = order[k];
    const record = records[i];
    const spec = engine.specOf(record);
    const limitSeconds = spec.timeLimitSeconds === 'UNLIMITED' ? null : spec.timeLimitSeconds;
    const start = toOffset(starts[i], base);
    packer.add(
      record.id, record.user, record.state, record.partition, record.nodes.length === 0 ? '' : record.nodes.join(','), spec.nodes.min,
      start, start !== null && limitSeconds !== null && record.endTimeMs === null ? start + limitSeconds : null, toOffset(record.endTimeMs, base), record.name,
    );
    if (long) {
      packer.addLong((spec.ntasks ?? spec.nodes.min) * spec.cpusPerTask, spec.memoryMiB ?? null, Math.floor(record.submitTimeMs / 1000) - base, limitSeconds,
        onlyDirsOf === undefined || record.user === onlyDirsOf ? spec.workingDir : '');
    }
  }
  return packer.finish();
}

export function apiJobWithEvents(engine: ControllerEngine, record: JobRecord, events: readonly StoredJobEvent[]): ApiJobWithEvents {
  return {
    ...apiJob(engine, record),
    events: events.map(({ timeMs, event }) => {
      const { type, ...detail } = event as { type: string } & Record<string, unknown>;
      if (type === 'submitted') return { time: iso(timeMs)!, type, detail: { user: detail.user, partition: detail.partition } };
      return { time: iso(timeMs)!, type, detail };
    }),
  };
}

export function apiNodes(engine: ControllerEngine): ApiNode[] {
  const jobsOn = new Map<string, { id: number; user: string }[]>();
  for (const record of engine.active.values()) {
    for (const node of record.nodes) {
      if (!jobsOn.has(node)) jobsOn.set(node, []);
      jobsOn.get(node)!.push({ id: record.id, user: record.user });
    }
  }
  return engine.config.nodes.map((node) => {
    const status = engine.nodes.get(node.name)!;
    const free = engine.pool.free(node.name);
    const cpusAllocated = node.cpus - free.cpus;
    const jobs = jobsOn.get(node.name) ?? [];
    const busy = cpusAllocated > 0 || jobs.length > 0;
    const state = !status.up ? 'down' : status.drained ? (busy ? 'draining' : 'drained') : !busy ? 'idle' : free.cpus === 0 ? 'allocated' : 'mixed';
    return {
      name: node.name, state, reason: status.reason, cpus: node.cpus, cpusAllocated, memoryMiB: node.memoryMiB,
      memoryAllocatedMiB: node.memoryMiB - free.memoryMiB, features: [...node.features],
      partitions: engine.config.partitions.filter((p) => p.nodes.includes(node.name)).map((p) => p.name),
      jobs, lastHeartbeat: iso(status.lastHeartbeatMs),
    };
  });
}

export function apiStatus(engine: ControllerEngine, nowMs: number, motd: string | null): ApiClusterStatus {
  const counts = { total: 0, idle: 0, allocated: 0, mixed: 0, down: 0, drained: 0 };
  for (const node of apiNodes(engine)) {
    counts.total++;
    if (node.state === 'draining') counts.drained++;
    else counts[node.state]++;
  }
  let pending = 0;
  let running = 0;
  for (const record of engine.active.values()) record.state === 'PENDING' ? pending++ : running++;
  return {
    up: true, version: VERSION, cluster: engine.config.name, policy: engine.config.policy, placement: engine.config.placement,
    now: iso(nowMs)!, nodes: counts, jobs: { pending, running }, motd,
  };
}

export function apiWhen(engine: ControllerEngine, record: JobRecord): ApiWhen {
  const job = apiJob(engine, record);
  if (record.state !== 'PENDING') {
    const explanation = record.state === 'RUNNING'
      ? `Job ${record.id} is running since ${job.startTime} on ${record.nodes.join(',')}.`
      : `Job ${record.id} has ended: ${record.state}.`;
    return { job, plannedStart: job.startTime, predictedEnd: job.predictedEnd, position: null, waitsFor: [], explanation };
  }
  const pending = [...engine.active.values()]
    .filter((r) => r.state === 'PENDING')
    .map((r) => ({ id: r.id, planned: engine.plannedStartMs(r.id) ?? Infinity }))
    .sort((a, b) => a.planned - b.planned || a.id - b.id);
  const position = pending.findIndex((p) => p.id === record.id) + 1;
  const plannedMs = engine.plannedStartMs(record.id as JobId);
  const waitsFor = [...engine.active.values()]
    .filter((r) => r.state !== 'PENDING')
    .map((r) => ({ record: r, endMs: predictedEndMs(engine, r) }))
    .filter(({ endMs }) => plannedMs !== null && endMs !== null && endMs <= plannedMs)
    .sort((a, b) => b.endMs! - a.endMs!)
    .slice(0, 5)
    .map(({ record: r, endMs }) => ({ id: r.id, user: r.user, predictedEnd: iso(endMs) }));
  // What the planned start, position and waitsFor do not say already: why there is no plan.
  const ownNodesOut = !engine.couldBePlanned(record.id as JobId);
  const explanation = plannedMs === null
    ? ownNodesOut
      ? 'Not enough of the nodes that could hold it are up and taking jobs (down and drained nodes do not count); it is planned once they are back.'
      : 'A job ahead of it waits for nodes that are down or drained, and under this policy no job passes it.'
    : '';
  return { job, plannedStart: iso(plannedMs), predictedEnd: job.predictedEnd, position, waitsFor, explanation };
}

function predictedEndMs(engine: ControllerEngine, record: JobRecord): number | null {
  const spec = engine.specOf(record);
  if (record.startTimeMs === null || spec.timeLimitSeconds === 'UNLIMITED') return null;
  return record.startTimeMs + spec.timeLimitSeconds * 1000;
}

