// The `taras` command line: one program, one subcommand per task, each in
// its own module. Only the module that defines the command being run is
// loaded (all of them for help), so `taras submit` does not pay for the
// simulator.

import type { Command } from 'commander';
import { flushed, outputFailed } from './output.js';

const modules: Record<string, () => Promise<(program: Command) => void>> = {
  simulate: async () => (await import('./simulate.js')).registerSimulateCommand,
  workload: async () => (await import('./workload.js')).registerWorkloadCommand,
  demo: async () => (await import('./demo.js')).registerDemoCommand,
  daemons: async () => (await import('./daemons.js')).registerDaemonCommands,
  jobs: async () => (await import('./jobs.js')).registerJobCommands,
  admin: async () => (await import('./admin.js')).registerAdminCommands,
  planning: async () => (await import('./planning.js')).registerPlanningCommands,
  plan: async () => (await import('./plan.js')).registerPlanCommand,
  checkpoint: async () => (await import('./checkpoint.js')).registerCheckpointCommands,
  interactive: async () => (await import('./interactive.js')).registerInteractiveCommands,
  acct: async () => (await import('./acct.js')).registerAcctCommands,
};
const moduleOfCommand: Record<string, string> = {
  simulate: 'simulate', workload: 'workload', demo: 'demo', admin: 'admin', reserve: 'planning', whatif: 'planning',
  controller: 'daemons', agent: 'daemons', up: 'daemons',
  submit: 'jobs', queue: 'jobs', show: 'jobs', when: 'jobs', cancel: 'jobs', wait: 'jobs', nodes: 'jobs', status: 'jobs', jobid: 'jobs',
  hold: 'jobs', release: 'jobs', pause: 'jobs', unpause: 'jobs', move: 'jobs', update: 'jobs',
  plan: 'plan',
  requeue: 'checkpoint', suspend: 'checkpoint', resume: 'checkpoint', checkpointed: 'checkpoint',
  run: 'interactive', alloc: 'interactive', attach: 'interactive',
  acct: 'acct', report: 'acct',
};

// No top-level await: bin/taras.js runs the bundle of this module as a script (to reuse V8's code cache).
async function main(): Promise<void> {
  // Started as a Slurm command (bin/squeue...: bin/taras.js names it in argv[1]).
  const slurm = /[^/\\]*$/.exec(process.argv[1] ?? '')![0];
  if (SLURM_NAMES.has(slurm)) {
    const { runSlurmCommand, SLURM_ALIASES: aliases } = await import('./slurm/main.js');
    if (!Object.hasOwn(aliases, slurm)) {
      process.stdout.on('error', outputFailed);
      await runSlurmCommand(slurm as 'squeue');
      await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
      process.exit();
    }
    const command = aliases[slurm];
    if (!Object.hasOwn(moduleOfCommand, command)) {
      process.stderr.write(`${slurm}: error: this Taras has no \`taras ${command}\` command yet, which ${slurm} runs; use the taras commands (taras --help)\n`);
      process.exit(1);
    }
    process.argv.splice(2, 0, command);
  }
  // No command, `help` or an unknown one: load them all, for the full help or commander's suggestion.
  const first = process.argv.slice(2).find((arg) => !arg.startsWith('-'));
  const wanted = first !== undefined && Object.hasOwn(moduleOfCommand, first) ? [moduleOfCommand[first]] : Object.keys(modules);
  // The command's module loads while commander does (the build bundles the client commands into
  // one file with commander: scripts/bundle-cli.mjs).
  const registering = wanted.map((name) => modules[name]());
  const { Command: CommandClass } = await import('commander');

  const program = new CommandClass('taras')
    .description('Taras: a workload manager for clusters, and a trace simulator for its scheduling core.')
    .version('0.1.0')
    .showHelpAfterError('(run with --help for usage and examples)')
    // Lets `taras submit` pass the options after the script's name to the script, as sbatch does.
    .enablePositionalOptions()
    // Usage errors (missing argument, unknown option...) exit with 2, like bad input.
    .exitOverride((error) => {
      const usage = error.exitCode === 1 && error.code.startsWith('commander.');
      process.exit(usage ? 2 : error.exitCode);
    })
    .addHelpText(
      'after',
      `
Examples:
  taras demo                                   replay bundled real traces with every policy
  taras simulate trace.swf --policy fcfs,easy,conservative
  taras workload generate --jobs 100000 --procs 256 --load 0.9 --seed 7 > big.swf
  taras up                                     a whole cluster on this machine (controller + 16 virtual nodes)
  taras submit -N 2 -t 30 run.sh; taras queue; taras when 42; taras wait 42
  taras run -t 30 -- hostname; taras alloc -N 2; taras attach 42
  taras acct -S now-7days; taras report       job history (sacct) and usage per user (sreport)`,
    );

  for (const register of registering) (await register)(program);

  const client = wanted.every((name) => CLIENT_MODULES.has(name));
  if (client) process.stdout.on('error', outputFailed);
  await program.parseAsync(process.argv);
  if (client) {
    // A client command is done when its action is: exit now rather than wait for V8's background
    // compiler to finish jobs nobody needs any more (about 10 ms after `taras queue`), once the
    // output is written (a failed write, such as a full disk, still ends in an error).
    await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
    if (process.stdout.errored) outputFailed(process.stdout.errored);
    process.exit();
  }
}

/** The Slurm commands Taras answers to (src/cli/slurm/main.ts; bin/ has a launcher for each). */
const SLURM_NAMES: ReadonlySet<string> = new Set(['squeue', 'sinfo', 'scancel', 'scontrol', 'sbatch', 'srun', 'salloc', 'sacct']);

/** The commands that talk to the controller and return: they may exit as soon as they are done (not daemons, not `up`). */
const CLIENT_MODULES: ReadonlySet<string> = new Set(['jobs', 'admin', 'plan', 'checkpoint', 'acct']);

main().catch((error: unknown) => {
  // A socket found by itself that another user listens on (net/client.ts), from any command (attach and srun
  // too): one line with the fix, as withClient says it.
  if (error instanceof Error && error.name === 'UntrustedPeerError') {
    process.stderr.write(`error: ${error.message} (${(error as Error & { fix: string }).fix})\n`);
    process.exit(1);
  }
  // What an action did not turn into a one-line error: the whole trace, and a failure code
  // whatever --unhandled-rejections says.
  console.error(error);
  process.exit(1);
});
