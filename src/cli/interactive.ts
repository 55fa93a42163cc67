// Interactive jobs: `taras run [flags] -- CMD [ARGS]` (srun --pty), `taras
// alloc [flags]` (salloc: a shell on the first allocated node) and `taras
// attach ID` (back to a session after a lost connection). The job is
// submitted like a batch job with `spec.interactive`, waited for (its planned
// start shown; Ctrl-C cancels it), then joined over a WebSocket to the
// controller, which relays to the job's supervisor. On a terminal the job gets
// a terminal too: raw mode here, the window size at the start and on
// SIGWINCH, every key (Ctrl-C, Ctrl-Z) passed as bytes; otherwise plain pipes
// (stdout and stderr apart, end of input passed on). The job's exit code is
// ours; the terminal is restored on every way out.

import type { Command } from 'commander';
import type { WebSocket } from 'ws';
import type { ApiJob } from '../api/types.js';
import type { JobSpec } from '../jobspec/types.js';
import { fail, parseImmediateFlag } from './flags.js';
import { exitAfterOutput, OutputPacer, outputFailed } from './output.js';
import { client, connection, controllerOption, parseJobIds, withRetries } from './controller-client.js';
import { OutputCursor } from '../net/output-cursor.js';
import { HeldInput } from '../net/held-input.js';
import { outputBytes, readOutputFrame } from '../net/output-frame.js';

type Flags = Record<string, string | boolean | undefined>;

/** The flags run and alloc share with submit (where they apply). */
function resourceFlags(command: Command): Command {
  return command
    .option('-N, --nodes <n>', 'nodes (N or N-M)')
    .option('-n, --ntasks <n>', 'tasks')
    .option('-c, --cpus-per-task <n>', 'CPUs per task')
    .option('--mem <size>', 'memory per node (e.g. 4G)')
    .option('-t, --time <limit>', 'time limit (default: the partition\'s default_time); at most interactive_max_time')
    .option('-p, --partition <name>', 'partition')
    .option('-J, --job-name <name>', 'job name')
    .option('-D, --chdir <dir>', 'working directory on the node')
    .option('-C, --constraint <features>', 'node features, a&b')
    .option('--reservation <name>', 'run in this advance reservation')
    .option('--immediate [seconds]', 'fail unless the job starts within this many seconds (default 0: now)')
    .option(...controllerOption);
}

const SPEC_FLAGS = ['nodes', 'ntasks', 'cpusPerTask', 'mem', 'time', 'partition', 'jobName', 'chdir', 'constraint', 'reservation'];

/** The job request of `taras run`/`alloc`: submit's flags, the command, the terminal. */
async function interactiveSpec(command: readonly string[], flags: Flags, cmd: Command): Promise<JobSpec> {
  const [types, flagsModule, mergeModule] = await Promise.all([import('../jobspec/types.js'), import('../jobspec/flags.js'), import('../jobspec/merge.js')]);
  const given: Flags = {};
  for (const key of SPEC_FLAGS) if (cmd.getOptionValueSource(key) === 'cli') given[key] = flags[key];
  // No --time: a placeholder here, and the controller applies the partition's default_time.
  const timeGiven = given.time !== undefined;
  if (!timeGiven) given.time = '1';
  const name = command[0] ?? 'alloc';
  const layer = flagsModule.parseFlagValues(given, { script: name, args: [] });
  if (!layer.ok) fail(layer.errors.map((e) => `error: ${types.formatError(e)}`).join('\n'));
  const built = mergeModule.buildJobSpec(mergeModule.mergeJobSpec(undefined, undefined, layer.value), { scriptText: '#!/bin/sh\nexec "$@"\n', submitDir: process.cwd() });
  if (!built.ok) fail(built.errors.map((e) => `error: ${types.formatError(e)}`).join('\n'));
  const { timeLimitSeconds, ...rest } = built.value.spec;
  let immediateSeconds: number | undefined;
  if (flags.immediate !== undefined) {
    const parsed = parseImmediateFlag(flags.immediate as string | boolean);
    if (!parsed.ok) fail(parsed.message);
    immediateSeconds = parsed.value;
  }
  const onTerminal = process.stdin.isTTY === true;
  return {
    ...rest, ...(timeGiven ? { timeLimitSeconds } : {}),
    name: typeof flags.jobName === 'string' ? rest.name : name.split('/').pop() || name,
    interactive: {
      pty: onTerminal, command: [...command],
      ...(onTerminal && process.stdout.isTTY ? terminalSize() : {}),
      ...(immediateSeconds === undefined ? {} : { immediateSeconds }),
    },
  } as JobSpec;
}

/** A note from Taras on the user's terminal, between the job's output. */
function say(text: string, raw: boolean): void {
  process.stderr.write(raw ? `\r\ntaras: ${text}\r\n` : `taras: ${text}\n`);
}

const clock = (iso: string): string => new Date(iso).toLocaleTimeString();

/**
 * Waits until the job runs (true) or ended first (false, with its reason
 * said). Shows the planned start while it waits, and updates it; Ctrl-C
 * cancels the job. The controller ends a job that must start at once
 * (interactive = "immediate", --immediate=S) and did not, with the reason.
 */
async function waitForStart(flag: string | undefined, id: number): Promise<ApiJob> {
  const api = await client(flag);
  let shown = '';
  let interrupted = false;
  const onInterrupt = (): void => {
    interrupted = true;
  };
  process.on('SIGINT', onInterrupt);
  try {
    for (;;) {
      const job = await withRetries('taras', () => api.get<ApiJob>(`/jobs/${id}`));
      if (job.state !== 'PENDING') return job;
      if (interrupted) {
        await api.delete(`/jobs/${id}`).catch(() => undefined);
        say(`job ${id} cancelled (Ctrl-C while it waited)`, false);
        process.exit(130);
      }
      // Freeing nodes by preemption (interactive = "immediate"): whom it waits for and how long.
      const line = job.reason?.startsWith('freeing nodes') === true ? `job ${id} waits: ${job.reason}`
        : job.plannedStart === null ? `job ${id} queued: ${job.reason ?? 'waiting'}; no planned start yet` : `job ${id} queued: planned start ${clock(job.plannedStart)}`;
      if (line !== shown) say(`${line} (Ctrl-C cancels)`, false);
      shown = line;
      await new Promise((resolveWait) => setTimeout(resolveWait, 250));
    }
  } finally {
    process.off('SIGINT', onInterrupt);
    api.close();
  }
}

interface ExitFrame {
  state: string;
  exitCode: number | null;
  signal: string | null;
  reason: string | null;
}

/** The CLI's exit code for the job's end: its exit code, 128 + the signal that ended it, else 1. */
async function exitCodeOf(end: ExitFrame): Promise<number> {
  if (end.exitCode !== null) return end.exitCode;
  const { constants } = await import('node:os');
  const signal = end.signal === null ? undefined : (constants.signals as Record<string, number>)[end.signal];
  return signal === undefined ? 1 : 128 + signal;
}

/** How long a lost connection (an agent or controller restart) is retried before giving up. */
const RECONNECT_FOR_MS = 30_000;
/** Input kept until the session takes it; stdin is read no further past this. */
const HELD_INPUT_BYTES = 1024 * 1024;

/**
 * Joins the terminal to the job's session until it ends (its exit code). A
 * connection lost without the job's end (the agent or the controller
 * restarted: the session lives on in the job's supervisor) is opened again,
 * for up to 30 s; then it says how to reattach and returns 1.
 */
async function attach(flag: string | undefined, id: number): Promise<number> {
  const { openWebSocket, ApiRequestError, ControllerUnreachableError } = await import('../net/client.js');
  const open = async (): Promise<WebSocket> => {
    const { target, credentials } = await connection(flag);
    return openWebSocket(target, `/jobs/${id}/attach`, { credentials, timeoutMs: 15_000 });
  };
  let socket: WebSocket;
  try {
    socket = await open();
  } catch (error) {
    if (error instanceof ApiRequestError) fail(`error: ${error.error}${error.fix ? ` (${error.fix})` : ''}`, 1);
    if (error instanceof ControllerUnreachableError) fail(`error: ${error.message}`, 1);
    throw error;
  }
  const stdin = process.stdin;
  let raw = false;
  const restore = (): void => {
    if (raw && stdin.isTTY) stdin.setRawMode(false);
    raw = false;
  };
  process.on('exit', restore);
  // Killed politely: the terminal is given back before we go (SIGKILL cannot be caught; the shell's `reset` fixes that).
  for (const [signal, code] of [['SIGTERM', 143], ['SIGHUP', 129]] as const) {
    process.once(signal, () => {
      restore();
      process.exit(code);
    });
  }
  const send = (frame: object): void => {
    if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(frame));
  };
  /**
   * Input, end of input and signals are numbered (`i`) and kept until the session says it took them (`inputTaken`
   * in its hello, then `inack`): after a reconnect they are sent again and the session takes each number once, so
   * what was typed while the agent or controller was away, or on its way through one that died, is not lost. An
   * older session says nothing: input is then kept only while disconnected. Bounded: stdin is read no further past
   * HELD_INPUT_BYTES kept.
   */
  const held = new HeldInput(HELD_INPUT_BYTES);
  let sessionTakes = false;
  const sendInput = (frame: object): void => {
    const live = socket.readyState === socket.OPEN ? (text: string) => socket.send(text) : null;
    if (held.offer(frame, live, sessionTakes)) stdin.pause();
  };
  /** The session took this command's input up to `upTo` (its word on another writer's is not about ours). */
  const taken = (upTo: number): void => {
    if (held.taken(upTo) && inputStarted && !inputEnded && !held.full) stdin.resume();
  };
  const sendSize = (): void => send({ t: 'size', ...terminalSize() });
  let ended: ExitFrame | null = null;
  let takenOver: string | null = null;
  let inputStarted = false;
  let inputEnded = false;
  const startInput = (pty: boolean): void => {
    if (inputStarted) {
      if (raw) sendSize(); // a new connection: the session may have missed a resize
      return;
    }
    inputStarted = true;
    if (pty && stdin.isTTY) {
      stdin.setRawMode(true);
      raw = true;
      if (process.stdout.isTTY) {
        sendSize();
        process.stdout.on('resize', sendSize); // SIGWINCH
      }
    } else {
      // Pipes: Ctrl-C of this command goes to the job as SIGINT.
      process.on('SIGINT', () => sendInput({ t: 'signal', sig: 'SIGINT' }));
    }
    stdin.on('data', (data: Buffer) => sendInput({ t: 'in', d: data.toString('base64') }));
    stdin.on('end', () => {
      inputEnded = true;
      sendInput({ t: 'eof' });
    });
    stdin.resume();
  };
  // The session numbers its output and keeps it until acknowledged: after a reconnect what was in flight comes
  // again, and what this terminal already shows is dropped (src/net/output-cursor.ts). Any first number will do:
  // another client may have read the start.
  const cursor = new OutputCursor((n) => send({ t: 'ack', n }), null);
  const fresh = (n: number | undefined, bytes: number): boolean => {
    const taken = cursor.take(n, bytes);
    if (taken.lost > 0) say(`${taken.lost} piece(s) of output were lost (more than the job's node keeps while the connection is down)`, raw);
    return taken.fresh;
  };
  const pacer = new OutputPacer();
  const follow = (current: WebSocket): Promise<void> => new Promise<void>((resolveEnd) => {
    current.on('message', (data) => {
      // Output, almost every frame: read without JSON.parse (src/net/output-frame.ts).
      const output = Buffer.isBuffer(data) ? readOutputFrame(data) : null;
      if (output !== null) {
        if (fresh(output.n, output.d.length)) pacer.write(output.t === 'out' ? process.stdout : process.stderr, outputBytes(output));
        return;
      }
      let frame: { t?: string; d?: string; text?: string; pty?: boolean; n?: number; i?: number; w?: string; inputTaken?: number; inputWriter?: string } & Partial<ExitFrame>;
      try {
        frame = JSON.parse(data.toString());
      } catch {
        return;
      }
      if (frame.t === 'hello') {
        // Said at once: the session then keeps the job's end until this command has it (an older one never says).
        send({ t: 'ack', n: cursor.position ?? 0, ends: true });
        sessionTakes = typeof frame.inputTaken === 'number';
        if (sessionTakes && frame.inputWriter === held.writer) taken(frame.inputTaken!);
        for (const text of held.texts()) current.send(text);
        if (!sessionTakes) {
          held.clear();
          if (inputEnded) send({ t: 'eof' }); // an older session may have lost it with the last connection
          else if (inputStarted) stdin.resume(); // paused while disconnected with a megabyte held
        }
        startInput(frame.pty === true);
      } else if (frame.t === 'inack' && typeof frame.i === 'number' && frame.w === held.writer) taken(frame.i);
      else if ((frame.t === 'out' || frame.t === 'err') && frame.d !== undefined) {
        if (fresh(frame.n, frame.d.length)) pacer.write(frame.t === 'out' ? process.stdout : process.stderr, Buffer.from(frame.d, 'base64'));
      } else if (frame.t === 'note' && frame.text !== undefined) {
        if (fresh(frame.n, frame.text.length)) say(frame.text, raw);
      }
      else if (frame.t === 'detached') takenOver = frame.text ?? 'another client attached';
      else if (frame.t === 'exit') {
        ended = { state: frame.state ?? 'FAILED', exitCode: frame.exitCode ?? null, signal: frame.signal ?? null, reason: frame.reason ?? null };
        cursor.take(frame.n, 0);
        cursor.flush(); // the session closes once it knows the end arrived
      }
    });
    current.on('close', () => resolveEnd());
    current.on('error', () => resolveEnd());
    pacer.attach(current); // read from now on, unless output waits for a slow terminal or pipe
  });
  await follow(socket);
  while (ended === null) {
    if (takenOver !== null) {
      const wasRaw = raw;
      restore();
      say(takenOver, wasRaw);
      return 1;
    }
    say(`lost the connection to job ${id}: reconnecting (up to ${RECONNECT_FOR_MS / 1000} s)`, raw);
    const giveUpMs = Date.now() + RECONNECT_FOR_MS;
    let again: WebSocket | null = null;
    let refusal: string | null = null;
    while (again === null && refusal === null && Date.now() < giveUpMs) {
      try {
        again = await open();
      } catch (error) {
        // 409: it ended or has no session any more; anything else (unreachable, 502 while the agent is away): try again.
        if (error instanceof ApiRequestError && (error.status === 409 || error.status === 403 || error.status === 404)) refusal = error.error;
        else await new Promise((resolveWait) => setTimeout(resolveWait, 500));
      }
    }
    if (again === null) {
      const wasRaw = raw;
      restore();
      say(refusal ?? `could not reconnect to job ${id}; it keeps running for a while (interactive_grace): reattach with \`taras attach ${id}\``, wasRaw);
      return 1;
    }
    socket = again;
    await follow(socket);
  }
  restore();
  stdin.pause();
  const end = ended as ExitFrame;
  if (end.state !== 'COMPLETED' && !(end.state === 'FAILED' && end.exitCode !== null)) say(`job ${id} ended: ${end.state}${end.reason ? ` (${end.reason})` : ''}`, false);
  return exitCodeOf(end);
}

/** Submits the interactive job, waits for its start and attaches: the process exits with the job's exit code. */
async function runInteractive(command: readonly string[], flags: Flags, cmd: Command): Promise<never> {
  process.stdout.on('error', outputFailed); // `srun ... | head`: the reader left
  // Inside a job (SLURM_JOB_ID set) or with --jobid: srun runs a step of that job on its nodes.
  if (cmd.name() === 'run') {
    const { stepJobId, runStep } = await import('./step.js');
    const job = stepJobId(flags);
    if (job !== null) return exitAfterOutput(await runStep(job, command, flags, cmd));
  }
  const spec = await interactiveSpec(command, flags, cmd);
  const controller = flags.controller as string | undefined;
  const api = await client(controller);
  let id: number;
  try {
    const submitEnv = { ...process.env } as Record<string, string>;
    const body = { spec: { ...spec, umask: process.umask(), submitEnv, submitDir: process.cwd() }, idempotencyKey: `${Date.now().toString(36)}-${process.pid.toString(36)}-${Math.random().toString(36).slice(2, 12)}` };
    ({ id } = await withRetries('taras', () => api.post<{ id: number }>('/jobs', body)));
  } catch (error) {
    const { ApiRequestError, ControllerUnreachableError } = await import('../net/client.js');
    if (error instanceof ApiRequestError) fail(`error: ${error.error}${error.fix ? ` (${error.fix})` : ''}`, error.status === 400 ? 2 : 1);
    if (error instanceof ControllerUnreachableError) fail(`error: ${error.message}`, 1);
    throw error;
  } finally {
    api.close();
  }
  const job = await waitForStart(controller, id);
  if (job.state !== 'RUNNING') {
    say(`job ${id} ${job.state === 'CANCELLED' || job.state === 'FAILED' ? 'did not start' : 'ended'}: ${job.state}${job.reason ? ` (${job.reason})` : ''}`, false);
    return exitAfterOutput(job.exitCode ?? 1);
  }
  return exitAfterOutput(await attach(controller, id));
}

export function registerInteractiveCommands(program: Command): void {
  resourceFlags(program
    .command('run')
    .description('run a command on a node, attached to this terminal (srun --pty); inside a job: on its nodes, as a job step (srun)')
    .argument('<command...>', 'the command and its arguments (options after the command are its own)')
    .passThroughOptions()
    .option('-l, --label', 'inside a job: prefix each output line with its task\'s rank ("0: ")')
    .option('--jobid <id>', 'run the command as a step of this running job of yours (default inside a job: $SLURM_JOB_ID)')
    .option('-O, --overcommit', 'inside a job: allow more tasks on a node than the job has CPUs there')
    .option('--pty', 'a terminal on the node (srun --pty bash): what taras run does whenever stdin is a terminal'))
    .addHelpText('after', `
On a terminal the job gets one too (Ctrl-C, Ctrl-Z and window size reach it);
otherwise stdin, stdout and stderr are plain pipes. The exit code is the job's.
A lost connection leaves the job running for interactive_grace: taras attach ID.

Examples:
  taras run -- hostname
  taras run -N 1 -c 4 -t 30 -- python3 train.py --epochs 3
  echo data | taras run -- wc -c          prints 5
  taras run --immediate=60 -- ./debug.sh  fail unless started within a minute

Inside a job (SLURM_JOB_ID is set) srun runs CMD as a step of that job: on its
nodes, as many tasks as -n says (default: the job's tasks), each with
SLURM_PROCID, SLURM_NODEID, SLURM_LOCALID and SLURM_STEP_ID; the exit code is
the highest of the tasks'. Unset SLURM_JOB_ID to submit a new job instead.
  srun hostname                          one task per task of the job
  srun -l -n 4 -N 2 ./worker             4 tasks on 2 nodes, output lines as "2: ..."
`)
    .action(async (command: string[], flags: Flags, cmd: Command) => runInteractive(command, flags, cmd));

  resourceFlags(program
    .command('alloc')
    .description('a shell (your login shell) on the first allocated node (salloc)'))
    .addHelpText('after', `
The allocation ends when the shell exits; its exit code is the command's.

Examples:
  taras alloc
  taras alloc -N 2 -t 1:00:00 -p debug
`)
    .action(async (flags: Flags, cmd: Command) => runInteractive([], flags, cmd));

  program
    .command('attach')
    .description('reattach this terminal to a running interactive job (sattach)')
    .argument('<id>', 'job id')
    .option(...controllerOption)
    .addHelpText('after', `
Output the job produced while no one was attached is shown first (up to 1 MiB).

Examples:
  taras attach 42
`)
    .action(async (raw: string, flags: { controller?: string }) => {
      const [id] = parseJobIds([raw]);
      process.stdout.on('error', outputFailed);
      await exitAfterOutput(await attach(flags.controller, id));
    });
}

/** This terminal's size; 80x24 where it says 0 or nothing (a terminal under `script`, or one not yet sized). */
export function terminalSize(stream: { columns?: number; rows?: number } = process.stdout): { cols: number; rows: number } {
  const positive = (value: number | undefined, otherwise: number) => (value !== undefined && Number.isInteger(value) && value > 0 ? value : otherwise);
  return { cols: positive(stream.columns, 80), rows: positive(stream.rows, 24) };
}
