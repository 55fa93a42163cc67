// A first-in first-out list of frames and their total size, for the streams
// that keep what their reader has not acknowledged (a session's output, a
// step's input log, the input srun and taras run hold). The oldest leave at
// no copy: a head index moves on, the slot it leaves holds nothing (a 64 KiB
// piece of output must not stay in memory), and the array is cut once the
// slots gone are half of it, so each frame is copied at most once on average.

export class FrameQueue<T> {
  private items: (T | undefined)[] = [];
  private head = 0;
  /** The sizes of the frames in it, summed. */
  bytes = 0;

  constructor(private readonly sizeOf: (item: T) => number) {}

  get length(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
    this.bytes += this.sizeOf(item);
  }

  /** The oldest frame, or undefined when there is none. */
  first(): T | undefined {
    return this.items[this.head];
  }

  /** Takes the oldest frame out. */
  shift(): T | undefined {
    if (this.head === this.items.length) return undefined;
    const item = this.items[this.head]!;
    this.items[this.head++] = undefined;
    this.bytes -= this.sizeOf(item);
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  /** Takes frames out from the oldest while `gone` holds (asked again after each); how many went. */
  dropWhile(gone: (item: T) => boolean): number {
    let count = 0;
    for (let item = this.first(); item !== undefined && gone(item); item = this.first()) {
      this.shift();
      count++;
    }
    return count;
  }

  clear(): void {
    this.items = [];
    this.head = 0;
    this.bytes = 0;
  }

  *[Symbol.iterator](): IterableIterator<T> {
    for (let k = this.head; k < this.items.length; k++) yield this.items[k]!;
  }
}
