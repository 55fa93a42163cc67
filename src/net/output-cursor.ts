// The reading end of a numbered output stream (src/agent/session.ts): a
// job's supervisor numbers its output frames and keeps each until the reader
// acknowledges it, so a reader whose connection dropped (the controller or
// the agent restarted) is sent again every frame it did not acknowledge.
// The cursor drops the numbers it already has, notices a number skipped
// (output lost past what the node keeps), and acknowledges what it has, at
// most every ACK_AFTER_MS or every ACK_BYTES.

/** Acknowledge once this much output came in since the last acknowledgement... */
export const ACK_BYTES = 32 * 1024;
/** ...or this long after the first frame not acknowledged. */
export const ACK_AFTER_MS = 200;

export interface Taken {
  /** Not seen before: show it. */
  readonly fresh: boolean;
  /** Frames skipped just before this one (lost). */
  readonly lost: number;
}

export class OutputCursor {
  private last: number | null;
  /** Frames came in (new, or sent again) since the last acknowledgement. */
  private owed = false;
  private bytes = 0;
  private timer: NodeJS.Timeout | null = null;

  /**
   * @param ack sends {"t":"ack","n":N} (or the like) to the writer; it may drop it when disconnected (the next frame asks again)
   * @param start the last number already had: 0 for a stream read from its start, null when any first number is fine (an attach to a job others read before)
   */
  constructor(private readonly ack: (n: number) => void, start: number | null = 0) {
    this.last = start;
  }

  /** A frame numbered n (undefined: an unnumbered frame, from an older writer: always fresh) of `bytes` bytes. */
  take(n: number | undefined, bytes: number): Taken {
    if (n === undefined || !Number.isSafeInteger(n)) return { fresh: true, lost: 0 };
    if (this.last !== null && n <= this.last) {
      // Sent again after a reconnect: the writer still keeps it, so it is told again that it may forget it.
      this.schedule(0);
      return { fresh: false, lost: 0 };
    }
    const lost = this.last === null ? 0 : n - this.last - 1;
    this.last = n;
    this.schedule(bytes);
    return { fresh: true, lost };
  }

  /** Sends the acknowledgement now if any is owed (at the end, or before closing). */
  flush(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.bytes = 0;
    if (!this.owed || this.last === null) return;
    this.owed = false;
    this.ack(this.last);
  }

  /** The last number had (null: none yet). */
  get position(): number | null {
    return this.last;
  }

  private schedule(bytes: number): void {
    this.owed = true;
    this.bytes += bytes;
    if (this.bytes >= ACK_BYTES) {
      this.flush();
      return;
    }
    if (this.timer === null) {
      this.timer = setTimeout(() => this.flush(), ACK_AFTER_MS);
      this.timer.unref();
    }
  }
}
