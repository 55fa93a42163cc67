// `taras submit --many FILE` (or `-`: standard input): many jobs in one call,
// one JSON object per line with job.toml's keys (`script`, `arguments`,
// `time`, `nodes`, `job_name`, ...). Each line is read like a job.toml, then
// its script's #TARAS lines, then the command's flags, which apply to every
// job. As for one `taras submit`, a line without a time limit takes its
// partition's default_time; --begin and --deadline count from one submission
// time for the whole file. Every line is checked before anything is sent: one bad line refuses the
// whole file, naming file:line; so does a line the controller would refuse
// (each shape of job is checked through sbatch --test-only's route first).
// The jobs then go over one connection, eight requests in flight, each with
// its own idempotency key (a retry after a lost answer never submits twice),
// in line order of their ids. A refusal midway (a per-user cap) stops the
// sending and names the ids already submitted.

import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { ApiSubmitted } from '../api/types.js';
import { ApiRequestError, type ApiClient } from '../net/client.js';
import { withClient, withRetries } from './controller-client.js';
import { fail } from './flags.js';
import { readScript, type ScriptRead } from './script-file.js';
import { formatTaskIds } from '../jobspec/array.js';

/** Requests in flight at once: enough to keep the controller's group commit full, few enough to be polite. */
const IN_FLIGHT = 8;
/** The most jobs one call takes (the controller's per-user cap is the real limit). */
const MAX_JOBS = 100_000;

export interface ManyOptions {
  /** The command's own job flags (as given), applied to every job. */
  readonly given: Record<string, string | boolean | undefined>;
  readonly controller: string | undefined;
  readonly json: boolean;
  readonly immediateSeconds: number | undefined;
}

/** Reads, checks and submits every job of `source`; prints their ids. Exits 2 on any bad line, nothing sent. */
export async function submitMany(source: string, options: ManyOptions): Promise<void> {
  const [types, directivesModule, flagsModule, mergeModule, jobfile, schema] = await Promise.all([
    import('../jobspec/types.js'), import('../jobspec/directives.js'), import('../jobspec/flags.js'), import('../jobspec/merge.js'),
    import('../jobspec/jobfile.js'), import('../api/schema.js'),
  ]);
  const name = source === '-' ? 'standard input' : source;
  let text: string;
  try {
    text = readFileSync(source === '-' ? 0 : source, 'utf8');
  } catch (error) {
    fail(`error: --many ${name}: cannot read it (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}): give a file of JSON lines, or - for standard input`);
  }
  const flagLayer = flagsModule.parseFlagValues(options.given);
  if (!flagLayer.ok) fail(flagLayer.errors.map((e) => `error: ${types.formatError(e)}`).join('\n'));
  const scripts = new Map<string, ScriptRead>();
  const scriptOf = (path: string): ScriptRead => {
    if (!scripts.has(path)) scripts.set(path, readScript(path, `the script ${path}`));
    return scripts.get(path)!;
  };
  const errors: string[] = [];
  const bodies: { line: number; body: unknown }[] = [];
  const submitEnv = { ...process.env } as Record<string, string>;
  const submitDir = process.cwd();
  // One submission time for the whole file: --begin and --deadline of every line (now+1hour, 18:00) count from it.
  const nowMs = Date.now();
  const base = `${Date.now().toString(36)}-${process.pid.toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  const lines = text.split('\n');
  for (let index = 0; index < lines.length && errors.length < 20; index++) {
    const raw = lines[index].trim();
    const line = index + 1;
    const at = `${name}:${line}`;
    if (raw === '' || raw.startsWith('#')) continue;
    let document: unknown;
    try {
      document = JSON.parse(raw);
    } catch (error) {
      errors.push(`${at}: not JSON (${(error as Error).message}): write one job a line as an object, e.g. {"script": "run.sh", "time": 10}`);
      continue;
    }
    if (typeof document !== 'object' || document === null || Array.isArray(document)) {
      errors.push(`${at}: expected an object of job.toml's keys, e.g. {"script": "run.sh", "arguments": ["1"], "time": 10}`);
      continue;
    }
    const layer = jobfile.parseJobObject(document as Record<string, unknown>, name, () => line);
    if (!layer.ok) {
      errors.push(...layer.errors.map(types.formatError));
      continue;
    }
    const script = layer.value.values.script;
    if (script === undefined) {
      errors.push(`${at}: no "script": every line names its batch script`);
      continue;
    }
    const read = scriptOf(script);
    if (!read.ok) {
      errors.push(`${at}: ${read.message}`);
      continue;
    }
    const scriptText = read.text;
    const directives = directivesModule.parseDirectives(scriptText, script);
    if (!directives.ok) {
      errors.push(...directives.errors.map(types.formatError));
      continue;
    }
    const built = mergeModule.buildJobSpec(mergeModule.mergeJobSpec(layer.value, directives.value, flagLayer.value), { scriptText, submitDir, nowMs, timeFromPartition: true });
    if (!built.ok) {
      errors.push(...built.errors.map((e) => `${at}: ${types.formatError(e)}`));
      continue;
    }
    const spec = {
      ...built.value.spec, umask: process.umask(), submitEnv, submitDir, submitHost: hostname(),
      ...(options.immediateSeconds === undefined ? {} : { immediateSeconds: options.immediateSeconds }),
    };
    const body = { spec, idempotencyKey: `${base}-${line}` };
    const checked = schema.checkBody(schema.SubmitBodySchema, body);
    if (!checked.ok) errors.push(`${at}: the request is not valid: ${schema.formatProblems(checked.problems)}`);
    else bodies.push({ line, body });
    if (bodies.length > MAX_JOBS) fail(`error: --many ${name}: more than ${MAX_JOBS} jobs in one call; split the file`);
  }
  if (errors.length > 0) fail(`${errors.map((e) => `error: ${e}`).join('\n')}\nnothing was submitted`);
  if (bodies.length === 0) fail(`error: --many ${name}: no jobs (one JSON object a line; blank lines and # comments are skipped)`);
  const ids = await withClient(options.controller, async (api) => {
    await checkShapes(api, name, bodies);
    const sent = await sendAll(api, bodies.map((b) => b.body));
    if (sent.failure !== undefined) {
      // Refused midway (a per-user cap): what went in, and from which line nothing did.
      const { index, error } = sent.failure;
      const submitted = bodies.flatMap(({ line }, i) => (sent.ids[i] === undefined ? [] : [`${line}:${sent.ids[i]}`]));
      fail(`error: ${name}:${bodies[index].line}: ${error}\n`
        + `submitted before it (line:id): ${submitted.length === 0 ? 'none' : submitted.join(' ')}; the other ${bodies.length - submitted.length} were not submitted`, 1);
    }
    return sent.ids as number[];
  });
  if (options.json) {
    process.stdout.write(`${JSON.stringify(bodies.map(({ line }, i) => ({ line, id: ids[i] })))}\n`);
    return;
  }
  process.stdout.write(`Submitted ${ids.length} job${ids.length === 1 ? '' : 's'}: ${idRanges(ids)}\n`);
}

/**
 * The controller's own checks (partition, sizes, limits of the cluster, dependencies, reservation) for each
 * shape of job in the file, through sbatch --test-only's route, before anything is sent: a line the cluster
 * would refuse refuses the whole file, as a bad line does. Lines that differ only in script, arguments, name
 * or output files (what the CLI checked itself) share one check.
 */
async function checkShapes(api: ApiClient, name: string, bodies: readonly { line: number; body: unknown }[]): Promise<void> {
  const shapes = new Map<string, { line: number; body: unknown; lines: number[] }>();
  for (const { line, body } of bodies) {
    const { script: _script, name: _name, output: _output, error: _error, submitEnv: _environment, ...shape } = (body as { spec: Record<string, unknown> }).spec;
    const key = JSON.stringify(shape);
    const known = shapes.get(key);
    if (known) known.lines.push(line);
    else shapes.set(key, { line, body, lines: [line] });
  }
  const errors: string[] = [];
  for (const { line, body, lines } of shapes.values()) {
    try {
      await withRetries('check', () => api.post('/jobs/test-only', body));
    } catch (error) {
      if (!(error instanceof ApiRequestError) || error.status >= 500) throw error;
      const others = lines.length > 1 ? ` (and ${lines.length - 1} more line${lines.length === 2 ? '' : 's'} like it: ${idRanges(lines.slice(1))})` : '';
      errors.push(`error: ${name}:${line}: ${error.error}${others}`);
    }
  }
  if (errors.length > 0) fail(`${errors.join('\n')}\nnothing was submitted`);
}

/**
 * Sends every body, IN_FLIGHT at a time, each retried while the controller cannot be reached; ids in the
 * bodies' order. A refusal (a per-user cap reached midway) stops the sending: the answer says which one,
 * and the bodies sent before it have their ids.
 */
async function sendAll(api: ApiClient, bodies: readonly unknown[]): Promise<{ ids: (number | undefined)[]; failure?: { index: number; error: string } }> {
  const ids: (number | undefined)[] = new Array(bodies.length);
  const refused: { failure?: { index: number; error: string } } = {};
  let next = 0;
  const progress = process.stderr.isTTY && bodies.length >= 1000;
  let done = 0;
  await Promise.all(Array.from({ length: Math.min(IN_FLIGHT, bodies.length) }, async () => {
    while (next < bodies.length && refused.failure === undefined) {
      const index = next++;
      try {
        ids[index] = (await withRetries('submit', () => api.post<ApiSubmitted>('/jobs', bodies[index]))).id;
      } catch (error) {
        // Refused (a per-user cap), or the controller gone or failing past the retries: the sending stops, and
        // what went in is said either way. The earliest line that failed is the one reported.
        const earlier = refused.failure as { index: number } | undefined;
        const words = error instanceof ApiRequestError ? `${error.error}${error.fix ? ` (${error.fix})` : ''}` : (error as Error).message;
        if (earlier === undefined || index < earlier.index) refused.failure = { index, error: words };
      }
      if (progress && ++done % 500 === 0) process.stderr.write(`\rsubmitted ${done} of ${bodies.length}`);
    }
  }));
  if (progress) process.stderr.write(`\rsubmitted ${done} of ${bodies.length}\n`);
  return { ids, ...refused };
}

/** `12-15,18,20-21`: ids as ranges, in the order given. */
export function idRanges(ids: readonly number[]): string {
  return formatTaskIds(ids);
}
