// Mail about jobs (sbatch --mail-type/--mail-user, Slurm's MailProg and
// MailDomain): when a job begins, ends, fails, is requeued, nears or reaches
// its time limit, or its dependency can never be met, the controller runs the
// configured sendmail-compatible program (`mail_program`, default
// /usr/sbin/sendmail) as `PROGRAM -t -oi` with the message on its stdin.
// The program runs with a fixed argument list and environment, from /: the
// recipient is only in the message's To: header, an address checked strictly
// at submission (and again here); the job's name, the only other text of the
// user's in the message, has its control characters replaced and is encoded
// (RFC 2047) in the subject. Subjects are Slurm's, so filters written for
// Slurm's mail keep working:
//   Slurm Job_id=12 Name=run.sh Began, Queued time 00:00:01
//   Slurm Job_id=12 Name=run.sh Ended, Run time 00:05:01, COMPLETED, ExitCode 0
//   Slurm Job_id=12 Name=run.sh Failed, Run time 00:05:01, FAILED, ExitCode 127
//   Slurm Job_id=12 Name=run.sh Requeued, Run time 00:00:12
//   Slurm Job_id=12 Name=run.sh Reached 90% of time limit, Run time 00:54:00
//   Slurm Job_id=12 Name=run.sh Reached time limit, Run time 01:00:00
//   Slurm Job_id=12 Name=run.sh Invalid Dependency
//   Slurm Array Summary Job_id=12_* (12) Name=a.sh Ended, COMPLETED, ExitCode 0
//   Slurm Array Task Job_id=12_3 (15) Name=a.sh Began, Queued time 00:00:00
// Mail is sent after the event is on the disk; a failure of the program is
// logged with its exit status and stderr and never affects the job.

import { spawn } from 'node:child_process';
import { compressHostlist } from '../config/hostlist.js';
import { parseMailUser } from '../jobspec/values.js';
import type { JobSpec } from '../jobspec/types.js';
import type { JobRecord, StoredJobEvent } from '../store/events.js';
import { arrayMembers, arrayTaskOf } from './arrays.js';
import { clockDuration } from '../api/durations.js';

export const DEFAULT_MAIL_PROGRAM = '/usr/sbin/sendmail';

/** The settings of a cluster configuration. */
export const mailSettingsOf = (config: { readonly mailProgram?: string; readonly mailDomain?: string }): MailSettings =>
  ({ program: config.mailProgram ?? DEFAULT_MAIL_PROGRAM, ...(config.mailDomain === undefined ? {} : { domain: config.mailDomain }) });

export interface MailSettings {
  readonly program: string;
  /** Added to a recipient without "@". */
  readonly domain?: string;
}

export interface MailMessage {
  readonly to: string;
  readonly subject: string;
  readonly body: string;
  readonly jobId: number;
}

/** Slurm's mail durations: HH:MM:SS, D-HH:MM:SS past a day (sacct's form). */
export const mailDuration = clockDuration;

/** The events a job asked mail for (ALL: every one but the time-limit warnings' 50 and 80 and ARRAY_TASKS, as Slurm). */
export function mailTypesOf(spec: Pick<JobSpec, 'mailType'>): Set<string> {
  const types = new Set(spec.mailType ?? []);
  if (types.has('NONE')) return new Set();
  if (types.has('ALL')) for (const type of ['BEGIN', 'END', 'FAIL', 'REQUEUE', 'INVALID_DEPEND', 'STAGE_OUT', 'TIME_LIMIT']) types.add(type);
  return types;
}

/** The recipient: --mail-user, else the job's user; mail_domain added to a name without "@". Null: not a valid address. */
export function recipientOf(record: Pick<JobRecord, 'user'>, spec: Pick<JobSpec, 'mailUser'>, domain: string | undefined): string | null {
  const checked = parseMailUser(spec.mailUser ?? record.user);
  if (!checked.ok) return null;
  return checked.value.includes('@') || domain === undefined ? checked.value : `${checked.value}@${domain}`;
}

/** Text of the user's in a header or line: control characters (CR, LF, ...) become spaces, at most 200 characters. */
const clean = (text: string): string => text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, ' ').slice(0, 200);

/** A header value as 7-bit text: RFC 2047 base64 words when it has anything else. */
export function encodeHeader(text: string): string {
  if (/^[\x20-\x7e]*$/.test(text)) return text;
  // Encoded words of at most 75 characters: 45 bytes of UTF-8 each, cut on a character boundary.
  const words: string[] = [];
  let chunk = '';
  for (const char of text) {
    if (Buffer.byteLength(chunk + char) > 45) {
      words.push(chunk);
      chunk = '';
    }
    chunk += char;
  }
  if (chunk !== '') words.push(chunk);
  return words.map((word) => `=?UTF-8?B?${Buffer.from(word).toString('base64')}?=`).join(' ');
}

/** The whole message as the mail program reads it (CRLF is left to the program: sendmail takes LF). */
export function formatMessage(message: MailMessage): string {
  return [
    `To: ${message.to}`,
    `Subject: ${encodeHeader(message.subject)}`,
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    'Content-Transfer-Encoding: 8bit',
    'Auto-Submitted: auto-generated',
    `X-Taras-Job-Id: ${message.jobId}`,
    '',
    message.body,
    '',
  ].join('\n');
}

type Event = StoredJobEvent['event'];

/** Failed rather than ended (Slurm's word in the subject; FAIL mail goes for these). */
const FAILED_STATES = new Set(['FAILED', 'TIMEOUT', 'NODE_FAIL', 'OUT_OF_MEMORY', 'DEADLINE', 'PREEMPTED', 'BOOT_FAIL']);
/** Ends with no exit code of the job's own in the subject. */
const NO_EXIT_CODE = new Set(['NODE_FAIL', 'OUT_OF_MEMORY', 'BOOT_FAIL']);

export class Mailer {
  private readonly queue: MailMessage[] = [];
  private inFlight = 0;
  /** Time-limit warnings sent (job.run.percent), so each goes once. */
  private readonly warned = new Set<string>();
  private closed = false;

  constructor(
    /** cluster.toml's mail_program and mail_domain (replaced at a reconfigure). */
    public settings: MailSettings,
    private readonly lookup: (id: number) => JobRecord | undefined,
    private readonly log: (line: string) => void,
    /** Mail programs running at once; the rest wait in order. */
    private readonly concurrency = 4,
    /** Messages waiting past which new ones are dropped (logged). */
    private readonly maxQueued = 10_000,
  ) {}

  close(): void {
    this.closed = true;
    this.queue.length = 0;
  }

  /** Store.committedListeners: the job's event, once it is on the disk. */
  readonly onJobEvent = (stored: StoredJobEvent, record: JobRecord): void => {
    const spec = record.request as unknown as JobSpec;
    if (spec.mailType === undefined || spec.mailType.length === 0) return;
    try {
      this.eventMail(stored, record, spec);
    } catch (error) {
      this.log(`mail for job ${record.id}: ${(error as Error).message}`);
    }
  };

  private subjectHead(record: JobRecord, spec: JobSpec, summary: boolean): string {
    const name = clean(record.name);
    const task = arrayTaskOf(record);
    if (task === undefined) return `Slurm Job_id=${record.id} Name=${name}`;
    return summary ? `Slurm Array Summary Job_id=${task.jobId}_* (${task.jobId}) Name=${name}` : `Slurm Array Task Job_id=${task.jobId}_${task.taskId} (${record.id}) Name=${name}`;
  }

  private eventMail(stored: StoredJobEvent, record: JobRecord, spec: JobSpec): void {
    const types = mailTypesOf(spec);
    const event: Event = stored.event;
    const task = arrayTaskOf(record);
    // An array's tasks mail one by one only with ARRAY_TASKS; else the array mails once: its first start, its last end.
    const perTask = task === undefined || types.has('ARRAY_TASKS');
    const siblings = (): JobRecord[] => (task === undefined ? [] : arrayMembers(task.jobId, task).filter((id) => id !== record.id).map((id) => this.lookup(id)).filter((r): r is JobRecord => r !== undefined));
    const runSeconds = (atMs: number): number => (record.startTimeMs === null ? 0 : (atMs - record.startTimeMs) / 1000);
    if (event.type === 'started') this.watchTimeLimits(record);
    if (event.type === 'started' && types.has('BEGIN')) {
      if (!perTask && siblings().some((other) => other.startTimeMs !== null && other.id !== record.id)) return;
      this.send(record, spec, `${this.subjectHead(record, spec, !perTask)} Began, Queued time ${mailDuration((stored.timeMs - record.submitTimeMs) / 1000)}`);
    } else if (event.type === 'requeued' && types.has('REQUEUE')) {
      this.send(record, spec, `${this.subjectHead(record, spec, false)} Requeued, Run time ${mailDuration(runSeconds(stored.timeMs))}`);
    } else if (event.type === 'ended') {
      const state = event.state;
      const failed = FAILED_STATES.has(state);
      if (state === 'TIMEOUT' && types.has('TIME_LIMIT')) {
        this.send(record, spec, `${this.subjectHead(record, spec, false)} Reached time limit, Run time ${mailDuration(runSeconds(stored.timeMs))}`);
      }
      if (types.has('INVALID_DEPEND') && /dependency/i.test(event.reason ?? '') && record.startTimeMs === null) {
        this.send(record, spec, `${this.subjectHead(record, spec, false)} Invalid Dependency`);
        return;
      }
      if (!(types.has('END') || (types.has('FAIL') && failed))) return;
      if (perTask) {
        const code = NO_EXIT_CODE.has(state) || event.exitCode === null ? '' : `, ExitCode ${event.exitCode}`;
        this.send(record, spec, `${this.subjectHead(record, spec, false)} ${failed ? 'Failed' : 'Ended'}, Run time ${mailDuration(runSeconds(stored.timeMs))}, ${state}${code}`);
        return;
      }
      // The array's summary, once its last task has ended.
      const others = siblings();
      if (others.some((other) => other.endTimeMs === null)) return;
      const all = [...others.map((other) => ({ state: other.state as string, exitCode: other.exitCode })), { state, exitCode: event.exitCode }];
      const states = new Set(all.map((end) => end.state));
      const maxCode = all.reduce((most, end) => Math.max(most, end.exitCode ?? 0), 0); // (an array has up to 4,000,001 tasks: not a spread)
      const anyFailed = all.some((end) => FAILED_STATES.has(end.state));
      if (!types.has('END') && !anyFailed) return;
      const summaryState = states.size === 1 ? [...states][0] : 'Mixed';
      this.send(record, spec, `${this.subjectHead(record, spec, true)} ${anyFailed ? 'Failed' : 'Ended'}, ${summaryState}, ${states.size === 1 ? 'ExitCode' : 'MaxExitCode'} ${maxCode}`);
    }
  }

  /** A job left pending whose dependency can never be met (the engine's onDependencyNeverSatisfied). */
  readonly invalidDependency = (record: JobRecord): void => {
    const spec = record.request as unknown as JobSpec;
    if (mailTypesOf(spec).has('INVALID_DEPEND')) this.send(record, spec, `${this.subjectHead(record, spec, false)} Invalid Dependency`);
  };

  /** Running jobs that asked for a TIME_LIMIT_50/80/90 mail: the only ones checkTimeLimits looks at. */
  private readonly timed = new Set<number>();

  private watchTimeLimits(record: JobRecord): void {
    for (const type of mailTypesOf(record.request as unknown as JobSpec)) {
      if (type.startsWith('TIME_LIMIT_')) {
        this.timed.add(record.id);
        return;
      }
    }
  }

  /**
   * Every second: TIME_LIMIT_50/80/90 when a run passes that share of its
   * limit, for the running jobs that asked (watched from their start;
   * `seed`: jobs to watch besides, the running ones when the controller
   * starts). A share already passed on the first call is taken as sent (no
   * repeat after a restart).
   */
  checkTimeLimits(nowMs: number, first: boolean, seed: Iterable<JobRecord> = []): void {
    for (const record of seed) if (record.state === 'RUNNING') this.watchTimeLimits(record);
    for (const id of this.timed) {
      const record = this.lookup(id);
      if (record === undefined || (record.state !== 'RUNNING' && record.state !== 'SUSPENDED')) {
        this.timed.delete(id);
        continue;
      }
      if (record.state !== 'RUNNING' || record.startTimeMs === null) continue;
      const spec = record.request as unknown as JobSpec;
      const types = mailTypesOf(spec);
      const limit = spec.timeLimitSeconds;
      if (typeof limit !== 'number') continue;
      const share = (nowMs - record.startTimeMs) / 1000 / limit;
      for (const percent of [90, 80, 50]) {
        if (!types.has(`TIME_LIMIT_${percent}`) || share < percent / 100) continue;
        const key = `${record.id}.${record.requeueCount}.${percent}`;
        if (this.warned.has(key)) break;
        this.warned.add(key);
        if (!first) this.send(record, spec, `${this.subjectHead(record, spec, false)} Reached ${percent}% of time limit, Run time ${mailDuration((nowMs - record.startTimeMs) / 1000)}`);
        break; // the highest share passed only
      }
    }
    if (this.warned.size > 100_000) this.warned.clear();
  }

  private send(record: JobRecord, spec: JobSpec, subject: string): void {
    const to = recipientOf(record, spec, this.settings.domain);
    if (to === null) {
      this.log(`mail for job ${record.id} not sent: --mail-user is not a valid address`);
      return;
    }
    const when = (ms: number | null): string => (ms === null ? '-' : new Date(ms).toLocaleString());
    const body = [
      subject,
      '',
      `Job:        ${record.id} (${clean(record.name)})`,
      `User:       ${record.user}`,
      `State:      ${record.state}${record.exitCode === null ? '' : `, exit code ${record.exitCode}`}${record.reason ? ` (${clean(record.reason)})` : ''}`,
      ...(record.nodes.length > 0 ? [`Nodes:      ${compressHostlist(record.nodes)}`] : []),
      `Submitted:  ${when(record.submitTimeMs)}`,
      `Started:    ${when(record.startTimeMs)}`,
      `Ended:      ${when(record.endTimeMs)}`,
      '',
      `taras show ${record.id} has the rest.`,
    ].join('\n');
    if (this.closed) return;
    if (this.queue.length >= this.maxQueued) {
      this.log(`mail for job ${record.id} dropped: ${this.maxQueued} messages are waiting for ${this.settings.program}`);
      return;
    }
    this.queue.push({ to, subject, body, jobId: record.id });
    this.pump();
  }

  private pump(): void {
    while (this.inFlight < this.concurrency && this.queue.length > 0) {
      const message = this.queue.shift()!;
      this.inFlight++;
      void this.deliver(message).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }

  /** Runs the mail program once; resolves when it has exited (or could not start). */
  private deliver(message: MailMessage): Promise<void> {
    return new Promise((resolveDone) => {
      let done = false;
      const resolveSent = (): void => {
        if (!done) resolveDone();
        done = true;
      };
      let stderr = '';
      // Fixed argv and environment, from /: nothing of the job's but the message on stdin.
      const child = spawn(this.settings.program, ['-t', '-oi'], {
        cwd: '/', env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' }, stdio: ['pipe', 'ignore', 'pipe'],
      });
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      timer.unref();
      child.stderr!.on('data', (chunk: Buffer) => {
        stderr = (stderr + chunk.toString()).slice(-2000);
      });
      child.stdin!.on('error', () => undefined);
      child.on('error', (error) => {
        clearTimeout(timer);
        this.log(`mail for job ${message.jobId} to ${message.to} not sent: cannot run ${this.settings.program} (${error.message}); set mail_program in cluster.toml`);
        resolveSent();
      });
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        if (done) return; // it could not start: said already
        if (code !== 0) this.log(`mail for job ${message.jobId} to ${message.to} not sent: ${this.settings.program} exited ${code ?? signal}${stderr.trim() ? `: ${clean(stderr.trim())}` : ''}`);
        resolveSent();
      });
      child.stdin!.end(formatMessage(message));
    });
  }
}
