// The one table of job options: sbatch's long and short names, the job.toml
// key, the label shown in summaries and prompts, and the value parser. The
// directive, flag, job-file and prompt parsers all read from it, so a name or
// value form is defined once.

import { closestWord } from '../config/suggest.js';
import { MAX_ARRAY_SIZE_LIMIT, parseArraySpec } from './array.js';
import { checkPattern } from './pattern.js';
import { unsupportedOptionMessage } from './unsupported.js';
import type { ItemKey, JobValues } from './types.js';
import {
  parseBeginText, parseCheckpointTime, parseConstraint, parseCount, parseDeadlinePolicy, parseDeadlineText, parseDependencyText, parseExport, parseMailType, parseMailUser, parseMemory, parseNodeNames, parseNodes,
  parseNice, parseOpenMode, parsePartition, DEFAULT_NICE, parseReservationName, parseSignal, parseText, parseTime,
  type ValueResult,
} from './values.js';

export interface JobOption<K extends ItemKey = ItemKey> {
  readonly key: K;
  /** sbatch's long name without dashes: `cpus-per-task`. */
  readonly long: string;
  /** sbatch's short letter: `c`. */
  readonly short?: string;
  /** The job.toml key: `cpus_per_task`. */
  readonly tomlKey: string;
  /** For summaries, prompts and `--help`. */
  readonly label: string;
  /** What the value looks like, for `--help` and prompts; absent for switches. */
  readonly valueName?: string;
  /** An optional value (sbatch's `--nice[=N]`): given only attached (`--nice=5`); bare, this is the value. */
  readonly optionalValue?: string;
  /** Switches (`--requeue`) take no value and set this. */
  readonly switchValue?: JobValues[K];
  readonly parse: (raw: string) => ValueResult<JobValues[K]>;
}

function pattern(raw: string): ValueResult<string> {
  const problem = checkPattern(raw);
  return problem === undefined ? { ok: true, value: raw.trim() } : { ok: false, message: problem };
}

const noValue = (raw: string): ValueResult<never> => ({ ok: false, message: `got '${raw}': this option takes no value` });

function option<K extends ItemKey>(definition: JobOption<K>): JobOption {
  return definition as unknown as JobOption;
}

/** The job options Taras takes from #TARAS lines and the command line, in `--help` order. */
export const JOB_OPTIONS: readonly JobOption[] = [
  option({ key: 'nodes', long: 'nodes', short: 'N', tomlKey: 'nodes', label: 'Nodes', valueName: 'N[-M]', parse: parseNodes }),
  option({ key: 'ntasks', long: 'ntasks', short: 'n', tomlKey: 'ntasks', label: 'Tasks', valueName: 'N', parse: parseCount }),
  option({ key: 'cpusPerTask', long: 'cpus-per-task', short: 'c', tomlKey: 'cpus_per_task', label: 'CPUs per task', valueName: 'N', parse: parseCount }),
  option({ key: 'memoryMiB', long: 'mem', tomlKey: 'mem', label: 'Memory per node', valueName: 'SIZE[K|M|G|T]', parse: parseMemory }),
  option({ key: 'timeLimitSeconds', long: 'time', short: 't', tomlKey: 'time', label: 'Time limit', valueName: 'TIME', parse: parseTime }),
  option({ key: 'partition', long: 'partition', short: 'p', tomlKey: 'partition', label: 'Partition', valueName: 'NAME', parse: parsePartition }),
  option({ key: 'name', long: 'job-name', short: 'J', tomlKey: 'job_name', label: 'Job name', valueName: 'NAME', parse: parseText }),
  option({ key: 'workingDir', long: 'chdir', short: 'D', tomlKey: 'chdir', label: 'Working directory', valueName: 'DIR', parse: parseText }),
  option({ key: 'output', long: 'output', short: 'o', tomlKey: 'output', label: 'Output', valueName: 'PATTERN', parse: pattern }),
  option({ key: 'error', long: 'error', short: 'e', tomlKey: 'error', label: 'Error', valueName: 'PATTERN', parse: pattern }),
  option({ key: 'export', long: 'export', tomlKey: 'export', label: 'Export', valueName: 'ALL|NONE|[ALL,]VAR[=value],...', parse: parseExport }),
  option({ key: 'constraint', long: 'constraint', short: 'C', tomlKey: 'constraint', label: 'Constraint', valueName: 'FEATURES', parse: parseConstraint }),
  option({ key: 'requeue', long: 'requeue', tomlKey: 'requeue', label: 'Requeue', switchValue: true, parse: noValue }),
  option({ key: 'reservation', long: 'reservation', tomlKey: 'reservation', label: 'Reservation', valueName: 'NAME', parse: parseReservationName }),
  option({ key: 'deadline', long: 'deadline', tomlKey: 'deadline', label: 'Deadline', valueName: 'TIME', parse: parseDeadlineText }),
  option({ key: 'deadlinePolicy', long: 'deadline-policy', tomlKey: 'deadline_policy', label: 'Deadline policy', valueName: 'guarantee|cancel', parse: parseDeadlinePolicy }),
  option({ key: 'signal', long: 'signal', tomlKey: 'signal', label: 'Warning signal', valueName: '[B:]SIG[@TIME]', parse: parseSignal }),
  option({ key: 'checkpointInterval', long: 'checkpoint-interval', tomlKey: 'checkpoint_interval', label: 'Checkpoint interval', valueName: 'TIME', parse: parseCheckpointTime }),
  option({ key: 'checkpointDuration', long: 'checkpoint-duration', tomlKey: 'checkpoint_duration', label: 'Checkpoint duration', valueName: 'TIME', parse: parseCheckpointTime }),
  option({ key: 'programClass', long: 'program-class', tomlKey: 'program_class', label: 'Program class', valueName: 'NAME', parse: parsePartition }),
  option({ key: 'array', long: 'array', short: 'a', tomlKey: 'array', label: 'Array', valueName: 'IDS[%N]', parse: (raw) => parseArraySpec(raw, MAX_ARRAY_SIZE_LIMIT) }), // the cluster's max_array_size: the controller's check
  option({ key: 'requeue', long: 'no-requeue', tomlKey: 'requeue', label: 'Requeue', switchValue: false, parse: noValue }),
  option({ key: 'hold', long: 'hold', short: 'H', tomlKey: 'hold', label: 'Held', switchValue: true, parse: noValue }),
  option({ key: 'begin', long: 'begin', short: 'b', tomlKey: 'begin', label: 'Begin', valueName: 'TIME', parse: parseBeginText }),
  option({ key: 'dependency', long: 'dependency', short: 'd', tomlKey: 'dependency', label: 'Dependency', valueName: 'TYPE:ID[:ID],...', parse: parseDependencyText }),
  option({ key: 'ntasksPerNode', long: 'ntasks-per-node', tomlKey: 'ntasks_per_node', label: 'Tasks per node', valueName: 'N', parse: parseCount }),
  option({ key: 'memPerCpuMiB', long: 'mem-per-cpu', tomlKey: 'mem_per_cpu', label: 'Memory per CPU', valueName: 'SIZE[K|M|G|T]', parse: parseMemory }),
  option({ key: 'nodelist', long: 'nodelist', short: 'w', tomlKey: 'nodelist', label: 'Nodes to use', valueName: 'HOSTLIST', parse: parseNodeNames }),
  option({ key: 'exclude', long: 'exclude', short: 'x', tomlKey: 'exclude', label: 'Nodes not to use', valueName: 'HOSTLIST', parse: parseNodeNames }),
  option({ key: 'openMode', long: 'open-mode', tomlKey: 'open_mode', label: 'Open mode', valueName: 'append|truncate', parse: parseOpenMode }),
  option({ key: 'account', long: 'account', short: 'A', tomlKey: 'account', label: 'Account', valueName: 'NAME', parse: parseText }),
  option({ key: 'comment', long: 'comment', tomlKey: 'comment', label: 'Comment', valueName: 'TEXT', parse: parseText }),
  option({ key: 'mailType', long: 'mail-type', tomlKey: 'mail_type', label: 'Mail type', valueName: 'TYPE[,TYPE...]', parse: parseMailType }),
  option({ key: 'mailUser', long: 'mail-user', tomlKey: 'mail_user', label: 'Mail user', valueName: 'ADDRESS', parse: parseMailUser }),
  option({ key: 'wrap', long: 'wrap', tomlKey: 'wrap', label: 'Command', valueName: 'COMMAND', parse: parseText }),
  option({ key: 'exclusive', long: 'exclusive', tomlKey: 'exclusive', label: 'Exclusive', switchValue: true, parse: noValue }),
  option({ key: 'nice', long: 'nice', tomlKey: 'nice', label: 'Nice', valueName: 'N', optionalValue: String(DEFAULT_NICE), parse: parseNice }),
  option({ key: 'testOnly', long: 'test-only', tomlKey: 'test_only', label: 'Test only', switchValue: true, parse: noValue }),
  option({ key: 'parsable', long: 'parsable', tomlKey: 'parsable', label: 'Parsable', switchValue: true, parse: noValue }),
];

/** Items that only job.toml and the command line give (the script is the command's operand). */
export const SCRIPT_KEYS = { script: 'script', scriptArgs: 'arguments' } as const;

export function optionByLong(name: string): JobOption | undefined {
  return JOB_OPTIONS.find((o) => o.long === name);
}

export function optionByShort(letter: string): JobOption | undefined {
  return JOB_OPTIONS.find((o) => o.short === letter);
}

/** The option that sets an item (for requeue, `--requeue`). */
export function optionForKey(key: ItemKey): JobOption | undefined {
  return JOB_OPTIONS.find((o) => o.key === key);
}

/** The message (shown after the option) for one not in the table: an unsupported sbatch option, or unknown with a did-you-mean. */
export function unknownOptionMessage(written: string): string {
  const long = written.startsWith('--');
  const name = written.replace(/^--?/, '');
  const unsupported = unsupportedOptionMessage(written);
  if (unsupported !== undefined) return unsupported;
  // A single letter is one edit from every other, so short options only suggest a case slip (-j for -J).
  const suggestion = long
    ? closestWord(name, JOB_OPTIONS.map((o) => o.long), { acceptPrefix: true })
    : JOB_OPTIONS.find((o) => o.short !== undefined && o.short.toLowerCase() === name.toLowerCase())?.short;
  const hint = suggestion === undefined ? '' : `; did you mean ${long ? '--' : '-'}${suggestion}?`;
  return `unknown option${hint}`;
}
