// The terminal session of an interactive job, in its supervisor: a root-only
// Unix socket (JOBDIR/stream.sock, mode 0600) where the agent connects on
// behalf of the job's user (after the controller checked who they are), the
// output kept while nobody is attached (bounded: the oldest bytes go first,
// and the next client is told how many), and the session's own ends: no
// client past the grace, or no input and no output past the idle limit.
// One client at a time: a new one (`taras attach` after a lost connection)
// takes the session over from the old. Node built-ins only.
//
// Output frames are numbered (n = 1, 2, ...) and kept after they are sent
// until the client acknowledges them ({"t":"ack","n":N}), within the same
// bound: a client (the agent, the controller, srun) that dies with frames in
// flight loses nothing, because the next client is sent every frame not
// acknowledged, and its reader drops the numbers it already has (a number
// skipped means output was lost past the bound). A client that never
// acknowledges gets the last bufferBytes of output again on its next attach.
//
// Frames are JSON lines. To the job: {"t":"in","d":BASE64}, {"t":"eof"},
// {"t":"size","cols":N,"rows":N}, {"t":"signal","sig":"SIGINT"},
// {"t":"ack","n":N} (the client has every output frame up to N). From it:
// {"t":"hello","pty":BOOL,"jobId":N}, {"t":"out"|"err","d":BASE64,"n":N},
// {"t":"note","text":"...","n":N} (Taras's own lines: warnings),
// {"t":"note","text":"..."} (replay notices),
// {"t":"detached","text":"..."} (another client took the session over),
// {"t":"exit","state":S,"exitCode":N|null,"signal":S|null,"reason":S|null}.

import { chmodSync, existsSync, unlinkSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';

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

export type ClientFrame =
  | { readonly t: 'in'; readonly d: Buffer }
  | { readonly t: 'eof' }
  | { readonly t: 'size'; readonly cols: number; readonly rows: number }
  | { readonly t: 'signal'; readonly sig: NodeJS.Signals };

/** The client has every output frame numbered up to n (handled by the session itself, never by its handlers). */
export interface AckFrame {
  readonly t: 'ack';
  readonly n: number;
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
  if (f.t === 'in' && typeof f.d === 'string') return { t: 'in', d: Buffer.from(f.d, 'base64') };
  if (f.t === 'eof') return { t: 'eof' };
  if (f.t === 'size' && isDimension(f.cols) && isDimension(f.rows)) return { t: 'size', cols: f.cols, rows: f.rows };
  if (f.t === 'signal' && CLIENT_SIGNALS.includes(f.sig as NodeJS.Signals)) return { t: 'signal', sig: f.sig as NodeJS.Signals };
  if (f.t === 'ack' && Number.isSafeInteger(f.n) && (f.n as number) >= 0) return { t: 'ack', n: f.n as number };
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

export class InteractiveSession {
  private server: Server | null = null;
  private client: Socket | null = null;
  /** Output frames not acknowledged yet, oldest first: sent to a client (`sent`) or waiting for one. */
  private readonly kept: { n: number; line: string; sent: boolean }[] = [];
  private keptBytes = 0;
  /** The last output frame's number. */
  private lastN = 0;
  /** Bytes of output dropped from `kept` before any client got them. */
  private droppedBytes = 0;
  private lastActivityMs = Date.now();
  private graceTimer: NodeJS.Timeout | null = null;
  private idleTimer: NodeJS.Timeout | null = null;
  private ended: SessionEnd | null = null;
  handlers: SessionHandlers = { input: () => undefined, expire: () => undefined };
  private outputPaused = false;
  private firstClient: (() => void) | null = null;
  /** A client got the job's end. */
  private delivered = false;
  private lateClient: (() => void) | null = null;

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
    this.firstClient?.();
    this.firstClient = null;
    if (this.graceTimer !== null) clearTimeout(this.graceTimer);
    this.graceTimer = null;
    this.log(`job ${this.jobId}: a client attached`);
    this.send(socket, { t: 'hello', pty: this.spec.pty, jobId: this.jobId });
    if (this.droppedBytes > 0) this.send(socket, { t: 'note', text: `${this.droppedBytes} bytes of output produced while detached were dropped (the buffer keeps ${this.spec.bufferBytes})` });
    // Every frame not acknowledged: those the last client may have lost in flight, then those none got.
    for (const frame of this.kept) {
      socket.write(frame.line);
      frame.sent = true;
    }
    this.droppedBytes = 0;
    if (this.ended !== null) {
      this.send(socket, { t: 'exit', ...this.ended });
      this.delivered = true;
      socket.end();
      this.lateClient?.();
      return;
    }
    let buffer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      if (this.client !== socket) return; // taken over by a newer client: its input no longer counts
      buffer += chunk;
      for (let newline = buffer.indexOf('\n'); newline >= 0; newline = buffer.indexOf('\n')) {
        const frame = parseClientFrame(buffer.slice(0, newline));
        buffer = buffer.slice(newline + 1);
        if (frame === null) continue;
        if (frame.t === 'ack') {
          this.acknowledged(frame.n);
          continue;
        }
        if (frame.t === 'in') this.lastActivityMs = Date.now();
        this.handlers.input(frame);
      }
      if (buffer.length > MAX_LINE_BYTES) socket.destroy();
    });
    socket.on('close', () => {
      if (this.client !== socket) return;
      this.client = null;
      this.log(`job ${this.jobId}: the client detached`);
      this.armGrace();
    });
  }

  private send(socket: Socket, frame: object): void {
    socket.write(`${JSON.stringify(frame)}\n`);
  }

  /** Forgets the output frames up to n: the client has them. */
  private acknowledged(n: number): void {
    let done = 0;
    while (done < this.kept.length && this.kept[done].n <= n) this.keptBytes -= this.kept[done++].line.length;
    if (done > 0) this.kept.splice(0, done);
  }

  /** An output frame, numbered: sent to the client and kept until it acknowledges it, or kept for the next one (bounded: the oldest output goes first). */
  private deliver(frame: object): void {
    const n = ++this.lastN;
    const line = `${JSON.stringify({ ...frame, n })}\n`;
    const sent = this.client !== null;
    this.kept.push({ n, line, sent });
    this.keptBytes += line.length;
    while (this.keptBytes > this.spec.bufferBytes && this.kept.length > 1) {
      const dropped = this.kept.shift()!;
      this.keptBytes -= dropped.line.length;
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
    this.deliver({ t: stream, d: data.toString('base64') });
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
    this.deliver({ t: 'note', text });
  }

  /** The job has ended: the client (or the next one, while the supervisor lives) gets the end. */
  finish(end: SessionEnd): void {
    this.ended = end;
    if (this.graceTimer !== null) clearTimeout(this.graceTimer);
    if (this.idleTimer !== null) clearInterval(this.idleTimer);
    this.graceTimer = null;
    this.idleTimer = null;
    if (this.client !== null) {
      this.send(this.client, { t: 'exit', ...end });
      this.delivered = true;
      this.client.end();
    }
  }

  /**
   * Waits (bounded) for the client to take the last frames, then stops
   * listening. A job that ended while nobody was attached keeps its session
   * for the grace: `taras attach` then gets the output and the exit code.
   */
  async close(waitMs: number): Promise<void> {
    if (this.ended !== null && !this.delivered && this.client === null) {
      this.log(`job ${this.jobId}: ended while detached; its output waits up to ${this.spec.graceSeconds} s for taras attach`);
      await new Promise<void>((resolveLate) => {
        const timer = setTimeout(resolveLate, this.spec.graceSeconds * 1000);
        this.lateClient = () => {
          clearTimeout(timer);
          resolveLate();
        };
      });
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
    this.server?.close();
    if (existsSync(this.socketPath)) unlinkSync(this.socketPath);
  }
}
