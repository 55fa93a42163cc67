// EASY backfilling (Lifka 1995; the Argonne SP queuing algorithm, seed 004
// section 2.7): the head gets a reservation at the shadow time; a later job
// may start now if it ends by then or leaves the head what it needs then.
// In processors, exactly as the spec words it (`shadowOf`: the extra
// processors the head will not need). On a node pool the scheduler plans on
// nodes instead (policies/nodes.ts).

import type { QueueEntry, SchedulerState } from '../state.js';
import type { JobRequest, Seconds } from '../types.js';
import { predictedEnd } from '../types.js';
import { startFromHead } from './fcfs.js';
import type { Policy } from './policy.js';
import { QueueProjection } from './projection.js';

/**
 * The head's shadow time and the extra processors, from running jobs sorted by
 * predicted end, in processors. If the processors can never hold the head, no shadow time
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
      // In processors, as the spec words it (on a node pool the scheduler plans on nodes: policies/nodes.ts).
      const shadow = shadowOf(state, head.size);
      const shadowTime = shadow.shadowTime;
      let extra = shadow.extra;
      const allows = (job: JobRequest) => {
        if (now + job.estimate <= shadowTime) return true;
        if (job.size > extra) return false;
        extra -= job.size;
        return true;
      };
      const backfilled = new Set<QueueEntry>();
      for (let index = headIndex + 1; index < queue.length && state.startableProcessors > 0; index++) {
        const entry = queue[index];
        const nodes = state.tryPlace(entry.job);
        if (nodes === null || !allows(entry.job)) continue;
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
