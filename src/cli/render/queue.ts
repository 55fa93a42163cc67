// `taras queue`: a header (clock, controller, policy, node and job counts),
// then every job in the order the scheduler will run them: running jobs by
// start, pending jobs by planned start (unplanned last), each by id on ties.
// Only the NAME column gives way to the terminal width. Filters (--user,
// --state) are the caller's; this renders what it is given.

import { encodeQueue, fromOffset, queueRowOf, sortQueue, type QueueTable } from '../../api/queue.js';
import type { ApiClusterStatus, ApiJob } from '../../api/types.js';
import { formatMemory, formatSbatchTime } from '../../jobspec/values.js';
import { jobCountsText, nodeCountsText } from './status.js';
import { alignColumnsBy, counted, displayWidth, flow, hostlistText, printable, truncate, type ColumnSource } from './text.js';
import { LocalClock, type Instant } from './time.js';

/** Narrower than this, a name says nothing; lines then pass the width instead. */
export const MIN_NAME_WIDTH = 10;

export const EMPTY_QUEUE = 'No jobs are running or waiting.';

export interface QueueView {
  readonly status: ApiClusterStatus;
  /** Jobs in the API vocabulary (ordered here)... */
  readonly jobs?: readonly ApiJob[];
  /** ...or the queue as `GET /queue` sends it (unpacked), already in queue order. */
  readonly queue?: QueueTable;
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
  return [...flow(first, view.width), ...flow([nodeCountsText(status.nodes), `jobs: ${jobCountsText(status.jobs)}`], view.width, '; ')];
}

/** Per distinct string of the queue's table: its printable form and width, computed once. */
function stringCells(strings: readonly string[]): { text: string[]; width: Int32Array } {
  const text = strings.map(printable);
  const width = new Int32Array(text.length);
  for (let i = 0; i < text.length; i++) width[i] = displayWidth(text[i]);
  return { text, width };
}

/** A column whose cells are interned strings: looked up per row, measured once per distinct string. */
function interned(head: string, indexes: readonly number[], cells: { text: string[]; width: Int32Array }): ColumnSource {
  const cut = new Map<number, string>();
  return {
    head,
    cell: (r) => cells.text[indexes[r]],
    width: (r) => cells.width[indexes[r]],
    cut: (r, width) => {
      const index = indexes[r];
      let text = cut.get(index);
      if (text === undefined) {
        text = truncate(cells.text[index], width);
        cut.set(index, text);
      }
      return text;
    },
  };
}

/** A column of ASCII cells made by us (numbers, times): made once each, measured by length. */
function ascii(head: string, cell: (r: number) => string, right = false): ColumnSource {
  return { head, right, cell, ascii: true };
}

function columns(queue: QueueTable, long: boolean, clock: LocalClock): ColumnSource[] {
  const cells = stringCells(queue.strings);
  const base = queue.timeBase;
  const nodeCells = queue.strings.map((text) => (text === '' ? '' : hostlistText(text.split(','))));
  const nodeWidths = nodeCells.map(displayWidth);
  const countCells = new Map<number, string>();
  const nodes: ColumnSource = {
    head: 'NODES',
    // The allocated nodes, or for a job with none yet how many it asks for.
    cell: (r) => {
      const index = queue.nodes[r];
      if (nodeCells[index] !== '') return nodeCells[index];
      const count = queue.nodeCount[r];
      let text = countCells.get(count);
      if (text === undefined) {
        text = counted(count, 'node');
        countCells.set(count, text);
      }
      return text;
    },
    width: (r) => (nodeCells[queue.nodes[r]] !== '' ? nodeWidths[queue.nodes[r]] : nodes.cell(r).length),
  };
  const start = ascii('START', (r) => {
    const at = queue.start[r];
    return at === null ? '-' : clock.at((base + at) * 1000);
  });
  const end = ascii('END', (r) => {
    const at = queue.end[r];
    return at === null ? '-' : clock.end((base + at) * 1000, fromOffset(queue.start[r], base));
  });
  const longColumns = (extra: NonNullable<QueueTable['long']>): ColumnSource[] => {
    return [
      ascii('CPUS', (r) => String(extra.cpus[r]), true),
      ascii('MEMORY', (r) => (extra.memoryMiB[r] === null ? '-' : formatMemory(extra.memoryMiB[r]!)), true),
      ascii('SUBMITTED', (r) => clock.at((base + extra.submit[r]) * 1000)),
      start,
      end,
      ascii('LIMIT', (r) => (extra.limitSeconds[r] === null ? 'UNLIMITED' : formatSbatchTime(extra.limitSeconds[r]!))),
      interned('WORKDIR', extra.workingDir, cells),
    ];
  };
  return [
    ascii('JOBID', (r) => String(queue.id[r]), true),
    interned('USER', queue.user, cells),
    interned('STATE', queue.state, cells),
    interned('PARTITION', queue.partition, cells),
    nodes,
    ...(long && queue.long ? longColumns(queue.long) : [start, end]),
    // Last, and the only column cut to fit the terminal.
    interned('NAME', queue.name, cells),
  ];
}

/** The whole `taras queue` output, ending with a newline. */
export function renderQueue(view: QueueView): string {
  const clock = new LocalClock(view.now, view.timeZone);
  const lines = header(view, clock);
  lines.push('');
  const queue = view.queue ?? encodeQueue(view.status, sortQueue((view.jobs ?? []).map(queueRowOf)), view.long === true);
  if (queue.id.length === 0) {
    lines.push(EMPTY_QUEUE);
    return `${lines.join('\n')}\n`;
  }
  const shown = columns(queue, view.long === true, clock);
  const fit = view.width === undefined ? undefined : { column: shown.length - 1, width: view.width, min: MIN_NAME_WIDTH };
  alignColumnsBy(shown, queue.id.length, (line) => lines.push(line), fit);
  return `${lines.join('\n')}\n`;
}
