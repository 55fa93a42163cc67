// Files and folders other users must not read: key files are created 0600
// (never through a path someone planted), and the daemons set their folders'
// modes at every start, tightening what an older Taras or a careless umask
// left open, with a log line saying what changed.

import { chmodSync, closeSync, constants, fchmodSync, fsyncSync, lstatSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * Creates `path` with mode 0600 and writes `text`: exclusively (an existing
 * file or a planted symlink throws EEXIST, never written through), the mode
 * set whatever the umask, and synced before it returns.
 */
export function writeSecretFile(path: string, text: string): void {
  const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    fchmodSync(fd, 0o600);
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** A mode in octal, as chmod takes it: 0755. */
export const octal = (mode: number) => mode.toString(8).padStart(4, '0');

/** The permission bits of `path` itself (a symlink is not followed), or null when it does not exist. */
function modeOf(path: string): number | null {
  try {
    return lstatSync(path).mode & 0o7777;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

/**
 * Sets exactly `mode` on an existing `path`; says so in the log when that took
 * permissions away (an older Taras or a loose umask had left them).
 */
export function setMode(path: string, mode: number, log: (line: string) => void, what: string): void {
  const current = modeOf(path);
  if (current === null || current === mode) return;
  chmodSync(path, mode);
  if ((current & ~mode) !== 0) log(`tightened ${what} ${path} from mode ${octal(current)} to ${octal(mode)}`);
}

/** Keeps only the `allowed` permission bits of an existing `path`, with a log line when any go. */
export function tightenMode(path: string, allowed: number, log: (line: string) => void, what: string): void {
  const current = modeOf(path);
  if (current === null || (current & ~allowed) === 0) return;
  chmodSync(path, current & allowed);
  log(`tightened ${what} ${path} from mode ${octal(current)} to ${octal(current & allowed)}`);
}

/** Creates a folder if missing (its missing parents as mkdir -p would) and gives it exactly `mode`, whatever the umask. */
export function makeFolder(path: string, mode: number, log: (line: string) => void, what: string): void {
  mkdirSync(dirname(path), { recursive: true });
  try {
    mkdirSync(path, { mode });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  setMode(path, mode, log, what);
}

/**
 * The first folder on the way to `path` that users other than its owner
 * cannot pass (no search permission for others), or null when all can:
 * a socket meant for every local user is useless behind one (a clone in a
 * 0700 home, say).
 */
export function unreachableFolderOf(path: string): { folder: string; mode: number } | null {
  const folders: string[] = [];
  for (let folder = dirname(path); ; folder = dirname(folder)) {
    folders.unshift(folder);
    if (dirname(folder) === folder) break;
  }
  for (const folder of folders) {
    const mode = modeOf(folder);
    if (mode !== null && (mode & 0o001) === 0) return { folder, mode };
  }
  return null;
}

