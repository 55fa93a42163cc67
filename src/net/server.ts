// The controller's HTTP transport on node:http: JSON in and out, route tables
// with `:params`, the cluster-key check, the caller's verified identity (an
// Authenticator from identity.ts), and errors as
// `{error, fix}` (ApiError) whatever goes wrong. It knows nothing about jobs:
// the controller hands it routes. One handler serves TCP (loopback by
// default) and a Unix socket at once.

import { randomBytes } from 'node:crypto';
import { isUtf8 } from 'node:buffer';
import { chmodSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { WebSocket, WebSocketServer } from 'ws';
import { MAX_REQUEST_BODY_BYTES, type ApiError } from '../api/types.js';
import { bodyMatchesDigest, carriesSignature, CONTROLLER_DESTINATION, missingSignature, NonceCache, REFUSED_HEADER, verifyDeclaredBody, verifyRequest, type ClusterKey, type Refusal } from './hmac.js';
import { MUNGE_HEADER } from './headers.js';
import { HOW_TO_AUTHENTICATE, type Authenticator, type BeforeBody, type Caller, type Identified, type Transport } from './identity.js';
import { CLUSTER_HOLDER, ConnectionGuard, perUserShare } from './guard.js';
import { claimSocketPath, ListenError } from './listen.js';
import type { NetLog } from './log.js';
import { RouteTable, type HttpMethod, type RouteSpec } from './routes.js';
import { setImmediate as nextTurn } from 'node:timers/promises';

export { ListenError } from './listen.js';
export type { HttpMethod } from './routes.js';

export interface RequestContext {
  readonly method: HttpMethod;
  /** The path without the query string. */
  readonly path: string;
  readonly params: Readonly<Record<string, string>>;
  readonly query: URLSearchParams;
  /** The parsed JSON body; undefined when the request had none. */
  readonly body: unknown;
  /** The verified caller (identity.ts: the socket's peer, a token or a MUNGE credential); null: anonymous. */
  readonly caller: Caller | null;
  readonly transport: Transport;
  /** `127.0.0.1:53422` or `unix:/run/taras.sock`, for logs. */
  readonly remoteAddress: string;
  /** True when the request carried a valid cluster-key signature. */
  readonly signed: boolean;
  /** The route's declared pattern, e.g. `/jobs/:id`. */
  readonly route: string;
}

export interface RouteResult {
  status: number;
  /** Serialised as JSON; omitted for 204. */
  body?: unknown;
}

export type Handler = (ctx: RequestContext) => RouteResult | Promise<RouteResult>;
export type Route = RouteSpec<Handler>;

/**
 * A WebSocket route (GET with `Upgrade: websocket`): checked like any other
 * request (cluster-key signature, the caller's identity) before the handler
 * runs; the handler checks what it must (throwing RouteError answers with an
 * HTTP error and no upgrade), then calls `accept` for the socket.
 */
export type UpgradeHandler = (ctx: RequestContext, accept: () => Promise<WebSocket>) => void | Promise<void>;
export type UpgradeRoute = RouteSpec<UpgradeHandler>;

/** Thrown by a handler to answer with an ApiError: `throw new RouteError(404, 'no job 12', 'list jobs with taras queue')`. */
export class RouteError extends Error {
  /** @param headers sent with the answer, e.g. `{ 'retry-after': '1' }` with a 429. */
  constructor(readonly status: number, message: string, readonly fix?: string, readonly headers?: Record<string, string>) {
    super(message);
    this.name = 'RouteError';
  }
}

export interface ApiServerOptions {
  routes: readonly Route[];
  /** WebSocket routes (interactive jobs' streams); none by default. */
  upgrades?: readonly UpgradeRoute[];
  /** When given, signed requests are verified and routes for which `requireKeyFor` is true (default: all) need a valid signature. */
  clusterKey?: ClusterKey;
  requireKeyFor?: (route: Route) => boolean;
  /** Verifies who sends each request; without it every caller is null (agents' servers: only the cluster key counts). */
  authenticator?: Authenticator;
  log: NetLog;
  /** Largest request body accepted; larger ones get 413. Default 1 MiB. */
  maxBodyBytes?: number;
  maxSkewSeconds?: number;
  /** Milliseconds since the epoch; tests pass a fixed clock. */
  clock?: () => number;
  nonceCacheCapacity?: number;
  /** Whom signed requests must be for (hmac.ts); default CONTROLLER_DESTINATION. An agent knows its own once it listens, hence a function. */
  destination?: () => string;
  /** Most open connections over TCP and the socket together; 0 or undefined: half the open-file limit, at most 4,096 (guard.ts). */
  maxConnections?: number;
  /** Most bytes of request bodies held while still arriving, over every connection; past it a new body gets 503. Default 64 MiB. */
  maxPendingBodyBytes?: number;
  /** A client must send its request headers within this long (default 10 s)... */
  headersTimeoutMs?: number;
  /** ...and its whole request, body included, within this long (default 30 s); else 408 and the connection is closed. */
  requestTimeoutMs?: number;
  /** A connection whose client takes nothing of its answer for this long is closed (default 10 s; guard.ts). */
  sendTimeoutMs?: number;
  /**
   * Bodies only from callers with credentials: over TCP, a request with none (no token, MUNGE credential or
   * signature) that sends a body is refused with 401 before it is read, unless the route is served to
   * anyone (servedWhenCredentialsFail). The controller sets it: none of its routes takes an anonymous body.
   */
  bodiesNeedCredentials?: boolean;
  /** Routes served to a caller whose credentials fail too, as to an anonymous one (the controller: `GET /status`, which says nothing about anybody). */
  servedWhenCredentialsFail?: (route: Route) => boolean;
  /** Most WebSocket streams one verified user holds open at once; past it 429. 0 or undefined: a quarter of the connection cap, at least 16. */
  maxStreamsPerUser?: number;
}

export interface ListenOptions {
  /** Listen on TCP when given (0: an ephemeral port, for tests). */
  port?: number;
  /** Default 127.0.0.1: only this machine. Give 0.0.0.0 or an address for agents on other nodes. */
  host?: string;
  /** Listen on this Unix socket too (or only). A stale file is replaced; a live one is refused. */
  socketPath?: string;
  /** Mode of the socket file; default 0o666 so every local user's CLI can connect. */
  socketMode?: number;
}

export interface BoundAddress {
  tcp?: { host: string; port: number; url: string };
  socketPath?: string;
}

export interface ApiServer {
  /** The connection cap in force (max_connections, or what the open-file limit allows). */
  readonly maxConnections: number;
  listen(options: ListenOptions): Promise<BoundAddress>;
  /** Stops accepting, lets requests in flight finish (up to `graceMs`), then closes every connection. */
  close(graceMs?: number): Promise<void>;
}

/** Past this much discarded body after a 413, the connection is cut rather than drained. */
const DRAIN_LIMIT_BYTES = 16 * 1024 * 1024;
const KEEP_ALIVE_TIMEOUT_MS = 30_000;
const HEADERS_TIMEOUT_MS = 10_000;
const REQUEST_TIMEOUT_MS = 30_000;

const ANONYMOUS: Extract<Identified, { ok: true }> = { ok: true, caller: null };

/** Deepest nesting of arrays and objects a request body may have (the API's bodies need 6): JSON.parse takes 0.4 s over a 1 MiB body of brackets. */
export const MAX_BODY_DEPTH = 64;

/**
 * Whether a JSON text nests arrays and objects deeper than `max`, read from
 * its bytes before parsing (a string's brackets do not count). Stops at the
 * first level too deep, so a hostile body costs what it took to get there.
 * A string is skipped with indexOf to its closing quote: the first one not
 * preceded by an odd run of backslashes (exact for any text JSON.parse takes).
 */
export function nestedDeeperThan(bytes: Uint8Array, max: number): boolean {
  let depth = 0;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i];
    if (c === 0x22) {
      let quote = i;
      for (;;) {
        quote = bytes.indexOf(0x22, quote + 1);
        if (quote < 0) return false; // an unterminated string: JSON.parse refuses it
        let before = quote - 1;
        while (bytes[before] === 0x5c) before--;
        if ((quote - 1 - before) % 2 === 0) break;
      }
      i = quote;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return false;
}

/** A body's content type is JSON: application/json or a +json type, parameters (charset) allowed. */
const JSON_CONTENT_TYPE = /^application\/([\w.-]+\+)?json\s*(;|$)/i;

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 409: 'Conflict', 429: 'Too Many Requests', 500: 'Internal Server Error', 502: 'Bad Gateway', 503: 'Service Unavailable',
};

const JSON_FIX = 'send a JSON document with content-type application/json';

function errorBody(error: string, fix?: string): ApiError {
  return fix === undefined ? { error } : { error, fix };
}

/** A body that is JSON already (UTF-8 bytes made by SQLite, say): sent as it is, not serialised again. */
export class RawJson {
  constructor(readonly bytes: Buffer) {}
}

/**
 * A JSON answer made piece by piece (a route's big listing): the server sends
 * each piece as it comes, and lets other requests be served between pieces,
 * so one caller's listing of 100,000 nodes never holds the others up for
 * its whole length. The pieces joined must be one JSON text.
 */
export class JsonPieces {
  constructor(readonly pieces: Iterable<string>) {}
}

/** Every JSON answer's headers (a whole one adds its length; one in pieces is chunked). */
const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' } as const;

/** Until the response drains (the peer took what was written) or closes. */
const drained = (res: ServerResponse): Promise<void> => new Promise((resolveDrain) => {
  const done = () => {
    res.off('drain', done);
    res.off('close', done);
    resolveDrain();
  };
  res.on('drain', done);
  res.on('close', done);
});

/**
 * Sends JsonPieces chunked: the peer's pace (backpressure) kept, and a whole
 * turn of the event loop between pieces. The first piece is made before
 * anything is sent, so an error there is an ordinary 500 (thrown to the
 * caller); one later cuts the answer, logged with an incident id.
 */
async function sendPieces(res: ServerResponse, status: number, body: JsonPieces, log: NetLog, what: string): Promise<void> {
  const pieces = body.pieces[Symbol.iterator]();
  let next = pieces.next();
  res.writeHead(status, JSON_HEADERS);
  try {
    while (next.done !== true) {
      if (res.destroyed) return; // the caller left: the rest is not made
      if (!res.write(next.value)) await drained(res);
      // A whole turn of the event loop after every piece, drained or not. Waiting for 'drain' alone left
      // others waiting up to 400 ms during a listing of 100,000 nodes to a quick reader; with the turn, 37 ms.
      await nextTurn();
      next = pieces.next();
    }
    res.end();
  } catch (error) {
    // Too late for an error answer: the caller sees a cut answer, not a whole one that is wrong.
    const incident = randomBytes(4).toString('hex');
    log.error(`internal error ${incident} in ${what} after its answer began (the answer was cut): ${error instanceof Error ? error.stack ?? error.message : String(error)}`);
    res.destroy();
  } finally {
    pieces.return?.(); // a generator left early (its caller gone) ends now
  }
}

function send(res: ServerResponse, status: number, body: unknown, extraHeaders: Record<string, string> = {}): void {
  if (res.headersSent) return;
  if (status === 204 || body === undefined) {
    res.writeHead(status, extraHeaders).end();
    return;
  }
  const text = body instanceof RawJson ? body.bytes : JSON.stringify(body);
  res.writeHead(status, { ...JSON_HEADERS, 'content-length': Buffer.byteLength(text), ...extraHeaders });
  res.end(text);
}

type BodyRead = { ok: true; bytes: Buffer } | { ok: false };

/**
 * Collects the body up to `limit` bytes; past it, answers 413 and drains (or
 * cuts) the rest. The bytes held count against the guard's cap on unfinished
 * bodies until the body is complete: past that cap, 503 and the connection is cut.
 */
function readBody(req: IncomingMessage, res: ServerResponse, limit: number, guard: ConnectionGuard, holder: string): Promise<BodyRead> {
  const tooLarge = (): void => {
    // The limit is not a setting (createApiServer's maxBodyBytes): the fix is the sender's.
    send(res, 413, errorBody(`request body is larger than the limit of ${limit} bytes`,
      'send less in one request: a job\'s script and environment together must stay under it (keep large data in files the script reads), and many jobs go in several requests'));
  };
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    tooLarge();
    drainOrCut(req, 0);
    return Promise.resolve({ ok: false });
  }
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let length = 0;
    let held = 0;
    const settle = (result: BodyRead): void => {
      guard.releaseBody(held, holder);
      held = 0;
      resolve(result);
    };
    const onData = (chunk: Buffer): void => {
      length += chunk.length;
      if (length > limit) {
        req.off('data', onData);
        req.off('end', onEnd);
        tooLarge();
        drainOrCut(req, length);
        settle({ ok: false });
        return;
      }
      if (!guard.holdBody(chunk.length, holder)) {
        req.off('data', onData);
        req.off('end', onEnd);
        send(res, 503, errorBody(`the server holds as many bytes of request bodies still arriving as it keeps for this sender (${holder}) or for all`,
          'try again in a moment (slow clients are holding it)'), { 'retry-after': '1', connection: 'close' });
        res.once('finish', () => req.socket.destroy());
        settle({ ok: false });
        return;
      }
      held += chunk.length;
      chunks.push(chunk);
    };
    const onEnd = (): void => settle({ ok: true, bytes: chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, length) });
    req.on('data', onData);
    req.on('end', onEnd);
    // A client that goes away mid-body gets no answer; 'close' after 'end' is a no-op.
    req.on('error', () => settle({ ok: false }));
    req.on('close', () => settle({ ok: false }));
  });
}

/** Reading the rest keeps a keep-alive connection usable and lets the client see the 413; a huge body is not worth it. */
/** A refusal given before the body is read: the connection closes once it is sent, so the body is never taken. */
function refuseBeforeBody(req: IncomingMessage, res: ServerResponse, status: number, body: ApiError): void {
  send(res, status, body, { connection: 'close' });
  res.once('finish', () => req.socket.destroy());
}

function drainOrCut(req: IncomingMessage, alreadyRead: number): void {
  let discarded = alreadyRead;
  req.on('data', (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > DRAIN_LIMIT_BYTES) req.socket.destroy();
  });
  req.resume();
}

/** How long a refused upgrade's socket stays for the answer to leave before it is closed. */
const REFUSED_UPGRADE_LINGER_MS = 1000;
/** The longest a WebSocket handshake may take, checks and the route's own work (opening its upstream) included. */
const UPGRADE_HANDSHAKE_MS = 15_000;

export function createApiServer(options: ApiServerOptions): ApiServer {
  const table = new RouteTable<Handler>(options.routes);
  const { clusterKey, log } = options;
  if (options.requireKeyFor !== undefined && clusterKey === undefined) {
    throw new Error('createApiServer: requireKeyFor is given but no clusterKey: routes meant to need the key would be open to anyone');
  }
  const requireKeyFor = options.requireKeyFor ?? (() => true);
  const maxBodyBytes = options.maxBodyBytes ?? MAX_REQUEST_BODY_BYTES;
  const clock = options.clock ?? Date.now;
  const seenNonces = new NonceCache(options.nonceCacheCapacity, clock());
  const destination = options.destination ?? (() => CONTROLLER_DESTINATION);
  const servers: { server: Server; transport: Transport; socketPath?: string }[] = [];
  const guard = new ConnectionGuard(log, { maxConnections: options.maxConnections, maxPendingBodyBytes: options.maxPendingBodyBytes, maxBodyBytes, sendTimeoutMs: options.sendTimeoutMs });
  const upgrades = options.upgrades !== undefined && options.upgrades.length > 0 ? new RouteTable<UpgradeHandler>(options.upgrades) : null;
  /** ws loads with the first WebSocket route used. */
  let sockets: Promise<WebSocketServer> | null = null;
  /** Upgraded connections are no longer the HTTP server's: close() ends them itself. */
  const liveSockets = new Set<WebSocket>();
  /** Connections that asked for a stream, by verified user (maxStreamsPerUser). */
  const streamsByUser = new Map<string, number>();
  const maxStreamsPerUser = options.maxStreamsPerUser || perUserShare(guard.maxConnections);
  const webSocketServer = (): Promise<WebSocketServer> => (sockets ??= import('ws').then(({ WebSocketServer: Server }) => new Server({ noServer: true, maxPayload: 4 * 1024 * 1024 })));

  /**
   * An HTTP answer on a socket that asked for an upgrade and does not get one;
   * the socket is closed whatever the peer does (an upgrade request is beyond
   * node:http's timeouts: a peer that never closes would keep it forever).
   */
  function refuseUpgrade(socket: Duplex, status: number, error: string, fix?: string, extraHeaders: Record<string, string> = {}): void {
    const text = JSON.stringify(errorBody(error, fix));
    const headers = { 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(text)), connection: 'close', ...extraHeaders };
    socket.end(`HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? 'Error'}\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n${text}`);
    setTimeout(() => socket.destroy(), REFUSED_UPGRADE_LINGER_MS).unref();
  }

  /** What ws's handleUpgrade needs, checked first: it drops a request without them silently (never calling back). */
  function upgradeHeadersProblem(req: IncomingMessage): string | undefined {
    if (req.headers.upgrade?.toLowerCase() !== 'websocket') return 'the request does not ask for a WebSocket (Upgrade: websocket)';
    if (!/^[+/0-9A-Za-z]{22}==$/.test(req.headers['sec-websocket-key'] ?? '')) return 'no valid Sec-WebSocket-Key header';
    if (!['8', '13'].includes(req.headers['sec-websocket-version'] ?? '')) return 'Sec-WebSocket-Version must be 13';
    return undefined;
  }

  async function handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, transport: Transport, socketPath: string | undefined): Promise<void> {
    const target = req.url ?? '/';
    const queryAt = target.indexOf('?');
    const pathname = queryAt < 0 ? target : target.slice(0, queryAt);
    const remote = transport === 'unix' ? `unix:${socketPath}` : `${req.socket.remoteAddress}:${req.socket.remotePort}`;
    // Only GET upgrades (HEAD is not served by a WebSocket route: its handler would act, then fail to upgrade).
    const match = upgrades === null ? null : upgrades.match(req.method ?? 'GET', pathname, { headAsGet: false });
    if (match === null || match.kind !== 'found') {
      refuseUpgrade(socket, 404, `no WebSocket route ${req.method} ${pathname}`, upgrades === null ? 'this server has none' : `valid: ${upgrades.listing.join(', ')}`);
      return;
    }
    const badHeaders = upgradeHeadersProblem(req);
    if (badHeaders !== undefined) {
      refuseUpgrade(socket, 400, `bad WebSocket request: ${badHeaders}`, 'use a WebSocket client (taras attach)');
      return;
    }
    // The whole handshake (checks, the route's own work, the upgrade) has a deadline: a stalled one is dropped.
    const handshake = setTimeout(() => socket.destroy(), UPGRADE_HANDSHAKE_MS);
    handshake.unref();
    let signed = false;
    if (clusterKey !== undefined && (requireKeyFor(match.route as unknown as Route) || carriesSignature(req.headers))) {
      const verdict = verifyRequest(clusterKey, { method: req.method ?? 'GET', path: target, body: Buffer.alloc(0), headers: req.headers },
        { now: clock(), maxSkewSeconds: options.maxSkewSeconds, seenNonces, destination: destination() });
      if (!verdict.ok) {
        log.warn(`refused ${req.method} ${target} (WebSocket) from ${remote}: ${verdict.reason}`);
        refuseUpgrade(socket, 401, `cluster key check failed: ${verdict.reason}`, verdict.fix, { [REFUSED_HEADER]: verdict.code });
        return;
      }
      signed = true;
    }
    let identified: Identified = ANONYMOUS;
    if (options.authenticator !== undefined) {
      const verdict = options.authenticator.identify(req, transport, target, Buffer.alloc(0));
      identified = verdict instanceof Promise ? await verdict : verdict;
    }
    if (!identified.ok) {
      log.warn(`refused ${req.method} ${target} (WebSocket) from ${remote}: ${identified.reason}`);
      refuseUpgrade(socket, 401, identified.reason, identified.fix);
      return;
    }
    const user = identified.caller?.user;
    if (user !== undefined) {
      // A slot for each of a user's streams, from here until the connection closes (refused, failed or ended alike).
      const open = streamsByUser.get(user) ?? 0;
      if (open >= maxStreamsPerUser) {
        clearTimeout(handshake);
        log.warn(`refused ${req.method} ${target} (WebSocket) from ${remote}: ${user} has ${open} streams open (cap ${maxStreamsPerUser})`);
        refuseUpgrade(socket, 429, `${user} has ${open} WebSocket streams open (taras attach, taras run, srun), the most one user may hold at once (${maxStreamsPerUser})`,
          'end some of those sessions and try again; an administrator can raise max_streams_per_user in cluster.toml', { 'retry-after': '5' });
        return;
      }
      streamsByUser.set(user, open + 1);
      let held = true;
      const release = () => {
        if (!held) return;
        held = false;
        const left = (streamsByUser.get(user) ?? 1) - 1;
        if (left > 0) streamsByUser.set(user, left);
        else streamsByUser.delete(user);
      };
      socket.once('close', release);
      // A peer gone while its credentials were checked (a token or MUNGE check is asynchronous) has closed already.
      if (socket.destroyed) {
        clearTimeout(handshake);
        release();
        return;
      }
    }
    // Only a verified caller's stream is kept from being displaced as idle when connections run short.
    if (user !== undefined || signed) guard.streaming(req.socket as Socket);
    const ctx: RequestContext = {
      method: 'GET', path: pathname, params: match.params, query: new URLSearchParams(queryAt < 0 ? '' : target.slice(queryAt + 1)), body: undefined,
      caller: identified.caller, transport, remoteAddress: remote, signed, route: match.route.path,
    };
    let accepted = false;
    const accept = async (): Promise<WebSocket> => {
      accepted = true;
      const server = await webSocketServer();
      return new Promise((resolveSocket, rejectSocket) => {
        // A peer gone before the upgrade: the route must not wait for it (and lets go of what it opened for it).
        const gone = () => rejectSocket(new Error('the client left before the WebSocket was open'));
        if (socket.destroyed) return gone();
        socket.once('close', gone);
        server.handleUpgrade(req, socket, head, (webSocket) => {
          socket.off('close', gone);
          clearTimeout(handshake);
          liveSockets.add(webSocket);
          webSocket.once('close', () => liveSockets.delete(webSocket));
          resolveSocket(webSocket);
        });
      });
    };
    try {
      await match.route.handler(ctx, accept);
      if (!accepted) clearTimeout(handshake);
    } catch (error) {
      clearTimeout(handshake);
      if (accepted) {
        log.error(`WebSocket GET ${match.route.path} from ${remote} failed: ${error instanceof Error ? error.stack ?? error.message : String(error)}`);
        socket.destroy();
      } else if (error instanceof RouteError) {
        refuseUpgrade(socket, error.status, error.message, error.fix, error.headers);
      } else {
        const incident = randomBytes(4).toString('hex');
        log.error(`internal error ${incident} in WebSocket ${match.route.path} (${target}) from ${remote}: ${error instanceof Error ? error.stack ?? error.message : String(error)}`);
        refuseUpgrade(socket, 500, `internal error while handling ${match.route.path} (incident ${incident})`, `the log has the details under incident ${incident}`);
      }
    }
  }

  function refuseSignature(req: IncomingMessage, res: ServerResponse, remote: string, refusal: Refusal): void {
    log.warn(`refused ${req.method} ${req.url} from ${remote}: ${refusal.reason}`);
    send(res, 401, errorBody(`cluster key check failed: ${refusal.reason}`, refusal.fix), { [REFUSED_HEADER]: refusal.code });
  }

  async function handle(req: IncomingMessage, res: ServerResponse, transport: Transport, socketPath: string | undefined): Promise<void> {
    const target = req.url ?? '/';
    const queryAt = target.indexOf('?');
    const pathname = queryAt < 0 ? target : target.slice(0, queryAt);
    const method = req.method ?? 'GET';
    const remote = transport === 'unix' ? `unix:${socketPath}` : `${req.socket.remoteAddress}:${req.socket.remotePort}`;

    const match = table.match(method, pathname);
    if (match.kind === 'no-path') {
      send(res, 404, errorBody(`no such API route: ${method} ${pathname}`, `valid routes: ${match.valid.join(', ')}`));
      return;
    }
    if (match.kind === 'wrong-method') {
      send(res, 405, errorBody(`${method} is not allowed on ${pathname} (allowed: ${match.allowed.join(', ')})`, `valid routes: ${match.valid.join(', ')}`),
        { allow: match.allowed.join(', ') });
      return;
    }
    if (match.kind === 'bad-encoding') {
      send(res, 400, errorBody(`malformed percent-encoding in path segment "${match.segment}"`, 'encode path parameters with encodeURIComponent'));
      return;
    }
    const { route, params } = match;
    const keyRequired = clusterKey !== undefined && requireKeyFor(route);
    const signatureClaimed = carriesSignature(req.headers);
    if (keyRequired && !signatureClaimed) {
      // Refused before reading the body: no need to receive what will not be used.
      refuseSignature(req, res, remote, missingSignature);
      return;
    }

    // Who sends the body, where that is known before it is read: the kernel's word on the socket, a bearer
    // token, a signature for the body it declares. A caller refused now sends no body; one with no
    // credentials at all sends none over TCP (only what anyone may see is served to it, and that takes no
    // body); and each sender holds at most its share of the memory kept for bodies still arriving.
    // A MUNGE credential is decoded now too (munged says whose it is); its binding to the body is checked once
    // the body is in (checkBody).
    let identified: Identified | undefined;
    let checkBody: BeforeBody['checkBody'];
    if (options.authenticator !== undefined && (transport === 'unix' || req.headers.authorization !== undefined || typeof req.headers[MUNGE_HEADER] === 'string')) {
      const verdict = options.authenticator.identifyBefore(req, transport, target);
      ({ identified, checkBody } = verdict instanceof Promise ? await verdict : verdict);
    }
    const sendsBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
    // A signature that declares its body's digest is checked whole now (the nonce remembered): one that fails
    // sends no body, and one that holds gets the room kept for the cluster's own requests.
    const declared = clusterKey !== undefined && signatureClaimed
      ? verifyDeclaredBody(clusterKey, { method, path: target, headers: req.headers }, { now: clock(), maxSkewSeconds: options.maxSkewSeconds, seenNonces, destination: destination() })
      : undefined;
    if (declared !== undefined && !declared.ok) {
      refuseSignature(req, res, remote, declared);
      drainOrCut(req, 0); // read and dropped, never held
      return;
    }
    const signedBeforeBody = declared?.ok === true;
    if (sendsBody && options.bodiesNeedCredentials === true && !signedBeforeBody && transport !== 'unix' && options.authenticator !== undefined && identified === undefined) {
      // Bodies come only with credentials.
      refuseBeforeBody(req, res, 401, errorBody(`no verified identity: ${method} ${pathname} takes a request body only from a verified caller, and this request carries no credentials`, HOW_TO_AUTHENTICATE));
      return;
    }
    if (sendsBody && identified !== undefined && !identified.ok && options.servedWhenCredentialsFail?.(route) !== true) {
      log.warn(`refused ${method} ${target} from ${remote}: ${identified.reason}`);
      refuseBeforeBody(req, res, 401, errorBody(identified.reason, identified.fix));
      return;
    }
    // Senders not known before the body (a signature without its digest; credentials that fail, on a route served
    // to anyone) share one holder: changing one's address (127.0.0.2, ...) buys no more room.
    const holder = signedBeforeBody ? CLUSTER_HOLDER
      : identified?.ok === true && identified.caller !== null ? `user ${identified.caller.user}` : transport === 'unix' ? `address ${remote}` : 'unverified senders';

    guard.receiving(req.socket);
    const read = await readBody(req, res, maxBodyBytes, guard, holder);
    if (!read.ok) return;
    guard.answering(req.socket);
    let signed = false;
    if (signedBeforeBody) {
      if (!bodyMatchesDigest(read.bytes, req.headers)) {
        refuseSignature(req, res, remote, { ok: false, code: 'bad-signature', reason: 'bad signature',
          fix: "the client's cluster key differs from the controller's, or the request was altered in transit: copy the controller's key file to this node (mode 600)" });
        return;
      }
      signed = true;
    } else if (clusterKey !== undefined && signatureClaimed) {
      // A signature that is present is checked even where none is required, so a wrong key is reported at once.
      const verdict = verifyRequest(clusterKey, { method, path: target, body: read.bytes, headers: req.headers },
        { now: clock(), maxSkewSeconds: options.maxSkewSeconds, seenNonces, destination: destination() });
      if (!verdict.ok) {
        refuseSignature(req, res, remote, verdict);
        return;
      }
      signed = true;
    }

    if (identified === undefined) {
      identified = ANONYMOUS;
      if (options.authenticator !== undefined) {
        const verdict = options.authenticator.identify(req, transport, target, read.bytes);
        identified = verdict instanceof Promise ? await verdict : verdict;
      }
    } else if (identified.ok && checkBody !== undefined) {
      // A MUNGE credential's payload: this method, path and body, or the credential is refused (and left unused).
      identified = checkBody(read.bytes) ?? identified;
    }
    if (!identified.ok) {
      if (options.servedWhenCredentialsFail?.(route) === true) {
        identified = ANONYMOUS; // what anyone may see, credentials or not (a uid with no passwd entry, an expired token)
      } else {
        log.warn(`refused ${method} ${target} from ${remote}: ${identified.reason}`);
        send(res, 401, errorBody(identified.reason, identified.fix));
        return;
      }
    }

    let body: unknown;
    if (read.bytes.length > 0) {
      const contentType = req.headers['content-type'];
      if (contentType === undefined || !JSON_CONTENT_TYPE.test(contentType)) {
        send(res, 415, errorBody(`request body is ${contentType === undefined ? 'sent with no content type' : `of type ${JSON.stringify(contentType.slice(0, 80))}`}: the API takes JSON only`,
          'send it with the header content-type: application/json (curl: -H "content-type: application/json"); nothing was changed'));
        return;
      }
      if (!isUtf8(read.bytes)) {
        send(res, 400, errorBody('request body is not valid UTF-8', `${JSON_FIX}, encoded in UTF-8; nothing was changed`));
        return;
      }
      if (nestedDeeperThan(read.bytes, MAX_BODY_DEPTH)) {
        send(res, 400, errorBody(`request body nests arrays and objects more than ${MAX_BODY_DEPTH} levels deep`, 'send the JSON the API documents (its bodies nest a few levels); nothing was changed'));
        return;
      }
      try {
        body = JSON.parse(read.bytes.toString('utf8'));
      } catch (error) {
        send(res, 400, errorBody(`request body is not valid JSON: ${(error as Error).message}`, JSON_FIX));
        return;
      }
    }

    const ctx: RequestContext = {
      method: route.method,
      path: pathname,
      params,
      query: new URLSearchParams(queryAt < 0 ? '' : target.slice(queryAt + 1)),
      body,
      caller: identified.caller,
      transport,
      remoteAddress: remote,
      signed,
      route: route.path,
    };
    try {
      const result = await route.handler(ctx);
      if (result.body instanceof JsonPieces) await sendPieces(res, result.status, result.body, log, `${method} ${route.path} (${target}) from ${remote}`);
      else send(res, result.status, result.body);
    } catch (error) {
      if (error instanceof RouteError) {
        send(res, error.status, errorBody(error.message, error.fix), error.headers);
        return;
      }
      const incident = randomBytes(4).toString('hex');
      log.error(`internal error ${incident} in ${method} ${route.path} (${target}) from ${remote}: ${error instanceof Error ? error.stack ?? error.message : String(error)}`);
      send(res, 500, errorBody(`internal error in the controller while handling ${method} ${route.path} (incident ${incident})`,
        `the controller's log has the details under incident ${incident}; report it if it happens again`));
    }
  }

  function makeServer(transport: Transport, socketPath?: string): Server {
    const server = createServer({
      headersTimeout: options.headersTimeoutMs ?? HEADERS_TIMEOUT_MS,
      requestTimeout: options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS,
      // How often node:http looks for connections past those limits (default 30 s).
      connectionsCheckingInterval: Math.min(1_000, options.headersTimeoutMs ?? HEADERS_TIMEOUT_MS),
    }, (req, res) => {
      if (!guard.admitted(req.socket)) return;
      res.once('finish', () => guard.idle(req.socket));
      handle(req, res, transport, socketPath).catch((error: unknown) => {
        log.error(`request handling failed: ${error instanceof Error ? error.stack ?? error.message : String(error)}`);
        send(res, 500, errorBody('internal error in the controller', "see the controller's log"));
      });
    });
    server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      socket.on('error', () => undefined);
      if (!guard.admitted(req.socket)) return;
      handleUpgrade(req, socket, head, transport, socketPath).catch((error: unknown) => {
        log.error(`WebSocket handling failed: ${error instanceof Error ? error.stack ?? error.message : String(error)}`);
        socket.destroy();
      });
    });
    guard.attach(server, transport === 'unix' ? `Unix socket ${socketPath}` : 'TCP');
    servers.push({ server, transport, socketPath });
    return server;
  }

  async function listenOn(server: Server, target: { port: number; host: string } | { path: string }, describe: string): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      const onError = (error: NodeJS.ErrnoException): void => reject(ListenError.from(error, describe));
      server.once('error', onError);
      server.listen(target, () => {
        server.off('error', onError); // later errors (accept failures) go to the guard's log
        resolve();
      });
    });
  }

  async function listenAll(o: ListenOptions, bound: BoundAddress): Promise<void> {
    if (o.socketPath !== undefined) {
      const path = o.socketPath;
      await claimSocketPath(path, log);
      const server = makeServer('unix', path);
      await listenOn(server, { path }, `Unix socket ${path}`);
      chmodSync(path, o.socketMode ?? 0o666);
      bound.socketPath = path;
    }
    if (o.port !== undefined) {
      const host = o.host ?? '127.0.0.1';
      const server = makeServer('tcp');
      await listenOn(server, { port: o.port, host }, `port ${o.port} on ${host}`);
      const address = server.address() as AddressInfo;
      const urlHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
      bound.tcp = { host: address.address, port: address.port, url: `http://${urlHost}:${address.port}` };
    }
  }

  return {
    maxConnections: guard.maxConnections,
    async listen(listenOptions: ListenOptions): Promise<BoundAddress> {
      if (listenOptions.port === undefined && listenOptions.socketPath === undefined) {
        throw new ListenError('nothing to listen on', 'give a TCP port, a Unix socket path, or both');
      }
      const bound: BoundAddress = {};
      try {
        await listenAll(listenOptions, bound);
      } catch (error) {
        // Leave nothing half-open: a socket bound while the port failed would block a retry.
        await this.close(0);
        throw error;
      }
      return bound;
    },

    async close(graceMs = 5_000): Promise<void> {
      guard.close();
      for (const webSocket of liveSockets) webSocket.terminate();
      const closing = servers.splice(0).map(({ server }) => new Promise<void>((resolve) => {
        const force = setTimeout(() => server.closeAllConnections(), graceMs);
        force.unref();
        server.close(() => {
          clearTimeout(force);
          resolve();
        });
        server.closeIdleConnections();
      }));
      await Promise.all(closing);
    },
  };
}
