// A private munged for tests: its own key (random, 0600), socket, pid, log and
// seed files in a temp folder, started by the test and stopped by its pid.
// The folder is 0755 so throwaway users can reach the socket (munged refuses
// a socket folder others may write to). munged runs as root here (--force
// lets it use root-owned files), so tests that need it skip when not root or
// when MUNGE is not installed (scripts/test-deps.sh installs it where it can).

import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface RunningMunged {
  readonly socket: string;
  readonly pid: number;
  /** Stops this munged (SIGTERM to its pid, SIGKILL after 3 s) and removes its folder. */
  stop(): Promise<void>;
}

const MUNGED = '/usr/sbin/munged';

/** Why MUNGE tests cannot run here, or false when they can. */
export const mungeSkipReason: string | false = process.getuid?.() !== 0
  ? `not running as root (uid ${process.getuid?.()}): the tests start their own munged as root`
  : !existsSync(MUNGED) || spawnSync('munge', ['--version']).status !== 0
    ? 'MUNGE is not installed (Debian package munge; `npm test` installs it when run as root with apt-get)'
    : false;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function startMunged(): Promise<RunningMunged> {
  const dir = mkdtempSync(join(tmpdir(), 'taras-munged-'));
  chmodSync(dir, 0o755);
  const socket = join(dir, 'munge.socket');
  const keyFile = join(dir, 'munge.key');
  writeFileSync(keyFile, randomBytes(1024), { mode: 0o600 });
  const child = spawn(MUNGED, [
    '--foreground', '--force', `--socket=${socket}`, `--key-file=${keyFile}`, `--pid-file=${join(dir, 'munged.pid')}`,
    `--log-file=${join(dir, 'munged.log')}`, `--seed-file=${join(dir, 'munged.seed')}`, '--num-threads=2',
  ], { stdio: 'ignore', env: { PATH: '/usr/bin:/bin:/usr/sbin:/sbin' } });
  const pid = child.pid!;
  let exited = false;
  child.on('exit', () => { exited = true; });
  const stop = async () => {
    if (!exited) {
      process.kill(pid, 'SIGTERM');
      for (let i = 0; i < 60 && !exited; i++) await sleep(50);
      if (!exited) process.kill(pid, 'SIGKILL');
      for (let i = 0; i < 20 && !exited; i++) await sleep(50);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  // Ready once a client gets an answer on the socket (bounded: 10 s).
  for (let i = 0; i < 200; i++) {
    if (exited) break;
    if (existsSync(socket) && spawnSync('munge', ['--no-input', `--socket=${socket}`], { stdio: 'ignore' }).status === 0) {
      return { socket, pid, stop };
    }
    await sleep(50);
  }
  const log = existsSync(join(dir, 'munged.log')) ? readFileSync(join(dir, 'munged.log'), 'utf8').trim().split('\n').slice(-3).join(' | ') : 'no log';
  await stop();
  throw new Error(`the test munged did not start (socket ${socket}): ${log}`);
}
