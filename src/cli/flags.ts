// Flag parsing shared by the commands: a bad value gives one line naming the
// flag, the value and what is expected, and exit code 2 (never a stack trace).

export const USAGE_EXIT_CODE = 2;

export type FlagResult<T> = { ok: true; value: T } | { ok: false; message: string };

export function badFlag(flag: string, raw: string | number, expected: string): FlagResult<never> {
  return { ok: false, message: `error: option '${flag}' got '${raw}': expected ${expected}` };
}

export function parseIntegerFlag(
  flag: string,
  raw: string | number,
  min: number,
  max: number,
  expected: string,
): FlagResult<number> {
  const text = String(raw).trim();
  const value = /^\+?\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) return badFlag(flag, raw, expected);
  return { ok: true, value };
}

/** `--immediate[=S]` (sbatch, srun, salloc): seconds a job may take to start, 0 without a value. */
export function parseImmediateFlag(raw: string | boolean): FlagResult<number> {
  return raw === true ? { ok: true, value: 0 } : parseIntegerFlag('--immediate', String(raw), 0, 86_400, 'a number of seconds from 0 to 86400');
}

/** Ends the command with one line on stderr and an exit code (2: bad input). */
export function fail(message: string, exitCode = USAGE_EXIT_CODE): never {
  process.stderr.write(message.endsWith('\n') ? message : `${message}\n`);
  process.exit(exitCode);
}
