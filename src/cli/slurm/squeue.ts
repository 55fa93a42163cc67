// `squeue`: Slurm's job listing, from the controller's GET /jobs, in Slurm's
// formats (default "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R", -l, --start,
// -o), filters (--me, -u, -j, -t, -p, -n) and sort (-S, default "P,t,-p").
// Priority: Taras has no priority numbers; a job's place in the scheduling
// order stands for it (%Q counts down from the number of jobs listed).

import type { Command } from 'commander';
import type { ApiJob, ApiPlan, JobState } from '../../api/types.js';
import { compressHostlist } from '../../config/hostlist.js';
import { queueOrderOf } from '../../api/queue.js';
import { formatLine, parseFormat, parseJobStates, slurmDuration, slurmLimit, slurmTime, stateCode } from './format.js';

export const SQUEUE_DEFAULT_FORMAT = '%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R';
export const SQUEUE_LONG_FORMAT = '%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R';
export const SQUEUE_START_FORMAT = '%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R';
/** Ended jobs stay listed this long, as Slurm's controller keeps them (MinJobAge's default). */
export const MIN_JOB_AGE_SECONDS = 300;

const HEADERS: Record<string, string> = {
  i: 'JOBID', A: 'JOBID', j: 'NAME', u: 'USER', t: 'ST', T: 'STATE', M: 'TIME', l: 'TIME_LIMIT', L: 'TIME_LEFT', D: 'NODES',
  R: 'NODELIST(REASON)', P: 'PARTITION', S: 'START_TIME', e: 'END_TIME', C: 'CPUS', N: 'NODELIST', r: 'REASON', Q: 'PRIORITY',
  p: 'PRIORITY', V: 'SUBMIT_TIME', Z: 'WORK_DIR', m: 'MIN_MEMORY', Y: 'SCHEDNODES', a: 'ACCOUNT', q: 'QOS',
};
/** Fields Slurm does not cut to their width (node lists, durations). */
const UNCUT = new Set(['N', 'Y', 'M', 'l', 'L']);
const DEFAULT_STATES: readonly JobState[] = ['PENDING', 'RUNNING', 'SUSPENDED', 'COMPLETING'];

/** One job with what squeue derives from the listing: its reason code and priority rank. */
export interface SqueueJob {
  job: ApiJob;
  reason: string;
  priority: number;
  schedNodes: string | null;
}

/** Slurm's reason code for a job (the word squeue shows in parentheses). */
export function reasonCode(job: ApiJob, firstPendingOfPartition: boolean): string {
  const text = job.reason ?? '';
  switch (job.state) {
    case 'PENDING': {
      // Taras's own reasons that start with Slurm's word.
      const token = /^(JobHeldUser|JobHeldAdmin|DependencyNeverSatisfied|Dependency|BeginTime|JobArrayTaskLimit|QueuedWorkLimit)\b/.exec(text)?.[1];
      if (token !== undefined) return token;
      if (/depend/i.test(text)) return 'Dependency';
      if (/held by an? admin|admin.*hold/i.test(text)) return 'JobHeldAdmin';
      if (/\bheld\b|\bhold\b/i.test(text)) return 'JobHeldUser';
      if (/begin|not before/i.test(text)) return 'BeginTime';
      return firstPendingOfPartition ? 'Resources' : 'Priority';
    }
    case 'FAILED': return 'NonZeroExitCode';
    case 'TIMEOUT': return 'TimeLimit';
    case 'OUT_OF_MEMORY': return 'OutOfMemory';
    case 'DEADLINE': return 'DeadLine';
    case 'NODE_FAIL': return 'NodeDown';
    default: return 'None';
  }
}

/** Jobs in Taras's queue order, with reason codes and priority ranks. */
export function squeueJobs(jobs: readonly ApiJob[], plan: ApiPlan | null): SqueueJob[] {
  const ms = (iso: string | null) => (iso === null ? null : Date.parse(iso));
  const ordered = queueOrderOf(jobs, (job) => ({ state: job.state, id: job.id, endTime: ms(job.endTime), start: ms(job.startTime ?? job.plannedStart) })).map((i) => jobs[i]);
  const planned = new Map<string, string[]>();
  for (const item of plan?.items ?? []) if (item.kind === 'job' && item.state === 'PENDING') planned.set(item.id, item.nodes);
  const seenPartition = new Set<string>();
  return ordered.map((job, index) => {
    const first = job.state === 'PENDING' && !seenPartition.has(job.partition);
    if (job.state === 'PENDING') seenPartition.add(job.partition);
    const nodes = planned.get(String(job.id));
    return { job, reason: reasonCode(job, first), priority: ordered.length - index, schedNodes: nodes === undefined ? null : compressHostlist(nodes) };
  });
}

/** Seconds the job has run (0 while pending). */
export function timeUsed(job: ApiJob, nowMs: number): number {
  if (job.startTime === null || job.state === 'PENDING') return 0;
  const end = job.endTime === null ? nowMs : Date.parse(job.endTime);
  return Math.max(0, Math.floor((end - Date.parse(job.startTime)) / 1000));
}

const showsReason = (state: JobState) => ['PENDING', 'TIMEOUT', 'OUT_OF_MEMORY', 'DEADLINE', 'FAILED'].includes(state);

/** The text of one %-field of one job. */
export function jobField(entry: SqueueJob, letter: string, nowMs: number, timeZone?: string): string {
  const { job } = entry;
  const nodes = job.nodes.length === 0 ? '' : compressHostlist(job.nodes);
  switch (letter) {
    case 'i': case 'A': return String(job.id);
    case 'j': return job.name;
    case 'u': return job.user;
    case 't': return stateCode(job.state);
    case 'T': return job.state;
    case 'M': return slurmDuration(timeUsed(job, nowMs));
    case 'l': return slurmLimit(job.timeLimitSeconds);
    case 'L': return job.timeLimitSeconds === null ? 'UNLIMITED' : slurmDuration(Math.max(0, job.timeLimitSeconds - timeUsed(job, nowMs)));
    case 'D': return String(job.nodeCount);
    case 'R': return showsReason(job.state) ? `(${entry.reason})` : nodes;
    case 'N': return nodes;
    case 'r': return entry.reason;
    case 'P': return job.partition;
    case 'S': return slurmTime(job.startTime ?? (job.state === 'PENDING' ? job.plannedStart : null), timeZone);
    case 'e': return slurmTime(job.endTime ?? job.predictedEnd, timeZone);
    case 'V': return slurmTime(job.submitTime, timeZone);
    case 'C': return String(job.ntasks * job.cpusPerTask);
    case 'Q': case 'p': return String(entry.priority);
    case 'Z': return job.workingDir ?? '(null)';
    case 'm': return job.memoryMiB === null ? '0' : `${job.memoryMiB}M`;
    case 'Y': return entry.schedNodes ?? '(null)';
    case 'a': case 'q': return '(null)';
    default: return '';
  }
}

type Key = (entry: SqueueJob, nowMs: number) => string | number;
const SORT_KEYS: Record<string, Key> = {
  i: (e) => e.job.id, A: (e) => e.job.id, j: (e) => e.job.name, u: (e) => e.job.user, P: (e) => e.job.partition,
  t: (e) => stateCode(e.job.state), T: (e) => e.job.state, p: (e) => e.priority, Q: (e) => e.priority,
  M: (e, now) => timeUsed(e.job, now), l: (e) => e.job.timeLimitSeconds ?? Infinity, D: (e) => e.job.nodeCount,
  C: (e) => e.job.ntasks * e.job.cpusPerTask, S: (e) => Date.parse(e.job.startTime ?? e.job.plannedStart ?? '') || Infinity,
  e: (e) => Date.parse(e.job.endTime ?? e.job.predictedEnd ?? '') || Infinity, V: (e) => Date.parse(e.job.submitTime),
  N: (e) => e.job.nodes.join(','),
};

/** Sorts by a Slurm sort spec such as "P,t,-p" (the first key counts most; `-` reverses a key). */
export function sortJobs(entries: SqueueJob[], spec: string, nowMs: number): SqueueJob[] {
  const keys = spec.split(',').filter((word) => word !== '').map((word) => {
    const reverse = word.startsWith('-');
    const letter = word.replace(/^[+-]/, '');
    const key = SORT_KEYS[letter];
    if (key === undefined) throw new Error(`squeue: error: Invalid sort specification: ${letter} (Taras sorts by ${Object.keys(SORT_KEYS).join(' ')})`);
    return { key, sign: reverse ? -1 : 1 };
  });
  return entries.slice().sort((a, b) => {
    for (const { key, sign } of keys) {
      const x = key(a, nowMs);
      const y = key(b, nowMs);
      if (x !== y) return (x < y ? -1 : 1) * sign;
    }
    return 0;
  });
}

export interface SqueueOptions {
  format?: string;
  long?: boolean;
  start?: boolean;
  noheader?: boolean;
  sort?: string;
  states?: JobState[];
  users?: string[];
  jobs?: number[];
  partitions?: string[];
  names?: string[];
  nowMs: number;
  timeZone?: string;
}

/** Which states a listing shows: -t's, else pending (--start), else what Slurm shows by default. */
export const statesShown = (options: Pick<SqueueOptions, 'states' | 'start'>): readonly JobState[] =>
  options.states ?? (options.start ? ['PENDING'] : DEFAULT_STATES);

/** The squeue text: the header line unless --noheader, then one line per job. */
export function renderSqueue(jobs: readonly ApiJob[], plan: ApiPlan | null, options: SqueueOptions): string {
  const format = parseFormat(options.format ?? (options.start ? SQUEUE_START_FORMAT : options.long ? SQUEUE_LONG_FORMAT : SQUEUE_DEFAULT_FORMAT), new Set(Object.keys(HEADERS)), 'squeue');
  const states = statesShown(options);
  const fresh = options.nowMs - MIN_JOB_AGE_SECONDS * 1000;
  const shown = jobs.filter((job) => states.includes(job.state)
    && (job.endTime === null || Date.parse(job.endTime) >= fresh)
    && (options.users === undefined || options.users.includes(job.user))
    && (options.jobs === undefined || options.jobs.includes(job.id))
    && (options.partitions === undefined || options.partitions.includes(job.partition))
    && (options.names === undefined || options.names.includes(job.name)));
  const entries = sortJobs(squeueJobs(shown, plan), options.sort ?? (options.start ? 'S' : 'P,t,-p'), options.nowMs);
  const lines: string[] = [];
  if (options.long) lines.push(ctime(options.nowMs, options.timeZone));
  if (!options.noheader) lines.push(formatLine(format, (letter) => HEADERS[letter], new Set(['R', 'N', 'Y'])));
  for (const entry of entries) lines.push(formatLine(format, (letter) => jobField(entry, letter, options.nowMs, options.timeZone), UNCUT));
  return lines.map((line) => `${line}\n`).join('');
}

/** The time line squeue -l and sinfo -l start with (C's ctime: "Mon Nov 23 22:50:42 2026"). */
export function ctime(nowMs: number, timeZone?: string): string {
  const parts = new Intl.DateTimeFormat('en-US', { timeZone, weekday: 'short', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit', year: 'numeric', hourCycle: 'h23' })
    .formatToParts(new Date(nowMs));
  const get = (type: string) => parts.find((part) => part.type === type)?.value ?? '';
  return `${get('weekday')} ${get('month')} ${get('day').padStart(2)} ${get('hour')}:${get('minute')}:${get('second')} ${get('year')}`;
}

const list = (text: string) => text.split(',').map((word) => word.trim()).filter((word) => word !== '');

export function registerSqueue(program: Command): void {
  program
    .description('view the job queue as Slurm\'s squeue does (served by Taras)')
    .option('--me', 'only your own jobs')
    .option('-u, --user <users>', 'only these users\' jobs (comma list)')
    .option('-j, --jobs <ids>', 'only these jobs (comma list)')
    .option('-t, --states <states>', 'only these states: names or codes, comma list (PD,R or PENDING,RUNNING), or all')
    .option('-p, --partition <partitions>', 'only these partitions (comma list)')
    .option('-n, --name <names>', 'only jobs with these names (comma list)')
    .option('-o, --format <format>', 'fields to print, e.g. "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"')
    .option('-S, --sort <keys>', 'sort keys, e.g. "P,t,-p" (the default) or "-i"')
    .option('--start', 'pending jobs with their planned start and nodes')
    .option('-h, --noheader', 'no header line')
    .option('-l, --long', 'the state in full and the time limit; the current time first')
    .option('--json', 'print the jobs as JSON (Taras\'s job vocabulary under "jobs")')
    .option('--controller <address>', 'controller address (default $TARAS_CONTROLLER)')
    .helpOption('--help', 'show this help')
    .addHelpText('after', `
Formats follow Slurm: %[.]WIDTH LETTER, "." right-justifies. Fields: %i %j %u %t %T %M %l %L %D %R %P %S %e %V %C %N %r %Q %Z %m %Y.
Examples:
  squeue --me
  squeue -t PD,R -p batch
  squeue -h -o "%i %t"
  squeue --start
`)
    .action(async (flags: Record<string, string | boolean | undefined>) => {
      const { withClient, listAllJobs, printJson } = await import('../controller-client.js');
      const { userInfo } = await import('node:os');
      const text = (key: string) => (typeof flags[key] === 'string' ? flags[key] as string : undefined);
      const users = [...(text('user') !== undefined ? list(text('user')!) : []), ...(flags.me ? [userInfo().username] : [])];
      let jobIds: number[] | undefined;
      if (text('jobs') !== undefined) {
        jobIds = list(text('jobs')!).map((word) => {
          if (!/^\d+$/.test(word)) throw new Error(`squeue: error: Invalid job id specified: ${word} (job ids are positive integers)`);
          return Number(word);
        });
      }
      const options: SqueueOptions = {
        format: text('format'), long: flags.long === true, start: flags.start === true, noheader: flags.noheader === true, sort: text('sort'),
        states: text('states') === undefined ? undefined : parseJobStates(text('states')!, 'squeue'),
        users: users.length > 0 ? users : undefined, jobs: jobIds, partitions: text('partition') === undefined ? undefined : list(text('partition')!),
        names: text('name') === undefined ? undefined : list(text('name')!), nowMs: Date.now(),
      };
      // Checked before anything is asked of the controller.
      if (options.format !== undefined) parseFormat(options.format, new Set(Object.keys(HEADERS)), 'squeue');
      if (options.sort !== undefined) sortJobs([], options.sort, 0);
      await withClient(text('controller'), async (api) => {
        const query = new URLSearchParams();
        if (options.users?.length === 1) query.set('user', options.users[0]);
        query.set('state', statesShown(options).join(','));
        const needPlan = options.start === true || (options.format ?? '').includes('Y');
        const [jobs, plan] = await Promise.all([listAllJobs(api, query), needPlan ? api.get<ApiPlan>('/plan') : Promise.resolve(null)]);
        if (flags.json) {
          const text = renderSqueue(jobs, plan, { ...options, format: '%i', noheader: true });
          const ids = text.split('\n').filter((line) => line !== '').map(Number);
          const byId = new Map(jobs.map((job) => [job.id, job]));
          return printJson({ jobs: ids.map((id) => byId.get(id)) });
        }
        process.stdout.write(renderSqueue(jobs, plan, options));
      });
    });
}
