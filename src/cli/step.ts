// `srun CMD` inside a job (SLURM_JOB_ID set, or --jobid): a job step. The
// controller lays the tasks out on the job's nodes (src/controller/steps.ts)
// and relays their output here: as it comes, or with -l each line prefixed
// by its task's rank (`0: `, padded as Slurm pads it). stdin, Ctrl-C and
// SIGTERM go to every task (srun's defaults). Failed tasks are named on stderr as srun
// names them (`srun: error: n1: task 1: Exited with exit code 3`), and the
// exit code is the highest of the tasks' (128 + N for a task killed by
// signal N). A connection that drops before the step's end (the controller
// restarted) is resumed: the same step, asked for every 0.5 s for up to 30 s,
// stdin kept meanwhile, and until every task has taken it (1 MiB): input on
// its way through a dying controller is sent again. Output is acknowledged to the tasks'
// supervisors, which keep it until then: output in flight when the connection
// dropped comes again, and srun shows each piece once. Each task's end comes
// as it happens, and is acknowledged and kept here: a resume names the tasks
// srun has the end of (their supervisors may have left), and a step whose
// every end srun has needs no resume.

import type { Command } from 'commander';
import type { WebSocket } from 'ws';
import type { StepBody } from '../api/schema.js';
import { fail } from './flags.js';
import { OutputPacer } from './output.js';
import { client, connection, withRetries } from './controller-client.js';
import { OutputCursor } from '../net/output-cursor.js';
import { HeldInput } from '../net/held-input.js';
import { outputBytes, readOutputFrame } from '../net/output-frame.js';

type Flags = Record<string, string | boolean | undefined>;

/** run's flags that mean something for a new job only: refused by name inside one. */
const JOB_ONLY_FLAGS: readonly [key: string, flag: string][] = [
  ['partition', '-p/--partition'], ['constraint', '-C/--constraint'], ['reservation', '--reservation'], ['immediate', '--immediate'], ['pty', '--pty'],
];

/** The job a step goes into: --jobid, else the job this command runs in. */
export function stepJobId(flags: Flags): number | null {
  const given = typeof flags.jobid === 'string' ? flags.jobid : process.env.SLURM_JOB_ID ?? process.env.TARAS_JOB_ID;
  if (given === undefined || given === '') return null;
  if (!/^\d+$/.test(given) || Number(given) <= 0) fail(`srun: error: '${given}' is not a job id (--jobid or SLURM_JOB_ID): give the number taras queue shows`, 2);
  return Number(given);
}

/** A count flag's value: a whole number from 1 to `max` (what the step request takes), else srun's error naming the flag. */
const count = (value: string | boolean | undefined, flag: string, max: number, what: string): number | undefined => {
  if (value === undefined) return undefined;
  const text = String(value);
  if (!/^\d+$/.test(text) || Number(text) < 1) fail(`srun: error: ${flag} ${text}: expected a whole number of at least 1`, 2);
  if (Number(text) > max) fail(`srun: error: ${flag} ${text}: ${what} is at most ${max}`, 2);
  return Number(text);
};

/**
 * The step request from run's flags, each checked here in the flag's words (as sbatch checks its own) up to
 * what the request takes (StepBodySchema); the controller checks it against the job.
 */
async function stepBody(command: readonly string[], flags: Flags, cmd: Command): Promise<StepBody> {
  for (const [key, flag] of JOB_ONLY_FLAGS) {
    if (cmd.getOptionValueSource(key) === 'cli') fail(`srun: error: ${flag} is for a new job, not a step inside job ${stepJobId(flags)}: a step runs in its job's allocation (leave it out, or unset SLURM_JOB_ID to submit a new job)`, 2);
  }
  if (command.length === 0) fail('srun: error: no command given: srun [options] CMD [ARGS]', 2);
  const { LIMITS, MAX_STEP_TASKS, STEP_COMMAND_WORDS } = await import('../api/schema.js');
  if (command.length > STEP_COMMAND_WORDS) fail(`srun: error: the command has ${command.length} words, more than a step takes (${STEP_COMMAND_WORDS}): pass a list in a file, or run it from a script`, 2);
  const nodesText = flags.nodes === undefined ? undefined : String(flags.nodes);
  if (nodesText !== undefined && !/^\d+$/.test(nodesText)) fail(`srun: error: -N ${nodesText}: a step takes a node count, not a range`, 2);
  const name = typeof flags.jobName === 'string' ? flags.jobName : undefined;
  if (name === '') fail(`srun: error: -J/--job-name: got '': expected a non-empty name (or leave -J out)`, 2);
  if (name !== undefined && name.length > LIMITS.nameChars) fail(`srun: error: -J/--job-name: a name of ${name.length} characters; give one of at most ${LIMITS.nameChars}`, 2);
  let timeLimitSeconds: number | undefined;
  let memoryMiB: number | undefined;
  if (flags.time !== undefined || flags.mem !== undefined) {
    const { parseTime, parseMemory } = await import('../jobspec/values.js');
    if (flags.time !== undefined) {
      const parsed = parseTime(String(flags.time));
      if (!parsed.ok) fail(`srun: error: -t ${String(flags.time)}: ${parsed.message}`, 2);
      if (parsed.value !== 'UNLIMITED' && parsed.value > LIMITS.timeLimitSeconds) {
        fail(`srun: error: -t ${String(flags.time)}: ${parsed.value} s is past the longest time limit (${LIMITS.timeLimitSeconds} s, 100 years); give a shorter one, or leave -t out to run to the job's end`, 2);
      }
      if (parsed.value !== 'UNLIMITED') timeLimitSeconds = parsed.value;
    }
    if (flags.mem !== undefined) {
      const parsed = parseMemory(String(flags.mem));
      if (!parsed.ok) fail(`srun: error: --mem ${String(flags.mem)}: ${parsed.message}`, 2);
      if (parsed.value > LIMITS.memoryMiB) fail(`srun: error: --mem ${String(flags.mem)}: ${parsed.value} MiB is past the most a node may have (${LIMITS.memoryMiB} MiB, 1 PiB)`, 2);
      if (parsed.value > 0) memoryMiB = parsed.value;
    }
  }
  const { resolve } = await import('node:path');
  const body: StepBody = {
    command: [...command],
    ...(flags.ntasks === undefined ? {} : { ntasks: count(flags.ntasks, '-n', MAX_STEP_TASKS, 'the number of tasks of one step') }),
    ...(nodesText === undefined ? {} : { nodes: count(nodesText, '-N', LIMITS.nodes, 'the number of nodes') }),
    ...(flags.cpusPerTask === undefined ? {} : { cpusPerTask: count(flags.cpusPerTask, '-c', LIMITS.cpusPerTask, 'the number of CPUs per task') }),
    ...(flags.overcommit === true ? { overcommit: true } : {}),
    ...(timeLimitSeconds === undefined ? {} : { timeLimitSeconds }),
    ...(memoryMiB === undefined ? {} : { memoryMiB }),
    ...(name === undefined ? {} : { name }),
    workingDir: typeof flags.chdir === 'string' ? resolve(flags.chdir) : process.cwd(),
    umask: process.umask(),
    env: { ...process.env } as Record<string, string>,
  };
  return body;
}

interface TaskEnd {
  task: number;
  node: string;
  state: string;
  exitCode: number | null;
  signal: string | null;
  reason: string | null;
}

/** Slurm's words for a task killed by a signal. */
const SIGNAL_WORDS: Readonly<Record<string, string>> = { SIGKILL: 'Killed', SIGTERM: 'Terminated', SIGSEGV: 'Segmentation fault', SIGABRT: 'Aborted', SIGINT: 'Interrupt', SIGBUS: 'Bus error' };

/** srun's connection dropped before its step's end (the controller restarted): it resumes the step, asking this often for this long. */
const RESUME_EVERY_MS = 500;
const RESUME_WITHIN_MS = 30_000;
/** Input and signals kept while it does; stdin is read no further past this (the rest waits in its pipe). */
const HELD_INPUT_BYTES = 1024 * 1024;

/** Runs the step; returns srun's exit code. */
export async function runStep(job: number, command: readonly string[], flags: Flags, cmd: Command): Promise<number> {
  const body = await stepBody(command, flags, cmd);
  const controller = flags.controller as string | undefined;
  const { ApiRequestError, ControllerUnreachableError, openWebSocket } = await import('../net/client.js');
  const explain = (error: unknown): never => {
    if (error instanceof ApiRequestError) fail(`srun: error: ${error.error}${error.fix ? ` (${error.fix})` : ''}`, error.status === 400 ? 2 : 1);
    if (error instanceof ControllerUnreachableError) fail(`srun: error: ${error.message}`, 1);
    throw error;
  };
  const api = await client(controller);
  let created: { stepId: number; nodes: string; tasks: { task: number; node: string }[] };
  try {
    created = await withRetries('srun', () => api.post(`/jobs/${job}/steps`, body));
  } catch (error) {
    return explain(error);
  } finally {
    api.close();
  }
  const path = `/jobs/${job}/steps/${created.stepId}`;
  const open = async (suffix: string, timeoutMs = 15_000): Promise<WebSocket> => {
    const { target, credentials } = await connection(controller);
    return openWebSocket(target, `${path}/${suffix}`, { credentials, timeoutMs });
  };
  let socket: WebSocket;
  try {
    socket = await open('attach?acks=ends'); // this srun acknowledges its tasks' ends: their supervisors are told at once
  } catch (error) {
    return explain(error);
  }
  const label = flags.label === true;
  const width = String(Math.max(0, created.tasks.length - 1)).length;
  /** Partial lines per task and stream, for -l. */
  const partial = new Map<string, string>();
  const pacer = new OutputPacer();
  const write = (stream: 'out' | 'err', task: number, data: Buffer): void => {
    const to = stream === 'out' ? process.stdout : process.stderr;
    if (!label) {
      pacer.write(to, data);
      return;
    }
    const key = `${stream}${task}`;
    const text = (partial.get(key) ?? '') + data.toString('utf8');
    const lines = text.split('\n');
    partial.set(key, lines.pop()!);
    if (lines.length > 0) pacer.write(to, lines.map((line) => `${String(task).padStart(width)}: ${line}\n`).join(''));
  };
  const flush = (): void => {
    for (const [key, rest] of partial) {
      if (rest === '') continue;
      const to = key.startsWith('out') ? process.stdout : process.stderr;
      to.write(`${key.slice(3).padStart(width)}: ${rest}\n`);
    }
    partial.clear();
  };
  /** Each task's end as it came (acknowledged to its supervisor, which may then leave). */
  const ownEnds = new Map<number, TaskEnd>();
  /**
   * Input and signals, numbered (`i`), kept until every task that has not ended has taken them (its supervisor says
   * so: `inack`, passed on by a controller whose hello has `inputAcks`; an older controller: kept only while it is
   * away). After a resume they are sent again, and each supervisor takes each number once: input on its way through
   * a dying controller is not lost. Bounded: stdin is read no further past HELD_INPUT_BYTES kept (the rest waits in
   * its pipe).
   */
  const held = new HeldInput(HELD_INPUT_BYTES);
  let connected = false;
  let inputAcks = false;
  const inputTaken = new Map<number, number>();
  const stdin = process.stdin;
  let stdinEnded = false;
  const resumeStdin = (): void => {
    if (connected && !stdinEnded && !held.full) stdin.resume();
  };
  const send = (frame: object): void => {
    // An older controller (no inputAcks): nothing would say it was taken, so it is held only while disconnected.
    const live = connected && socket.readyState === socket.OPEN ? (text: string) => socket.send(text) : null;
    if (held.offer(frame, live, inputAcks)) stdin.pause(); // the rest waits in the pipe until the tasks take some
  };
  /** What every task still running has taken leaves `held`. */
  const trimHeld = (): void => {
    let upTo = Infinity;
    for (const { task } of created.tasks) if (!ownEnds.has(task)) upTo = Math.min(upTo, inputTaken.get(task) ?? 0);
    if (held.taken(upTo)) resumeStdin();
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'] as const) process.on(signal, () => send({ t: 'signal', sig: signal }));
  stdin.on('data', (data: Buffer) => send({ t: 'in', d: data.toString('base64') }));
  stdin.on('end', () => send({ t: 'eof' }));
  stdin.on('error', () => send({ t: 'eof' }));
  let ends: TaskEnd[] | null = null;
  stdin.once('end', () => (stdinEnded = true));
  // Each task's output is numbered by its supervisor and kept there until srun acknowledges it: after a
  // resume, what was in flight comes again, and what srun already has is dropped here (src/net/output-cursor.ts).
  const cursors = new Map<number, OutputCursor>();
  const cursorOf = (task: number): OutputCursor => {
    let cursor = cursors.get(task);
    if (cursor === undefined) {
      cursor = new OutputCursor((n) => {
        if (connected && socket.readyState === socket.OPEN) socket.send(JSON.stringify({ t: 'ack', task, n }));
      });
      cursors.set(task, cursor);
    }
    return cursor;
  };
  /** Whether a task's frame is new; output skipped before it (lost past what its node keeps) is said on stderr. */
  const fresh = (task: number, n: number | undefined, bytes: number): boolean => {
    const taken = cursorOf(task).take(n, bytes);
    if (taken.lost > 0) process.stderr.write(`srun: task ${task}: ${taken.lost} piece(s) of output were lost (more than its node keeps while the connection is down)\n`);
    return taken.fresh;
  };
  /** Relays the step over `socket` until it closes; true once the step has said hello (it is live at the controller). */
  const relay = (): Promise<boolean> => new Promise<boolean>((resolveEnd) => {
    let greeted = false;
    socket.on('message', (data) => {
      // Output, almost every frame: read without JSON.parse (src/net/output-frame.ts).
      const output = Buffer.isBuffer(data) ? readOutputFrame(data) : null;
      if (output !== null) {
        if (fresh(output.task ?? 0, output.n, output.d.length)) write(output.t, output.task ?? 0, outputBytes(output));
        return;
      }
      let frame: { t?: string; d?: string; text?: string; task?: number; n?: number; tasks?: TaskEnd[] } & Partial<TaskEnd>;
      try {
        frame = JSON.parse(data.toString());
      } catch {
        return;
      }
      if ((frame.t === 'out' || frame.t === 'err') && frame.d !== undefined) {
        if (fresh(frame.task ?? 0, frame.n, frame.d.length)) write(frame.t, frame.task ?? 0, Buffer.from(frame.d, 'base64'));
      } else if (frame.t === 'hello') {
        greeted = true;
        connected = true;
        inputAcks = (frame as { inputAcks?: unknown }).inputAcks === true;
        // Told at once: the tasks' supervisors then keep each one's end until srun has it (an older srun never says).
        for (const { task } of created.tasks) socket.send(JSON.stringify({ t: 'ack', task, n: cursorOf(task).position ?? 0, ends: true }));
        for (const text of held.texts()) socket.send(text);
        if (!inputAcks) held.clear();
        resumeStdin();
      } else if (frame.t === 'note' && frame.text !== undefined) {
        if (frame.task === undefined || fresh(frame.task, frame.n, frame.text.length)) process.stderr.write(`srun: ${frame.text}\n`);
      }
      else if (frame.t === 'inack' && typeof frame.task === 'number' && typeof (frame as { i?: unknown }).i === 'number') {
        const taken = (frame as { i: number }).i;
        if (taken > (inputTaken.get(frame.task) ?? 0)) inputTaken.set(frame.task, taken);
        trimHeld();
      } else if (frame.t === 'ended' && typeof frame.task === 'number') {
        const task = frame.task;
        fresh(task, frame.n, 0);
        if (!ownEnds.has(task)) {
          ownEnds.set(task, {
            task, node: frame.node ?? created.tasks[task]?.node ?? '?', state: frame.state ?? 'FAILED', exitCode: frame.exitCode ?? null, signal: frame.signal ?? null, reason: frame.reason ?? null,
          });
        }
        cursorOf(task).flush(); // the supervisor may leave now
        trimHeld(); // an ended task takes no more input
      } else if (frame.t === 'exit') {
        // The controller's list, and the ends srun had before a resume (which it leaves out).
        const all = new Map(ownEnds);
        for (const end of frame.tasks ?? []) if (!all.has(end.task)) all.set(end.task, end);
        ends = [...all.values()].sort((a, b) => a.task - b.task);
      }
    });
    const closed = (): void => {
      connected = false;
      resolveEnd(greeted);
    };
    socket.on('close', closed);
    socket.on('error', closed);
    pacer.attach(socket); // opened paused, so that no frame is missed: read from now on, unless output waits
  });
  const layout = created.tasks.map((task) => task.node).join(',');
  let lost: string | null = null;
  for (;;) {
    const greeted = await relay();
    if (ends === null && ownEnds.size === created.tasks.length) ends = [...ownEnds.values()].sort((a, b) => a.task - b.task); // the last frame was lost, not an end
    if (ends !== null) break;
    if (!greeted) {
      lost = 'the controller closed the connection before the step started';
      break;
    }
    // The connection dropped before the step's end (the controller restarted): the tasks run on at their agents; take
    // the same step up again for a while, the user's input kept meanwhile.
    process.stderr.write(`srun: lost the connection to the controller during step ${job}.${created.stepId}; reconnecting for up to ${RESUME_WITHIN_MS / 1000} s\n`);
    const deadline = Date.now() + RESUME_WITHIN_MS;
    let resumed: WebSocket | null = null;
    let last = 'the controller did not answer';
    let refused = false;
    while (Date.now() < deadline) {
      await new Promise((resolveWait) => setTimeout(resolveWait, RESUME_EVERY_MS));
      try {
        const endedQuery = ownEnds.size === 0 ? '' : `&ended=${[...ownEnds.keys()].sort((a, b) => a - b).join(',')}`;
        resumed = await open(`resume/${encodeURIComponent(layout)}?acks=ends${endedQuery}`, Math.max(1000, deadline - Date.now()));
        break;
      } catch (error) {
        last = (error as Error).message;
        // Refused outright (not yours, no such step, the job ended): asking again changes nothing.
        if (error instanceof ApiRequestError && error.status !== 503 && error.status < 500) {
          last = `${error.error}${error.fix ? ` (${error.fix})` : ''}`;
          refused = true;
          break;
        }
      }
    }
    if (resumed === null) {
      lost = refused ? `the controller refused to resume it: ${last}` : `could not resume it within ${RESUME_WITHIN_MS / 1000} s (${last})`;
      break;
    }
    socket = resumed;
  }
  stdin.pause();
  flush();
  const finished = ends as TaskEnd[] | null;
  if (finished === null) {
    process.stderr.write(`srun: error: lost the connection to step ${job}.${created.stepId}: ${lost ?? 'closed before its end'}; its tasks are killed\n`);
    return 1;
  }
  const { constants } = await import('node:os');
  let code = 0;
  for (const end of finished) {
    const signo = end.signal === null ? undefined : (constants.signals as Record<string, number>)[end.signal];
    const taskCode = end.exitCode ?? (signo === undefined ? 1 : 128 + signo);
    if (taskCode === 0) continue;
    code = Math.max(code, taskCode);
    const what = end.exitCode !== null ? `Exited with exit code ${end.exitCode}` : end.signal !== null ? SIGNAL_WORDS[end.signal] ?? end.signal : `${end.state}${end.reason ? ` (${end.reason})` : ''}`;
    process.stderr.write(`srun: error: ${end.node}: task ${end.task}: ${what}\n`);
  }
  return code;
}
