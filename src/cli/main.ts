// The `taras` command line: one program, one subcommand per task. Commands are
// registered here; each lives in its own module.

import { Command } from 'commander';
import { registerClusterCommands } from './cluster.js';
import { registerDemoCommand } from './demo.js';
import { registerSimulateCommand } from './simulate.js';
import { registerWorkloadCommand } from './workload.js';

const program = new Command('taras')
  .description('Taras: a workload manager for clusters, and a trace simulator for its scheduling core.')
  .version('0.1.0')
  .showHelpAfterError('(run with --help for usage and examples)')
  // Usage errors (missing argument, unknown option...) exit with 2, like bad input.
  .exitOverride((error) => {
    const usage = error.exitCode === 1 && error.code.startsWith('commander.');
    process.exit(usage ? 2 : error.exitCode);
  })
  .addHelpText(
    'after',
    `
Examples:
  taras demo                                   replay a bundled real trace with every policy
  taras simulate trace.swf --policy fcfs,easy,conservative
  taras workload generate --jobs 100000 --procs 256 --load 0.9 --seed 7 > big.swf`,
  );

registerSimulateCommand(program);
registerWorkloadCommand(program);
registerDemoCommand(program);
registerClusterCommands(program);

await program.parseAsync(process.argv);
