// What keeps one client (or a thousand) from taking the API server down: a
// cap on open connections shared by TCP and the Unix socket, a cap on the
// memory held by request bodies still being received, and running out of
// file descriptors survived and logged once per burst.
//
// A failed accept for lack of descriptors rarely reaches Node: libuv then
// accepts and closes the waiting connections itself (its "EMFILE trick") and
// says nothing. So the guard also counts this process's open files every 5 s
// (/proc/self/fd against the soft limit, which `prlimit` can lower at any
// time) and logs when 90% are in use, and again when fewer than 80% are: the
// administrator learns why clients were cut off. Meanwhile the connection cap
// comes down to nine tenths of the connections then open (a tenth closed at
// once, oldest not being answered first), so that new clients displace idle
// ones again instead of being dropped unseen. Descriptors the server does
// not count (the database, connections out to agents, mail and job pipes)
// count there too.
//
// At the connection cap a new connection is not simply refused: a
// connection that is not being answered makes room (one idle for a second or
// more, having asked nothing or between requests; then one whose client takes
// nothing of its answer; then one that has asked nothing for less; then one
// still sending its request; then one between a command's two requests), as
// a Slowloris flood then only ever displaces itself and a real client gets in
// at once. Only when every connection is being answered does a new one get
// 503 with Retry-After. Each connection's own time limits (headers, whole
// request, keep-alive) are node:http's, set by the server.
//
// An answer the client does not take is no reason to keep its connection: a
// client that asks and never reads would otherwise hold its slot (and the
// answer, in memory) for good, and a few thousand of them would shut every
// other user and the agents out. Once a second the guard looks at every
// connection with bytes of an answer still waiting to go out: one whose
// client has taken nothing for `sendTimeoutMs` (10 s, Slurm's
// MessageTimeout) is closed, and at the cap one that has taken nothing
// since the last look makes room like an idle one (after them). WebSocket
// streams are left alone: their relays stop reading once a megabyte waits.

import { closeSync, openSync, readdirSync, readFileSync, readSync } from 'node:fs';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { NetLog } from './log.js';

/** Where a connection is: nothing asked (or between requests), a request's body arriving, a request being answered. */
type Stage = 'idle' | 'receiving' | 'answering';


/** The holder of bodies signed with the cluster key (agents, the controller): room kept for them (see holdBody). */
export const CLUSTER_HOLDER = 'cluster-key';
export interface GuardOptions {
  /** Most open connections over every listener; 0 or undefined: half the open-file limit, at most 4,096. */
  maxConnections?: number;
  /** Most bytes of request bodies held while still arriving, over every connection. */
  maxPendingBodyBytes?: number;
  /** The largest body one request may have: each sender may always hold one. */
  maxBodyBytes?: number;
  /** A connection whose client takes nothing of its answer for this long is closed (default 10 s). */
  sendTimeoutMs?: number;
}

const DEFAULT_SEND_TIMEOUT_MS = 10_000;
/** At the cap, connections idle this long go first; those idle for less (a command between its requests) last. */
const IDLE_FIRST_MS = 1_000;
/** How often the guard looks for answers their clients do not take. */
const STALL_CHECK_MS = 1_000;

const DEFAULT_MAX_PENDING_BODY_BYTES = 64 * 1024 * 1024;
/** A run of accept failures for lack of descriptors ends after this long without one: then the count is logged. */
const BURST_QUIET_MS = 5_000;

/** How often the guard counts this process's open files. */
const DESCRIPTOR_CHECK_MS = 5_000;
/** Share of the open-file limit in use at which the guard warns, and below which it says the shortage is over. */
const DESCRIPTORS_SHORT = 0.9;
const DESCRIPTORS_BACK = 0.8;
/** While descriptors are short, the cap comes down to nine tenths of the connections open, but not below this. */
const MIN_CAP_WHEN_SHORT = 8;

/** Files this process has open (its /proc/self/fd); Infinity when none is left to read that; null where /proc does not say. */
export function openFileCount(): number | null {
  try {
    return readdirSync('/proc/self/fd').length - 1; // the directory's own descriptor, open while it is read
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'EMFILE' || code === 'ENFILE' ? Infinity : null;
  }
}

/** The soft limit on open files of this process (`ulimit -n`), or null where /proc does not say. */
export function openFileLimit(): number | null {
  try {
    return limitIn(readFileSync('/proc/self/limits', 'utf8'));
  } catch {
    return null;
  }
}

/** The soft "Max open files" of a /proc/PID/limits text. */
function limitIn(text: string): number | null {
  const line = /^Max open files\s+(\d+|unlimited)/m.exec(text);
  if (!line) return null;
  return line[1] === 'unlimited' ? Infinity : Number(line[1]);
}

/** Half the descriptors for clients (the rest: database, agents, job supervisors, logs), 16 to 4,096. */
export function defaultMaxConnections(limit = openFileLimit()): number {
  if (limit === null) return 512;
  return Math.max(16, Math.min(4096, Math.floor(limit / 2)));
}

/** The first item of an ordered collection (a Map's oldest entry, a Set's oldest member). */
function first<T>(items: Iterable<T>): T | undefined {
  for (const item of items) return item;
  return undefined;
}

/** What one user may hold of a connection cap at once (WebSocket streams, reads waiting their turn): a quarter, at least 16. */
export function perUserShare(maxConnections: number): number {
  return Math.max(16, Math.floor(maxConnections / 4));
}

const OVERLOADED = (what: string, fix: string): string => {
  const body = JSON.stringify({ error: what, fix });
  return `HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nretry-after: 1\r\nconnection: close\r\n\r\n${body}`;
};

export class ConnectionGuard {
  readonly maxConnections: number;
  /** The cap in force: maxConnections, or fewer while descriptors are short (checkDescriptors). */
  private cap: number;
  readonly maxPendingBodyBytes: number;
  /** Open connections in the order they came, with where each is. */
  private readonly open = new Map<Socket, Stage>();
  /** Connections that have asked nothing yet, in the order they came, with when (performance.now()). */
  private readonly fresh = new Map<Socket, number>();
  /** Connections between two requests, in the order their last answer went out, with when (performance.now()). */
  private readonly between = new Map<Socket, number>();
  /** Connections receiving a request, in the order they began. */
  private readonly receivingNow = new Set<Socket>();
  /** Connections told to come back (503): whatever they send is not handled. */
  private readonly turnedAway = new WeakSet<Socket>();
  /** WebSocket streams: never closed for an answer not taken (their relays pause instead). */
  private readonly streams = new WeakSet<Socket>();
  /** Connections with answer bytes waiting: how far their sending had got when last seen (progress), and since when it has not moved. */
  private readonly sending = new Map<Socket, { progress: string; sinceMs: number }>();
  readonly sendTimeoutMs: number;
  private stallWatch: NodeJS.Timeout | null = null;
  /** Connections closed for an answer not taken since the last log line about it. */
  private stalled = 0;
  private stalledLogged = -Infinity;
  private pendingBodyBytes = 0;
  private readonly bodyBytesBy = new Map<string, number>();
  /** What one sender may hold, and all but CLUSTER_HOLDER together (see holdBody). */
  private readonly bodyShare: number;
  private readonly othersShare: number;
  private burst: { refused: number; timer: NodeJS.Timeout } | null = null;
  /** Connections refused or displaced since the last log line about it. */
  private shed = 0;
  private shedLogged = 0;

  constructor(private readonly log: NetLog, options: GuardOptions = {}) {
    const limit = openFileLimit();
    let max = options.maxConnections || defaultMaxConnections(limit);
    // More client connections than descriptors would leave none for the database, the agents and the
    // jobs: the kernel's limit wins, and the administrator is told.
    if (limit !== null && max > limit - 64) {
      const fitting = defaultMaxConnections(limit);
      log.warn(`max_connections = ${max} is more than the open-file limit of this process allows (${limit}): using ${fitting}; raise the limit (ulimit -n, LimitNOFILE=) to allow more`);
      max = fitting;
    }
    this.maxConnections = max;
    this.cap = max;
    this.maxPendingBodyBytes = options.maxPendingBodyBytes ?? DEFAULT_MAX_PENDING_BODY_BYTES;
    this.bodyShare = Math.max(this.maxPendingBodyBytes / 4, options.maxBodyBytes ?? 0);
    this.othersShare = Math.max(this.maxPendingBodyBytes * 0.75, options.maxBodyBytes ?? 0);
    this.sendTimeoutMs = options.sendTimeoutMs ?? DEFAULT_SEND_TIMEOUT_MS;
  }

  /**
   * /proc/self/limits kept open while descriptors are counted: opening it takes a descriptor, and
   * the limit is wanted most when none is left. Read again from its start, it says the limit now.
   */
  private limitsFd: number | null = null;

  private currentLimit(): number | null {
    if (this.limitsFd === null) return openFileLimit();
    try {
      const bytes = Buffer.alloc(4096);
      const size = readSync(this.limitsFd, bytes, 0, bytes.length, 0);
      return limitIn(bytes.toString('utf8', 0, size));
    } catch {
      return null;
    }
  }

  /** The descriptor count's timer (started by the first attach), and whether the last count was short. */
  private descriptorWatch: NodeJS.Timeout | null = null;
  private descriptorsShort = false;

  /** Counts the server's connections and keeps them under the cap; logs accept failures. */
  attach(server: Server, describe: string): void {
    if (this.descriptorWatch === null) {
      try {
        this.limitsFd = openSync('/proc/self/limits', 'r');
      } catch {
        // No /proc: the limit is read each time, when a descriptor is free.
      }
      this.descriptorWatch = setInterval(() => this.checkDescriptors(), DESCRIPTOR_CHECK_MS);
      this.descriptorWatch.unref();
      this.stallWatch = setInterval(() => this.checkStalled(), Math.min(STALL_CHECK_MS, this.sendTimeoutMs));
      this.stallWatch.unref();
    }
    server.on('connection', (socket: Socket) => this.admit(socket));
    server.on('error', (error: NodeJS.ErrnoException) => {
      if (!server.listening) return; // a failed listen: the caller reports it
      if (error.code === 'EMFILE' || error.code === 'ENFILE') this.outOfDescriptors(describe, error.code);
      else this.log.error(`${describe}: ${error.message}`);
    });
  }

  private admit(socket: Socket): void {
    if (this.open.size >= this.cap && !this.displaceOne()) {
      this.noteShed();
      // Every connection is being answered: this one is told to come back, not queued.
      socket.end(OVERLOADED(`the server is answering ${this.open.size} connections, its limit (max_connections)`,
        'try again in a moment; an administrator may raise max_connections in cluster.toml (and the open-file limit, ulimit -n)'));
      this.turnedAway.add(socket);
      return;
    }
    this.open.set(socket, 'idle');
    this.fresh.set(socket, performance.now());
    socket.once('close', () => this.forget(socket));
  }

  private forget(socket: Socket): void {
    this.open.delete(socket);
    this.unclassify(socket);
    this.sending.delete(socket);
  }

  /** Takes a connection out of the orders of displacement (fresh, between, receiving). */
  private unclassify(socket: Socket): void {
    this.fresh.delete(socket);
    this.between.delete(socket);
    this.receivingNow.delete(socket);
  }

  /** Records where an open connection now is, at the end of its stage's order (idle: between requests). */
  private moveTo(socket: Socket, stage: Stage): void {
    if (!this.open.has(socket)) return;
    this.open.set(socket, stage);
    this.unclassify(socket);
    if (stage === 'receiving') this.receivingNow.add(socket);
    else if (stage === 'idle') this.between.set(socket, performance.now());
  }

  /**
   * Closes a connection that is not being answered, to make room at the cap, in this order:
   * 1. one idle for a second or more, having asked nothing or between requests (the one waiting longest);
   * 2. one whose client has taken nothing of its answer for a second or more (checkStalled looks once a second);
   * 3. one that has asked nothing yet, for less than a second (oldest first): a flood of empty connections;
   * 4. one still sending its request (a POST whose body is on its way);
   * 5. one between two requests for less than a second (a command such as sinfo, which asks twice).
   * A new connection waits for a busy event loop to read its request: while clients that do not read their
   * answers hold slots, they go before it. Each class is kept in its order: a flood at the cap costs a look at
   * the first of each (and at the connections with answers waiting, for the second).
   */
  private displaceOne(now = performance.now()): boolean {
    const oldestFresh = first(this.fresh);
    const oldestBetween = first(this.between);
    const oldFresh = oldestFresh !== undefined && now - oldestFresh[1] >= IDLE_FIRST_MS ? oldestFresh : undefined;
    const longIdle = oldestBetween !== undefined && now - oldestBetween[1] >= IDLE_FIRST_MS ? oldestBetween : undefined;
    let victim = (oldFresh !== undefined && (longIdle === undefined || oldFresh[1] <= longIdle[1]) ? oldFresh : longIdle)?.[0];
    if (victim === undefined) {
      for (const socket of this.sending.keys()) {
        if (this.notTaking(socket, now)) {
          victim = socket;
          break;
        }
      }
    }
    victim ??= oldestFresh?.[0] ?? first(this.receivingNow) ?? oldestBetween?.[0];
    if (victim === undefined) return false;
    this.forget(victim);
    victim.destroy();
    this.noteShed();
    return true;
  }

  /**
   * How far a connection's sending has got: the bytes handed to the kernel in whole writes (bytesWritten counts
   * those still queued too), and what libuv still holds of the write in flight. A big answer is one write, and
   * only the second moves while the client takes it.
   */
  private static progressOf(socket: Socket): string {
    const handle = (socket as unknown as { _handle?: { writeQueueSize?: number } | null })._handle;
    return `${(socket.bytesWritten ?? 0) - socket.writableLength}:${handle?.writeQueueSize ?? ''}`;
  }

  /**
   * Has bytes to send, and its client has taken none for a second or more: since a look at least that long ago
   * (just after a look, a client that reads steadily may not have taken anything yet).
   */
  private notTaking(socket: Socket, now: number): boolean {
    const seen = this.sending.get(socket);
    return seen !== undefined && now - seen.sinceMs >= IDLE_FIRST_MS && socket.writableLength > 0 && ConnectionGuard.progressOf(socket) === seen.progress;
  }

  /** Closes the connections whose clients have taken nothing of their answers for sendTimeoutMs; notes the others' progress. */
  checkStalled(now = performance.now()): void {
    let closed = 0;
    for (const [socket, stage] of this.open) {
      if (stage !== 'answering' || this.streams.has(socket) || socket.writableLength === 0) {
        this.sending.delete(socket);
        continue;
      }
      const progress = ConnectionGuard.progressOf(socket);
      const seen = this.sending.get(socket);
      if (seen === undefined || seen.progress !== progress) {
        this.sending.set(socket, { progress, sinceMs: now });
        continue;
      }
      if (now - seen.sinceMs < this.sendTimeoutMs) continue;
      this.forget(socket);
      socket.destroy();
      closed++;
    }
    // A flood would log a line per connection: at most one line every 10 s, with the count since the last.
    this.stalled += closed;
    if (this.stalled > 0 && now - this.stalledLogged >= 10_000) {
      this.log.warn(`closed ${this.stalled} connection(s) whose client took nothing of its answer for ${this.sendTimeoutMs / 1000} s `
        + '(a client that asks and does not read, or one stopped or gone without closing)');
      this.stalledLogged = now;
      this.stalled = 0;
    }
  }

  private noteShed(): void {
    this.shed++;
    // A flood would log a line per connection: once at the first, then at most every 10 s with the count.
    const now = Date.now();
    if (this.shed === 1 || now - this.shedLogged >= 10_000) {
      this.log.warn(`at the connection limit (${this.cap}): closed the oldest connections not being answered `
        + `(${this.shed} so far); a client that is too slow or a flood of connections (raise max_connections if the clients are real)`);
      this.shedLogged = now;
    }
  }

  private outOfDescriptors(describe: string, code: string): void {
    if (this.burst === null) {
      this.log.error(`${describe}: out of file descriptors (${code}) accepting a connection; refusing connections until some close `
        + `(${this.open.size} open; raise the open-file limit, ulimit -n, or lower max_connections)`);
      this.burst = { refused: 0, timer: setTimeout(() => this.endBurst(describe), BURST_QUIET_MS) };
      this.burst.timer.unref();
      return;
    }
    this.burst.refused++;
    this.burst.timer.refresh();
  }

  private endBurst(describe: string): void {
    if (this.burst !== null && this.burst.refused > 0) {
      this.log.warn(`${describe}: file descriptors are available again; ${this.burst.refused} more connections were refused meanwhile`);
    }
    this.burst = null;
  }

  /** Stops counting descriptors (the servers are closing). */
  close(): void {
    if (this.descriptorWatch !== null) clearInterval(this.descriptorWatch);
    this.descriptorWatch = null;
    if (this.stallWatch !== null) clearInterval(this.stallWatch);
    this.stallWatch = null;
    if (this.limitsFd !== null) closeSync(this.limitsFd);
    this.limitsFd = null;
  }

  /** Logs when this process has used up (or is close to) its open-file limit, and when that is over. */
  checkDescriptors(used = openFileCount(), limit = this.currentLimit()): void {
    if (used === null || limit === null || !Number.isFinite(limit)) return;
    if (!this.descriptorsShort && used >= DESCRIPTORS_SHORT * limit) {
      this.descriptorsShort = true;
      // New connections would be dropped unseen: the cap comes down, so that the oldest connections not being
      // answered make room for new ones again, and a tenth of them go now.
      const connections = this.open.size;
      this.cap = Math.max(MIN_CAP_WHEN_SHORT, Math.min(this.cap, Math.floor(connections * 0.9)));
      while (this.open.size > this.cap && this.displaceOne());
      this.log.error(`${used >= limit ? 'all' : used} of this process's ${limit} file descriptors are in use (${connections} client connections): `
        + `new connections are dropped when none are left (by the kernel, before they can be answered); connections are capped at ${this.cap} `
        + 'until descriptors are free again; raise the open-file limit (ulimit -n, LimitNOFILE=) or lower max_connections');
    } else if (this.descriptorsShort && used < DESCRIPTORS_BACK * limit) {
      this.descriptorsShort = false;
      this.cap = this.maxConnections;
      this.log.warn(`file descriptors are available again: ${used} of ${limit} in use; connections are capped at ${this.cap} again`);
    }
  }

  /** False for a connection that was answered 503 at the cap: its requests are not handled. */
  admitted(socket: Socket): boolean {
    return !this.turnedAway.has(socket);
  }

  /** A request's headers are in: its connection is no longer idle. */
  receiving(socket: Socket): void {
    this.moveTo(socket, 'receiving');
  }

  /** The request is being answered (its body is in): its connection is not displaced. */
  answering(socket: Socket): void {
    this.moveTo(socket, 'answering');
  }

  /** A WebSocket stream: answered for its whole life, and never closed for output its client has not taken yet. */
  streaming(socket: Socket): void {
    this.streams.add(socket);
    this.answering(socket);
  }

  /** The answer is sent: the connection waits for the next request (keep-alive). */
  idle(socket: Socket): void {
    this.moveTo(socket, 'idle');
  }

  /**
   * Reserves room for `bytes` more of an unfinished body sent by `holder` (a verified user, a client
   * address, or CLUSTER_HOLDER for requests signed with the cluster key); false past the holder's share.
   * One holder may keep at most a quarter of the limit (or one largest body), and all but CLUSTER_HOLDER
   * together three quarters: slow bodies from one user or address cannot starve the others, nor the agents.
   */
  holdBody(bytes: number, holder: string): boolean {
    const held = this.bodyBytesBy.get(holder) ?? 0;
    const cluster = holder === CLUSTER_HOLDER;
    if (this.pendingBodyBytes + bytes > (cluster ? Math.max(this.maxPendingBodyBytes, this.othersShare) : this.othersShare)) return false;
    if (!cluster && held + bytes > this.bodyShare) return false;
    this.pendingBodyBytes += bytes;
    this.bodyBytesBy.set(holder, held + bytes);
    return true;
  }

  releaseBody(bytes: number, holder: string): void {
    if (bytes === 0) return;
    this.pendingBodyBytes -= bytes;
    const left = (this.bodyBytesBy.get(holder) ?? bytes) - bytes;
    if (left > 0) this.bodyBytesBy.set(holder, left);
    else this.bodyBytesBy.delete(holder);
  }
}
