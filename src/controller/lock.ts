// One controller per data directory. Two controllers on one database would
// each schedule the same queue and hand out the same job ids' nodes twice, so
// the second is refused at start with the first one's pid. The lock is an
// exclusive SQLite lock (fcntl) on `controller.lock`, held by an open
// connection: the kernel drops it when the process dies, even by kill -9, so
// a stale lock never blocks a restart and a reused pid is never mistaken for
// a live controller. `controller.pid` only says who holds it, for the message.

import { chmodSync, closeSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';

/** Another live controller holds the data directory. */
export class DataDirInUse extends Error {
  constructor(readonly dataDir: string, readonly pid: number | null) {
    super(`another controller${pid === null ? '' : ` (pid ${pid})`} is running on the data directory ${dataDir}; `
      + `stop it first (${pid === null ? 'Ctrl-C in its terminal, or `taras admin shutdown`' : `kill ${pid}, or Ctrl-C in its terminal`}), `
      + 'or give this one another data directory (--data DIR, or data_dir in cluster.toml)');
    this.name = 'DataDirInUse';
  }
}

export interface DataDirLock {
  release(): void;
}

/** Takes the data directory for this process, or throws DataDirInUse. */
export function lockDataDir(dataDir: string): DataDirLock {
  const lockPath = join(dataDir, 'controller.lock');
  const pidPath = join(dataDir, 'controller.pid');
  // SQLite makes its journal beside the lock with the lock's mode: both private, as everything in the data directory.
  closeSync(openSync(lockPath, 'a', 0o600));
  chmodSync(lockPath, 0o600);
  try {
    chmodSync(`${lockPath}-journal`, 0o600); // one an older Taras left readable
  } catch {
    // none: SQLite makes it with the lock's mode
  }
  const db = new Database(lockPath, { timeout: 0 }); // refuse at once: the holder does not let go by waiting
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    db.exec('BEGIN EXCLUSIVE');
  } catch (error) {
    db.close();
    if ((error as { code?: string }).code !== 'SQLITE_BUSY') throw error;
    throw new DataDirInUse(dataDir, pidIn(pidPath));
  }
  writeFileSync(pidPath, `${process.pid}\n`, { mode: 0o644 });
  return {
    release() {
      if (!db.open) return;
      if (pidIn(pidPath) === process.pid) rmSync(pidPath, { force: true });
      db.close();
    },
  };
}

function pidIn(path: string): number | null {
  try {
    const pid = Number(readFileSync(path, 'utf8').trim());
    return Number.isSafeInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}
