// EASY backfilling (Lifka 1995; the Argonne SP queuing algorithm, seed 004
// section 2.7): the head gets a reservation at the shadow time; a later job
// may start now if it ends by then or leaves the head what it needs then.
// Without nodes (trace replay) exactly as the spec words it, in processors
// (`shadowOf`: the extra processors the head will not need); on a node pool
// node by node (`nodeShadowOf`: CPUs and memory on the nodes that could hold
// the head).

import type { QueueEntry, SchedulerState } from '../state.js';
import type { JobRequest, Seconds } from '../types.js';
import { predictedEnd } from '../types.js';
import { startFromHead } from './fcfs.js';
import type { Policy } from './policy.js';
import { QueueProjection } from './projection.js';

/**
 * The head's shadow time and the extra processors, from running jobs sorted by
 * predicted end, in processors (trace replay; the policy uses nodeShadowOf on
 * a node pool). If the processors can never hold the head, no shadow time
 * (Infinity), and any job that fits may start.
 */
export function shadowOf(state: SchedulerState, headSize: number): { shadowTime: Seconds; extra: number } {
  let available = state.plannableProcessors;
  let index = 0;
  let shadowTime = 0;
  const running = state.running;
  while (available < headSize) {
    if (index === running.length) return { shadowTime: Infinity, extra: 0 };
    available += state.releaseOf(running[index]);
    shadowTime = predictedEnd(running[index]);
    index++;
  }
  // Every job ending at the shadow time counts, not just those walked so far.
  while (index < running.length && predictedEnd(running[index]) <= shadowTime) {
    available += state.releaseOf(running[index]);
    index++;
  }
  return { shadowTime, extra: available - headSize };
}

/**
 * EASY's head on a node pool, node by node: walking the running jobs by
 * predicted end, the first time at which `resources.nodes` of the nodes that
 * could hold the head (`within`) have its CPUs and memory free is the shadow
 * time. A job that does not end by then may start only if, with its CPUs and
 * memory taken from those nodes, enough of them still suit the head (a job
 * taking one CPU of a node the head needs whole would cost it the node).
 * Returns the shadow time and `allows`, which also books what it allows.
 */
export function nodeShadowOf(state: SchedulerState, head: JobRequest, within: ReadonlySet<string>, now: Seconds):
  { shadowTime: Seconds; allows: (job: JobRequest, nodes: readonly string[]) => boolean } {
  const pool = state.pool!;
  const need = head.resources!;
  const cpus = new Map<string, number>();
  const memory = new Map<string, number>();
  for (const name of within) {
    const free = pool.free(name);
    cpus.set(name, free.cpus);
    memory.set(name, free.memoryMiB);
  }
  const suits = (name: string) => cpus.get(name)! >= need.cpusPerNode && memory.get(name)! >= need.memoryMiBPerNode;
  let suiting = 0;
  for (const name of within) if (suits(name)) suiting++;
  /** Adds (or with sign -1 takes) a job's CPUs and memory on the nodes of `within`, keeping `suiting`. */
  const shift = (job: JobRequest, nodes: readonly string[], sign: number) => {
    const resources = job.resources!;
    for (const name of nodes) {
      if (!within.has(name)) continue;
      const before = suits(name);
      cpus.set(name, cpus.get(name)! + sign * resources.cpusPerNode);
      memory.set(name, memory.get(name)! + sign * resources.memoryMiBPerNode);
      suiting += Number(suits(name)) - Number(before);
    }
  };
  let shadowTime = now;
  const running = state.running;
  let index = 0;
  while (suiting < need.nodes) {
    if (index === running.length) return { shadowTime: Infinity, allows: () => true };
    shift(running[index].job, running[index].nodes, 1);
    shadowTime = predictedEnd(running[index]);
    index++;
  }
  // Every job ending at the shadow time counts, not just those walked so far.
  while (index < running.length && predictedEnd(running[index]) <= shadowTime) {
    shift(running[index].job, running[index].nodes, 1);
    index++;
  }
  return {
    shadowTime,
    allows: (job, nodes) => {
      if (now + job.estimate <= shadowTime) return true;
      shift(job, nodes, -1);
      if (suiting >= need.nodes) return true;
      shift(job, nodes, 1);
      return false;
    },
  };
}

export function easyPolicy(): Policy {
  const projection = new QueueProjection(false);
  return {
    name: 'easy',
    schedule(state, now) {
      const started: QueueEntry[] = [];
      const headIndex = startFromHead(state, now, started, projection);
      const queue = state.queue;
      if (headIndex >= queue.length - 1 || state.startableProcessors === 0) {
        if (headIndex > 0) state.queue = queue.slice(headIndex);
        return started;
      }
      const head = queue[headIndex].job;
      // On nodes: the head's shadow node by node, on the nodes it could use (a job placed elsewhere
      // cannot delay it); without them (trace replay), in processors as the spec words it.
      const within = state.nodesFor(head);
      let allows: (job: JobRequest, nodes: readonly string[]) => boolean;
      let shadowTime: Seconds;
      if (!state.plannable(head)) {
        shadowTime = Infinity;
        allows = () => true;
      } else if (within !== null) {
        ({ shadowTime, allows } = nodeShadowOf(state, head, within, now));
      } else {
        const shadow = shadowOf(state, head.size);
        shadowTime = shadow.shadowTime;
        let extra = shadow.extra;
        allows = (job) => {
          if (now + job.estimate <= shadowTime) return true;
          if (job.size > extra) return false;
          extra -= job.size;
          return true;
        };
      }
      const backfilled = new Set<QueueEntry>();
      for (let index = headIndex + 1; index < queue.length && state.startableProcessors > 0; index++) {
        const entry = queue[index];
        const nodes = state.tryPlace(entry.job);
        if (nodes === null || !allows(entry.job, nodes)) continue;
        projection.noteStart(entry, now);
        state.startJob(entry, now, nodes);
        started.push(entry);
        backfilled.add(entry);
      }
      state.queue = queue.slice(headIndex);
      state.dropStarted(backfilled);
      return started;
    },
    plan: (state, now) => projection.plan(state, now),
    onEnd: (run, at) => projection.noteEnd(run, at),
    // The projection extends itself with arrivals at the back; one placed further forward invalidates it.
    onSubmit: (_entry, reordered) => {
      if (reordered) projection.invalidate();
    },
    onCancel: () => projection.invalidate(),
    adopt: () => projection.invalidate(),
  };
}
