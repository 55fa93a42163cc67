// How the CLI's commands hand their output to the system: a reader that left
// (`| head`), waiting for a pipe's asynchronous writes before exiting, and
// pacing a stream (srun, taras run) by a slow reader.

/**
 * `taras queue | head`: the reader left, so the output is done: exit quietly (as squeue
 * does). Any other failed write loses output: say so and exit 1.
 */
export function outputFailed(error: NodeJS.ErrnoException): never {
  if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  process.stderr.write(`error: could not write the output: ${error.message}\n`);
  process.exit(1);
}

/** Resolves once everything written to the stream before has been handed to the system (or failed). */
export function flushed(stream: NodeJS.WriteStream): Promise<void> {
  return stream.writableLength === 0 ? Promise.resolve() : new Promise((resolve) => stream.write('', () => resolve()));
}

/** Output waiting in stdout or stderr past which OutputPacer stops reading its source. */
const OUTPUT_PACE_BYTES = 1024 * 1024;

/**
 * Paces a stream's reading by the output it gives: while stdout or stderr holds more than its high-water mark
 * (a megabyte: a slow reader at the other end of `srun ... | less`), the source (the controller's connection) is not read,
 * so the job's output waits at its node instead of in this process's memory.
 */
export class OutputPacer {
  private source: { pause(): void; resume(): void } | null = null;
  private readonly waiting = new Set<NodeJS.WriteStream>();

  /** The source now read (a new connection after a reconnect); resumed unless output waits. */
  attach(source: { pause(): void; resume(): void }): void {
    this.source = source;
    if (this.waiting.size === 0) source.resume();
    else source.pause();
  }

  write(to: NodeJS.WriteStream, data: Buffer | string): void {
    // Past a megabyte, not past the stream's own 16 KiB: pausing the connection at every frame cost a fifth of srun's rate.
    if (to.write(data) || to.writableLength < OUTPUT_PACE_BYTES || this.waiting.has(to)) return;
    this.waiting.add(to);
    this.source?.pause();
    to.once('drain', () => {
      this.waiting.delete(to);
      if (this.waiting.size === 0) this.source?.resume();
    });
  }
}

/**
 * Exits once stdout and stderr have been handed to the system: writes to a pipe are asynchronous on Linux, and
 * process.exit() drops what is still queued (srun's output into `| wc -c` lost its last pieces under load).
 */
export async function exitAfterOutput(code: number): Promise<never> {
  await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
  process.exit(code);
}
