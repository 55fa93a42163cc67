// Output and error file name patterns as sbatch writes them: %j job id,
// %u user, %x job name, %A array id and %a task id (for a job that is not
// in an array, %A is its id and %a is 4294967294, as sbatch writes them), %% a literal %, an optional zero-padding width
// (%4j -> 0042), and a pattern with a backslash taken literally (backslashes
// removed, nothing replaced). Checked when parsed, expanded by the shell that
// starts the job.

export interface PatternValues {
  readonly jobId: number | string;
  readonly user: string;
  readonly name: string;
  /** A task of a job array: the array's id (%A) and the task id (%a). */
  readonly array?: { readonly jobId: number; readonly taskId: number };
}

/** What sbatch writes for %a of a job that is not in an array (NO_VAL). */
const NO_TASK = 4294967294;

const SPECIFIER = /%(\d*)(.?)/g;
const SUPPORTED = 'j (job id), u (user), x (job name), A (array id), a (array task id) and %% (a literal %)';

/** The longest path a pattern may expand to (Linux's PATH_MAX). */
export const MAX_EXPANDED_PATH = 4096;
/** The most each specifier can add: a job name (1,024 characters at most), a user name (32), an id or task id (20 digits). */
const LONGEST: Readonly<Record<string, number>> = { x: 1024, u: 32, j: 20, A: 20, a: 20, '%': 1 };

/**
 * Undefined when the pattern is usable; otherwise what is wrong. Its longest expansion must fit a path:
 * "%x" 2,048 times in 4,096 characters made a string of 2 MiB for every view of the job (red team).
 */
export function checkPattern(pattern: string): string | undefined {
  if (pattern.trim() === '') return 'expected a file name pattern, e.g. taras-%j.out';
  if (pattern.includes('\\')) return undefined;
  let longest = pattern.length;
  for (const match of pattern.matchAll(SPECIFIER)) {
    const letter = match[2];
    if (letter === '') return `'${pattern}' ends in a lone %: write %% for a literal %`;
    if (!'juxAa%'.includes(letter)) return `'%${match[1]}${letter}' in '${pattern}' is not supported: Taras expands %${SUPPORTED}`;
    longest += LONGEST[letter] - match[0].length;
  }
  if (longest > MAX_EXPANDED_PATH) {
    return `'${pattern.length > 60 ? `${pattern.slice(0, 60)}...` : pattern}' could expand to ${longest} characters, more than a path may have (${MAX_EXPANDED_PATH}): use fewer %x and %u`;
  }
  return undefined;
}

/**
 * The most digits a width pads a number to: wider ones are taken as this, as
 * Slurm's file name patterns do (a pattern %999999999j made a string of a
 * gigabyte for every listing of the job).
 */
export const MAX_PATTERN_WIDTH = 10;
const padded = (value: number | string, width: string): string => String(value).padStart(width === '' ? 0 : Math.min(Number(width), MAX_PATTERN_WIDTH), '0');

/** Replaces %j, %u, %x, %A, %a and %% in a pattern that checkPattern accepted. */
export function expandPattern(pattern: string, values: PatternValues): string {
  if (pattern.includes('\\')) return pattern.replaceAll('\\', '');
  // One stored before patterns were bounded is left as written rather than grown (checkPattern's bound).
  if (checkPattern(pattern) !== undefined) return pattern;
  return pattern.replace(SPECIFIER, (whole, width: string, letter: string) => {
    switch (letter) {
      case 'j':
        return padded(values.jobId, width);
      case 'A':
        return padded(values.array?.jobId ?? values.jobId, width);
      case 'a':
        return padded(values.array?.taskId ?? NO_TASK, width);
      case 'u':
        return values.user;
      case 'x':
        return values.name;
      case '%':
        return '%';
      default:
        return whole;
    }
  });
}
