// Human formatting for terminal output: durations, counts, aligned tables.

import { alignColumns } from './render/text.js';

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

/** A table as aligned lines (columns two spaces apart); `numeric` columns are right-aligned. */
export function renderTable(head: string[], rows: string[][], numeric: ReadonlySet<number> = new Set()): string {
  return alignColumns(head, rows, { right: numeric }).join('\n');
}
