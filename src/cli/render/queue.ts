// `taras queue`: a header (clock, controller, policy, node and job counts),
// then every job in the order the scheduler will run them: running jobs by
// start, pending jobs by planned start (unplanned last), each by id on ties.
// Only the NAME column gives way to the terminal width. Filters (--user,
// --state) are the caller's; this renders what it is given.

import { packRows, queueRowOf, queueSegments, sortQueue, TYPE_LETTERS, type ApiQueue, type QueueSegment } from '../../api/queue.js';
import type { ApiClusterStatus, ApiJob } from '../../api/types.js';
import { formatMemory, formatSbatchTime } from '../../jobspec/values.js';
import { jobCountsText, nodeCountsText, windowText } from './status.js';
import { COLUMN_GAP, counted, displayWidth, fitColumn, flow, hostlistText, LineChunks, printable, truncate } from './text.js';
import { LocalClock, type Instant } from './time.js';

/** Narrower than this, a name says nothing; lines then pass the width instead. */
export const MIN_NAME_WIDTH = 10;

export const EMPTY_QUEUE = 'No jobs are running or waiting.';

export interface QueueView {
  readonly status: ApiClusterStatus;
  /** Jobs in the API vocabulary (ordered here)... */
  readonly jobs?: readonly ApiJob[];
  /** ...or the queue as `GET /queue` sends it (packed), already in queue order. */
  readonly queue?: ApiQueue;
  /** The controller's clock (status.now) as a rule. */
  readonly now: Instant;
  /** --long: CPUs, memory per node, submit time, limit, working directory. */
  readonly long?: boolean;
  /** Terminal columns; undefined (not a terminal) never cuts names. */
  readonly width?: number;
  /** For tests; default the process's zone. */
  readonly timeZone?: string;
}

/** Running first by start, then pending by planned start (none last), then finished by end; ties by id. */
export function queueOrder(jobs: readonly ApiJob[]): ApiJob[] {
  const byId = new Map(jobs.map((job) => [job.id, job]));
  return sortQueue(jobs.map(queueRowOf)).map((row) => byId.get(row.id)!);
}

function header(view: QueueView, clock: LocalClock): string[] {
  const { status } = view;
  const controller = `controller ${status.up ? 'up' : 'down'} (taras ${printable(status.version)})`;
  const first = [clock.full(view.now), `cluster ${printable(status.cluster)}`, controller, `policy ${printable(status.policy)}`];
  // Maintenance windows move every planned start: the queue says so (reservations are in taras reserve list).
  const windows = (status.windows ?? []).filter((w) => w.kind === 'maintenance').map((w) => `maintenance ${windowText(w, status.now, clock.timeZone)}`);
  return [...flow(first, view.width), ...flow([nodeCountsText(status.nodes), `jobs: ${jobCountsText(status.jobs)}`], view.width, '; '), ...windows];
}

// Indexes into QueueSegment.first/step (SEGMENT_COLUMNS).
const ID = 0, USER = 1, STATE = 2, PARTITION = 3, NODES = 4, NODE_COUNT = 5, START = 6, LENGTH = 7, END_TIME = 8, NAME = 9;
const CPUS = 10, MEMORY = 11, SUBMIT = 12, LIMIT = 13, WORKDIR = 14, TYPE = 15, DEADLINE = 16, LABEL = 17, HOLD = 18;

/** A column of the table, read a segment at a time (rows where every packed column stays in one run). */
interface QueueColumn {
  readonly head: string;
  /** Numbers align to the right. */
  readonly right?: boolean;
  /** Whether the cells differ within the segment (ids, and times that step); the others are made once per segment. */
  varies(segment: QueueSegment): boolean;
  /** The printable cell of the segment's row `j`. */
  cell(segment: QueueSegment, j: number): string;
  /** The widest cell of the segment, in terminal columns. */
  widest(segment: QueueSegment): number;
}

const never = (): boolean => false;

/** Cells that hold for a whole segment: the width of the one cell. */
function constant(head: string, cell: (segment: QueueSegment) => string, right = false): QueueColumn {
  return { head, right, varies: never, cell, widest: (segment) => displayWidth(cell(segment)) };
}

/** An interned string column: printable forms and widths computed once per distinct string. */
function interned(head: string, slot: number, text: readonly string[], widths: readonly number[]): QueueColumn {
  return { head, varies: never, cell: (segment) => text[segment.first[slot]!], widest: (segment) => widths[segment.first[slot]!] };
}

/** Epoch milliseconds of row `j` of a time column counted in seconds after `base`; null for none. */
function timeAt(segment: QueueSegment, slot: number, j: number, base: number): number | null {
  const offset = segment.first[slot];
  return offset === null ? null : (base + offset + segment.step[slot] * j) * 1000;
}

/** A column of times (ASCII): one cell per segment unless the times step within it. */
function times(head: string, steps: (segment: QueueSegment) => boolean, cell: (segment: QueueSegment, j: number) => string): QueueColumn {
  return {
    head, varies: (segment) => segment.rows > 1 && steps(segment), cell,
    widest: (segment) => {
      if (segment.rows === 1 || !steps(segment)) return cell(segment, 0).length;
      let widest = 0;
      for (let j = 0; j < segment.rows; j++) widest = Math.max(widest, cell(segment, j).length);
      return widest;
    },
  };
}

function columns(queue: ApiQueue, long: boolean, clock: LocalClock): QueueColumn[] {
  const text = queue.strings.map(printable);
  const widths = text.map(displayWidth);
  const base = queue.timeBase;
  const nodeCells = queue.strings.map((nodes) => (nodes === '' ? '' : hostlistText(nodes.split(','))));
  const stepsFrom = (slot: number) => (segment: QueueSegment) => segment.step[slot] !== 0 && segment.first[slot] !== null;
  const start = times('START', stepsFrom(START), (segment, j) => {
    const at = timeAt(segment, START, j, base);
    return at === null ? '-' : clock.at(at);
  });
  // A job's predicted end, or for a finished one its real end.
  const end = times('END', (segment) => stepsFrom(START)(segment) && (segment.first[LENGTH] !== null || segment.first[END_TIME] !== null), (segment, j) => {
    const at = timeAt(segment, START, j, base);
    const length = segment.first[LENGTH];
    if (at !== null && length !== null) return clock.end(at + length * 1000, at);
    const ended = segment.first[END_TIME];
    return ended === null ? '-' : clock.end((base + ended) * 1000, at);
  });
  // A job array's row shows its label (12_3, 12_[4-15%4]), the same for the whole segment.
  const id: QueueColumn = {
    head: 'JOBID', right: true,
    varies: (segment) => segment.rows > 1 && segment.step[ID] !== 0 && segment.first[LABEL] === null,
    cell: (segment, j) => (segment.first[LABEL] !== null ? text[segment.first[LABEL]!] : String(segment.first[ID]! + segment.step[ID] * j)),
    // Ids within a segment step evenly: the widest is at one end.
    widest: (segment) => (segment.first[LABEL] !== null ? widths[segment.first[LABEL]!]
      : Math.max(String(segment.first[ID]).length, String(segment.first[ID]! + segment.step[ID] * (segment.rows - 1)).length)),
  };
  const nodes = constant('NODES', (segment) => {
    // The allocated nodes, or for a job with none yet how many it asks for.
    const allocated = nodeCells[segment.first[NODES]!];
    return allocated !== '' ? allocated : counted(segment.first[NODE_COUNT]!, 'node');
  });
  const longColumns: QueueColumn[] = [
    constant('CPUS', (segment) => String(segment.first[CPUS]), true),
    constant('MEMORY', (segment) => (segment.first[MEMORY] === null ? '-' : formatMemory(segment.first[MEMORY]!)), true),
    times('SUBMITTED', stepsFrom(SUBMIT), (segment, j) => clock.at(timeAt(segment, SUBMIT, j, base)!)),
    start,
    end,
    constant('LIMIT', (segment) => (segment.first[LIMIT] === null ? 'UNLIMITED' : formatSbatchTime(segment.first[LIMIT]!))),
    interned('WORKDIR', WORKDIR, text, widths),
  ];
  // T (N normal, P priority, I interactive) and DEADLINE: only when some job listed is not normal.
  const typed = queue.columns.type !== undefined;
  const type = constant('T', (segment) => TYPE_LETTERS[segment.first[TYPE] ?? 0] ?? 'N');
  const deadline = constant('DEADLINE', (segment) => {
    const at = segment.first[DEADLINE];
    return at === null ? '-' : clock.at((base + at) * 1000);
  });
  return [
    id,
    ...(typed ? [type] : []),
    interned('USER', USER, text, widths),
    // A held job's mark after its state, as Argonne's spq: PENDING(h) its user's hold, (H) an administrator's, (P) paused.
    queue.columns.hold === undefined ? interned('STATE', STATE, text, widths)
      : constant('STATE', (segment) => text[segment.first[STATE]!] + (segment.first[HOLD] === null ? '' : `(${text[segment.first[HOLD]!]})`)),
    interned('PARTITION', PARTITION, text, widths),
    nodes,
    ...(long && queue.columns.cpus !== undefined ? longColumns : [start, end]),
    ...(typed ? [deadline] : []),
    // Last, and the only column cut to fit the terminal.
    interned('NAME', NAME, text, widths),
  ];
}

/**
 * The table's lines (header first), columns two spaces apart, no trailing
 * spaces, the last column cut to `fit` when given (never below its minimum).
 * Works a segment at a time: the cells that hold for the whole segment are
 * padded and joined once, so a row of a long uniform queue is its id plus one
 * shared string.
 */
function tableLines(shown: readonly QueueColumn[], segments: readonly QueueSegment[], fit: { width: number; min: number } | undefined, lines: LineChunks): void {
  const n = shown.length;
  const last = n - 1;
  const widths = shown.map((column) => displayWidth(column.head));
  for (const segment of segments) {
    for (let c = 0; c < n; c++) widths[c] = Math.max(widths[c], shown[c].widest(segment));
  }
  const cutTo = fit === undefined ? Infinity : fitColumn(widths, last, shown[last].head, fit);
  const gap = ' '.repeat(COLUMN_GAP);
  const cuts = new Map<string, string>();
  /** A cell padded to its column (and followed by the gap unless last); the last column is cut to fit. */
  const pad = (c: number, cell: string, width: number): string => {
    if (c === last) {
      if (width > cutTo) {
        let cut = cuts.get(cell);
        if (cut === undefined) {
          cut = truncate(cell, cutTo);
          cuts.set(cell, cut);
        }
        return cut;
      }
      return shown[c].right ? ' '.repeat(widths[c] - width) + cell : cell;
    }
    const fill = ' '.repeat(Math.max(0, widths[c] - width));
    return shown[c].right ? fill + cell + gap : cell + fill + gap;
  };
  lines.push(shown.map((column, c) => pad(c, column.head, displayWidth(column.head))).join('').trimEnd());
  // Per segment: constant stretches joined into one string, varying columns by index.
  const parts: (string | number)[] = [];
  const spaces: string[] = [];
  const fill = (count: number): string => spaces[count] ??= ' '.repeat(Math.max(0, count));
  for (const segment of segments) {
    parts.length = 0;
    let stretch = '';
    for (let c = 0; c < n; c++) {
      const column = shown[c];
      if (column.varies(segment)) {
        if (stretch !== '') parts.push(stretch);
        stretch = '';
        parts.push(c);
      } else {
        const cell = column.cell(segment, 0);
        stretch += pad(c, cell, displayWidth(cell));
      }
    }
    // No trailing spaces: an empty last cell leaves the padding before it.
    stretch = stretch.trimEnd();
    const trimRows = stretch === '' && parts.length > 0;
    if (stretch !== '') parts.push(stretch);
    const k = parts.length;
    for (let j = 0; j < segment.rows; j++) {
      let line = '';
      for (let p = 0; p < k; p++) {
        const part = parts[p];
        if (typeof part === 'string') line += part;
        else {
          // Varying cells are ASCII (ids, times): measured by length.
          const cell = shown[part].cell(segment, j);
          const padding = fill(widths[part] - cell.length);
          line += shown[part].right ? padding + cell : cell + padding;
          if (part !== last) line += gap;
        }
      }
      lines.push(trimRows ? line.trimEnd() : line);
    }
  }
}

/**
 * The whole `taras queue` output, ending with a newline; with `sink`, handed to
 * it in chunks as it is drawn (stdout: see LineChunks), and '' returned.
 */
export function renderQueue(view: QueueView, sink?: (chunk: string) => void): string {
  const clock = new LocalClock(view.now, view.timeZone);
  const lines = new LineChunks(sink);
  for (const line of header(view, clock)) lines.push(line);
  lines.push('');
  const queue = view.queue ?? packRows(view.status, sortQueue((view.jobs ?? []).map(queueRowOf)), view.long === true);
  if (queue.count === 0) {
    lines.push(EMPTY_QUEUE);
    return lines.end();
  }
  const shown = columns(queue, view.long === true, clock);
  const fit = view.width === undefined ? undefined : { width: view.width, min: MIN_NAME_WIDTH };
  tableLines(shown, queueSegments(queue), fit, lines);
  return lines.end();
}
