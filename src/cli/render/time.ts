// Times as people read them in a terminal: local wall-clock times named by
// their day relative to now ("today 14:05", "tomorrow 09:30", "Tue 26 Nov
// 14:05") and distances ("in 2 h 10 min", "5 min ago"). The zone is a
// parameter so tests are deterministic; by default it is the process's zone.
// `taras queue` renders a hundred thousand times, so a `LocalClock` computes
// fields by arithmetic from a cached zone offset (Intl costs about 7 µs a call).

/** A moment: a Date or an ISO 8601 string (the API's form). */
export type Instant = Date | string;

const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'] as const;
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'] as const;
const MS_PER_DAY = 86_400_000;
/** Zone offsets change only at quarter-hour boundaries in practice, so one lookup serves each block. */
const OFFSET_BLOCK_MS = 15 * 60_000;

/** The digits at [from, from + count) of `text` as a number; NaN when one is not a digit. */
function digits(text: string, from: number, count: number): number {
  let value = 0;
  for (let i = from; i < from + count; i += 1) {
    const digit = text.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return NaN;
    value = value * 10 + digit;
  }
  return value;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** The API's own form, "2026-11-24T12:00:00Z" or with milliseconds, read by hand (Date.parse is 2-3 times slower). */
function parseApiTime(text: string): number {
  if (text.length !== 20 && text.length !== 24) return NaN;
  if (text[4] !== '-' || text[7] !== '-' || text[10] !== 'T' || text[13] !== ':' || text[16] !== ':' || text[text.length - 1] !== 'Z') return NaN;
  const month = digits(text, 5, 2);
  const day = digits(text, 8, 2);
  const hour = digits(text, 11, 2);
  const minute = digits(text, 14, 2);
  const second = digits(text, 17, 2);
  if (!(month >= 1 && month <= 12 && day >= 1 && day <= 31 && hour <= 23 && minute <= 59 && second <= 59)) return NaN;
  let millis = 0;
  if (text.length === 24) {
    if (text[19] !== '.') return NaN;
    millis = digits(text, 20, 3);
  }
  const year = digits(text, 0, 4);
  // Date.UTC would roll 31 Nov over into December: such a date is not valid.
  if (day > 28 && day > daysInMonth(year, month)) return NaN;
  return Date.UTC(year, month - 1, day, hour, minute, second, millis);
}

/** Milliseconds since the epoch; NaN for an unparsable string. */
export function toMillis(instant: Instant): number {
  if (instant instanceof Date) return instant.getTime();
  const fast = parseApiTime(instant);
  return Number.isNaN(fast) ? Date.parse(instant) : fast;
}

const formatters = new Map<string, Intl.DateTimeFormat>();
const offsetCache = new Map<string, Map<number, number>>();

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (formatter === undefined) {
    // Throws RangeError naming the zone when it is unknown.
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric',
    });
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

/** Offsets by quarter-hour block, per zone ('' is the process's zone). */
function offsetsOf(timeZone: string | undefined): Map<number, number> {
  const key = timeZone ?? '';
  let byBlock = offsetCache.get(key);
  if (byBlock === undefined) {
    byBlock = new Map();
    offsetCache.set(key, byBlock);
  }
  return byBlock;
}

/** Milliseconds to add to the start of a block to get the wall clock of `timeZone` (the process's zone when undefined). */
function blockOffsetMs(blockStart: number, timeZone: string | undefined): number {
  if (timeZone === undefined) return -new Date(blockStart).getTimezoneOffset() * 60_000;
  const field: Record<string, number> = {};
  for (const part of formatterFor(timeZone).formatToParts(blockStart)) field[part.type] = Number(part.value);
  return Date.UTC(field.year, field.month - 1, field.day, field.hour, field.minute, field.second) - blockStart;
}

const two = (n: number): string => (n < 10 ? `0${n}` : String(n));

/** "Tue 26 Nov" (and the year when asked) for a day number counted from 1970-01-01. */
function dayLabel(day: number, withYear: boolean): string {
  const date = new Date(day * MS_PER_DAY);
  const year = withYear ? ` ${date.getUTCFullYear()}` : '';
  return `${WEEKDAYS[date.getUTCDay()]} ${date.getUTCDate()} ${MONTHS[date.getUTCMonth()]}${year}`;
}

export interface TimeOptions {
  /** Show seconds ("today 14:05:07"), for event histories. */
  readonly seconds?: boolean;
}

/**
 * Renders many times against one "now" in one zone. Seconds are cut, as on a
 * clock; an unparsable time is shown as given.
 */
export class LocalClock {
  readonly nowMillis: number;
  private readonly today: number;
  private readonly yearOfNow: number;
  private readonly labels = new Map<number, string>();
  private readonly offsets: Map<number, number>;

  constructor(now: Instant, readonly timeZone?: string) {
    this.offsets = offsetsOf(timeZone);
    this.nowMillis = toMillis(now);
    this.today = this.dayOf(this.nowMillis);
    this.yearOfNow = new Date(this.today * MS_PER_DAY).getUTCFullYear();
  }

  /** The instant shifted to the zone's wall clock (read it as if it were UTC). */
  private shifted(millis: number): number {
    const block = Math.floor(millis / OFFSET_BLOCK_MS);
    let offset = this.offsets.get(block);
    if (offset === undefined) {
      offset = blockOffsetMs(block * OFFSET_BLOCK_MS, this.timeZone);
      this.offsets.set(block, offset);
    }
    return millis + offset;
  }

  private dayOf(millis: number): number {
    return Math.floor(this.shifted(millis) / MS_PER_DAY);
  }

  private clock(shifted: number, seconds: boolean): string {
    const totalSeconds = Math.floor((shifted - Math.floor(shifted / MS_PER_DAY) * MS_PER_DAY) / 1000);
    const minutes = `${two(Math.floor(totalSeconds / 3600))}:${two(Math.floor(totalSeconds / 60) % 60)}`;
    return seconds ? `${minutes}:${two(totalSeconds % 60)}` : minutes;
  }

  private label(day: number): string {
    let label = this.labels.get(day);
    if (label === undefined) {
      label = dayLabel(day, new Date(day * MS_PER_DAY).getUTCFullYear() !== this.yearOfNow);
      this.labels.set(day, label);
    }
    return label;
  }

  /** "today 14:05", "tomorrow 09:30", "yesterday 18:20", else "Tue 26 Nov 14:05" (with the year when not now's). */
  at(instant: Instant | number, options: TimeOptions = {}): string {
    const millis = typeof instant === 'number' ? instant : toMillis(instant);
    if (Number.isNaN(millis)) return String(instant);
    const shifted = this.shifted(millis);
    const day = Math.floor(shifted / MS_PER_DAY);
    const time = this.clock(shifted, options.seconds === true);
    const difference = day - this.today;
    if (difference === 0) return `today ${time}`;
    if (difference === 1) return `tomorrow ${time}`;
    if (difference === -1) return `yesterday ${time}`;
    return `${this.label(day)} ${time}`;
  }

  /** An end next to its start: only the clock ("16:05") when both fall on the same local day, else `at`. */
  end(end: Instant | number, start: Instant | number | null): string {
    const endMillis = typeof end === 'number' ? end : toMillis(end);
    const startMillis = start === null ? NaN : typeof start === 'number' ? start : toMillis(start);
    if (!Number.isNaN(endMillis) && !Number.isNaN(startMillis)) {
      if (this.dayOf(endMillis) === this.dayOf(startMillis)) return this.clock(this.shifted(endMillis), false);
    }
    return this.at(end);
  }

  /** `at` with the distance from now: "today 14:05 (in 2 h 5 min)". */
  withHint(instant: Instant): string {
    const hint = relative(instant, new Date(this.nowMillis));
    return hint === '' ? this.at(instant) : `${this.at(instant)} (${hint})`;
  }

  /** The full date and time, for headers: "Tue 24 Nov 2026 12:00". */
  full(instant: Instant): string {
    const millis = toMillis(instant);
    if (Number.isNaN(millis)) return String(instant);
    const shifted = this.shifted(millis);
    return `${dayLabel(Math.floor(shifted / MS_PER_DAY), true)} ${this.clock(shifted, false)}`;
  }
}

/** One time against now: see `LocalClock.at`. */
export function localTime(iso: Instant, now: Instant, timeZone?: string, options: TimeOptions = {}): string {
  return new LocalClock(now, timeZone).at(iso, options);
}

/** The full local date and time: "Tue 24 Nov 2026 12:00". */
export function fullTime(iso: Instant, timeZone?: string): string {
  return new LocalClock(iso, timeZone).full(iso);
}

/** A span in its two largest units: "45 s", "25 min", "2 h 10 min", "3 d 4 h". */
export function span(seconds: number): string {
  const abs = Math.abs(seconds);
  if (abs < 59.5) return `${Math.round(abs)} s`;
  const minutes = Math.round(abs / 60);
  if (minutes < 60) return `${minutes} min`;
  if (minutes < 24 * 60) {
    const rest = minutes % 60;
    return rest === 0 ? `${Math.floor(minutes / 60)} h` : `${Math.floor(minutes / 60)} h ${rest} min`;
  }
  const days = Math.floor(minutes / (24 * 60));
  const hours = Math.floor((minutes % (24 * 60)) / 60);
  return hours === 0 ? `${days} d` : `${days} d ${hours} h`;
}

/** How far an instant is from now: "in 2 h 10 min", "5 min ago", "now"; "" when unparsable. */
export function relative(iso: Instant, now: Instant): string {
  const seconds = (toMillis(iso) - toMillis(now)) / 1000;
  if (Number.isNaN(seconds)) return '';
  if (Math.abs(seconds) < 1) return 'now';
  return seconds > 0 ? `in ${span(seconds)}` : `${span(seconds)} ago`;
}
