// The controller's API as the CLI and agents call it: JSON over node:http with
// keep-alive, on TCP or the local Unix socket, each request carrying the
// caller's credentials (none on the socket: the kernel vouches; a token or a
// MUNGE credential on TCP) and, when a cluster key is given, its signature. Errors
// come back as values with a fix. On `taras submit`'s start-up path: import
// only node built-ins and small modules here.

import { Agent, request, type ClientRequestArgs, type IncomingMessage } from 'node:http';
import { connect as connectSocket, type Socket } from 'node:net';
import { CONTROLLER_DESTINATION, REFUSED_HEADER } from './headers.js';
import type { ClusterKey, RefusalCode } from './hmac.js';
import type { NetLog } from './log.js';

export type ControllerTarget = ({ baseUrl: string } | { socketPath: string }) & {
  peer?: PeerCheck;
  /** An agent, not the controller: the words of a failed connection (the controller's agent links). */
  agent?: boolean;
};

/**
 * Who may answer: called with the uid of the process at the other end, read once connected, before a byte is
 * sent (a Unix socket: SO_PEERCRED; TCP on this machine: the accepted end's owner in /proc/net/tcp, see
 * tcp-peer.ts); a refusal (why, and the fix) ends the request with UntrustedPeerError. The CLI gives one for
 * a socket it found by itself (the file could be another user's socket by the time it connects) and for an
 * address on this machine (another user may listen on the port while the controller is down).
 */
export type PeerCheck = (uid: number) => { message: string; fix: string } | undefined;

/**
 * The check between Taras's own daemons (the controller and its agents; an agent listens on 127.0.0.1): the
 * process at the other end runs as root, as this process's user, or as `also()` (the uid an agent's signed
 * registration gave). The cluster key proves who sends, not who receives: another local user's process on
 * the port of a daemon that is down (a restart) got the controller's start orders (a job's script and its
 * submitter's environment) and the agent's registration, whose answer's kill list the agent carried out
 * (red team). Another machine's end is not listed here, and passes (tcp-peer.ts).
 */
export function daemonPeer(what: string, also: () => number | undefined = () => undefined): PeerCheck {
  return (uid) => (uid === 0 || uid === process.getuid?.() || uid === also() ? undefined : {
    message: `the process listening at ${what} runs as uid ${uid}, not as root or as this daemon's user (another user's process took the port while the daemon was down?): nothing is sent to it`,
    fix: `stop that process and start ${what} again`,
  });
}

/** Headers proving who sends a request: fixed (a bearer token) or made per request (MUNGE binds its credential to the request). */
export type Credentials = (method: string, pathWithQuery: string, body: Uint8Array) => Record<string, string> | Promise<Record<string, string>>;

/** A bearer token as credentials. */
export const bearer = (token: string): Credentials => {
  const headers = { authorization: `Bearer ${token}` };
  return () => headers;
};

export interface ApiClientOptions {
  /** Absent: none (the Unix socket, or agents, who sign with the cluster key). */
  credentials?: Credentials;
  /** Sign every request (agents; the CLI where the controller requires it). */
  clusterKey?: ClusterKey;
  /** Per request; default 30 s. */
  timeoutMs?: number;
  /** Where refusals of our signature are logged (agents pass theirs); the error is thrown either way. */
  log?: NetLog;
  /** Milliseconds since the epoch, for signatures; tests skew it. */
  clock?: () => number;
  /** Whom signed requests are for (hmac.ts): an agent's destination, default the controller. */
  destination?: string;
}

export interface ApiClient {
  /** `http://127.0.0.1:7070` or `unix:/run/taras/controller.sock`, for messages. */
  readonly address: string;
  get<T = unknown>(path: string): Promise<T>;
  post<T = unknown>(path: string, body?: unknown): Promise<T>;
  put<T = unknown>(path: string, body?: unknown): Promise<T>;
  delete<T = unknown>(path: string): Promise<T>;
  /** Closes kept-alive connections (idle ones never keep the process alive). */
  close(): void;
}

/** The controller answered, with an error status: its `{error, fix}`. */
export class ApiRequestError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    readonly fix: string | undefined,
    readonly method: string,
    readonly path: string,
    /** Set when the controller refused the cluster-key signature. */
    readonly refusal?: RefusalCode,
    /** The answer's Retry-After, in whole seconds: the controller did nothing and asks to be asked again then. */
    readonly retryAfterSeconds?: number,
  ) {
    super(error);
    this.name = 'ApiRequestError';
  }
}

/** No answer: nothing listens, the socket is missing or closed to us, or the controller is too slow. */
/** Connection errors that mean the request never reached its server (it was not carried out). */
const NEVER_SENT = new Set(['ECONNREFUSED', 'ENOENT', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'EACCES', 'EPERM']);

export class ControllerUnreachableError extends Error {
  constructor(message: string, readonly address: string, readonly code: string, readonly fix: string) {
    super(message);
    this.name = 'ControllerUnreachableError';
  }

  /** True when the request never reached the server; false when it may have been carried out (a reset, a timeout). */
  get neverSent(): boolean {
    return NEVER_SENT.has(this.code);
  }
}

/** The process listening on the socket is not one the caller trusts (PeerCheck): nothing was sent to it. */
export class UntrustedPeerError extends Error {
  constructor(message: string, readonly address: string, readonly fix: string) {
    super(message);
    this.name = 'UntrustedPeerError';
  }
}

/**
 * An Agent whose connections are handed to a request only once the process at the other end passes `check`:
 * node:http writes a request to a connection as soon as it has one, so the check sits between connect and
 * that hand-over. The native addon (SO_PEERCRED) loads with the first Unix socket connection. A TCP end not
 * listed on this machine (another machine or network namespace) is not checked.
 */
class PeerCheckedAgent extends Agent {
  private addon: Promise<{ peerCred(fd: number): { uid: number } }> | undefined;

  constructor(private readonly where: { path: string } | { host: string; port: number }, private readonly address: string, private readonly check: PeerCheck) {
    super({ keepAlive: true });
  }

  private async peerUid(socket: Socket): Promise<number | undefined> {
    if (!('path' in this.where)) {
      // The ends as they are now: a socket closed by the time the tables are read has none any more.
      const { localAddress, localPort, remoteAddress, remotePort } = socket;
      return (await import('./tcp-peer.js')).tcpPeerUidAsync({ localAddress, localPort, remoteAddress, remotePort });
    }
    this.addon ??= import('./native.js').then(({ nativeAddon }) => nativeAddon());
    const native = await this.addon;
    const fd = (socket as unknown as { _handle?: { fd?: number } })._handle?.fd;
    if (typeof fd !== 'number' || fd < 0) throw new Error('the connection has no descriptor');
    return native.peerCred(fd).uid;
  }

  override createConnection(_options: ClientRequestArgs, done?: (error: Error | null, socket: Socket) => void): undefined {
    const socket = connectSocket('path' in this.where ? { path: this.where.path } : { host: this.where.host, port: this.where.port });
    let settled = false;
    const settle = (error: Error | null): void => {
      if (settled) return;
      settled = true;
      socket.off('error', settle);
      if (error !== null) socket.destroy();
      done?.(error, socket);
    };
    socket.once('error', settle);
    socket.once('connect', () => {
      this.peerUid(socket).then((uid) => {
        const refusal = uid === undefined ? undefined : this.check(uid);
        if (refusal !== undefined) settle(new UntrustedPeerError(refusal.message, this.address, refusal.fix));
        // Closed by the far end while it was checked: no request can go, and none must wait on it.
        else if (socket.destroyed || !socket.writable) settle(Object.assign(new Error('the connection was closed before a request could be sent'), { code: 'ECONNRESET' }));
        else settle(null);
      }).catch((error: Error) => settle(new UntrustedPeerError(`cannot tell who listens on ${'path' in this.where ? this.where.path : this.address}, so nothing is sent to it: ${error.message}`, this.address,
        'give the controller\'s socket with --controller unix:PATH, or its TCP address')));
    });
    return undefined;
  }
}

/** The connection a target names, and how messages name it. */
type Endpoint = { where: { path: string } | { host: string; port: number }; address: string; basePath: string; protocol: string };

function endpoint(target: ControllerTarget): Endpoint {
  if ('socketPath' in target) return { where: { path: target.socketPath }, address: `unix:${target.socketPath}`, basePath: '', protocol: 'unix:' };
  const url = new URL(target.baseUrl);
  return {
    where: { host: url.hostname.replace(/^\[|\]$/g, ''), port: url.port === '' ? 80 : Number(url.port) }, address: url.origin,
    basePath: url.pathname.replace(/\/+$/, ''), protocol: url.protocol,
  };
}

/** An agent for `target` (at `ends`): its peer checked once connected when it has a check. */
function agentFor(target: ControllerTarget, ends = endpoint(target)): Agent {
  return target.peer === undefined ? new Agent({ keepAlive: true }) : new PeerCheckedAgent(ends.where, ends.address, target.peer);
}

const DEFAULT_TIMEOUT_MS = 30_000;
const START_HINT = 'is it running? start it with `npm start` or set TARAS_CONTROLLER';

/** Codes of a connection that found no one listening (or no such host): nothing was sent. */
const NOT_LISTENING = new Set(['ECONNREFUSED', 'ENOENT', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);

function unreachable(error: NodeJS.ErrnoException, address: string, method: string, timeoutMs: number, toAgent = false): ControllerUnreachableError {
  const code = error.code ?? 'UNKNOWN';
  const failed = (message: string, fix: string) => new ControllerUnreachableError(message, address, code, fix);
  // The controller's orders to an agent: its log says which agent, and nothing of the CLI's remedies.
  if (toAgent) {
    if (code === 'ETIMEDOUT') return failed(`the agent at ${address} did not answer within ${timeoutMs / 1000} s`, 'check the agent\'s log and its node\'s load');
    if (NOT_LISTENING.has(code)) return failed(`the agent at ${address} is not reachable (${code})`, 'start `taras agent` on its node again; it registers itself');
    return failed(`lost the connection to the agent at ${address}: ${error.message}`, 'check the agent\'s log');
  }
  if (code === 'EACCES' || code === 'EPERM') {
    return failed(`not allowed to connect to the controller at ${address}`,
      'ask the administrator to let your user open the socket (mode 666 on the socket, or your group), or use the TCP address');
  }
  if (code === 'ETIMEDOUT') {
    return failed(`controller at ${address} did not answer within ${timeoutMs / 1000} s`, method === 'GET' ? 'try again; if it persists, check the controller\'s log and load'
      : 'the request may or may not have been carried out: check with `taras queue` before repeating it');
  }
  if (NOT_LISTENING.has(code)) {
    return failed(`controller not reachable at ${address} (${START_HINT})`, 'start the controller with `npm start`, or point TARAS_CONTROLLER (or --controller) at the running one');
  }
  return failed(`lost the connection to the controller at ${address}: ${error.message}`,
    method === 'GET' ? 'try again' : 'the request may or may not have been carried out: check with `taras queue` before repeating it');
}

/** Signing loads node:crypto; only clients holding the key pay for it (the CLI usually does not). */
let signing: Promise<typeof import('./hmac.js')> | undefined;
const loadSigning = (): Promise<typeof import('./hmac.js')> => (signing ??= import('./hmac.js'));

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

function readAll(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (chunk: Buffer) => chunks.push(chunk));
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    res.on('error', reject);
  });
}

/**
 * A WebSocket to `path` (an interactive job's stream), authenticated as the
 * client's other requests are: its credentials and, with a cluster key, its
 * signature (over GET, the path and an empty body). A refusal comes back as
 * ApiRequestError with the server's {error, fix}. ws loads here only.
 */
export async function openWebSocket(target: ControllerTarget, path: string, options: ApiClientOptions): Promise<import('ws').WebSocket> {
  const { WebSocket } = await import('ws');
  let url: string;
  let address: string;
  let fullPath: string;
  let agent: Agent | undefined;
  if (target.peer !== undefined) agent = agentFor(target);
  if ('socketPath' in target) {
    fullPath = path;
    url = `ws+unix://${target.socketPath}:${path}`;
    address = `unix:${target.socketPath}`;
  } else {
    const base = new URL(target.baseUrl);
    fullPath = base.pathname.replace(/\/+$/, '') + path;
    url = `ws://${base.host}${fullPath}`;
    address = base.origin;
  }
  const headers: Record<string, string> = {};
  const empty = new Uint8Array(0);
  if (options.credentials !== undefined) Object.assign(headers, await options.credentials('GET', fullPath, empty));
  if (options.clusterKey !== undefined) {
    const { signRequest, freshNonce } = await loadSigning();
    Object.assign(headers, signRequest(options.clusterKey, {
      method: 'GET', path: fullPath, body: empty, timestamp: (options.clock ?? Date.now)(), nonce: freshNonce(), destination: options.destination ?? CONTROLLER_DESTINATION,
    }));
  }
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers, handshakeTimeout: timeoutMs, maxPayload: 4 * 1024 * 1024, ...(agent === undefined ? {} : { agent }) });
    // Paused until the caller has its listeners on: nothing the other end sends first is lost (resume() to start).
    socket.once('open', () => {
      socket.pause();
      resolve(socket);
    });
    socket.once('unexpected-response', (_req, res) => {
      readAll(res).then((text) => {
        const parsed = parseJson(text);
        const apiError = parsed.ok && typeof (parsed.value as { error?: unknown })?.error === 'string' ? (parsed.value as { error: string; fix?: string }) : undefined;
        reject(new ApiRequestError(res.statusCode ?? 0, apiError?.error ?? `HTTP ${res.statusCode} from ${address}`, apiError?.fix, 'GET', path,
          res.headers[REFUSED_HEADER] as RefusalCode | undefined));
      }, (error: NodeJS.ErrnoException) => reject(unreachable(error, address, 'GET', timeoutMs, target.agent)));
    });
    socket.once('error', (error: NodeJS.ErrnoException) => reject(error instanceof UntrustedPeerError ? error : unreachable(error, address, 'GET', timeoutMs, target.agent)));
    // A kept-alive connection would keep the process waiting: the agent is for this one socket.
    socket.once('close', () => agent?.destroy());
  });
}

export function createApiClient(target: ControllerTarget, options: ApiClientOptions): ApiClient {
  const ends = endpoint(target);
  if ('baseUrl' in target && ends.protocol !== 'http:') {
    throw new ControllerUnreachableError(`controller address ${target.baseUrl} is not an http:// URL`, target.baseUrl, 'EINVAL',
      'give an address like http://127.0.0.1:7070, or a Unix socket path');
  }
  const agent = agentFor(target, ends);
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const clock = options.clock ?? Date.now;
  const destination = options.destination ?? CONTROLLER_DESTINATION;
  const { where, address, basePath } = ends;
  const connection = 'path' in where ? { socketPath: where.path } : where;

  async function send<T>(method: string, path: string, body: unknown, retried: boolean): Promise<T> {
    const fullPath = basePath + path;
    const payload = body === undefined ? Buffer.alloc(0) : Buffer.from(JSON.stringify(body), 'utf8');
    const headers: Record<string, string | number> = { accept: 'application/json' };
    if (options.credentials !== undefined) {
      const proof = options.credentials(method, fullPath, payload);
      Object.assign(headers, proof instanceof Promise ? await proof : proof);
    }
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = payload.length;
    }
    if (options.clusterKey !== undefined) {
      const { signRequest, freshNonce } = await loadSigning();
      Object.assign(headers, signRequest(options.clusterKey, { method, path: fullPath, body: payload, timestamp: clock(), nonce: freshNonce(), destination }));
    }
    return new Promise<T>((resolve, reject) => {
      // servername '': no TLS here, and without it the agent works out a TLS server name from the host, whose
      // IP test compiles Node's IPv6 expression: about 4 ms of every one-request command such as `taras submit`.
      const requestOptions = { ...connection, agent, method, path: fullPath, headers, servername: '' };
      const req = request(requestOptions, (res) => {
        readAll(res).then((text) => {
          const status = res.statusCode ?? 0;
          const parsed = text === '' ? { ok: true as const, value: undefined } : parseJson(text);
          if (status >= 200 && status < 300) {
            if (parsed.ok) resolve(parsed.value as T);
            else reject(new ApiRequestError(status, `controller at ${address} answered ${method} ${path} with something that is not JSON`, 'check that TARAS_CONTROLLER points at a Taras controller', method, path));
            return;
          }
          const apiError = parsed.ok && typeof (parsed.value as { error?: unknown })?.error === 'string' ? (parsed.value as { error: string; fix?: string }) : undefined;
          const refusal = res.headers[REFUSED_HEADER] as RefusalCode | undefined;
          const retryAfter = Number(res.headers['retry-after']);
          const error = new ApiRequestError(status, apiError?.error ?? `HTTP ${status} ${res.statusMessage ?? ''} from ${address}`.trim(),
            apiError?.fix, method, path, refusal, Number.isInteger(retryAfter) && retryAfter >= 0 ? retryAfter : undefined);
          if (refusal !== undefined) options.log?.warn(`controller at ${address} refused ${method} ${path}: ${error.error}`);
          reject(error);
        }, (error: NodeJS.ErrnoException) => reject(unreachable(error, address, method, timeoutMs, target.agent)));
      });
      req.setTimeout(timeoutMs, () => req.destroy(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' })));
      req.on('error', (error: NodeJS.ErrnoException) => {
        // A kept-alive connection the controller closed just as we reused it: the request never arrived, so sending it again is safe.
        if (req.reusedSocket && error.code === 'ECONNRESET' && !retried) {
          send<T>(method, path, body, true).then(resolve, reject);
          return;
        }
        reject(error instanceof UntrustedPeerError ? error : unreachable(error, address, method, timeoutMs, target.agent));
      });
      req.end(payload);
    });
  }

  return {
    address,
    get: (path) => send('GET', path, undefined, false),
    post: (path, body) => send('POST', path, body, false),
    put: (path, body) => send('PUT', path, body, false),
    delete: (path) => send('DELETE', path, undefined, false),
    close: () => agent.destroy(),
  };
}
