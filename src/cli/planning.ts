// `taras reserve` (advance reservations, Slurm's `scontrol create|show|delete
// reservation`) and the shared pieces of maintenance windows (`taras admin
// shutdown|drain --at T --until T2`, in admin.ts): times read as Slurm reads
// StartTime and --begin, durations as sbatch's --time.

import type { Command } from 'commander';
import { NODE_POLICIES, type ApiReservation, type ApiWhatIf } from '../api/types.js';
import { controllerOption, print, printJson, withClient } from './controller-client.js';
import { fail, parseIntegerFlag } from './flags.js';

const jsonOption = ['--json', 'print the controller\'s answer as JSON'] as const;

/**
 * Epoch ms of a time as --start/--at/--until take it, or a usage error naming
 * the option. `after`: an end's start: clock times (18:00, tomorrow) are the
 * next ones after it; `now+...` is always from now.
 */
export async function timeOption(option: string, raw: string, after?: number): Promise<number> {
  const { parseClockTime } = await import('../jobspec/values.js');
  const parsed = parseClockTime(raw, after === undefined || /^\s*now/i.test(raw) ? Date.now() : after);
  if (!parsed.ok) fail(`${option}: ${parsed.message}`);
  return parsed.value;
}

/** Seconds of a duration as --duration takes it (sbatch's --time forms). */
async function durationOption(raw: string): Promise<number> {
  const { parseTime } = await import('../jobspec/values.js');
  const parsed = parseTime(raw);
  if (!parsed.ok || parsed.value === 'UNLIMITED' || parsed.value <= 0) {
    fail(`--duration: ${parsed.ok ? 'a reservation needs an end: give minutes, HH:MM:SS or D-HH:MM' : parsed.message}`);
  }
  return parsed.value;
}

/** One line per reservation: name, kind, state, local start and end, nodes, users, jobs. */
export async function renderReservations(list: readonly ApiReservation[], now = new Date()): Promise<string> {
  if (list.length === 0) return 'No reservations or maintenance windows.\n';
  const { LocalClock } = await import('./render/time.js');
  const { alignColumns, hostlistText, printable } = await import('./render/text.js');
  const clock = new LocalClock(now);
  const rows = list.map((r) => [
    printable(r.name), r.kind === 'maintenance' ? 'MAINT' : 'RESV', r.state, clock.at(r.start), clock.end(r.end, r.start),
    hostlistText(r.nodes), r.users.length === 0 ? '(admins)' : printable(r.users.join(',')), r.jobs.length === 0 ? '-' : r.jobs.join(','),
  ]);
  return `${alignColumns(['NAME', 'KIND', 'STATE', 'START', 'END', 'NODES', 'USERS', 'JOBS'], rows).join('\n')}\n`;
}

/** Creates a reservation or window from parsed flags and says what was made (and which running jobs reach into it). */
export async function createReservation(controller: string | undefined, json: boolean | undefined, body: Record<string, unknown>): Promise<string> {
  return withClient(controller, async (api) => {
    const answer = await api.post<{ reservation: ApiReservation; overlappingJobs: number[] }>('/reservations', body);
    if (json) {
      printJson(answer);
      return answer.reservation.name;
    }
    const r = answer.reservation;
    const what = r.kind === 'maintenance' ? 'Maintenance window' : 'Reservation';
    print(`${what} ${r.name} created.`);
    print(await renderReservations([r]));
    if (answer.overlappingJobs.length > 0) {
      print(`Running jobs ${answer.overlappingJobs.join(', ')} may run into it (they are not stopped); nothing new starts there that would.`);
    }
    return r.name;
  });
}

interface ReserveFlags {
  controller?: string;
  json?: boolean;
  name?: string;
  start?: string;
  duration?: string;
  end?: string;
  nodes?: string;
  nodelist?: string;
  users?: string;
  maint?: boolean;
  reason?: string;
}

export function registerPlanningCommands(program: Command): void {
  registerWhatIfCommand(program);
  const reserve = program.command('reserve').description('advance reservations: nodes held for some users over a time window (administrators create them)')
    .addHelpText('after', '\nExamples:\n  taras reserve create --name course --start tomorrow --duration 3:00:00 --nodes 2 --users alice,bob\n'
      + '  taras reserve create --name fix --start 2026-12-01T09:00 --duration 60 --nodelist node[03-04] --maint\n'
      + '  taras reserve list\n  taras reserve show course\n  taras reserve delete course\n'
      + '  taras submit --reservation course job.sh      (a job that runs in it)\n');

  reserve.command('create')
    .description('reserve nodes over a time window (administrators only); others plan around it')
    .requiredOption('--name <name>', 'its name (letters, digits, _ . -)')
    .requiredOption('--start <time>', 'now, now+1hour, 14:00, tomorrow, 2026-12-01T09:00 (local time)')
    .option('--duration <time>', 'how long: minutes, HH:MM:SS or D-HH:MM (as sbatch --time)')
    .option('--end <time>', 'or when it ends (same forms as --start)')
    .option('--nodes <count>', 'how many nodes (the first free ones for the whole window)')
    .option('--nodelist <nodes>', 'or which nodes (node[01-04])')
    .option('--users <list>', 'who may run jobs in it: user names and @group, comma-separated (default: administrators only)')
    .option('--maint', 'a maintenance reservation (shown as MAINT)')
    .option('--reason <text>', 'why (shown in taras reserve list)')
    .option(...controllerOption).option(...jsonOption)
    .addHelpText('after', '\nExamples:\n  taras reserve create --name course --start tomorrow --duration 3:00:00 --nodes 2 --users alice,bob\n'
      + '  taras reserve create --name fix --start now+10min --end 18:00 --nodelist node[03-04] --maint --reason "firmware"\n')
    .action(async (flags: ReserveFlags) => {
      const startMs = await timeOption('--start', flags.start!);
      if ((flags.duration === undefined) === (flags.end === undefined)) fail('give --duration or --end (one of them)');
      const endMs = flags.end !== undefined ? await timeOption('--end', flags.end, startMs) : startMs + (await durationOption(flags.duration!)) * 1000;
      if ((flags.nodes === undefined) === (flags.nodelist === undefined)) fail('give --nodes COUNT or --nodelist NODES (one of them)');
      const body: Record<string, unknown> = {
        name: flags.name, kind: flags.maint ? 'maintenance' : 'reservation', startMs, endMs,
        users: flags.users === undefined ? [] : flags.users.split(',').map((u) => u.trim()).filter((u) => u !== ''),
        ...(flags.reason === undefined ? {} : { reason: flags.reason }),
      };
      if (flags.nodelist !== undefined) body.nodes = (await import('../config/hostlist.js')).expandHostlist(flags.nodelist);
      else {
        const count = parseIntegerFlag('--nodes', flags.nodes!, 1, 1_000_000, 'a count of nodes, 1 or more');
        if (!count.ok) fail(count.message);
        body.nodeCount = count.value;
      }
      await createReservation(flags.controller, flags.json, body);
    });

  reserve.command('list')
    .description('reservations and maintenance windows not yet ended')
    .option(...controllerOption).option(...jsonOption)
    .addHelpText('after', '\nExamples:\n  taras reserve list\n  taras reserve list --json\n')
    .action(async (flags: ReserveFlags) => {
      await withClient(flags.controller, async (api) => {
        const { reservations } = await api.get<{ reservations: ApiReservation[] }>('/reservations');
        if (flags.json) return printJson(reservations);
        print(await renderReservations(reservations));
      });
    });

  reserve.command('show').argument('<name>', 'the reservation')
    .description('one reservation: its window, nodes, users and jobs')
    .option(...controllerOption).option(...jsonOption)
    .addHelpText('after', '\nExamples:\n  taras reserve show course\n')
    .action(async (name: string, flags: ReserveFlags) => {
      await withClient(flags.controller, async (api) => {
        const reservation = await api.get<ApiReservation>(`/reservations/${encodeURIComponent(name)}`);
        if (flags.json) return printJson(reservation);
        print(await renderReservations([reservation]));
        if (reservation.reason !== '') print(`Reason: ${reservation.reason}`);
        print(`Created by ${reservation.createdBy}.`);
      });
    });

  reserve.command('delete').argument('<name>', 'the reservation')
    .description('delete a reservation or window (administrators only); its pending jobs then wait with no plan')
    .option(...controllerOption).option(...jsonOption)
    .addHelpText('after', '\nExamples:\n  taras reserve delete course\n')
    .action(async (name: string, flags: ReserveFlags) => {
      await withClient(flags.controller, async (api) => {
        const deleted = await api.delete<ApiReservation>(`/reservations/${encodeURIComponent(name)}`);
        if (flags.json) return printJson(deleted);
        print(`${deleted.kind === 'maintenance' ? 'Maintenance window' : 'Reservation'} ${deleted.name} deleted.`);
        if (deleted.jobs.length > 0) print(`Jobs ${deleted.jobs.join(', ')} asked for it: they wait with no plan; cancel them or submit them again.`);
      });
    });
}

/** The what-if table: each pending job's planned start now and then, the change, and a summary line. */
export async function renderWhatIf(answer: ApiWhatIf, change: string, now = new Date()): Promise<string> {
  const { LocalClock, span } = await import('./render/time.js');
  const { alignColumns, printable } = await import('./render/text.js');
  const clock = new LocalClock(now);
  const signed = (seconds: number) => (seconds === 0 ? '=' : `${seconds > 0 ? '+' : '-'}${span(Math.abs(seconds))}`);
  if (answer.jobs.length === 0) return `No pending jobs: ${change} changes no planned start.\n`;
  const rows = answer.jobs.map((job) => [
    String(job.id), printable(job.user), job.now === null ? 'no plan' : clock.at(job.now), job.then === null ? 'no plan' : clock.at(job.then),
    job.changeSeconds === null ? (job.now === job.then ? '=' : job.then === null ? 'loses its plan' : 'gets a plan') : signed(job.changeSeconds),
  ]);
  const lines = alignColumns(['JOBID', 'USER', 'NOW', `WITH ${change.toUpperCase()}`, 'CHANGE'], rows, { right: new Set([0]) });
  const summary = answer.meanChangeSeconds === null ? 'No job is planned both now and under the change.'
    : `Mean change ${signed(answer.meanChangeSeconds)}; ${answer.worst === null || answer.worst.changeSeconds <= 0 ? 'no job starts later' : `worst ${signed(answer.worst.changeSeconds)} (job ${answer.worst.id})`}; `
      + `${answer.earlier} earlier, ${answer.later} later, ${answer.same} unchanged`
      + `${answer.lostPlan > 0 ? `, ${answer.lostPlan} lose their plan` : ''}${answer.gainedPlan > 0 ? `, ${answer.gainedPlan} get one` : ''}.`;
  return `${lines.join('\n')}\n\n${summary}\nNothing was changed: this is the plan of a copy.\n`;
}

interface WhatIfFlags {
  controller?: string;
  json?: boolean;
  policy?: string;
  drain?: string;
  reserveAt?: string;
  reserveUntil?: string;
  reserveNodes?: string;
}

export function registerWhatIfCommand(program: Command): void {
  program.command('whatif')
    .description('plan the live queue under a change (another policy, drained nodes, a window) and compare every planned start; changes nothing')
    .option('--policy <name>', 'fcfs, easy or conservative')
    .option('--drain <nodes>', 'as if these nodes were drained (node[01-04])')
    .option('--reserve-at <time>', 'as if a window or reservation began then (now+1hour, 18:00, 2026-12-01T09:00)')
    .option('--reserve-until <time>', 'and ended then')
    .option('--reserve-nodes <nodes>', 'on these nodes (default: all)')
    .option(...controllerOption).option(...jsonOption)
    .addHelpText('after', '\nExamples:\n  taras whatif --policy conservative\n  taras whatif --drain node[03-04]\n'
      + '  taras whatif --reserve-at 18:00 --reserve-until 20:00 --reserve-nodes node[01-02]\n  taras whatif --policy easy --json\n')
    .action(async (flags: WhatIfFlags) => {
      const { expandHostlist } = await import('../config/hostlist.js');
      const body: Record<string, unknown> = {};
      const changes: string[] = [];
      if (flags.policy !== undefined) {
        if (!(NODE_POLICIES as readonly string[]).includes(flags.policy)) fail(`--policy: got '${flags.policy}': expected ${NODE_POLICIES.join(', ')}`);
        body.policy = flags.policy;
        changes.push(flags.policy);
      }
      if (flags.drain !== undefined) {
        body.drain = expandHostlist(flags.drain);
        changes.push(`${flags.drain} drained`);
      }
      if (flags.reserveAt !== undefined || flags.reserveUntil !== undefined) {
        if (flags.reserveAt === undefined || flags.reserveUntil === undefined) fail('a what-if window needs both --reserve-at and --reserve-until');
        const startMs = await timeOption('--reserve-at', flags.reserveAt!);
        const endMs = await timeOption('--reserve-until', flags.reserveUntil!, startMs);
        let nodes = flags.reserveNodes === undefined ? undefined : expandHostlist(flags.reserveNodes);
        if (nodes === undefined) nodes = await withClient(flags.controller, async (api) => (await api.get<{ name: string }[]>('/nodes')).map((n) => n.name));
        body.window = { startMs, endMs, nodes };
        changes.push('the window');
      }
      if (changes.length === 0) fail('say what to change: --policy, --drain or --reserve-at/--reserve-until (see taras whatif --help)');
      await withClient(flags.controller, async (api) => {
        const answer = await api.post<ApiWhatIf>('/whatif', body);
        if (flags.json) return printJson(answer);
        print(await renderWhatIf(answer, changes.join(', ')));
      });
    });
}
