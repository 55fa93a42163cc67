// `taras plan`: the controller's plan as a text Gantt chart. One row per node,
// time across (from now to the end of the last bar, or a window), one letter
// per job, `#` for advance reservations, `!` for maintenance windows, `.` for
// idle; a time axis with local clock labels above the rows and a legend
// below. Every line fits the width; colours (background per job) only when
// asked, and stripping them gives the plain chart exactly.

import type { ApiPlan, ApiPlanItem } from '../../api/types.js';
import { alignColumns, counted, displayWidth, flow, hostlistText, printable, truncate } from './text.js';
import { LocalClock, span, toMillis } from './time.js';

export interface PlanOptions {
  /** Terminal columns: no line is wider. */
  readonly width: number;
  /** Background colours (ANSI escapes) for the bars. */
  readonly color: boolean;
  /** Window start, epoch milliseconds: default the plan's `now`. */
  readonly from?: number;
  /** Window end, epoch milliseconds: default the end of the last bar. */
  readonly until?: number;
  /** Only these nodes' rows, still in the plan's order. */
  readonly nodes?: readonly string[];
  /** For tests; default the process's zone. */
  readonly timeZone?: string;
}

/** Letters of the first 62 jobs drawn; later ones share MORE_JOBS. */
const JOB_SYMBOLS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const MORE_JOBS = '*';
const RESERVED = '#';
const MAINTENANCE = '!';
const SHARED = '+';
const IDLE = '.';

/** Narrower than this, the chart says little: node labels are cut instead. */
const MIN_CHART_COLUMNS = 10;
const LABEL_GAP = 2;
/** The legend's NAME column is cut to fit, never below this. */
const MIN_NAME_WIDTH = 10;
const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;
/** Tick spacings to choose from, in minutes: the first that leaves room for every label wins. */
const TICK_STEPS_MINUTES = [1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440, 2880, 10080];
/** 1970-01-05 was a Monday: weekly ticks fall on Mondays. */
const MONDAY_MS = 4 * DAY_MS;

const RESET = '\x1b[0m';
const JOB_STYLES = [
  '\x1b[30;106m', '\x1b[30;102m', '\x1b[30;103m', '\x1b[30;105m', '\x1b[30;104m',
  '\x1b[97;44m', '\x1b[97;42m', '\x1b[97;45m', '\x1b[97;46m', '\x1b[30;43m',
];
const RESERVED_STYLE = '\x1b[30;47m';
const MAINTENANCE_STYLE = '\x1b[97;41m';
const SHARED_STYLE = '\x1b[97;100m';

// Cell codes of a row: the background (idle, reserved, in maintenance), or a job's index + JOB_BASE.
const IDLE_CELL = 0, RESERVED_CELL = 1, MAINTENANCE_CELL = 2, SHARED_CELL = 3, JOB_BASE = 4;

/** An item with its times parsed once, epoch milliseconds (end Infinity: unlimited). */
interface Timed {
  readonly item: ApiPlanItem;
  readonly start: number;
  readonly end: number;
}

/** An item as drawn: its rows and where its bar runs, in chart columns. */
interface Bar extends Timed {
  readonly rows: readonly number[];
  readonly first: number;
  readonly last: number;
  /** Cell code (a job's is its index among the drawn jobs + JOB_BASE). */
  readonly cell: number;
}

interface Window {
  readonly from: number;
  readonly until: number;
  readonly columns: number;
}

function symbolOf(cell: number): string {
  if (cell === IDLE_CELL) return IDLE;
  if (cell === RESERVED_CELL) return RESERVED;
  if (cell === MAINTENANCE_CELL) return MAINTENANCE;
  if (cell === SHARED_CELL) return SHARED;
  return JOB_SYMBOLS[cell - JOB_BASE] ?? MORE_JOBS;
}

function styleOf(cell: number): string {
  if (cell === IDLE_CELL) return '';
  if (cell === RESERVED_CELL) return RESERVED_STYLE;
  if (cell === MAINTENANCE_CELL) return MAINTENANCE_STYLE;
  if (cell === SHARED_CELL || cell - JOB_BASE >= JOB_SYMBOLS.length) return SHARED_STYLE;
  return JOB_STYLES[(cell - JOB_BASE) % JOB_STYLES.length];
}

const painted = (text: string, style: string, color: boolean): string => (color && style !== '' ? `${style}${text}${RESET}` : text);

/** The default window's end: where the last bar ends (or, unlimited, starts); an hour when nothing lies ahead. */
function lastEnd(items: readonly Timed[], from: number): number {
  let until = -Infinity;
  for (const { start, end } of items) until = Math.max(until, end === Infinity ? start : end);
  return until > from ? until : from + 60 * MINUTE_MS;
}

/** The chart column nearest an instant: bars and ticks both snap to it, so a bar that starts where another ends starts where that one ends. */
const columnAt = (millis: number, window: Window): number => Math.round(((millis - window.from) * window.columns) / (window.until - window.from));

/**
 * The item's columns, or null when it lies outside the window. A bar shorter
 * than a column still takes one; a running job past its predicted end (it is
 * still running) shows in the first column.
 */
function columnsOf({ item, start, end }: Timed, window: Window): { first: number; last: number } | null {
  const { from, until, columns } = window;
  if (Number.isNaN(start) || start >= until) return null;
  if (end <= from && item.state !== 'RUNNING') return null;
  const first = Math.min(columns - 1, Math.max(0, columnAt(start, window)));
  const endColumn = end === Infinity ? columns : Math.min(columns, columnAt(end, window));
  return { first, last: Math.max(first, endColumn - 1) };
}

function barsOf(items: readonly Timed[], rowOf: ReadonlyMap<string, number>, window: Window): Bar[] {
  const bars: Bar[] = [];
  let jobs = 0;
  for (const timed of items) {
    const extent = columnsOf(timed, window);
    if (extent === null) continue;
    const { item } = timed;
    const rows = item.nodes.map((node) => rowOf.get(node)).filter((row): row is number => row !== undefined);
    const cell = item.kind === 'job' ? JOB_BASE + jobs++ : item.kind === 'reservation' ? RESERVED_CELL : MAINTENANCE_CELL;
    // Spelled out: an object spread here cost half the time of a 50,000-job plan.
    bars.push({ item, start: timed.start, end: timed.end, rows, first: extent.first, last: extent.last, cell });
  }
  return bars;
}

/**
 * Each row's cells: jobs over the background (maintenance over reservation).
 * Two jobs that overlap in time in one cell make it SHARED; two that only
 * meet there (a short bar widened to its one cell) leave it to the first.
 */
function fillRows(bars: readonly Bar[], rowCount: number, columns: number): Int32Array[] {
  const background = Array.from({ length: rowCount }, () => new Int32Array(columns));
  const jobs = Array.from({ length: rowCount }, () => new Int32Array(columns).fill(-1));
  const jobBars = bars.filter((bar) => bar.cell >= JOB_BASE);
  const overlap = (a: Bar, b: Bar): boolean => a.start < b.end && b.start < a.end;
  for (const bar of bars) {
    for (const row of bar.rows) {
      const cells = bar.cell < JOB_BASE ? background[row] : jobs[row];
      for (let c = bar.first; c <= bar.last; c++) {
        const held = cells[c];
        if (bar.cell < JOB_BASE) cells[c] = Math.max(held, bar.cell);
        else if (held === -1) cells[c] = bar.cell;
        else if (held === SHARED_CELL || overlap(jobBars[held - JOB_BASE], bar)) cells[c] = SHARED_CELL;
      }
    }
  }
  return background.map((cells, row) => cells.map((cell, c) => (jobs[row][c] === -1 ? cell : jobs[row][c])));
}

/** A row of cells as text, one escape per run of equal cells when coloured. */
function rowText(cells: Int32Array, color: boolean): string {
  let text = '';
  for (let c = 0; c < cells.length;) {
    let end = c + 1;
    while (end < cells.length && cells[end] === cells[c]) end++;
    text += painted(symbolOf(cells[c]).repeat(end - c), styleOf(cells[c]), color);
    c = end;
  }
  return text;
}

/**
 * The label line and the rule under it ("|" at each tick). Ticks fall on
 * round local times, spaced so labels never touch; a span over more than one
 * local day labels them with the weekday ("Mon 09:00").
 */
function axisLines(window: Window, clock: LocalClock): [string, string] {
  const { from, until, columns } = window;
  const multiDay = Math.floor(clock.wallClock(from) / DAY_MS) !== Math.floor(clock.wallClock(until - 1) / DAY_MS);
  const labelWidth = clock.tick(from, multiDay).length;
  const msPerColumn = (until - from) / columns;
  const needMs = (labelWidth + 2) * msPerColumn;
  const stepMinutes = TICK_STEPS_MINUTES.find((minutes) => minutes * MINUTE_MS >= needMs) ?? Math.ceil(needMs / (7 * DAY_MS)) * 7 * 24 * 60;
  const stepMs = stepMinutes * MINUTE_MS;
  const align = stepMinutes % (7 * 24 * 60) === 0 ? MONDAY_MS : 0;
  const labels = Array<string>(columns).fill(' ');
  const rule = Array<string>(columns).fill('-');
  let free = 0;
  for (let wall = Math.ceil((clock.wallClock(from) - align) / stepMs) * stepMs + align; ; wall += stepMs) {
    const tick = clock.fromWallClock(wall);
    if (tick >= until) break;
    const column = columnAt(tick, window);
    if (column < 0 || column >= columns) continue;
    rule[column] = '|';
    const label = clock.tick(tick, multiDay);
    if (column >= free && column + label.length <= columns) {
      for (let i = 0; i < label.length; i++) labels[column + i] = label[i];
      free = column + label.length + 1;
    }
  }
  return [labels.join('').trimEnd(), rule.join('')];
}

/**
 * The legend: the first 62 jobs, the reservations and the windows drawn, as
 * a table, or two lines each when the table cannot fit the width; then what
 * the other symbols mean.
 */
function legendLines(bars: readonly Bar[], clock: LocalClock, options: PlanOptions, shared: boolean): string[] {
  const listed = bars.filter((bar) => bar.cell - JOB_BASE < JOB_SYMBOLS.length);
  const more = bars.length - listed.length;
  const entries = listed.map(({ item, cell }) => ({
    symbol: symbolOf(cell),
    style: styleOf(cell),
    id: printable(item.id),
    user: item.user === null ? '-' : printable(item.user),
    start: clock.at(item.start),
    end: item.end === null ? 'unlimited' : clock.end(item.end, item.start),
    nodes: hostlistText(item.nodes),
    item,
  }));
  const rows = entries.map((entry) => [entry.symbol, entry.id, entry.user, entry.item.state, entry.start, entry.end, entry.nodes, printable(entry.item.name)]);
  const table = alignColumns(['', 'ID', 'USER', 'STATE', 'START', 'END', 'NODES', 'NAME'], rows, { fit: { column: 7, width: options.width, min: MIN_NAME_WIDTH } });
  const lines: string[] = [];
  // The symbol starts each entry: coloured once its line is cut to the width.
  const entryLine = (entry: (typeof entries)[number], text: string) => {
    const cut = truncate(text, options.width);
    lines.push(painted(cut[0], entry.style, options.color) + cut.slice(1));
  };
  if (table.every((line) => displayWidth(line) <= options.width)) {
    lines.push(table[0]);
    entries.forEach((entry, r) => entryLine(entry, table[r + 1]));
  } else {
    for (const entry of entries) {
      const owner = entry.item.user === null ? '' : ` ${entry.user}`;
      entryLine(entry, `${entry.symbol}  ${entry.id}${owner} ${entry.item.state} ${printable(entry.item.name)}`);
      lines.push(truncate(`   ${entry.start} - ${entry.end}, ${entry.nodes}`, options.width));
    }
  }
  if (more > 0) lines.push(`${painted(MORE_JOBS, SHARED_STYLE, options.color)}  ${counted(more, 'more job')} (taras queue lists them all)`);
  const key = [`${IDLE}  idle`];
  if (shared) key.push(`${painted(SHARED, SHARED_STYLE, options.color)}  several jobs at once`);
  lines.push(key.join(', '));
  return lines;
}

/** "not planned: 12, 15 (no node that counts can hold them)", wrapped to the width. */
function unplannedLines(ids: readonly number[], width: number): string[] {
  const why = '(no node that counts can hold them)';
  const lines = flow(ids.map((id, i) => (i === 0 ? `not planned: ${id}` : String(id))), width);
  const last = lines.length - 1;
  if (displayWidth(lines[last]) + 1 + why.length <= width) lines[last] += ` ${why}`;
  else lines.push(why);
  return lines;
}

/** What a column stands for: "5 min", "1 min 40 s" (span alone would say 2 min), "1 h 9 min". */
function columnSpan(seconds: number): string {
  const whole = Math.round(seconds);
  return whole > 60 && whole < 3600 && whole % 60 !== 0 ? `${Math.floor(whole / 60)} min ${whole % 60} s` : span(whole);
}

function checkWindow(from: number, until: number): void {
  if (Number.isNaN(from) || Number.isNaN(until)) throw new RangeError('renderPlan: the window is not a time (the plan\'s now must be ISO 8601)');
  if (until <= from) throw new RangeError(`renderPlan: the window ends (${new Date(until).toISOString()}) before it starts (${new Date(from).toISOString()})`);
}

/** The whole `taras plan` output, ending with a newline. */
export function renderPlan(plan: ApiPlan, options: PlanOptions): string {
  const clock = new LocalClock(plan.now, options.timeZone);
  const wanted = options.nodes === undefined ? undefined : new Set(options.nodes);
  const nodes = plan.nodes.filter((node) => wanted === undefined || wanted.has(node));
  const rowOf = new Map(nodes.map((node, row) => [node, row]));
  const onRows: Timed[] = plan.items
    .filter((item) => item.nodes.some((node) => rowOf.has(node)))
    .map((item) => ({ item, start: toMillis(item.start), end: item.end === null ? Infinity : toMillis(item.end) }));
  const from = options.from ?? clock.nowMillis;
  const until = options.until ?? lastEnd(onRows, from);
  checkWindow(from, until);

  const labels = nodes.map(printable);
  const longest = labels.reduce((widest, label) => Math.max(widest, displayWidth(label)), 1);
  const labelWidth = Math.max(1, Math.min(longest, options.width - LABEL_GAP - MIN_CHART_COLUMNS));
  const columns = Math.max(1, options.width - LABEL_GAP - labelWidth);
  const window: Window = { from, until, columns };
  const bars = barsOf(onRows, rowOf, window);
  const cells = fillRows(bars, nodes.length, columns);

  const indent = ' '.repeat(labelWidth + LABEL_GAP);
  const lines: string[] = [];
  if (nodes.length === 0) lines.push(plan.nodes.length === 0 ? 'No nodes in the plan: no agent has registered yet.' : 'None of the nodes asked for is in the plan.');
  else {
    const scale = `one column: ${columnSpan((until - from) / columns / 1000)}`;
    lines.push(...flow([`${clock.full(new Date(from))} to ${clock.end(until, from)}`, scale, counted(nodes.length, 'node')], options.width, '; '), '');
    const [tickLabels, rule] = axisLines(window, clock);
    lines.push(`${indent}${tickLabels}`, `${indent}${rule}`);
    nodes.forEach((_, row) => {
      const label = truncate(labels[row], labelWidth);
      lines.push(`${label}${' '.repeat(labelWidth - displayWidth(label) + LABEL_GAP)}${rowText(cells[row], options.color)}`);
    });
    lines.push('');
    const shared = cells.some((row) => row.includes(SHARED_CELL));
    if (bars.length === 0) lines.push('No job, reservation or maintenance on these nodes in this window.');
    else for (const line of legendLines(bars, clock, options, shared)) lines.push(line);
  }
  const later = onRows.filter(({ start }) => start >= until).length;
  if (later > 0) lines.push(...flow([`${counted(later, 'more item')} start after ${clock.at(until)}`, '--hours or --until shows further'], options.width, '; '));
  if (plan.unplanned.length > 0) for (const line of unplannedLines(plan.unplanned, options.width)) lines.push(line);
  return `${lines.map((line) => (line.includes('\x1b') ? line : truncate(line, options.width))).join('\n')}\n`;
}
