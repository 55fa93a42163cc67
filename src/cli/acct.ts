// `taras acct` (sacct: job history, with sacct's flags and formats, so that
// `sacct ARGS` can run `taras acct ARGS`) and `taras report` (sreport's
// utilization by user).

import type { Command } from 'commander';
import type { ApiAcctJob, ApiAcctRows, ApiUsageReport } from '../api/types.js';
import type { ApiClient } from '../net/client.js';
import {
  acctJson, DEFAULT_FORMAT, FIELDS, foldPendingTasks, midnightOf, parseFormat, parseSacctTime, parseStates, renderAcct, slurmDuration, type Layout,
} from './acct-format.js';
import { controllerOption, print, printJson, withClient } from './controller-client.js';
import { bitstrLenOf, parseArrayJobId } from '../jobspec/array.js';
import { renderTable } from './format.js';
import { fail } from './flags.js';

interface AcctFlags {
  jobs?: string[];
  array?: boolean;
  user?: string[];
  allusers?: boolean;
  state?: string;
  starttime?: string;
  endtime?: string;
  format?: string;
  parsable?: boolean;
  parsable2?: boolean;
  noheader?: boolean;
  json?: boolean;
  csv?: boolean;
  brief?: boolean;
  long?: boolean;
  helpformat?: boolean;
  name?: string[];
  partition?: string[];
  controller?: string;
}

/** sacct --brief and --long. */
const BRIEF_FORMAT = 'JobID,State,ExitCode';
const LONG_FORMAT = 'JobID,JobIDRaw,JobName,Partition,MaxRSS,AllocCPUS,ReqCPUS,NNodes,NodeList,State,ExitCode,Submit,Eligible,Start,End,Elapsed,Timelimit,TotalCPU,UserCPU,SystemCPU,CPUTime,Reason,Restarts';

/** A repeatable comma list; a comma inside [...] (an array's tasks, 12_[1,3]) does not split it. */
const collect = (value: string, previous: string[] = []) => [...previous, ...value.split(/,(?![^[]*\])/).filter((item) => item !== '')];

/** -j as sacct takes it: 12 (the job, or every task of array 12), 12_3 (one task), 12_[1-3,7] (those tasks). */
function acctJobRefs(words: readonly string[]): string[] {
  return words.flatMap((word) => {
    const parsed = parseArrayJobId(word);
    if (parsed === undefined) fail(`-j: '${word}' is not a job id: give job ids (12), array tasks (12_3) or several tasks (12_[1-3,7]), as taras queue shows them`);
    return parsed.taskIds === undefined ? [String(parsed.id)] : parsed.taskIds.map((task) => `${parsed.id}_${task}`);
  });
}

/** Every page of GET /acct for this query. */
/** GET /acct?format=rows's fields as this CLI knows them (src/store/rows.ts ACCOUNTING_FIELDS). */
export const ACCT_FIELDS = ['id', 'user', 'name', 'partition', 'state', 'reason', 'submitMs', 'eligibleMs', 'startMs', 'endMs', 'plannedStartMs', 'nodes',
  'allocCpus', 'timeLimitSeconds', 'exitCode', 'exitSignal', 'cpuSeconds', 'userCpuSeconds', 'systemCpuSeconds', 'maxRssKiB', 'requeueCount', 'arrayJobId', 'arrayTaskId'] as const;

/**
 * One row as a job, built as one literal (objects of one shape: 100,000 of
 * them render fast); `at` holds each field's place in the row, -1 for a
 * field not sent (no column reads it).
 */
const acctJobOf = (r: unknown[], at: readonly number[]): ApiAcctJob => ({
  id: r[at[0]], user: r[at[1]], name: r[at[2]], partition: r[at[3]], state: r[at[4]], reason: r[at[5]], submitMs: r[at[6]], eligibleMs: r[at[7]],
  startMs: r[at[8]], endMs: r[at[9]], plannedStartMs: r[at[10]], nodes: r[at[11]], allocCpus: r[at[12]], timeLimitSeconds: r[at[13]], exitCode: r[at[14]],
  exitSignal: r[at[15]], cpuSeconds: r[at[16]], userCpuSeconds: r[at[17]], systemCpuSeconds: r[at[18]], maxRssKiB: r[at[19]], requeueCount: r[at[20]],
  arrayJobId: r[at[21]], arrayTaskId: r[at[22]],
}) as ApiAcctJob;

/** Every job of the query, and the %N of throttled arrays (for sacct's folded rows). */
async function fetchAll(api: ApiClient, query: URLSearchParams): Promise<{ jobs: ApiAcctJob[]; throttles: Record<string, number> }> {
  const jobs: ApiAcctJob[] = [];
  let throttles: Record<string, number> = {};
  let after = 0;
  // Arrays of values (a quarter of the bytes of objects), made objects here.
  query.set('format', 'rows');
  for (;;) {
    query.set('after', String(after));
    const page = await api.get<ApiAcctRows>(`/acct?${query}`);
    const at = ACCT_FIELDS.map((field) => page.columns.indexOf(field));
    for (const row of page.rows) jobs.push(acctJobOf(row, at));
    throttles = { ...throttles, ...page.throttles };
    if (page.next === null) return { jobs, throttles };
    after = page.next;
  }
}

/** -S/-E as epoch ms: sacct's defaults are midnight today (epoch 0 with -j or -s) and now. */
function windowOf(flags: { starttime?: string; endtime?: string }, epochStart: boolean, nowMs: number): { startMs: number; endMs: number } {
  const time = (flag: string, raw: string | undefined, fallback: number) => {
    if (raw === undefined) return fallback;
    const parsed = parseSacctTime(flag, raw, nowMs);
    return parsed.ok ? parsed.ms : fail(parsed.message);
  };
  const startMs = time('--starttime', flags.starttime, epochStart ? 0 : midnightOf(nowMs));
  const endMs = time('--endtime', flags.endtime, nowMs);
  if (endMs < startMs) fail(`--endtime '${flags.endtime}' is before --starttime '${flags.starttime ?? 'midnight'}'; give an end after the start`);
  return { startMs: Math.max(0, startMs), endMs: Math.max(0, endMs) };
}

export function registerAcctCommands(program: Command): void {
  program
    .command('acct')
    .description('job history and accounting (sacct): every job, finished ones kept for good')
    .option('-j, --jobs <ids>', 'only these jobs (comma-separated; repeatable): 12 (an array: all its tasks), 12_3, 12_[1-3]', collect)
    .option('-u, --user <names>', 'only these users\' jobs (administrators; default: your own)', collect)
    .option('-a, --allusers', 'every user\'s jobs (administrators; a user sees their own)')
    .option('-s, --state <states>', 'only jobs in these states: names or short forms (CD,F,CA,TO,NF,OOM,PR,DL,PD,R,S,CG)')
    .option('-S, --starttime <time>', 'jobs that existed after this time (default: midnight today; with -j or -s: any time)')
    .option('-E, --endtime <time>', 'jobs that existed before this time (default: now)')
    .option('-o, --format <fields>', `fields, NAME or NAME%WIDTH (default: ${DEFAULT_FORMAT})`)
    .option('--array', 'a job array\'s pending tasks one line each; without it they share one line, 12_[4-15%2], as sacct shows them')
    .option('-X, --allocations', 'only the jobs themselves, not steps (Taras keeps no steps in the accounting: always so)')
    .option('-p, --parsable', 'fields separated by |, with a | at the end of each line')
    .option('-P, --parsable2', 'fields separated by |, none at the end')
    .option('-n, --noheader', 'no header line')
    .option('--csv', 'comma-separated values (quoted where needed)')
    .option('-b, --brief', `the fields ${BRIEF_FORMAT}`)
    .option('-l, --long', 'every field Taras has of a job')
    .option('-e, --helpformat', 'list the field names -o takes, and exit')
    .option('--name <names>', 'only jobs with these names (comma-separated)', collect)
    .option('-r, --partition <names>', 'only jobs of these partitions (comma-separated)', collect)
    .option('-L, --allclusters', 'accepted: Taras is one cluster')
    .option(...controllerOption)
    .option('--json', 'print the rows as JSON (the chosen fields by name, and each full record; a folded row lists its tasks)')
    .addHelpText('after', `
Times are local: HH:MM[:SS] (today), YYYY-MM-DD[THH:MM[:SS]], MMDD[YY], MM/DD[/YY], MM.DD[.YY]
(each optionally -HH:MM[:SS]), today, midnight, noon, now, now-2hours. The window holds every
job that was pending or running in it, or ended in it.

A user sees only their own jobs (Slurm's PrivateData=jobs): -a shows them their own, and -u with
another user's name is refused; administrators see everyone's.

Examples:
  taras acct                                   your jobs since midnight, sacct's default columns
  taras acct -j 42 -o JobID,State,ExitCode,Elapsed,TotalCPU,MaxRSS
  taras acct -j 12 -o JobID,JobIDRaw,State      every task of array 12 (12_0, 12_1, ..., pending ones as 12_[4-15]); -j 12_3 one task
  taras acct -j 12 --array                     the same, every pending task on a line of its own
  taras acct -a -S now-7days -s F,TO,OOM -P -n
  taras acct -S 2026-11-01 -E 2026-11-30T23:59:59 --format User,JobID,JobName%30,Start,End
  taras acct -j 42 --json
`)
    .action(async (flags: AcctFlags) => {
      if (flags.helpformat) {
        const names = FIELDS.map((field) => field.name);
        for (let i = 0; i < names.length; i += 4) print(names.slice(i, i + 4).map((name) => name.padEnd(20)).join('').trimEnd());
        return;
      }
      const nowMs = Date.now();
      const parsed = parseFormat(flags.format ?? (flags.long ? LONG_FORMAT : flags.brief ? BRIEF_FORMAT : DEFAULT_FORMAT));
      if (!parsed.ok) fail(parsed.message);
      const states = flags.state === undefined ? undefined : parseStates(flags.state);
      if (states !== undefined && !states.ok) fail(states.message);
      const ids = flags.jobs === undefined ? undefined : acctJobRefs(flags.jobs);
      const layouts = [flags.parsable && 'parsable', flags.parsable2 && 'parsable2', flags.csv && 'csv', flags.json && 'json'].filter(Boolean);
      if (layouts.length > 1) fail(`give one of --parsable, --parsable2, --csv and --json, not ${layouts.join(' and ')}`);
      const { startMs, endMs } = windowOf(flags, ids !== undefined || states !== undefined, nowMs);
      const query = new URLSearchParams({ start: String(startMs), end: String(endMs) });
      if (flags.user !== undefined) query.set('users', flags.user.join(','));
      if (flags.allusers) query.set('all', '1');
      if (states?.ok) query.set('states', states.states.join(','));
      if (ids !== undefined) query.set('jobs', ids.join(','));
      // Only the fields the columns (and the -n/-r filters) read; --json prints whole records.
      if (!flags.json) {
        const fields = new Set<string>(['id', ...parsed.columns.flatMap((column) => column.field.uses)]);
        if (flags.name !== undefined) fields.add('name');
        if (flags.partition !== undefined) fields.add('partition');
        // What folding an array's pending tasks onto one row reads, whatever the columns.
        if (!flags.array) for (const field of ['state', 'reason', 'requeueCount', 'arrayJobId', 'arrayTaskId']) fields.add(field);
        query.set('fields', [...fields].join(','));
      }
      await withClient(flags.controller, async (api) => {
        const { jobs: all, throttles } = await fetchAll(api, query);
        const jobs = all.filter((job) =>
          (flags.name === undefined || flags.name.includes(job.name)) && (flags.partition === undefined || flags.partition.includes(job.partition)));
        // --json: the same rows as the text (Slurm's --json lists the same records); with --array a record per task.
        const rows = flags.array ? jobs : foldPendingTasks(jobs, throttles, bitstrLenOf(process.env.SLURM_BITSTR_LEN));
        if (flags.json) return printJson(acctJson(rows, parsed.columns, nowMs));
        const layout: Layout = flags.parsable2 ? 'parsable2' : flags.parsable ? 'parsable' : flags.csv ? 'csv' : 'table';
        renderAcct(rows, parsed.columns, layout, flags.noheader === true, nowMs, (chunk) => process.stdout.write(chunk));
      });
    });

  program
    .command('report')
    .description('usage per user over a period (sreport cluster utilization): CPU-hours, jobs, mean wait, share of the machine')
    .option('-S, --starttime <time>', 'start of the period (default: midnight today; sacct\'s time forms)')
    .option('-E, --endtime <time>', 'end of the period (default: now)')
    .option(...controllerOption)
    .option('--json', 'print the report as JSON')
    .addHelpText('after', `
CPU-hours are allocated CPUs times the part of each run inside the period (sreport's allocated time);
"used" is the CPU time the jobs' processes measured (jobs that ended in the period). Share is of the
whole machine's CPU-hours in the period. A user sees their own line; administrators see every user.

Examples:
  taras report                                 today so far
  taras report -S now-7days
  taras report -S 2026-11-01 -E 2026-12-01 --json
`)
    .action(async (flags: { starttime?: string; endtime?: string; controller?: string; json?: boolean }) => {
      const nowMs = Date.now();
      const { startMs, endMs } = windowOf(flags, false, nowMs);
      await withClient(flags.controller, async (api) => {
        const report = await api.get<ApiUsageReport>(`/report?start=${startMs}&end=${endMs}`);
        if (flags.json) return printJson(report);
        print(renderReport(report, process.stdout.isTTY ? process.stdout.columns : 80));
      });
    });
}

const hours = (seconds: number) => (seconds / 3600).toFixed(2);

/** The report as a table and a bar per user (its share of the machine), sized to the terminal. */
export function renderReport(report: ApiUsageReport, width: number): string {
  const when = (ms: number) => new Date(ms).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
  const title = `Usage ${when(report.startMs)} - ${when(report.endMs)}: ${hours(report.cpuSecondsAvailable)} CPU-hours available`;
  if (report.users.length === 0) return `${title}\nNo job ran in this period.`;
  const rows = report.users.map((u) => [
    u.user, String(u.jobs), hours(u.allocCpuSeconds), hours(u.usedCpuSeconds),
    u.meanWaitSeconds === null ? '-' : slurmDuration(u.meanWaitSeconds), `${(u.share * 100).toFixed(1)} %`,
  ]);
  const table = renderTable(['USER', 'JOBS', 'CPU-HOURS', 'USED', 'MEAN WAIT', 'SHARE'], rows, new Set([1, 2, 3, 4, 5]));
  const nameWidth = Math.max(...report.users.map((u) => u.user.length));
  const barWidth = Math.max(10, Math.min(60, width - nameWidth - 12));
  const bars = report.users.map((u) => {
    const filled = Math.round(Math.min(1, u.share) * barWidth);
    return `${u.user.padEnd(nameWidth)} ${'#'.repeat(filled)}${'.'.repeat(barWidth - filled)} ${(u.share * 100).toFixed(1).padStart(5)} %`;
  });
  return `${title}\n\n${table}\n\nShare of the machine:\n${bars.join('\n')}`;
}
