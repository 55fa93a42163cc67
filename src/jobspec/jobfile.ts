// job.toml, the job description file of seed 000 (3.1.1): the same items as the
// flags under snake_case keys (`job_name`, `cpus_per_task`, `time`, `mem`), plus
// `script` and `arguments`. Values take sbatch's forms as strings; counts, `mem`
// (MiB) and `time` (minutes) may also be TOML integers. Errors name file:line and key.

import { parse as parseTomlText, TomlError } from 'smol-toml';
import { closestWord } from '../config/suggest.js';
import { LayerBuilder } from './layer.js';
import { JOB_OPTIONS, SCRIPT_KEYS, type JobOption } from './options.js';
import type { Parsed, SpecLayer } from './types.js';

/** Parses TOML text to a plain object; throws on syntax errors (smol-toml's TomlError carries line and column). */
export type TomlParser = (text: string) => Record<string, unknown>;

const INTEGER_KEYS = new Set(['nodes', 'ntasks', 'cpusPerTask', 'memoryMiB', 'timeLimitSeconds', 'ntasksPerNode', 'memPerCpuMiB', 'nice']);
const ALL_KEYS = [...new Set(JOB_OPTIONS.map((o) => o.tomlKey)), SCRIPT_KEYS.script, SCRIPT_KEYS.scriptArgs];

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The line of a top-level key or [table] header (job.toml is flat, so the first match is it). */
function lineOf(text: string, key: string): number | undefined {
  const name = escapeRegExp(key);
  const pattern = new RegExp(`^\\s*(?:\\[\\s*)?(?:${name}|"${name}"|'${name}')\\s*[=.\\]]`);
  const index = text.split('\n').findIndex((line) => pattern.test(line));
  return index < 0 ? undefined : index + 1;
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  if (value !== null && typeof value === 'object') return 'a table';
  return `${typeof value} ${JSON.stringify(value)}`;
}

/** The TOML value as the text an sbatch option would take, or what is wrong with it. */
function optionText(option: JobOption, value: unknown): { text?: string; problem?: string } {
  if (typeof value === 'string') return { text: value };
  if (typeof value === 'number' && INTEGER_KEYS.has(option.key)) {
    return Number.isInteger(value) ? { text: String(value) } : { problem: `expected a whole number, got ${value}` };
  }
  if (option.key === 'export' && Array.isArray(value) && value.every((item) => typeof item === 'string')) {
    return { text: value.join(',') };
  }
  const wanted = INTEGER_KEYS.has(option.key) ? 'a whole number or a string' : option.key === 'export' ? 'a string or a list of strings' : 'a string';
  return { problem: `expected ${wanted} (${option.valueName ?? 'text'}), got ${describe(value)}` };
}

/**
 * Reads a job description file. `file` names it in messages; `parseToml` is
 * smol-toml's parser unless a test injects another.
 */
export function parseJobFile(tomlText: string, file: string, parseToml: TomlParser = parseTomlText): Parsed<SpecLayer> {
  const builder = new LayerBuilder('file');
  let document: Record<string, unknown>;
  try {
    document = parseToml(tomlText);
  } catch (error) {
    if (!(error instanceof Error)) throw error;
    const firstLine = error.message.split('\n')[0].replace(/^Invalid TOML document: /, '');
    const line = error instanceof TomlError ? error.line : undefined;
    builder.error({ file, line }, `not valid TOML: ${firstLine}`);
    return builder.result();
  }
  return parseJobObject(document, file, (key) => lineOf(tomlText, key), builder);
}

/**
 * The items of one job description already read into an object (a job.toml,
 * or one JSON line of `taras submit --many`): the same keys and value forms;
 * `lineOf` says where each key is written.
 */
export function parseJobObject(
  document: Record<string, unknown>, file: string, lineOf: (key: string) => number | undefined, builder = new LayerBuilder('file'),
): Parsed<SpecLayer> {
  for (const [key, value] of Object.entries(document)) {
    const where = { file, line: lineOf(key), option: key };
    const origin = { source: 'file' as const, ...where };
    if (key === SCRIPT_KEYS.script) {
      if (typeof value === 'string' && value.trim() !== '') builder.set('script', value.trim(), origin);
      else builder.error(where, `expected the script's path as a string, got ${describe(value)}`);
      continue;
    }
    if (key === SCRIPT_KEYS.scriptArgs) {
      if (Array.isArray(value) && value.every((item) => typeof item === 'string')) builder.set('scriptArgs', value, origin);
      else builder.error(where, `expected a list of strings, e.g. arguments = ["-v", "input.dat"], got ${describe(value)}`);
      continue;
    }
    if (key === 'requeue') {
      if (typeof value === 'boolean') builder.set('requeue', value, origin);
      else builder.error(where, `expected true or false, got ${describe(value)}`);
      continue;
    }
    const option = JOB_OPTIONS.find((o) => o.tomlKey === key);
    if (option === undefined) {
      const suggestion = closestWord(key, ALL_KEYS, { acceptPrefix: true }); // ignores case and - versus _
      const table = value !== null && typeof value === 'object' && !Array.isArray(value);
      const hint = table ? '; job.toml is flat: no [tables] or dotted keys' : suggestion === undefined ? '' : `; did you mean ${suggestion}?`;
      builder.error(where, `unknown key${hint}`);
      continue;
    }
    if (option.switchValue !== undefined) {
      // parsable = true: the switch; false: as if left out.
      if (typeof value !== 'boolean') builder.error(where, `expected true or false, got ${describe(value)}`);
      else if (value) builder.apply(option, undefined, origin);
      continue;
    }
    const { text, problem } = optionText(option, value);
    if (text === undefined) builder.error(where, problem ?? 'bad value');
    else builder.apply(option, text, origin);
  }
  return builder.result();
}
