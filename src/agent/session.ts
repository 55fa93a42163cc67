// The terminal session of an interactive job, in its supervisor: a root-only
// Unix socket (JOBDIR/stream.sock, mode 0600) where the agent connects on
// behalf of the job's user (after the controller checked who they are), the
// output kept while nobody is attached (bounded: the oldest bytes go first,
// and the next client is told how many), and the session's own ends: no
// client past the grace, or no input and no output past the idle limit.
// One client at a time: a new one (`taras attach` after a lost connection)
// takes the session over from the old. Node built-ins only (and the
// dependency-free src/net/frame-queue.ts and src/net/output-frame.ts, which
// writes its output lines).
//
// Output frames are numbered (n = 1, 2, ...) and kept after they are sent
// until the client acknowledges them ({"t":"ack","n":N}), within the same
// bound: a client (the agent, the controller, srun) that dies with frames in
// flight loses nothing, because the next client is sent every frame not
// acknowledged, and its reader drops the numbers it already has (a number
// skipped means output was lost past the bound). A client that never
// acknowledges gets the last bufferBytes of output again on its next attach.
//
// The job's end is numbered too, and kept the same way: the session waits for
// a client to acknowledge it (srun's controller may die with it in flight),
// up to graceSeconds after the end, or after the last client came or left.
// Readers that do say so at hello ({"t":"ack","n":N,"ends":true}); a client
// that has not said so a second after it got the end is an older reader
// (those acknowledge output only): the end counts as delivered to it.
//
// Input may be numbered too ("i": 1, 2, ... on in, eof and signal, as srun
// and taras run do), each writer its own numbers ("w": its id): the session
// takes each writer's number once (a frame sent again after a reconnect is
// dropped) and says what it has taken (`inputTaken` and `inputWriter`, the
// last writer's, in its hello; {"t":"inack","i":N,"w":W} after each read
// that took some), so the writer keeps its input until then.
//
// Frames are JSON lines. To the job: {"t":"in","d":BASE64,"i"?:N,"w"?:W},
// {"t":"eof","i"?:N,"w"?:W}, {"t":"size","cols":N,"rows":N},
// {"t":"signal","sig":"SIGINT","i"?:N,"w"?:W},
// {"t":"ack","n":N,"ends"?:true} (the client has every output frame up to N;
// ends: it acknowledges the end too). From it:
// {"t":"inack","i":N,"w"?:W} (every numbered input of W up to N is taken),
// {"t":"hello","pty":BOOL,"jobId":N,"inputTaken":N,"inputWriter"?:W}, {"t":"out"|"err","d":BASE64,"n":N},
// {"t":"note","text":"...","n":N} (Taras's own lines: warnings),
// {"t":"note","text":"..."} (replay notices),
// {"t":"detached","text":"..."} (another client took the session over),
// {"t":"exit","state":S,"exitCode":N|null,"signal":S|null,"reason":S|null,"n":N}.

import { chmodSync, existsSync, unlinkSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { FrameQueue } from '../net/frame-queue.js';
import { outputLine } from '../net/output-frame.js';

/** spec.json's `interactive`: how the supervisor runs and streams an interactive job. */
export interface InteractiveSpec {
  /** A terminal on the node (the client's stdin is one); false: pipes. */
  readonly pty: boolean;
  readonly cols: number;
  readonly rows: number;
  /** The session ends this long after its last client left (or after the start, until one comes). */
  readonly graceSeconds: number;
  /** The session ends after this long with no input and no output; 0: never. */
  readonly idleSeconds: number;
  /** A line on the terminal this long before the time limit; 0: none. */
  readonly warnSeconds: number;
  /** Output kept while no client is attached. */
  readonly bufferBytes: number;
}

/** Signals a client may ask for (pipes mode: Ctrl-C of the CLI; a terminal sends its own bytes). */
export const CLIENT_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'];

/** A writer's id on its numbered input: each writer numbers its own. */
const WRITER = /^[A-Za-z0-9_-]{1,64}$/;
/** Writers whose last number a session keeps (the oldest forgotten past it). */
const MAX_WRITERS = 64;

export type ClientFrame =
  | { readonly t: 'in'; readonly d: Buffer; readonly i?: number; readonly w?: string }
  | { readonly t: 'eof'; readonly i?: number; readonly w?: string }
  | { readonly t: 'size'; readonly cols: number; readonly rows: number }
  | { readonly t: 'signal'; readonly sig: NodeJS.Signals; readonly i?: number; readonly w?: string };

/** The client has every output frame numbered up to n (handled by the session itself, never by its handlers). */
export interface AckFrame {
  readonly t: 'ack';
  readonly n: number;
  /** The client acknowledges the job's end too (readers since the end was numbered say so at hello; older ones acknowledge output only). */
  readonly ends?: boolean;
}

const isDimension = (value: unknown): value is number => Number.isInteger(value) && (value as number) >= 1 && (value as number) <= 10_000;

/** A client's frame, checked; null for anything else (ignored). */
export function parseClientFrame(line: string): ClientFrame | AckFrame | null {
  // Every frame is one flat object (base64 has no brackets): refused before JSON.parse, which a deep one would hold for seconds.
  if (line.indexOf('[') >= 0 || line.indexOf('{', 1) >= 0) return null;
  let frame: unknown;
  try {
    frame = JSON.parse(line);
  } catch {
    return null;
  }
  if (typeof frame !== 'object' || frame === null) return null;
  const f = frame as Record<string, unknown>;
  if (f.i !== undefined && !(Number.isSafeInteger(f.i) && (f.i as number) >= 1)) return null;
  if (f.w !== undefined && !(typeof f.w === 'string' && WRITER.test(f.w))) return null;
  const numbered = { ...(f.i === undefined ? {} : { i: f.i as number }), ...(f.w === undefined ? {} : { w: f.w as string }) };
  if (f.t === 'in' && typeof f.d === 'string') return { t: 'in', d: Buffer.from(f.d, 'base64'), ...numbered };
  if (f.t === 'eof') return { t: 'eof', ...numbered };
  if (f.t === 'size' && isDimension(f.cols) && isDimension(f.rows)) return { t: 'size', cols: f.cols, rows: f.rows };
  if (f.t === 'signal' && CLIENT_SIGNALS.includes(f.sig as NodeJS.Signals)) return { t: 'signal', sig: f.sig as NodeJS.Signals, ...numbered };
  if (f.t === 'ack' && Number.isSafeInteger(f.n) && (f.n as number) >= 0) return { t: 'ack', n: f.n as number, ...(f.ends === true ? { ends: true } : {}) };
  return null;
}

export interface SessionEnd {
  readonly state: string;
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly reason: string | null;
}

export interface SessionHandlers {
  input(frame: ClientFrame): void;
  /** Stop and go on reading the job's output (backpressure: the client has OUTPUT_HIGH_WATER_BYTES unsent). */
  pauseOutput?(): void;
  resumeOutput?(): void;
  /** The session must end (no client past the grace, or idle): the supervisor ends the job with this state and reason. */
  expire(state: 'CANCELLED' | 'TIMEOUT', reason: string): void;
}

const MAX_LINE_BYTES = 1024 * 1024;
/** Past this much output unsent to the client, the job's output is no longer read until it is sent (its writes then block). */
const OUTPUT_HIGH_WATER_BYTES = 1024 * 1024;
/**
 * After the job's end, an attached client that has not acknowledged it is waited for this long after its last
 * acknowledgement (or the grace, if longer): one whose reader is slow (`srun ... | less`) takes output only as fast
 * as it can write it, and the output not yet taken would be lost with this process. A client that leaves is waited
 * for the grace, as before.
 */
const ATTACHED_END_WAIT_MS = 15 * 60 * 1000;
/** A client that has not said it acknowledges ends this long after it got the job's end is an older one: the end counts as delivered. */
const OLDER_CLIENT_MS = 1000;

interface KeptFrame {
  readonly n: number;
  /** The frame's line; output's as bytes (written as they are, outside V8's heap), a note's as text. */
  readonly line: string | Buffer;
  sent: boolean;
}


export class InteractiveSession {
  private server: Server | null = null;
  private client: Socket | null = null;
  /** Output frames not acknowledged yet, oldest first: sent to a client (`sent`) or waiting for one. */
  private readonly kept = new FrameQueue<KeptFrame>((frame) => frame.line.length);
  /** The last output frame's number. */
  private lastN = 0;
  /** Bytes of output dropped from `kept` before any client got them. */
  private droppedBytes = 0;
  private lastActivityMs = Date.now();
  private graceTimer: NodeJS.Timeout | null = null;
  private idleTimer: NodeJS.Timeout | null = null;
  private ended: SessionEnd | null = null;
  /** The job's end as a numbered frame, once it ended; its number. */
  private exitLine: string | null = null;
  private exitN = 0;
  private endedAtMs = 0;
  /** The current client said it acknowledges the job's end (`ends` on an ack): the end waits for its word. */
  private clientAcks = false;
  private lastDetachMs = 0;
  private lastAttachMs = 0;
  /** When the client last acknowledged output (it is still taking it). */
  private lastAckMs = 0;
  /** No client came within the grace, which ended the job: nobody is waited for after its end either. */
  private abandoned = false;
  /** Each writer's last numbered input taken (a client sends again what it was not told of: those up to here are dropped). */
  private readonly inputTaken = new Map<string, number>();
  /** The writer whose numbered input came last ('': one without an id). */
  private lastWriter = '';
  handlers: SessionHandlers = { input: () => undefined, expire: () => undefined };
  private outputPaused = false;
  private firstClient: (() => void) | null = null;
  /** A client acknowledged the job's end (or an older client, which never does, got it). */
  private delivered = false;
  /** close()'s wait: told when the end is delivered or a client leaves. */
  private waiting: (() => void) | null = null;

  constructor(private readonly socketPath: string, private readonly jobId: number, readonly spec: InteractiveSpec, private readonly log: (line: string) => void) {}

  async listen(): Promise<void> {
    if (existsSync(this.socketPath)) unlinkSync(this.socketPath);
    const server = createServer((socket) => this.attach(socket));
    // Created 0600 (the agent's user only: it checked who attaches), with no moment of a looser mode.
    const umask = process.umask(0o177);
    try {
      await new Promise<void>((resolveListen, rejectListen) => {
        server.once('error', rejectListen);
        server.listen(this.socketPath, () => resolveListen());
      });
    } finally {
      process.umask(umask);
    }
    chmodSync(this.socketPath, 0o600);
    this.server = server;
    if (this.spec.idleSeconds > 0) {
      this.idleTimer = setInterval(() => {
        if (Date.now() - this.lastActivityMs >= this.spec.idleSeconds * 1000) {
          this.handlers.expire('TIMEOUT', `interactive session idle (no input and no output) for ${this.spec.idleSeconds} s (interactive_idle)`);
        }
      }, Math.min(1000, this.spec.idleSeconds * 250));
    }
  }

  /**
   * Resolves true when the first client attaches (the job starts then, as
   * srun's step starts once its I/O is connected: nothing it prints is
   * missed), false when none came within the grace.
   */
  waitForClient(): Promise<'attached' | 'grace' | 'cancelled'> {
    if (this.client !== null) return Promise.resolve('attached');
    return new Promise((resolveWait) => {
      // A cancel before the start (the agent cannot reach a control socket yet) is a SIGTERM to the supervisor.
      const onTerm = (): void => done('cancelled');
      const timer = setTimeout(() => done('grace'), this.spec.graceSeconds * 1000);
      const done = (outcome: 'attached' | 'grace' | 'cancelled'): void => {
        clearTimeout(timer);
        process.off('SIGTERM', onTerm);
        this.firstClient = null;
        resolveWait(outcome);
      };
      process.once('SIGTERM', onTerm);
      this.firstClient = () => done('attached');
    });
  }

  /** From the job's start on: a client that left before it started has the grace from now. */
  armGraceIfDetached(): void {
    if (this.client === null) this.armGrace();
  }

  private armGrace(): void {
    if (this.graceTimer !== null || this.ended !== null) return;
    this.graceTimer = setTimeout(() => {
      this.abandoned = true;
      this.handlers.expire('CANCELLED', `no client attached to the interactive session for ${this.spec.graceSeconds} s (interactive_grace); reattach sooner with taras attach`);
    }, this.spec.graceSeconds * 1000);
  }

  private attach(socket: Socket): void {
    socket.on('error', () => undefined);
    if (this.client !== null) {
      this.send(this.client, { t: 'detached', text: 'another client attached to this job: detaching this one' });
      this.client.end();
    }
    this.client = socket;
    this.clientAcks = false;
    this.lastAttachMs = Date.now();
    this.firstClient?.();
    this.firstClient = null;
    if (this.graceTimer !== null) clearTimeout(this.graceTimer);
    this.graceTimer = null;
    this.log(`job ${this.jobId}: a client attached`);
    // What the last writer's input taken is, and who it is: a client that is that writer sends again only what follows.
    this.send(socket, { t: 'hello', pty: this.spec.pty, jobId: this.jobId, inputTaken: this.inputTaken.get(this.lastWriter) ?? 0, ...(this.lastWriter === '' ? {} : { inputWriter: this.lastWriter }) });
    if (this.droppedBytes > 0) this.send(socket, { t: 'note', text: `${this.droppedBytes} bytes of output produced while detached were dropped (the buffer keeps ${this.spec.bufferBytes})` });
    // Every frame not acknowledged: those the last client may have lost in flight, then those none got.
    for (const frame of this.kept) {
      socket.write(frame.line);
      frame.sent = true;
    }
    this.droppedBytes = 0;
    if (this.ended !== null) this.sendEnd(socket);
    let buffer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      if (this.client !== socket) return; // taken over by a newer client: its input no longer counts
      const told = new Set<string>();
      buffer += chunk;
      for (let newline = buffer.indexOf('\n'); newline >= 0; newline = buffer.indexOf('\n')) {
        const frame = parseClientFrame(buffer.slice(0, newline));
        buffer = buffer.slice(newline + 1);
        if (frame === null) continue;
        if (frame.t === 'ack') {
          if (frame.ends === true) this.clientAcks = true;
          this.acknowledged(socket, frame.n);
          continue;
        }
        if (this.ended !== null) continue; // the job is over: nothing takes input
        if (frame.t !== 'size' && frame.i !== undefined) {
          const writer = frame.w ?? '';
          if (frame.i <= (this.inputTaken.get(writer) ?? 0)) continue; // sent again after a reconnect: taken already
          this.inputTaken.delete(writer); // kept in the order of use: the oldest writer is forgotten first
          this.inputTaken.set(writer, frame.i);
          if (this.inputTaken.size > MAX_WRITERS) this.inputTaken.delete(this.inputTaken.keys().next().value!);
          this.lastWriter = writer;
          told.add(writer);
        }
        if (frame.t === 'in') this.lastActivityMs = Date.now();
        this.handlers.input(frame);
      }
      for (const writer of told) this.send(socket, { t: 'inack', i: this.inputTaken.get(writer) ?? 0, ...(writer === '' ? {} : { w: writer }) });
      if (buffer.length > MAX_LINE_BYTES) socket.destroy();
    });
    socket.on('close', () => {
      if (this.client !== socket) return;
      this.client = null;
      this.clientAcks = false;
      this.log(`job ${this.jobId}: the client detached`);
      this.lastDetachMs = Date.now();
      if (this.ended === null) this.armGrace();
      this.waiting?.();
    });
  }

  private send(socket: Socket, frame: object): void {
    socket.write(`${JSON.stringify(frame)}\n`);
  }

  /** Forgets the output frames up to n: the client has them (and the end, when n is its number). */
  private acknowledged(socket: Socket, n: number): void {
    this.lastAckMs = Date.now();
    this.kept.dropWhile((frame) => frame.n <= n);
    if (this.ended !== null && n >= this.exitN) this.endDelivered(socket);
  }

  /** Sends the job's end to a client: it stays connected until it acknowledges it (an older client: a moment). */
  private sendEnd(socket: Socket): void {
    socket.write(this.exitLine!);
    if (this.clientAcks) return;
    setTimeout(() => {
      if (this.client === socket && !this.clientAcks) this.endDelivered(socket);
    }, OLDER_CLIENT_MS).unref();
  }

  private endDelivered(socket: Socket): void {
    if (this.delivered) return;
    this.delivered = true;
    socket.end();
    this.waiting?.();
  }

  /** An output frame, numbered (its line written by `lineOf`): sent to the client and kept until it acknowledges it, or kept for the next one (bounded: the oldest output goes first). */
  private deliver(lineOf: (n: number) => string | Buffer): void {
    const n = ++this.lastN;
    const line = lineOf(n);
    const sent = this.client !== null;
    this.kept.push({ n, line, sent });
    while (this.kept.bytes > this.spec.bufferBytes && this.kept.length > 1) {
      const dropped = this.kept.shift()!;
      if (!dropped.sent) this.droppedBytes += dropped.line.length;
    }
    if (this.client !== null) {
      const client = this.client;
      if (!client.write(line) && client.writableLength > OUTPUT_HIGH_WATER_BYTES && !this.outputPaused) {
        this.outputPaused = true;
        this.handlers.pauseOutput?.();
        const resume = () => {
          client.off('drain', resume);
          client.off('close', resume);
          this.outputPaused = false;
          this.handlers.resumeOutput?.();
        };
        // Sent, or the client gone (then output is kept, bounded, for the next one): read the job's output again.
        client.on('drain', resume);
        client.on('close', resume);
      }
    }
  }

  output(stream: 'out' | 'err', data: Buffer): void {
    this.lastActivityMs = Date.now();
    // JSON.stringify({t, d, n}) as bytes, without its passes over every one: base64 needs no escapes.
    const d = data.toString('base64');
    this.deliver((n) => outputLine(stream, d, n));
  }

  /** Stops reading the client's frames (input the job does not take yet), until `resumeInput`. */
  pauseInput(): void {
    this.client?.pause();
  }

  resumeInput(): void {
    this.client?.resume();
  }

  /** A line from Taras itself (a warning before the time limit). */
  note(text: string): void {
    this.deliver((n) => `${JSON.stringify({ t: 'note', text, n })}\n`);
  }

  /** The job has ended: the client (or the next one, while the supervisor lives) gets the end, numbered, to acknowledge. */
  finish(end: SessionEnd): void {
    if (this.ended !== null) return;
    this.ended = end;
    this.endedAtMs = Date.now();
    this.exitN = ++this.lastN;
    this.exitLine = `${JSON.stringify({ t: 'exit', ...end, n: this.exitN })}\n`;
    if (this.graceTimer !== null) clearTimeout(this.graceTimer);
    if (this.idleTimer !== null) clearInterval(this.idleTimer);
    this.graceTimer = null;
    this.idleTimer = null;
    if (this.client !== null) this.sendEnd(this.client);
  }

  /**
   * Waits (bounded) for a client to acknowledge the job's end and to take the
   * last frames, then stops listening. The end waits for a client up to the
   * grace after it, or after the last client left: `taras attach`, or srun's
   * step resumed after a controller restart, then gets the output and the
   * exit code.
   */
  async close(waitMs: number): Promise<void> {
    if (this.ended !== null && !this.delivered && !(this.abandoned && this.client === null)) {
      if (this.client === null) this.log(`job ${this.jobId}: ended while detached; its output and end wait up to ${this.spec.graceSeconds} s for a client`);
      await new Promise<void>((resolveWait) => {
        let timer: NodeJS.Timeout | null = null;
        const wake = (): void => {
          if (timer !== null) clearTimeout(timer);
          // A client attached may be taking its output slowly (srun into a reader that waits: it reads no more than it
          // can write): it is waited for while connected, up to ATTACHED_END_WAIT_MS after its last acknowledgement.
          const untilMs = this.client === null
            ? Math.max(this.endedAtMs, this.lastDetachMs) + this.spec.graceSeconds * 1000
            : Math.max(this.endedAtMs, this.lastAttachMs, this.lastAckMs) + Math.max(this.spec.graceSeconds * 1000, ATTACHED_END_WAIT_MS);
          if (this.delivered || Date.now() >= untilMs) {
            this.waiting = null;
            resolveWait();
            return;
          }
          timer = setTimeout(wake, untilMs - Date.now());
        };
        this.waiting = wake;
        wake();
      });
      if (!this.delivered) this.log(`job ${this.jobId}: no client acknowledged the job's end within ${this.spec.graceSeconds} s`);
    }
    const client = this.client;
    if (client !== null && !client.destroyed) {
      await new Promise<void>((resolveClose) => {
        const timer = setTimeout(resolveClose, waitMs);
        client.once('close', () => {
          clearTimeout(timer);
          resolveClose();
        });
      });
    }
    // Nothing is left to expire: a grace or idle timer would only keep the process up.
    if (this.graceTimer !== null) clearTimeout(this.graceTimer);
    if (this.idleTimer !== null) clearInterval(this.idleTimer);
    this.graceTimer = null;
    this.idleTimer = null;
    this.server?.close();
    if (existsSync(this.socketPath)) unlinkSync(this.socketPath);
  }
}
