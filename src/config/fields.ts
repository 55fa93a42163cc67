// Typed reading of one TOML table: each accessor checks a key's type and form,
// records an error (key path, what was found, the fix) when it is wrong, and
// returns undefined then, so one pass reports every problem in the file.

import type { ErrorList } from './errors.js';
import { didYouMean } from './suggest.js';
import { DURATION_FORMS, hasExplicitUnit, MEMORY_FORMS, parseDuration, parseMemoryMiB } from './units.js';

export type Table = Readonly<Record<string, unknown>>;

/** Cluster, partition and feature names. */
export const NAME_PATTERN = /^[A-Za-z0-9_.-]+$/;
export const NAME_HINT = 'use letters, digits, ".", "_" and "-"';

export function isTable(value: unknown): value is Table {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);
}

/** What a TOML value is, for "expected X, got Y" messages. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return `the string ${JSON.stringify(value)}`;
  if (typeof value === 'number') return Number.isInteger(value) ? `the integer ${value}` : `the number ${value}`;
  if (typeof value === 'boolean') return `${value}`;
  if (Array.isArray(value)) return 'an array';
  if (value instanceof Date) return 'a date-time';
  return 'a table';
}

export interface KeyRules {
  /** Every key the table may hold. */
  readonly known: readonly string[];
  /** Names from elsewhere (Slurm's slurm.conf) mapped to ours, for suggestions. */
  readonly aliases?: Readonly<Record<string, string>>;
}

export class TableReader {
  constructor(
    /** Key path of the table: '' for the document, `cluster`, `nodes[0]`. */
    readonly path: string,
    private readonly table: Table,
    private readonly errors: ErrorList,
  ) {}

  keyPath(key: string): string {
    return this.path === '' ? key : `${this.path}.${key}`;
  }

  has(key: string): boolean {
    return this.table[key] !== undefined;
  }

  /** The value as parsed, for keys that accept several forms. */
  raw(key: string): unknown {
    return this.table[key];
  }

  /** Reports every key that is not in `rules.known`, with the likely intended one. */
  rejectUnknownKeys(rules: KeyRules): void {
    for (const key of Object.keys(this.table)) {
      if (rules.known.includes(key)) continue;
      const lower = key.toLowerCase();
      const alias = rules.aliases !== undefined && Object.hasOwn(rules.aliases, lower) ? rules.aliases[lower] : undefined;
      const hint = alias !== undefined ? ` (did you mean "${alias}"?)` : didYouMean(key, rules.known);
      const where = this.path === '' ? 'at the top level' : `in ${this.tableLabel()}`;
      this.error(key, `unknown key "${key}" ${where}${hint}`, `use one of: ${rules.known.join(', ')}`);
    }
  }

  error(key: string, message: string, fix: string): void {
    this.errors.add(this.keyPath(key), message, fix);
  }

  /** A value an older version took that this one cannot honour: read as if absent (ErrorList.ignore). */
  ignore(key: string, message: string, fix: string): void {
    this.errors.ignore(this.keyPath(key), message, fix);
  }

  /** A value that must be present; reports it missing otherwise. */
  private required(key: string, example: string): unknown {
    const value = this.table[key];
    if (value === undefined) this.error(key, `${this.tableLabel()} has no "${key}"`, `add ${key} = ${example}`);
    return value;
  }

  private value(key: string, example: string | undefined): unknown {
    return example === undefined ? this.table[key] : this.required(key, example);
  }

  private wrongType(key: string, value: unknown, expected: string, example: string): undefined {
    this.error(key, `expected ${expected}, got ${describeValue(value)}`, `write ${key} = ${example}`);
    return undefined;
  }

  /** How messages name this table (the key path beside them gives the index). */
  private tableLabel(): string {
    if (this.path === '') return 'the file';
    const indexed = /^(.*)\[\d+\]$/.exec(this.path);
    return indexed ? `this [[${indexed[1]}]] table` : `[${this.path}]`;
  }

  /** A string; `required` gives the example shown when it is missing. */
  string(key: string, options: { example: string; required?: boolean; pattern?: RegExp; patternHint?: string }): string | undefined {
    const value = this.value(key, options.required ? options.example : undefined);
    if (value === undefined) return undefined;
    if (typeof value !== 'string') return this.wrongType(key, value, 'a string', options.example);
    if (options.pattern && !options.pattern.test(value)) {
      this.error(key, `${JSON.stringify(value)} is not allowed here: ${options.patternHint ?? 'bad characters'}`, `write ${key} = ${options.example}`);
      return undefined;
    }
    return value;
  }

  /** One of a fixed set of words. */
  choice<T extends string>(key: string, choices: readonly T[]): T | undefined {
    const example = JSON.stringify(choices[0]);
    const value = this.string(key, { example });
    if (value === undefined) return undefined;
    if (!(choices as readonly string[]).includes(value)) {
      this.error(key, `unknown ${key} "${value}"${didYouMean(value, choices)}`, `use one of: ${choices.join(', ')}`);
      return undefined;
    }
    return value as T;
  }

  integer(key: string, options: { example: string; min: number; max?: number; required?: boolean }): number | undefined {
    const value = this.value(key, options.required ? options.example : undefined);
    if (value === undefined) return undefined;
    if (typeof value !== 'number' || !Number.isInteger(value)) return this.wrongType(key, value, 'a whole number', options.example);
    const max = options.max ?? Number.MAX_SAFE_INTEGER;
    if (value < options.min || value > max) {
      const range = options.max === undefined ? `at least ${options.min}` : `between ${options.min} and ${max}`;
      this.error(key, `${value} is out of range: must be ${range}`, `write ${key} = ${options.example}`);
      return undefined;
    }
    return value;
  }

  boolean(key: string): boolean | undefined {
    const value = this.table[key];
    if (value === undefined) return undefined;
    if (typeof value !== 'boolean') return this.wrongType(key, value, 'true or false', 'true');
    return value;
  }

  /**
   * Seconds, or null for no limit when `unlimited` allows it. With
   * `minutesIfBare` a bare number (TOML integer or "30") is minutes as in
   * sbatch; otherwise it is refused as ambiguous and a unit is asked for.
   */
  duration(
    key: string,
    options: { example: string; minutesIfBare: boolean; unlimited: boolean; min: number },
  ): number | null | undefined {
    const value = this.table[key];
    if (value === undefined) return undefined;
    let text: string;
    if (typeof value === 'string') text = value;
    else if (typeof value === 'number' && Number.isInteger(value) && value >= 0) text = String(value);
    else return this.wrongType(key, value, 'a duration', options.example);
    if (!options.minutesIfBare && !hasExplicitUnit(text)) {
      this.error(key, `${JSON.stringify(value)} has no unit`, `say which unit: ${key} = "${text}s" or "${text}m"`);
      return undefined;
    }
    const parsed = parseDuration(text);
    if (!parsed.ok) {
      this.error(key, parsed.message, `write ${key} = ${options.example} (forms: ${DURATION_FORMS})`);
      return undefined;
    }
    if (parsed.value === null) {
      if (options.unlimited) return null;
      this.error(key, `${JSON.stringify(value)} means no limit, which ${key} cannot be`, `write ${key} = ${options.example}`);
      return undefined;
    }
    if (parsed.value < options.min) {
      this.error(key, `${JSON.stringify(value)} is too short: must be at least ${options.min} s`, `write ${key} = ${options.example}`);
      return undefined;
    }
    return parsed.value;
  }

  /** MiB from "16G"-style text or a whole number of MiB. */
  memoryMiB(key: string, options: { example: string; required?: boolean }): number | undefined {
    const value = this.value(key, options.required ? options.example : undefined);
    if (value === undefined) return undefined;
    if (typeof value !== 'string' && !(typeof value === 'number' && Number.isInteger(value) && value >= 0)) {
      return this.wrongType(key, value, 'a memory size', options.example);
    }
    const parsed = parseMemoryMiB(String(value));
    if (!parsed.ok) {
      this.error(key, parsed.message, `write ${key} = ${options.example} (forms: ${MEMORY_FORMS})`);
      return undefined;
    }
    if (parsed.value < 1) {
      this.error(key, `${JSON.stringify(value)} is no memory at all`, `write ${key} = ${options.example}`);
      return undefined;
    }
    return parsed.value;
  }

  /** An array of strings matching `pattern`, duplicates dropped, order kept. */
  stringArray(key: string, options: { example: string; pattern: RegExp; patternHint: string }): string[] | undefined {
    const value = this.table[key];
    if (value === undefined) return undefined;
    if (!Array.isArray(value)) {
      return this.wrongType(key, value, 'an array of strings', options.example);
    }
    const bad = value.find((item) => typeof item !== 'string' || !options.pattern.test(item));
    if (bad !== undefined) {
      const what = typeof bad === 'string' ? `${JSON.stringify(bad)} is not allowed: ${options.patternHint}` : `expected strings, got ${describeValue(bad)}`;
      this.error(key, what, `write ${key} = ${options.example}`);
      return undefined;
    }
    return [...new Set(value as string[])];
  }

  /** A sub-table such as [cluster]; {} when absent. */
  subTable(key: string): Table | undefined {
    const value = this.table[key];
    if (value === undefined) return {};
    if (isTable(value)) return value;
    this.error(key, `expected a [${key}] table, got ${describeValue(value)}`, `replace it with a [${key}] section`);
    return undefined;
  }

  /** An array of tables such as [[nodes]]; [] when absent. */
  arrayOfTables(key: string): Table[] | undefined {
    const value = this.table[key];
    if (value === undefined) return [];
    if (isTable(value)) {
      this.error(key, `[${key}] is a single table, but there may be several`, `write [[${key}]] (double brackets) for each entry`);
      return undefined;
    }
    if (!Array.isArray(value) || !value.every(isTable)) {
      this.error(key, `expected [[${key}]] tables, got ${describeValue(value)}`, `write each entry as a [[${key}]] section`);
      return undefined;
    }
    return value as Table[];
  }
}
