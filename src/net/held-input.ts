// The writing end of a numbered input stream (src/agent/session.ts): srun and
// taras run number their input, end of input and signals (`i`), with their
// own id (`w`: a session keeps each writer's numbers apart), and hold each
// frame until the reader says it took it, so that after a reconnect or a
// resume they send again only what was not taken. Bounded by the caller,
// which stops reading stdin once `full`.

import { FrameQueue } from './frame-queue.js';

export interface HeldFrame {
  readonly i: number;
  readonly text: string;
}

export class HeldInput {
  /** This writer's id on its input. */
  readonly writer = `${process.pid.toString(36)}-${Math.random().toString(36).slice(2, 12)}`;
  private number = 0;
  private readonly held = new FrameQueue<HeldFrame>((frame) => frame.text.length);

  constructor(private readonly limitBytes: number) {}

  /** The next frame, numbered and as sent. */
  private next(frame: object): HeldFrame {
    const i = ++this.number;
    return { i, text: JSON.stringify({ ...frame, i, w: this.writer }) };
  }

  /**
   * Numbers `frame`, sends it with `send` (null: no live connection now) and holds it, unless it was sent to a
   * reader that never says what it took (`readerAcknowledges` false: an older one). Whether the bound is reached
   * (the caller then stops reading its input).
   */
  offer(frame: object, send: ((text: string) => void) | null, readerAcknowledges: boolean): boolean {
    const numbered = this.next(frame);
    send?.(numbered.text);
    if (send === null || readerAcknowledges) this.held.push(numbered);
    return this.full;
  }

  /** The reader took every frame up to `upTo`: they are let go; whether any was. */
  taken(upTo: number): boolean {
    return this.held.dropWhile((frame) => frame.i <= upTo) > 0;
  }

  /** As much held as the bound: read no more input until some is taken. */
  get full(): boolean {
    return this.held.bytes >= this.limitBytes;
  }

  clear(): void {
    this.held.clear();
  }

  /** The frames held, oldest first, as sent. */
  *texts(): IterableIterator<string> {
    for (const frame of this.held) yield frame.text;
  }
}
