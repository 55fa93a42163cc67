// `taras status`: is the controller up, what it runs (version, cluster,
// policy, placement), node and job counts, and the administrator's message of
// the day in a frame. When it is down: the address tried and how to start one.

import type { ApiClusterStatus } from '../../api/types.js';
import { displayWidth, hostlistText, keyValueLines, printable } from './text.js';
import { fullTime, LocalClock } from './time.js';

/** "6 nodes: 2 idle, 1 allocated, 1 mixed, 1 down, 1 drained" (states with no node left out, idle always shown). */
export function nodeCountsText(nodes: ApiClusterStatus['nodes']): string {
  const parts = [`${nodes.idle} idle`];
  for (const state of ['allocated', 'mixed', 'down', 'drained'] as const) {
    if (nodes[state] > 0) parts.push(`${nodes[state]} ${state}`);
  }
  return `${nodes.total} node${nodes.total === 1 ? '' : 's'}: ${parts.join(', ')}`;
}

export function jobCountsText(jobs: ApiClusterStatus['jobs']): string {
  return `${jobs.running} running, ${jobs.pending} pending`;
}

/** "maint-1 on node[01-04], today 18:00 to 20:00" in local time. */
export function windowText(window: NonNullable<ApiClusterStatus['windows']>[number], now: string, timeZone?: string): string {
  const clock = new LocalClock(now, timeZone);
  return `${printable(window.name)} on ${hostlistText(window.nodes)}, ${clock.at(window.start)} to ${clock.end(window.end, window.start)}`;
}

/** The message of the day in a box, one line of text per line of the message. */
export function framedMessage(title: string, message: string): string[] {
  const lines = message.replace(/\r\n?/g, '\n').replace(/\n+$/, '').split('\n').map((line) => printable(line).trimEnd());
  const inner = Math.max(displayWidth(title) + 2, ...lines.map(displayWidth));
  const top = `┌─ ${title} ${'─'.repeat(inner - displayWidth(title) - 2)}─┐`;
  const body = lines.map((line) => `│ ${line}${' '.repeat(inner - displayWidth(line))} │`);
  return [top, ...body, `└${'─'.repeat(inner + 2)}┘`];
}

/**
 * The status block. `status` is null when no controller answered at
 * `address`; `timeZone` is for tests (default: the process's zone).
 */
export function renderStatus(status: ApiClusterStatus | null, address: string, timeZone?: string): string {
  if (status === null) {
    return [
      `Controller: down (no answer at ${address})`,
      '',
      'Start a whole test cluster on this machine with `npm start` in the Taras folder,',
      'or a controller alone with `taras controller --config cluster.toml`.',
      'To reach a controller elsewhere, pass --controller ADDRESS or set TARAS_CONTROLLER.',
      '',
    ].join('\n');
  }
  const rows: [string, string][] = [
    ['Controller', `${status.up ? 'up' : 'down'} at ${address}, taras ${printable(status.version)}`],
    ['Cluster', printable(status.cluster)],
    ['Clock', fullTime(status.now, timeZone)],
    ['Policy', printable(status.policy)],
    ['Placement', printable(status.placement)],
    ['Nodes', nodeCountsText(status.nodes)],
    ['Jobs', jobCountsText(status.jobs)],
  ];
  if (status.dayNight !== undefined) rows.push(['Queues', dayNightText(status.dayNight)]);
  for (const window of status.windows ?? []) rows.push([window.kind === 'maintenance' ? 'Maintenance' : 'Reservation', windowText(window, status.now, timeZone)]);
  const lines = keyValueLines(rows);
  if (status.motd !== null && status.motd.trim() !== '') lines.push('', ...framedMessage('Message of the day', status.motd));
  return `${lines.join('\n')}\n`;
}

/** The day and night queues line: which period it is, the day window, the limits, the holiday switch. */
function dayNightText(dayNight: NonNullable<ApiClusterStatus['dayNight']>): string {
  const { now, day, holiday, dayMaxNodeMinutes, dayMaxTimeSeconds, nightMaxNodeMinutes } = dayNight;
  const period = holiday ? 'holiday (night all the time)' : `${now} now`;
  const night = nightMaxNodeMinutes > 0 ? `night jobs up to ${nightMaxNodeMinutes} node-min` : 'night jobs any size';
  return `${period}; day is ${printable(day)}; day jobs up to ${dayMaxNodeMinutes} node-min and ${dayMaxTimeSeconds / 3600} h, ${night}`;
}
