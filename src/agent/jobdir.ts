// The job directory, the agent's side of a job supervisor (supervisor.ts):
// spec.json, status.json and control.sock with their types, and what the agent
// calls to write a spec, launch the supervisor, read how the job is doing and
// ask for signals. The supervisor imports what it shares from here; importing
// this module starts nothing.

import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { createConnection } from 'node:net';
import { constants as osConstants } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isAlive, processStartTicks } from '../os/processes.js';
import type { CgroupMode } from './cgroup.js';
import type { InteractiveSpec } from './session.js';

// The agent's modules take these from here with the rest of a job directory's helpers.
export { isAlive, procStat, processStartTicks } from '../os/processes.js';

export type SignalName = NodeJS.Signals;
export type EndState = 'COMPLETED' | 'FAILED' | 'TIMEOUT' | 'OUT_OF_MEMORY' | 'CANCELLED' | 'PREEMPTED';

/** JOBDIR/spec.json: what the agent asks the supervisor to run. */
export interface SupervisorSpec {
  readonly jobId: number;
  /** Run directly when executable, else with /bin/sh; relative to workingDir. */
  readonly script: string;
  readonly args: readonly string[];
  readonly workingDir: string;
  /** The job's whole environment: nothing of the supervisor's is added. */
  readonly env: Readonly<Record<string, string>>;
  /** Appended to, created if missing; relative to workingDir. */
  readonly stdoutPath: string;
  readonly stderrPath: string;
  readonly memoryMiB: number | null;
  readonly timeLimitSeconds: number | null;
  readonly warnSignal: SignalName;
  /** The warning signal comes this long before the limit; 0 (or not less than the limit): none. */
  readonly warnBeforeSeconds: number;
  /** The warning signal goes to the batch shell only (sbatch's `--signal=B:`), else to the job's whole process group. */
  readonly warnBatchOnly: boolean;
  /** The submitter's umask: new output files get 0666 & ~umask. */
  readonly umask: number;
  /** `append` (sbatch's default) or `truncate` an existing output file. */
  readonly openMode: 'append' | 'truncate';
  /** SIGKILL this long after the limit's (or a cancel's) SIGTERM. */
  readonly killGraceSeconds: number;
  /** Cgroup path (as in /proc/self/cgroup) under which job cgroups go; null: the supervisor's own. */
  readonly cgroupParent: string | null;
  /** 'auto' detects; a forced v2/v1 that is not available fails the job. */
  readonly cgroupMode: 'auto' | CgroupMode;
  /** Run the job with these ids (both or neither; a supervisor not running as root can only use its own); null: as the supervisor. */
  readonly uid: number | null;
  readonly gid: number | null;
  /**
   * The job checkpoints itself (seed 000 2.4): `periodicSignal` every
   * `intervalSeconds` (null: none), `preemptSignal` `durationSeconds` before
   * the time limit (then SIGKILL at the limit). Null: a plain job.
   */
  readonly checkpoint: CheckpointSignals | null;
  /** An interactive job (session.ts): its stdio is a terminal or pipes streamed over stream.sock, not the output files; null: a batch job. */
  readonly interactive: InteractiveSpec | null;
}

export interface CheckpointSignals {
  readonly periodicSignal: SignalName;
  readonly preemptSignal: SignalName;
  readonly intervalSeconds: number | null;
  readonly durationSeconds: number;
}

type Defaulted = 'warnSignal' | 'warnBeforeSeconds' | 'warnBatchOnly' | 'umask' | 'openMode' | 'killGraceSeconds' | 'cgroupParent' | 'cgroupMode' | 'uid' | 'gid' | 'checkpoint' | 'interactive';
export type SupervisorSpecInput = Omit<SupervisorSpec, Defaulted> & Partial<Pick<SupervisorSpec, Defaulted>>;

export const SPEC_DEFAULTS: Pick<SupervisorSpec, Defaulted> = {
  warnSignal: 'SIGUSR1', warnBeforeSeconds: 0, warnBatchOnly: false, umask: 0o022, openMode: 'append', killGraceSeconds: 30, cgroupParent: null, cgroupMode: 'auto', uid: null, gid: null,
  checkpoint: null,
  interactive: null,
};

export interface SignalSent {
  readonly signal: SignalName;
  readonly time: string;
  readonly why: 'warning' | 'time limit' | 'kill grace' | 'cancel' | 'request' | 'checkpoint' | 'preempt' | 'suspend' | 'resume';
}

export interface StatusBase {
  readonly jobId: number | null;
  readonly supervisorPid: number;
  /** With the pid, identifies the supervisor across pid reuse (see isAlive). */
  readonly supervisorStartTicks: number | null;
  readonly mode: CgroupMode | null;
  readonly modeReason: string | null;
  readonly cgroup: readonly string[];
}

export interface RunningStatus extends StatusBase {
  readonly state: 'RUNNING';
  readonly pid: number;
  /** The job leads its own session and process group: pgid = pid. */
  readonly pgid: number;
  readonly startTime: string;
  /** When the time limit comes: moved later by the time the job spent suspended. */
  readonly deadline: string | null;
  /** Stopped by a suspend request (absent: running). */
  readonly suspended?: boolean;
}

export interface EndedStatus extends StatusBase {
  readonly state: EndState;
  readonly pid: number | null;
  readonly pgid: number | null;
  readonly startTime: string | null;
  readonly endTime: string;
  /** The script's exit code; null when a signal ended it. */
  readonly exitCode: number | null;
  readonly signal: SignalName | null;
  readonly cpuSeconds: number | null;
  /** cpuSeconds split (absent in statuses written before they were measured). */
  readonly userCpuSeconds?: number | null;
  readonly systemCpuSeconds?: number | null;
  readonly maxRssKiB: number | null;
  /** Why it ended so (null for COMPLETED): the limit, the cancel's reason, the exit code, a setup failure. */
  readonly reason: string | null;
  readonly signalsSent: readonly SignalSent[];
}

export type SupervisorStatus = RunningStatus | EndedStatus;

export interface ControlRequest {
  readonly signal: SignalName;
  readonly cancel?: boolean;
  readonly reason?: string;
  /** A preemption: `signal` now, SIGKILL `graceSeconds` later unless the job has exited; it ends PREEMPTED. */
  readonly preempt?: boolean;
  readonly graceSeconds?: number;
  /** Stop every process of the job (SIGSTOP, or the cgroup v2 freezer) and hold the time limit; `resume` continues both. */
  readonly suspend?: boolean;
  readonly resume?: boolean;
}

/**
 * The job's time limit changed (scontrol update TimeLimit=): seconds from the job's start (time it spent
 * suspended not counted), null for none. The supervisor arms its timers again; a limit already passed ends the
 * job at once (TIMEOUT).
 */
export interface TimeLimitRequest {
  readonly timeLimitSeconds: number | null;
}

export type ControlReply = { readonly ok: true; readonly pid: number } | { readonly ok: false; readonly error: string };
export type Result<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: string };

export const jobFiles = (jobDir: string) => ({
  spec: join(jobDir, 'spec.json'),
  status: join(jobDir, 'status.json'),
  socket: join(jobDir, 'control.sock'),
  log: join(jobDir, 'supervisor.log'),
  lock: join(jobDir, 'supervisor.lock'),
  /** An interactive job's stream (session.ts), root-only. */
  stream: join(jobDir, 'stream.sock'),
  /** An interactive job's launch description on a terminal (taras-exec --pty reads it as root), root-only. */
  launch: join(jobDir, 'launch'),
});

/** sun_path holds 108 bytes with the terminating NUL. */
export const MAX_SOCKET_PATH_BYTES = 107;
const SUPERVISOR_SCRIPT = fileURLToPath(new URL('./supervisor.js', import.meta.url));

/**
 * A supervisor's process title (ps, /proc/PID/comm) from the moment it records
 * SIGTERM and SIGINT (supervisor.ts stopSignals): `taras-sv standby`, then
 * `taras-sv JOBDIR`. Before that, Node's own handler would end it at a SIGTERM.
 */
export const SUPERVISOR_TITLE = 'taras-sv';

// ---- spec ---------------------------------------------------------------

export const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
export const isSignalName = (value: unknown): value is SignalName => typeof value === 'string' && value in osConstants.signals;
const isNonNegative = (value: unknown): boolean => typeof value === 'number' && Number.isFinite(value) && value >= 0;
export const isPositiveOrNull = (value: unknown): boolean => value === null || (isNonNegative(value) && (value as number) > 0);
const isString = (value: unknown): boolean => typeof value === 'string' && value !== '';
const isIdOrNull = (value: unknown): boolean => value === null || (Number.isInteger(value) && (value as number) >= 0 && (value as number) < 2 ** 32 - 1);

const isInteractiveOrNull = (value: unknown): boolean => value === null || (isRecord(value) && typeof value.pty === 'boolean'
  && [value.cols, value.rows].every((n) => Number.isInteger(n) && (n as number) >= 1 && (n as number) <= 10_000)
  && isPositiveOrNull(value.graceSeconds) && value.graceSeconds !== null && isNonNegative(value.idleSeconds) && isNonNegative(value.warnSeconds)
  && Number.isInteger(value.bufferBytes) && (value.bufferBytes as number) >= 1024);

/** Validates spec.json; the error names the file, every bad field and what it should hold. */
export function parseSpec(text: string, file: string): Result<SupervisorSpec> {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    return { ok: false, error: `${file}: not valid JSON (${(error as Error).message}); write it with prepareJobDir` };
  }
  if (!isRecord(raw)) return { ok: false, error: `${file}: expected a JSON object` };
  const errors: string[] = [];
  const take = <T>(name: keyof SupervisorSpec, expected: string, valid: (value: unknown) => boolean): T => {
    const value = raw[name] === undefined ? (SPEC_DEFAULTS as Record<string, unknown>)[name] : raw[name];
    if (value === undefined || !valid(value)) errors.push(`field "${name}": expected ${expected}, got ${JSON.stringify(raw[name]) ?? 'nothing'}`);
    return value as T;
  };
  const spec: SupervisorSpec = {
    jobId: take('jobId', 'a positive integer', (v) => Number.isInteger(v) && (v as number) > 0),
    script: take('script', 'a path', isString),
    args: take('args', 'a list of strings', (v) => Array.isArray(v) && v.every((a) => typeof a === 'string')),
    workingDir: take('workingDir', 'an absolute path', (v) => typeof v === 'string' && isAbsolute(v)),
    env: take('env', 'an object of strings', (v) => isRecord(v) && Object.values(v).every((e) => typeof e === 'string')),
    stdoutPath: take('stdoutPath', 'a path', isString),
    stderrPath: take('stderrPath', 'a path', isString),
    memoryMiB: take('memoryMiB', 'a positive number of MiB or null', isPositiveOrNull),
    timeLimitSeconds: take('timeLimitSeconds', 'a positive number of seconds or null', isPositiveOrNull),
    warnSignal: take('warnSignal', 'a signal name such as "SIGUSR1"', isSignalName),
    warnBeforeSeconds: take('warnBeforeSeconds', 'seconds, 0 or more', isNonNegative),
    warnBatchOnly: take('warnBatchOnly', 'true or false', (v) => typeof v === 'boolean'),
    umask: take('umask', 'an integer from 0 to 0o777 (511)', (v) => Number.isInteger(v) && (v as number) >= 0 && (v as number) <= 0o777),
    openMode: take('openMode', '"append" or "truncate"', (v) => v === 'append' || v === 'truncate'),
    killGraceSeconds: take('killGraceSeconds', 'seconds, 0 or more', isNonNegative),
    cgroupParent: take('cgroupParent', 'a cgroup path starting with "/" or null', (v) => v === null || (typeof v === 'string' && v.startsWith('/'))),
    cgroupMode: take('cgroupMode', '"auto", "v2", "v1" or "rlimit"', (v) => ['auto', 'v2', 'v1', 'rlimit'].includes(v as string)),
    uid: take('uid', 'a user id or null', isIdOrNull),
    gid: take('gid', 'a group id or null', isIdOrNull),
    checkpoint: take('checkpoint', 'null or {periodicSignal, preemptSignal, intervalSeconds, durationSeconds}', (v) => v === null || (isRecord(v)
      && isSignalName(v.periodicSignal) && isSignalName(v.preemptSignal) && isPositiveOrNull(v.intervalSeconds) && isNonNegative(v.durationSeconds) && (v.durationSeconds as number) > 0)),
    interactive: take('interactive', 'null or {pty, cols, rows, graceSeconds, idleSeconds, warnSeconds, bufferBytes}', isInteractiveOrNull),
  };
  if ((spec.uid === null) !== (spec.gid === null)) errors.push(`fields "uid" and "gid": give both or neither, got uid ${JSON.stringify(spec.uid)} and gid ${JSON.stringify(spec.gid)}`);
  if (errors.length > 0) return { ok: false, error: `${file}: ${errors.join('; ')}` };
  const inWorkingDir = (path: string): string => resolve(spec.workingDir, path);
  return { ok: true, value: { ...spec, script: inWorkingDir(spec.script), stdoutPath: inWorkingDir(spec.stdoutPath), stderrPath: inWorkingDir(spec.stderrPath) } };
}

// ---- files and processes ------------------------------------------------

export function writeJsonAtomically(file: string, value: unknown, mode = 0o600): void {
  const temporary = `${file}.${process.pid}.tmp`;
  const fd = openSync(temporary, 'w', mode);
  try {
    writeSync(fd, `${JSON.stringify(value, null, 2)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temporary, file);
}

/** The end of a job that never started: FAILED, and why. */
export function notStartedStatus(base: StatusBase, reason: string): EndedStatus {
  return {
    ...base, state: 'FAILED', pid: null, pgid: null, startTime: null, endTime: new Date().toISOString(),
    exitCode: null, signal: null, cpuSeconds: null, maxRssKiB: null, reason, signalsSent: [],
  };
}

// ---- the agent's side ---------------------------------------------------

/**
 * Records in jobDir that the job was refused before any supervisor ran (the
 * agent cannot run it as its user), so it is reported like any other end.
 */
export function recordNotStarted(jobDir: string, jobId: number, reason: string): void {
  mkdirSync(jobDir, { recursive: true, mode: 0o700 });
  const base: StatusBase = { jobId, supervisorPid: process.pid, supervisorStartTicks: processStartTicks(process.pid), mode: null, modeReason: null, cgroup: [] };
  writeJsonAtomically(jobFiles(jobDir).status, notStartedStatus(base, reason));
}

/** Creates jobDir and writes spec.json (defaults filled in) after validating it. */
export function prepareJobDir(jobDir: string, input: SupervisorSpecInput): Result<SupervisorSpec> {
  const files = jobFiles(jobDir);
  const text = JSON.stringify({ ...SPEC_DEFAULTS, ...input }, null, 2);
  const parsed = parseSpec(text, files.spec);
  if (!parsed.ok) return parsed;
  if (Buffer.byteLength(files.socket) > MAX_SOCKET_PATH_BYTES) return { ok: false, error: `${files.socket} is longer than a Unix socket path may be (${MAX_SOCKET_PATH_BYTES} bytes): use a shorter job directory` };
  mkdirSync(jobDir, { recursive: true, mode: 0o700 });
  writeJsonAtomically(files.spec, JSON.parse(text), 0o600); // the environment may hold secrets
  return parsed;
}

/**
 * Starts the supervisor of jobDir in a new session (setsid), its output in
 * supervisor.log, not waited for: it outlives the caller and the caller's
 * process group. Returns its pid; the job's pid appears in status.json.
 */
export function launchSupervisor(jobDir: string): Result<number> {
  const files = jobFiles(jobDir);
  if (!existsSync(files.spec)) return { ok: false, error: `${files.spec} is missing: call prepareJobDir first` };
  const logFd = openSync(files.log, 'a', 0o600);
  try {
    const child = spawn(process.execPath, [SUPERVISOR_SCRIPT, jobDir], {
      cwd: jobDir, detached: true, stdio: ['ignore', logFd, logFd], env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    });
    child.on('error', () => undefined); // reported below through the missing pid
    if (child.pid === undefined) return { ok: false, error: `cannot start ${process.execPath} ${SUPERVISOR_SCRIPT}` };
    child.unref();
    return { ok: true, value: child.pid };
  } finally {
    closeSync(logFd);
  }
}

/**
 * Launches supervisors from a warm standby: one supervisor process is always
 * started ahead (Node and its modules loaded, in its own session) and waits
 * on a pipe for a job directory, so a start costs a write instead of a Node
 * start (about 40 ms here). The standby that takes a job is replaced at once.
 * A standby whose launcher goes away (the agent exits or is killed) reads
 * end-of-file and exits without doing anything. Falls back to
 * `launchSupervisor` if the standby is gone.
 */
export class SupervisorLauncher {
  private standby: ChildProcess | null = null;
  private closed = false;

  /** @param logPath where standby supervisors write until they take a job (then they log in the job's supervisor.log) */
  constructor(private readonly logPath: string) {
    this.spawnStandby();
  }

  private spawnStandby(): void {
    if (this.closed) return;
    const logFd = openSync(this.logPath, 'a', 0o600);
    try {
      const child = spawn(process.execPath, [SUPERVISOR_SCRIPT, '--standby'], {
        cwd: '/', detached: true, stdio: ['pipe', logFd, logFd], env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      });
      child.on('error', () => undefined); // a failed spawn shows as a standby that has exited
      child.stdin!.on('error', () => undefined); // it died: the next launch falls back
      child.unref();
      (child.stdin as unknown as { unref?: () => void }).unref?.();
      this.standby = child;
    } finally {
      closeSync(logFd);
    }
  }

  /** As launchSupervisor: the supervisor's pid (the standby's, when one was ready). */
  launch(jobDir: string): Result<number> {
    const files = jobFiles(jobDir);
    if (!existsSync(files.spec)) return { ok: false, error: `${files.spec} is missing: call prepareJobDir first` };
    const ready = this.standby;
    this.standby = null;
    if (ready !== null && ready.pid !== undefined && ready.exitCode === null && ready.signalCode === null && ready.stdin?.writable) {
      ready.stdin.end(`${resolve(jobDir)}\n`);
      // The job is handed over: a failure to start the next standby must not report this start as failed.
      try {
        this.spawnStandby();
      } catch {
        this.standby = null; // the next launch starts its supervisor the slow way, and reports any error
      }
      return { ok: true, value: ready.pid };
    }
    this.spawnStandby();
    return launchSupervisor(jobDir);
  }

  /** The pid of the supervisor waiting for the next job (null if none is). */
  get standbyPid(): number | null {
    return this.standby?.pid ?? null;
  }

  /** The waiting standby exits (end of its pipe); supervisors of running jobs are not touched. */
  close(): void {
    this.closed = true;
    this.standby?.stdin?.end();
    this.standby = null;
  }
}

/** True once pid has its supervisor's title, that is once a SIGTERM to it is recorded, not fatal. */
export function takesStopSignals(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').startsWith(`${SUPERVISOR_TITLE} `);
  } catch {
    return false;
  }
}

/**
 * Cancels a supervisor that has no control socket yet (it is starting the job)
 * with SIGTERM, sent once it takes the signal (takesStopSignals): one still
 * loading would die of it and the job would end as never started, not
 * cancelled. Waits at most timeoutMs, then sends it anyway. False when the
 * process (pid with startTicks) is gone, or its start time is unknown.
 */
export async function cancelStartingSupervisor(pid: number, startTicks: number | null, timeoutMs = 10_000): Promise<boolean> {
  // Without its start time the pid could be another process's by the end of the wait: nothing is sent.
  if (startTicks === null) return false;
  const deadline = Date.now() + timeoutMs;
  while (!takesStopSignals(pid) && Date.now() < deadline) {
    if (!isAlive(pid, startTicks)) return false;
    await new Promise((resolveWait) => setTimeout(resolveWait, 10));
  }
  if (!isAlive(pid, startTicks)) return false;
  try {
    process.kill(pid, 'SIGTERM');
    return true;
  } catch {
    return false;
  }
}

/** The job's status as the supervisor last wrote it; null before it has written any. */
export function readStatus(jobDir: string): SupervisorStatus | null {
  const file = jobFiles(jobDir).status;
  if (!existsSync(file)) return null;
  return JSON.parse(readFileSync(file, 'utf8')) as SupervisorStatus;
}

/** Polls status.json until `accept` holds or timeoutMs passes (then the last status seen, or null). */
export async function waitForStatus(jobDir: string, accept: (status: SupervisorStatus) => boolean, timeoutMs: number): Promise<SupervisorStatus | null> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = readStatus(jobDir);
    if ((status !== null && accept(status)) || Date.now() >= deadline) return status;
    await new Promise((resolveWait) => setTimeout(resolveWait, 25));
  }
}

export const hasEnded = (status: SupervisorStatus | null): status is EndedStatus => status !== null && status.state !== 'RUNNING';

/** Why the socket could not be reached, from the status file: ended, not started, or supervisor gone. */
function unreachable(jobDir: string, error: NodeJS.ErrnoException): string {
  const status = readStatus(jobDir);
  if (status === null) return 'the supervisor has not started the job yet';
  if (hasEnded(status)) return `the job has ended (${status.state})`;
  if (!isAlive(status.supervisorPid, status.supervisorStartTicks)) return `the supervisor (pid ${status.supervisorPid}) is gone; the job (pid ${status.pid}) is unsupervised`;
  return `cannot reach ${jobFiles(jobDir).socket}: ${error.code ?? error.message}`;
}

/**
 * Asks the job's supervisor to send `signal` to the job's process group. With
 * cancel, the job ends as CANCELLED (SIGKILL follows after the kill grace).
 * Works from any process, such as an agent restarted after the job started.
 */
export function requestSignal(
  jobDir: string, signal: SignalName,
  options: { cancel?: boolean; reason?: string; timeoutMs?: number } & Pick<ControlRequest, 'preempt' | 'graceSeconds' | 'suspend' | 'resume'> = {},
): Promise<ControlReply> {
  const { timeoutMs, ...rest } = options;
  return askSupervisor(jobDir, { signal, ...rest, cancel: options.cancel ?? false }, timeoutMs);
}

/** Tells the job's supervisor its new time limit (TimeLimitRequest); from any process, as requestSignal. */
export function requestTimeLimit(jobDir: string, timeLimitSeconds: number | null, timeoutMs?: number): Promise<ControlReply> {
  return askSupervisor(jobDir, { timeLimitSeconds }, timeoutMs);
}

/** One request on the supervisor's control socket, and its answer (or why there is none). */
function askSupervisor(jobDir: string, request: ControlRequest | TimeLimitRequest, timeoutMs = 2000): Promise<ControlReply> {
  return new Promise((resolveReply) => {
    const socket = createConnection(jobFiles(jobDir).socket);
    let buffer = '';
    let settled = false;
    const settle = (reply: ControlReply): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolveReply(reply);
    };
    const timer = setTimeout(() => settle({ ok: false, error: `no answer from the supervisor within ${timeoutMs} ms` }), timeoutMs);
    socket.setEncoding('utf8');
    socket.on('connect', () => socket.write(`${JSON.stringify(request)}\n`));
    socket.on('data', (chunk: string) => {
      buffer += chunk;
      const newline = buffer.indexOf('\n');
      if (newline < 0) return;
      try {
        settle(JSON.parse(buffer.slice(0, newline)) as ControlReply);
      } catch {
        settle({ ok: false, error: `the supervisor answered something unreadable: ${buffer.slice(0, newline)}` });
      }
    });
    socket.on('error', (error) => settle({ ok: false, error: unreachable(jobDir, error) }));
    socket.on('close', () => settle({ ok: false, error: 'the supervisor closed the connection without answering' }));
  });
}
