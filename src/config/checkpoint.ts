// Checkpointing in cluster.toml (seed 000 2.4, 3.2.3, figure 3.5): the
// [[program_class]] tables (which signal asks a job for a periodic checkpoint,
// which for its last one before it is preempted, and how a restart is
// announced), the cluster's maxima of checkpoint interval and duration, and
// the partitions' preemption settings (Slurm's PreemptMode and GraceTime).

import { constants as osConstants } from 'node:os';
import type { ErrorList } from './errors.js';
import { NAME_HINT, NAME_PATTERN, type Table, TableReader } from './fields.js';

/** How a restarted job is told: `-Restart` appended to its arguments (the seed's default), TARAS_RESTART=1, both, or neither. */
export const RESTART_ACTIONS = ['arg', 'env', 'both', 'none'] as const;
export type RestartAction = (typeof RESTART_ACTIONS)[number];

export interface ProgramClass {
  readonly name: string;
  /** A Node signal name such as "SIGUSR1". */
  readonly periodicSignal: string;
  readonly preemptSignal: string;
  readonly restart: RestartAction;
}

/** Slurm's PreemptMode of a partition: what happens to its jobs when a higher-priority partition needs their nodes. */
export const PREEMPT_MODES = ['off', 'requeue', 'cancel', 'suspend'] as const;
export type PreemptMode = (typeof PREEMPT_MODES)[number];

/** What the classes and maxima default to. Seed figure 3.5 used signals 30 and 31 (SIGUSR1 and SIGUSR2 where it ran). */
export const CHECKPOINT_DEFAULTS = {
  classes: [
    { name: 'script', periodicSignal: 'SIGUSR1', preemptSignal: 'SIGUSR2', restart: 'arg' },
    { name: 'spmd', periodicSignal: 'SIGUSR1', preemptSignal: 'SIGUSR2', restart: 'arg' },
  ] as readonly ProgramClass[],
  maxIntervalSeconds: 7 * 86_400,
  maxDurationSeconds: 3600,
} as const;

export const PROGRAM_CLASS_KEYS = {
  known: ['name', 'periodic_signal', 'preempt_signal', 'restart'],
  aliases: { class: 'name', checkpoint_periodic_signal: 'periodic_signal', checkpoint_preempt_signal: 'preempt_signal', restart_action: 'restart' },
};

/** "USR1", "SIGUSR1" or a number as this system numbers it: the Node name, or undefined. */
export function signalName(value: unknown): string | undefined {
  if (typeof value === 'number' && Number.isInteger(value)) return Object.entries(osConstants.signals).find(([, n]) => n === value)?.[0];
  if (typeof value !== 'string') return undefined;
  if (/^\d+$/.test(value.trim())) return signalName(Number(value.trim()));
  const name = `SIG${value.trim().toUpperCase().replace(/^SIG/, '')}`;
  return name in osConstants.signals && name !== 'SIGKILL' && name !== 'SIGSTOP' ? name : undefined;
}

/** [[program_class]] tables; undefined when the file has none (the built-in "script" and "spmd" classes apply). The first is the default. */
export function readProgramClasses(root: TableReader, errors: ErrorList): ProgramClass[] | undefined {
  const tables = root.arrayOfTables('program_class');
  if (tables === undefined || tables.length === 0) return undefined;
  const classes: ProgramClass[] = [];
  tables.forEach((table: Table, index) => {
    const reader = new TableReader(`program_class[${index}]`, table, errors);
    reader.rejectUnknownKeys(PROGRAM_CLASS_KEYS);
    const name = reader.string('name', { example: '"script"', required: true, pattern: NAME_PATTERN, patternHint: NAME_HINT });
    if (name !== undefined && classes.some((c) => c.name === name)) reader.error('name', `program class "${name}" is defined twice`, 'give each [[program_class]] its own name');
    const signal = (key: string, fallback: string): string => {
      if (!reader.has(key)) return fallback;
      const found = signalName(reader.raw(key));
      if (found === undefined) reader.error(key, `${JSON.stringify(reader.raw(key))} is not a signal this system can send to a job`, `write ${key} = "${fallback.slice(3)}" (a name such as USR1 or a number; not KILL or STOP)`);
      return found ?? fallback;
    };
    const periodicSignal = signal('periodic_signal', 'SIGUSR1');
    const preemptSignal = signal('preempt_signal', 'SIGUSR2');
    if (periodicSignal === preemptSignal) {
      // The key the file gave is at fault; the fix names a signal that differs from the other one.
      const key = reader.has('preempt_signal') ? 'preempt_signal' : 'periodic_signal';
      const other = periodicSignal === 'SIGUSR2' ? 'USR1' : 'USR2';
      reader.error(key, `the preemption signal and the periodic signal are both ${periodicSignal}: a job could not tell them apart`, `give ${key} another signal, such as "${other}"`);
    }
    const restart = reader.has('restart') ? (reader.string('restart', { example: '"arg"' }) as RestartAction | undefined) : 'arg';
    if (restart !== undefined && !(RESTART_ACTIONS as readonly string[]).includes(restart)) {
      reader.error('restart', `"${restart}" is not a restart action`, `write restart = "arg" (one of ${RESTART_ACTIONS.join(', ')}: -Restart added to the arguments, TARAS_RESTART=1, both, nothing)`);
    }
    if (name !== undefined) classes.push({ name, periodicSignal, preemptSignal, restart: (RESTART_ACTIONS as readonly string[]).includes(restart ?? '') ? restart! : 'arg' });
  });
  return classes;
}

/** A partition's preempt_mode and grace_time, where the file gives them (absent: off and 0). */
export function readPreemption(reader: TableReader): { preemptMode?: PreemptMode; graceTimeSeconds?: number } {
  let preemptMode: PreemptMode | undefined;
  if (reader.has('preempt_mode')) {
    const text = reader.string('preempt_mode', { example: '"requeue"' })?.toLowerCase();
    if (text !== undefined && (PREEMPT_MODES as readonly string[]).includes(text)) preemptMode = text as PreemptMode;
    else if (text !== undefined) reader.error('preempt_mode', `"${text}" is not a preemption mode`, `write preempt_mode = "requeue" (one of ${PREEMPT_MODES.join(', ')})`);
  }
  const graceTimeSeconds = reader.duration('grace_time', { example: '"30s"', minutesIfBare: false, unlimited: false, min: 0 }) ?? undefined;
  return { ...(preemptMode === undefined ? {} : { preemptMode }), ...(graceTimeSeconds === undefined ? {} : { graceTimeSeconds }) };
}
