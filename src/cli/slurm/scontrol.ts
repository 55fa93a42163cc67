// `scontrol`: Slurm's `show job|node|partition` in its Key=Value layout (a
// record's first line, then lines indented by three spaces; records apart by
// a blank line), and the job actions Taras has: requeue, suspend, resume
// (silent on success, as scontrol is). requeue, suspend, resume, hold and
// release go to POST /jobs/VERB with the ids (an array's id: all its tasks,
// resolved by the controller), update to /jobs/:id/update; a controller
// without hold, release or update is told apart ("not yet in this Taras").

import type { Command } from 'commander';
import { readFileSync } from 'node:fs';
import type { ApiCancelResult, ApiJob, ApiNode, ApiPartition } from '../../api/types.js';
import type { ApiClient } from '../../net/client.js';
import { compressHostlist } from '../../config/hostlist.js';
import { slurmJobRefs, slurmTime } from './format.js';
import { formatTaskIds, parseArrayJobId } from '../../jobspec/array.js';
import { reasonCode } from './squeue.js';
import { printable } from '../render/text.js';

/** What scontrol update changes: a job's fields, and an array's throttle. */
export interface UpdateFields { timeLimitSeconds?: number | 'UNLIMITED'; partition?: string; name?: string; arrayThrottle?: number }

/** scontrol update's words read: the fields, and TimeLimit=+N or -N (seconds added to, or taken from, the job's limit as it is). */
export interface UpdateWords { fields: UpdateFields; timeLimitStep?: number }

/**
 * scontrol update's Key=Value words for a job, as Slurm spells them (any case): TimeLimit (sbatch's time forms;
 * +N or -N: more or less than the limit it has), Partition, JobName (or Name), ArrayTaskThrottle (an array's; 0:
 * no limit). Any other key is refused by name: these are the ones Taras updates.
 */
export async function updateFields(words: readonly string[]): Promise<UpdateWords> {
  const body: UpdateFields = {};
  let timeLimitStep: number | undefined;
  for (const word of words) {
    const at = word.indexOf('=');
    if (at <= 0) throw new Error(`scontrol: error: update takes Key=Value words, not "${word}" (e.g. scontrol update JobId=42 TimeLimit=30)`);
    const key = word.slice(0, at).toLowerCase();
    const value = word.slice(at + 1);
    if (key === 'timelimit') {
      const { parseTime } = await import('../../jobspec/values.js');
      const step = /^[+-]/.test(value) ? value[0] : '';
      const parsed = parseTime(value.slice(step.length));
      if (!parsed.ok) throw new Error(`scontrol: error: TimeLimit ${parsed.message}`);
      if (step === '') body.timeLimitSeconds = parsed.value;
      else if (parsed.value === 'UNLIMITED') throw new Error(`scontrol: error: Invalid TimeLimit value: ${value} (add or take off a time: TimeLimit=+30, TimeLimit=-1:00:00)`);
      else timeLimitStep = step === '+' ? parsed.value : -parsed.value;
    } else if (key === 'partition') body.partition = value;
    else if (key === 'jobname' || key === 'name') body.name = value;
    else if (key === 'arraytaskthrottle') {
      const { MAX_ARRAY_THROTTLE } = await import('../../api/schema.js');
      if (!/^\d+$/.test(value) || Number(value) > MAX_ARRAY_THROTTLE) {
        throw new Error(`scontrol: error: Invalid ArrayTaskThrottle value "${value}": give how many tasks of the array may run at once, 0 to ${MAX_ARRAY_THROTTLE} (0: no limit)`);
      }
      body.arrayThrottle = Number(value);
    } else throw new Error(`scontrol: error: update of ${word.slice(0, at)} is not supported by Taras: it updates TimeLimit, Partition and JobName of a pending job, TimeLimit and JobName of a running one, and an array's ArrayTaskThrottle`);
    if (value === '') throw new Error(`scontrol: error: ${word.slice(0, at)} needs a value`);
  }
  if (Object.keys(body).length === 0 && timeLimitStep === undefined) throw new Error('scontrol: error: update needs fields to change, e.g. scontrol update JobId=42 TimeLimit=30');
  return { fields: body, ...(timeLimitStep === undefined ? {} : { timeLimitStep }) };
}

/**
 * TimeLimit=+N or -N, as Slurm's scontrol: the job's limit as it is now, plus or less N (not atomic: as in
 * Slurm, the client reads the limit and sends the sum). One job or task only; not an array's id, nor UNLIMITED.
 */
async function steppedLimit(api: ApiClient, refs: readonly (number | string)[], step: number): Promise<number> {
  const ref = String(refs[0]);
  if (refs.length > 1 || !/^\d+(_\d+)?$/.test(ref)) throw new Error(`scontrol: error: Invalid job ID ${refs.join(',')} (TimeLimit=+N or -N takes one job: JobId=42 or 12_3)`);
  const job = await api.get<ApiJob>(`/jobs/${ref}`);
  if (!ref.includes('_') && job.arrayJobId === job.id && (await tasksOf(api, job)).length > 1) {
    throw new Error('scontrol: error: TimeLimit increment/decrement not supported for job arrays (give one task: JobId=12_3)');
  }
  const now = job.timeLimitSeconds;
  if (now === null) throw new Error('scontrol: error: Cannot increment/decrement TimeLimit when set to UNLIMITED.');
  if (-step >= now) throw new Error(`scontrol: error: TimeLimit decrement larger than current time limit (${clockDuration(-step)} ${-step === now ? '=' : '>'} ${clockDuration(now)})`);
  return now + step;
}

/**
 * What scontrol update says of an array's tasks, as Slurm's scontrol (23.02 on: the tasks updated are not
 * said): the ended ones on one line, as Slurm writes them (12_[0-1,4]: Job has already finished); a refusal
 * Slurm has no words for keeps Taras's line (which says why). Lines in task order; a job not in an array,
 * refused, is one line of its own. Exit 1 when any is not updated.
 */
export function updateOutcomeLines(results: readonly ApiCancelResult[]): { lines: string[]; failed: boolean } {
  const lines: { first: number; text: string }[] = [];
  const byArray = new Map<string, { task: number; result: ApiCancelResult }[]>();
  for (const result of results) {
    const [array, task] = result.task?.split('_') ?? [];
    if (task === undefined) {
      // A job not in an array: Slurm's "%s for job %s" for an ended one; Taras's words for another refusal.
      if (result.result === 'ended') lines.push({ first: -1, text: `Job has already finished for job ${result.id}` });
      else if (result.result === 'refused') lines.push({ first: -1, text: `scontrol: error: ${printable(result.message)}` });
      continue;
    }
    let tasks = byArray.get(array);
    if (tasks === undefined) byArray.set(array, tasks = []);
    tasks.push({ task: Number(task), result });
  }
  for (const [array, tasks] of byArray) {
    const ended = tasks.filter(({ result }) => result.result === 'ended').map(({ task }) => task).sort((a, b) => a - b);
    if (ended.length > 0) lines.push({ first: ended[0], text: `${array}_[${formatTaskIds(ended)}]: Job has already finished` });
    for (const { task, result } of tasks.filter(({ result }) => result.result === 'refused')) {
      // The controller's words name the job ("job 15 is RUNNING: ..."); a task is named as squeue shows it first.
      lines.push({ first: task, text: `scontrol: error: update job ${result.task} (${result.id}): ${printable(result.message)}` });
    }
  }
  return { lines: lines.sort((a, b) => a.first - b.first).map((line) => line.text), failed: results.some((result) => result.result === 'refused' || result.result === 'ended') };
}

/** Seconds as scontrol prints them (Slurm's secs2time_str): HH:MM:SS or D-HH:MM:SS. */
export function clockDuration(seconds: number | null): string {
  if (seconds === null) return 'UNLIMITED';
  const two = (n: number) => String(n).padStart(2, '0');
  const s = Math.max(0, Math.floor(seconds));
  const days = Math.floor(s / 86_400);
  const rest = `${two(Math.floor(s / 3600) % 24)}:${two(Math.floor(s / 60) % 60)}:${two(s % 60)}`;
  return days > 0 ? `${days}-${rest}` : rest;
}

/** A user's uid from /etc/passwd ("alice(1000)"); the name alone when it is not there. */
function userWithId(name: string, passwd: string): string {
  const line = passwd.split('\n').find((entry) => entry.startsWith(`${name}:`));
  const uid = line?.split(':')[2];
  return uid === undefined ? name : `${name}(${uid})`;
}

/** Slurm's KEY=VALUE lines; what users wrote (a job name, a path, a reason) carries no terminal escape or line break to the screen. */
const record = (lines: string[][]): string => lines.map((pairs, i) => `${i === 0 ? '' : '   '}${printable(pairs.join(' '))}`).join('\n');
const orNull = (value: string | null | undefined): string => (value === null || value === undefined || value === '' ? '(null)' : value);

export function showJob(job: ApiJob, nowMs: number, passwd: string): string {
  const run = job.startTime === null ? 0 : ((job.endTime === null ? nowMs : Date.parse(job.endTime)) - Date.parse(job.startTime)) / 1000;
  const start = job.startTime ?? (job.state === 'PENDING' ? job.plannedStart : null);
  const end = job.endTime ?? job.predictedEnd;
  const cpus = job.ntasks * job.cpusPerTask;
  return record([
    [`JobId=${job.id}`, ...(job.arrayJobId === undefined || job.arrayTaskId === undefined ? [] : [`ArrayJobId=${job.arrayJobId}`, `ArrayTaskId=${job.arrayTaskId}`]), `JobName=${job.name}`],
    [`UserId=${userWithId(job.user, passwd)}`],
    [`JobState=${job.state}`, `Reason=${reasonCode(job, true)}`, 'Dependency=(null)'],
    [`Requeue=${job.requeue ? 1 : 0}`, `Restarts=${job.restarts ?? 0}`, 'BatchFlag=1', `ExitCode=${job.exitCode ?? 0}:0`],
    [`RunTime=${clockDuration(run)}`, `TimeLimit=${clockDuration(job.timeLimitSeconds)}`],
    [`SubmitTime=${slurmTime(job.submitTime)}`],
    [`StartTime=${slurmTime(start)}`, `EndTime=${slurmTime(end)}`, `Deadline=${slurmTime(job.deadline)}`],
    [`Partition=${job.partition}`],
    [`NodeList=${job.nodes.length === 0 ? '(null)' : compressHostlist(job.nodes)}`],
    [`NumNodes=${job.nodeCount}`, `NumCPUs=${cpus}`, `NumTasks=${job.ntasks}`, `CPUs/Task=${job.cpusPerTask}`],
    [`MinMemoryNode=${job.memoryMiB === null ? '0' : `${job.memoryMiB}M`}`],
    [`WorkDir=${orNull(job.workingDir)}`],
    [`StdErr=${orNull(job.stderrPath)}`, 'StdIn=/dev/null', `StdOut=${orNull(job.stdoutPath)}`],
  ]);
}

/** Slurm's node state words: IDLE, MIXED, ALLOCATED, DOWN, with +DRAIN and +NOT_RESPONDING. */
export function nodeStateWord(node: ApiNode): string {
  const busy = node.cpusAllocated === 0 ? 'IDLE' : node.cpusAllocated >= node.cpus ? 'ALLOCATED' : 'MIXED';
  switch (node.state) {
    case 'drained': case 'draining': return `${busy}+DRAIN`;
    case 'down': return /heartbeat|registered|respond/i.test(node.reason ?? '') ? 'DOWN+NOT_RESPONDING' : 'DOWN';
    default: return busy;
  }
}

export function showNode(node: ApiNode): string {
  return record([
    [`NodeName=${node.name}`],
    [`CPUAlloc=${node.cpusAllocated}`, `CPUEfctv=${node.cpus}`, `CPUTot=${node.cpus}`, 'CPULoad=N/A'],
    [`AvailableFeatures=${orNull(node.features.join(','))}`],
    [`ActiveFeatures=${orNull(node.features.join(','))}`],
    [`RealMemory=${node.memoryMiB}`, `AllocMem=${node.memoryAllocatedMiB}`, 'FreeMem=N/A'],
    [`State=${nodeStateWord(node)}`],
    [`Partitions=${node.partitions.join(',')}`],
    [`LastBusyTime=${slurmTime(node.lastHeartbeat)}`],
    ...(node.reason ? [[`Reason=${node.reason}`]] : []),
  ]);
}

export function showPartition(partition: ApiPartition, nodes: readonly ApiNode[]): string {
  const members = nodes.filter((node) => partition.nodes.includes(node.name));
  return record([
    [`PartitionName=${partition.name}`],
    ['AllowGroups=ALL', 'AllowAccounts=ALL', 'AllowQos=ALL'],
    [`Default=${partition.isDefault ? 'YES' : 'NO'}`],
    [`DefaultTime=${partition.defaultTimeSeconds === null ? 'NONE' : clockDuration(partition.defaultTimeSeconds)}`],
    [`MaxNodes=${partition.maxNodes ?? 'UNLIMITED'}`, `MaxTime=${clockDuration(partition.maxTimeSeconds)}`, 'MinNodes=0'],
    [`Nodes=${partition.nodes.length === 0 ? '(null)' : compressHostlist(partition.nodes)}`],
    [`PriorityTier=${partition.priority}`],
    [`PreemptMode=${partition.preemptMode.toUpperCase()}`],
    ['State=UP', `TotalCPUs=${members.reduce((sum, node) => sum + node.cpus, 0)}`, `TotalNodes=${partition.nodes.length}`],
  ]);
}

const ENTITIES = ['job', 'node', 'partition'] as const;
const ACTIONS: Record<string, (id: number | string) => string> = {
  requeue: (id) => `/jobs/${id}/requeue`, suspend: (id) => `/jobs/${id}/suspend`, resume: (id) => `/jobs/${id}/resume`,
};

async function show(api: ApiClient, entity: string, name: string | undefined): Promise<string[]> {
  const singular = entity.replace(/s$/, '').toLowerCase();
  if (singular === 'job' || singular === 'jobid') {
    if (name === undefined) {
      const { listAllJobs } = await import('../controller-client.js');
      const jobs = await listAllJobs(api, new URLSearchParams({ state: 'PENDING,RUNNING,SUSPENDED,COMPLETING' }));
      return jobs.map((job) => showJob(job, Date.now(), passwdText()));
    }
    if (!/^\d+(_\d+)?$/.test(name)) throw new Error(`scontrol: error: Invalid job id specified: ${name}`);
    const job = await api.get<ApiJob>(`/jobs/${name}`);
    // An array's id (its first task's) shows every task, as Slurm does; 12_3 one task.
    const jobs = !name.includes('_') && job.arrayJobId === job.id ? await tasksOf(api, job) : [job];
    const passwd = passwdText();
    return jobs.map((one) => showJob(one, Date.now(), passwd));
  }
  if (singular === 'node') {
    const nodes = await api.get<ApiNode[]>('/nodes');
    const chosen = name === undefined ? nodes : nodes.filter((node) => node.name === name);
    if (chosen.length === 0) throw new Error(`scontrol: error: Node ${name} not found`);
    return chosen.map(showNode);
  }
  if (singular === 'partition') {
    const [partitions, nodes] = await Promise.all([api.get<ApiPartition[]>('/partitions'), api.get<ApiNode[]>('/nodes')]);
    const chosen = name === undefined ? partitions : partitions.filter((partition) => partition.name === name);
    if (chosen.length === 0) throw new Error(`scontrol: error: Partition ${name} not found`);
    return chosen.map((partition) => showPartition(partition, nodes));
  }
  throw new Error(`scontrol: error: invalid entity: ${entity} for keyword: show (Taras shows ${ENTITIES.join(', ')})`);
}

/** The tasks of the array whose first task is `first`, by task id: GET /jobs?array=ID, a page at a time. */
async function tasksOf(api: ApiClient, first: ApiJob): Promise<ApiJob[]> {
  const tasks: ApiJob[] = [];
  for (let after: number | null = 0; after !== null;) {
    const page: { jobs: ApiJob[]; next: number | null } = await api.get(`/jobs?${new URLSearchParams({ array: String(first.id), after: String(after) })}`);
    tasks.push(...page.jobs.filter((job) => job.arrayJobId === first.id));
    after = page.next;
  }
  return tasks.length === 0 ? [first] : tasks.sort((a, b) => (a.arrayTaskId ?? 0) - (b.arrayTaskId ?? 0));
}

function passwdText(): string {
  try {
    return readFileSync('/etc/passwd', 'utf8');
  } catch {
    return '';
  }
}

/** Job ids as Slurm takes them (12, 12_3, 12_[1-3]): numbers, and array tasks as text (slurmJobRefs). */
const jobIdsOf = (words: string[], command: string): (number | string)[] => {
  const ids = slurmJobRefs(words, (word) => `scontrol: error: Invalid job id specified: ${word}`);
  if (ids.length === 0) throw new Error(`scontrol: error: ${command} needs a job id, e.g. scontrol ${command} 42`);
  return ids;
};

/** What scontrol says of one job acted on: its id as written or answered, and why it was refused. */
type Outcome = Pick<ApiCancelResult, 'result' | 'message' | 'task'> & { id: number | string };

/**
 * requeue, suspend or resume through the routes of one job, for a controller without POST /jobs/requeue|suspend|resume
 * (older than this CLI): 12_[1-3] is 12_1, 12_2 and 12_3; 12 is job 12 alone there.
 */
async function oneByOne(api: ApiClient, verb: string, ids: readonly (number | string)[], isRequestError: (error: unknown) => error is { error: string }): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  for (const ref of ids) {
    const parsed = typeof ref === 'string' ? parseArrayJobId(ref) : undefined;
    for (const id of parsed?.taskIds === undefined ? [ref] : parsed.taskIds.map((task) => `${parsed.id}_${task}`)) {
      try {
        await api.post(ACTIONS[verb](id), {});
        outcomes.push({ id, result: 'cancelled', message: '' });
      } catch (error) {
        if (!isRequestError(error)) throw error;
        outcomes.push({ id, result: 'refused', message: error.error });
      }
    }
  }
  return outcomes;
}

/**
 * scontrol write batch_script: the job's script as it was submitted, to FILE (default slurm-JOBID.sh, as
 * Slurm; a new file, 0600, since scripts are private: Slurm overwrites one that exists, Taras refuses it) or
 * to standard output for "-". JOBID may be ARRAYID_TASK.
 */
async function writeBatchScript(api: ApiClient, id: string, file: string | undefined): Promise<void> {
  if (!/^\d+(_\d+)?$/.test(id)) throw new Error(`scontrol: error: Invalid job id specified: ${id}`);
  const { script } = await api.get<{ script: string }>(`/jobs/${id}/script`);
  if (file === '-') {
    process.stdout.write(script);
    return;
  }
  const target = file ?? `slurm-${id}.sh`;
  const { closeSync, openSync, unlinkSync, writeFileSync } = await import('node:fs');
  let fd: number;
  try {
    // A new file only (O_CREAT|O_EXCL: never through a symlink or into a file someone else made first), 0600.
    fd = openSync(target, 'wx', 0o600);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') throw new Error(`scontrol: error: ${target} already exists: remove it, or give another file (or - for standard output)`);
    throw new Error(`scontrol: error: cannot write ${target} (${code}): give another file, or - for standard output`);
  }
  try {
    writeFileSync(fd, script);
  } catch (error) {
    // A full disk: no half-written script left to be taken for the whole one (and to refuse the next try).
    unlinkSync(target);
    throw new Error(`scontrol: error: cannot write ${target} (${(error as NodeJS.ErrnoException).code}): free some space, or give another file or - for standard output`);
  } finally {
    closeSync(fd);
  }
  process.stdout.write(`batch script for job ${id} written to ${target}\n`);
}

export function registerScontrol(program: Command): void {
  program
    .description('show jobs, nodes and partitions, requeue, suspend or resume jobs, and write a job\'s batch script, as Slurm\'s scontrol does (served by Taras)')
    .argument('<command>', 'show, requeue, suspend, resume, hold, release, update, write')
    .argument('[args...]', 'show: job|node|partition [NAME]; write: batch_script JOBID [FILE|-]; the others: job ids')
    .option('--controller <address>', 'controller address (default $TARAS_CONTROLLER)')
    .helpOption('--help', 'show this help')
    .addHelpText('after', '\nExamples:\n  scontrol show job 42\n  scontrol show node node01\n  scontrol show partition\n  scontrol requeue 42\n  scontrol suspend 42; scontrol resume 42\n  scontrol update JobId=42 TimeLimit=30 Partition=debug JobName=rerun\n  scontrol update JobId=42 TimeLimit=-10       # 10 minutes less (a running job too; more: administrators)\n  scontrol update JobId=12 TimeLimit=30        # every task of array 12 (ended ones are said)\n  scontrol update JobId=12 ArrayTaskThrottle=4 # at most 4 tasks of array 12 at once (0: no limit)\n  scontrol write batch_script 42        # to slurm-42.sh (- : to standard output)\n')
    .action(async (command: string, args: string[], flags: { controller?: string }) => {
      const { client, postIds } = await import('../controller-client.js');
      const { ApiRequestError, ControllerUnreachableError } = await import('../../net/client.js');
      const verb = command.toLowerCase();
      if (verb !== 'show' && !Object.hasOwn(ACTIONS, verb) && !['hold', 'release', 'update', 'write'].includes(verb)) {
        throw new Error(`scontrol: error: Taras's scontrol does not support "${command}" (it has show, requeue, suspend, resume, hold, release, update, write)`);
      }
      if (verb === 'write' && (args[0]?.toLowerCase() !== 'batch_script' || args[1] === undefined || args.length > 3)) {
        throw new Error('scontrol: error: write takes batch_script JOBID [FILE]: scontrol write batch_script 42 (to slurm-42.sh) or scontrol write batch_script 42 - (to standard output)');
      }
      const api = await client(flags.controller);
      try {
        if (verb === 'show') {
          if (args[0] === undefined) throw new Error('scontrol: error: show needs what to show: job, node or partition');
          process.stdout.write((await show(api, args[0], args[1])).map((text) => `${text}\n\n`).join(''));
          return;
        }
        if (verb === 'write') {
          await writeBatchScript(api, args[1], args[2]);
          return;
        }
        if (verb === 'update') {
          const named = args.find((word) => /^jobid=/i.test(word))?.slice('jobid='.length);
          const refs = named === undefined ? [] : slurmJobRefs([named], (word) => `scontrol: error: Invalid job id specified: ${word} (give JobId=12, 12_3 or 12_[1-3])`);
          if (refs.length === 0) throw new Error('scontrol: error: update needs JobId=ID and fields, e.g. scontrol update JobId=42 TimeLimit=30');
          const { fields, timeLimitStep } = await updateFields(args.filter((word) => !/^jobid=/i.test(word)));
          if (timeLimitStep !== undefined) fields.timeLimitSeconds = await steppedLimit(api, refs, timeLimitStep);
          // An array's id: every task of it; the controller answers each.
          const answer = await api.post<{ jobs: ApiCancelResult[] }>('/jobs/update', { ids: refs, ...fields }).then((body) => body.jobs, async (error: unknown) => {
            // A controller older than this CLI: one job at a time, by its route.
            if (!missingRoute(error) || fields.arrayThrottle !== undefined || refs.length > 1) return notYet(Promise.reject(error), 'update of arrays');
            await notYet(api.post(`/jobs/${refs[0]}/update`, fields), verb);
            return [];
          });
          // An array's id: every task of it (the ended ones said as Slurm does); the exit 1 when any was not updated.
          const said = updateOutcomeLines(answer);
          process.stderr.write(said.lines.map((line) => `${line}\n`).join(''));
          if (said.failed) process.exitCode = 1;
          return;
        }
        const ids = jobIdsOf(args, verb);
        // An array's id is all its tasks (as Slurm), resolved by the controller; each job refused (not yours, not
        // pending, not running, no such job) is said, the others are acted on, and the exit is 1. Silent on success.
        const answer: Outcome[] = verb === 'hold' || verb === 'release'
          ? await notYet(postIds<ApiCancelResult>(api, `/jobs/${verb}`, ids), verb)
          : await postIds<ApiCancelResult>(api, `/jobs/${verb}`, ids)
            .catch((error: unknown) => (missingRoute(error) ? oneByOne(api, verb, ids, (e): e is InstanceType<typeof ApiRequestError> => e instanceof ApiRequestError) : Promise.reject(error)));
        for (const job of answer.filter((result) => result.result === 'refused')) {
          process.stderr.write(`scontrol: error: ${verb} job ${job.task === undefined ? job.id : `${job.task} (${job.id})`}: ${printable(job.message)}\n`);
          process.exitCode = 1;
        }
      } catch (error) {
        if (error instanceof ControllerUnreachableError) throw new Error(`scontrol: error: ${error.message}`);
        if (error instanceof ApiRequestError) throw new Error(`scontrol: error: ${error.error}${error.fix ? ` (${error.fix})` : ''}`);
        throw error;
      } finally {
        api.close();
      }

      /** A controller without the route (404/405 "no such API route"): older than this CLI. */
      function missingRoute(error: unknown): boolean {
        return error instanceof ApiRequestError && (error.status === 405 || /no such API route/.test(error.error));
      }

      /** hold, release and update on a controller without their routes: not in this Taras yet. */
      async function notYet<T>(request: Promise<T>, what: string): Promise<T> {
        try {
          return await request;
        } catch (error) {
          if (missingRoute(error)) {
            throw new Error(`scontrol: error: ${what} is not yet in this Taras (the controller has no route for it); use taras cancel, or resubmit`);
          }
          throw error;
        }
      }
    });
}
