// Combines the sources of a job request and completes it. Precedence, lowest
// first: job file, #TARAS directives, command-line flags, prompt answers. The
// job file holds what stays the same across submissions (seed 000 3.1.1), the
// script what belongs to that script, the flags what is special to this
// submission; prompt answers only fill items nothing else gave.

import { posix } from 'node:path';
import { formatOrigin } from './types.js';
import { optionForKey } from './options.js';
import { LayerBuilder } from './layer.js';
import type {
  DeadlineSpec, ItemKey, JobSpec, JobSpecDraft, JobSpecError, JobValues, NodeRange, Origin, Parsed, ResolvedJobSpec, SpecLayer,
} from './types.js';
import { beginDeadlineConflict, parseClockTime, type ValueResult } from './values.js';

export interface MergedJobSpec {
  readonly values: JobSpecDraft;
  readonly origins: { readonly [K in ItemKey]?: Origin };
}

/** Later arguments override earlier ones item by item; each value keeps its origin. */
export function mergeJobSpec(
  file: SpecLayer | undefined,
  directives: SpecLayer | undefined,
  flags: SpecLayer | undefined,
  prompted?: SpecLayer,
): MergedJobSpec {
  const values: Record<string, unknown> = {};
  const origins: Record<string, Origin> = {};
  for (const layer of [file, directives, flags, prompted]) {
    if (layer === undefined) continue;
    for (const [key, value] of Object.entries(layer.values)) {
      if (value === undefined) continue;
      values[key] = value;
      const origin = layer.origins[key as ItemKey];
      if (origin !== undefined) origins[key] = origin;
    }
  }
  return { values: values as JobSpecDraft, origins: origins as MergedJobSpec['origins'] };
}

/** Items a submission needs from the user: the script and its time limit (seed 000 3.1.1, Argonne spsubmit). */
export const REQUIRED_ITEMS: readonly ItemKey[] = ['script', 'timeLimitSeconds'];

export interface MissingItem {
  readonly key: ItemKey;
  /** For the prompt: `Time limit`. */
  readonly label: string;
  /** How to give it without a prompt: `--time`, or `SCRIPT` for the operand. */
  readonly flag: string;
  /** The job.toml key. */
  readonly tomlKey: string;
  /** The value's form: `TIME`. */
  readonly valueName: string;
}

const SCRIPT_ITEMS: { readonly [K in ItemKey]?: MissingItem } = {
  script: { key: 'script', label: 'Script', flag: 'SCRIPT', tomlKey: 'script', valueName: 'PATH' },
  scriptArgs: { key: 'scriptArgs', label: 'Arguments', flag: 'ARGS', tomlKey: 'arguments', valueName: 'ARGS' },
};

export function describeItem(key: ItemKey): MissingItem {
  const option = optionForKey(key);
  if (option === undefined) return SCRIPT_ITEMS[key]!;
  return { key, label: option.label, flag: `--${option.long}`, tomlKey: option.tomlKey, valueName: option.valueName ?? '' };
}

/** The required items that no source gave, in the order given. */
export function missingItems(spec: MergedJobSpec | JobSpecDraft, requiredKeys: readonly ItemKey[] = REQUIRED_ITEMS): MissingItem[] {
  const values: JobSpecDraft = 'values' in spec && 'origins' in spec ? (spec as MergedJobSpec).values : (spec as JobSpecDraft);
  return requiredKeys.filter((key) => values[key] === undefined).map(describeItem);
}

/** Parses one prompt answer with the same value forms as the flags (`yes`/`no` for requeue). */
export function parseAnswer(key: ItemKey, answer: string): ValueResult<JobValues[ItemKey]> {
  const text = answer.trim();
  switch (key) {
    case 'script':
      return text === '' ? { ok: false, message: 'expected the path of the batch script' } : { ok: true, value: text };
    case 'scriptArgs':
      return { ok: true, value: text === '' ? [] : text.split(/\s+/) };
    case 'requeue':
      if (/^(y|yes|true)$/i.test(text)) return { ok: true, value: true };
      if (/^(n|no|false)$/i.test(text)) return { ok: true, value: false };
      return { ok: false, message: `got '${answer}': expected yes or no` };
    default:
      return optionForKey(key)!.parse(text);
  }
}

/** The layer of prompt answers (raw text by item), for the last argument of mergeJobSpec. */
export function promptLayer(answers: { readonly [K in ItemKey]?: string }): Parsed<SpecLayer> {
  const builder = new LayerBuilder('prompt');
  for (const [key, answer] of Object.entries(answers) as [ItemKey, string | undefined][]) {
    if (answer === undefined) continue;
    const parsed = parseAnswer(key, answer);
    const option = describeItem(key).flag;
    if (parsed.ok) builder.set(key, parsed.value as JobValues[typeof key], { source: 'prompt', option });
    else builder.error({ option }, parsed.message);
  }
  return builder.result();
}

export const DEFAULT_OUTPUT = 'taras-%j.out';

/** The script name of a --wrap job (its default job name too, as Slurm's). */
export const WRAP_SCRIPT = 'wrap';

/** A --wrap job's script: sh running the command, as sbatch writes it. */
export const wrapScript = (command: string): string => `#!/bin/sh\n${command}\n`;

export interface BuildContext {
  /** The batch script's text (read by the shell from the merged `script` path). */
  readonly scriptText: string;
  /** Absolute directory `taras submit` ran in: the default working directory, and the base of a relative --chdir. */
  readonly submitDir: string;
  /** The submitting clock (epoch ms): what --deadline's relative forms (now+1hour, 18:00) count from. */
  readonly nowMs?: number;
  /**
   * No time limit given is left out, for the controller to take the partition's default_time (or refuse,
   * naming the partition): sbatch's way when nobody is at a terminal to ask.
   */
  readonly timeFromPartition?: boolean;
}

const where = (origin: Origin | undefined) => (origin === undefined ? '' : ` (${formatOrigin(origin)})`);

/**
 * Fills sbatch's defaults (1 node, or 1 to ntasks nodes when --ntasks is given; 1 CPU
 * per task; the script's name; the submit directory; taras-%j.out; export ALL; no
 * requeue) and checks the request on its own: the script and the time limit present
 * (a JobSpec always has both), at least one task per node. A --nodes maximum above --ntasks is lowered to it.
 */
export function buildJobSpec(merged: MergedJobSpec, context: BuildContext): Parsed<ResolvedJobSpec> {
  const { values } = merged;
  const origins: { [K in ItemKey]?: Origin } = { ...merged.origins };
  const required = context.timeFromPartition === true ? REQUIRED_ITEMS.filter((key) => key !== 'timeLimitSeconds') : REQUIRED_ITEMS;
  const errors: JobSpecError[] = missingItems(merged, required).map((item) => ({
    source: 'request',
    option: item.flag,
    message: `missing ${item.label.toLowerCase()}: give ${item.flag}${item.valueName === '' ? '' : ` ${item.valueName}`}, a #TARAS line or ${item.tomlKey} in the job file`,
  }));
  const defaulted = <K extends ItemKey>(key: K, fallback: JobValues[K]): JobValues[K] => {
    const given = values[key] as JobValues[K] | undefined;
    if (given !== undefined) return given;
    origins[key] = { source: 'default' };
    return fallback;
  };

  let nodes: NodeRange = defaulted('nodes', values.ntasks === undefined || values.ntasks === 1 ? { min: 1 } : { min: 1, max: values.ntasks });
  // --nodelist: the job runs on all of these nodes, so at least as many (as Slurm raises the node count to them).
  if (values.nodelist !== undefined && values.nodelist.length > nodes.min) {
    nodes = nodes.max !== undefined && nodes.max > values.nodelist.length ? { min: values.nodelist.length, max: nodes.max } : { min: values.nodelist.length };
  }
  const overlap = values.nodelist?.filter((name) => values.exclude?.includes(name)) ?? [];
  if (overlap.length > 0) {
    errors.push({ source: 'request', option: '--exclude', message: `${overlap.join(', ')} is in both --nodelist${where(origins.nodelist)} and --exclude${where(origins.exclude)}: leave it out of one` });
  }
  let ntasks = values.ntasks;
  if (values.ntasksPerNode !== undefined) {
    // Slurm: without --ntasks, N tasks on each node; with it, at most N on each, so at least ceil(ntasks / N) nodes.
    if (ntasks === undefined) {
      ntasks = nodes.min * values.ntasksPerNode;
      nodes = { min: nodes.min };
    } else if (Math.ceil(ntasks / values.ntasksPerNode) > nodes.min) {
      const min = Math.ceil(ntasks / values.ntasksPerNode);
      nodes = nodes.max !== undefined && nodes.max > min ? { min, max: nodes.max } : { min };
    }
  }
  if (values.memoryMiB !== undefined && values.memPerCpuMiB !== undefined) {
    errors.push({
      source: 'request', option: '--mem-per-cpu',
      message: `--mem${where(origins.memoryMiB)} and --mem-per-cpu${where(origins.memPerCpuMiB)} are mutually exclusive (as in Slurm): give one of them`,
    });
  }
  if (values.ntasks !== undefined && values.ntasks < nodes.min) {
    errors.push({
      source: 'request',
      option: '--ntasks',
      message: `${values.ntasks} task(s)${where(origins.ntasks)} cannot cover ${nodes.min} nodes${where(origins.nodes)}: every node runs at least one task; raise --ntasks or lower --nodes`,
    });
  } else if (values.ntasks !== undefined && nodes.max !== undefined && nodes.max > values.ntasks) {
    nodes = values.ntasks === nodes.min ? { min: nodes.min } : { min: nodes.min, max: values.ntasks };
  }
  if (values.wrap !== undefined && values.script !== undefined && values.script !== WRAP_SCRIPT) {
    errors.push({ source: 'request', option: '--wrap', message: `--wrap${where(origins.wrap)} is the whole script: leave out the script ${values.script}${where(origins.script)} (sbatch allows no script with --wrap)` });
  }
  if (values.checkpointDuration === undefined && (values.checkpointInterval !== undefined || values.programClass !== undefined)) {
    const given = values.checkpointInterval !== undefined ? '--checkpoint-interval' : '--program-class';
    errors.push({ source: 'request', option: given, message: `${given} needs --checkpoint-duration TIME too (how long the job's checkpoint takes at most)` });
  }
  const deadline = deadlineOf(values, origins, context.nowMs, errors);
  let beginMs: number | undefined;
  if (values.begin !== undefined) {
    const at = context.nowMs === undefined ? null : parseClockTime(values.begin, context.nowMs);
    if (at === null) errors.push({ source: 'request', option: '--begin', message: 'a begin time is read against the time of submission, which this caller did not give (BuildContext.nowMs)' });
    else if (!at.ok) errors.push({ source: 'request', option: '--begin', message: at.message });
    else beginMs = at.value;
  }
  const conflict = beginMs === undefined || deadline === undefined ? undefined : beginDeadlineConflict(beginMs, deadline.atMs);
  // No option before it: the words name both, the same as the controller's.
  if (conflict !== undefined) errors.push({ source: 'request', message: conflict });
  if (errors.length > 0) return { ok: false, errors, warnings: [] };

  const script = values.script!;
  const chdir = values.workingDir;
  const spec: JobSpec = {
    script: { path: script, text: context.scriptText, args: values.scriptArgs ?? [] },
    nodes,
    ...(ntasks === undefined ? {} : { ntasks }),
    ...(values.ntasksPerNode === undefined ? {} : { ntasksPerNode: values.ntasksPerNode }),
    ...(values.memPerCpuMiB === undefined ? {} : { memPerCpuMiB: values.memPerCpuMiB }),
    ...(values.nodelist === undefined ? {} : { nodelist: values.nodelist }),
    ...(values.exclude === undefined ? {} : { exclude: values.exclude }),
    ...(values.openMode === undefined ? {} : { openMode: values.openMode }),
    ...(values.exclusive === true ? { exclusive: true } : {}),
    ...(values.nice === undefined ? {} : { nice: values.nice }),
    ...(values.account === undefined ? {} : { account: values.account }),
    ...(values.comment === undefined ? {} : { comment: values.comment }),
    ...(values.mailType === undefined ? {} : { mailType: values.mailType }),
    ...(values.mailUser === undefined ? {} : { mailUser: values.mailUser }),
    cpusPerTask: defaulted('cpusPerTask', 1),
    ...(values.memoryMiB === undefined ? {} : { memoryMiB: values.memoryMiB }),
    timeLimitSeconds: values.timeLimitSeconds!,
    ...(values.partition === undefined ? {} : { partition: values.partition }),
    name: defaulted('name', posix.basename(script)),
    workingDir: chdir === undefined ? defaulted('workingDir', context.submitDir) : posix.resolve(context.submitDir, chdir),
    // A job array's default, as sbatch's slurm-%A_%a.out: taras-12_3.out.
    output: defaulted('output', values.array === undefined ? DEFAULT_OUTPUT : DEFAULT_OUTPUT.replace('%j', '%A_%a')),
    ...(values.error === undefined ? {} : { error: values.error }),
    export: defaulted('export', { all: true, variables: [] }),
    ...(values.constraint === undefined ? {} : { constraint: values.constraint }),
    requeue: defaulted('requeue', false),
    ...(values.signal === undefined ? {} : { signal: values.signal }),
    ...(values.reservation === undefined ? {} : { reservation: values.reservation }),
    ...(values.checkpointDuration === undefined ? {} : {
      checkpoint: {
        durationSeconds: values.checkpointDuration,
        ...(values.checkpointInterval === undefined ? {} : { intervalSeconds: values.checkpointInterval }),
        ...(values.programClass === undefined ? {} : { programClass: values.programClass }),
      },
    }),
    ...(deadline === undefined ? {} : { deadline }),
    ...(values.hold === true ? { hold: true } : {}),
    ...(beginMs === undefined ? {} : { beginMs }),
    ...(values.dependency === undefined ? {} : { dependency: values.dependency }),
    ...(values.array === undefined ? {} : { array: { text: values.array.text } }),
  };
  return { ok: true, value: { spec, origins }, warnings: [] };
}

/** --deadline read against the submitting clock, with its policy (guarantee unless --deadline-policy says cancel). */
function deadlineOf(values: JobSpecDraft, origins: { [K in ItemKey]?: Origin }, nowMs: number | undefined, errors: JobSpecError[]): DeadlineSpec | undefined {
  if (values.deadline === undefined) {
    if (values.deadlinePolicy !== undefined) {
      errors.push({ source: 'request', option: '--deadline-policy', message: `--deadline-policy${where(origins.deadlinePolicy)} goes with a deadline: add --deadline TIME or leave it out` });
    }
    return undefined;
  }
  if (nowMs === undefined) {
    errors.push({ source: 'request', option: '--deadline', message: 'a deadline is read against the time of submission, which this caller did not give (BuildContext.nowMs)' });
    return undefined;
  }
  const at = parseClockTime(values.deadline, nowMs);
  if (!at.ok) {
    errors.push({ source: 'request', option: '--deadline', message: at.message });
    return undefined;
  }
  return { atMs: at.value, policy: values.deadlinePolicy ?? 'guarantee' };
}
