// Claiming listen addresses: a Unix socket file left by a killed controller is
// removed, but only after checking that nothing answers on it; a live one, or
// a file that is not a socket, is never touched. Listen failures become
// errors that say what to do.

import { lstatSync, unlinkSync } from 'node:fs';
import { connect } from 'node:net';
import type { NetLog } from './log.js';

export class ListenError extends Error {
  constructor(message: string, readonly fix: string) {
    super(message);
    this.name = 'ListenError';
  }

  static from(error: NodeJS.ErrnoException, where: string): ListenError {
    switch (error.code) {
      case 'EADDRINUSE':
        return new ListenError(`${where} is already in use by another process (another controller?)`,
          'stop that process, or choose another port (taras controller --port N, or --port 0 for any free one) or socket path');
      case 'EACCES':
      case 'EPERM':
        return new ListenError(`not allowed to listen on ${where}`, 'use a port above 1023, or a socket path in a folder this user may write');
      case 'EADDRNOTAVAIL':
        return new ListenError(`${where}: no network interface of this machine has that address`, 'give an address of this machine, 127.0.0.1 or 0.0.0.0');
      default:
        return new ListenError(`cannot listen on ${where}: ${error.message}`, 'check the address and the permissions of its folder');
    }
  }
}

const PROBE_TIMEOUT_MS = 1_000;

/** True if a process accepts connections on the socket; a hang counts as alive (better refuse than steal). */
function socketAnswers(path: string): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const probe = connect({ path });
    const done = (alive: boolean): void => {
      probe.destroy();
      resolve(alive);
    };
    probe.setTimeout(PROBE_TIMEOUT_MS, () => done(true));
    probe.once('connect', () => done(true));
    probe.once('error', (error: NodeJS.ErrnoException) => {
      probe.destroy();
      if (error.code === 'ECONNREFUSED' || error.code === 'ENOENT') resolve(false);
      else reject(new ListenError(`cannot check whether ${path} is in use: ${error.message}`, `check the permissions of ${path}, or remove it if no controller runs`));
    });
  });
}

/** Makes `path` free for a new socket, removing a stale one; refuses a live socket or any other file. */
export async function claimSocketPath(path: string, log: NetLog): Promise<void> {
  let isSocket: boolean;
  try {
    isSocket = lstatSync(path).isSocket();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw new ListenError(`cannot inspect ${path}: ${(error as Error).message}`, `check the permissions of the folder of ${path}`);
  }
  if (!isSocket) {
    throw new ListenError(`${path} exists and is not a socket; not replacing it`, 'move that file away, or choose another socket path');
  }
  if (await socketAnswers(path)) {
    throw new ListenError(`another process is listening on ${path} (a controller already running?)`, 'stop it first, or choose another socket path');
  }
  try {
    unlinkSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new ListenError(`cannot remove the stale socket ${path}: ${(error as Error).message}`, `remove it by hand (\`rm ${path}\`) if no controller runs`);
    }
  }
  log.warn(`removed stale socket file ${path} (nothing answered on it; left by a stopped controller)`);
}
