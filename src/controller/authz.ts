// Who may do what, given a verified caller (src/net/identity.ts). The one rule
// of seed 000 2.1.7: a user affects only their own jobs. Administrators are
// root and the `admins` of cluster.toml (user names and "@group"); only they
// drain, resume, reconfigure, set the message of the day, shut down, issue
// tokens for others and act on others' jobs. Everyone sees the queue; a job's
// private details (working directory, output paths, event details) only its
// owner and administrators.

import type { ApiJob, ApiJobWithEvents } from '../api/types.js';
import type { Caller } from '../net/identity.js';
import { nativeAddon } from '../net/native.js';

/** Group memberships change rarely; a lookup per request would be wasted (NSS may be a network service). */
const GROUP_CACHE_MS = 10_000;
const groupCache = new Map<string, { groups: readonly number[]; atMs: number }>();

/** `@name` entries' gids, for as long as memberships (the same NSS, the same reasons). */
const groupIdCache = new Map<string, { gid: number | null; atMs: number }>();

function groupIdOf(name: string): number | null {
  const now = Date.now();
  const hit = groupIdCache.get(name);
  if (hit !== undefined && now - hit.atMs < GROUP_CACHE_MS) return hit.gid;
  const gid = nativeAddon().groupByName(name);
  if (groupIdCache.size > 10_000) groupIdCache.clear();
  groupIdCache.set(name, { gid, atMs: now });
  return gid;
}

function groupsOf(user: string, gid: number): readonly number[] {
  const key = `${user}\0${gid}`;
  const now = Date.now();
  const hit = groupCache.get(key);
  if (hit !== undefined && now - hit.atMs < GROUP_CACHE_MS) return hit.groups;
  const groups = nativeAddon().groupsOf(user, gid);
  if (groupCache.size > 10_000) groupCache.clear();
  groupCache.set(key, { groups, atMs: now });
  return groups;
}

/** Root, a listed user, or a member (primary or supplementary) of a listed "@group". */
export function isAdmin(caller: Caller | null, admins: readonly string[]): boolean {
  if (caller === null) return false;
  if (caller.uid === 0) return true;
  if (admins.length === 0) return false;
  if (admins.includes(caller.user)) return true;
  const groupNames = admins.filter((entry) => entry.startsWith('@'));
  if (groupNames.length === 0) return false;
  const mine = groupsOf(caller.user, caller.gid);
  return groupNames.some((entry) => {
    const gid = groupIdOf(entry.slice(1));
    return gid !== null && mine.includes(gid);
  });
}

/** Whether the caller may see and act on a job of `owner`. */
export const mayActOn = (caller: Caller, admin: boolean, owner: string): boolean => admin || caller.user === owner;

/**
 * What others see of a job's reason: a pending job's (why it waits, as squeue shows everyone), with
 * anything that looks like a path hidden; none once it ran, since the agent's failure reasons name the
 * owner's working directory and output files.
 */
export function publicReason(state: string, reason: string | null): string | null {
  if (reason === null || state !== 'PENDING') return null;
  // A path begins a word (after a space, a bracket, = or a quote): "11/27/2026" is a date, not a path.
  return reason.replace(/(^|[\s([{='"`])\/[^\s)\]}'"`]*/g, '$1(path hidden)');
}

/** A job as someone other than its owner (and not an administrator) sees it: the queue's facts, no paths. */
export function publicJob<T extends ApiJob>(job: T): T {
  const { mailUser: _private, ...rest } = job; // where its owner's mail goes is the owner's
  const shown = { ...rest, workingDir: null, stdoutPath: null, stderrPath: null, reason: publicReason(job.state, job.reason) } as T;
  if ('events' in job) {
    (shown as unknown as ApiJobWithEvents).events = (job as unknown as ApiJobWithEvents).events.map(({ time, type }) => ({ time, type, detail: {} }));
  }
  return shown;
}
