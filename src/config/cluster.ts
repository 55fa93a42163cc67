// The cluster description (cluster.toml): scheduling policy, placement, the
// controller's addresses and timers, nodes and partitions. parseClusterConfig
// turns the text into a checked ClusterConfig or into every error found, each
// naming file, line, key and fix. It never throws for a user's mistake, so
// `taras admin reconfigure` can refuse a bad file and keep the one in force.

import { readDayNight, type DayNightConfig } from './day-night.js';
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import { parse, TomlError } from 'smol-toml';
import type { PolicyName } from '../core/scheduler.js';
import { type ConfigError, ErrorList } from './errors.js';
import { NAME_HINT, NAME_PATTERN, type Table, TableReader } from './fields.js';
import { expandHostlist } from './hostlist.js';
import { SourceIndex } from './locate.js';
import { readNodes, readPartitions } from './topology.js';
import { parseWarnSignal, type WarnSignal } from './units.js';
import { MAX_ARRAY_SIZE_LIMIT } from '../jobspec/array.js';
import { readProgramClasses, type PreemptMode, type ProgramClass } from './checkpoint.js';
import { NODE_POLICIES } from '../api/types.js';

export const schedulingPolicies = NODE_POLICIES satisfies readonly PolicyName[];
export type SchedulingPolicy = (typeof schedulingPolicies)[number];

export const placements = ['first-fit', 'best-fit', 'least-loaded'] as const;
export type Placement = (typeof placements)[number];

export interface ListenAddress {
  /** IPv4/IPv6 literal (without brackets) or host name. */
  readonly host: string;
  /** 0 lets the system pick a free port (tests). */
  readonly port: number;
}

/** One node, as [[nodes]] describes it after range expansion. */
export interface NodeSpec {
  readonly name: string;
  readonly cpus: number;
  readonly memoryMiB: number;
  readonly features: readonly string[];
}

export interface PartitionSpec {
  readonly name: string;
  /** Node names in hostlist order, each defined by a NodeSpec. */
  readonly nodes: readonly string[];
  /** Jobs without --partition go here; exactly one partition has it. */
  readonly isDefault: boolean;
  /** null: no limit. */
  readonly maxTimeSeconds: number | null;
  /** The time limit of a job that gives none (Slurm's DefaultTime); null or absent: such a job is refused. */
  readonly defaultTimeSeconds?: number | null;
  /** Most nodes one job may have; null: no limit. */
  readonly maxNodes: number | null;
  /** Higher first where partitions share nodes (Slurm's partition priority). */
  readonly priority: number;
  /** What happens to this partition's jobs when a higher-priority partition needs their nodes (Slurm's PreemptMode); absent: off. */
  readonly preemptMode?: PreemptMode;
  /** A preempted job without checkpoints gets SIGTERM, then SIGKILL this long after (Slurm's GraceTime); absent: 0. */
  readonly graceTimeSeconds?: number;
}

export interface ClusterConfig {
  readonly name: string;
  readonly policy: SchedulingPolicy;
  readonly placement: Placement;
  readonly listen: ListenAddress;
  /** Absolute; a relative data_dir is taken from the config file's folder. */
  readonly dataDir: string;
  /** Absolute; a relative socket is taken from dataDir. */
  readonly socketPath: string;
  /** An agent silent this long marks its node DOWN. */
  readonly nodeTimeoutSeconds: number;
  /** Finished jobs stay in the queue listing this long. */
  readonly keepFinishedSeconds: number;
  /** The controller's event log (JSON lines, src/controller/event-log.ts); absent: none is written. */
  readonly eventLog?: EventLogSettings;
  /**
   * The warning signal of jobs that ask for none (`warn_signal`); null: none,
   * as Slurm. A job's own --signal wins.
   */
  readonly warnSignal: WarnSignal | null;
  /** warn_signal's TIME when it gives none. */
  readonly warnBeforeLimitSeconds: number;
  /** SIGKILL follows SIGTERM at the limit after this long. */
  readonly killGraceSeconds: number;
  /** Most PENDING jobs one user may have (Slurm's MaxSubmitJobs per user); 0: no cap. */
  readonly maxPendingPerUser: number;
  /** Most MiB of scripts one user's PENDING jobs may hold together (they are kept in the controller's memory); 0: no cap. */
  readonly maxPendingScriptMiB: number;
  /** Task ids of a job array stay below this (Slurm's MaxArraySize); absent: DEFAULT_MAX_ARRAY_SIZE (10001: ids 0-10000). */
  readonly maxArraySize?: number;
  /** Submissions per second one user may make, on average (token bucket holding one second's worth); 0: no cap. */
  readonly maxSubmitRate: number;
  /** Most client connections the API holds open at once (TCP and the socket together); 0: derived from the file limit. */
  readonly maxConnections: number;
  /** A connection whose client takes nothing of its answer for this long is closed (Slurm's MessageTimeout). */
  readonly messageTimeoutSeconds: number;
  /** Most WebSocket streams (taras attach, taras run, srun) one user holds open at once; 0: a quarter of the connection cap, at least 16. */
  readonly maxStreamsPerUser: number;
  /** Every node, in file order. */
  readonly nodes: readonly NodeSpec[];
  readonly partitions: readonly PartitionSpec[];
  /** Name of the partition with isDefault. */
  readonly defaultPartition: string;
  /** Administrators besides root: user names and "@group" (src/controller/authz.ts). */
  readonly admins: readonly string[];
  /** Whether root may submit jobs (Slurm runs them; a site may refuse). */
  readonly allowRootJobs: boolean;
  /** munged's socket for verifying MUNGE credentials; undefined: munge's default. */
  readonly mungeSocket?: string;
  /** `mail_program` (Slurm's MailProg): a sendmail-compatible command run as `PROGRAM -t -oi` with the message on stdin; absent: /usr/sbin/sendmail. */
  readonly mailProgram?: string;
  /** `mail_domain` (Slurm's MailDomain): added to a user name without "@" (the job's user by default); absent: local delivery to the name. */
  readonly mailDomain?: string;
  /** Absolute; the HS256 key of bearer tokens, created (0600) on first start. */
  readonly jwtKeyPath: string;
  /** [[program_class]]: checkpoint signals and restart action; the first is the default. Absent: CHECKPOINT_DEFAULTS.classes. */
  readonly programClasses?: readonly ProgramClass[];
  /** Longest --checkpoint-interval a job may ask for (seconds); absent: CHECKPOINT_DEFAULTS. */
  readonly maxCheckpointIntervalSeconds?: number;
  /** Longest --checkpoint-duration a job may ask for (seconds); absent: CHECKPOINT_DEFAULTS. */
  readonly maxCheckpointDurationSeconds?: number;
  /** Interactive jobs (`taras run`, `taras alloc`): policy, grace, idle limit, longest time, warning. */
  readonly interactive: InteractiveSettings;
  /** `kill_invalid_depend` (Slurm's SchedulerParameters option): a job whose dependency can never be met is cancelled, not left pending. */
  readonly killInvalidDepend?: boolean;
  /** `[day_night]`: day and night queues (seed 004); absent: none. */
  readonly dayNight?: DayNightConfig;
}

/** Kinds of events the event log can record (seed 000 3.2.4). */
export const EVENT_KINDS = ['startup', 'shutdown', 'submit', 'start', 'checkpoint', 'finish', 'remove', 'move', 'error'] as const;
export type EventKind = (typeof EVENT_KINDS)[number];

export interface EventLogSettings {
  /** `event_log`: the file (relative to data_dir). */
  readonly path: string;
  /** `event_log_kinds`: what is recorded (default: every kind). */
  readonly kinds: readonly EventKind[];
  /** `event_log_max_size`: the file is rotated (FILE.1, FILE.2, ...) when it grows past this (default 100 MiB). */
  readonly maxBytes: number;
  /** `event_log_keep`: rotated files kept (default 5). */
  readonly keep: number;
}

/** Policies for interactive jobs: start at once or fail (Artaras, seed 000 2.2.2), or wait in the queue (Argonne). */
export const interactivePolicies = ['immediate', 'queued'] as const;

export interface InteractiveSettings {
  /** `interactive`: "immediate" (default) or "queued". */
  readonly policy: (typeof interactivePolicies)[number];
  /** `interactive_grace`: a session with no client ends this long after the last one left (default 5 min). */
  readonly graceSeconds: number;
  /** `interactive_idle`: a session with no input and no output ends after this long; 0 (default): never. */
  readonly idleSeconds: number;
  /** `interactive_max_time`: an interactive job's limit is at most this; null (default): its own limit only. */
  readonly maxTimeSeconds: number | null;
  /** `interactive_warn`: a line on the user's terminal this long before the limit (default 10 min); 0: none. */
  readonly warnSeconds: number;
}

export const INTERACTIVE_DEFAULTS: InteractiveSettings = { policy: 'immediate', graceSeconds: 300, idleSeconds: 0, maxTimeSeconds: null, warnSeconds: 600 };

/**
 * `ignored`: settings an older version took that this one cannot honour (a real-time warn_signal); the
 * config goes without them. A daemon's start says so and goes on (a file that started before must start
 * again); a reconfigure refuses the file.
 */
export type ClusterConfigResult =
  | { readonly ok: true; readonly config: ClusterConfig; readonly ignored: readonly ConfigError[] }
  | { readonly ok: false; readonly errors: readonly ConfigError[] };

export const DEFAULT_LISTEN: ListenAddress = { host: '127.0.0.1', port: 6817 };

/** What [cluster] keys default to when left out (durations in seconds). */
export const CLUSTER_DEFAULTS = {
  name: 'taras',
  policy: 'easy',
  placement: 'first-fit',
  socket: 'taras.sock',
  dataDir: 'taras-data',
  nodeTimeoutSeconds: 60,
  keepFinishedSeconds: 3600,
  warnBeforeLimitSeconds: 60,
  killGraceSeconds: 30,
  maxPendingPerUser: 10_000,
  maxPendingScriptMiB: 128,
  maxSubmitRate: 100,
  maxConnections: 0,
  messageTimeoutSeconds: 10,
  maxStreamsPerUser: 0,
  jwtKey: 'jwt.key',
} as const;

/** Linux limits a Unix socket path to 108 bytes with the terminating NUL. */
const MAX_SOCKET_PATH_BYTES = 107;

const ROOT_KEYS = { known: ['cluster', 'nodes', 'partitions', 'program_class', 'day_night'] };

const CLUSTER_KEYS = {
  known: ['name', 'policy', 'placement', 'listen', 'socket', 'data_dir', 'node_timeout', 'keep_finished', 'warn_signal', 'warn_before_limit', 'kill_grace',
    'max_pending_per_user', 'max_pending_script_size', 'max_submit_rate', 'max_connections', 'message_timeout', 'max_streams_per_user', 'admins', 'allow_root_jobs', 'munge_socket', 'jwt_key', 'mail_program', 'mail_domain',
    'max_checkpoint_interval', 'max_checkpoint_duration',
    'interactive', 'interactive_grace', 'interactive_idle', 'interactive_max_time', 'interactive_warn', 'kill_invalid_depend', 'max_array_size',
    'event_log', 'event_log_kinds', 'event_log_max_size', 'event_log_keep'],
  aliases: {
    clustername: 'name',
    schedulertype: 'policy',
    mailprog: 'mail_program',
    maildomain: 'mail_domain',
    selecttype: 'placement',
    address: 'listen',
    port: 'listen',
    statesavelocation: 'data_dir',
    slurmdtimeout: 'node_timeout',
    minjobage: 'keep_finished',
    killwait: 'kill_grace',
    messagetimeout: 'message_timeout',
    maxsubmitjobs: 'max_pending_per_user',
    maxarraysize: 'max_array_size',
    maxsubmitjobsperuser: 'max_pending_per_user',
    authaltparameters: 'jwt_key',
  },
};

/** Parses and checks a cluster.toml text; `file` is used in errors and to resolve data_dir. */
export function parseClusterConfig(text: string, file: string): ClusterConfigResult {
  const index = new SourceIndex(text);
  let document: Table;
  try {
    document = parse(text);
  } catch (error) {
    if (error instanceof TomlError) return { ok: false, errors: [syntaxError(error, file, index)] };
    throw error;
  }
  const errors = new ErrorList(file, (key) => index.lineOf(key));
  const root = new TableReader('', document, errors);
  root.rejectUnknownKeys(ROOT_KEYS);
  const clusterTable = root.subTable('cluster');
  const settings = clusterTable === undefined ? undefined : readSettings(new TableReader('cluster', clusterTable, errors), file);
  const nodes = readNodes(root, errors, index);
  const partitions = readPartitions(root, nodes, errors, index);
  const programClasses = readProgramClasses(root, errors);
  const dayNightTable = root.has('day_night') ? root.subTable('day_night') : undefined;
  const dayNight = dayNightTable === undefined ? undefined : readDayNight(new TableReader('day_night', dayNightTable, errors));
  if (errors.size > 0 || settings === undefined || partitions.defaultName === undefined) {
    return { ok: false, errors: [...errors.sorted(), ...errors.ignoredSorted()].sort((a, b) => a.line - b.line) };
  }
  return {
    ok: true,
    ignored: errors.ignoredSorted(),
    config: { ...settings, nodes: nodes.specs, partitions: partitions.specs, defaultPartition: partitions.defaultName, ...(programClasses === undefined ? {} : { programClasses }), ...(dayNight === undefined ? {} : { dayNight }) },
  };
}

type Settings = Omit<ClusterConfig, 'nodes' | 'partitions' | 'defaultPartition'>;

function readSettings(reader: TableReader, file: string): Settings {
  reader.rejectUnknownKeys(CLUSTER_KEYS);
  const listenText = reader.string('listen', { example: '"127.0.0.1:6817"' });
  const listen = listenText === undefined ? DEFAULT_LISTEN : parseListen(listenText);
  if (listen === undefined) {
    reader.error('listen', `${JSON.stringify(listenText)} is not HOST:PORT with a port from 0 to 65535`, 'write listen = "127.0.0.1:6817"');
  }
  const nonEmpty = { pattern: /\S/, patternHint: 'it is empty' };
  const dataDir = resolve(dirname(file), reader.string('data_dir', { example: '"taras-data"', ...nonEmpty }) ?? CLUSTER_DEFAULTS.dataDir);
  const socketPath = resolve(dataDir, reader.string('socket', { example: '"taras.sock"', ...nonEmpty }) ?? CLUSTER_DEFAULTS.socket);
  const socketProblem = socketPathProblem(socketPath);
  if (socketProblem !== undefined) {
    reader.error(reader.has('socket') ? 'socket' : 'data_dir', socketProblem, 'use a shorter data_dir, or an absolute socket path such as "/tmp/taras.sock"');
  }
  const mungeSocket = reader.string('munge_socket', { example: '"/run/munge/munge.socket.2"', ...nonEmpty });
  // Run as root with a fixed argv and environment: an absolute path, never found through a PATH.
  const mailProgram = reader.string('mail_program', { example: '"/usr/sbin/sendmail"', pattern: /^\/[^\0]*$/, patternHint: 'an absolute path' });
  const mailDomain = reader.string('mail_domain', { example: '"example.org"', pattern: /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?)*$/, patternHint: 'a domain name such as example.org' });
  const timer = (key: string, example: string, min: number, fallback: number): number =>
    reader.duration(key, { example, minutesIfBare: false, unlimited: false, min }) ?? fallback;
  const warnBeforeLimitSeconds = timer('warn_before_limit', '"60s"', 0, CLUSTER_DEFAULTS.warnBeforeLimitSeconds);
  return {
    name: reader.string('name', { example: '"demo"', pattern: NAME_PATTERN, patternHint: NAME_HINT }) ?? CLUSTER_DEFAULTS.name,
    policy: reader.choice('policy', schedulingPolicies) ?? CLUSTER_DEFAULTS.policy,
    placement: reader.choice('placement', placements) ?? CLUSTER_DEFAULTS.placement,
    listen: listen ?? DEFAULT_LISTEN,
    dataDir,
    socketPath,
    nodeTimeoutSeconds: timer('node_timeout', '"60s"', 1, CLUSTER_DEFAULTS.nodeTimeoutSeconds),
    keepFinishedSeconds: timer('keep_finished', '"1h"', 0, CLUSTER_DEFAULTS.keepFinishedSeconds),
    ...readEventLog(reader, dataDir),
    warnSignal: readWarnSignal(reader, warnBeforeLimitSeconds),
    warnBeforeLimitSeconds,
    killGraceSeconds: timer('kill_grace', '"30s"', 0, CLUSTER_DEFAULTS.killGraceSeconds),
    maxPendingPerUser: reader.integer('max_pending_per_user', { example: '10000', min: 0 }) ?? CLUSTER_DEFAULTS.maxPendingPerUser,
    maxPendingScriptMiB: reader.memoryMiB('max_pending_script_size', { example: '"128M"' }) ?? CLUSTER_DEFAULTS.maxPendingScriptMiB,
    maxSubmitRate: reader.integer('max_submit_rate', { example: '100', min: 0 }) ?? CLUSTER_DEFAULTS.maxSubmitRate,
    maxConnections: reader.integer('max_connections', { example: '512', min: 0, max: 1_000_000 }) ?? CLUSTER_DEFAULTS.maxConnections,
    messageTimeoutSeconds: timer('message_timeout', '"10s"', 1, CLUSTER_DEFAULTS.messageTimeoutSeconds),
    maxStreamsPerUser: reader.integer('max_streams_per_user', { example: '64', min: 0, max: 1_000_000 }) ?? CLUSTER_DEFAULTS.maxStreamsPerUser,
    admins: reader.stringArray('admins', { example: '["alice", "@wheel"]', pattern: ADMIN_PATTERN, patternHint: ADMIN_HINT }) ?? [],
    allowRootJobs: reader.boolean('allow_root_jobs') ?? true,
    ...(reader.boolean('kill_invalid_depend') === true ? { killInvalidDepend: true } : {}),
    ...(mungeSocket === undefined ? {} : { mungeSocket: resolve(dirname(file), mungeSocket) }),
    ...(mailProgram === undefined ? {} : { mailProgram }),
    ...(mailDomain === undefined ? {} : { mailDomain }),
    jwtKeyPath: resolve(dataDir, reader.string('jwt_key', { example: '"jwt.key"', ...nonEmpty }) ?? CLUSTER_DEFAULTS.jwtKey),
    ...optionalTimer('maxCheckpointIntervalSeconds', reader.duration('max_checkpoint_interval', { example: '"1d"', minutesIfBare: false, unlimited: false, min: 1 })),
    ...optionalTimer('maxCheckpointDurationSeconds', reader.duration('max_checkpoint_duration', { example: '"10m"', minutesIfBare: false, unlimited: false, min: 1 })),
    interactive: {
      policy: reader.choice('interactive', interactivePolicies) ?? INTERACTIVE_DEFAULTS.policy,
      graceSeconds: timer('interactive_grace', '"5m"', 1, INTERACTIVE_DEFAULTS.graceSeconds),
      idleSeconds: timer('interactive_idle', '"1h"', 0, INTERACTIVE_DEFAULTS.idleSeconds),
      maxTimeSeconds: reader.duration('interactive_max_time', { example: '"8h"', minutesIfBare: false, unlimited: false, min: 1 }) ?? INTERACTIVE_DEFAULTS.maxTimeSeconds,
      warnSeconds: timer('interactive_warn', '"10m"', 0, INTERACTIVE_DEFAULTS.warnSeconds),
    },
    // Only where the file gives it: the controller applies DEFAULT_MAX_ARRAY_SIZE (src/jobspec/array.ts) otherwise.
    ...optionalTimer('maxArraySize', reader.integer('max_array_size', { example: '10001', min: 1, max: MAX_ARRAY_SIZE_LIMIT })),
  };
}

/** The event_log keys: nothing unless `event_log` names a file. */
function readEventLog(reader: TableReader, dataDir: string): { eventLog?: EventLogSettings } {
  const path = reader.string('event_log', { example: '"events.log"', pattern: /\S/, patternHint: 'a file name' });
  const kinds = reader.stringArray('event_log_kinds', { example: '["submit", "start", "finish"]', pattern: new RegExp(`^(${EVENT_KINDS.join('|')})$`), patternHint: `one of ${EVENT_KINDS.join(', ')}` });
  const maxMiB = reader.memoryMiB('event_log_max_size', { example: '"100M"' });
  const keep = reader.integer('event_log_keep', { example: '5', min: 0, max: 1000 });
  if (path === undefined) return {};
  return { eventLog: { path: resolve(dataDir, path), kinds: (kinds ?? [...EVENT_KINDS]) as EventKind[], maxBytes: (maxMiB ?? 100) * 1024 * 1024, keep: keep ?? 5 } };
}

/** A setting only where the file gives it (the engine applies CHECKPOINT_DEFAULTS otherwise). */
const optionalTimer = <K extends string>(key: K, seconds: number | null | undefined): { [P in K]?: number } =>
  (seconds === null || seconds === undefined ? {} : { [key]: seconds }) as { [P in K]?: number };

/** Why a Unix socket cannot have this path (too long), or undefined. */
export function socketPathProblem(socketPath: string): string | undefined {
  if (Buffer.byteLength(socketPath) <= MAX_SOCKET_PATH_BYTES) return undefined;
  return `the socket path ${socketPath} is longer than the ${MAX_SOCKET_PATH_BYTES} bytes a Unix socket allows`;
}

/**
 * `config` kept in another data folder (`--data` over the file's data_dir):
 * the socket, the JWT key and the event log the file keeps in data_dir move
 * with it, paths it puts elsewhere stay.
 */
export function withDataDir(config: ClusterConfig, dataDir: string): ClusterConfig {
  const to = resolve(dataDir);
  const moved = (path: string): string => {
    const inside = relative(config.dataDir, path);
    return inside === '..' || inside.startsWith('../') || isAbsolute(inside) ? path : resolve(to, inside);
  };
  return {
    ...config, dataDir: to, socketPath: moved(config.socketPath), jwtKeyPath: moved(config.jwtKeyPath),
    ...(config.eventLog === undefined ? {} : { eventLog: { ...config.eventLog, path: moved(config.eventLog.path) } }),
  };
}

/** A user name or "@group" (POSIX portable names, as useradd accepts them). */
const ADMIN_PATTERN = /^@?[A-Za-z0-9_][A-Za-z0-9_.-]*\$?$/;
const ADMIN_HINT = 'each entry is a user name ("alice") or a group as "@wheel"';

/** warn_signal = "[B:]SIG[@TIME]" as sbatch's --signal; TIME defaults to warn_before_limit. */
function readWarnSignal(reader: TableReader, defaultSeconds: number): WarnSignal | null {
  const text = reader.string('warn_signal', { example: '"B:USR1@60"' });
  if (text === undefined) return null;
  const parsed = parseWarnSignal(text, defaultSeconds);
  if (parsed.ok) return parsed.value;
  // Older versions took a real-time signal (and every job then failed at its start): a start goes on without it.
  if (parsed.realTime === true) reader.ignore('warn_signal', parsed.message, parsed.fix);
  else reader.error('warn_signal', parsed.message, parsed.fix);
  return null;
}

/** "127.0.0.1:6817", "localhost:80", "[::1]:6817". */
export function parseListen(text: string): ListenAddress | undefined {
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/.exec(text.trim());
  if (!match) return undefined;
  const port = Number(match[3]);
  return port <= 65535 ? { host: match[1] ?? match[2], port } : undefined;
}

const SYNTAX_FIXES: readonly [RegExp, string][] = [
  [/redefine/, 'each key and [table] may appear once: remove the repeat, or write [[name]] for a list of tables'],
  [/unfinished|unterminated|control characters|newlines are not allowed/, 'close the string, array or table that starts here'],
  [/invalid value|unexpected/, 'quote text values ("easy", "16G"); numbers and true/false stay bare'],
];

function syntaxError(error: TomlError, file: string, index: SourceIndex): ConfigError {
  const summary = error.message.replace(/^Invalid TOML document:\s*/, '').split('\n')[0];
  const fix = SYNTAX_FIXES.find(([pattern]) => pattern.test(summary))?.[1] ?? 'see docs/cluster.example.toml for the form of each key';
  return { file, line: error.line, key: index.pathAt(error.line), message: `TOML syntax: ${summary} (column ${error.column})`, fix };
}

/**
 * The configuration `npm start` runs without a cluster.toml: one partition
 * "batch" over node01..node16 (8 CPUs, 16 GiB each), easy backfilling,
 * first-fit placement, the API on 127.0.0.1:6817.
 */
/** node01..nodeNN (at least two digits), as virtual agents name their nodes. */
export function virtualNodeNames(count: number): string[] {
  return expandHostlist(`node[${'1'.padStart(Math.max(2, String(count).length), '0')}-${count}]`);
}

/** The embedded defaults: 16 nodes of 8 CPUs (or `shape`), one partition, easy, first-fit, 127.0.0.1:6817. */
export function defaultClusterConfig(dataDir: string, shape: { count: number; cpus: number } = { count: 16, cpus: 8 }): ClusterConfig {
  const names = virtualNodeNames(shape.count);
  const absoluteDataDir = resolve(dataDir);
  return {
    name: CLUSTER_DEFAULTS.name,
    policy: CLUSTER_DEFAULTS.policy,
    placement: CLUSTER_DEFAULTS.placement,
    listen: DEFAULT_LISTEN,
    dataDir: absoluteDataDir,
    interactive: INTERACTIVE_DEFAULTS,
    socketPath: resolve(absoluteDataDir, CLUSTER_DEFAULTS.socket),
    nodeTimeoutSeconds: CLUSTER_DEFAULTS.nodeTimeoutSeconds,
    keepFinishedSeconds: CLUSTER_DEFAULTS.keepFinishedSeconds,
    warnSignal: null,
    warnBeforeLimitSeconds: CLUSTER_DEFAULTS.warnBeforeLimitSeconds,
    killGraceSeconds: CLUSTER_DEFAULTS.killGraceSeconds,
    maxPendingPerUser: CLUSTER_DEFAULTS.maxPendingPerUser,
    maxPendingScriptMiB: CLUSTER_DEFAULTS.maxPendingScriptMiB,
    maxSubmitRate: CLUSTER_DEFAULTS.maxSubmitRate,
    maxConnections: CLUSTER_DEFAULTS.maxConnections,
    messageTimeoutSeconds: CLUSTER_DEFAULTS.messageTimeoutSeconds,
    maxStreamsPerUser: CLUSTER_DEFAULTS.maxStreamsPerUser,
    nodes: names.map((name) => ({ name, cpus: shape.cpus, memoryMiB: 16 * 1024, features: [] })),
    partitions: [{ name: 'batch', nodes: names, isDefault: true, maxTimeSeconds: null, maxNodes: null, priority: 1 }],
    defaultPartition: 'batch',
    admins: [],
    allowRootJobs: true,
    jwtKeyPath: resolve(absoluteDataDir, CLUSTER_DEFAULTS.jwtKey),
  };
}
