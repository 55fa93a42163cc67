// Human formatting for terminal output: durations, counts, aligned tables.

import Table from 'cli-table3';

/** A duration in seconds as a person reads it: "45 s", "12.5 min", "3.4 h", "2.1 d". */
export function humanDuration(seconds: number): string {
  const abs = Math.abs(seconds);
  if (abs < 60) return `${round(seconds, abs < 10 ? 2 : 0)} s`;
  if (abs < 3600) return `${round(seconds / 60, 1)} min`;
  if (abs < 86400) return `${round(seconds / 3600, 1)} h`;
  return `${round(seconds / 86400, 1)} d`;
}

export function round(value: number, digits: number): string {
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

export const percent = (share: number, digits = 1): string => `${round(share * 100, digits)} %`;

/**
 * A borderless table with aligned columns; `numeric` columns are right-aligned.
 * Header and rows are plain strings.
 */
export function renderTable(head: string[], rows: string[][], numeric: ReadonlySet<number> = new Set()): string {
  const table = new Table({
    head,
    style: { head: [], border: [], compact: true, 'padding-left': 0, 'padding-right': 2 },
    chars: {
      top: '', 'top-mid': '', 'top-left': '', 'top-right': '', bottom: '', 'bottom-mid': '', 'bottom-left': '',
      'bottom-right': '', left: '', 'left-mid': '', mid: '', 'mid-mid': '', right: '', 'right-mid': '', middle: '',
    },
    colAligns: head.map((_, i) => (numeric.has(i) ? 'right' : 'left')),
  });
  table.push(...rows);
  return table
    .toString()
    .split('\n')
    .map((line) => line.trimEnd())
    .join('\n');
}
