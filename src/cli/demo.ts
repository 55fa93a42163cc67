// `taras demo` (what `npm start` runs): replays real traces from the shared
// traces folder (NASA with every policy, SDSC with the backfilling ones) and
// the CCS worked example with every policy, printing a comparison table each.

import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { policyNames } from '../core/scheduler.js';
import { fail } from './flags.js';
import { renderReports, runSimulate } from './simulate.js';

const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

/** The shared traces folder: $TARAS_TRACES, else ../shared/traces beside the project. */
export function tracesFolder(): string {
  return process.env.TARAS_TRACES ?? resolve(projectRoot, '../shared/traces');
}

export function registerDemoCommand(program: Command): void {
  program
    .command('demo')
    .description('replay bundled real traces with every policy and print comparison tables (what `npm start` runs)')
    .addHelpText('after', `
Examples:
  taras demo
  TARAS_TRACES=/data/swf taras demo

Reads NASA-iPSC-1993-3.1-cln.swf.gz, SDSC-SP2-1998-5k-sample.swf and
ccs-example.swf from $TARAS_TRACES, else from ../shared/traces next to the
project.`)
    .action(async () => {
      const folder = tracesFolder();
      const every = policyNames.join(',');
      const runs = [
        // A real log with every policy; the batch policies are slow on heavily loaded logs, so SDSC (with
        // user estimates, where predictions get interesting) runs the backfilling ones.
        { file: 'NASA-iPSC-1993-3.1-cln.swf.gz', policy: every },
        { file: 'SDSC-SP2-1998-5k-sample.swf', policy: 'fcfs,easy,conservative' },
        { file: 'ccs-example.swf', policy: every },
      ];
      for (const run of runs) {
        const path = join(folder, run.file);
        if (!existsSync(path)) {
          fail(`error: trace ${path} not found: set TARAS_TRACES to the folder holding the shared SWF traces`);
        }
        process.stdout.write(renderReports(path, await runSimulate(path, { policy: run.policy })) + '\n\n');
      }
      process.stdout.write(
        'Next: taras simulate TRACE --policy fcfs,easy,conservative [--out result.swf] [--json]\n' +
          '      taras workload generate --jobs 100000 --procs 256 --load 0.9 --seed 7 > big.swf\n' +
          '      npm run cluster   (a whole cluster on this machine: see the README)\n',
      );
    });
}
