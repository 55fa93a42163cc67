// `scancel`: Slurm's job cancel, through POST /jobs/cancel. Silent on
// success as scancel is; a job it could not cancel is one line
// "scancel: error: Kill job error on job id N: ..." and exit 1. Filters
// (-u, --me, -t, -p, -n) pick the jobs from GET /jobs, alone or together with ids.

import type { Command } from 'commander';
import type { ApiCancelResult, ApiJob, JobState } from '../../api/types.js';
import { namedBy, parseJobStates, slurmJobRefs } from './format.js';

const list = (text: string) => text.split(',').map((word) => word.trim()).filter((word) => word !== '');

/** The ids to cancel: those given that pass the filters, or, with no ids, every active job that does. */
export function jobsToCancel(ids: readonly (number | string)[], jobs: readonly ApiJob[], filter: { users?: string[]; states?: JobState[]; partitions?: string[]; names?: string[] }): number[] {
  const passes = (job: ApiJob) => (filter.users === undefined || filter.users.includes(job.user))
    && (filter.states === undefined || filter.states.includes(job.state))
    && (filter.partitions === undefined || filter.partitions.includes(job.partition))
    && (filter.names === undefined || filter.names.includes(job.name));
  if (ids.length === 0) return jobs.filter(passes).map((job) => job.id);
  // Each id in the order given: the jobs it names (an array's id: its tasks) that pass; a number naming none is
  // kept, for the controller to answer "no job N".
  return ids.flatMap((ref) => {
    const names = namedBy([ref]);
    const named = jobs.filter(names);
    if (named.length === 0) return typeof ref === 'number' ? [ref] : [];
    return named.filter(passes).map((job) => job.id);
  });
}

export function registerScancel(program: Command): void {
  program
    .description('cancel jobs as Slurm\'s scancel does (served by Taras)')
    .argument('[job_id...]', 'job ids')
    .option('--me', 'your own jobs')
    .option('-u, --user <user>', 'this user\'s jobs')
    .option('-t, --state <states>', 'only jobs in these states (PENDING, RUNNING, SUSPENDED; names or codes)')
    .option('-p, --partition <partitions>', 'only jobs in these partitions')
    .option('-n, --name <names>', 'only jobs with these names')
    .option('--controller <address>', 'controller address (default $TARAS_CONTROLLER)')
    .helpOption('--help', 'show this help')
    .addHelpText('after', '\nExamples:\n  scancel 42 43\n  scancel --me -t PENDING\n  scancel -u alice -n sweep\n')
    .action(async (raw: string[], flags: { me?: boolean; user?: string; state?: string; partition?: string; name?: string; controller?: string }) => {
      const ids = slurmJobRefs(raw, (word) => `scancel: error: Invalid job id ${word}`);
      const { userInfo } = await import('node:os');
      const users = [...(flags.user !== undefined ? list(flags.user) : []), ...(flags.me ? [userInfo().username] : [])];
      const filter = {
        users: users.length > 0 ? users : undefined,
        states: flags.state === undefined ? undefined : parseJobStates(flags.state, 'scancel'),
        partitions: flags.partition === undefined ? undefined : list(flags.partition),
        names: flags.name === undefined ? undefined : list(flags.name),
      };
      const filtered = Object.values(filter).some((value) => value !== undefined);
      if (ids.length === 0 && !filtered) throw new Error('scancel: error: No job identification provided (give job ids, or -u/--me/-t/-p/-n to pick jobs)');
      const { withClient, listAllJobs, postIds } = await import('../controller-client.js');
      await withClient(flags.controller, async (api) => {
        let chosen = ids;
        if (filtered) {
          const query = new URLSearchParams({ state: 'PENDING,RUNNING,SUSPENDED,COMPLETING' });
          if (filter.users?.length === 1) query.set('user', filter.users[0]);
          chosen = jobsToCancel(ids, await listAllJobs(api, query), filter);
        }
        if (chosen.length === 0) return;
        const jobs = await postIds<ApiCancelResult>(api, '/jobs/cancel', chosen);
        for (const job of jobs) {
          if (job.result === 'refused') {
            process.stderr.write(`scancel: error: Kill job error on job id ${job.id}: ${job.state === null ? 'Invalid job id specified' : job.message}\n`);
            process.exitCode = 1;
          } else if (job.result === 'ended' && ids.includes(job.id)) {
            process.stderr.write(`scancel: error: Kill job error on job id ${job.id}: Job/step already completing or completed\n`);
            process.exitCode = 1;
          }
        }
      });
    });
}
