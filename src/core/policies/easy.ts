// EASY backfilling (Lifka 1995; the Argonne SP queuing algorithm, seed 004
// section 2.7), exactly as the spec words it: the head gets a reservation at
// the shadow time; a later job may start now if it ends by then or fits in
// the extra processors the head will not need.

import type { QueueEntry, SchedulerState } from '../state.js';
import type { RunningJob, Seconds } from '../types.js';
import { predictedEnd } from '../types.js';
import { startFromHead } from './fcfs.js';
import type { Policy } from './policy.js';
import { QueueProjection } from './projection.js';

/**
 * The head's shadow time and the extra processors, from running jobs sorted by
 * predicted end. On a node pool only the nodes that count in plans count
 * (state.releaseOf); if they cannot hold the head even when every running job
 * has ended, the head waits for nodes to come back: no shadow time (Infinity),
 * and any job that fits may start. (The policy also skips this for a head
 * whose features or partition are only on nodes that are out: state.plannable.)
 * On a node pool the policy passes `within`, the nodes that could hold the
 * head: CPUs elsewhere (another partition, nodes without its features) never
 * serve it, and a job backfilled there cannot delay it.
 */
export function shadowOf(state: SchedulerState, headSize: number, within: ReadonlySet<string> | null = null): { shadowTime: Seconds; extra: number } {
  // On a node pool, only CPUs on nodes that could hold the head count (`within`: state.nodesFor).
  const given = (run: RunningJob) => (within === null ? state.releaseOf(run) : state.cpusWithin(run.job, run.nodes, within));
  let available = state.freeWithin(within);
  let index = 0;
  let shadowTime = 0;
  const running = state.running;
  while (available < headSize) {
    if (index === running.length) return { shadowTime: Infinity, extra: 0 };
    available += given(running[index]);
    shadowTime = predictedEnd(running[index]);
    index++;
  }
  // Every job ending at the shadow time counts, not just those walked so far.
  while (index < running.length && predictedEnd(running[index]) <= shadowTime) {
    available += given(running[index]);
    index++;
  }
  return { shadowTime, extra: available - headSize };
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
      // The nodes the head could use: a job placed elsewhere cannot delay it (partitions, features).
      const within = state.nodesFor(head);
      let { shadowTime, extra } = state.plannable(head) ? shadowOf(state, head.size, within) : { shadowTime: Infinity, extra: 0 };
      const backfilled = new Set<QueueEntry>();
      for (let index = headIndex + 1; index < queue.length && state.startableProcessors > 0; index++) {
        const entry = queue[index];
        const { size, estimate } = entry.job;
        if (size > state.startableProcessors) continue;
        const endsByShadow = now + estimate <= shadowTime;
        if (!endsByShadow && within === null && size > extra) continue;
        const nodes = state.tryPlace(entry.job);
        if (nodes === null) continue;
        const taken = endsByShadow ? 0 : state.cpusWithin(entry.job, nodes, within);
        if (taken > extra) continue;
        projection.noteStart(entry, now);
        state.startJob(entry, now, nodes);
        started.push(entry);
        backfilled.add(entry);
        extra -= taken;
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
