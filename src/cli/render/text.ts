// Plain-text building blocks for the terminal views: aligned columns, cutting
// a cell to a width, "Label: value" blocks, lists in prose. Our own column
// aligner (no table library): `taras queue` prints tens of thousands of rows,
// and the simulator's tables use it too.

import stringWidth from 'string-width';
import { compressHostlist } from '../../config/hostlist.js';

const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const CONTROL_ALL = /[\u0000-\u001f\u007f-\u009f]/g;

/** Every text from users (job names, reasons, paths, the motd) goes through this: no terminal escapes. */
export function printable(text: string): string {
  return CONTROL.test(text) ? text.replace(CONTROL_ALL, (c) => (c === '\t' ? ' ' : '?')) : text;
}

/** Node names as a hostlist ("node[01-02]"), or as given, joined by commas, when they are not host names. */
export function hostlistText(nodes: readonly string[]): string {
  try {
    return compressHostlist(nodes);
  } catch {
    return printable(nodes.join(','));
  }
}

/** Lines a chunk of LineChunks holds. */
const LINES_PER_CHUNK = 1000;

/**
 * The lines of a long listing, joined a thousand at a time, each chunk handed
 * to `sink` as soon as it is full (stdout) or kept for `end`. Keeping 50,000
 * lines to join at the end kept every line's pieces alive until then, for the
 * young generation's collector to copy, and made one string of megabytes to
 * encode at once: `squeue` spent 99 ms of 280 in the collector at 50,000 jobs.
 * A chunk's pieces die young. The text is the lines joined by newlines, with
 * one after the last.
 */
export class LineChunks {
  private lines: string[] = [];
  private readonly kept: string[] = [];
  private count = 0;

  constructor(private readonly sink?: (chunk: string) => void) {}

  /** Lines pushed so far. */
  get length(): number {
    return this.count;
  }

  push(line: string): void {
    this.lines.push(line);
    this.count++;
    if (this.lines.length >= LINES_PER_CHUNK) this.cut();
  }

  /** Hands on the last chunk; the text kept (all of it without a sink, '' with one). */
  end(): string {
    this.cut();
    return this.kept.join('');
  }

  private cut(): void {
    if (this.lines.length === 0) return;
    const chunk = `${this.lines.join('\n')}\n`;
    this.lines = [];
    if (this.sink === undefined) this.kept.push(chunk);
    else this.sink(chunk);
  }
}

const ASCII = /^[\x20-\x7e]*$/;

let graphemes: Intl.Segmenter | undefined;

/**
 * Terminal columns a cell takes, as string-width measures them: East Asian
 * wide and fullwidth characters and emoji (👩‍🔬, 🇩🇪 included) 2, combining
 * marks and zero-width characters 0, the rest 1. Printable ASCII is its length.
 */
export function displayWidth(text: string): number {
  return ASCII.test(text) ? text.length : stringWidth(text);
}

/**
 * The longest start of `text` that takes at most `width` columns, cut only
 * between graphemes (never inside a surrogate pair, 👩‍🔬, 🇩🇪 or e + a combining
 * accent), with the columns it takes: one fewer than `width` when a wide
 * character would have crossed the edge.
 */
export function cutToWidth(text: string, width: number): { readonly text: string; readonly width: number } {
  const room = Math.max(0, width);
  if (ASCII.test(text)) return text.length <= room ? { text, width: text.length } : { text: text.slice(0, room), width: room };
  let used = 0;
  for (const { segment, index } of (graphemes ??= new Intl.Segmenter()).segment(text)) {
    const size = stringWidth(segment);
    if (used + size > room) return { text: text.slice(0, index), width: used };
    used += size;
  }
  return { text, width: used };
}

/** `text` cut to at most `width` columns, ending with an ellipsis when cut (a column narrower when a wide character ends the cut). */
export function truncate(text: string, width: number): string {
  if (width <= 0) return '';
  if (ASCII.test(text)) return text.length <= width ? text : `${text.slice(0, width - 1)}…`;
  return displayWidth(text) <= width ? text : `${cutToWidth(text, width - 1).text}…`;
}

/** `text` padded with spaces to `width` columns: on the left when `right`, else on the right (never cut). */
export function padToWidth(text: string, width: number, right: boolean): string {
  const fill = width - displayWidth(text);
  if (fill <= 0) return text;
  return right ? spaces(fill) + text : text + spaces(fill);
}

const SPACES: string[] = [''];

/** `n` spaces (none for n <= 0), from a cache: padding is most of a table's work. */
function spaces(n: number): string {
  if (n <= 0) return '';
  while (SPACES.length <= n) SPACES.push(`${SPACES[SPACES.length - 1]} `);
  return SPACES[n];
}

export const COLUMN_GAP = 2;

/**
 * The width the `column` is cut to so that lines fit `fit.width`, never below
 * `fit.min` nor its header (Infinity: no cut); narrows `widths[column]` to it.
 */
export function fitColumn(widths: number[], column: number, head: string, fit: { readonly width: number; readonly min: number }): number {
  const others = widths.reduce((sum, width, c) => (c === column ? sum : sum + width + COLUMN_GAP), 0);
  const target = Math.max(fit.min, displayWidth(head), fit.width - others);
  if (widths[column] <= target) return Infinity;
  widths[column] = target;
  return target;
}

export interface ColumnOptions {
  /** Columns aligned to the right (numbers). */
  readonly right?: ReadonlySet<number>;
  /** Columns whose cells are ASCII by construction (ids, times, counts): measured by length, not scanned. */
  readonly ascii?: ReadonlySet<number>;
  /** One column that gives way so lines fit `width`, cut with an ellipsis but never below `min`. */
  readonly fit?: { readonly column: number; readonly width: number; readonly min: number };
}

/** A column read by row index: for tables whose cells are cheaper to look up than to build up front. */
export interface ColumnSource {
  readonly head: string;
  /** Numbers align to the right. */
  readonly right?: boolean;
  /** The printable cell of row `r` (0-based, header excluded). */
  readonly cell: (r: number) => string;
  /** Its width in terminal columns (displayWidth of the cell). */
  readonly width: (r: number) => number;
  /** For the fit column: the cell cut to `width` columns (default: truncate). */
  readonly cut?: (r: number, width: number) => string;
}

/**
 * Header and `count` rows as aligned lines, columns two spaces apart, no
 * trailing spaces; every cell is read twice (widths, then lines) and never
 * kept, so a table of 50,000 rows holds only its lines. Only the `fit`
 * column is ever cut. Lines are handed to `emit` in order (header first).
 */
export function alignColumnsBy(
  columns: readonly ColumnSource[],
  count: number,
  emit: (line: string) => void,
  fit?: { readonly column: number; readonly width: number; readonly min: number },
): void {
  const n = columns.length;
  const widths = columns.map((column) => displayWidth(column.head));
  for (let c = 0; c < n; c += 1) {
    const width = columns[c].width;
    let widest = widths[c];
    for (let r = 0; r < count; r += 1) {
      const w = width(r);
      if (w > widest) widest = w;
    }
    widths[c] = widest;
  }
  const cutTo = fit === undefined ? Infinity : fitColumn(widths, fit.column, columns[fit.column].head, fit);
  const gap = spaces(COLUMN_GAP);
  const last = n - 1;
  // A line is joined from its pieces into one flat string: a chain of `+=` would keep
  // two dozen string objects per line alive until output, and the collector would copy them.
  const pieces: string[] = [];
  const line = (r: number): string => {
    pieces.length = 0;
    for (let c = 0; c <= last; c += 1) {
      const column = columns[c];
      let text = r < 0 ? column.head : column.cell(r);
      let width = r < 0 ? displayWidth(text) : column.width(r);
      if (c === fit?.column && width > cutTo) {
        text = r >= 0 && column.cut ? column.cut(r, cutTo) : truncate(text, cutTo);
        // A wide character at the edge leaves the cut a column short: the padding makes it up.
        width = displayWidth(text);
      }
      const fill = spaces(widths[c] - width);
      if (c === last) {
        // The last column needs no padding after it, and the line no trailing spaces.
        if (column.right) pieces.push(fill, text);
        else if (width > 0) pieces.push(text);
        else return pieces.join('').trimEnd();
      } else if (column.right) pieces.push(fill, text, gap);
      else pieces.push(text, fill, gap);
    }
    return pieces.join('');
  };
  emit(line(-1));
  for (let r = 0; r < count; r += 1) emit(line(r));
}

/**
 * Header and rows as aligned lines, columns two spaces apart, no trailing
 * spaces. Cells must be printable. Only the `fit` column is ever cut.
 */
export function alignColumns(head: readonly string[], rows: readonly (readonly string[])[], options: ColumnOptions = {}): string[] {
  // Each cell is measured once, here; the aligner reads the widths back.
  const widths = head.map((_, c) => {
    const byLength = options.ascii?.has(c) === true;
    const measured = new Int32Array(rows.length);
    for (let r = 0; r < rows.length; r += 1) measured[r] = byLength ? rows[r][c].length : displayWidth(rows[r][c]);
    return measured;
  });
  const lines: string[] = [];
  alignColumnsBy(
    head.map((title, c) => ({ head: title, right: options.right?.has(c) === true, cell: (r: number) => rows[r][c], width: (r: number) => widths[c][r] })),
    rows.length,
    (line) => lines.push(line),
    options.fit,
  );
  return lines;
}

/** Aligned "Label:  value" lines, the labels padded to the longest. */
export function keyValueLines(rows: readonly (readonly [label: string, value: string])[]): string[] {
  const labelWidth = Math.max(0, ...rows.map(([label]) => displayWidth(label))) + 1;
  return rows.map(([label, value]) => `${label}:${spaces(labelWidth - displayWidth(label) - 1)}  ${value}`.trimEnd());
}

/** Parts joined by `separator`, starting a new line whenever the next part would pass `width`. */
export function flow(parts: readonly string[], width: number | undefined, separator = ', '): string[] {
  const lines: string[] = [];
  let current = '';
  for (const part of parts) {
    if (current === '') current = part;
    else if (width === undefined || displayWidth(current) + separator.length + displayWidth(part) <= width) current += separator + part;
    else {
      lines.push(`${current}${separator.trimEnd()}`);
      current = part;
    }
  }
  if (current !== '') lines.push(current);
  return lines;
}

/** "a", "a and b", "a, b and c". */
export function joinList(items: readonly string[]): string {
  if (items.length <= 1) return items.join('');
  return `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

/** 1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st. */
export function ordinal(n: number): string {
  const lastTwo = n % 100;
  if (lastTwo >= 11 && lastTwo <= 13) return `${n}th`;
  const suffix = ['th', 'st', 'nd', 'rd'][n % 10] ?? 'th';
  return `${n}${suffix}`;
}

/** "1 node", "2 nodes". */
export function counted(n: number, singular: string, pluralForm = `${singular}s`): string {
  return `${n} ${n === 1 ? singular : pluralForm}`;
}
