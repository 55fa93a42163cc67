// Plain-text building blocks for the terminal views: aligned columns, cutting
// a cell to a width, "Label: value" blocks, lists in prose. Our own column
// aligner (no table library): `taras queue` prints tens of thousands of rows,
// and the simulator's tables use it too.

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

const ASCII = /^[\x20-\x7e]*$/;

/** Terminal columns a cell takes: one per code point (wide East Asian characters are not measured). */
export function displayWidth(text: string): number {
  return ASCII.test(text) ? text.length : Array.from(text).length;
}

/** `text` cut to `width` columns, ending with an ellipsis when cut. */
export function truncate(text: string, width: number): string {
  if (width <= 0) return '';
  if (ASCII.test(text)) return text.length <= width ? text : `${text.slice(0, width - 1)}…`;
  const points = Array.from(text);
  return points.length <= width ? text : `${points.slice(0, width - 1).join('')}…`;
}

const SPACES: string[] = [''];

/** `n` spaces (none for n <= 0), from a cache: padding is most of a table's work. */
function spaces(n: number): string {
  if (n <= 0) return '';
  while (SPACES.length <= n) SPACES.push(`${SPACES[SPACES.length - 1]} `);
  return SPACES[n];
}

export const COLUMN_GAP = 2;

export interface ColumnOptions {
  /** Columns aligned to the right (numbers). */
  readonly right?: ReadonlySet<number>;
  /** Columns whose cells are ASCII by construction (ids, times, counts): measured by length, not scanned. */
  readonly ascii?: ReadonlySet<number>;
  /** One column that gives way so lines fit `width`, cut with an ellipsis but never below `min`. */
  readonly fit?: { readonly column: number; readonly width: number; readonly min: number };
}

/**
 * Header and rows as aligned lines, columns two spaces apart, no trailing
 * spaces. Cells must be printable. Only the `fit` column is ever cut.
 */
export function alignColumns(head: readonly string[], rows: readonly (readonly string[])[], options: ColumnOptions = {}): string[] {
  const columns = head.length;
  const alignRight = head.map((_, c) => options.right?.has(c) === true);
  const byLength = head.map((_, c) => options.ascii?.has(c) === true);
  // Each cell is measured once: the widths pass and the padding pass share them.
  const cellWidths = new Int32Array((rows.length + 1) * columns);
  const widths = new Array<number>(columns).fill(0);
  const measure = (cells: readonly string[], r: number) => {
    for (let c = 0; c < columns; c += 1) {
      const width = byLength[c] ? cells[c].length : displayWidth(cells[c]);
      cellWidths[r * columns + c] = width;
      if (width > widths[c]) widths[c] = width;
    }
  };
  measure(head, 0);
  for (let r = 0; r < rows.length; r += 1) measure(rows[r], r + 1);

  const fit = options.fit;
  let fitted: string[] | undefined;
  if (fit !== undefined) {
    const others = widths.reduce((sum, width, c) => (c === fit.column ? sum : sum + width + COLUMN_GAP), 0);
    // Never narrower than the column's header (row 0 of cellWidths).
    const target = Math.max(fit.min, cellWidths[fit.column], fit.width - others);
    if (widths[fit.column] > target) {
      fitted = rows.map((row, r) => {
        const index = (r + 1) * columns + fit.column;
        if (cellWidths[index] <= target) return row[fit.column];
        cellWidths[index] = target;
        return truncate(row[fit.column], target);
      });
      widths[fit.column] = target;
    }
  }
  const cell = (cells: readonly string[], r: number, c: number): string =>
    fitted !== undefined && r > 0 && c === fit?.column ? fitted[r - 1] : cells[c];

  const gap = spaces(COLUMN_GAP);
  const last = columns - 1;
  // A line is joined from its pieces into one flat string: a chain of `+=` would keep
  // two dozen string objects per line alive until output, and the collector would copy them.
  const pieces: string[] = [];
  const line = (cells: readonly string[], r: number): string => {
    const base = r * columns;
    pieces.length = 0;
    for (let c = 0; c < last; c += 1) {
      const fill = spaces(widths[c] - cellWidths[base + c]);
      if (alignRight[c]) pieces.push(fill, cell(cells, r, c), gap);
      else pieces.push(cell(cells, r, c), fill, gap);
    }
    // The last column needs no padding after it, and the line no trailing spaces.
    if (alignRight[last]) pieces.push(spaces(widths[last] - cellWidths[base + last]), cell(cells, r, last));
    else if (cellWidths[base + last] > 0) pieces.push(cell(cells, r, last));
    else return pieces.join('').trimEnd();
    return pieces.join('');
  };
  const lines = new Array<string>(rows.length + 1);
  lines[0] = line(head, 0);
  for (let r = 0; r < rows.length; r += 1) lines[r + 1] = line(rows[r], r + 1);
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
