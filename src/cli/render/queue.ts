// `taras queue`: a header (clock, controller, policy, node and job counts),
// then every job in the order the scheduler will run them: running jobs by
// start, pending jobs by planned start (unplanned last), each by id on ties.
// Only the NAME column gives way to the terminal width. Filters (--user,
// --state) are the caller's; this renders what it is given.

import type { ApiClusterStatus, ApiJob } from '../../api/types.js';
import { finishedStates } from '../../api/types.js';
import { formatMemory, formatSbatchTime } from '../../jobspec/values.js';
import { jobCountsText, nodeCountsText } from './status.js';
import { alignColumns, counted, flow, hostlistText, printable } from './text.js';
import { LocalClock, toMillis, type Instant } from './time.js';

/** Narrower than this, a name says nothing; lines then pass the width instead. */
export const MIN_NAME_WIDTH = 10;

export const EMPTY_QUEUE = 'No jobs are running or waiting.';

export interface QueueView {
  readonly status: ApiClusterStatus;
  readonly jobs: readonly ApiJob[];
  /** The controller's clock (status.now) as a rule. */
  readonly now: Instant;
  /** --long: CPUs, memory per node, submit time, limit, working directory. */
  readonly long?: boolean;
  /** Terminal columns; undefined (not a terminal) never cuts names. */
  readonly width?: number;
  /** For tests; default the process's zone. */
  readonly timeZone?: string;
}

const enum Group {
  Running = 0,
  Pending = 1,
  Finished = 2,
}

function groupOf(job: ApiJob): Group {
  if (job.state === 'PENDING') return Group.Pending;
  if (finishedStates.includes(job.state)) return Group.Finished;
  return Group.Running;
}

function millisOrNaN(iso: string | null): number {
  return iso === null ? NaN : toMillis(iso);
}

/** A job with the times it is ordered and shown by, each parsed once. */
interface Placed {
  readonly job: ApiJob;
  readonly group: Group;
  /** Actual start, or the planned start of a pending job; NaN when none. */
  readonly startMillis: number;
  readonly endMillis: number;
  readonly sortMillis: number;
}

function place(job: ApiJob): Placed {
  const group = groupOf(job);
  const startMillis = millisOrNaN(job.startTime ?? (group === Group.Pending ? job.plannedStart : null));
  const endMillis = millisOrNaN(job.predictedEnd);
  const by = group === Group.Finished ? millisOrNaN(job.endTime) : startMillis;
  return { job, group, startMillis, endMillis, sortMillis: Number.isNaN(by) ? Infinity : by };
}

function byQueueOrder(a: Placed, b: Placed): number {
  return a.group - b.group || (a.sortMillis === b.sortMillis ? 0 : a.sortMillis < b.sortMillis ? -1 : 1) || a.job.id - b.job.id;
}

/** Running first by start, then pending by planned start (none last), then finished by end; ties by id. */
export function queueOrder(jobs: readonly ApiJob[]): ApiJob[] {
  return jobs.map(place).sort(byQueueOrder).map((placed) => placed.job);
}

/** The allocated nodes, or for a job with none yet how many it asks for. */
function nodesCell(job: ApiJob): string {
  return job.nodes.length === 0 ? counted(job.nodeCount, 'node') : hostlistText(job.nodes);
}

function header(view: QueueView, clock: LocalClock): string[] {
  const { status } = view;
  const controller = `controller ${status.up ? 'up' : 'down'} (taras ${printable(status.version)})`;
  const first = [clock.full(view.now), `cluster ${printable(status.cluster)}`, controller, `policy ${printable(status.policy)}`];
  return [...flow(first, view.width), ...flow([nodeCountsText(status.nodes), `jobs: ${jobCountsText(status.jobs)}`], view.width, '; ')];
}

interface Column {
  readonly head: string;
  /** Numbers align to the right. */
  readonly right?: boolean;
  /** Cells made by us from numbers and times, so measured by length (see alignColumns). */
  readonly ascii?: boolean;
  readonly cell: (placed: Placed) => string;
}

function columns(long: boolean, clock: LocalClock): Column[] {
  const start: Column = {
    head: 'START', ascii: true, cell: ({ startMillis }) => (Number.isNaN(startMillis) ? '-' : clock.at(startMillis)),
  };
  const end: Column = {
    head: 'END', ascii: true, cell: ({ startMillis, endMillis }) => (Number.isNaN(endMillis) ? '-' : clock.end(endMillis, startMillis)),
  };
  return [
    { head: 'JOBID', right: true, ascii: true, cell: ({ job }) => String(job.id) },
    { head: 'USER', cell: ({ job }) => printable(job.user) },
    { head: 'STATE', ascii: true, cell: ({ job }) => job.state },
    { head: 'PARTITION', cell: ({ job }) => printable(job.partition) },
    { head: 'NODES', cell: ({ job }) => nodesCell(job) },
    ...(long
      ? [
        { head: 'CPUS', right: true, ascii: true, cell: ({ job }: Placed) => String(job.ntasks * job.cpusPerTask) },
        { head: 'MEMORY', right: true, ascii: true, cell: ({ job }: Placed) => (job.memoryMiB === null ? '-' : formatMemory(job.memoryMiB)) },
        { head: 'SUBMITTED', ascii: true, cell: ({ job }: Placed) => clock.at(job.submitTime) },
        start,
        end,
        { head: 'LIMIT', ascii: true, cell: ({ job }: Placed) => (job.timeLimitSeconds === null ? 'UNLIMITED' : formatSbatchTime(job.timeLimitSeconds)) },
        { head: 'WORKDIR', cell: ({ job }: Placed) => printable(job.workingDir) },
      ]
      : [start, end]),
    // Last, and the only column cut to fit the terminal.
    { head: 'NAME', cell: ({ job }) => printable(job.name) },
  ];
}

/** The whole `taras queue` output, ending with a newline. */
export function renderQueue(view: QueueView): string {
  const clock = new LocalClock(view.now, view.timeZone);
  const lines = header(view, clock);
  lines.push('');
  if (view.jobs.length === 0) {
    lines.push(EMPTY_QUEUE);
    return `${lines.join('\n')}\n`;
  }
  const shown = columns(view.long === true, clock);
  const rows = view.jobs.map(place).sort(byQueueOrder).map((placed) => shown.map((column) => column.cell(placed)));
  const indexesWhere = (test: (column: Column) => boolean) => new Set(shown.flatMap((column, i) => (test(column) ? [i] : [])));
  const table = alignColumns(shown.map((column) => column.head), rows, {
    right: indexesWhere((column) => column.right === true),
    ascii: indexesWhere((column) => column.ascii === true),
    fit: view.width === undefined ? undefined : { column: shown.length - 1, width: view.width, min: MIN_NAME_WIDTH },
  });
  // concat, not push(...table): a spread of 100,000 lines overflows the call stack.
  return `${lines.concat(table).join('\n')}\n`;
}
