// The job supervisor: one small process per job that starts the job's script,
// enforces its time limit, forwards signal requests arriving on a Unix socket
// and records how the job ended in status.json. It runs in a session of its
// own, detached from the agent, so the job keeps running and its exit status
// is recorded when the agent dies; a restarted agent, which cannot wait on a
// process it did not start, reads the status file and signals through the
// socket (slurmstepd's role for slurmd). It runs as root to start jobs as the
// users who submitted them (spec uid/gid), or as that user for their own jobs;
// as root it never touches a job's path or environment: the exec helper
// (native/taras-exec.c) drops to the user before it does.
// Entry point: node dist/src/agent/supervisor.js JOBDIR; the agent drives it
// through jobdir.ts.

import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, closeSync, existsSync, openSync, readdirSync, readFileSync, readlinkSync, realpathSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer, type Server } from 'node:net';
import { constants as osConstants } from 'node:os';
import { resolve } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { detectCgroupMode, JobCgroup, probeCgroupV1, probeCgroupV2, type CgroupUsage, type ModeDetection } from './cgroup.js';
import {
  isPositiveOrNull, isRecord, isSignalName, jobFiles, MAX_SOCKET_PATH_BYTES, notStartedStatus, parseSpec, processStartTicks, procStat, SUPERVISOR_TITLE, writeJsonAtomically,
  type ControlReply, type EndedStatus, type EndState, type Result, type RunningStatus, type SignalName, type SignalSent, type StatusBase,
  type SupervisorSpec,
} from './jobdir.js';
import { InteractiveSession, type ClientFrame } from './session.js';
import { lookupUserById, type UnixUser } from './users.js';

/** USER_HZ, the unit of /proc times: 100 on every Linux architecture Node runs on. */
const CLOCK_TICKS_PER_SECOND = 100;
const RSS_SAMPLE_INTERVAL_MS = 500;

// ---- the job's processes ------------------------------------------------

/** CPU time of the supervisor's waited-for children (the job and the descendants it waited for): user, system and their sum. */
function childrenCpuTimes(): Pick<CgroupUsage, 'cpuSeconds' | 'userSeconds' | 'systemSeconds'> {
  const fields = procStat('self');
  if (!fields) return { cpuSeconds: null, userSeconds: null, systemSeconds: null };
  const user = Number(fields[13]) / CLOCK_TICKS_PER_SECOND; // cutime
  const system = Number(fields[14]) / CLOCK_TICKS_PER_SECOND; // cstime
  return { cpuSeconds: user + system, userSeconds: user, systemSeconds: system };
}

/** Processes in the job's session (the job called setsid, so its session id is its pid). */
function sessionMembers(sessionId: number): number[] {
  const members: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const fields = procStat(Number(name));
    if (fields && Number(fields[3]) === sessionId) members.push(Number(name));
  }
  return members;
}

function peakRssKiB(pid: number): number {
  try {
    const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : 0;
  } catch {
    return 0;
  }
}

const shellQuote = (text: string): string => `'${text.replace(/'/g, `'\\''`)}'`;

/** Written on the wrapper's fd 3 once the supervisor has moved it into the job's cgroup. */
const JOINED = 'joined';

/**
 * The job starts as this sh, which waits until the supervisor has moved it
 * into the cgroup (the job's user may not write cgroup.procs) or sets the
 * rlimit, then execs the script.
 */
function wrapperScript(waitForCgroup: boolean, virtualMemoryKiB: number | null): string {
  const lines: string[] = [];
  if (waitForCgroup) {
    lines.push(`read -r joined <&3 && [ "$joined" = ${JOINED} ] || { echo ${shellQuote("taras: the supervisor did not move the job into its cgroup")} >&2; exit 125; }`, 'exec 3<&-');
  }
  if (virtualMemoryKiB !== null) lines.push(`ulimit -v ${virtualMemoryKiB} || exit 125`);
  lines.push('if [ -x "$1" ]; then exec "$@"; else exec /bin/sh "$@"; fi');
  return lines.join('\n');
}

function chooseMode(spec: SupervisorSpec): Result<ModeDetection> {
  if (spec.cgroupMode === 'auto') return { ok: true, value: detectCgroupMode(spec.cgroupParent) };
  if (spec.cgroupMode === 'rlimit') return { ok: true, value: { mode: 'rlimit', reason: 'rlimit mode requested in spec.json', layout: null } };
  const probe = spec.cgroupMode === 'v2' ? probeCgroupV2(spec.cgroupParent) : probeCgroupV1(spec.cgroupParent);
  if (!probe.ok) return { ok: false, error: `cgroup ${spec.cgroupMode} was requested but ${probe.reason}` };
  return { ok: true, value: { mode: spec.cgroupMode, reason: probe.reason, layout: probe.layout } };
}

/** Where the log goes once a standby supervisor has taken a job (its supervisor.log); else stderr. */
let logFd: number | null = null;

const log = (message: string): void => {
  const line = `${new Date().toISOString()} supervisor ${process.pid}: ${message}\n`;
  if (logFd === null) process.stderr.write(line);
  else writeSync(logFd, line);
};

// ---- the supervisor -----------------------------------------------------

/** One running job: its timers, the control socket and the facts its end status is made of. */
class Supervision {
  private readonly signalsSent: SignalSent[] = [];
  private readonly cancelTimers: Array<() => void> = [];
  /** The time limit's and the periodic checkpoint's timers: held while the job is suspended. */
  private limitTimers: Array<() => void> = [];
  /** The periodic checkpoint signal's timer: held while suspended, kept (its phase too) when the limit changes. */
  private periodicTimers: Array<() => void> = [];
  private endCause: { readonly state: 'TIMEOUT' | 'CANCELLED' | 'PREEMPTED'; readonly reason: string } | null = null;
  /** When the time limit comes (performance.now() ms); moved later by each suspension. */
  private deadlineAt: number | null = null;
  /** The time limit (seconds, null: none): the spec's, until the controller changes it (scontrol update TimeLimit=). */
  private limitSeconds: number | null;
  /** performance.now() when the job started, and the time it has spent suspended since (closed suspensions): a new limit counts from the start. */
  private runStartedAt = 0;
  private suspendedMs = 0;
  /** performance.now() when the job was suspended; null while it runs. */
  private suspendedAt: number | null = null;
  private killArmed = false;
  /** The --signal warning was sent (once a run, even across a suspend and resume). */
  private warned = false;
  /** The main process has exited: later cancels and time limits change nothing. */
  private exited = false;
  /** The end status is written. */
  private ended = false;
  private sampledPeakRssKiB = 0;
  private server: Server | null = null;
  readonly startTime = new Date();

  constructor(
    private readonly files: ReturnType<typeof jobFiles>,
    private readonly spec: SupervisorSpec,
    private readonly base: StatusBase,
    private readonly cgroup: JobCgroup | null,
    private readonly child: { readonly pid: number },
    private readonly session: InteractiveSession | null,
  ) {
    this.limitSeconds = spec.timeLimitSeconds;
    if (session !== null) {
      const { handlers } = session;
      session.handlers = { ...handlers, expire: (state, reason) => this.terminate(state, reason, 'SIGHUP', state === 'TIMEOUT' ? 'time limit' : 'cancel') };
      session.armGraceIfDetached();
    }
  }

  /** `cancelledEarly`: a cancel (SIGTERM) that came while the job was being started: it ends the job at once. */
  async run(exited: Promise<[number | null, SignalName | null]>, cancelledEarly: string | null = null): Promise<void> {
    // Before anything says RUNNING: a SIGTERM that arrives once the status is out must end the job, not kill us.
    stopSignals.take((signal) => this.terminate('CANCELLED', signal === 'SIGTERM' ? 'the supervisor got SIGTERM (node shutdown?)' : 'the supervisor got SIGINT', 'SIGTERM', 'cancel'));
    if (cancelledEarly !== null) this.terminate('CANCELLED', cancelledEarly, 'SIGTERM', 'cancel');
    process.on('SIGHUP', () => undefined);
    await this.serveControlSocket();
    this.runStartedAt = performance.now();
    this.deadlineAt = this.limitSeconds === null ? null : this.runStartedAt + this.limitSeconds * 1000;
    this.writeRunning();
    log(`job ${this.spec.jobId} running as pid ${this.child.pid} (${this.base.mode})`);
    this.armTimeLimit();
    if (this.cgroup === null) {
      this.after(0.05, () => this.sampleRss()); // short jobs get at least one sample
      this.every(RSS_SAMPLE_INTERVAL_MS, () => this.sampleRss());
    }
    const [exitCode, signal] = await exited;
    await this.finish(exitCode, signal);
    await this.session?.close(2000); // the end reaches the client before the supervisor exits
  }

  /** Ends the job with SIGKILL and records a failure; for the supervisor's own errors. */
  abort(error: unknown): void {
    if (this.ended) return;
    this.sendSignal('SIGKILL', null);
    this.writeEnd({ state: 'FAILED', exitCode: null, signal: 'SIGKILL', reason: `supervisor error: ${(error as Error)?.message ?? String(error)}`, usage: null });
  }

  /** status.json while the job runs (or is suspended): the deadline as it stands. */
  private writeRunning(): void {
    const deadline = this.deadlineAt === null ? null : new Date(Date.now() + (this.deadlineAt - (this.suspendedAt ?? performance.now()))).toISOString();
    const running: RunningStatus = {
      ...this.base, state: 'RUNNING', pid: this.child.pid, pgid: this.child.pid, startTime: this.startTime.toISOString(), deadline,
      ...(this.suspendedAt === null ? {} : { suspended: true }),
    };
    writeJsonAtomically(this.files.status, running);
  }

  private after(seconds: number, action: () => void, timers = this.cancelTimers): void {
    const deadline = performance.now() + seconds * 1000;
    let handle: NodeJS.Timeout;
    const arm = (): void => {
      const left = deadline - performance.now();
      if (left <= 0) action();
      else handle = setTimeout(arm, Math.min(left, 2 ** 31 - 1)); // setTimeout's longest delay is about 24.8 days
    };
    arm();
    timers.push(() => clearTimeout(handle));
  }

  private every(intervalMs: number, action: () => void, timers = this.cancelTimers): void {
    const handle = setInterval(action, intervalMs);
    timers.push(() => clearInterval(handle));
  }

  /**
   * The timers of the limit as it stands (armed again, with the time left,
   * after a resume): the warning signal, the periodic checkpoint signal, and
   * at the limit SIGTERM or, for a job that checkpoints, its preemption signal
   * a checkpoint duration earlier and SIGKILL at the limit. `periodic` false:
   * the periodic checkpoint timer runs on (a new limit).
   */
  private armTimeLimit(periodic = true): void {
    const { warnBeforeSeconds, warnSignal, warnBatchOnly, checkpoint } = this.spec;
    const limit = this.limitSeconds;
    if (periodic && checkpoint !== null && checkpoint.intervalSeconds !== null) {
      this.every(checkpoint.intervalSeconds * 1000, () => {
        if (this.endCause === null) this.sendSignal(checkpoint.periodicSignal, 'checkpoint');
      }, this.periodicTimers);
    }
    if (this.deadlineAt === null || limit === null) return;
    const left = (this.deadlineAt - performance.now()) / 1000;
    const terminalWarning = this.spec.interactive?.warnSeconds ?? 0;
    if (this.session !== null && terminalWarning > 0 && terminalWarning < left) {
      const end = new Date(Date.now() + left * 1000);
      this.after(left - terminalWarning, () => this.session!.note(
        `job ${this.spec.jobId} reaches its time limit in ${formatMinutes(terminalWarning)} (at ${end.toISOString().slice(11, 19)} UTC) and will be ended then: save your work`), this.limitTimers);
    }
    // The warning goes once a run: a resume after it arms it again only if it was not sent yet. Within its time
    // already (a limit lowered into it), it goes at once, as Slurm sends it once the end is that near.
    if (warnBeforeSeconds > 0 && left > 0 && !this.warned) {
      this.after(Math.max(0, left - warnBeforeSeconds), () => {
        this.warned = true;
        this.sendSignal(warnSignal, 'warning', warnBatchOnly);
      }, this.limitTimers);
    }
    if (checkpoint === null) {
      this.after(left, () => this.terminate('TIMEOUT', `time limit of ${limit} s reached`, 'SIGTERM', 'time limit'), this.limitTimers);
      return;
    }
    // The last checkpoint ends by the limit: its signal comes a checkpoint duration before it, SIGKILL at it.
    const reason = `time limit of ${limit} s reached (preemption signal ${checkpoint.durationSeconds} s before it, to checkpoint)`;
    this.after(Math.max(0, left - checkpoint.durationSeconds), () => {
      if (this.exited || this.endCause !== null) return;
      this.endCause = { state: 'TIMEOUT', reason };
      this.sendSignal('SIGCONT', null);
      this.sendSignal(checkpoint.preemptSignal, 'preempt');
    }, this.limitTimers);
    this.after(left, () => this.terminate('TIMEOUT', reason, 'SIGKILL', 'time limit'), this.limitTimers);
  }

  /** The first of time limit and cancel decides the end state; SIGKILL follows after the grace. */
  private terminate(state: 'TIMEOUT' | 'CANCELLED' | 'PREEMPTED', reason: string, signal: SignalName, why: SignalSent['why'], graceSeconds = this.spec.killGraceSeconds): void {
    if (this.exited) return;
    this.endCause ??= { state, reason };
    this.resumeProcesses(); // a stopped job must run to handle the signal, as Slurm does
    // An interactive shell ignores SIGTERM: a terminal session ends with SIGHUP, as when its terminal goes away.
    if (this.session !== null && signal === 'SIGTERM') this.sendSignal('SIGHUP', why);
    this.sendSignal(signal, why);
    if (signal !== 'SIGKILL' && !this.killArmed) {
      this.killArmed = true;
      this.after(graceSeconds, () => this.sendSignal('SIGKILL', 'kill grace'));
    }
  }

  /** Every process of the job: its cgroup's, else its session's (the job leads both its session and its process group). */
  private jobProcesses(): number[] {
    return [...new Set([this.child.pid, ...(this.cgroup?.pids() ?? []), ...sessionMembers(this.child.pid)])];
  }

  /** SIGSTOP (or SIGCONT) to every process of the job, or the cgroup v2 freezer where there is one. */
  private stopProcesses(stop: boolean): void {
    if (this.cgroup?.freeze(stop)) return;
    for (const pid of this.jobProcesses()) {
      try {
        process.kill(pid, stop ? 'SIGSTOP' : 'SIGCONT');
      } catch {
        // gone
      }
    }
  }

  private resumeProcesses(): void {
    if (this.suspendedAt !== null) this.resume(false);
    else this.sendSignal('SIGCONT', null);
  }

  /** Stops the job and holds its limit: suspended time does not count against it. */
  private suspend(): string | null {
    // Already suspended: a request sent again (the controller restarted, or retried one that got through) is done.
    if (this.suspendedAt !== null) return null;
    if (this.endCause !== null) return `the job is ending (${this.endCause.state})`;
    this.suspendedAt = performance.now();
    for (const cancel of [...this.limitTimers, ...this.periodicTimers]) cancel();
    this.limitTimers = [];
    this.periodicTimers = [];
    this.stopProcesses(true);
    this.signalsSent.push({ signal: 'SIGSTOP', time: new Date().toISOString(), why: 'suspend' });
    this.writeRunning();
    return null;
  }

  /** Continues the job; its deadline moves later by the time it was suspended. `rearm` false: it is ending, no new timers. */
  private resume(rearm = true): string | null {
    if (this.suspendedAt === null) return null; // not suspended: a resume sent again is done
    const stoppedMs = performance.now() - this.suspendedAt;
    if (this.deadlineAt !== null) this.deadlineAt += stoppedMs;
    this.suspendedMs += stoppedMs;
    this.suspendedAt = null;
    this.stopProcesses(false);
    this.signalsSent.push({ signal: 'SIGCONT', time: new Date().toISOString(), why: 'resume' });
    if (rearm) this.armTimeLimit();
    if (!this.exited) this.writeRunning();
    log(`job ${this.spec.jobId} resumed after ${(stoppedMs / 1000).toFixed(1)} s suspended`);
    return null;
  }

  /**
   * A new time limit (the controller's: scontrol update TimeLimit=), counted from the job's start less the time it
   * spent suspended, as the first one was: the timers are armed again (at once when it is suspended no more),
   * and a limit already passed ends the job now with TIMEOUT. The --signal warning already sent is not sent
   * again. The same limit sent again (a controller that restarted) changes nothing.
   */
  private setTimeLimit(seconds: number | null): string | null {
    if (this.endCause !== null) return `the job is ending (${this.endCause.state})`;
    if (seconds === this.limitSeconds) return null;
    const was = this.limitSeconds;
    this.limitSeconds = seconds;
    this.deadlineAt = seconds === null ? null : this.runStartedAt + this.suspendedMs + seconds * 1000;
    log(`job ${this.spec.jobId}: time limit ${was ?? 'none'} -> ${seconds ?? 'none'} s`);
    if (this.suspendedAt !== null) {
      this.writeRunning(); // resume arms the timers with the new deadline
      return null;
    }
    for (const cancel of this.limitTimers) cancel();
    this.limitTimers = [];
    this.writeRunning();
    this.armTimeLimit(false);
    return null;
  }

  /**
   * Signals the job's whole process group (or, batchOnly, the batch shell
   * alone, as sbatch's `--signal=B:`); SIGKILL also reaches processes that
   * left the group but not the cgroup.
   */
  private sendSignal(signal: SignalName, why: SignalSent['why'] | null, batchOnly = false): boolean {
    let delivered = true;
    try {
      process.kill(batchOnly ? this.child.pid : -this.child.pid, signal);
    } catch {
      delivered = false;
    }
    if (signal === 'SIGKILL') this.cgroup?.killAll();
    if (why !== null && delivered) this.signalsSent.push({ signal, time: new Date().toISOString(), why });
    return delivered;
  }

  private sampleRss(): void {
    for (const pid of sessionMembers(this.child.pid)) this.sampledPeakRssKiB = Math.max(this.sampledPeakRssKiB, peakRssKiB(pid));
  }

  private handleRequest(line: string): ControlReply {
    let request: unknown;
    try {
      request = JSON.parse(line);
    } catch {
      return { ok: false, error: 'expected one JSON object per line, such as {"signal":"SIGTERM","cancel":true}' };
    }
    if (isRecord(request) && 'timeLimitSeconds' in request && request.signal === undefined) {
      if (!isPositiveOrNull(request.timeLimitSeconds)) return { ok: false, error: `expected {"timeLimitSeconds": a positive number of seconds or null}, got ${line}` };
      if (this.exited) return { ok: false, error: 'the job has ended' };
      const refused = this.setTimeLimit(request.timeLimitSeconds as number | null);
      return refused === null ? { ok: true, pid: this.child.pid } : { ok: false, error: refused };
    }
    if (!isRecord(request) || !isSignalName(request.signal)) return { ok: false, error: `expected {"signal": a signal name such as "SIGTERM"}, got ${line}` };
    if (this.exited) return { ok: false, error: 'the job has ended' };
    if (request.suspend === true || request.resume === true) {
      const refused = request.suspend === true ? this.suspend() : this.resume();
      return refused === null ? { ok: true, pid: this.child.pid } : { ok: false, error: refused };
    }
    if (request.preempt === true) {
      const grace = typeof request.graceSeconds === 'number' && request.graceSeconds >= 0 ? request.graceSeconds : this.spec.killGraceSeconds;
      const reason = typeof request.reason === 'string' && request.reason !== '' ? request.reason : 'preempted';
      this.terminate('PREEMPTED', reason, request.signal, 'preempt', grace);
    } else if (request.cancel === true) {
      const reason = typeof request.reason === 'string' && request.reason !== '' ? request.reason : 'cancel requested';
      this.terminate('CANCELLED', reason, request.signal, 'cancel');
    } else {
      this.sendSignal(request.signal, 'request');
    }
    return { ok: true, pid: this.child.pid };
  }

  private async serveControlSocket(): Promise<void> {
    if (existsSync(this.files.socket)) unlinkSync(this.files.socket);
    const server = createServer((connection) => {
      let buffer = '';
      connection.setEncoding('utf8');
      connection.on('error', () => undefined);
      connection.on('data', (chunk: string) => {
        buffer += chunk;
        for (let newline = buffer.indexOf('\n'); newline >= 0; newline = buffer.indexOf('\n')) {
          connection.write(`${JSON.stringify(this.handleRequest(buffer.slice(0, newline)))}\n`);
          buffer = buffer.slice(newline + 1);
        }
        if (buffer.length > 4096) connection.destroy();
      });
    });
    await new Promise<void>((resolveListen, rejectListen) => {
      server.once('error', rejectListen);
      server.listen(this.files.socket, () => resolveListen());
    });
    chmodSync(this.files.socket, 0o600); // only the agent's user may signal jobs
    this.server = server;
  }

  private async finish(exitCode: number | null, signal: SignalName | null): Promise<void> {
    this.exited = true;
    for (const cancel of [...this.cancelTimers, ...this.limitTimers, ...this.periodicTimers]) cancel();
    if (this.suspendedAt !== null) this.stopProcesses(false); // a frozen cgroup v2 holds its processes even against SIGKILL
    // The job is its main process: what it left running is killed, as Slurm does when a batch script ends.
    this.sendSignal('SIGKILL', null);
    for (const pid of this.cgroup === null ? sessionMembers(this.child.pid) : []) {
      try {
        process.kill(pid, 'SIGKILL'); // left the process group but not the session
      } catch {
        // gone
      }
    }
    let usage: CgroupUsage;
    if (this.cgroup !== null) {
      await this.cgroup.drain();
      usage = this.cgroup.usage();
      if (!(await this.cgroup.remove())) log(`could not remove the cgroup ${this.cgroup.dirs.join(', ')}`);
    } else {
      usage = { ...childrenCpuTimes(), peakMemoryKiB: this.sampledPeakRssKiB > 0 ? this.sampledPeakRssKiB : null, oomKills: null };
    }
    const ending = this.endCause
      ?? (usage.oomKills !== null && usage.oomKills > 0 ? { state: 'OUT_OF_MEMORY' as const, reason: `memory limit of ${this.spec.memoryMiB} MiB: ${usage.oomKills} process(es) killed by the OOM killer` } : null)
      ?? (exitCode === 0 ? { state: 'COMPLETED' as const, reason: null } : { state: 'FAILED' as const, reason: exitCode === null ? `killed by ${signal}` : `exit code ${exitCode}` });
    this.writeEnd({ ...ending, exitCode, signal, usage });
  }

  private writeEnd(end: { state: EndState; reason: string | null; exitCode: number | null; signal: SignalName | null; usage: CgroupUsage | null }): void {
    this.ended = true;
    const status: EndedStatus = {
      ...this.base, state: end.state, pid: this.child.pid, pgid: this.child.pid, startTime: this.startTime.toISOString(), endTime: new Date().toISOString(),
      exitCode: end.exitCode, signal: end.signal, cpuSeconds: end.usage?.cpuSeconds ?? null, maxRssKiB: end.usage?.peakMemoryKiB ?? null,
      userCpuSeconds: end.usage?.userSeconds ?? null, systemCpuSeconds: end.usage?.systemSeconds ?? null,
      reason: end.reason, signalsSent: this.signalsSent,
    };
    // The status goes last: whoever reads the end status finds no socket left to ask and the end in the log.
    this.server?.close();
    if (existsSync(this.files.socket)) unlinkSync(this.files.socket);
    log(`job ${this.spec.jobId} ended: ${status.state}${status.reason === null ? '' : ` (${status.reason})`}`);
    writeJsonAtomically(this.files.status, status);
    this.session?.finish({ state: status.state, exitCode: status.exitCode, signal: status.signal, reason: status.reason });
  }
}

/** Supervises the job of jobDir to its end; resolves to the supervisor's own exit code. */
export async function runSupervisor(jobDir: string): Promise<number> {
  const files = jobFiles(jobDir);
  try {
    closeSync(openSync(files.lock, 'wx'));
  } catch (error) {
    log(`not starting: ${files.lock} exists (${(error as NodeJS.ErrnoException).code}); a supervisor already ran for ${jobDir}`);
    return 1;
  }
  // A SIGTERM (a cancel) must not kill this root process and orphan the job: until the job runs under its
  // supervision, a cancel is only recorded (stopSignals); it stops the start, or ends the job as soon as it runs.
  stopSignals.listen(jobDir);
  const cancelledEarly = (): string | null =>
    stopSignals.early === null ? null : `cancelled (the supervisor got ${stopSignals.early}) before the job started`;
  let base: StatusBase = { jobId: null, supervisorPid: process.pid, supervisorStartTicks: processStartTicks(process.pid), mode: null, modeReason: null, cgroup: [] };
  const failBeforeStart = (reason: string): number => {
    writeJsonAtomically(files.status, notStartedStatus(base, reason));
    log(`job not started: ${reason}`);
    return 1;
  };

  if (Buffer.byteLength(files.socket) > MAX_SOCKET_PATH_BYTES) return failBeforeStart(`${files.socket} is longer than a Unix socket path may be (${MAX_SOCKET_PATH_BYTES} bytes): use a shorter job directory`);
  if (!existsSync(files.spec)) return failBeforeStart(`${files.spec} is missing: write it with prepareJobDir before launching`);
  const parsed = parseSpec(readFileSync(files.spec, 'utf8'), files.spec);
  if (!parsed.ok) return failBeforeStart(parsed.error);
  const spec = parsed.value;
  base = { ...base, jobId: spec.jobId };
  const mode = chooseMode(spec);
  if (!mode.ok) return failBeforeStart(mode.error);
  base = { ...base, mode: mode.value.mode, modeReason: mode.value.reason };

  let cgroup: JobCgroup | null = null;
  if (mode.value.layout !== null) {
    const created = JobCgroup.create(mode.value.layout, `taras-job-${spec.jobId}-${process.pid}`, spec.memoryMiB);
    if (!created.ok) return failBeforeStart(created.error);
    cgroup = created.value;
    base = { ...base, cgroup: cgroup.dirs };
  }
  let session: InteractiveSession | null = null;
  if (spec.interactive !== null) {
    if (Buffer.byteLength(files.stream) > MAX_SOCKET_PATH_BYTES) return failBeforeStart(`${files.stream} is longer than a Unix socket path may be (${MAX_SOCKET_PATH_BYTES} bytes): use a shorter job directory`);
    session = new InteractiveSession(files.stream, spec.jobId, spec.interactive, log);
    await session.listen();
    const outcome = stopSignals.early !== null ? 'cancelled' : await session.waitForClient();
    if (outcome !== 'attached') {
      const reason = outcome === 'cancelled' ? 'cancelled before a client attached: the command was not run'
        : `no client attached to the interactive session within ${spec.interactive.graceSeconds} s of its start (interactive_grace): the command was not run`;
      await cgroup?.remove();
      writeJsonAtomically(files.status, { ...notStartedStatus(base, reason), state: 'CANCELLED' });
      log(`job not started: ${reason}`);
      await session.close(0);
      return 1;
    }
  }
  const cancelled = cancelledEarly();
  if (cancelled !== null) {
    await cgroup?.remove();
    writeJsonAtomically(files.status, { ...notStartedStatus(base, cancelled), state: 'CANCELLED' });
    log(`job not started: ${cancelled}`);
    await session?.close(0);
    return 1;
  }
  const started = await startJob(spec, cgroup, session, files.launch);
  if (!started.ok) {
    await cgroup?.remove();
    session?.finish({ state: 'FAILED', exitCode: null, signal: null, reason: started.error });
    const code = failBeforeStart(started.error);
    await session?.close(1000);
    return code;
  }
  const { child, exited } = started.value;
  const supervision = new Supervision(files, spec, base, cgroup, child, session);
  process.on('uncaughtException', (error) => {
    log(`error: ${error.stack ?? error.message}`);
    supervision.abort(error);
    process.exit(1);
  });
  try {
    await supervision.run(exited, cancelledEarly());
    return 0;
  } catch (error) {
    log(`error: ${(error as Error).stack ?? String(error)}`);
    supervision.abort(error);
    return 1;
  }
}

type StartedJob = { child: { readonly pid: number }; exited: Promise<[number | null, SignalName | null]> };

const formatMinutes = (seconds: number): string => (seconds >= 120 ? `${Math.round(seconds / 60)} min` : `${Math.round(seconds)} s`);

/** The ids a job runs with when they are not the supervisor's own, and whose they are. */
interface JobCredentials {
  readonly uid: number;
  readonly gid: number;
  /** Null for a uid without a passwd entry. */
  readonly user: UnixUser | null;
}

function jobCredentials(spec: SupervisorSpec): Result<JobCredentials | null> {
  if (spec.uid === null || spec.gid === null) return { ok: true, value: null };
  const ownUid = process.getuid!();
  if (spec.uid === ownUid && spec.gid === process.getgid!()) return { ok: true, value: null };
  const user = lookupUserById(spec.uid);
  const label = user === null ? `uid ${spec.uid}` : `${user.name} (uid ${spec.uid})`;
  if (ownUid !== 0) return { ok: false, error: `the supervisor runs as uid ${ownUid} and cannot start jobs as ${label}: run the agent as root` };
  return { ok: true, value: { uid: spec.uid, gid: spec.gid, user } };
}

/**
 * The exec helper (native/taras-exec.c, built by node-gyp at npm install):
 * it drops to the job's user before it touches any of the job's paths or
 * environment, then opens the output files and execs the job. Node cannot do
 * this itself: it has no exec, and spawn's uid/gid would run the open and
 * chdir as root (and drop every supplementary group).
 */
export const EXEC_HELPER = fileURLToPath(new URL('../../../build/Release/taras-exec', import.meta.url));

/** fds of the helper (see native/taras-exec.c): the launch description, the error pipe, the cgroup gate. */
const [DESCRIPTION_FD, ERROR_FD, GATE_FD] = [3, 4, 5];

/** NUL-separated launch description the helper reads on fd 3 (its format is documented in taras-exec.c). */
function launchDescription(spec: SupervisorSpec, env: Record<string, string>, argv: readonly string[]): Buffer {
  // A NUL cannot be passed to execve; a name with "=" would be read as another variable.
  const entries = Object.entries(env).filter(([name, value]) => name !== '' && !/[=\0]/.test(name) && !value.includes('\0')).map(([name, value]) => `${name}=${value}`);
  const strings = ['taras-exec 1', spec.workingDir, spec.stdoutPath, spec.stderrPath, spec.umask.toString(8), spec.openMode, spec.script,
    String(entries.length), ...entries, String(argv.length), ...argv];
  return Buffer.from(strings.map((text) => `${text}\0`).join(''));
}

/** Everything the helper wrote on its error pipe: empty once it has exec'd the job. */
function readAll(stream: Readable): Promise<string> {
  return new Promise((resolveRead) => {
    let text = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => (text += chunk));
    stream.on('error', () => resolveRead(text));
    stream.on('end', () => resolveRead(text));
    stream.on('close', () => resolveRead(text));
  });
}

/**
 * Starts the job through the exec helper, with no environment and no
 * argument from the job while it is root, as the leader of a new session and
 * process group; in cgroup mode moves it into the job's cgroup before it may
 * exec the script.
 */
async function startJob(spec: SupervisorSpec, cgroup: JobCgroup | null, session: InteractiveSession | null, launchFile: string): Promise<Result<StartedJob>> {
  const credentials = jobCredentials(spec);
  if (!credentials.ok) return credentials;
  const runAs = credentials.value;
  if (!existsSync(EXEC_HELPER)) return { ok: false, error: `the exec helper ${EXEC_HELPER} is missing: run \`npm install\` (node-gyp builds it) in the Taras folder` };
  // What login would set, unless the job's environment (the submitter's, with --export=ALL) has it.
  const userVariables: Record<string, string> = runAs?.user ? { HOME: runAs.user.home, USER: runAs.user.name, LOGNAME: runAs.user.name } : {};
  const virtualMemoryKiB = cgroup === null && spec.memoryMiB !== null ? Math.floor(spec.memoryMiB * 1024) : null;
  const onTerminal = session !== null && session.spec.pty;
  const shell = ['/bin/sh', '-c', wrapperScript(cgroup !== null && !onTerminal, virtualMemoryKiB), 'taras-job', spec.script, ...spec.args];
  // Without cgroups the helper sets the memory limit on itself just before it execs (the wrapper's `ulimit -v` came
  // after a preloaded library had run in /bin/sh, free to start processes without it).
  const helperArgs = [...(virtualMemoryKiB === null ? [] : ['--limit-as', String(virtualMemoryKiB * 1024)]),
    ...(runAs === null ? ['--self'] : ['--user', String(runAs.uid), String(runAs.gid), runAs.user?.name ?? '-'])];
  // Each field is one NUL-ended string of the description: a NUL inside one would let the job write the fields after it.
  // (The controller refuses such requests; a supervisor never trusts that alone.)
  const split = [['working directory', spec.workingDir], ['output path', spec.stdoutPath], ['error path', spec.stderrPath], ['script', spec.script],
    ...shell.map((arg) => ['argument', arg])].find(([, value]) => value.includes('\0'));
  if (split !== undefined) return { ok: false, error: `the job's ${split[0]} contains a NUL character` };
  const description = launchDescription(spec, { ...userVariables, ...spec.env }, shell);
  if (session !== null && onTerminal) return startOnTerminal(session, cgroup, helperArgs, description, launchFile);
  const stdio = session === null ? 'ignore' as const : 'pipe' as const;
  const child = spawn(EXEC_HELPER, session === null ? helperArgs : ['--stdio', ...helperArgs], {
    cwd: '/', env: {}, detached: true,
    stdio: [stdio, stdio, stdio, 'pipe', 'pipe', ...(cgroup === null ? [] : ['pipe' as const])],
  });
  let exited = new Promise<[number | null, SignalName | null]>((resolveExit) => child.once('exit', (code, signal) => resolveExit([code, signal])));
  if (session !== null) exited = streamPipes(session, child, exited);
  const spawned = await new Promise<Error | null>((resolveSpawn) => {
    child.once('spawn', () => resolveSpawn(null));
    child.once('error', resolveSpawn);
  });
  if (spawned !== null || child.pid === undefined) return { ok: false, error: `cannot start the exec helper ${EXEC_HELPER}: ${spawned?.message ?? 'no pid'}` };
  const descriptionPipe = child.stdio[DESCRIPTION_FD] as Writable;
  descriptionPipe.on('error', () => undefined); // the helper failed before reading: its error pipe says why
  if (cgroup !== null) {
    // Into the cgroup before the helper has its description, so before it can exec anything: whatever the job
    // runs first (a preloaded library's constructor, run before the wrapper reads the gate) is in it already.
    const gate = child.stdio[GATE_FD] as Writable;
    gate.on('error', () => undefined); // the wrapper died first: its exit is what counts
    const joined = cgroup.addProcess(child.pid);
    if (!joined.ok) {
      child.kill('SIGKILL');
      gate.destroy();
      descriptionPipe.destroy();
      await exited;
      return joined;
    }
    gate.end(`${JOINED}\n`);
  }
  descriptionPipe.end(description);
  const refusal = (await readAll(child.stdio[ERROR_FD] as Readable)).trim();
  if (refusal !== '') {
    await exited;
    return { ok: false, error: refusal };
  }
  return { ok: true, value: { child: child as ChildProcess & { readonly pid: number }, exited } };
}

// ---- interactive jobs: pipes or a terminal ------------------------------

/** Resolves `exited` once the job's output pipes are drained too (at most half a second later: a child may keep them open). */
function afterOutput(exited: Promise<[number | null, SignalName | null]>, streams: readonly Readable[]): Promise<[number | null, SignalName | null]> {
  const drained = Promise.all(streams.map((stream) => new Promise<void>((resolveEnd) => {
    if (stream.readableEnded || stream.destroyed) resolveEnd();
    stream.once('end', resolveEnd);
    stream.once('close', resolveEnd);
  })));
  return exited.then(async (result) => {
    await Promise.race([drained, new Promise((resolveWait) => setTimeout(resolveWait, 500))]);
    return result;
  });
}

/** Pipes mode: the job's stdout and stderr go to the session apart, its stdin comes from it (end of input included). */
function streamPipes(session: InteractiveSession, child: ChildProcess, exited: Promise<[number | null, SignalName | null]>): Promise<[number | null, SignalName | null]> {
  const stdout = child.stdout!;
  const stderr = child.stderr!;
  stdout.on('data', (data: Buffer) => session.output('out', data));
  stderr.on('data', (data: Buffer) => session.output('err', data));
  child.stdin!.on('error', () => undefined); // the job closed its stdin: input to it is dropped
  child.stdin!.on('close', () => session.resumeInput()); // nothing more to wait for: frames (Ctrl-C) flow again
  // Once the job has exited its pid (and group) may be reused: nothing a client sends reaches it any more.
  let gone = false;
  void exited.then(() => (gone = true), () => (gone = true));
  session.handlers = {
    ...session.handlers,
    pauseOutput: () => {
      stdout.pause();
      stderr.pause();
    },
    resumeOutput: () => {
      stdout.resume();
      stderr.resume();
    },
    input: (frame: ClientFrame) => {
      if (gone) return;
      // Input the job does not read yet: stop reading the client until the pipe takes it (bounded by the pipe, not memory).
      if (frame.t === 'in' && child.stdin!.writable && !child.stdin!.write(frame.d)) {
        session.pauseInput();
        child.stdin!.once('drain', () => session.resumeInput());
      }
      else if (frame.t === 'eof') child.stdin!.end();
      else if (frame.t === 'signal' && child.pid !== undefined) signalGroup(child.pid, frame.sig);
    },
  };
  return afterOutput(exited, [stdout, stderr]);
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // gone
  }
}

/** Input typed before the job's exec is kept up to this much, then dropped. */
const EARLY_INPUT_BYTES = 64 * 1024;
/** Input queued for a terminal past which the client is no longer read (as a pipe holds 64 KiB). */
const TERMINAL_INPUT_HIGH_BYTES = 64 * 1024;

/** node-pty (a native module, loaded only for jobs on a terminal). */
type PtyModule = typeof import('node-pty');
const loadPty = (): PtyModule => createRequire(import.meta.url)('node-pty') as PtyModule;

/**
 * Terminal mode: node-pty starts the exec helper on a new terminal (it is the
 * session leader, the terminal its controlling one) with `--pty FILE`: it
 * reads the launch description from FILE (root's, in the job directory) and
 * stops itself first, so it joins the job's cgroup before anything of the
 * job runs; then it drops to the user and execs the job as in batch mode,
 * with the terminal as stdin, stdout and stderr. The master side stays here:
 * the job survives an agent restart, and `taras attach` finds it again.
 */
/**
 * The bytes node-pty has queued for the terminal and not yet written (it
 * retries on EAGAIN with no event when done): its private write queue; 0 if
 * a later node-pty has none (then input is not paused: see README Limits).
 */
function ptyWriteQueueBytes(terminal: import('node-pty').IPty): number {
  const queue = (terminal as unknown as { _writeStream?: { _writeQueue?: unknown } })._writeStream?._writeQueue;
  if (!Array.isArray(queue)) return 0;
  let bytes = 0;
  for (const task of queue as { buffer?: unknown; offset?: unknown }[]) {
    if (Buffer.isBuffer(task.buffer) && typeof task.offset === 'number') bytes += task.buffer.length - task.offset;
  }
  return bytes;
}

async function startOnTerminal(session: InteractiveSession, cgroup: JobCgroup | null, helperArgs: readonly string[], description: Buffer, launchFile: string): Promise<Result<StartedJob>> {
  writeFileSync(launchFile, description, { mode: 0o600 });
  chmodSync(launchFile, 0o600);
  let pty: PtyModule;
  try {
    pty = loadPty();
  } catch (error) {
    return { ok: false, error: `node-pty cannot be loaded (${(error as Error).message}): run \`npm install\` in the Taras folder (it builds node-pty)` };
  }
  let terminal: import('node-pty').IPty;
  try {
    terminal = pty.spawn(EXEC_HELPER, ['--pty', launchFile, ...helperArgs], {
      name: 'xterm', cols: session.spec.cols, rows: session.spec.rows, cwd: '/', env: {}, encoding: null,
    } as import('node-pty').IPtyForkOptions);
  } catch (error) {
    return { ok: false, error: `cannot start the job on a terminal: ${(error as Error).message}` };
  }
  const pid = terminal.pid;
  let lastOutputMs = Date.now();
  terminal.onData((data: string | Buffer) => {
    lastOutputMs = Date.now();
    session.output('out', typeof data === 'string' ? Buffer.from(data) : data);
  });
  let ended = false;
  const exited = new Promise<[number | null, SignalName | null]>((resolveExit) => terminal.onExit(({ exitCode, signal }) => {
    ended = true;
    const name = signal ? (Object.entries(osConstants.signals).find(([, number]) => number === signal)?.[0] as SignalName | undefined) ?? null : null;
    // The terminal may still hold output the job wrote just before it exited: wait until it has been quiet for 50 ms (at most 1 s).
    const giveUpMs = Date.now() + 1000;
    const settle = (): void => {
      if (Date.now() - lastOutputMs >= 50 || Date.now() >= giveUpMs) resolveExit(name === null ? [exitCode, null] : [null, name]);
      else setTimeout(settle, 20);
    };
    settle();
  }));
  // The helper stops itself before anything else: then it joins the cgroup and goes on.
  const stoppedBy = Date.now() + 5000;
  while (!ended && procStat(pid)?.[0] !== 'T' && Date.now() < stoppedBy) await new Promise((resolveWait) => setTimeout(resolveWait, 5));
  if (ended || procStat(pid)?.[0] !== 'T') {
    signalGroup(pid, 'SIGKILL');
    await exited;
    return { ok: false, error: 'the exec helper did not start on its terminal' };
  }
  if (cgroup !== null) {
    const joined = cgroup.addProcess(pid);
    if (!joined.ok) {
      signalGroup(pid, 'SIGKILL');
      signalGroup(pid, 'SIGCONT');
      await exited;
      return joined;
    }
  }
  // node-pty queues in this (root) process what the terminal does not take (a job that does not read): past
  // TERMINAL_INPUT_HIGH_BYTES queued, stop reading the client until the queue has gone to the terminal.
  let inputPaused = false;
  const checkInput = (): void => {
    if (ended || ptyWriteQueueBytes(terminal) === 0) {
      inputPaused = false;
      session.resumeInput();
    } else setTimeout(checkInput, 10);
  };
  const deliver = (frame: ClientFrame): void => {
    if (ended) return;
    if (frame.t === 'in') {
      terminal.write(frame.d);
      if (!inputPaused && ptyWriteQueueBytes(terminal) > TERMINAL_INPUT_HIGH_BYTES) {
        inputPaused = true;
        session.pauseInput();
        setTimeout(checkInput, 10);
      }
    }
    else if (frame.t === 'eof') terminal.write('\x04'); // Ctrl-D: end of input to the program reading the terminal
    else if (frame.t === 'size') terminal.resize(frame.cols, frame.rows);
    else signalGroup(pid, frame.sig);
  };
  // Until the helper has exec'd the job it may still be root: keys typed then (^\ would make it dump core, ^Z
  // stop it) and signals wait, a bounded amount, and go to the job once it runs.
  const early: ClientFrame[] = [];
  let earlyBytes = 0;
  let execd = false;
  session.handlers = {
    ...session.handlers,
    pauseOutput: () => terminal.pause(),
    resumeOutput: () => terminal.resume(),
    input: (frame: ClientFrame) => {
      if (execd) return deliver(frame);
      if (frame.t === 'size') return deliver(frame); // the window size is the terminal's, not the helper's
      earlyBytes += frame.t === 'in' ? frame.d.length : 16;
      if (earlyBytes <= EARLY_INPUT_BYTES) early.push(frame);
    },
  };
  process.kill(pid, 'SIGCONT');
  const execBy = Date.now() + 5000;
  let helperPath = EXEC_HELPER;
  try {
    helperPath = realpathSync(EXEC_HELPER); // what /proc/PID/exe shows
  } catch {
    // it ran, so it exists; keep the path as built
  }
  const awaitExec = (): void => {
    let exe: string | null = null;
    try {
      exe = readlinkSync(`/proc/${pid}/exe`);
    } catch {
      exe = null; // gone: it failed, or it ended
    }
    if (exe !== null && exe === helperPath && !ended && Date.now() < execBy) {
      setTimeout(awaitExec, 5);
      return;
    }
    execd = true;
    for (const frame of early.splice(0)) deliver(frame);
  };
  awaitExec();
  return { ok: true, value: { child: { pid }, exited } };
}

// ---- entry point --------------------------------------------------------

/**
 * SIGTERM and SIGINT, with one listener each for the life of the process:
 * recorded (`early`) until a Supervision takes them. Node drops a signal it
 * caught but had not yet dispatched when its last listener goes, and between
 * two listeners the default action would kill this root process mid-start.
 */
const stopSignals = {
  early: null as 'SIGTERM' | 'SIGINT' | null,
  handler: null as ((signal: 'SIGTERM' | 'SIGINT') => void) | null,
  listening: false,
  /** From here a stop signal is recorded; the title tells the agent so (takesStopSignals). */
  listen(title: string): void {
    if (!this.listening) {
      this.listening = true;
      for (const signal of ['SIGTERM', 'SIGINT'] as const) {
        process.on(signal, () => {
          if (this.handler !== null) this.handler(signal);
          else this.early ??= signal;
        });
      }
    }
    process.title = `${SUPERVISOR_TITLE} ${title}`;
  },
  take(handler: (signal: 'SIGTERM' | 'SIGINT') => void): void {
    this.handler = handler;
  },
};

function isEntryPoint(): boolean {
  const entry = process.argv[1];
  if (entry === undefined) return false;
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

function supervise(jobDir: string): void {
  runSupervisor(resolve(jobDir)).then(
    (code) => process.exit(code),
    (error: Error) => {
      log(`error: ${error.stack ?? error.message}`);
      process.exit(1);
    },
  );
}

/**
 * `--standby` (SupervisorLauncher): loaded and waiting; the first line on
 * stdin is the job directory to supervise. End of input first: exit 0.
 */
function standBy(): void {
  // The agent may cancel (SIGTERM) the job it has just written here before this line is read: it must not be lost.
  stopSignals.listen('standby');
  let input = '';
  const onData = (chunk: Buffer): void => {
    input += chunk.toString();
    const newline = input.indexOf('\n');
    if (newline < 0) return;
    process.stdin.off('data', onData);
    process.stdin.off('end', onEnd);
    process.stdin.destroy(); // from here on nothing ties this process to the agent
    const jobDir = input.slice(0, newline);
    try {
      process.chdir(jobDir);
      logFd = openSync(jobFiles(jobDir).log, 'a', 0o600);
    } catch (error) {
      log(`cannot take job directory ${jobDir}: ${(error as Error).message}`);
      process.exit(1);
    }
    supervise(jobDir);
  };
  const onEnd = (): void => process.exit(0);
  process.stdin.on('data', onData);
  process.stdin.on('end', onEnd);
}

if (isEntryPoint()) {
  const jobDir = process.argv[2];
  if (jobDir === undefined || process.argv.length > 3) {
    process.stderr.write('usage: node supervisor.js JOBDIR | --standby   (JOBDIR holds spec.json; see src/agent/README.md)\n');
    process.exit(2);
  }
  if (jobDir === '--standby') standBy();
  else supervise(jobDir);
}
