// CCS level packing (Gehring & Ramme, seed 002, section 3.2): the scheduling
// primitives that plan a finite request list taken from the waiting room, all
// present at time 0. FFDH, FFIH and FFDH* keep "scheduling points" (instants
// where the machine is empty), which is what makes them fair; FCFS* gives that
// up to fill gaps. They return a plan only; a shell decides what to do with it.

import { AvailabilityProfile } from './profile.js';
import type { JobId, Seconds } from './types.js';

export interface PackRequest {
  readonly id: JobId;
  readonly size: number;
  readonly duration: Seconds;
}

/** Start offsets relative to 0 (the planning instant), and the end of the last request. */
export interface Packing {
  readonly start: ReadonlyMap<JobId, Seconds>;
  readonly makespan: Seconds;
}

/** First-Fit-Decreasing-Height: levels stacked in time, longest requests first. */
export function packFFDH(requests: readonly PackRequest[], capacity: number): Packing {
  validate(requests, capacity);
  return stackLevels(firstFitLevels(byDecreasingDuration(requests), capacity));
}

/** First-Fit-Increasing-Height: the same levels on the reversed list, short requests first. */
export function packFFIH(requests: readonly PackRequest[], capacity: number): Packing {
  validate(requests, capacity);
  return stackLevels(firstFitLevels(byIncreasingDuration(requests), capacity));
}

/**
 * FFDH*: FFDH where a request may also sit on top of requests already on a
 * level, as long as it ends by the level's end (the next scheduling point).
 */
export function packFFDHStar(requests: readonly PackRequest[], capacity: number): Packing {
  validate(requests, capacity);
  const levels: { readonly end: Seconds; readonly free: AvailabilityProfile }[] = [];
  const start = new Map<JobId, Seconds>();
  for (const request of byDecreasingDuration(requests)) {
    let placed = false;
    for (const level of levels) {
      const t = level.free.earliestStart(request.size, request.duration, level.free.origin);
      if (t + request.duration <= level.end) {
        level.free.reserve(t, request.duration, request.size);
        start.set(request.id, t);
        placed = true;
        break;
      }
    }
    if (placed) continue;
    // The list is sorted by decreasing duration, so the opener is the level's tallest.
    const levelStart = levels.length === 0 ? 0 : levels[levels.length - 1].end;
    const free = new AvailabilityProfile(capacity, levelStart);
    free.reserve(levelStart, request.duration, request.size);
    levels.push({ end: levelStart + request.duration, free });
    start.set(request.id, levelStart);
  }
  return { start, makespan: makespanOf(requests, start) };
}

/** FCFS*: conservative backfilling in input order, every request queued at 0. */
export function packFCFSStar(requests: readonly PackRequest[], capacity: number): Packing {
  validate(requests, capacity);
  const free = new AvailabilityProfile(capacity, 0);
  const start = new Map<JobId, Seconds>();
  for (const request of requests) {
    const t = free.earliestStart(request.size, request.duration, 0);
    free.reserve(t, request.duration, request.size);
    start.set(request.id, t);
  }
  return { start, makespan: makespanOf(requests, start) };
}

/** The paper's figures: UTL = sum(size * duration) / (capacity * makespan), AWT = mean start. */
export function packingFigures(
  requests: readonly PackRequest[],
  packing: Packing,
  capacity: number,
): { makespan: number; utilization: number; meanWait: number } {
  let area = 0;
  let waitSum = 0;
  for (const request of requests) {
    area += request.size * request.duration;
    waitSum += startOf(packing.start, request.id);
  }
  return {
    makespan: packing.makespan,
    utilization: packing.makespan === 0 ? 0 : area / (capacity * packing.makespan),
    meanWait: requests.length === 0 ? 0 : waitSum / requests.length,
  };
}

interface Level {
  readonly members: PackRequest[];
  used: number;
}

/** Puts each request on the first level with room for its width; else opens a level. */
function firstFitLevels(list: readonly PackRequest[], capacity: number): Level[] {
  const levels: Level[] = [];
  for (const request of list) {
    const level = levels.find((l) => l.used + request.size <= capacity);
    if (level) {
      level.members.push(request);
      level.used += request.size;
    } else {
      levels.push({ members: [request], used: request.size });
    }
  }
  return levels;
}

/**
 * Each level starts when the previous one ends and is as tall as its longest
 * member. Under FFDH that is the opener; under FFIH it is only known once the
 * level is full, which is why starts are computed after packing.
 */
function stackLevels(levels: readonly Level[]): Packing {
  const start = new Map<JobId, Seconds>();
  let levelStart: Seconds = 0;
  for (const level of levels) {
    let height: Seconds = 0;
    for (const member of level.members) {
      start.set(member.id, levelStart);
      if (member.duration > height) height = member.duration;
    }
    levelStart += height;
  }
  return { start, makespan: levelStart };
}

/** Non-increasing duration; Array.prototype.sort is stable, so ties keep the input order. */
function byDecreasingDuration(requests: readonly PackRequest[]): PackRequest[] {
  return [...requests].sort((a, b) => b.duration - a.duration);
}

/** Non-decreasing duration, ties in reverse input order: the paper's FFIH list is RL reversed. */
function byIncreasingDuration(requests: readonly PackRequest[]): PackRequest[] {
  return byDecreasingDuration(requests).reverse();
}

function makespanOf(requests: readonly PackRequest[], start: ReadonlyMap<JobId, Seconds>): Seconds {
  let makespan: Seconds = 0;
  for (const request of requests) {
    const end = startOf(start, request.id) + request.duration;
    if (end > makespan) makespan = end;
  }
  return makespan;
}

function startOf(start: ReadonlyMap<JobId, Seconds>, id: JobId): Seconds {
  const t = start.get(id);
  if (t === undefined) throw new Error(`packing has no start for request ${id}`);
  return t;
}

/** A request that can never fit would otherwise open an impossible level or loop forever. */
function validate(requests: readonly PackRequest[], capacity: number): void {
  if (!Number.isInteger(capacity) || capacity < 1) {
    throw new Error(`machine capacity must be a positive integer, got ${capacity}`);
  }
  const seen = new Set<JobId>();
  for (const request of requests) {
    if (seen.has(request.id)) throw new Error(`request ${request.id} appears twice in the request list`);
    seen.add(request.id);
    if (!Number.isInteger(request.size) || request.size < 1) {
      throw new Error(`request ${request.id}: size must be a positive integer, got ${request.size}`);
    }
    if (request.size > capacity) {
      throw new Error(
        `request ${request.id} asks for ${request.size} processors but the machine has ${capacity}; ` +
          `shrink the request or drop it from the list`,
      );
    }
    if (!(request.duration > 0) || !Number.isFinite(request.duration)) {
      throw new Error(`request ${request.id}: duration must be a positive number of seconds, got ${request.duration}`);
    }
  }
}
