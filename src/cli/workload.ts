// `taras workload generate`: the shell around the synthetic workload generator.
// Validates the flags (one line naming flag, value and what is expected; exit
// code 2) and streams the SWF lines to stdout or a file with backpressure.

import { createWriteStream } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Command, Option } from 'commander';
import { generateWorkload, type WorkloadOptions } from '../sim/workload.js';
import { badFlag, parseIntegerFlag, USAGE_EXIT_CODE, type FlagResult } from './flags.js';

const IO_EXIT_CODE = 1;
/** Lines per chunk written: one write per line would be slow, the whole file at once would be big. */
const LINES_PER_CHUNK = 512;

interface RawWorkloadFlags {
  jobs: string | number;
  procs: string | number;
  load: string | number;
  seed: string | number;
  output?: string;
}

/** The generator's options from the flags as commander hands them over, or the first error. */
export function parseWorkloadFlags(raw: RawWorkloadFlags): FlagResult<WorkloadOptions> {
  const jobs = parseIntegerFlag('--jobs', raw.jobs, 1, Number.MAX_SAFE_INTEGER, 'a positive integer (e.g. --jobs 1000)');
  if (!jobs.ok) return jobs;
  const procs = parseIntegerFlag('--procs', raw.procs, 1, Number.MAX_SAFE_INTEGER, 'a positive integer (e.g. --procs 128)');
  if (!procs.ok) return procs;
  const loadText = String(raw.load).trim();
  const load = loadText === '' ? NaN : Number(loadText);
  if (!(load > 0 && load <= 2)) {
    return badFlag('--load', raw.load, 'a number greater than 0 and at most 2 (e.g. --load 0.8)');
  }
  const seed = parseIntegerFlag('--seed', raw.seed, 0, 0xffffffff, 'an integer from 0 to 4294967295 (e.g. --seed 1)');
  if (!seed.ok) return seed;
  return { ok: true, value: { jobs: jobs.value, procs: procs.value, load, seed: seed.value } };
}

function* inChunks(lines: Iterable<string>): Generator<string> {
  let chunk: string[] = [];
  for (const line of lines) {
    chunk.push(line);
    if (chunk.length === LINES_PER_CHUNK) {
      yield chunk.join('\n') + '\n';
      chunk = [];
    }
  }
  if (chunk.length > 0) yield chunk.join('\n') + '\n';
}

function isBrokenPipe(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | undefined)?.code === 'EPIPE';
}

async function writeWorkload(cmd: Command, options: WorkloadOptions, outputFile: string | undefined): Promise<void> {
  const source = Readable.from(inChunks(generateWorkload(options)));
  try {
    if (outputFile === undefined) {
      // Keep stdout open for whoever writes after us; the empty write's callback
      // runs once everything before it is flushed.
      await pipeline(source, process.stdout, { end: false });
      await new Promise<void>((resolve, reject) => process.stdout.write('', (e) => (e ? reject(e) : resolve())));
    } else {
      await pipeline(source, createWriteStream(outputFile));
    }
  } catch (error) {
    // The reader went away (`| head`): what it read is all it wanted.
    if (isBrokenPipe(error)) return;
    const reason = error instanceof Error ? error.message : String(error);
    cmd.error(`error: cannot write the workload to ${outputFile ?? 'stdout'}: ${reason}`, { exitCode: IO_EXIT_CODE });
  }
}

export function registerWorkloadCommand(program: Command): void {
  const workload = program.command('workload').description('synthetic workloads in Standard Workload Format (SWF)')
    .addHelpText('after', '\nExamples:\n  taras workload generate --jobs 1000 --procs 128 --load 0.8 > w.swf\n  taras workload --help generate\n');

  workload
    .command('generate')
    .description('write a seeded, reproducible synthetic workload as SWF')
    .addOption(new Option('--jobs <n>', 'number of jobs').default(1000))
    .addOption(new Option('--procs <n>', 'machine size P (processors); every job fits').default(128))
    .addOption(new Option('--load <x>', 'offered load sum(size*runtime) / (P * submit span), in (0, 2]').default(0.8))
    .addOption(new Option('--seed <n>', 'random seed, 0..4294967295: same options, same bytes').default(1))
    .addOption(new Option('-o, --output <file>', 'write to FILE instead of stdout'))
    .addHelpText(
      'after',
      `
Examples:
  taras workload generate --jobs 100000 --procs 256 --load 0.9 --seed 7 > big.swf
  taras workload generate --procs 128 --load 0.5 -o half-loaded.swf
  taras workload generate --jobs 20 | less

The model (daily arrival cycle, sizes mostly powers of two, heavy-tailed
runtimes, estimates rounded up to round limits, ~7% of jobs killed at their
limit) and the options used are written in the file's "; Note:" header lines.`,
    )
    .action(async (_flags: unknown, cmd: Command) => {
      const parsed = parseWorkloadFlags(cmd.opts<RawWorkloadFlags>());
      if (!parsed.ok) {
        cmd.error(parsed.message, { exitCode: USAGE_EXIT_CODE, code: 'taras.invalidFlag' });
        return;
      }
      await writeWorkload(cmd, parsed.value, cmd.opts<RawWorkloadFlags>().output);
    });
}
