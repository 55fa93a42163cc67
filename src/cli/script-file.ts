// Reading a batch script (`taras submit`'s operand or standard input, each
// script of `--many`) with a bound: a script travels in one request body, so
// one larger than the controller takes, or anything that is not a file (a
// device, a FIFO, a folder), is refused before it is read into memory.

import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { fileKind } from '../net/private-files.js';
import { MAX_REQUEST_BODY_BYTES } from '../api/types.js';

/** The most bytes a script may have: it must fit in a submission's body with the rest of the job. */
export const MAX_SCRIPT_BYTES = MAX_REQUEST_BODY_BYTES;

const TOO_LARGE = `more than a submission takes (${MAX_SCRIPT_BYTES} bytes, 1 MiB): keep the script small and its data in files it reads`;

/** A script's text, or why not: `unreadable` when reading failed (no such file, EAGAIN), else refused for its size or kind. */
export type ScriptRead = { ok: true; text: string } | { ok: false; message: string; unreadable?: true };

/**
 * The text of the script at `path` (0: standard input, which may be a pipe), or why not as a sentence that
 * starts with `what` ("the script run.sh"). At most MAX_SCRIPT_BYTES are read, so one that grows meanwhile is
 * refused too.
 */
export function readScript(path: string | 0, what: string): ScriptRead {
  const unreadable = (error: unknown): ScriptRead => ({
    ok: false, unreadable: true, message: `cannot read ${what} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}): give the path of a batch script`,
  });
  let fd: number;
  try {
    // O_NONBLOCK: a FIFO is refused below rather than waited on (regular files ignore it).
    fd = path === 0 ? 0 : openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    return unreadable(error);
  }
  try {
    const stats = fstatSync(fd);
    if (path !== 0 && !stats.isFile()) return { ok: false, message: `${what} is ${fileKind(stats)}, not a file: give the path of a batch script` };
    if (stats.isFile() && stats.size > MAX_SCRIPT_BYTES) return { ok: false, message: `${what} is ${stats.size} bytes, ${TOO_LARGE}` };
    const buffer = Buffer.alloc(MAX_SCRIPT_BYTES + 1);
    let length = 0;
    for (let read = -1; read !== 0 && length < buffer.length;) {
      read = readSome(fd, buffer, length);
      length += read;
    }
    if (length > MAX_SCRIPT_BYTES) return { ok: false, message: `${what} is ${TOO_LARGE}` };
    return { ok: true, text: buffer.toString('utf8', 0, length) };
  } catch (error) {
    return unreadable(error);
  } finally {
    if (path !== 0) closeSync(fd);
  }
}

/**
 * One read into `buffer` from `offset`. A pipe on standard input is non-blocking once process.stdin has been
 * looked at (isTTY): EAGAIN then means "nothing yet", and the read is tried again after a millisecond (the old
 * readFileSync took it for an empty script when more than the pipe's 64 KiB came).
 */
function readSome(fd: number, buffer: Buffer, offset: number): number {
  for (;;) {
    try {
      return readSync(fd, buffer, offset, buffer.length - offset, null);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error;
      Atomics.wait(PAUSE, 0, 0, 1);
    }
  }
}

const PAUSE = new Int32Array(new SharedArrayBuffer(4));
