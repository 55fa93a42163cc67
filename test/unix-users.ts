// Throwaway Unix users for tests that need real ones (tests and CI run as
// root): each gets a unique name, a home directory of its own (0700), and is
// removed with its home and group by `removeAll` (call it from `after`).
// Tests that need them skip with `notRootReason` when not root.

import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';

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

/** A new user `tt<prefix><random>` (at most 32 characters) with its own group and a 0700 home under /home. */
export function createTestUser(prefix = 'u'): TestUser {
  const name = `tt${prefix.replace(/[^a-z0-9]/g, '').slice(0, 10)}${randomBytes(4).toString('hex')}`;
  run('/usr/sbin/useradd', ['--create-home', '--user-group', '--shell', '/bin/sh', name]);
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
