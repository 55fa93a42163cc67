// `taras controller` / `taras agent` as real child processes for tests:
// started with their stderr drained, ready when their log matches, and
// killed by the PID the test started (never by name).

import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';

export interface Daemon {
  readonly child: ChildProcess;
  readonly match: RegExpMatchArray;
  /** The end of its log, for failure messages. */
  log(): string;
}

export const running = (child: ChildProcess): boolean => child.exitCode === null && child.signalCode === null;

/** Starts `node TARAS ARGS` in `cwd`, adds it to `started`, and resolves when its log matches `ready` (10 s at most). */
export function startDaemon(taras: string, started: ChildProcess[], args: readonly string[], ready: RegExp, cwd: string): Promise<Daemon> {
  const child = spawn(process.execPath, [taras, ...args], { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
  started.push(child);
  let log = '';
  return new Promise((resolveReady, reject) => {
    let matched = false;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`not ready within 10 s: ${args.join(' ')}\n${log}`));
    }, 10_000);
    // The listener stays: the daemon's stderr is drained as long as it runs.
    child.stderr!.on('data', (chunk: Buffer) => {
      log = (log + chunk.toString()).slice(-20_000);
      const match = matched ? null : log.match(ready);
      if (match) {
        matched = true;
        clearTimeout(timer);
        resolveReady({ child, match, log: () => log });
      }
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (!matched) reject(new Error(`exited with ${code ?? signal}: ${args.join(' ')}\n${log}`));
    });
  });
}

/** SIGKILL by PID, resolved once the process is gone. */
export async function killHard(child: ChildProcess): Promise<void> {
  if (!running(child)) return;
  const exited = new Promise((resolveExit) => child.once('exit', resolveExit));
  child.kill('SIGKILL');
  await Promise.race([exited, sleep(5000)]);
  assert.ok(!running(child), `process ${child.pid} survived SIGKILL`);
}
