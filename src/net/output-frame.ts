// The frames that carry a job's output bytes, read and written without
// JSON.parse and JSON.stringify: {"t":"out"|"err",("task":K,)?"d":"BASE64"(,"n":N)?}.
// They are almost every byte of a stream, and each hop (the supervisor, the
// agent, the controller, srun) used to decode the whole line to a string, parse
// it, and write it out again: four passes over every byte at each. Here a
// frame is a Buffer from end to end: the base64 text is found by its quotes
// (base64 has neither a quote nor a backslash) and is copied, never decoded,
// until srun or `taras run` writes it. The wire format is unchanged: these
// lines are exactly what JSON.stringify gives for the same objects, and any
// other line (a note, an exit, a frame with escapes) goes through JSON.parse
// as before. A line with raw control characters or non-ASCII bytes inside
// `d` (which no supervisor writes) is taken too: it decodes to the same bytes
// as JSON.parse's `d` would (the base64 characters in it; Buffer.from(d,
// 'base64') skips the others), and one JSON.parse would refuse is decoded
// instead of dropped. Node built-ins only.

export interface OutputFrame {
  readonly t: 'out' | 'err';
  /** The step task the frame is from (on the controller's frames to srun). */
  readonly task?: number;
  /** The base64 text, as bytes (a view into the frame). */
  readonly d: Buffer;
  /** Its number in its stream (src/agent/session.ts); undefined from an older writer. */
  readonly n?: number;
}

const OUT = Buffer.from('{"t":"out",');
const ERR = Buffer.from('{"t":"err",');
const TASK = Buffer.from('"task":');
const DATA = Buffer.from('"d":"');
const NUMBER = Buffer.from('","n":');
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const CLOSE = 0x7d;
/** Digits of the largest safe integer. */
const MAX_DIGITS = 16;

/** The non-negative integer written in data[from, to), or undefined when it is not one (or not safe). */
function integerAt(data: Buffer, from: number, to: number): number | undefined {
  if (to <= from || to - from > MAX_DIGITS) return undefined;
  if (to - from > 1 && data[from] === 0x30) return undefined; // JSON has no leading zeros
  let value = 0;
  for (let i = from; i < to; i++) {
    const digit = data[i]! - 0x30;
    if (digit < 0 || digit > 9) return undefined;
    value = value * 10 + digit;
  }
  return Number.isSafeInteger(value) ? value : undefined;
}

const startsWithAt = (data: Buffer, prefix: Buffer, at: number): boolean =>
  data.length >= at + prefix.length && data.compare(prefix, 0, prefix.length, at, at + prefix.length) === 0;

/**
 * An output frame read from a line or message (without its newline), or null when `data` is anything else
 * (the caller then parses it as JSON): nothing JSON.parse would read differently is taken (but see above on bytes inside d).
 */
export function readOutputFrame(data: Buffer): OutputFrame | null {
  let t: 'out' | 'err';
  if (startsWithAt(data, OUT, 0)) t = 'out';
  else if (startsWithAt(data, ERR, 0)) t = 'err';
  else return null;
  let at = OUT.length;
  let task: number | undefined;
  if (startsWithAt(data, TASK, at)) {
    const comma = data.indexOf(COMMA, at + TASK.length);
    if (comma < 0) return null;
    task = integerAt(data, at + TASK.length, comma);
    if (task === undefined) return null;
    at = comma + 1;
  }
  if (!startsWithAt(data, DATA, at)) return null;
  const from = at + DATA.length;
  const quote = data.indexOf(QUOTE, from);
  if (quote < 0) return null;
  const backslash = data.indexOf(BACKSLASH, from);
  if (backslash >= 0 && backslash < quote) return null; // an escape: JSON.parse's to read
  let n: number | undefined;
  if (data.length === quote + 2 && data[quote + 1] === CLOSE) n = undefined;
  else if (startsWithAt(data, NUMBER, quote) && data[data.length - 1] === CLOSE) {
    n = integerAt(data, quote + NUMBER.length, data.length - 1);
    if (n === undefined) return null;
  } else return null;
  return { t, ...(task === undefined ? {} : { task }), d: data.subarray(from, quote), ...(n === undefined ? {} : { n }) };
}

/** What comes before a frame's base64 text, and after it, as JSON.stringify({t, task?, d, n?}) writes them. */
const headOf = (t: 'out' | 'err', task: number | undefined): string => `{"t":"${t}",${task === undefined ? '' : `"task":${task},`}"d":"`;
const tailOf = (n: number | undefined): string => (n === undefined ? '"}' : `","n":${n}}`);

/** A frame's line as JSON.stringify({t, task?, d, n?}) writes it (d: base64 text, as bytes), without a newline. */
export function writeOutputFrame(frame: OutputFrame): Buffer {
  return Buffer.concat([Buffer.from(headOf(frame.t, frame.task)), frame.d, Buffer.from(tailOf(frame.n))]);
}

/** The supervisor's line of a piece of output (d: its base64 text), newline included: written into one Buffer. */
export function outputLine(t: 'out' | 'err', d: string, n: number): Buffer {
  const head = headOf(t, undefined);
  const tail = `${tailOf(n)}\n`;
  const line = Buffer.allocUnsafe(head.length + d.length + tail.length);
  line.write(head, 0, 'latin1');
  line.write(d, head.length, 'latin1');
  line.write(tail, head.length + d.length, 'latin1');
  return line;
}

/** The bytes a frame carries (its base64 decoded). */
export const outputBytes = (frame: OutputFrame): Buffer => Buffer.from(frame.d.toString('latin1'), 'base64');
