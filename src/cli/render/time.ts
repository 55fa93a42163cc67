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

/** Milliseconds since the epoch; NaN for an unparsable string. */
export function toMillis(instant: Instant): number {
  return instant instanceof Date ? instant.getTime() : Date.parse(instant);
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

/** Offsets by quarter-hour block, per zone ('' is the process's zone, read once per block: TZ is not expected to change at run time). */
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
  private readonly minuteLabels = new Map<number, string>();
  private readonly minuteClocks = new Map<number, string>();
  private readonly offsets: Map<number, number>;

  constructor(now: Instant, readonly timeZone?: string) {
    this.offsets = offsetsOf(timeZone);
    this.nowMillis = toMillis(now);
    if (Number.isNaN(this.nowMillis)) throw new RangeError(`LocalClock: now "${String(now)}" is not a time (expected an ISO 8601 string)`);
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
    if (options.seconds === true) return this.atUncached(millis, true);
    // A long queue shows the same minutes over and over: each is formatted once.
    const minute = Math.floor(millis / 60_000);
    let text = this.minuteLabels.get(minute);
    if (text === undefined) {
      text = this.atUncached(millis, false);
      this.minuteLabels.set(minute, text);
    }
    return text;
  }

  private atUncached(millis: number, seconds: boolean): string {
    const shifted = this.shifted(millis);
    const day = Math.floor(shifted / MS_PER_DAY);
    const time = this.clock(shifted, seconds);
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
      if (this.dayOf(endMillis) === this.dayOf(startMillis)) {
        const minute = Math.floor(endMillis / 60_000);
        let text = this.minuteClocks.get(minute);
        if (text === undefined) {
          text = this.clock(this.shifted(endMillis), false);
          this.minuteClocks.set(minute, text);
        }
        return text;
      }
    }
    return this.at(end);
  }

  /** `at` with the distance from now: "today 14:05 (in 2 h 5 min)". */
  withHint(instant: Instant): string {
    const hint = relative(instant, new Date(this.nowMillis));
    return hint === '' ? this.at(instant) : `${this.at(instant)} (${hint})`;
  }

  /** The zone's wall clock at an instant, as epoch milliseconds read as if UTC: for stepping by local hours and days. */
  wallClock(millis: number): number {
    return this.shifted(millis);
  }

  /** The instant at which the zone's wall clock reads `wall` (the inverse of `wallClock`, up to a clock change). */
  fromWallClock(wall: number): number {
    const guess = wall - (this.shifted(wall) - wall);
    return wall - (this.shifted(guess) - guess);
  }

  /** A label of a time axis: "14:00", or with the weekday "Mon 14:00". */
  tick(millis: number, withDay: boolean): string {
    const shifted = this.shifted(millis);
    const time = this.clock(shifted, false);
    return withDay ? `${WEEKDAYS[new Date(shifted).getUTCDay()]} ${time}` : time;
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
