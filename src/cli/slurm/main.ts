// The Slurm commands Taras answers to (bin/squeue, bin/sinfo, ...: see
// bin/taras.js). squeue, sinfo, scancel and scontrol are commands of their
// own here, printing Slurm's formats; sbatch, srun, salloc and sacct are
// `taras submit`, `taras run`, `taras alloc` and `taras acct` under Slurm's
// name (src/cli/main.ts maps them).

import type { Command } from 'commander';

export const SLURM_OWN_COMMANDS = ['squeue', 'sinfo', 'scancel', 'scontrol'] as const;
/** Slurm commands that are a taras command with the same arguments. */
export const SLURM_ALIASES: Readonly<Record<string, string>> = { sbatch: 'submit', srun: 'run', salloc: 'alloc', sacct: 'acct' };

const registers: Record<(typeof SLURM_OWN_COMMANDS)[number], () => Promise<(program: Command) => void>> = {
  squeue: async () => (await import('./squeue.js')).registerSqueue,
  sinfo: async () => (await import('./sinfo.js')).registerSinfo,
  scancel: async () => (await import('./scancel.js')).registerScancel,
  scontrol: async () => (await import('./scontrol.js')).registerScontrol,
};

/** Runs one of SLURM_OWN_COMMANDS on process.argv; errors print as Slurm's do ("squeue: error: ...") and exit 1. */
export async function runSlurmCommand(name: (typeof SLURM_OWN_COMMANDS)[number]): Promise<void> {
  const [{ Command: CommandClass }, register] = await Promise.all([import('commander'), registers[name]()]);
  const program = new CommandClass(name)
    .showHelpAfterError(`(run ${name} --help for what Taras supports)`)
    .configureOutput({ writeErr: (text) => process.stderr.write(text.replace(/^error: /, `${name}: error: `)) })
    .exitOverride((error) => process.exit(error.exitCode === 0 ? 0 : 1));
  register(program);
  try {
    await program.parseAsync(process.argv);
  } catch (error) {
    if (!(error instanceof Error) || error.name !== 'Error') throw error;
    process.stderr.write(`${error.message.startsWith(`${name}:`) ? error.message : `${name}: error: ${error.message}`}\n`);
    process.exitCode = 1;
  }
}
