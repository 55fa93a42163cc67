// A configuration error as a value: which file, which line, which key, what is
// wrong and how to fix it. The controller prints these and keeps running on
// the configuration it had.

export interface ConfigError {
  readonly file: string;
  /** 1-based; 0 when the problem is the whole file (it cannot be read). */
  readonly line: number;
  /** Key path such as `partitions[1].max_time` (array indices from 0); '' when no key is at fault. */
  readonly key: string;
  readonly message: string;
  readonly fix: string;
}

/** One line: `cluster.toml:14: partitions[1].max_time: "3x" is not a duration ... (fix: write ...)`. */
export function formatConfigError(error: ConfigError): string {
  const place = error.line > 0 ? `${error.file}:${error.line}` : error.file;
  const key = error.key === '' ? '' : ` ${error.key}:`;
  return `${place}:${key} ${error.message} (fix: ${error.fix})`;
}

/**
 * Collects errors with their lines; sorted by line for the report. Apart: settings an older version took
 * that this one cannot honour (`ignore`), which a start goes on without and a reconfigure refuses.
 */
export class ErrorList {
  private readonly errors: ConfigError[] = [];
  private readonly ignored: ConfigError[] = [];

  constructor(private readonly file: string, private readonly lineOf: (key: string) => number) {}

  add(key: string, message: string, fix: string, line = this.lineOf(key)): void {
    this.errors.push({ file: this.file, line, key, message, fix });
  }

  ignore(key: string, message: string, fix: string, line = this.lineOf(key)): void {
    this.ignored.push({ file: this.file, line, key, message, fix });
  }

  get size(): number {
    return this.errors.length;
  }

  sorted(): ConfigError[] {
    return [...this.errors].sort((a, b) => a.line - b.line);
  }

  ignoredSorted(): ConfigError[] {
    return [...this.ignored].sort((a, b) => a.line - b.line);
  }
}
