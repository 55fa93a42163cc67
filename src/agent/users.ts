// Unix users as this node knows them: the agent resolves the user a job was
// submitted as, the supervisor the uid it runs a job as. /etc/passwd first,
// then `getent passwd` for users from NSS (LDAP, SSSD). Node built-ins only.

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { Result } from './jobdir.js';

export interface UnixUser {
  readonly name: string;
  readonly uid: number;
  /** The primary group. Supplementary groups are set by the exec helper (initgroups), not looked up here. */
  readonly gid: number;
  readonly home: string;
  readonly shell: string;
}

export interface UserSources {
  readonly passwdPath?: string;
  /** Ask `getent passwd` when the passwd file does not have the user; default true. */
  readonly useGetent?: boolean;
}

/** One passwd line (name:password:uid:gid:gecos:home:shell), or null when it is not one. */
function parsePasswdLine(line: string): UnixUser | null {
  const fields = line.split(':');
  if (fields.length < 7) return null;
  const [name, , uidText, gidText, , home, shell] = fields as [string, string, string, string, string, string, string];
  if (!/^\d+$/.test(uidText) || !/^\d+$/.test(gidText)) return null; // also skips NIS "+" / "-" entries
  return { name, uid: Number(uidText), gid: Number(gidText), home, shell };
}

function fromPasswdFile(path: string, matches: (user: UnixUser) => boolean): UnixUser | null {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return null;
  }
  for (const line of text.split('\n')) {
    const user = parsePasswdLine(line);
    if (user !== null && matches(user)) return user;
  }
  return null;
}

/** `getent passwd KEY`: null when it does not know the key or is not installed. */
function fromGetent(key: string): UnixUser | null {
  try {
    const output = execFileSync('getent', ['passwd', key], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 5000 });
    return parsePasswdLine(output.split('\n')[0] ?? '');
  } catch {
    return null;
  }
}

/** The user named `name`, or an error saying what to do about it. */
export function lookupUser(name: string, sources: UserSources = {}): Result<UnixUser> {
  if (name === '' || name.startsWith('-') || /[:\s]/.test(name)) return { ok: false, error: `${JSON.stringify(name)} is not a valid Unix user name` };
  const user = fromPasswdFile(sources.passwdPath ?? '/etc/passwd', (entry) => entry.name === name)
    ?? (sources.useGetent === false ? null : fromGetent(name));
  if (user === null || user.name !== name) return { ok: false, error: `no user ${name} on this node: create it or submit as a user the nodes know` };
  return { ok: true, value: user };
}

/** The first user with this uid, or null (a uid need not have a passwd entry). */
export function lookupUserById(uid: number, sources: UserSources = {}): UnixUser | null {
  const user = fromPasswdFile(sources.passwdPath ?? '/etc/passwd', (entry) => entry.uid === uid)
    ?? (sources.useGetent === false ? null : fromGetent(String(uid)));
  return user !== null && user.uid === uid ? user : null;
}
