// One job: `taras show` (every field as aligned "Label: value" lines, then its
// event history) and `taras when` (when it starts and ends and what it waits
// for, in sentences).

import type { ApiHolder, ApiJob, ApiJobEvent, ApiJobWithEvents, ApiWhen } from '../../api/types.js';
import { finishedStates } from '../../api/types.js';
import { LAST_DATE_MS } from '../../api/durations.js';
import { formatHumanTime, formatMemory, formatSbatchTime } from '../../jobspec/values.js';
import { alignColumns, counted, hostlistText, joinList, keyValueLines, ordinal, printable } from './text.js';
import { LocalClock, span, toMillis, type Instant } from './time.js';

const isFinished = (job: ApiJob): boolean => finishedStates.includes(job.state);

function limitText(seconds: number | null): string {
  return seconds === null ? 'unlimited' : `${formatHumanTime(seconds)} (${formatSbatchTime(seconds)})`;
}

/** Times the controller writes into its words (an instant in UTC): here in local time, as every other time. */
const INSTANT = /\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z\b/g;

/** A reason or explanation from the controller, printable, its instants in local time. */
function wordsOf(text: string, clock: LocalClock): string {
  return printable(text).replace(INSTANT, (instant) => clock.at(instant));
}

/** One event detail value: hostlists for node lists, times (keys ending in Ms) local, quotes only where a value has spaces or quotes. */
function detailValue(key: string, value: unknown, clock?: LocalClock): string {
  if (clock !== undefined && /Ms$/.test(key) && typeof value === 'number' && Math.abs(value) <= LAST_DATE_MS) return clock.at(new Date(value).toISOString());
  if (Array.isArray(value)) {
    if (key === 'nodes' && value.every((item) => typeof item === 'string')) return hostlistText(value as string[]);
    return value.map((item) => detailValue('', item)).join(',');
  }
  if (typeof value === 'string') return /^[^\s"'=]+$/.test(value) ? printable(value) : printable(JSON.stringify(value));
  if (value !== null && typeof value === 'object') return printable(JSON.stringify(value));
  return String(value);
}

export function eventDetail(detail: ApiJobEvent['detail'], clock?: LocalClock): string {
  return Object.entries(detail)
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => `${printable(key)}=${detailValue(key, value, clock)}`)
    .join(' ');
}

/** `taras show ID`, ending with a newline; `timeZone` for tests (default the process's zone). */
export function renderShow(job: ApiJobWithEvents, now: Instant, timeZone?: string): string {
  const clock = new LocalClock(now, timeZone);
  const at = (iso: string) => clock.withHint(iso);
  const state = job.reason === null || job.reason === '' ? job.state : `${job.state} (${wordsOf(job.reason, clock)})`;
  const rows: [string, string][] = [
    ['Name', printable(job.name)],
    ['User', printable(job.user)],
    ['State', state],
    ['Partition', printable(job.partition)],
    ['Nodes', job.nodes.length === 0 ? `${job.nodeCount} (none allocated yet)` : `${job.nodeCount}: ${hostlistText(job.nodes)}`],
    ['Tasks', `${job.ntasks} x ${counted(job.cpusPerTask, 'CPU')} (${counted(job.ntasks * job.cpusPerTask, 'CPU')})`],
    ['Memory per node', job.memoryMiB === null ? '(not requested)' : formatMemory(job.memoryMiB)],
    ['Time limit', limitText(job.timeLimitSeconds)],
    ['Submitted', at(job.submitTime)],
  ];
  if (job.state === 'PENDING') rows.push(['Planned start', job.plannedStart === null ? '(not planned yet)' : at(job.plannedStart)]);
  if (job.firstPlannedStart && (job.state !== 'PENDING' || job.firstPlannedStart !== job.plannedStart)) {
    // The first promise, and how it was kept.
    const first = toMillis(job.firstPlannedStart);
    const kept = job.startTime === null ? '' : toMillis(job.startTime) <= first + 1000 ? ', kept' : `, started ${span((toMillis(job.startTime) - first) / 1000)} later`;
    rows.push(['First planned', `${at(job.firstPlannedStart)}${kept}`]);
  }
  if (job.checkpoint !== undefined) {
    const every = job.checkpoint.intervalSeconds === null ? 'no periodic checkpoints' : `every ${formatHumanTime(job.checkpoint.intervalSeconds)}`;
    rows.push(['Checkpoints', `${every}, each at most ${formatHumanTime(job.checkpoint.durationSeconds)} (class ${printable(job.checkpoint.programClass)})`]);
    const done = job.checkpoints ?? [];
    rows.push(['Last checkpoint', done.length === 0 ? '(none yet)' : `${at(done[done.length - 1])} (${counted(done.length, 'checkpoint')} in all)`]);
  }
  if ((job.restarts ?? 0) > 0) rows.push(['Restarts', String(job.restarts)]);
  if (job.startTime !== null) rows.push(['Started', at(job.startTime)]);
  if (!isFinished(job) && job.predictedEnd !== null) rows.push(['Predicted end', at(job.predictedEnd)]);
  if (job.endTime !== null) {
    const ran = job.startTime === null ? '' : `, after ${span((toMillis(job.endTime) - toMillis(job.startTime)) / 1000)}`;
    rows.push(['Ended', `${at(job.endTime)}${ran}`]);
  }
  if (job.exitCode !== null) rows.push(['Exit code', String(job.exitCode)]);
  // null: another user's job; its paths are for its owner and administrators.
  const path = (value: string | null) => (value === null ? '(private)' : printable(value));
  // An interactive job's output goes to the terminal of taras run (or attach), not to files.
  const terminal = job.type === 'interactive' ? `(interactive: the terminal of taras run; taras attach ${job.id})` : null;
  rows.push(
    ['Working dir', path(job.workingDir)],
    ['Output', terminal ?? path(job.stdoutPath)],
    ['Error', terminal !== null ? '(with the output)' : job.stderrPath === job.stdoutPath && job.stderrPath !== null ? '(with the output)' : path(job.stderrPath)],
    ['Requeue', job.requeue ? 'yes, if its node fails' : 'no'],
  );
  if (job.account !== undefined) rows.push(['Account', printable(job.account)]);
  if (job.comment !== undefined) rows.push(['Comment', printable(job.comment)]);
  if (job.mailType !== undefined || job.mailUser !== undefined) {
    rows.push(['Mail', `${printable((job.mailType ?? ['NONE']).join(','))} to ${printable(job.mailUser ?? job.user)}`]);
  }
  if (job.deadline !== null) rows.push(['Deadline', `${at(job.deadline)}, ${job.guaranteed ? 'guaranteed' : 'not guaranteed'} (a priority job)`]);
  // A task of a job array: its Slurm name too (12_3).
  const title = job.arrayJobId === undefined ? `Job ${job.id}` : `Job ${job.id} (task ${job.arrayJobId}_${job.arrayTaskId} of array ${job.arrayJobId})`;
  const lines = [title, ...keyValueLines(rows).map((line) => `  ${line}`), ''];
  if (job.events.length === 0) lines.push('No events recorded.');
  else {
    lines.push(`Events (${job.events.length}):`);
    const eventRows = job.events.map((event) => [clock.at(event.time, { seconds: true }), printable(event.type), eventDetail(event.detail, clock)]);
    lines.push(...alignColumns(['TIME', 'EVENT', 'DETAIL'], eventRows).map((line) => `  ${line}`));
  }
  return `${lines.join('\n')}\n`;
}

/** "17 (alice, ends 14:00)", the end shown next to the waiting job's own start. */
function waitedJob(waited: ApiWhen['waitsFor'][number], start: string, clock: LocalClock): string {
  const ends = waited.predictedEnd === null ? 'end unknown' : `ends ${clock.end(waited.predictedEnd, start)}`;
  return `${waited.id} (${printable(waited.user)}, ${ends})`;
}

function pendingSentences(when: ApiWhen, clock: LocalClock): string[] {
  const { job } = when;
  const start = when.plannedStart ?? job.plannedStart;
  const end = when.predictedEnd ?? job.predictedEnd;
  const nodes = `${counted(job.nodeCount, 'node')} of partition ${printable(job.partition)}`;
  const sentences: string[] = [];
  if (start === null) {
    const place = when.position === null ? '' : ` is ${ordinal(when.position)} in line and`;
    sentences.push(`Job ${job.id}${place} has no planned start yet (it needs ${nodes}).`);
  } else {
    const due = toMillis(start) <= clock.nowMillis ? `${clock.at(start)} (due now)` : clock.withHint(start);
    const ending = end === null ? ', with no time limit' : ` and end by ${clock.end(end, start)}`;
    const on = when.plannedNodes && when.plannedNodes.length > 0 ? `${hostlistText(when.plannedNodes)} (${nodes})` : nodes;
    sentences.push(`Job ${job.id} is planned to start ${due} on ${on}${ending}.`);
    if (when.heldBy && when.heldBy.length > 0) {
      const holders = when.heldBy.map((holder) => holderText(holder, start, clock));
      if (when.heldByMore > 0) holders.push(`${when.heldByMore} more`);
      sentences.push(`It waits for ${joinList(holders)}.`);
    } else if (when.waitsFor.length > 0) {
      const jobs = when.waitsFor.map((waited) => waitedJob(waited, start, clock));
      sentences.push(`It waits for ${when.waitsFor.length === 1 ? 'job' : 'jobs'} ${joinList(jobs)}.`);
    }
    if (when.position !== null) sentences.push(when.position === 1 ? 'It is next in line.' : `It is ${ordinal(when.position)} in line.`);
  }
  if (when.reservation) {
    sentences.push(`It runs in reservation ${printable(when.reservation.name)} (${clock.at(when.reservation.start)} to ${clock.end(when.reservation.end, when.reservation.start)}).`);
  }
  if (when.moved) sentences.push(`${capitalized(printable(when.moved))}.`);
  if (when.explanation.trim() !== '') sentences.push(wordsOf(when.explanation.trim(), clock));
  return sentences;
}

const capitalized = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

/** "job 17 (alice, running, ends 14:00) on n1", "maintenance window m (until 18:00)". */
function holderText(holder: ApiHolder, start: string, clock: LocalClock): string {
  const until = clock.end(holder.until, start);
  const on = holder.nodes.length > 0 ? ` on ${hostlistText(holder.nodes)}` : '';
  switch (holder.kind) {
    case 'running': return `job ${printable(holder.id)} (${printable(holder.user ?? '?')}, running, ends ${until})${on}`;
    case 'planned': return `job ${printable(holder.id)} (${printable(holder.user ?? '?')}, planned ahead of it, ends ${until})${on}`;
    case 'reservation': return `reservation ${printable(holder.id)} (until ${until})${on}`;
    default: return `maintenance window ${printable(holder.id)} (until ${until})${on}`;
  }
}

function runningSentences(job: ApiJob, clock: LocalClock): string[] {
  const on = job.nodes.length === 0 ? '' : ` on ${hostlistText(job.nodes)}`;
  if (job.state === 'COMPLETING') return [`Job ${job.id} is completing: its processes are ending${on}.`];
  if (job.state === 'SUSPENDED') {
    const why = job.reason === null || job.reason === '' ? '' : ` (${wordsOf(job.reason, clock)})`;
    return [`Job ${job.id} is suspended${on}${why}: its nodes stay its own, and its time limit moves later by the time it stays suspended.`];
  }
  const since = job.startTime === null ? '' : ` since ${clock.withHint(job.startTime)}`;
  let ending = ' and has no time limit';
  if (job.predictedEnd !== null) {
    const left = (toMillis(job.predictedEnd) - clock.nowMillis) / 1000;
    const by = clock.end(job.predictedEnd, job.startTime);
    ending = left > 0 ? ` and will end by ${by} (in ${span(left)}) at the latest` : ` and reached its time limit at ${by}`;
  }
  return [`Job ${job.id} has been running${since}${on}${ending}.`];
}

function finishedSentences(job: ApiJob, clock: LocalClock): string[] {
  const ended = job.endTime === null ? 'has ended' : `ended ${clock.withHint(job.endTime)}`;
  const code = job.exitCode === null ? '' : ` with exit code ${job.exitCode}`;
  const reason = job.reason === null || job.reason === '' ? '' : ` (${wordsOf(job.reason, clock)})`;
  const ran = job.startTime === null ? ' without starting' : `, having started ${clock.at(job.startTime)}`;
  return [`Job ${job.id} is no longer in the queue: it ${ended} as ${job.state}${code}${reason}${ran}.`];
}

/** `taras when ID`, one sentence a line, ending with a newline; `timeZone` for tests. */
export function renderWhen(when: ApiWhen, now: Instant, timeZone?: string): string {
  const clock = new LocalClock(now, timeZone);
  const { job } = when;
  const sentences = job.state === 'PENDING'
    ? pendingSentences(when, clock)
    : isFinished(job)
      ? finishedSentences(job, clock)
      : runningSentences(job, clock);
  if (when.deadline) {
    const { deadline } = when;
    const local = clock.at(Date.parse(deadline.deadline));
    sentences.push(deadline.guaranteed && !deadline.atRisk && job.endTime === null
      ? `Guaranteed to end by its deadline, ${local}.`
      : `Deadline ${local} (${deadline.policy}): ${deadline.text}.`);
  }
  return `${sentences.join('\n')}\n`;
}
