// Files and folders other users must not read: key files are created 0600
// (never through a path someone planted), and the daemons set their folders'
// modes at every start, tightening what an older Taras or a careless umask
// left open, with a log line saying what changed.

import { chmodSync, closeSync, constants, existsSync, fchmodSync, fsyncSync, lstatSync, mkdirSync, openSync, realpathSync, statSync, writeSync, type Stats } from 'node:fs';
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

/** A folder a daemon will not make or take as its own, in one line with the fix: the daemon does not start. */
export class FolderError extends Error {}

/**
 * Makes the missing folders on the way to `folder` (and it), one at a time, as mkdir -p would, each with
 * `mode` (less the umask). Node's own recursive mkdir loops for ever where the kernel answers ENOENT to a
 * folder whose parent exists (under /proc): this one throws that error.
 */
export function makeFolders(folder: string, mode = 0o777): void {
  const missing: string[] = [];
  let at = folder;
  for (; !existsSync(at) && dirname(at) !== at; at = dirname(at)) missing.unshift(at);
  if (!statSync(at).isDirectory()) mkdirSync(at); // EEXIST, naming the file in the way, as mkdir -p says
  for (const at of missing) {
    try {
      mkdirSync(at, { mode });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
}

/**
 * Creates a folder if missing (its missing parents as mkdir -p would) and gives it exactly `mode`, whatever the umask.
 * An existing folder must be this process's own and not one others may write (such as /tmp): its mode is then
 * set as any other's. A shared folder made private would lock its users out, and one another user owns or may
 * write could have files planted in it or be changed under the daemon: both are refused.
 */
export function makeFolder(path: string, mode: number, log: (line: string) => void, what: string): void {
  checkOwnFolder(path, what);
  try {
    makeFolders(dirname(path));
    try {
      mkdirSync(path, { mode });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  } catch (error) {
    throw new FolderError(`cannot make the ${what} ${path} (${(error as Error).message}): ${ownFolderFix(what)}`);
  }
  setMode(realpathSync(path), mode, log, what); // a link's folder, not the link
}

const ownFolderFix = (what: string): string => `give the daemon a ${what} of its own (it is made if missing, private to the daemon's user)`;

/**
 * Throws the FolderError makeFolder would for an existing `path` it may not take as its own (see there); nothing
 * for a missing one. A symbolic link is followed: the folder it leads to is the one judged.
 */
export function checkOwnFolder(path: string, what: string): void {
  let stats;
  try {
    stats = statSync(path);
  } catch {
    return;
  }
  const fix = ownFolderFix(what);
  const euid = process.geteuid?.() ?? 0;
  if (!stats.isDirectory()) throw new FolderError(`${what} ${path} is not a folder: ${fix}`);
  if (stats.uid !== euid) throw new FolderError(`${what} ${path} belongs to uid ${stats.uid}, not to this daemon's user (uid ${euid}), who could change it under the daemon: ${fix}`);
  if ((stats.mode & 0o022) !== 0) {
    throw new FolderError(`${what} ${path} is a folder other users may write (mode ${octal(stats.mode & 0o7777)}): making it private would lock them out of it, and they may have put files in it: ${fix}`);
  }
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


/** What a file that is not a regular one is, for a refusal: "a folder", "a FIFO", ... */
export function fileKind(stats: Stats): string {
  if (stats.isDirectory()) return 'a folder';
  if (stats.isCharacterDevice()) return 'a character device';
  if (stats.isBlockDevice()) return 'a block device';
  if (stats.isFIFO()) return 'a FIFO';
  if (stats.isSocket()) return 'a socket';
  if (stats.isSymbolicLink()) return 'a symbolic link';
  return stats.isFile() ? 'a regular file' : 'an unusual kind of file';
}
