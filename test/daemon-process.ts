// `taras controller` / `taras agent` / `taras up` as real child processes
// for tests: started with their stderr drained, ready when their log (or
// what `up` prints) matches, and killed by the PID the test started (never
// by name), as are the jobs an agent leaves running (by the pids in their
// status.json).

import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { isAlive, readStatus } from '../src/agent/jobdir.js';

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

/** Resolves with everything printed once `pattern` appears on stdout; rejects after `ms` or when the process exits first. */
export function waitForOutput(child: ChildProcess, pattern: RegExp, ms: number): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    let text = '';
    let errors = '';
    const timer = setTimeout(() => reject(new Error(`no ${pattern} within ${ms} ms; stdout:\n${text}\nstderr:\n${errors}`)), ms);
    child.stderr!.on('data', (chunk: Buffer) => (errors += chunk.toString()));
    child.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (pattern.test(text)) {
        clearTimeout(timer);
        resolvePromise(text);
      }
    });
    child.once('exit', (code) => reject(new Error(`exited (${code}) before ${pattern}:\n${text}\n${errors}`)));
  });
}

/** SIGKILLs the job processes (by process group) and supervisors that agents with the data folders `dirs` left running. */
export function killJobProcesses(dirs: readonly string[]): void {
  for (const dir of dirs) {
    const jobs = join(dir, 'jobs');
    if (!existsSync(jobs)) continue;
    for (const name of readdirSync(jobs)) {
      let status;
      try {
        status = readStatus(join(jobs, name));
      } catch {
        continue; // being rewritten; the job is a short one
      }
      if (status === null) continue;
      if (status.state === 'RUNNING' && isAlive(status.pid)) {
        try {
          process.kill(-status.pgid, 'SIGKILL');
        } catch { /* already gone */ }
      }
      if (isAlive(status.supervisorPid, status.supervisorStartTicks)) {
        try {
          process.kill(status.supervisorPid, 'SIGKILL');
        } catch { /* already gone */ }
      }
    }
  }
}

/**
 * After a test of `taras up`: Ctrl-C (SIGINT) to each process started that
 * still runs, SIGKILL after 10 s; the jobs its agent left running killed by
 * their pids; the test's folder removed.
 */
export async function stopUp(started: readonly ChildProcess[], data: string, work: string): Promise<void> {
  for (const child of started) {
    if (!running(child)) continue;
    const exited = new Promise((resolveExit) => child.once('exit', resolveExit));
    child.kill('SIGINT'); // Ctrl-C: the controller and the agent stop cleanly
    if (await Promise.race([exited.then(() => true), sleep(10_000, false, { ref: false })]) === false) child.kill('SIGKILL');
  }
  killJobProcesses([join(data, 'agent')]);
  rmSync(work, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
}

/**
 * A CLI command line with `--controller ADDRESS`: after the arguments, except for
 * `taras submit`, whose arguments after the script's name are the script's (sbatch): there it goes first.
 */
export function withController(args: readonly string[], address: string): string[] {
  return args[0] === 'submit' ? ['submit', '--controller', address, ...args.slice(1)] : [...args, '--controller', address];
}
