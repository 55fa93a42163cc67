// Durations as Slurm writes them in sacct columns and in mail subjects.

/** `HH:MM:SS`, or `D-HH:MM:SS` from one day on (sacct's Elapsed and Timelimit, the mail subjects' times). */
export function clockDuration(seconds: number): string {
  const whole = Math.max(0, Math.floor(seconds));
  const days = Math.floor(whole / 86_400);
  const two = (n: number) => String(n).padStart(2, '0');
  const clock = `${two(Math.floor((whole % 86_400) / 3600))}:${two(Math.floor((whole % 3600) / 60))}:${two(whole % 60)}`;
  return days > 0 ? `${days}-${clock}` : clock;
}

/** The latest time a Date holds (epoch ms): past it, toISOString throws. */
export const LAST_DATE_MS = 8.64e15;

/**
 * A time as ISO 8601 (UTC), never throwing: a time past what a Date holds
 * (which a request can no longer name, but a job stored before the bound may
 * carry) is written as its number of milliseconds.
 */
export function isoTime(ms: number): string {
  return Number.isFinite(ms) && Math.abs(ms) <= LAST_DATE_MS ? new Date(ms).toISOString() : `${ms} ms after the epoch`;
}

/** isoTime for the API's time fields: null for none, and for a time no Date holds (an answer never fails for one job). */
export function isoOrNull(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined || !Number.isFinite(ms) || Math.abs(ms) > LAST_DATE_MS ? null : new Date(ms).toISOString();
}
