// Day and night queues (seed 004, Argonne's Scheduler.config): the day is a
// weekly window (by default Monday to Friday 09:00-18:00 local time), the rest
// is night. A job of at most `day_max_node_minutes` (nodes x time limit in
// minutes) and `day_max_time` is a day job and may run at any time; a bigger
// one is a night job: it starts only at night and must end before the next
// day begins; one above `night_max_node_minutes` is refused. While the
// holiday switch is on, every period is night. Per user and queue, pending
// work above `queued_limit_node_minutes` is held by the system until earlier
// jobs leave the queue (Argonne's Queue_Supervisor).
//
// Pure: times are epoch milliseconds in, local calendar arithmetic through
// Date (the controller's time zone), no clock.

import type { TableReader } from './fields.js';

export interface DayNightConfig {
  /** Weekdays (0 = Sunday .. 6 = Saturday) that have a day window. */
  readonly days: readonly number[];
  /** The day window on those days, minutes after local midnight: [start, end). */
  readonly dayStartMinute: number;
  readonly dayEndMinute: number;
  /** The text of `day`, for messages. */
  readonly dayText: string;
  readonly dayMaxNodeMinutes: number;
  readonly dayMaxTimeSeconds: number;
  /** 0: no cap. */
  readonly nightMaxNodeMinutes: number;
  /** 0: no limit. */
  readonly queuedLimitNodeMinutes: number;
}

export const DAY_NIGHT_DEFAULTS = {
  day: 'Mon-Fri 09:00-18:00',
  dayMaxNodeMinutes: 1920,
  dayMaxTimeSeconds: 9 * 3600,
  nightMaxNodeMinutes: 15360,
  queuedLimitNodeMinutes: 30720,
} as const;

export const DAY_NIGHT_KEYS = { known: ['day', 'day_max_node_minutes', 'day_max_time', 'night_max_node_minutes', 'queued_limit_node_minutes'] };

const WEEKDAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];

/** `Mon-Fri 09:00-18:00`, `Mon,Wed,Fri 08:30-17:00`, `Mon-Sun 09:00-18:00`: the days and the window; an error text if it is not that. */
export function parseDayWindow(text: string): { days: number[]; startMinute: number; endMinute: number } | string {
  const match = /^\s*([A-Za-z,-]+)\s+(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})\s*$/.exec(text);
  if (match === null) return `${JSON.stringify(text)} is not DAYS HH:MM-HH:MM`;
  const days = new Set<number>();
  for (const part of match[1]!.toLowerCase().split(',')) {
    const [from, to, extra] = part.split('-');
    const first = WEEKDAYS.indexOf(from ?? '');
    const last = to === undefined ? first : WEEKDAYS.indexOf(to);
    if (first < 0 || last < 0 || extra !== undefined) return `${JSON.stringify(part)} is not a weekday or a range of them (Mon, Tue, Wed, Thu, Fri, Sat, Sun)`;
    for (let day = first; ; day = (day + 1) % 7) {
      days.add(day);
      if (day === last) break;
    }
  }
  const [startHour, startMin, endHour, endMin] = [match[2], match[3], match[4], match[5]].map(Number) as [number, number, number, number];
  if (startHour > 23 || endHour > 24 || startMin > 59 || endMin > 59 || (endHour === 24 && endMin > 0)) return `${JSON.stringify(text)} has a time that is not HH:MM`;
  const startMinute = startHour * 60 + startMin;
  const endMinute = endHour * 60 + endMin;
  if (endMinute <= startMinute) return `${JSON.stringify(text)}: the day must end after it starts on the same date`;
  if (days.size === 7 && startMinute === 0 && endMinute === 24 * 60) return `${JSON.stringify(text)} leaves no night: night jobs could never run`;
  return { days: [...days].sort(), startMinute, endMinute };
}

/** The `[day_night]` table of cluster.toml (absent: no day and night queues). */
export function readDayNight(reader: TableReader): DayNightConfig | undefined {
  reader.rejectUnknownKeys(DAY_NIGHT_KEYS);
  const dayText = reader.string('day', { example: `"${DAY_NIGHT_DEFAULTS.day}"` }) ?? DAY_NIGHT_DEFAULTS.day;
  const window = parseDayWindow(dayText);
  if (typeof window === 'string') {
    reader.error('day', window, `write day = "${DAY_NIGHT_DEFAULTS.day}" (the rest of the week is night)`);
    return undefined;
  }
  return {
    days: window.days, dayStartMinute: window.startMinute, dayEndMinute: window.endMinute, dayText,
    dayMaxNodeMinutes: reader.integer('day_max_node_minutes', { example: '1920', min: 1 }) ?? DAY_NIGHT_DEFAULTS.dayMaxNodeMinutes,
    dayMaxTimeSeconds: reader.duration('day_max_time', { example: '"9h"', minutesIfBare: false, unlimited: false, min: 1 }) ?? DAY_NIGHT_DEFAULTS.dayMaxTimeSeconds,
    nightMaxNodeMinutes: reader.integer('night_max_node_minutes', { example: '15360', min: 0 }) ?? DAY_NIGHT_DEFAULTS.nightMaxNodeMinutes,
    queuedLimitNodeMinutes: reader.integer('queued_limit_node_minutes', { example: '30720', min: 0 }) ?? DAY_NIGHT_DEFAULTS.queuedLimitNodeMinutes,
  };
}

export type JobClass = 'day' | 'night';

/** A job's node-minutes: nodes x its time limit in whole minutes (rounded up). */
export const nodeMinutes = (nodes: number, limitSeconds: number): number => nodes * Math.ceil(limitSeconds / 60);

/** Day or night queue, or why the job fits neither. */
export function jobClass(config: DayNightConfig, nodes: number, limitSeconds: number): JobClass | string {
  const work = nodeMinutes(nodes, limitSeconds);
  if (work <= config.dayMaxNodeMinutes && limitSeconds <= config.dayMaxTimeSeconds) return 'day';
  if (config.nightMaxNodeMinutes > 0 && work > config.nightMaxNodeMinutes) {
    return `the job is ${work} node-minutes (${nodes} node${nodes === 1 ? '' : 's'} x ${Math.ceil(limitSeconds / 60)} min), more than the night queue's limit `
      + `of ${config.nightMaxNodeMinutes} (night_max_node_minutes): ask for fewer nodes or less time`;
  }
  const longest = longestNight(config);
  if (limitSeconds > longest) {
    return `the job is a night job (over ${config.dayMaxNodeMinutes} node-minutes or ${config.dayMaxTimeSeconds / 3600} h) and its time limit `
      + `(${Math.ceil(limitSeconds / 60)} min) is longer than the longest night (${Math.floor(longest / 60)} min; the day is ${config.dayText}): ask for less time`;
  }
  return 'night';
}

/** Local midnight of the date `days` after the date of `ms`. */
const midnight = (ms: number, days: number): number => {
  const date = new Date(ms);
  return new Date(date.getFullYear(), date.getMonth(), date.getDate() + days).getTime();
};

/** The day windows [start, end) from the date of `fromMs` on, for `count` dates. */
function dayWindows(config: DayNightConfig, fromMs: number, count: number): [number, number][] {
  const windows: [number, number][] = [];
  for (let offset = 0; offset < count; offset++) {
    const dateMs = midnight(fromMs, offset);
    if (!config.days.includes(new Date(dateMs).getDay())) continue;
    const date = new Date(dateMs);
    const at = (minute: number) => new Date(date.getFullYear(), date.getMonth(), date.getDate(), Math.floor(minute / 60), minute % 60).getTime();
    windows.push([at(config.dayStartMinute), at(config.dayEndMinute)]);
  }
  return windows;
}

/** Is `ms` in a day window (and not a holiday)? */
export function isDay(config: DayNightConfig, ms: number, holiday: boolean): boolean {
  return !holiday && dayWindows(config, ms, 1).some(([start, end]) => start <= ms && ms < end);
}

/** The night periods [start, end) from `fromMs` over `dates` dates: what the day windows leave (the first clipped to `fromMs`). */
export function nightPeriods(config: DayNightConfig, fromMs: number, dates = 15): [number, number][] {
  const horizon = midnight(fromMs, dates);
  const periods: [number, number][] = [];
  let from = fromMs;
  for (const [start, end] of dayWindows(config, fromMs, dates)) {
    if (end <= from) continue;
    if (start > from) periods.push([from, start]);
    from = Math.max(from, end);
  }
  if (horizon > from) periods.push([from, horizon]);
  return periods;
}

/** The longest night of a week, in seconds (a night period that reaches the two-week horizon counts as unbounded). */
function longestNight(config: DayNightConfig): number {
  const start = new Date(2026, 0, 4).getTime(); // a Sunday: any full week will do
  // The first and last periods are cut by the start and the horizon: every whole night lies between them.
  const periods = nightPeriods(config, start, 22).slice(1, -1);
  return Math.max(...periods.map(([from, to]) => (to - from) / 1000));
}

/**
 * Where a night job of `limitSeconds` may run, from `nowMs`: the first night
 * period (or the rest of the current one) at least that long, as [start, end)
 * in ms; every period is night on a holiday (no end). Null: none within two
 * weeks (not for a job `jobClass` accepted: every week has its longest night).
 */
export function nightWindow(config: DayNightConfig, nowMs: number, limitSeconds: number, holiday: boolean): { startMs: number; endMs: number } | null {
  if (holiday) return { startMs: nowMs, endMs: Infinity };
  const periods = nightPeriods(config, nowMs);
  const horizon = midnight(nowMs, 15);
  for (const [start, end] of periods) {
    if (end >= horizon) break; // cut by the horizon: not a whole night
    if ((end - start) / 1000 >= limitSeconds) return { startMs: start, endMs: end };
  }
  return null;
}
