// Durations and memory sizes as administrators and sbatch users write them.
// One parser for cluster.toml, `--time`/`--mem` flags and #TARAS directives, so
// "30:00" or "16G" means the same thing everywhere; job options take only the
// forms sbatch itself takes (`sbatchOnly`).

import { MAX_SIGNAL_NUMBER, SIGNAL_NAMES } from '../api/types.js';

export type UnitResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly message: string; readonly fix: string };

/** The --time forms sbatch itself takes, without its words for no limit. */
export const SBATCH_DURATION_FORMS = 'minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS';

export const DURATION_FORMS = `${SBATCH_DURATION_FORMS}, "UNLIMITED", or a number with a unit: 90s, 5m, 2h, 1d, 1h30m`;

export const MEMORY_FORMS = 'MiB as a plain number (512), or with a K, M, G or T suffix (512M, 16G, 1T)';

export interface UnitOptions {
  /**
   * Only what sbatch itself takes for --time and --mem: no unit forms such as
   * "90s", no "GiB" (sbatch allows "GB"), no space before the unit. Job options
   * use this, so a script that Taras accepts also runs under Slurm.
   */
  readonly sbatchOnly?: boolean;
}

const MINUTE = 60;
const HOUR = 3600;
const DAY = 86400;

/**
 * Seconds from a duration, or `null` for no limit. Accepts sbatch's --time
 * forms (a plain number is minutes; "UNLIMITED", "INFINITE", "-1" and, as in
 * sbatch, a total of zero mean no limit) and, unless `sbatchOnly`, unit forms
 * "90s", "5m", "2h", "1d", "1h30m" (where "0s" is zero seconds).
 */
export function parseDuration(text: string, options: UnitOptions = {}): UnitResult<number | null> {
  const trimmed = text.trim();
  const forms = options.sbatchOnly ? `${SBATCH_DURATION_FORMS} or "UNLIMITED"` : DURATION_FORMS;
  const bad = (why: string): UnitResult<never> => ({ ok: false, message: `"${text}" is not a duration: ${why}`, fix: `write ${forms}` });
  if (trimmed === '') return bad('it is empty');
  if (/^(unlimited|infinite|-1)$/i.test(trimmed)) return { ok: true, value: null };

  const withUnits = /^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/i.exec(trimmed);
  if (withUnits && /[a-z]$/i.test(trimmed)) {
    if (options.sbatchOnly) return bad('sbatch takes no units here');
    const [, days = '0', hours = '0', minutes = '0', secs = '0'] = withUnits;
    const seconds = Number(days) * DAY + Number(hours) * HOUR + Number(minutes) * MINUTE + Number(secs);
    return Number.isSafeInteger(seconds) ? { ok: true, value: seconds } : bad('too long');
  }

  // sbatch: [days-]hours[:minutes[:seconds]] with a day part, else minutes[:seconds] or
  // hours:minutes:seconds. As in sbatch, fields after the first are not range-checked ("90:00").
  const sbatch = /^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$/.exec(trimmed);
  if (!sbatch) {
    if (!options.sbatchOnly && /^\d+(\.\d+)?[a-z]+$/i.test(trimmed)) return bad('the unit must be d, h, m or s, in that order, with whole numbers');
    return bad('unrecognised form');
  }
  const [, daysText, first, second, third] = sbatch;
  const [a, b = 0, c = 0] = [first, second, third].filter((part): part is string => part !== undefined).map(Number);
  let seconds: number;
  if (daysText !== undefined) seconds = Number(daysText) * DAY + a * HOUR + b * MINUTE + c;
  else if (third !== undefined) seconds = a * HOUR + b * MINUTE + c;
  else seconds = a * MINUTE + b;
  if (!Number.isSafeInteger(seconds)) return bad('too long');
  return { ok: true, value: seconds === 0 ? null : seconds };
}

/** True for the text forms that carry their own unit ("90s", "1:30", "1-0"): not a bare number. */
export function hasExplicitUnit(text: string): boolean {
  return !/^\s*\d+\s*$/.test(text);
}

const MEMORY_UNIT_MIB: Record<string, number> = { k: 1 / 1024, m: 1, g: 1024, t: 1024 * 1024 };

/**
 * MiB from a memory size: a plain number is MiB (Slurm's default unit); K, M,
 * G and T are binary (a trailing "B", or unless `sbatchOnly` "iB", is allowed).
 * Kilobytes round up to a whole MiB.
 */
export function parseMemoryMiB(text: string, options: UnitOptions = {}): UnitResult<number> {
  const form = options.sbatchOnly ? /^(\d+)(?:([kmgt])b?)?$/i : /^(\d+)\s*(?:([kmgt])(?:i?b)?)?$/i;
  const match = form.exec(text.trim());
  if (!match) {
    const why = /^\d+\.\d+/.test(text.trim()) ? 'use a whole number with a smaller unit (1536M, not 1.5G)' : 'unrecognised form';
    return { ok: false, message: `"${text}" is not a memory size: ${why}`, fix: `write ${MEMORY_FORMS}` };
  }
  const [, amount, unit = 'm'] = match;
  const mib = Math.ceil(Number(amount) * MEMORY_UNIT_MIB[unit.toLowerCase()]);
  if (!Number.isSafeInteger(Number(amount)) || !Number.isSafeInteger(mib)) return { ok: false, message: `"${text}" is too large`, fix: `write ${MEMORY_FORMS}` };
  return { ok: true, value: mib };
}

/**
 * A warning signal before the time limit, as sbatch's `--signal`: `signal` a
 * name without SIG (USR1) or a number as written, `beforeSeconds` before the
 * limit, to the batch shell only (`batchOnly`, sbatch's `B:`) or to every
 * process of the job.
 */
export interface WarnSignal {
  readonly signal: string;
  readonly beforeSeconds: number;
  readonly batchOnly: boolean;
}

/** sbatch's --signal forms, what each part takes (cluster.toml's warn_signal and the job option add their own example). */
export const WARN_SIGNAL_FORMS = `[B:]SIG[@TIME]: a signal name or a number from 1 to ${MAX_SIGNAL_NUMBER} (USR1, SIGUSR1, 10), B: for the batch shell only, TIME seconds before the time limit (0 to 65535, default 60)`;

/**
 * sbatch's --signal=[{R|B}:]SIG[@TIME] read part by part: the value, or what
 * is wrong, naming the part at fault. SIG a name (USR1, SIGUSR1, any case) or
 * a number 1-31, TIME 0 to 65535 seconds (default `defaultSeconds`, 60 as
 * sbatch). `R:` (reservations) is not supported. A real-time signal (32-64,
 * which Slurm takes) is refused with `realTime` set when nothing else is wrong:
 * Taras cannot send it (MAX_SIGNAL_NUMBER), and an older version accepted it.
 */
export function readWarnSignal(text: string, defaultSeconds = 60): { readonly ok: true; readonly value: WarnSignal } | { readonly ok: false; readonly why: string; readonly realTime?: true } {
  const bad = (why: string) => ({ ok: false as const, why });
  const trimmed = text.trim();
  if (trimmed === '') return bad('it is empty');
  const at = trimmed.indexOf('@');
  const head = at < 0 ? trimmed : trimmed.slice(0, at);
  const time = at < 0 ? undefined : trimmed.slice(at + 1);
  const colon = head.indexOf(':');
  const flag = colon < 0 ? undefined : head.slice(0, colon);
  const signal = colon < 0 ? head : head.slice(colon + 1);
  if (flag !== undefined && flag.toUpperCase() !== 'B') return bad(`'${flag}:' is not supported (only B:)`);
  if (signal === '') return bad(`no signal${at < 0 ? '' : ' before @'}`);
  let name = signal.toUpperCase().replace(/^SIG/, '');
  if (/^\d+$/.test(name)) {
    if (Number(name) < 1 || Number(name) > 64) return bad(`'${signal}': signal numbers go from 1 to ${MAX_SIGNAL_NUMBER}`);
    name = String(Number(name));
  } else if (!SIGNAL_NAMES.includes(name)) {
    return bad(`'${signal}' is not a signal name (kill -l lists them)`);
  }
  if (time === '') return bad(`no TIME after @ (or leave out @ for ${defaultSeconds} s)`);
  if (time !== undefined && !/^\d+$/.test(time)) return bad(`'${time}' after @ is not a number of seconds`);
  const beforeSeconds = time === undefined ? defaultSeconds : Number(time);
  if (beforeSeconds > 65535) return bad(`'${time}' after @: TIME is at most 65535 seconds`);
  if (Number(name) > MAX_SIGNAL_NUMBER) {
    return { ok: false, realTime: true, why: `'${signal}' is a real-time signal (32 to 64), which Taras cannot send to a job` };
  }
  return { ok: true, value: { signal: name, beforeSeconds, batchOnly: flag !== undefined } };
}

/** readWarnSignal with the words of a setting (cluster.toml's warn_signal). */
export function parseWarnSignal(text: string, defaultSeconds = 60): UnitResult<WarnSignal> & { readonly realTime?: true } {
  const read = readWarnSignal(text, defaultSeconds);
  if (read.ok) return read;
  return { ok: false, message: `"${text}" is not a signal request: ${read.why}`, fix: `write ${WARN_SIGNAL_FORMS}, e.g. B:USR1@120`, ...(read.realTime ? { realTime: true } : {}) };
}
