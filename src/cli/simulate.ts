// `taras simulate`: replays an SWF trace through the core with one or more
// policies and prints their figures side by side (or as JSON), optionally
// writing each policy's per-job result as SWF. With --cluster FILE, on the
// nodes a cluster.toml describes (src/sim/cluster.ts: the shape rule).

import { writeFile } from 'node:fs/promises';
import { basename, extname } from 'node:path';
import { Command, Option } from 'commander';
import { isPolicyName, policyNames, type PolicyName } from '../core/scheduler.js';
import type { ClusterConfig } from '../config/cluster.js';
import { clusterFigures, normaliseOnCluster, SHAPE_RULE, type ClusterFigures, type ClusterWorkload, type SimCluster } from '../sim/cluster.js';
import { summarise, type Summary } from '../sim/metrics.js';
import { applyJobTypes, deadlineFigures, JobTypesError, parseJobTypes, type DeadlineFigures } from '../sim/jobtypes.js';
import { simulate, type SimulationResult } from '../sim/simulator.js';
import { normalise, readSwf, resultLine, SwfError, type SwfTrace, type Workload } from '../sim/swf.js';
import { fail, parseIntegerFlag } from './flags.js';
import { humanDuration, percent, renderTable, round } from './format.js';

export interface SimulateFlags {
  policy: string;
  procs?: string;
  cluster?: string;
  out?: string;
  json?: boolean;
  skipBadLines?: boolean;
  jobtypes?: string;
}

/** A summary plus how fast the run went. */
export interface PolicyReport extends Summary {
  wallSeconds: number;
  jobsPerSecond: number;
  passes: number;
  /** Malformed trace lines skipped with --skip-bad-lines. */
  badLines: number;
  out?: string;
  /** With --cluster: the nodes it ran on (`procs` is then the CPUs of the default partition's nodes). */
  cluster?: ClusterFigures & { file: string };
  /** With --jobtypes: per type, and the priority jobs' deadlines met and missed. */
  deadlines?: DeadlineFigures & { file: string };
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

function resultSwf(trace: SwfTrace, result: SimulationResult, cluster?: ClusterWorkload): string {
  const ordered = [...result.outcomes].sort((a, b) => a.job.request.id - b.job.request.id);
  const machine = cluster
    ? `${cluster.cluster.nodes.length} nodes (partition ${cluster.cluster.partition}: ${result.processors} CPUs; C = ${cluster.cpusPerNode}: ${SHAPE_RULE})`
    : `${result.processors} processors`;
  const lines = [
    ...trace.headerLines,
    `; Note: simulated by Taras with policy ${result.policy} on ${machine};`,
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

/** The nodes of a cluster.toml, read with the controller's loader; its errors are usage errors. */
async function loadCluster(file: string): Promise<SimCluster> {
  const { readClusterConfig } = await import('../config/load.js');
  const parsed = await readClusterConfig(file);
  if (!parsed.ok) {
    const { formatConfigError } = await import('../config/errors.js');
    throw new UsageError(parsed.errors.map(formatConfigError).join('\n'));
  }
  return simCluster(parsed.config);
}

/** What replay needs of a cluster configuration: every node, the placement, the default partition's nodes. */
export function simCluster(config: ClusterConfig): SimCluster {
  const partition = config.partitions.find((p) => p.name === config.defaultPartition)!;
  return { nodes: config.nodes, placement: config.placement, partition: partition.name, partitionNodes: partition.nodes };
}

export async function runSimulate(tracePath: string, flags: SimulateFlags): Promise<PolicyReport[]> {
  const policies = parsePolicies(flags.policy);
  let processors: number | undefined;
  if (flags.procs !== undefined) {
    if (flags.cluster !== undefined) throw new UsageError('error: give --procs or --cluster, not both (--cluster replays on the nodes of the file)');
    const parsed = parseIntegerFlag('--procs', flags.procs, 1, 1e9, 'a positive integer machine size (e.g. --procs 128)');
    if (!parsed.ok) throw new UsageError(parsed.message);
    processors = parsed.value;
  }
  if (flags.jobtypes !== undefined) {
    if (flags.cluster === undefined) throw new UsageError('error: --jobtypes needs --cluster FILE: deadlines are planned on nodes (the processor model has no deadline order)');
    const other = policies.filter((policy) => !['fcfs', 'easy', 'conservative'].includes(policy));
    if (other.length > 0) throw new UsageError(`error: --jobtypes plans deadlines with fcfs, easy or conservative, not ${other.join(', ')}`);
  }
  const types = flags.jobtypes === undefined ? undefined : await readJobTypes(flags.jobtypes);
  const cluster = flags.cluster === undefined ? undefined : await loadCluster(flags.cluster);
  const trace = await readSwf(tracePath, { skipBadLines: flags.skipBadLines });
  let workload: Workload;
  let onNodes: ClusterWorkload | undefined;
  if (cluster) {
    workload = onNodes = normaliseOnCluster(trace, cluster);
  } else {
    processors ??= trace.headerProcessors;
    if (processors === undefined) {
      throw new UsageError(`error: ${tracePath} has no '; MaxProcs:' or '; MaxNodes:' header: give the machine size with --procs N, or the nodes with --cluster FILE`);
    }
    workload = normalise(trace, processors);
  }
  let unknownJobs = 0;
  if (types !== undefined) ({ workload, unknown: unknownJobs } = applyJobTypes(workload, types));
  const showProgress = !flags.json && process.stdout.isTTY === true;
  const reports: PolicyReport[] = [];
  for (const policy of policies) {
    const progress = await progressReporter(showProgress, policy, workload.jobs.length);
    const began = performance.now();
    const result = simulate(workload, policy, { onProgress: (started) => progress.update(started) });
    const wallSeconds = (performance.now() - began) / 1000;
    progress.stop();
    const summary = summarise(result);
    const report: PolicyReport = {
      ...summary,
      wallSeconds,
      jobsPerSecond: wallSeconds > 0 ? result.outcomes.length / wallSeconds : 0,
      passes: result.passes,
      badLines: trace.badLines,
    };
    if (onNodes) report.cluster = { file: flags.cluster!, ...clusterFigures(onNodes, result, summary) };
    if (types !== undefined) report.deadlines = { file: flags.jobtypes!, ...deadlineFigures(result, unknownJobs) };
    if (flags.out !== undefined) {
      report.out = outputFileFor(flags.out, policy, policies.length > 1);
      await writeFile(report.out, resultSwf(trace, result, onNodes));
    }
    reports.push(report);
  }
  if (trace.badLines > 0) process.stderr.write(`skipped ${trace.badLines} malformed line(s) of ${tracePath}\n`);
  return reports;
}

/** The --jobtypes file; its problems are usage errors naming file:line. */
async function readJobTypes(file: string) {
  const { readFile } = await import('node:fs/promises');
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new UsageError(`error: --jobtypes ${file}: cannot read it (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}): give a CSV file of job,type,deadline`);
  }
  try {
    return parseJobTypes(text, file);
  } catch (error) {
    if (error instanceof JobTypesError) throw new UsageError(`error: ${error.message}`);
    throw error;
  }
}

/** Per policy: normal and priority jobs' waits, and the deadlines met and missed. */
function deadlineLines(reports: readonly PolicyReport[]): string[] {
  const withTypes = reports.filter((r) => r.deadlines !== undefined);
  if (withTypes.length === 0) return [];
  const interactive = withTypes.some((r) => r.deadlines!.interactive.jobs > 0);
  const head = ['policy', 'normal', 'wait', 'bsld', ...(interactive ? ['interactive', 'wait', 'bsld'] : []), 'priority', 'wait', 'bsld', 'guaranteed', 'met', 'missed', 'unguaranteed', 'met', 'missed', 'refused', 'worst miss'];
  const rows = withTypes.map((r) => {
    const { normal, priority } = r.deadlines!;
    const asked = r.deadlines!.interactive;
    return [
      r.policy, round(normal.jobs, 0), humanDuration(normal.meanWait), round(normal.meanBoundedSlowdown, 2),
      ...(interactive ? [round(asked.jobs, 0), humanDuration(asked.meanWait), round(asked.meanBoundedSlowdown, 2)] : []),
      round(priority.jobs, 0), humanDuration(priority.meanWait), round(priority.meanBoundedSlowdown, 2),
      round(priority.guaranteed, 0), round(priority.guaranteedMet, 0), round(priority.guaranteedMissed, 0),
      round(priority.unguaranteed, 0), round(priority.unguaranteedMet, 0), round(priority.unguaranteedMissed, 0),
      round(priority.refused, 0), humanDuration(priority.worstMissSeconds),
    ];
  });
  const { file, unknownJobs } = withTypes[0].deadlines!;
  return [
    '', `job types from ${basename(file)}${unknownJobs > 0 ? ` (${unknownJobs} job numbers not in the replayed workload)` : ''}:`,
    renderTable(head, rows, new Set(head.map((_, i) => i).slice(1))),
    'guaranteed: the plan met the deadline at arrival; unguaranteed: it could not (ran ahead of normal jobs); refused: no plan ever could (ran as a normal job).',
  ];
}

export function renderReports(tracePath: string, reports: readonly PolicyReport[]): string {
  const first = reports[0];
  const head = ['policy', 'jobs', 'skipped', 'mean wait', 'mean bsld', 'util', 'makespan', 'pred MAE', 'exact', 'EV', 'late', 'wall', 'jobs/s'];
  const rows = reports.map((r) => [
    r.policy, round(r.jobs, 0), round(r.skipped, 0), humanDuration(r.meanWait), round(r.meanBoundedSlowdown, 2),
    percent(r.utilization), humanDuration(r.makespan), humanDuration(r.predictionMeanAbsError), percent(r.predictionExactShare),
    round(r.predictionEV, 2), round(r.predictionLate, 0), `${round(r.wallSeconds, 2)} s`, round(r.jobsPerSecond, 0),
  ]);
  const cluster = first.cluster;
  if (cluster) {
    head.splice(6, 0, 'asked');
    rows.forEach((row, i) => row.splice(6, 0, percent(reports[i].cluster!.requestedUtilization)));
  }
  const lines = [
    cluster
      ? `${basename(tracePath)} on ${cluster.nodes} nodes of ${cluster.file} (${cluster.cpus} CPUs; jobs in partition ${cluster.partition}: `
        + `${cluster.partitionNodes} nodes, ${first.procs} CPUs; ${cluster.placement}), ${first.jobs + first.skipped} jobs in the trace`
      : `${basename(tracePath)}: ${first.procs} processors, ${first.jobs + first.skipped} jobs in the trace`,
    ...(cluster
      ? [`shape rule, C = ${cluster.cpusPerNode}: ${cluster.shapeRule};`,
        `${cluster.skippedShape} jobs skipped as no set of nodes holds their shape, ${cluster.rounded} given more CPUs than asked, ${cluster.multiNode} on several nodes`]
      : []),
    '',
    renderTable(head, rows, new Set(head.map((_, i) => i).slice(1))),
    '',
    'bsld: bounded slowdown (10 s bound). pred: prediction at submission vs actual start;',
    'exact: share of jobs started exactly when predicted; EV: CCS normalised error; late: jobs started after their prediction.',
    ...(cluster ? ['util: CPUs the jobs were given (whole nodes for jobs above C); asked: the processors the trace asked for.'] : []),
    ...deadlineLines(reports),
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
    .option('--cluster <file>', 'replay on the nodes of this cluster.toml instead of P processors (see "On a cluster" below)')
    .option('-o, --out <file>', 'write the per-job result as SWF (several policies: FILE.<policy>.swf each)')
    .option('--json', 'print a JSON summary (an object, or a list for several policies)')
    .option('--skip-bad-lines', 'skip and count malformed lines instead of stopping at the first')
    .option('--jobtypes <file>', 'job types and deadlines per SWF job number (CSV job,type,deadline; needs --cluster; see "Job types" below)')
    .addHelpText(
      'after',
      `
Examples:
  taras simulate ../shared/traces/SDSC-SP2-1998-5k-sample.swf --policy easy --out result.swf
  taras simulate trace.swf --policy fcfs,easy,conservative
  taras simulate trace.swf.gz --policy easy --json
  taras simulate trace.swf --policy conservative --procs 64
  taras simulate ../shared/traces/ccs-example.swf --policy ffdh,ffih,ffdh-star,fcfs-star
  taras simulate trace.swf --policy easy,conservative --cluster cluster.toml
  taras simulate trace.swf --policy easy,conservative --cluster cluster.toml --jobtypes types.csv

Policies: fcfs, easy (EASY backfilling), conservative (conservative backfilling
with compression) follow docs/simulation.md to the second; ffdh, ffih,
ffdh-star, fcfs-star pack each batch of waiting jobs with the CCS level
algorithms. Exit codes: 0 done, 2 bad input (file, flag, trace line, cluster.toml).

On a cluster (--cluster FILE): the same replay (events, passes, predictions,
figures) on the nodes of FILE, read as the controller reads it, with its
placement; fcfs, easy and conservative plan on nodes. A job of s processors
becomes, with C = the CPU count most nodes of the default partition have (the
smaller on a tie):
  s <= C: 1 node x s CPUs;  s > C: ceil(s/C) nodes x C CPUs (whole nodes, rounded up).
Every job goes to the default partition, asks no memory and no features; its
limits (max_time, max_nodes) are not applied. A job no set of its nodes could
hold even when idle is skipped and counted (skippedShape), as a job larger
than P is in plain replay. procs and util count the default partition's CPUs
and the CPUs jobs were given; asked (requestedUtilization) the processors the
trace asked for. The trace's MaxProcs is ignored.

Job types (--jobtypes FILE, with --cluster and fcfs, easy or conservative):
CSV lines job,type,deadline: the SWF job number, normal, priority or
interactive, and for a priority job the seconds after its submission by which
it must end (42,priority,3600). Jobs not named are normal. An interactive job
goes first in the queue, after the running jobs; replay preempts nothing for
it (it waits for free nodes). At each priority job's arrival
the replay checks its deadline on the plan as the controller does: met, it is
guaranteed (kept at its FCFS place, or moved to the latest place that meets
it); short, it runs ahead of normal jobs without a guarantee; never (before
its submission plus its limit), it is refused and runs as a normal job. The
report adds per type the jobs, mean wait and bounded slowdown, and the
deadlines met and missed (--json: "deadlines").`,
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
