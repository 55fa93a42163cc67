// Value forms of the job options, exactly as sbatch writes them (--time,
// --mem, --nodes, --export, --constraint), and their display forms. Each
// parser returns the value or a message saying what was expected.

import { parseDependency, type DependencySpec } from './dependency.js';
import { RESERVATION_NAME, RESERVATION_NAME_RULE } from '../api/types.js';
import { describeHostlistProblem, parseHostlist } from '../config/hostlist.js';
import { parseDuration, parseMemoryMiB, readWarnSignal, SBATCH_DURATION_FORMS, WARN_SIGNAL_FORMS } from '../config/units.js';
import { DEADLINE_POLICIES, OPEN_MODES, type OpenMode, type Constraint, type DeadlinePolicy, type ExportSpec, type ExportVariable, type NodeRange, type TimeLimit, type WarnSignal } from './types.js';

export type ValueResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly message: string };

const ok = <T>(value: T): ValueResult<T> => ({ ok: true, value });
const bad = (raw: string, expected: string): ValueResult<never> => ({ ok: false, message: `got '${raw}': expected ${expected}` });

export const TIME_FORMS = `${SBATCH_DURATION_FORMS} or UNLIMITED`;
const MEMORY_EXPECTED = 'a whole number with an optional K, M, G or T suffix (default M): 4096, 4G';

function wholeNumber(text: string): number | undefined {
  if (!/^\d+$/.test(text)) return undefined;
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : undefined;
}

/**
 * sbatch --time: `minutes`, `MM:SS`, `HH:MM:SS`, `D-HH`, `D-HH:MM`, `D-HH:MM:SS`,
 * `UNLIMITED`/`INFINITE`/`-1`, read by src/config's parseDuration in its sbatch-only mode
 * (no "90s"). Like sbatch, fields after the first are not range-checked (`90:00` is 90
 * minutes) and a limit of zero means no limit. Unlike sbatch, which rounds up to whole
 * minutes, seconds are kept: the core schedules in seconds.
 */
export function parseTime(raw: string): ValueResult<TimeLimit> {
  const parsed = parseDuration(raw, { sbatchOnly: true });
  if (!parsed.ok) return bad(raw, TIME_FORMS);
  return ok(parsed.value ?? 'UNLIMITED');
}

/** A checkpoint interval or duration: a --time form, not UNLIMITED and not zero. */
export function parseCheckpointTime(raw: string): ValueResult<number> {
  const parsed = parseDuration(raw, { sbatchOnly: true });
  if (!parsed.ok || parsed.value === null || parsed.value < 1) return bad(raw, `a duration of at least 1 s: ${SBATCH_DURATION_FORMS} (0:30 is 30 seconds)`);
  return ok(parsed.value);
}

/**
 * sbatch --mem: a whole number with an optional K, M, G or T suffix (default M, binary
 * units, any case, a trailing B allowed as in sbatch: `4GB`); K rounds up.
 */
export function parseMemory(raw: string): ValueResult<number> {
  const parsed = parseMemoryMiB(raw, { sbatchOnly: true });
  if (parsed.ok) return ok(parsed.value);
  // A whole number, only too large: say that, not that it is no number.
  return bad(raw, /too large/.test(parsed.message) ? `${MEMORY_EXPECTED}; this one is too large` : MEMORY_EXPECTED);
}

/** sbatch --nodes: `N` or `N-M`, N >= 1, M >= N. */
export function parseNodes(raw: string): ValueResult<NodeRange> {
  const match = /^(\d+)(?:-(\d+))?$/.exec(raw.trim());
  const expected = 'a node count N or a range N-M (e.g. 4 or 2-4)';
  if (match === null) return bad(raw, expected);
  const min = wholeNumber(match[1]);
  const max = match[2] === undefined ? undefined : wholeNumber(match[2]);
  if (min === undefined || min < 1 || (match[2] !== undefined && max === undefined)) return bad(raw, `${expected}, at least 1`);
  if (max !== undefined && max < min) return bad(raw, `${expected} with N <= M`);
  return ok(max === undefined || max === min ? { min } : { min, max });
}

/** A count such as --ntasks or --cpus-per-task: a whole number >= 1. */
export function parseCount(raw: string): ValueResult<number> {
  const value = wholeNumber(raw.trim());
  return value !== undefined && value >= 1 ? ok(value) : bad(raw, 'a whole number, at least 1');
}

/** A non-empty word with no spaces (partition). Slurm's partition lists are not supported. */
export function parsePartition(raw: string): ValueResult<string> {
  const text = raw.trim();
  if (text.includes(',')) return bad(raw, 'one partition name (Taras does not take a list of partitions)');
  return /^[A-Za-z0-9_.-]+$/.test(text) ? ok(text) : bad(raw, 'a partition name (letters, digits, _ . -)');
}

/** An advance reservation's name (letters, digits, _ . -). */
export function parseReservationName(raw: string): ValueResult<string> {
  const text = raw.trim();
  return RESERVATION_NAME.test(text) ? ok(text) : bad(raw, RESERVATION_NAME_RULE);
}

/** --deadline as written: checked here (any form parseClockTime reads), read against the clock when the spec is built. */
export function parseDeadlineText(raw: string): ValueResult<string> {
  const checked = parseClockTime(raw, 0);
  return checked.ok ? ok(raw.trim()) : checked;
}

/** --begin as written: checked here (any form parseClockTime reads), read against the clock when the spec is built. */
export const parseBeginText = parseDeadlineText;

/** --dependency: see dependency.ts. */
export function parseDependencyText(raw: string): ValueResult<DependencySpec> {
  return parseDependency(raw);
}

/** --deadline-policy: guarantee or cancel. */
export function parseDeadlinePolicy(raw: string): ValueResult<DeadlinePolicy> {
  const text = raw.trim().toLowerCase();
  return (DEADLINE_POLICIES as readonly string[]).includes(text) ? ok(text as DeadlinePolicy) : bad(raw, 'guarantee (the default: a priority job) or cancel (Slurm\'s: ended DEADLINE when it can no longer end in time)');
}

/** Any non-empty text (job name, directory). */
export function parseText(raw: string): ValueResult<string> {
  return raw.trim() === '' ? bad(raw, 'a non-empty value') : ok(raw.trim());
}

const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * sbatch --export: `ALL`, `NONE`, `ALL,VAR=value,VAR2` or `VAR=value,VAR2` (only those).
 * ALL and NONE are case-insensitive as in sbatch. Values cannot contain commas.
 */
export function parseExport(raw: string): ValueResult<ExportSpec> {
  const items = raw.trim().split(',').map((item) => item.trim());
  const expected = 'ALL, NONE, or a list such as ALL,VAR=value,VAR2';
  if (items.some((item) => item === '')) return bad(raw, `${expected} (no empty items)`);
  let all = false;
  const variables: ExportVariable[] = [];
  for (const [index, item] of items.entries()) {
    const upper = item.toUpperCase();
    if (upper === 'NONE') {
      if (items.length > 1) return bad(raw, `${expected}: NONE stands alone (list the variables alone to export only those)`);
      return ok({ all: false, variables: [] });
    }
    if (upper === 'ALL') {
      if (index !== 0) return bad(raw, `${expected}: ALL comes first`);
      all = true;
      continue;
    }
    const equals = item.indexOf('=');
    const name = equals < 0 ? item : item.slice(0, equals);
    if (!VARIABLE_NAME.test(name)) return bad(raw, `${expected}: '${name}' is not a variable name`);
    variables.push(equals < 0 ? { name } : { name, value: item.slice(equals + 1) });
  }
  return ok({ all, variables });
}

/** Shows an ExportSpec the way --export takes it. */
export function formatExport(spec: ExportSpec): string {
  const variables = spec.variables.map((v) => (v.value === undefined ? v.name : `${v.name}=${v.value}`));
  if (spec.all) return ['ALL', ...variables].join(',');
  return variables.length === 0 ? 'NONE' : variables.join(',');
}

const FEATURE = /^[A-Za-z0-9_.:=+-]+$/;

/**
 * sbatch --constraint with features joined by `&` (AND) and `|` (OR), & binding tighter.
 * Not supported yet (an error names them): counts `gpu*2`, matching OR `[a|b]`,
 * parentheses, and `!`. A comma is an error in Slurm too.
 */
export function parseConstraint(raw: string): ValueResult<Constraint> {
  const text = raw.trim();
  if (text === '') return bad(raw, 'features joined by & (and) or | (or), e.g. gpu&ib');
  if (text.includes(',')) return bad(raw, "features joined by & (and) or | (or): ',' is not an operator (Slurm rejects it too); write a&b or a|b");
  const unsupported = /[*[\]()!]/.exec(text);
  if (unsupported !== null) {
    return bad(raw, `features joined by & and |: '${unsupported[0]}' (counts, brackets, parentheses, negation) is not supported by Taras yet`);
  }
  const anyOf = text.split('|').map((alternative) => alternative.split('&').map((feature) => feature.trim()));
  for (const feature of anyOf.flat()) {
    if (!FEATURE.test(feature)) return bad(raw, `features joined by & (and) or | (or): '${feature}' is not a feature name`);
  }
  return ok({ text, anyOf });
}

/** sbatch --nodelist / --exclude: host lists as Slurm writes them (`node[01-04],gpu1`), expanded. */
export function parseNodeNames(raw: string): ValueResult<readonly string[]> {
  const parsed = parseHostlist(raw.trim(), 10_000);
  if (!parsed.ok) return bad(raw, `node names or a host list such as node[01-04],gpu1 (${describeHostlistProblem(parsed.problem)})`);
  if (parsed.names.length === 0) return bad(raw, 'at least one node name, or a host list such as node[01-04]');
  return ok([...new Set(parsed.names)]);
}

/** The largest --nice adjustment either way (Slurm's is 2147483645; the controller keeps it under one partition tier). */
export const MAX_NICE = 10_000;
/** A bare --nice, as sbatch's. */
export const DEFAULT_NICE = 100;

/** sbatch --nice=N: a whole number from -10000 to 10000 (negative: administrators only, checked by the controller). */
export function parseNice(raw: string): ValueResult<number> {
  const text = raw.trim();
  const value = /^[+-]?\d+$/.test(text) ? Number(text) : NaN;
  return Number.isSafeInteger(value) && Math.abs(value) <= MAX_NICE ? ok(value) : bad(raw, `a whole number from -${MAX_NICE} to ${MAX_NICE} (higher: later; negative: administrators only)`);
}

/** sbatch --open-mode: append or truncate. */
export function parseOpenMode(raw: string): ValueResult<OpenMode> {
  const text = raw.trim().toLowerCase();
  return (OPEN_MODES as readonly string[]).includes(text) ? ok(text as OpenMode) : bad(raw, 'append or truncate');
}

/** sbatch --mail-type's events (Slurm's list). */
export const MAIL_TYPES = [
  'NONE', 'BEGIN', 'END', 'FAIL', 'REQUEUE', 'ALL', 'INVALID_DEPEND', 'STAGE_OUT', 'TIME_LIMIT', 'TIME_LIMIT_90', 'TIME_LIMIT_80', 'TIME_LIMIT_50', 'ARRAY_TASKS',
] as const;

/** sbatch --mail-type=TYPE[,TYPE...]: Slurm's event names, any case. */
export function parseMailType(raw: string): ValueResult<readonly string[]> {
  const types = raw.split(',').map((item) => item.trim().toUpperCase());
  const wrong = types.find((type) => !(MAIL_TYPES as readonly string[]).includes(type));
  if (wrong !== undefined) return bad(raw, `mail types separated by commas: ${MAIL_TYPES.join(', ')}${wrong === '' ? '' : ` ('${wrong}' is not one)`}`);
  return ok([...new Set(types)]);
}

/**
 * The address part of --mail-user: a user name (the cluster's mail_domain is
 * added) or local@domain, in the plain form only: letters, digits and
 * `. _ % + -` before the @ (not first), a domain of dot-separated labels.
 * Nothing a mail program could read as an option, a second address or a header.
 */
const MAIL_ADDRESS = /^[A-Za-z0-9_%+][A-Za-z0-9._%+-]{0,63}(@[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?)*)?$/;

/** sbatch --mail-user=ADDRESS: one address (or user name), checked strictly. */
export function parseMailUser(raw: string): ValueResult<string> {
  const text = raw.trim();
  if (!MAIL_ADDRESS.test(text) || text.length > 254) {
    return bad(raw, 'one mail address such as ada@example.org, or a user name (the cluster\'s mail_domain is added); letters, digits and . _ % + - before the @');
  }
  return ok(text);
}

/** sbatch --signal=[B:]SIG[@TIME] (see src/config/units.ts, which cluster.toml's warn_signal shares). */
export function parseSignal(raw: string): ValueResult<WarnSignal> {
  const read = readWarnSignal(raw);
  return read.ok ? read : { ok: false, message: `${read.why}; write ${WARN_SIGNAL_FORMS}, e.g. --signal=B:USR1@120` };
}

/** sbatch's form back: `B:USR1@60`. */
export const formatSignal = (signal: WarnSignal): string => `${signal.batchOnly ? 'B:' : ''}${signal.signal}@${signal.beforeSeconds}`;

/** sbatch's display form: `HH:MM:SS`, or `D-HH:MM:SS` from one day on; `UNLIMITED`. */
export function formatSbatchTime(limit: TimeLimit): string {
  if (limit === 'UNLIMITED') return 'UNLIMITED';
  const two = (n: number) => String(n).padStart(2, '0');
  const days = Math.floor(limit / 86400);
  const clock = `${two(Math.floor((limit % 86400) / 3600))}:${two(Math.floor((limit % 3600) / 60))}:${two(limit % 60)}`;
  return days > 0 ? `${days}-${clock}` : clock;
}

/** Human form: `1 day 2 hours 30 minutes`, `45 seconds`, `unlimited`. */
export function formatHumanTime(limit: TimeLimit): string {
  if (limit === 'UNLIMITED') return 'unlimited';
  const parts: string[] = [];
  let rest = limit;
  for (const [unit, size] of [['day', 86400], ['hour', 3600], ['minute', 60], ['second', 1]] as const) {
    const count = Math.floor(rest / size);
    rest -= count * size;
    if (count > 0) parts.push(`${count} ${unit}${count === 1 ? '' : 's'}`);
  }
  return parts.length === 0 ? '0 seconds' : parts.join(' ');
}

/** `512 MiB`, `4 GiB`, `2 TiB`: the largest binary unit that divides exactly. */
export function formatMemory(mebibytes: number): string {
  if (mebibytes >= 1024 * 1024 && mebibytes % (1024 * 1024) === 0) return `${mebibytes / (1024 * 1024)} TiB`;
  if (mebibytes >= 1024 && mebibytes % 1024 === 0) return `${mebibytes / 1024} GiB`;
  return `${mebibytes} MiB`;
}

export function formatNodes(nodes: NodeRange): string {
  return nodes.max === undefined ? String(nodes.min) : `${nodes.min}-${nodes.max}`;
}

/**
 * A time as the submitter's clock shows it, with its zone: `Sat 28 Nov 2026 10:00:00 CET`. `timeZone` is the
 * submitting shell's TZ (the controller reads it from the job's submitEnv, so its words match the CLI's);
 * absent, or not a zone name Intl knows: this process's own zone.
 */
export function formatLocalTime(ms: number, timeZone?: string): string {
  const options: Intl.DateTimeFormatOptions = {
    weekday: 'short', day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23', timeZoneName: 'short',
  };
  let format: Intl.DateTimeFormat;
  try {
    // glibc's TZ=:Europe/Berlin names the same zone as Europe/Berlin.
    format = new Intl.DateTimeFormat('en-GB', { ...options, ...(timeZone === undefined || timeZone === '' ? {} : { timeZone: timeZone.replace(/^:/, '') }) });
  } catch {
    format = new Intl.DateTimeFormat('en-GB', options);
  }
  const part: Partial<Record<Intl.DateTimeFormatPartTypes, string>> = {};
  for (const { type, value } of format.formatToParts(ms)) part[type] = value;
  return `${part.weekday} ${part.day} ${part.month} ${part.year} ${part.hour}:${part.minute}:${part.second} ${part.timeZoneName}`;
}

/**
 * sbatch's check of --begin against --deadline ("Incompatible begin and deadline time specification"): a
 * deadline earlier than the begin time could never be met. The words of the refusal, or undefined when the
 * two fit; the CLI (buildJobSpec) and the controller (submissionRefusals) both say it with this.
 */
export function beginDeadlineConflict(beginMs: number, deadlineMs: number, timeZone?: string): string | undefined {
  if (deadlineMs >= beginMs) return undefined;
  return `incompatible --begin and --deadline: the deadline ${formatLocalTime(deadlineMs, timeZone)} is earlier than the begin time `
    + `${formatLocalTime(beginMs, timeZone)}, so the job could never end by it; give a --deadline after the begin time, or an earlier --begin`;
}

const BEGIN_FORMS = 'now, now+N[seconds|minutes|hours|days|weeks] (now+1hour), today, tomorrow, midnight, noon, teatime, '
  + 'HH:MM[:SS] (the next such time), YYYY-MM-DD[THH:MM[:SS]] (local time)';

const UNIT_SECONDS: Record<string, number> = {
  '': 1, s: 1, sec: 1, secs: 1, second: 1, seconds: 1, m: 60, min: 60, mins: 60, minute: 60, minutes: 60,
  h: 3600, hour: 3600, hours: 3600, d: 86_400, day: 86_400, days: 86_400, w: 604_800, week: 604_800, weeks: 604_800,
};

/**
 * A point in time as Slurm's --begin and `scontrol create reservation
 * StartTime=` read it, in local time: `now[+N unit]` (seconds by default),
 * `today`, `tomorrow`, `midnight`, `noon`, `teatime` (16:00), `HH:MM[:SS]`
 * (the next such time), `YYYY-MM-DD[THH:MM[:SS]]`. Returns epoch ms.
 */
export function parseClockTime(raw: string, nowMs: number): ValueResult<number> {
  const text = raw.trim().toLowerCase();
  const now = new Date(nowMs);
  const at = (days: number, hours: number, minutes = 0, seconds = 0) =>
    new Date(now.getFullYear(), now.getMonth(), now.getDate() + days, hours, minutes, seconds).getTime();
  const relative = /^now(?:\s*\+\s*(\d+)\s*([a-z]*))?$/.exec(text);
  if (relative) {
    if (relative[1] === undefined) return ok(nowMs);
    const unit = UNIT_SECONDS[relative[2]];
    const value = nowMs + Number(relative[1]) * (unit ?? NaN) * 1000;
    // A century ahead at most: anything further is a typo, not a plan.
    return unit === undefined || !(value - nowMs <= 100 * 366 * 86_400_000) ? bad(raw, BEGIN_FORMS) : ok(value);
  }
  const named: Record<string, () => number> = {
    today: () => at(0, 0), tomorrow: () => at(1, 0), midnight: () => at(1, 0),
    noon: () => (at(0, 12) > nowMs ? at(0, 12) : at(1, 12)), teatime: () => (at(0, 16) > nowMs ? at(0, 16) : at(1, 16)),
  };
  if (named[text]) return ok(named[text]());
  const clock = /^(\d{1,2}):(\d{2})(?::(\d{2}))?$/.exec(text);
  if (clock) {
    const [h, m, s] = [Number(clock[1]), Number(clock[2]), Number(clock[3] ?? 0)];
    if (h > 23 || m > 59 || s > 59) return bad(raw, BEGIN_FORMS);
    const today = at(0, h, m, s);
    return ok(today > nowMs ? today : at(1, h, m, s));
  }
  const date = /^(\d{4})-(\d{2})-(\d{2})(?:t(\d{2}):(\d{2})(?::(\d{2}))?)?$/.exec(text);
  if (date) {
    const [y, mo, d, h, mi, s] = [1, 2, 3, 4, 5, 6].map((i) => Number(date[i] ?? 0));
    const value = new Date(y, mo - 1, d, h, mi, s);
    if (value.getFullYear() !== y || value.getMonth() !== mo - 1 || value.getDate() !== d || h > 23 || mi > 59 || s > 59) return bad(raw, BEGIN_FORMS);
    return ok(value.getTime());
  }
  return bad(raw, BEGIN_FORMS);
}
