// First come, first served: start jobs from the head while the head fits.

import type { QueueEntry, SchedulerState } from '../state.js';
import type { Seconds } from '../types.js';
import type { Policy } from './policy.js';
import { QueueProjection } from './projection.js';

/** Starts queue entries from the head while they fit; returns how many started. */
export function startFromHead(state: SchedulerState, now: Seconds, started: QueueEntry[], projection: QueueProjection): number {
  const queue = state.queue;
  let index = 0;
  for (; index < queue.length; index++) {
    const nodes = state.tryPlace(queue[index].job);
    if (nodes === null) break;
    projection.noteStart(queue[index], now);
    state.startJob(queue[index], now, nodes);
    started.push(queue[index]);
  }
  return index;
}

export function fcfsPolicy(): Policy {
  const projection = new QueueProjection(true);
  return {
    name: 'fcfs',
    schedule(state, now) {
      const started: QueueEntry[] = [];
      const count = startFromHead(state, now, started, projection);
      if (count > 0) state.queue = state.queue.slice(count);
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
