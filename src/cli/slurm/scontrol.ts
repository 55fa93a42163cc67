import type { Command } from 'commander';
export function registerScontrol(program: Command): void {
  program.action(() => { throw new Error('scontrol: error: not yet'); });
}
