// Job types and deadlines for trace replay (`taras simulate TRACE --cluster
// FILE --jobtypes TYPES`): a side file that names, per SWF job number, its
// type and deadline, and the figures of deadlines met and missed.
//
// The file is CSV, one job a line: `job,type,deadline`
//   job       the SWF job number (field 1)
//   type      normal, priority or interactive
//   deadline  seconds after the job's submission by which it must end
//             (priority: required, > 0; normal: empty)
// Blank lines and lines starting with # are skipped; a first line
// `job,type,deadline` is a header. Jobs the file does not name are normal.
//
// An interactive job goes first in the queue, after the running jobs (seed 000
// 5.4.3), as the controller queues it; the replay preempts nothing for it (it
// waits for free nodes, as under interactive = "queued"), so its wait is the
// figure to compare.
//
// At each priority job's arrival the replay makes the controller's admission
// check (Scheduler.deadlineCheck): met, it is queued with a guarantee; short,
// without one (ahead of normal jobs); never (the deadline comes before its
// submission plus its limit), it is refused and, as the trace ran it, replayed
// as a normal job and counted as refused.

import type { SimJob, Workload } from './swf.js';
import type { SimulationResult } from './simulator.js';

export type SimJobType = 'normal' | 'priority' | 'interactive';

/** An interactive job's queue priority in replay: above every partition's, as the controller's. */
export const SIM_INTERACTIVE_PRIORITY = 1_000_000_000;

/** A job's type and (priority) deadline in seconds after its submission. */
export interface JobTypeEntry {
  readonly type: SimJobType;
  readonly deadlineAfterSubmit?: number;
}

export class JobTypesError extends Error {}

/** Reads the side file; every problem names file:line and the fix. */
export function parseJobTypes(text: string, file: string): Map<number, JobTypeEntry> {
  const entries = new Map<number, JobTypeEntry>();
  const problems: string[] = [];
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim();
    const at = `${file}:${index + 1}`;
    if (line === '' || line.startsWith('#')) return;
    if (index === 0 && /^job\s*,\s*type\s*,\s*deadline$/i.test(line)) return;
    const fields = line.split(',').map((field) => field.trim());
    if (fields.length < 2 || fields.length > 3) {
      problems.push(`${at}: expected job,type,deadline (e.g. 42,priority,3600), got '${line}'`);
      return;
    }
    const [jobText, typeText, deadlineText = ''] = fields;
    const job = Number(jobText);
    if (!/^\d+$/.test(jobText) || !Number.isSafeInteger(job)) {
      problems.push(`${at}: job '${jobText}' is not an SWF job number (a whole number)`);
      return;
    }
    if (entries.has(job)) {
      problems.push(`${at}: job ${job} is named twice; keep one line per job`);
      return;
    }
    const type = typeText.toLowerCase();
    if (type !== 'normal' && type !== 'priority' && type !== 'interactive') {
      problems.push(`${at}: type '${typeText}' is not normal, priority or interactive`);
      return;
    }
    if (type !== 'priority') {
      if (deadlineText !== '') problems.push(`${at}: ${type === 'normal' ? 'a normal' : 'an interactive'} job has no deadline; leave the third field empty or make it priority`);
      else entries.set(job, { type });
      return;
    }
    const deadline = Number(deadlineText);
    if (!/^\d+$/.test(deadlineText) || !(deadline > 0)) {
      problems.push(`${at}: a priority job needs its deadline in whole seconds after its submission (> 0), got '${deadlineText}'`);
      return;
    }
    entries.set(job, { type, deadlineAfterSubmit: deadline });
  });
  if (problems.length > 0) throw new JobTypesError(problems.slice(0, 20).join('\n') + (problems.length > 20 ? `\n... and ${problems.length - 20} more` : ''));
  return entries;
}

/** The workload with each priority job's deadline (absolute, on the trace's clock); also how many named jobs the workload lacks. */
export function applyJobTypes(workload: Workload, types: ReadonlyMap<number, JobTypeEntry>): { workload: Workload; unknown: number } {
  let named = 0;
  const jobs: SimJob[] = workload.jobs.map((job) => {
    const entry = types.get(job.request.id);
    if (entry === undefined) return job;
    named++;
    if (entry.type === 'interactive') return { ...job, request: { ...job.request, priority: SIM_INTERACTIVE_PRIORITY } };
    if (entry.type !== 'priority') return job;
    return { ...job, request: { ...job.request, deadline: job.request.submitTime + entry.deadlineAfterSubmit! } };
  });
  return { workload: { ...workload, jobs }, unknown: types.size - named };
}

/** How a priority job was admitted at its arrival. */
export type Admission = 'guaranteed' | 'unguaranteed' | 'refused';

/** Per type, the spec's wait and slowdown; for priority jobs, deadlines met and missed. */
export interface DeadlineFigures {
  normal: { jobs: number; meanWait: number; meanBoundedSlowdown: number };
  interactive: { jobs: number; meanWait: number; meanBoundedSlowdown: number };
  priority: {
    jobs: number; meanWait: number; meanBoundedSlowdown: number;
    guaranteed: number; unguaranteed: number; refused: number;
    /** Of the guaranteed ones / the others (refused ones ran as normal jobs and are counted in neither). */
    guaranteedMet: number; guaranteedMissed: number; unguaranteedMet: number; unguaranteedMissed: number;
    /** The latest end past a deadline (seconds; 0: none missed). */
    worstMissSeconds: number;
  };
  /** Job numbers the side file names that the replayed workload does not have (not in the trace, or skipped). */
  unknownJobs: number;
}

export function deadlineFigures(result: SimulationResult, unknownJobs: number): DeadlineFigures {
  const wait = { normal: [0, 0, 0], priority: [0, 0, 0], interactive: [0, 0, 0] };
  const priority = { guaranteed: 0, unguaranteed: 0, refused: 0, guaranteedMet: 0, guaranteedMissed: 0, unguaranteedMet: 0, unguaranteedMissed: 0, worstMissSeconds: 0 };
  for (const { job, start, admission } of result.outcomes) {
    const deadline = job.request.deadline;
    const kind = job.request.priority === SIM_INTERACTIVE_PRIORITY ? 'interactive' : deadline === undefined || admission === 'refused' ? 'normal' : 'priority';
    const waited = start - job.request.submitTime;
    const sums = wait[kind];
    sums[0]++;
    sums[1] += waited;
    sums[2] += Math.max(1, (waited + job.runtime) / Math.max(job.runtime, 10));
    if (deadline === undefined || admission === undefined) continue;
    priority[admission]++;
    if (admission === 'refused') continue;
    const late = start + job.runtime - deadline;
    const met = late <= 0;
    if (admission === 'guaranteed') priority[met ? 'guaranteedMet' : 'guaranteedMissed']++;
    else priority[met ? 'unguaranteedMet' : 'unguaranteedMissed']++;
    if (late > priority.worstMissSeconds) priority.worstMissSeconds = late;
  }
  const figures = (sums: number[]) => ({ jobs: sums[0], meanWait: sums[0] === 0 ? 0 : sums[1] / sums[0], meanBoundedSlowdown: sums[0] === 0 ? 0 : sums[2] / sums[0] });
  return { normal: figures(wait.normal), interactive: figures(wait.interactive), priority: { ...figures(wait.priority), ...priority }, unknownJobs };
}
