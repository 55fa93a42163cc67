// Who is calling: the one place that says so, on both ends. Today the client
// asserts the local Unix user in two headers and the server believes it; when
// verified credentials arrive (a later issue) only this module changes.
//
// How far the server can trust the assertion:
// - Unix socket: the caller is a process on this machine that may open the
//   socket file (its mode and folder decide who). Node cannot read the peer's
//   uid (SO_PEERCRED) without a native addon, so a local user could still
//   claim another's name: trust it for accounting and display, and for
//   permissions only on single-user or trusted machines.
// - TCP: advisory only. Anyone who can reach the port can claim any user.
//   Agents are authenticated by the cluster key, not by this.

import { userInfo } from 'node:os';

export const USER_HEADER = 'x-taras-user';
export const UID_HEADER = 'x-taras-uid';

export interface Identity {
  readonly user: string;
  readonly uid: number;
}

export type Transport = 'unix' | 'tcp';

/** The caller as the server sees it, with how much the claim is worth. */
export interface Caller extends Identity {
  /** `local-socket`: asserted by a local process; `advisory`: asserted over the network, unchecked. */
  readonly trust: 'local-socket' | 'advisory';
}

let cached: Identity | undefined;

/** The user running this process (the CLI's caller). */
export function localIdentity(): Identity {
  if (cached === undefined) {
    const info = userInfo();
    cached = { user: info.username, uid: info.uid };
  }
  return cached;
}

/** Header values are ASCII; a user name outside it is percent-encoded. */
export function identityHeaders(identity: Identity): Record<string, string> {
  return { [USER_HEADER]: encodeURIComponent(identity.user), [UID_HEADER]: String(identity.uid) };
}

const MAX_USER_CHARS = 256;

/** The caller a request claims to be, or null when it claims nothing usable (a handler decides whether that is allowed). */
export function callerFromHeaders(headers: Readonly<Record<string, string | string[] | undefined>>, transport: Transport): Caller | null {
  const userHeader = headers[USER_HEADER];
  const uidHeader = headers[UID_HEADER];
  if (typeof userHeader !== 'string' || typeof uidHeader !== 'string') return null;
  let user: string;
  try {
    user = decodeURIComponent(userHeader);
  } catch {
    return null;
  }
  // uid -1 is what os.userInfo reports on Windows
  const uid = /^-?\d{1,10}$/.test(uidHeader) ? Number(uidHeader) : NaN;
  if (user === '' || user.length > MAX_USER_CHARS || !Number.isSafeInteger(uid)) return null;
  return { user, uid, trust: transport === 'unix' ? 'local-socket' : 'advisory' };
}
