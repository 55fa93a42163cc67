// Waiting for a condition in the tests that drive real processes: no fixed
// sleeps, which a slow machine outruns.

import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Checks `done` every `everyMs` until it holds or `ms` have passed, and says
 * whether it held. The caller asserts, with a message that names what it saw.
 */
export async function waitUntil(done: () => boolean, ms: number, everyMs = 50): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (done()) return true;
    if (Date.now() >= deadline) return false;
    await sleep(everyMs);
  }
}
