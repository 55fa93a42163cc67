// Waiting for a condition in the tests that drive real processes: no fixed
// sleeps, which a slow machine outruns, and every wait bounded.

import { setTimeout as sleep } from 'node:timers/promises';

/** What a probe gives: a value once the awaited thing is there; undefined or false while it is not. */
type Probed<T> = T | undefined | false;

/** Calls `probe` every `everyMs` until it gives a value or `ms` have passed; the value, or undefined. */
async function poll<T>(probe: () => Probed<T> | Promise<Probed<T>>, ms: number, everyMs: number): Promise<T | undefined> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() >= deadline) return undefined;
    await sleep(everyMs);
  }
}

/**
 * Checks `done` (it may be async) every `everyMs` until it holds or `ms` have passed, and says
 * whether it held. The caller asserts, with a message that names what it saw.
 */
export async function waitUntil(done: () => boolean | Promise<boolean>, ms: number, everyMs = 50): Promise<boolean> {
  return (await poll(() => done(), ms, everyMs)) === true;
}

/**
 * Calls `probe` (it may be async) every `everyMs` until it gives a value
 * (anything but undefined or false) and returns that value. After `ms` it
 * fails the test with "timed out after ms waiting for `what`"; `what` may be
 * a function, to name what was seen last.
 */
export async function eventually<T>(
  what: string | (() => string), probe: () => Probed<T> | Promise<Probed<T>>, ms: number, everyMs = 100,
): Promise<T> {
  const value = await poll(probe, ms, everyMs);
  if (value === undefined) throw new Error(`timed out after ${ms} ms waiting for ${typeof what === 'string' ? what : what()}`);
  return value;
}
