// `taras admin`: the operator's subcommands (drain, resume, motd,
// reconfigure, shutdown, token), each one request to the controller's admin API.
// Each says in words what it did (drain and resume show the nodes as `taras
// nodes` does); --json prints the controller's answer instead.

import type { Command } from 'commander';
import type { ApiClusterStatus, ApiNode } from '../api/types.js';
import { controllerOption, print, printJson, withClient } from './controller-client.js';
import { fail } from './flags.js';

const jsonOption = ['--json', 'print the controller\'s answer as JSON'] as const;

interface AdminFlags {
  controller?: string;
  json?: boolean;
  reason?: string;
  user?: string;
  lifespan?: string;
  at?: string;
  until?: string;
  name?: string;
}

/**
 * A maintenance window (`shutdown --at T --until T2`: every node; `drain
 * NODES --at T --until T2`: those): a hold in the plan, so every planned
 * start moves around it and no job starts that would run into it.
 */
async function scheduleWindow(flags: AdminFlags, nodes?: string[]): Promise<string> {
  if (flags.at === undefined || flags.until === undefined) fail('a maintenance window needs both --at TIME and --until TIME');
  const { timeOption, createReservation } = await import('./planning.js');
  const startMs = await timeOption('--at', flags.at!);
  const endMs = await timeOption('--until', flags.until!, startMs);
  let names = nodes;
  if (names === undefined) {
    names = await withClient(flags.controller, async (api) => (await api.get<ApiNode[]>('/nodes')).map((node) => node.name));
  }
  return createReservation(flags.controller, flags.json, {
    kind: 'maintenance', startMs, endMs, nodes: names, ...(flags.name === undefined ? {} : { name: flags.name }), reason: flags.reason ?? '',
  });
}

export function registerAdminCommands(program: Command): void {
  const admin = program.command('admin').description('administration: drain, resume, motd, reconfigure, shutdown, token')
    .addHelpText('after', '\nExamples:\n  taras admin drain node[03-04] --reason "disk swap"\n  taras admin resume node[03-04]\n  taras admin motd "maintenance Friday 18:00"\n  taras admin reconfigure\n  taras admin shutdown\n  taras admin token --lifespan 2h\n');

  /** drain and resume: one request, then the nodes as they are now; a drain with --at is a maintenance window. */
  const nodesCall = (resume: boolean) => async (nodes: string[], flags: AdminFlags) => {
    const names = (await import('../config/hostlist.js')).expandHostlist(nodes.join(','));
    if (!resume && (flags.at !== undefined || flags.until !== undefined)) {
      await scheduleWindow(flags, names);
      return;
    }
    await withClient(flags.controller, async (api) => {
      const answer = await api.post<ApiNode[]>('/admin/drain', resume ? { nodes: names, resume: true } : { nodes: names, reason: flags.reason });
      if (flags.json) return printJson(answer);
      const { renderNodes } = await import('./render/nodes.js');
      print(renderNodes(answer));
    });
  };
  admin.command('drain').argument('<nodes...>', 'node names or ranges (node[01-04])').requiredOption('--reason <text>', 'why (shown in taras nodes)')
    .option('--at <time>', 'later: a maintenance window from this time (now+1hour, 18:00, 2026-12-01T09:00)')
    .option('--until <time>', 'the end of the window (with --at)')
    .option('--name <name>', 'the window\'s name (default maint-DATE-TIME)')
    .option(...controllerOption).option(...jsonOption)
    .description('stop new jobs on nodes; running jobs finish (with --at/--until: a maintenance window in the plan)')
    .addHelpText('after', '\nExamples:\n  taras admin drain node03 --reason "disk swap"\n  taras admin drain node[01-04] --reason "kernel update" --json\n'
      + '  taras admin drain node[01-02] --at 18:00 --until 20:00 --reason "firmware"   (no job runs into the window)\n')
    .action(nodesCall(false));
  admin.command('resume').argument('<nodes...>', 'node names or ranges (node[01-04])').option('--reason <text>', 'ignored (accepted for symmetry with drain)')
    .option(...controllerOption).option(...jsonOption)
    .description('let drained nodes take jobs again')
    .addHelpText('after', '\nExamples:\n  taras admin resume node03\n  taras admin resume node[01-04]\n')
    .action(nodesCall(true));
  admin.command('motd').argument('[text]', 'the message; empty clears it').option(...controllerOption).option(...jsonOption)
    .description('set the message of the day shown by taras status')
    .addHelpText('after', '\nExamples:\n  taras admin motd "maintenance Friday 18:00: jobs planned across it will wait"\n  taras admin motd ""        clears it\n')
    .action(async (text: string | undefined, flags: AdminFlags) => {
      await withClient(flags.controller, async (api) => {
        const answer = await api.put<{ motd: string | null }>('/admin/motd', { text: text ?? '' });
        if (flags.json) return printJson(answer);
        print(answer.motd === null || answer.motd === '' ? 'Message of the day cleared.' : `Message of the day set: ${answer.motd}`);
      });
    });
  admin.command('holiday').argument('<on|off>', 'on: every period is night (night jobs run at any time); off: the day window again')
    .option(...controllerOption).option(...jsonOption)
    .description('the holiday switch of the day and night queues ([day_night] in cluster.toml; Argonne\'s HOLIDAY file)')
    .addHelpText('after', '\nExamples:\n  taras admin holiday on     night jobs may start at any time, e.g. over Christmas\n  taras admin holiday off\n')
    .action(async (value: string, flags: AdminFlags) => {
      if (value !== 'on' && value !== 'off') fail(`holiday: '${value}' is neither on nor off (taras admin holiday on|off)`);
      await withClient(flags.controller, async (api) => {
        const status = await api.put<ApiClusterStatus>('/admin/holiday', { on: value === 'on' });
        if (flags.json) return printJson(status.dayNight);
        print(value === 'on' ? 'Holiday on: every period is night; night jobs may start at any time.' : `Holiday off: the day is ${status.dayNight?.day ?? '?'} again; it is ${status.dayNight?.now ?? '?'} now.`);
      });
    });
  admin.command('reconfigure').option(...controllerOption).option(...jsonOption)
    .description('reload cluster.toml without losing jobs; a bad file is refused and the old configuration stays')
    .addHelpText('after', '\nExamples:\n  taras admin reconfigure\n')
    .action(async (flags: AdminFlags) => {
      await withClient(flags.controller, async (api) => {
        const status = await api.post<{ policy: string; nodes: { total: number } }>('/admin/reconfigure', {});
        if (flags.json) return printJson(status);
        print(`Reconfigured: policy ${status.policy}, ${status.nodes.total} nodes.`);
      });
    });
  admin.command('token').option('--user <name>', 'whom the token is for (default: you; another user: administrators only)')
    .option('--lifespan <time>', 'how long it is valid: 30m, 2h, 7d (default 30m, as scontrol token)')
    .option(...controllerOption).option(...jsonOption)
    .description('a bearer token (JWT) for the controller\'s TCP API: for scripts and other machines without MUNGE')
    .addHelpText('after', `
The token proves who you are to the controller over TCP. Keep it secret: anyone holding it acts as its user until it expires.
Use it with the taras CLI (export TARAS_TOKEN, or save it in ~/.config/taras/token) or any HTTP client (Authorization: Bearer TOKEN).

Examples:
  taras admin token                                  a token for yourself, valid 30 minutes
  export TARAS_TOKEN=$(taras admin token --lifespan 2h --quiet)
  taras admin token --lifespan 7d > ~/.config/taras/token && chmod 600 ~/.config/taras/token
  taras admin token --user alice --lifespan 2h       administrators only
  curl -H "Authorization: Bearer $TARAS_TOKEN" http://127.0.0.1:6817/jobs
`)
    .option('--quiet', 'print only the token')
    .action(async (flags: AdminFlags & { quiet?: boolean }) => {
      let lifespanSeconds: number | undefined;
      if (flags.lifespan !== undefined) {
        const { parseDuration, hasExplicitUnit } = await import('../config/units.js');
        const parsed = parseDuration(flags.lifespan);
        if (!hasExplicitUnit(flags.lifespan) || !parsed.ok || parsed.value === null || parsed.value < 1) {
          fail(`error: --lifespan ${JSON.stringify(flags.lifespan)} is not a duration with a unit: write 30m, 2h, 7d or 1h30m`);
        }
        lifespanSeconds = parsed.value;
      }
      await withClient(flags.controller, async (api) => {
        const answer = await api.post<{ user: string; token: string; expires: string }>('/admin/token', { user: flags.user, lifespanSeconds });
        if (flags.json) return printJson(answer);
        if (flags.quiet) return print(answer.token);
        print(`${answer.token}\n`);
        const { fullTime } = await import('./render/time.js');
        process.stderr.write(`Token for ${answer.user}, valid until ${fullTime(answer.expires)}. Use it with\n  export TARAS_TOKEN=<the token above>\n`
          + `or save it (chmod 600) in ~/.config/taras/token; HTTP clients send Authorization: Bearer <token>.\n`);
      });
    });
  admin.command('shutdown')
    .option('--mode <mode>', 'what becomes of running jobs: leave-running (default), checkpoint (preemption signal, requeued, restarted from their checkpoints at the next start) or kill', 'leave-running')
    .option('--at <time>', 'later: a maintenance window of the whole cluster from this time (now+1hour, 18:00, 2026-12-01T09:00)')
    .option('--until <time>', 'the end of the window (with --at)')
    .option('--reason <text>', 'why (with --at)')
    .option('--name <name>', 'the window\'s name (default maint-DATE-TIME)')
    .option(...controllerOption).option(...jsonOption)
    .description('stop the controller now (by default jobs keep running on their agents); with --at/--until, plan a whole-cluster maintenance window instead')
    .addHelpText('after', `
Modes (seed 000 3.2.2): leave-running (the default) stops only the controller; the
agents go on and their jobs are re-adopted at its next start. checkpoint sends every
running job its preemption signal (jobs without checkpoints: SIGTERM), waits until
they have exited (at most their checkpoint duration or grace time), requeues them and
stops: they restart, from their checkpoints, at the next start. kill cancels them.
With --at, the mode applies at the window's start: checkpoint signals each job early
enough that its checkpoint ends by then; the controller keeps running.

Examples:
  taras admin shutdown
  taras admin shutdown --mode checkpoint
  taras admin shutdown --at "tomorrow" --until 2026-12-01T12:00 --reason "power work" --mode checkpoint
  taras reserve list        (windows are listed with the reservations; taras reserve delete NAME cancels one)
`)
    .action(async (flags: AdminFlags & { mode: string }) => {
      const modes = ['leave-running', 'checkpoint', 'kill'];
      if (!modes.includes(flags.mode)) fail(`error: --mode ${flags.mode}: expected ${modes.join(', ')}`);
      if (flags.at !== undefined || flags.until !== undefined) {
        const name = await scheduleWindow(flags);
        if (flags.mode === 'leave-running') return;
        // The window's mode: what it does at its start to the jobs that would run into it.
        await withClient(flags.controller, async (api) => {
          const answer = await api.post('/admin/shutdown', { mode: flags.mode, window: name });
          if (flags.json) return printJson(answer);
          print(`At its start, jobs running into window ${name} are ${flags.mode === 'kill' ? 'cancelled' : 'checkpointed (their checkpoints end by then) and requeued'}.`);
        });
        return;
      }
      await withClient(flags.controller, async (api) => {
        const answer = await api.post<{ jobs: number[]; waitSeconds: number }>('/admin/shutdown', { mode: flags.mode });
        if (flags.json) return printJson(answer);
        const what = flags.mode === 'leave-running' ? 'running jobs keep running on their agents and are re-adopted at its next start'
          : flags.mode === 'kill' ? `${answer.jobs.length} running job(s) are being cancelled first`
            : `${answer.jobs.length} running job(s) are being checkpointed and requeued first (at most ${answer.waitSeconds} s); they restart at its next start`;
        print(`The controller at ${api.address} is shutting down; ${what}.`);
      });
    });
}
