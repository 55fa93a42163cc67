// The one schema of every request body the controller takes (valibot; see
// README.md for why), shared by the controller, which refuses a bad body with
// a 400 before anything is stored, and the CLI, whose `taras submit --many`
// checks every line before it sends any (a single submission leaves the check
// to the controller, which saves it 3 to 5 ms). Types, ranges, required
// fields and unknown fields are checked; numbers are finite integers within
// sane maximums; strings and lists are bounded. A refusal names the field by
// its path and says what it takes.

import * as v from 'valibot';
import { isSpecSignal, MAX_SIGNAL_NUMBER, NODE_POLICIES, RESERVATION_NAME, RESERVATION_NAME_RULE } from './types.js';

/** Largest figures a request may carry; far above any real cluster, small enough that no sum overflows or stalls. */
export const LIMITS = {
  nodes: 100_000,
  ntasks: 10_000_000,
  cpusPerTask: 100_000,
  /** 1 PiB per node. */
  memoryMiB: 1024 ** 3,
  /** 100 years. */
  timeLimitSeconds: 100 * 365 * 86_400,
  pathChars: 4096,
  nameChars: 1024,
  /** Slurm's default max_script_size is 4 MB; the body limit (1 MiB) is lower anyway. */
  scriptChars: 4 * 1024 * 1024,
  listItems: 10_000,
  envVariables: 10_000,
  /** Linux's MAX_ARG_STRLEN. */
  envValueChars: 128 * 1024,
  textChars: 4096,
  idempotencyKeyChars: 128,
  jobIds: 100_000,
  /**
   * Job ids in one request of a user (cancel, hold, release, pause): each is looked up while others wait,
   * 100,000 took the controller about 2 s (the CLI sends more in several requests).
   */
  jobIdsPerRequest: 10_000,
} as const;

// Each helper gives every check of a field the same message, so a refusal says the whole rule at once.
// One check per field rather than a pipe of four: every submission passes through dozens of them.
/**
 * The latest time a request may name (epoch ms): the end of the year 9999. A
 * time and a time limit added to it stay within what a Date can hold (8.64e15):
 * a job stored with a start beyond that failed every listing that showed it.
 */
export const LATEST_MS = Date.UTC(9999, 11, 31, 23, 59, 59);
const TIME_RULE = `expected a time in epoch milliseconds from 0 to ${LATEST_MS} (the end of the year 9999)`;
const time = () => v.custom<number>((value) => Number.isInteger(value) && (value as number) >= 0 && (value as number) <= LATEST_MS, TIME_RULE);
const int = (min: number, max: number) =>
  v.custom<number>((value) => Number.isInteger(value) && (value as number) >= min && (value as number) <= max, `expected an integer from ${min} to ${max}`);
/** No text holds a NUL: it ends a C string, so a path or argument with one would be read as two (as sbatch, which refuses a script with one). */
const NUL_RULE = 'expected text without NUL characters (\\0)';
const text = (maxChars: number, minChars = 0) => v.custom<string>(
  (value) => typeof value === 'string' && value.length >= minChars && value.length <= maxChars && !value.includes('\0'),
  (issue) => (typeof issue.input === 'string' && issue.input.includes('\0') ? NUL_RULE
    : minChars > 1 ? `expected a string of ${minChars} to ${maxChars} characters`
      : minChars > 0 ? `expected a non-empty string of at most ${maxChars} characters` : `expected a string of at most ${maxChars} characters`));
const list = <T extends v.GenericSchema>(item: T, maxItems: number, minItems = 0) => {
  const message = `expected a list of ${minItems > 0 ? `${minItems} to ` : 'at most '}${maxItems} items`;
  return v.pipe(v.array(item, message), v.minLength(minItems, message), v.maxLength(maxItems, message));
};
const bool = () => v.boolean('expected true or false');
const absolutePath = () => v.pipe(text(LIMITS.pathChars, 1), v.startsWith('/', 'expected an absolute path (starting with /)'));
const strict = <T extends v.ObjectEntries>(entries: T) => v.strictObject(entries, 'expected an object');

const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

const nodeRange = v.pipe(
  strict({ min: int(1, LIMITS.nodes), max: v.optional(int(1, LIMITS.nodes)) }),
  v.check((range) => range.max === undefined || range.max >= range.min, 'nodes.max must be at least nodes.min'),
);

const timeLimit = v.union([int(1, LIMITS.timeLimitSeconds), v.literal('UNLIMITED')],
  `expected a number of seconds from 1 to ${LIMITS.timeLimitSeconds}, or "UNLIMITED"`);

// One plain loop instead of a schema per variable: a shell's environment is dozens of entries, and this
// check runs on every submission (a third of the schema's cost in the controller, with valibot's record).
const ENVIRONMENT_RULE = `expected an object of at most ${LIMITS.envVariables} variables: names of 1 to ${LIMITS.nameChars} characters, `
  + `string values of at most ${LIMITS.envValueChars} characters, no NUL characters`;
/** The same rule variable by variable: run only on an environment the loop refused, to name the variable at fault. */
const preciseEnvironment = v.pipe(
  v.record(v.pipe(text(LIMITS.nameChars, 1)), text(LIMITS.envValueChars), 'expected an object of string values'),
  v.check((env) => Object.keys(env).length <= LIMITS.envVariables, `expected at most ${LIMITS.envVariables} variables`),
);
const environment = v.custom<Record<string, string>>((value) => {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  let count = 0;
  for (const name in value) {
    if (!Object.hasOwn(value, name)) continue;
    const entry = (value as Record<string, unknown>)[name];
    if (++count > LIMITS.envVariables || name.length === 0 || name.length > LIMITS.nameChars) return false;
    if (typeof entry !== 'string' || entry.length > LIMITS.envValueChars || entry.includes('\0') || name.includes('\0')) return false;
  }
  return true;
}, ENVIRONMENT_RULE);

/** A JobSpec (src/jobspec/types.ts) as the API takes it, plus what only the submitting shell knows. */
const reservationName = v.pipe(text(64, 1), v.regex(RESERVATION_NAME, `expected ${RESERVATION_NAME_RULE}`));

export const JobSpecSchema = strict({
  script: strict({
    path: text(LIMITS.pathChars, 1),
    text: text(LIMITS.scriptChars, 1),
    args: list(text(LIMITS.pathChars), LIMITS.listItems),
  }),
  nodes: nodeRange,
  ntasks: v.optional(int(1, LIMITS.ntasks)),
  cpusPerTask: int(1, LIMITS.cpusPerTask),
  /** 0: all of each node's memory (sbatch --mem=0). */
  memoryMiB: v.optional(int(0, LIMITS.memoryMiB)),
  /** Absent: the partition's default_time (refused when it has none). */
  timeLimitSeconds: v.optional(timeLimit),
  partition: v.optional(text(LIMITS.nameChars, 1)),
  name: text(LIMITS.nameChars, 1),
  workingDir: absolutePath(),
  output: text(LIMITS.pathChars, 1),
  error: v.optional(text(LIMITS.pathChars, 1)),
  export: strict({
    all: bool(),
    variables: list(strict({
      name: v.pipe(text(LIMITS.nameChars, 1), v.regex(VARIABLE_NAME, 'expected a variable name (letters, digits, _)')),
      value: v.optional(text(LIMITS.envValueChars)),
    }), LIMITS.envVariables),
  }),
  constraint: v.optional(strict({
    text: text(LIMITS.textChars, 1),
    anyOf: list(list(text(LIMITS.nameChars, 1), 64, 1), 64, 1),
  })),
  requeue: bool(),
  /** The submitter's umask (contracts.md): output files are created 0666 & ~umask. */
  umask: v.optional(int(0, 0o777)),
  /** sbatch --signal=[B:]SIG[@TIME] (contracts.md). */
  signal: v.optional(strict({
    // The form the CLI stores (src/config/units.ts readWarnSignal): anything else would only fail at the agent.
    signal: v.pipe(text(16, 1), v.check(isSpecSignal, `expected a signal name without SIG, such as USR1, or a number from 1 to ${MAX_SIGNAL_NUMBER}`)),
    beforeSeconds: int(0, 65_535),
    batchOnly: bool(),
  })),
  submitEnv: v.optional(environment),
  submitDir: v.optional(absolutePath()),
  /** sbatch --ntasks-per-node, --mem-per-cpu (MiB), --nodelist, --exclude, --open-mode, --account, --comment, --mail-type, --mail-user. */
  ntasksPerNode: v.optional(int(1, LIMITS.ntasks)),
  memPerCpuMiB: v.optional(int(1, LIMITS.memoryMiB)),
  nodelist: v.optional(list(text(LIMITS.nameChars, 1), LIMITS.nodes, 1)),
  exclude: v.optional(list(text(LIMITS.nameChars, 1), LIMITS.nodes, 1)),
  openMode: v.optional(v.picklist(['append', 'truncate'], 'expected "append" or "truncate"')),
  exclusive: v.optional(bool()),
  nice: v.optional(int(-10_000, 10_000)),
  account: v.optional(text(LIMITS.nameChars, 1)),
  comment: v.optional(text(LIMITS.textChars, 1)),
  mailType: v.optional(list(text(32, 1), 16, 1)),
  mailUser: v.optional(text(LIMITS.nameChars, 1)),
  /** The host `taras submit` ran on (SLURM_SUBMIT_HOST). */
  submitHost: v.optional(text(LIMITS.nameChars, 1)),
  /** Slurm's --reservation: the name of an advance reservation. */
  reservation: v.optional(reservationName),
  /** sbatch --immediate[=S]: the job ends CANCELLED unless it starts within S seconds. */
  immediateSeconds: v.optional(int(0, 86_400)),
  /** The job checkpoints itself (seed 000 2.4); checked against cluster.toml's program classes and maxima by the controller. */
  checkpoint: v.optional(strict({
    intervalSeconds: v.optional(int(1, LIMITS.timeLimitSeconds)),
    durationSeconds: int(1, LIMITS.timeLimitSeconds),
    programClass: v.optional(v.pipe(text(64, 1), v.regex(/^[A-Za-z0-9_.-]+$/, 'expected a program class name (letters, digits, _ . -)'))),
  })),
  /** A priority job's deadline (taras submit --deadline): epoch ms, and guarantee (the default) or cancel (Slurm's --deadline). */
  deadline: v.optional(strict({
    atMs: time(),
    policy: v.picklist(['guarantee', 'cancel'], 'expected "guarantee" or "cancel"'),
  })),
  /** sbatch --hold: submitted with a user hold. */
  hold: v.optional(bool()),
  /** sbatch --begin: epoch ms before which it does not start. */
  beginMs: v.optional(time()),
  /** sbatch --dependency, parsed (src/jobspec/dependency.ts). */
  dependency: v.optional(strict({
    text: text(LIMITS.textChars, 1),
    all: bool(),
    items: list(strict({
      type: v.picklist(['after', 'afterany', 'afterok', 'afternotok', 'singleton'], 'expected after, afterany, afterok, afternotok or singleton'),
      ids: list(int(1, Number.MAX_SAFE_INTEGER), 1000),
      tasks: v.optional(list(v.pipe(text(30, 3), v.regex(/^\d+_\d+$/, 'expected ARRAYID_TASK (12_3)')), 1000)),
      minutes: v.optional(int(0, 525_600)),
    }), 100, 1),
  })),
  /** A job array (sbatch --array): the text; the controller adds each task's taskId and index (ArrayMember in src/jobspec/types.ts). */
  array: v.optional(strict({
    text: text(LIMITS.textChars, 1),
    taskId: v.optional(int(0, 100_000_000)),
    index: v.optional(int(0, 100_000_000)),
  })),
  /** An interactive job (taras run / alloc): see InteractiveRequest in src/jobspec/types.ts. */
  interactive: v.optional(strict({
    pty: bool(),
    command: list(text(LIMITS.pathChars), LIMITS.listItems),
    cols: v.optional(int(1, 10_000)),
    rows: v.optional(int(1, 10_000)),
    immediateSeconds: v.optional(int(0, 86_400)),
  })),
});

/** POST /jobs. The key makes a retry safe: the same key from the same user answers the first job's id. */
export const SubmitBodySchema = strict({
  spec: JobSpecSchema,
  idempotencyKey: v.optional(v.pipe(text(LIMITS.idempotencyKeyChars, 8), v.regex(/^[A-Za-z0-9._:-]+$/, 'expected letters, digits, . _ : -'))),
});

/** Jobs as users name them: a job id, ARRAYID_TASK (one task of a job array), ARRAYID_[TASKS]; an array's id names all its tasks. */
const jobRefs = list(v.union([int(1, Number.MAX_SAFE_INTEGER), v.pipe(text(LIMITS.textChars, 3), v.regex(/^\d+_(\d+|\[[0-9,:-]+\])$/, 'expected ARRAYID_TASK or ARRAYID_[TASKS]'))],
  'expected a job id (12), ARRAYID_TASK (12_3) or ARRAYID_[TASKS] (12_[1-3,7])'), LIMITS.jobIdsPerRequest, 1);

/** POST /jobs/cancel: the listed jobs, or all of a user's active jobs (the caller's own unless `user` names another). */
export const CancelBodySchema = v.pipe(
  strict({
    // A job id, or ARRAYID_TASK (one task of a job array); an array's id names all its tasks.
    ids: v.optional(jobRefs),
    all: v.optional(v.literal(true, 'expected true')),
    user: v.optional(text(LIMITS.nameChars, 1)),
  }),
  v.check((body) => (body.ids === undefined) !== (body.all === undefined), 'give either ids (a list of job ids) or all: true'),
  v.check((body) => body.user === undefined || body.all === true, 'user goes with all: true'),
);

const nodeNames = (minItems: number) => list(text(LIMITS.nameChars, 1), LIMITS.nodes, minItems);

export const DrainBodySchema = strict({ nodes: nodeNames(1), reason: v.optional(text(LIMITS.textChars)), resume: v.optional(bool()) });
/** POST /jobs/hold, /jobs/release: the jobs. */
export const JobIdsBodySchema = strict({ ids: jobRefs });
/** POST /jobs/:id/move (taras move): the job to go behind, or 0 for the front of the queue. */
export const MoveBodySchema = strict({ after: int(0, Number.MAX_SAFE_INTEGER) });
/** Most tasks one job step may have: each task runs under a supervisor process of its own on its node. */
export const MAX_STEP_TASKS = 128;
/** Most words (the program and its arguments) one step's command may have. */
export const STEP_COMMAND_WORDS = 4096;
/**
 * POST /jobs/:id/steps (srun inside a job): the command, how many tasks on how
 * many of the job's nodes, the caller's environment and directory. Absent
 * counts: the job's own (sbatch's -n and its nodes).
 */
export const StepBodySchema = strict({
  command: list(text(LIMITS.envValueChars, 1), STEP_COMMAND_WORDS, 1),
  ntasks: v.optional(int(1, MAX_STEP_TASKS)),
  nodes: v.optional(int(1, LIMITS.nodes)),
  cpusPerTask: v.optional(int(1, LIMITS.cpusPerTask)),
  overcommit: v.optional(bool()),
  timeLimitSeconds: v.optional(int(1, LIMITS.timeLimitSeconds)),
  memoryMiB: v.optional(int(1, LIMITS.memoryMiB)),
  name: v.optional(text(LIMITS.nameChars, 1)),
  workingDir: absolutePath(),
  umask: int(0, 0o777),
  env: environment,
});
export type StepBody = v.InferOutput<typeof StepBodySchema>;
/** POST /jobs/:id/update (scontrol update): a pending job's name, partition or time limit; at least one. */
export const UpdateBodySchema = v.pipe(
  strict({ name: v.optional(text(LIMITS.nameChars, 1)), partition: v.optional(text(LIMITS.nameChars, 1)), timeLimitSeconds: v.optional(timeLimit) }),
  v.check((body) => body.name !== undefined || body.partition !== undefined || body.timeLimitSeconds !== undefined, 'give at least one of name, partition, timeLimitSeconds'),
);
/** Most a throttle (sbatch --array=...%N, scontrol update ArrayTaskThrottle=N) may be: more than any array has tasks. */
export const MAX_ARRAY_THROTTLE = 1_000_000;
/**
 * POST /jobs/update (scontrol update JobId=...): the jobs (an array's id: its tasks not ended) and what changes;
 * `arrayThrottle` (ArrayTaskThrottle, 0: no limit) only with arrays' ids.
 */
export const UpdateJobsBodySchema = v.pipe(
  strict({
    ids: jobRefs, name: v.optional(text(LIMITS.nameChars, 1)), partition: v.optional(text(LIMITS.nameChars, 1)), timeLimitSeconds: v.optional(timeLimit),
    arrayThrottle: v.optional(int(0, MAX_ARRAY_THROTTLE)),
  }),
  v.check((body) => body.name !== undefined || body.partition !== undefined || body.timeLimitSeconds !== undefined || body.arrayThrottle !== undefined,
    'give at least one of name, partition, timeLimitSeconds, arrayThrottle'),
);
/** POST /jobs/pause, /jobs/unpause: the jobs, or none for all of the caller's (sppause). */
export const PauseBodySchema = strict({ ids: v.optional(list(int(1, Number.MAX_SAFE_INTEGER), LIMITS.jobIdsPerRequest, 1)) });
export const MotdBodySchema = strict({ text: v.optional(text(LIMITS.textChars)) });
/** `taras admin holiday on|off`: every period is night while it is on (day and night queues). */
export const HolidayBodySchema = strict({ on: bool() });
/** `taras admin token`: for whom (default: the caller) and for how long (default 30 min, at most a year). */
export const TokenBodySchema = v.optional(strict({ user: v.optional(text(256, 1)), lifespanSeconds: v.optional(int(1, 366 * 86400)) }));
/**
 * POST /reservations: an advance reservation (or, kind maintenance, a
 * window: then the name may be left to the controller). Times in epoch ms;
 * the nodes by name (expanded) or how many.
 */
export const ReservationBodySchema = strict({
  name: v.optional(reservationName),
  kind: v.optional(v.picklist(['reservation', 'maintenance'], 'expected "reservation" or "maintenance"')),
  startMs: time(),
  endMs: time(),
  nodes: v.optional(nodeNames(1)),
  nodeCount: v.optional(int(1, 1_000_000)),
  users: v.optional(list(text(256, 1), 1024)),
  reason: v.optional(text(LIMITS.textChars)),
});

/** POST /whatif: the change to plan the live queue under (nothing is changed). */
export const WhatIfBodySchema = strict({
  policy: v.optional(v.picklist(NODE_POLICIES, `expected ${NODE_POLICIES.join(', ')}`)),
  drain: v.optional(nodeNames(1)),
  window: v.optional(strict({ startMs: time(), endMs: time(), nodes: nodeNames(1) })),
});

/** Reconfigure and shutdown take no fields (an empty object or no body). */
export const EmptyBodySchema = v.optional(strict({}));
/**
 * POST /admin/shutdown: what becomes of running jobs (default leave-running);
 * with `window`, no shutdown now: the mode is given to that maintenance
 * window (`taras admin shutdown --at T --until T2 --mode M`).
 */
export const ShutdownBodySchema = v.optional(strict({
  mode: v.optional(v.picklist(['leave-running', 'checkpoint', 'kill'], 'expected "leave-running", "checkpoint" or "kill"')),
  window: v.optional(reservationName),
}));

const epochMs = int(0, 8.64e15);
const cpuSeconds = v.pipe(v.number('expected a number of seconds'), v.finite('expected a finite number'), v.minValue(0, 'expected 0 or more seconds'));
/** An agent's word about one job. Agent bodies are loose objects: fields other parts add (boot ids, signatures) pass through. */
const jobReport = v.looseObject({
  jobId: int(1, Number.MAX_SAFE_INTEGER),
  run: v.optional(int(0, 1_000_000)),
  state: v.picklist(['RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT', 'NODE_FAIL', 'OUT_OF_MEMORY', 'PREEMPTED'], 'expected RUNNING or an end state'),
  exitCode: v.nullable(int(-1_000_000, 1_000_000)),
  endTimeMs: v.nullable(epochMs),
  reason: v.nullish(text(LIMITS.textChars)),
  // What the job used (absent from agents older than accounting).
  signal: v.nullish(text(32)),
  cpuSeconds: v.nullish(cpuSeconds),
  userCpuSeconds: v.nullish(cpuSeconds),
  systemCpuSeconds: v.nullish(cpuSeconds),
  maxRssKiB: v.nullish(int(0, Number.MAX_SAFE_INTEGER)),
}, 'expected an object');
export const AgentRegisterBodySchema = v.looseObject({
  url: text(LIMITS.pathChars, 1),
  nodes: nodeNames(1),
  /** Drawn at each agent start: the controller's requests to it are signed for this boot (src/net/hmac.ts). */
  bootId: v.pipe(v.string('expected a string'), v.regex(/^[0-9a-f-]{36}$/, 'expected the agent\'s boot id (a UUID)')),
  reports: v.optional(list(jobReport, LIMITS.jobIds)),
  /** The agent's uid: the controller sends this agent's orders only to a process of root's, its own or this uid. */
  uid: v.optional(int(0, 4_294_967_294)),
}, 'expected an object');
export const AgentHeartbeatBodySchema = v.looseObject({ nodes: nodeNames(0) }, 'expected an object');
export const AgentReportBodySchema = v.looseObject({ reports: list(jobReport, LIMITS.jobIds) }, 'expected an object');

export type SubmitBody = v.InferOutput<typeof SubmitBodySchema>;
export type CancelBody = v.InferOutput<typeof CancelBodySchema>;

/** One refused field: its path (`spec.nodes.min`, or `body`) and what it takes. */
export interface FieldProblem {
  readonly path: string;
  readonly message: string;
}

export type Checked<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly problems: readonly FieldProblem[] };

/** What a value looked like, short (a refusal never echoes a megabyte). */
function received(issue: v.BaseIssue<unknown>): string {
  const value = issue.input;
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (typeof value === 'string') return value.length > 40 ? `a string of ${value.length} characters` : JSON.stringify(value);
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : 'a number out of range';
  if (Array.isArray(value)) return `a list of ${value.length}`;
  return typeof value === 'object' ? 'an object' : typeof value;
}

/** Checks a body against a schema; every problem, each with the field's path. */
export function checkBody<S extends v.GenericSchema>(schema: S, body: unknown, root = ''): Checked<v.InferOutput<S>> {
  const result = v.safeParse(schema, body, { abortPipeEarly: true });
  if (result.success) return { ok: true, value: result.output };
  // An environment the fast loop refused is checked again variable by variable, so the refusal names the variable.
  const issues = result.issues.flatMap((issue) => {
    if (issue.type !== 'custom' || issue.message !== ENVIRONMENT_RULE) return [issue];
    const precise = v.safeParse(preciseEnvironment, issue.input, { abortPipeEarly: true });
    return precise.success ? [issue] : precise.issues.map((inner) => ({ ...inner, path: [...(issue.path ?? []), ...(inner.path ?? [])] }) as typeof issue);
  });
  const problems = issues.slice(0, 20).map((issue) => {
    const inner = v.getDotPath(issue);
    const path = [root, inner].filter((part) => part !== null && part !== '').join('.') || 'body';
    if (issue.type === 'strict_object' || issue.type === 'loose_object') {
      // Valibot reports an unknown key as expecting `never`, and a missing one as expecting the key.
      if (issue.expected === 'never') return { path, message: 'unknown field; remove it' };
      if (issue.input === undefined && issue.path !== undefined) return { path, message: 'required field missing; add it' };
    }
    if (issue.type === 'check' || issue.type === 'starts_with' || issue.type === 'regex') return { path, message: issue.message };
    return { path, message: `${issue.message}, got ${received(issue)}` };
  });
  return { ok: false, problems };
}

/** One line per problem: `spec.nodes.min: expected an integer from 1 to 100000, got 0`. */
export const formatProblems = (problems: readonly FieldProblem[]): string => problems.map((p) => `${p.path}: ${p.message}`).join('; ');
