// `taras queue`: a header (clock, controller, policy, node and job counts),
// then every job in the order the scheduler will run them: running jobs by
// start, pending jobs by planned start (unplanned last), each by id on ties.
// Only the NAME column gives way to the terminal width. Filters (--user,
// --state) are the caller's; this renders what it is given.

import type { ApiClusterStatus, ApiJob } from '../../api/types.js';
import { finishedStates } from '../../api/types.js';
import { compressHostlist } from '../../config/hostlist.js';
import { formatMemory, formatSbatchTime } from '../../jobspec/values.js';
import { jobCountsText, nodeCountsText } from './status.js';
import { alignColumns, counted, flow, printable } from './text.js';
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

function nodesCell(job: ApiJob): string {
  if (job.nodes.length === 0) return counted(job.nodeCount, 'node');
  try {
    return compressHostlist(job.nodes);
  } catch {
    return printable(job.nodes.join(','));
  }
}

function header(view: QueueView, clock: LocalClock): string[] {
  const { status } = view;
  const controller = `controller ${status.up ? 'up' : 'down'} (taras ${printable(status.version)})`;
  const first = [clock.full(view.now), `cluster ${printable(status.cluster)}`, controller, `policy ${printable(status.policy)}`];
  return [...flow(first, view.width), ...flow([nodeCountsText(status.nodes), `jobs: ${jobCountsText(status.jobs)}`], view.width, '; ')];
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
  const long = view.long === true;
  const head = long
    ? ['JOBID', 'USER', 'STATE', 'PARTITION', 'NODES', 'CPUS', 'MEMORY', 'SUBMITTED', 'START', 'END', 'LIMIT', 'WORKDIR', 'NAME']
    : ['JOBID', 'USER', 'STATE', 'PARTITION', 'NODES', 'START', 'END', 'NAME'];
  const right = new Set(long ? [0, 5, 6] : [0]);
  const rows = view.jobs.map(place).sort(byQueueOrder).map(({ job, startMillis, endMillis }) => {
    const cells = [
      String(job.id),
      printable(job.user),
      job.state,
      printable(job.partition),
      nodesCell(job),
    ];
    if (long) {
      cells.push(
        String(job.ntasks * job.cpusPerTask),
        job.memoryMiB === null ? '-' : formatMemory(job.memoryMiB),
        clock.at(job.submitTime),
      );
    }
    cells.push(
      Number.isNaN(startMillis) ? '-' : clock.at(startMillis),
      Number.isNaN(endMillis) ? '-' : clock.end(endMillis, startMillis),
    );
    if (long) cells.push(job.timeLimitSeconds === null ? 'UNLIMITED' : formatSbatchTime(job.timeLimitSeconds), printable(job.workingDir));
    cells.push(printable(job.name));
    return cells;
  });
  // Cells of these columns are ASCII by construction: the id, state, counts, times and limit.
  const ascii = new Set(long ? [0, 2, 5, 6, 7, 8, 9, 10] : [0, 2, 5, 6]);
  const fit = view.width === undefined ? undefined : { column: head.length - 1, width: view.width, min: MIN_NAME_WIDTH };
  lines.push(...alignColumns(head, rows, { right, ascii, fit }));
  return `${lines.join('\n')}\n`;
}
