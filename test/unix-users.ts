// Throwaway Unix users for tests that need real ones (tests and CI run as
// root): each gets a unique name, a home directory of its own (0700), and is
// removed with its home and group by `removeTestUsers` (call it from `after`).
// Each names its test process in its comment: the first user a process makes
// removes those of processes gone (a run killed from outside).
// Tests that need them skip with `notRootReason` when not root.

import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';

export interface TestUser {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
  readonly home: string;
}

const created: string[] = [];

/** Why Unix-user tests cannot run here, or false when they can. */
export const notRootReason: string | false = process.getuid?.() !== 0
  ? `not running as root (uid ${process.getuid?.()}): only root can create throwaway Unix users`
  : !existsSync('/usr/sbin/useradd') ? 'useradd is not installed (Debian package passwd)' : false;

function run(command: string, args: string[]): string {
  const result = spawnSync(command, args, { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed: ${result.stderr || result.error?.message}`);
  return result.stdout;
}

/** A process's start time (clock ticks after boot, /proc/PID/stat field 22); undefined when it is gone. */
export function startTicks(pid: number | 'self'): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[19];
  } catch {
    return undefined;
  }
}

/** What a test user's comment (GECOS) says: the test process that made it, by PID and start time. */
const COMMENT = /^taras test user of pid (\d+) started at (\d+)$/;
const ownComment = () => `taras test user of pid ${process.pid} started at ${startTicks('self')}`;

let swept = false;

/**
 * Removes test users whose test process is gone: a run killed from outside (a CI timeout, kill -9) never
 * reached its `after`. Only users whose comment names a process that no longer runs (the PID gone, or
 * reused by a process started at another time); those of runs still going are left alone.
 */
export function removeOrphanedTestUsers(): string[] {
  const removed: string[] = [];
  for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
    const [name, , , , comment] = line.split(':');
    const made = COMMENT.exec(comment ?? '');
    if (!name?.startsWith('tt') || made === null || startTicks(Number(made[1])) === made[2]) continue;
    spawnSync('pkill', ['-KILL', '-u', name]);
    spawnSync('/usr/sbin/userdel', ['--remove', '--force', name]);
    removed.push(name);
  }
  return removed;
}

/** A new user `tt<prefix><random>` (at most 32 characters) with its own group and a 0700 home under /home. */
export function createTestUser(prefix = 'u'): TestUser {
  if (!swept) {
    swept = true;
    removeOrphanedTestUsers();
  }
  const name = `tt${prefix.replace(/[^a-z0-9]/g, '').slice(0, 10)}${randomBytes(4).toString('hex')}`;
  run('/usr/sbin/useradd', ['--create-home', '--user-group', '--shell', '/bin/sh', '--comment', ownComment(), name]);
  created.push(name);
  const [uid, gid] = [Number(run('id', ['-u', name]).trim()), Number(run('id', ['-g', name]).trim())];
  run('chmod', ['0700', `/home/${name}`]);
  return { name, uid, gid, home: `/home/${name}` };
}

/** Removes every user this process created (with their homes and groups); kills what they still run first. */
export function removeTestUsers(): void {
  for (const name of created.splice(0)) {
    spawnSync('pkill', ['-KILL', '-u', name]);
    spawnSync('/usr/sbin/userdel', ['--remove', '--force', name]);
  }
}
