// `taras requeue`, `suspend`, `resume` and `checkpointed`: a running job put
// back in the queue (scontrol requeue; from its checkpoint when it makes
// them), stopped and continued on its nodes (scontrol suspend/resume,
// administrators), and a job saying that its checkpoint is written (seed 000
// 2.4; run inside the job, where TARAS_JOB_ID names it).

import type { Command } from 'commander';
import type { ApiJob } from '../api/types.js';
import { controllerOption, parseJobIds, print, printJson, withClient } from './controller-client.js';
import { fail } from './flags.js';

type Answer = ApiJob & { waitSeconds?: number };

/** One POST /jobs/ID/ACTION per job, a line (or the JSON) for each; a refusal is an error line and exit 1. */
async function actOn(ids: readonly number[], action: string, flags: { controller?: string; json?: boolean }, say: (job: Answer) => string): Promise<void> {
  await withClient(flags.controller, async (api) => {
    const answers: Answer[] = [];
    for (const id of ids) {
      try {
        const job = await api.post<Answer>(`/jobs/${id}/${action}`, {});
        answers.push(job);
        if (!flags.json) print(say(job));
      } catch (error) {
        const { ApiRequestError } = await import('../net/client.js');
        if (!(error instanceof ApiRequestError)) throw error;
        process.stderr.write(`error: job ${id}: ${error.error}${error.fix ? ` (${error.fix})` : ''}\n`);
        process.exitCode = 1;
      }
    }
    if (flags.json) printJson(answers);
  });
}

export function registerCheckpointCommands(program: Command): void {
  program
    .command('requeue')
    .description('put running jobs back in the queue, in their place (scontrol requeue); a job that checkpoints restarts from its checkpoint')
    .argument('<ids...>', 'job ids (your own; administrators: any)')
    .option(...controllerOption)
    .option('--json', 'print the jobs as JSON')
    .addHelpText('after', `
A job submitted with --checkpoint-duration gets its preemption signal and is
killed if it has not exited within its checkpoint duration; it restarts with
its program class's restart action (-Restart, TARAS_RESTART=1). Any other job
gets SIGTERM and restarts from the beginning. Its id, history and output files
(appended) stay; it keeps its place ahead of later jobs.

Examples:
  taras requeue 42
  taras requeue 42 43 --json
`)
    .action(async (raw: string[], flags: { controller?: string; json?: boolean }) => {
      await actOn(parseJobIds(raw), 'requeue', flags, (job) => `job ${job.id}: being requeued; its nodes are free within ${job.waitSeconds ?? 0} s`);
    });

  program
    .command('suspend')
    .description('stop running jobs on their nodes, which stay theirs (scontrol suspend; administrators)')
    .argument('<ids...>', 'job ids')
    .option(...controllerOption)
    .option('--json', 'print the jobs as JSON')
    .addHelpText('after', '\nEvery process of the job is stopped (SIGSTOP, or the cgroup v2 freezer). The time it\nspends suspended does not count against its time limit.\n\nExamples:\n  taras suspend 42\n  taras resume 42\n')
    .action(async (raw: string[], flags: { controller?: string; json?: boolean }) => {
      await actOn(parseJobIds(raw), 'suspend', flags, (job) => `job ${job.id}: suspended`);
    });

  program
    .command('resume')
    .description('continue suspended jobs (scontrol resume; administrators)')
    .argument('<ids...>', 'job ids')
    .option(...controllerOption)
    .option('--json', 'print the jobs as JSON')
    .addHelpText('after', '\nIts time limit moves later by the time it was suspended.\n\nExamples:\n  taras resume 42\n')
    .action(async (raw: string[], flags: { controller?: string; json?: boolean }) => {
      await actOn(parseJobIds(raw), 'resume', flags, (job) => `job ${job.id}: resumed`);
    });

  program
    .command('checkpointed')
    .description('inside a job: say that its checkpoint is written (recorded; during a preemption the job is ended at once)')
    .argument('[id]', 'job id (default: $TARAS_JOB_ID)')
    .option(...controllerOption)
    .option('--json', 'print the job as JSON')
    .addHelpText('after', '\nExamples (in a job script):\n  trap \'save_state; taras checkpointed\' USR1\n  taras checkpointed 42\n')
    .action(async (raw: string | undefined, flags: { controller?: string; json?: boolean }) => {
      const given = raw ?? process.env.TARAS_JOB_ID;
      if (given === undefined || given === '') fail('error: give the job id, or run this inside a Taras job (TARAS_JOB_ID is not set)');
      await actOn(parseJobIds([given]), 'checkpointed', flags, (job) => `job ${job.id}: checkpoint recorded`);
    });
}
