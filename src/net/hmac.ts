// Request signing with the shared cluster key: agents and the controller prove
// they hold the same secret on every request. The signature covers
// METHOD\nPATH\nTIMESTAMP\nNONCE\nDESTINATION\nsha256(BODY), the digest also sent in
// its own header so the signature can be checked before the body is read; the timestamp
// bounds how long a captured request stays valid, the nonce cache refuses a
// second use within that window, and the destination (`controller`, or one
// agent's nodes, address and boot id) refuses it anywhere else: at another
// agent, or at the same agent once restarted (a new boot id, an empty nonce
// cache). Pure apart from `loadClusterKey`/`generateClusterKey`.

import { createHash, createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';

import { BODY_DIGEST_HEADER, DESTINATION_HEADER, NONCE_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER } from './headers.js';
import { writeSecretFile } from './private-files.js';

export { BODY_DIGEST_HEADER, CONTROLLER_DESTINATION, DESTINATION_HEADER, NONCE_HEADER, REFUSED_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER } from './headers.js';

/** The secret bytes shared by the controller and its agents. */
export type ClusterKey = Buffer;

export interface SignedParts {
  method: string;
  /** The request target as sent: path and query string (`/jobs?user=ada`). */
  path: string;
  body: Uint8Array | string;
  /** Milliseconds since the Unix epoch, as the client's clock reads it. */
  timestamp: number;
  nonce: string;
  /** Whom the request is for: CONTROLLER_DESTINATION or agentDestination(...). */
  destination: string;
}

export type SignatureHeaders = {
  [BODY_DIGEST_HEADER]: string;
  [TIMESTAMP_HEADER]: string;
  [NONCE_HEADER]: string;
  [DESTINATION_HEADER]: string;
  [SIGNATURE_HEADER]: string;
};

/**
 * The destination of requests to one agent process: the nodes it serves (first,
 * last and count, so the header stays short), the `host:port` it listens on,
 * and the boot id it drew at start and gave the controller when registering.
 */
export function agentDestination(nodes: readonly string[], hostPort: string, bootId: string): string {
  const span = nodes.length <= 1 ? (nodes[0] ?? '') : `${nodes[0]}..${nodes[nodes.length - 1]}`;
  return `agent ${span} (${nodes.length} node${nodes.length === 1 ? '' : 's'}) at ${hostPort} boot ${bootId}`;
}

/** What the server saw: the request target, raw body bytes and its headers. */
export interface ReceivedRequest {
  method: string;
  path: string;
  body: Uint8Array | string;
  headers: Readonly<Record<string, string | string[] | undefined>>;
}

export type RefusalCode = 'missing-signature' | 'bad-signature' | 'wrong-destination' | 'clock-skew' | 'replayed-nonce';

export type Verification =
  | { ok: true }
  | { ok: false; code: RefusalCode; reason: string; fix: string };

export interface VerifyOptions {
  /** The verifier's clock, milliseconds since the epoch. */
  now: number;
  maxSkewSeconds?: number;
  seenNonces: NonceCache;
  /** This server's destination: a request signed for another is refused. */
  destination: string;
}

const DEFAULT_MAX_SKEW_SECONDS = 300;
const NONCE_PATTERN = /^[A-Za-z0-9_-]{16,64}$/;
/** Printable ASCII, no newline (it is a line of the signed text), bounded. */
const DESTINATION_PATTERN = /^[\x20-\x7e]{1,512}$/;
const TIMESTAMP_PATTERN = /^\d{1,16}$/;
const EMPTY_BODY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

function bodyDigest(body: Uint8Array | string): string {
  return body.length === 0 ? EMPTY_BODY_SHA256 : createHash('sha256').update(body).digest('hex');
}

function canonical(parts: Omit<SignedParts, 'body'>, bodyHash: string): string {
  return `${parts.method.toUpperCase()}\n${parts.path}\n${parts.timestamp}\n${parts.nonce}\n${parts.destination}\n${bodyHash}`;
}

function hmac(key: ClusterKey, parts: SignedParts, bodyHash = bodyDigest(parts.body)): Buffer {
  return createHmac('sha256', key).update(canonical(parts, bodyHash)).digest();
}

/** A nonce no earlier request used: 128 random bits. */
export function freshNonce(): string {
  return randomUUID();
}

export function signRequest(key: ClusterKey, parts: SignedParts): SignatureHeaders {
  const digest = bodyDigest(parts.body);
  return {
    [BODY_DIGEST_HEADER]: digest,
    [TIMESTAMP_HEADER]: String(parts.timestamp),
    [NONCE_HEADER]: parts.nonce,
    [DESTINATION_HEADER]: parts.destination,
    [SIGNATURE_HEADER]: hmac(key, parts, digest).toString('hex'),
  };
}


/** True when the request carries any of the signature headers (so it means to be signed). */
export function carriesSignature(headers: ReceivedRequest['headers']): boolean {
  return headers[SIGNATURE_HEADER] !== undefined || headers[TIMESTAMP_HEADER] !== undefined || headers[NONCE_HEADER] !== undefined
    || headers[DESTINATION_HEADER] !== undefined;
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? undefined : value;
}

export type Refusal = Extract<Verification, { ok: false }>;

function refuse(code: RefusalCode, reason: string, fix: string): Refusal {
  return { ok: false, code, reason, fix };
}

/** The answer to a request without the signature headers; a server can give it before reading the body. */
export const missingSignature: Refusal = refuse('missing-signature', 'missing signature',
  `sign requests with the cluster key (headers ${TIMESTAMP_HEADER}, ${NONCE_HEADER}, ${DESTINATION_HEADER}, ${SIGNATURE_HEADER}): give this client the controller's key file, mode 600`);

/**
 * Checks, in order: the headers are there, the signature matches (so nothing
 * below is reported to a caller without the key), the timestamp is within the
 * skew window, and the nonce is new. The nonce is remembered only when all
 * checks pass, so refused requests cannot fill the cache.
 */
export function verifyRequest(key: ClusterKey, request: ReceivedRequest, options: VerifyOptions): Verification {
  return verifyFor(key, request, bodyDigest(request.body), options);
}

/**
 * verifyRequest before the body is read, for the SHA-256 the request declares in BODY_DIGEST_HEADER: every
 * check, the nonce remembered when all pass. Undefined when it declares none (then verifyRequest, with the
 * body). The server must then see that the body it reads has that digest (bodyMatchesDigest).
 */
export function verifyDeclaredBody(key: ClusterKey, request: Omit<ReceivedRequest, 'body'>, options: VerifyOptions): Verification | undefined {
  const digest = single(request.headers[BODY_DIGEST_HEADER]);
  if (digest === undefined) return undefined;
  if (!/^[0-9a-f]{64}$/.test(digest)) return refuse('bad-signature', 'bad signature', `${BODY_DIGEST_HEADER} must be the body's SHA-256 in lowercase hex`);
  return verifyFor(key, request, digest, options);
}

/** Whether a body read after verifyDeclaredBody is the one its signature declared. */
export function bodyMatchesDigest(body: Uint8Array, headers: ReceivedRequest['headers']): boolean {
  return single(headers[BODY_DIGEST_HEADER]) === bodyDigest(body);
}

function verifyFor(key: ClusterKey, request: Omit<ReceivedRequest, 'body'>, bodyHash: string, options: VerifyOptions): Verification {
  const maxSkewSeconds = options.maxSkewSeconds ?? DEFAULT_MAX_SKEW_SECONDS;
  const timestampText = single(request.headers[TIMESTAMP_HEADER]);
  const nonce = single(request.headers[NONCE_HEADER]);
  const signatureHex = single(request.headers[SIGNATURE_HEADER]);
  const destination = single(request.headers[DESTINATION_HEADER]);
  if (timestampText === undefined || nonce === undefined || signatureHex === undefined || destination === undefined) return missingSignature;
  const badSignature = refuse('bad-signature', 'bad signature',
    "the client's cluster key differs from the controller's, or the request was altered in transit: copy the controller's key file to this node (mode 600)");
  const timestamp = TIMESTAMP_PATTERN.test(timestampText) ? Number(timestampText) : NaN;
  if (!Number.isSafeInteger(timestamp) || !NONCE_PATTERN.test(nonce) || !/^[0-9a-f]{64}$/i.test(signatureHex) || !DESTINATION_PATTERN.test(destination)) return badSignature;
  const expected = hmac(key, { method: request.method, path: request.path, body: '', timestamp, nonce, destination }, bodyHash);
  if (!timingSafeEqual(expected, Buffer.from(signatureHex, 'hex'))) return badSignature;

  if (destination !== options.destination) {
    return refuse('wrong-destination', `signed for ${destination}, not for this ${options.destination}`,
      'a captured request was sent to another agent or to a restarted one, or the sender knows this agent from an earlier start: it learns the new boot id at the agent\'s next registration');
  }

  const skewMs = timestamp - options.now;
  if (Math.abs(skewMs) > maxSkewSeconds * 1000) {
    const seconds = Math.round(Math.abs(skewMs) / 1000);
    return refuse('clock-skew', `clock skew ${seconds} s`,
      `the client's clock is ${seconds} s ${skewMs > 0 ? 'ahead of' : 'behind'} the controller's (at most ${maxSkewSeconds} s allowed): synchronise both clocks (NTP, e.g. chrony or systemd-timesyncd)`);
  }
  const seen = options.seenNonces.remember(nonce, timestamp, options.now, maxSkewSeconds * 1000);
  if (seen === 'replayed') {
    return refuse('replayed-nonce', 'replayed nonce',
      'a request with this nonce was already accepted: a captured request was sent again, or a client reuses nonces (each request needs a fresh one)');
  }
  if (seen === 'before-start') {
    return refuse('replayed-nonce', 'signed before this server started: the run before it may have accepted it (accepted nonces are kept in memory only)',
      'sign it anew and send it again (agents do so by themselves); a client whose clock lags this server\'s by N s is refused for N s after each start: synchronise the clocks (NTP)');
  }
  if (seen === 'before-horizon') {
    const seconds = Math.round(Math.abs(skewMs) / 1000);
    return refuse('clock-skew', `clock skew ${seconds} s (the replay cache is full: only requests newer than ${options.seenNonces.horizonAgeSeconds(options.now)} s are accepted)`,
      "synchronise the client's clock with the controller's; under this request rate the accepted window is narrower than usual");
  }
  return { ok: true };
}

export type NonceVerdict = 'fresh' | 'replayed' | 'before-start' | 'before-horizon';

/**
 * Nonces accepted within the skew window. A nonce with timestamp t can be
 * replayed only while t is within the window, so it is kept until t + skew.
 * When full, the oldest entries are dropped and the horizon rises to their
 * timestamp: requests at or before it are refused, since a replay of a
 * dropped nonce could no longer be recognised. The bound costs only clients
 * whose clocks lag, never a replay slipping through.
 */
export class NonceCache {
  /** Nonce -> its request's timestamp, in arrival order. */
  private readonly timestamps = new Map<string, number>();
  private horizon: number;

  /**
   * `startedAtMs`: when the server started. The nonces it accepted before are gone with its memory, so
   * nothing signed before then is accepted (a request captured before a restart cannot be replayed after it).
   * A request signed in the very millisecond the server started is taken: the run before had ended by then
   * (a process takes far longer than a millisecond to start), so it cannot have accepted it.
   */
  constructor(readonly capacity = 200_000, private readonly startedAtMs = -Infinity) {
    if (!(capacity >= 1)) throw new RangeError(`nonce cache capacity must be at least 1, got ${capacity}`);
    this.horizon = startedAtMs - 1; // requests at or before the horizon are refused: those signed before the start
  }

  get size(): number {
    return this.timestamps.size;
  }

  /** Whether a request with this nonce was accepted within the window. */
  has(nonce: string): boolean {
    return this.timestamps.has(nonce);
  }

  /** Seconds between `now` and the horizon; requests older than this are refused. */
  horizonAgeSeconds(now: number): number {
    return Math.max(0, Math.round((now - this.horizon) / 1000));
  }

  remember(nonce: string, timestamp: number, now: number, maxSkewMs: number): NonceVerdict {
    this.dropExpired(now - maxSkewMs);
    if (this.timestamps.has(nonce)) return 'replayed';
    if (timestamp < this.startedAtMs) return 'before-start';
    if (timestamp <= this.horizon) return 'before-horizon';
    for (const [oldest, oldestTimestamp] of this.timestamps) {
      if (this.timestamps.size < this.capacity) break;
      this.timestamps.delete(oldest);
      this.horizon = Math.max(this.horizon, oldestTimestamp);
    }
    this.timestamps.set(nonce, timestamp);
    return 'fresh';
  }

  /** Arrival order follows timestamps closely; an early entry from a skewed clock only delays the sweep, the capacity still bounds it. */
  private dropExpired(before: number): void {
    for (const [nonce, timestamp] of this.timestamps) {
      if (timestamp >= before) return;
      this.timestamps.delete(nonce);
    }
  }
}

/** A key-file problem, with the command that fixes it. */
export class ClusterKeyError extends Error {
  constructor(message: string, readonly fix: string) {
    super(message);
    this.name = 'ClusterKeyError';
  }
}

const MIN_KEY_CHARS = 32;

/**
 * Reads the key file: its trimmed text is the secret. Refuses a file other
 * users can read or write (the key lets its holder act as any agent).
 */
export function loadClusterKey(path: string): ClusterKey {
  let mode: number;
  try {
    mode = statSync(path).mode & 0o777;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') {
      throw new ClusterKeyError(`cluster key file ${path} does not exist`,
        `copy the controller's key file to ${path} (mode 600), or create a new one for the whole cluster with \`openssl rand -hex 32 > ${path} && chmod 600 ${path}\``);
    }
    throw new ClusterKeyError(`cannot read cluster key file ${path}: ${(error as Error).message}`, `check that ${path} exists and that this user may read it`);
  }
  if ((mode & 0o006) !== 0) {
    throw new ClusterKeyError(
      `cluster key file ${path} is ${(mode & 0o004) !== 0 ? 'readable' : 'writable'} by every user (mode ${mode.toString(8).padStart(3, '0')}); refusing to use it`,
      `chmod 600 ${path}`);
  }
  let text: string;
  try {
    text = readFileSync(path, 'utf8').trim();
  } catch (error) {
    throw new ClusterKeyError(`cannot read cluster key file ${path}: ${(error as Error).message}`, `check that this user may read ${path}`);
  }
  if (text.length < MIN_KEY_CHARS) {
    throw new ClusterKeyError(`cluster key in ${path} is ${text.length} characters long; at least ${MIN_KEY_CHARS} are needed`,
      `write a longer random key: \`openssl rand -hex 32 > ${path} && chmod 600 ${path}\`, and copy it to every node`);
  }
  return Buffer.from(text, 'utf8');
}

/** Writes a new random key (64 hex characters) with mode 600; never overwrites an existing file. */
export function generateClusterKey(path: string): ClusterKey {
  const text = randomBytes(32).toString('hex');
  try {
    writeSecretFile(path, `${text}\n`);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
      throw new ClusterKeyError(`cluster key file ${path} already exists; not overwriting it (agents holding it would be refused)`,
        `use the existing key, or remove ${path} first and copy the new key to every node`);
    }
    throw new ClusterKeyError(`cannot create cluster key file ${path}: ${(error as Error).message}`, `check that the folder of ${path} exists and is writable`);
  }
  return Buffer.from(text, 'utf8');
}
