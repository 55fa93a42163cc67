// The summary `taras submit` shows before "(C)ommit or (A)bort", after
// Argonne's spsubmit (seed 004, 2.3.3): one aligned "Label: value" line per
// item, with where each value came from.

import { formatOrigin, type ItemKey, type JobSpec, type Origin } from './types.js';
import { formatExport, formatHumanTime, formatMemory, formatNodes, formatSbatchTime, formatSignal } from './values.js';

export interface SummaryOptions {
  readonly origins?: { readonly [K in ItemKey]?: Origin };
  /** Shown first, as spsubmit's "Username:". */
  readonly user?: string;
}

function memoryText(memoryMiB: number | undefined): string {
  if (memoryMiB === undefined) return '(not requested)';
  if (memoryMiB === 0) return "all of each node's memory";
  const human = formatMemory(memoryMiB);
  return human.endsWith(' MiB') ? human : `${human} (${memoryMiB} MiB)`;
}

/** The summary block, one line per item, ending with a newline. */
export function renderSummary(spec: JobSpec, options: SummaryOptions = {}): string {
  const rows: [label: string, value: string, key?: ItemKey][] = [];
  if (options.user !== undefined) rows.push(['Username', options.user]);
  rows.push(
    ['Script', spec.script.path, 'script'],
    ['Arguments', spec.script.args.length === 0 ? '(none)' : spec.script.args.join(' '), 'scriptArgs'],
    ['Job name', spec.name, 'name'],
    ['Partition', spec.partition ?? '(the default partition)', 'partition'],
    ['Nodes', formatNodes(spec.nodes), 'nodes'],
    ['Tasks', spec.ntasks === undefined ? 'one per node' : String(spec.ntasks), 'ntasks'],
    ['CPUs per task', String(spec.cpusPerTask), 'cpusPerTask'],
    ['Memory per node', memoryText(spec.memoryMiB), 'memoryMiB'],
    ['Time limit', `${formatHumanTime(spec.timeLimitSeconds)} (${formatSbatchTime(spec.timeLimitSeconds)})`, 'timeLimitSeconds'],
    ['Working directory', spec.workingDir, 'workingDir'],
    ['Output', spec.output, 'output'],
    ['Error', spec.error ?? '(with the output)', 'error'],
    ['Export', formatExport(spec.export), 'export'],
    ['Constraint', spec.constraint?.text ?? '(none)', 'constraint'],
    ['Requeue', spec.requeue ? 'yes' : 'no', 'requeue'],
    ...(spec.array === undefined ? [] : [['Array', spec.array.text, 'array'] as [string, string, ItemKey]]),
    ...(spec.reservation === undefined ? [] : [['Reservation', spec.reservation, 'reservation'] as [string, string, ItemKey]]),
    ...(spec.deadline === undefined ? [] : [['Deadline', `${new Date(spec.deadline.atMs).toString().slice(0, 24)} (${spec.deadline.policy})`, 'deadline'] as [string, string, ItemKey]]),
  );
  // Shown only when asked for: most jobs want none.
  if (spec.signal !== undefined) {
    const { signal } = spec;
    rows.push(['Warning signal', `${formatSignal(signal)} (to ${signal.batchOnly ? 'the batch shell' : 'every process'} ${signal.beforeSeconds} s before the limit)`, 'signal']);
  }
  const labelWidth = Math.max(...rows.map(([label]) => label.length)) + 1;
  const valueWidth = Math.max(...rows.map(([, value]) => value.length));
  const lines = rows.map(([label, value, key]) => {
    const origin = key === undefined ? undefined : options.origins?.[key];
    const head = `${`${label}:`.padEnd(labelWidth)}  ${value}`;
    return origin === undefined ? head : `${head.padEnd(labelWidth + 2 + valueWidth)}  (${formatOrigin(origin)})`;
  });
  return `${lines.join('\n')}\n`;
}

export const COMMIT_PROMPT = '(C)ommit or (A)bort: ';

/** Reads the answer to COMMIT_PROMPT: `c`/`commit` or `a`/`abort` (any case); undefined asks again. */
export function parseCommitAnswer(answer: string): 'commit' | 'abort' | undefined {
  const text = answer.trim().toLowerCase();
  if (text === 'c' || text === 'commit') return 'commit';
  if (text === 'a' || text === 'abort') return 'abort';
  return undefined;
}
