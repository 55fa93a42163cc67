// `taras simulate`: replays an SWF trace through the core with one or more
// policies and prints their figures side by side (or as JSON), optionally
// writing each policy's per-job result as SWF.

import { writeFile } from 'node:fs/promises';
import { basename, extname } from 'node:path';
import { Command, Option } from 'commander';
import { isPolicyName, policyNames, type PolicyName } from '../core/scheduler.js';
import { summarise, type Summary } from '../sim/metrics.js';
import { simulate, type SimulationResult } from '../sim/simulator.js';
import { normalise, readSwf, resultLine, SwfError, type SwfTrace } from '../sim/swf.js';
import { fail, parseIntegerFlag } from './flags.js';
import { humanDuration, percent, renderTable, round } from './format.js';

export interface SimulateFlags {
  policy: string;
  procs?: string;
  out?: string;
  json?: boolean;
  skipBadLines?: boolean;
}

/** A summary plus how fast the run went. */
export interface PolicyReport extends Summary {
  wallSeconds: number;
  jobsPerSecond: number;
  passes: number;
  /** Malformed trace lines skipped with --skip-bad-lines. */
  badLines: number;
  out?: string;
}

class UsageError extends Error {}

function parsePolicies(raw: string): PolicyName[] {
  const names = raw.split(',').map((name) => name.trim()).filter((name) => name !== '');
  if (names.length === 0) throw new UsageError(`error: option '--policy' is empty: expected one or more of ${policyNames.join(', ')}`);
  for (const name of names) {
    if (!isPolicyName(name)) {
      throw new UsageError(`error: unknown policy '${name}': expected one or more of ${policyNames.join(', ')} (comma-separated)`);
    }
  }
  return [...new Set(names)] as PolicyName[];
}

/** Output file for one policy: FILE as given for one policy, FILE with the policy inserted before the extension for several. */
export function outputFileFor(out: string, policy: PolicyName, several: boolean): string {
  if (!several) return out;
  const extension = extname(out);
  return extension ? `${out.slice(0, -extension.length)}.${policy}${extension}` : `${out}.${policy}.swf`;
}

function resultSwf(trace: SwfTrace, result: SimulationResult): string {
  const ordered = [...result.outcomes].sort((a, b) => a.job.request.id - b.job.request.id);
  const lines = [
    ...trace.headerLines,
    `; Note: simulated by Taras with policy ${result.policy} on ${result.processors} processors;`,
    `;       field 3 = simulated wait, field 4 = simulated runtime; ${result.skipped} skipped jobs left out`,
    ...ordered.map((o) => resultLine(o.job, o.start)),
  ];
  return lines.join('\n') + '\n';
}

/** Draws a progress bar on stderr when stdout is a terminal and JSON was not asked for. */
async function progressReporter(enabled: boolean, label: string, total: number) {
  if (!enabled || total < 20000) return { update: (_n: number) => {}, stop: () => {} };
  const { default: progress } = await import('cli-progress');
  const bar = new progress.SingleBar(
    { format: `${label.padEnd(13)} [{bar}] {percentage}% | {value}/{total} jobs | {eta_formatted} left`, stream: process.stderr, hideCursor: true, clearOnComplete: true },
    progress.Presets.shades_classic,
  );
  bar.start(total, 0);
  return { update: (n: number) => bar.update(n), stop: () => bar.stop() };
}

export async function runSimulate(tracePath: string, flags: SimulateFlags): Promise<PolicyReport[]> {
  const policies = parsePolicies(flags.policy);
  let processors: number | undefined;
  if (flags.procs !== undefined) {
    const parsed = parseIntegerFlag('--procs', flags.procs, 1, 1e9, 'a positive integer machine size (e.g. --procs 128)');
    if (!parsed.ok) throw new UsageError(parsed.message);
    processors = parsed.value;
  }
  const trace = await readSwf(tracePath, { skipBadLines: flags.skipBadLines });
  processors ??= trace.headerProcessors;
  if (processors === undefined) {
    throw new UsageError(`error: ${tracePath} has no '; MaxProcs:' or '; MaxNodes:' header: give the machine size with --procs N`);
  }
  const workload = normalise(trace, processors);
  const showProgress = !flags.json && process.stdout.isTTY === true;
  const reports: PolicyReport[] = [];
  for (const policy of policies) {
    const progress = await progressReporter(showProgress, policy, workload.jobs.length);
    const began = performance.now();
    const result = simulate(workload, policy, { onProgress: (started) => progress.update(started) });
    const wallSeconds = (performance.now() - began) / 1000;
    progress.stop();
    const report: PolicyReport = {
      ...summarise(result),
      wallSeconds,
      jobsPerSecond: wallSeconds > 0 ? result.outcomes.length / wallSeconds : 0,
      passes: result.passes,
      badLines: trace.badLines,
    };
    if (flags.out !== undefined) {
      report.out = outputFileFor(flags.out, policy, policies.length > 1);
      await writeFile(report.out, resultSwf(trace, result));
    }
    reports.push(report);
  }
  if (trace.badLines > 0) process.stderr.write(`skipped ${trace.badLines} malformed line(s) of ${tracePath}\n`);
  return reports;
}

export function renderReports(tracePath: string, reports: readonly PolicyReport[]): string {
  const first = reports[0];
  const head = ['policy', 'jobs', 'skipped', 'mean wait', 'mean bsld', 'util', 'makespan', 'pred MAE', 'exact', 'EV', 'late', 'wall', 'jobs/s'];
  const rows = reports.map((r) => [
    r.policy, round(r.jobs, 0), round(r.skipped, 0), humanDuration(r.meanWait), round(r.meanBoundedSlowdown, 2),
    percent(r.utilization), humanDuration(r.makespan), humanDuration(r.predictionMeanAbsError), percent(r.predictionExactShare),
    round(r.predictionEV, 2), round(r.predictionLate, 0), `${round(r.wallSeconds, 2)} s`, round(r.jobsPerSecond, 0),
  ]);
  const lines = [
    `${basename(tracePath)}: ${first.procs} processors, ${first.jobs + first.skipped} jobs in the trace`,
    '',
    renderTable(head, rows, new Set([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12])),
    '',
    'bsld: bounded slowdown (10 s bound). pred: prediction at submission vs actual start;',
    'exact: share of jobs started exactly when predicted; EV: CCS normalised error; late: jobs started after their prediction.',
  ];
  for (const r of reports) if (r.out) lines.push(`per-job result (${r.policy}): ${r.out}`);
  return lines.join('\n');
}

export function registerSimulateCommand(program: Command): void {
  program
    .command('simulate')
    .description('replay an SWF workload trace through the scheduling core and compare policies')
    .argument('<trace>', 'SWF trace file (plain or gzip-compressed)')
    .addOption(new Option('-p, --policy <names>', `policy or comma-separated policies: ${policyNames.join(', ')}`).default('easy'))
    .option('--procs <n>', 'machine size P (default: the trace header MaxProcs, else MaxNodes)')
    .option('-o, --out <file>', 'write the per-job result as SWF (several policies: FILE.<policy>.swf each)')
    .option('--json', 'print a JSON summary (an object, or a list for several policies)')
    .option('--skip-bad-lines', 'skip and count malformed lines instead of stopping at the first')
    .addHelpText(
      'after',
      `
Examples:
  taras simulate ../shared/traces/SDSC-SP2-1998-5k-sample.swf --policy easy --out result.swf
  taras simulate trace.swf --policy fcfs,easy,conservative
  taras simulate trace.swf.gz --policy easy --json
  taras simulate trace.swf --policy conservative --procs 64
  taras simulate ../shared/traces/ccs-example.swf --policy ffdh,ffih,ffdh-star,fcfs-star

Policies: fcfs, easy (EASY backfilling), conservative (conservative backfilling
with compression) follow docs/simulation.md to the second; ffdh, ffih,
ffdh-star, fcfs-star pack each batch of waiting jobs with the CCS level
algorithms. Exit codes: 0 done, 2 bad input (file, flag, trace line).`,
    )
    .action(async (trace: string, flags: SimulateFlags) => {
      try {
        const reports = await runSimulate(trace, flags);
        if (flags.json) {
          process.stdout.write(JSON.stringify(reports.length === 1 ? reports[0] : reports, null, 2) + '\n');
        } else {
          process.stdout.write(renderReports(trace, reports) + '\n');
        }
      } catch (error) {
        if (error instanceof UsageError) fail(error.message);
        if (error instanceof SwfError) fail(`error: ${error.message}`);
        throw error;
      }
    });
}
