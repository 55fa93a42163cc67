// Who is calling: the one place that says so. The server never believes what a
// request says about its sender; it verifies, per transport:
// - Unix socket: the kernel's word. SO_PEERCRED (native addon) gives the
//   connected process's uid and gid, read once per connection (keep-alive
//   reuses it); the name comes from the passwd database. A uid with no passwd
//   entry is refused: a job could not run as it anyway.
// - TCP, `Authorization: Bearer <JWT>`: HS256 with the controller's key file,
//   claims `sun` (user name), `iat`, `exp`, as slurmrestd. A verified token is
//   remembered by its exact header text until it expires, so checking one
//   costs a Map lookup after the first request.
// - TCP, `x-taras-munge`: a MUNGE credential whose payload is the hash of the
//   request (./munge.js), verified by unmunge.
// - Anything else (claims in x-taras-user headers included) is anonymous:
//   the caller is null, and the controller decides what an anonymous caller
//   may see (GET /status only).
// Agents are not users: they sign with the cluster key (hmac.ts).
//
// The client side is local-user.ts (who runs the CLI, for display only).
// jose loads on the first token, so a controller without tokens never pays for it.

import { closeSync, constants, fstatSync, openSync, readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { dirname } from 'node:path';
import type { Identity } from './local-user.js';
import { MUNGE_HEADER } from './headers.js';
import { nativeAddon } from './native.js';
import { fileKind, writeSecretFile } from './private-files.js';

export { localIdentity, type Identity } from './local-user.js';

export type Transport = 'unix' | 'tcp';

/** A verified caller: whose word it is decides `via`. */
export interface Caller extends Identity {
  readonly gid: number;
  /** socket: SO_PEERCRED; munge: a MUNGE credential; token: a JWT signed with the controller's key. */
  readonly via: 'socket' | 'munge' | 'token';
}

/** Why presented credentials were refused, and what to do. */
export interface IdentityRefusal {
  readonly ok: false;
  readonly reason: string;
  readonly fix: string;
}

/** ok with caller null: the request presented no credentials at all (anonymous). */
export type Identified = { readonly ok: true; readonly caller: Caller | null } | IdentityRefusal;

/** What the 401 for an anonymous request says: every way to be somebody. */
export const HOW_TO_AUTHENTICATE = 'run taras on the controller\'s machine (it uses the local socket), use MUNGE (munged running, same key as the controller), '
  + 'or get a token with `taras admin token` and set TARAS_TOKEN (or save it in ~/.config/taras/token; HTTP clients send Authorization: Bearer TOKEN)';

// ---------------------------------------------------------------- the key

const KEY_BYTES = 32;

/** A token key (cluster.toml's jwt_key) the controller cannot use: the message names the file, the problem and the fix. */
export class JwtKeyError extends Error {
  override readonly name = 'JwtKeyError';
}

/**
 * The HS256 key of bearer tokens: read from `path`, or created there (random,
 * 0600, never replaced) on first start. A key file others can read would let
 * them sign tokens for anyone: refused.
 */
export function loadOrCreateJwtKey(path: string): Uint8Array {
  const refuse = (problem: string, fix: string) => new JwtKeyError(`the token key ${path} (jwt_key) ${problem}: ${fix}`);
  try {
    writeSecretFile(path, Buffer.from(globalThis.crypto.getRandomValues(new Uint8Array(KEY_BYTES))).toString('base64') + '\n');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw refuse(`cannot be created: its folder ${dirname(path)} does not exist`, 'create the folder (mode 700), or set jwt_key in cluster.toml to a file in an existing one');
    if (code !== 'EEXIST') throw refuse(`cannot be created (${code ?? (error as Error).message})`, 'make its folder writable by the controller\'s user, or set jwt_key in cluster.toml to another file');
  }
  let fd: number;
  try {
    // O_NONBLOCK: a FIFO put there is refused below rather than waited on.
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    throw refuse(`cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`, 'make it a file the controller\'s user can read, or set jwt_key in cluster.toml to another file');
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw refuse(`is ${fileKind(stat)}, not a file`, 'remove it (the controller creates a new key), or set jwt_key in cluster.toml to a file');
    if ((stat.mode & 0o077) !== 0) {
      throw refuse(`is readable by others (mode ${(stat.mode & 0o777).toString(8)}): anyone who reads it can sign tokens for any user`, `run \`chmod 600 ${path}\``);
    }
    const key = Buffer.from(readFileSync(fd, 'utf8').trim(), 'base64');
    if (key.length < KEY_BYTES) throw refuse(`holds ${key.length} bytes, fewer than ${KEY_BYTES}`, 'remove it and restart the controller to make a new one (tokens issued before stop working)');
    return key;
  } finally {
    closeSync(fd);
  }
}

// ---------------------------------------------------------------- tokens

type Jose = typeof import('jose');
let jose: Promise<Jose> | undefined;
const loadJose = (): Promise<Jose> => (jose ??= import('jose'));

/** How far ahead of the controller's clock a token's issue time may be (another machine's clock, a little fast). */
const MAX_ISSUED_AHEAD_MS = 5 * 60_000;

/** Longest lifespan a token may ask for (a year): beyond it, a key rotation is the only way to revoke. */
export const MAX_TOKEN_SECONDS = 365 * 24 * 3600;

/** Signs a token for `user` (slurmrestd's claims: sun, iat, exp). */
export async function issueToken(key: Uint8Array, user: string, lifespanSeconds: number, nowMs: number): Promise<{ token: string; expiresMs: number }> {
  const { SignJWT } = await loadJose();
  const iat = Math.floor(nowMs / 1000);
  const exp = iat + lifespanSeconds;
  const token = await new SignJWT({ sun: user }).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).setIssuedAt(iat).setExpirationTime(exp).sign(key);
  return { token, expiresMs: exp * 1000 };
}

const refuse = (reason: string, fix: string): IdentityRefusal => ({ ok: false, reason, fix });
const NEW_TOKEN = 'get a new one with `taras admin token` (on the controller\'s machine) and set TARAS_TOKEN';

function joseRefusal(error: unknown): IdentityRefusal {
  const code = (error as { code?: string }).code;
  switch (code) {
    case 'ERR_JWT_EXPIRED':
      return refuse('the bearer token has expired', NEW_TOKEN);
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return refuse('the bearer token\'s signature does not match this controller\'s key (altered, or issued by another controller)', NEW_TOKEN);
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
    case 'ERR_JOSE_NOT_SUPPORTED':
      return refuse('the bearer token is not signed with HS256', NEW_TOKEN);
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
      return refuse(`the bearer token's claims are not valid: ${(error as Error).message}`, NEW_TOKEN);
    default:
      return refuse(`the bearer token is not a valid JWT${code ? ` (${code})` : ''}`, NEW_TOKEN);
  }
}

// ---------------------------------------------------------------- the server's side


export interface AuthenticatorOptions {
  /** HS256 key of bearer tokens; without it, every token is refused. */
  jwtKey?: Uint8Array;
  /** munged's socket, for unmunge; default munge's own. */
  mungeSocket?: string;
  /** Milliseconds since the epoch; tests pass a fixed clock. */
  clock?: () => number;
}

/** Who sends a request, as known before its body; `checkBody`, when present, must pass once the body is in. */
export interface BeforeBody {
  readonly identified: Identified;
  /** A MUNGE credential's binding to the request (its payload hashes method, path and body): a refusal, or undefined. */
  readonly checkBody?: (body: Uint8Array) => IdentityRefusal | undefined;
}

export interface Authenticator {
  /**
   * Who sends a request, from what comes before its body: the socket's peer, a bearer token, or a MUNGE
   * credential (decoded now, so that its sender is known, and charged, before its body is read; its
   * `checkBody` holds it to the body). Synchronous where nothing is checked for the first time.
   */
  identifyBefore(req: IncomingMessage, transport: Transport, target: string): BeforeBody | Promise<BeforeBody>;
  /** The verified caller of a request whose body has been read: identifyBefore, then its checkBody. */
  identify(req: IncomingMessage, transport: Transport, target: string, body: Uint8Array): Identified | Promise<Identified>;
}

/** Decoded credentials no request has used yet, kept per uid at most (the oldest of that uid's go first). */
const UNUSED_CREDENTIALS_PER_UID = 64;

/** A credential munged decoded (so will not decode again), and whether a request whose body it binds has used it. */
interface DecodedCredential {
  readonly uid: number;
  readonly gid: number;
  readonly payload: string;
  readonly expiresMs: number;
  used: boolean;
}

/** Verified tokens kept at most; past it the cache starts over (a flood of distinct valid tokens costs verifications, not memory). */
const TOKEN_CACHE_LIMIT = 10_000;

export function createAuthenticator(options: AuthenticatorOptions): Authenticator {
  const clock = options.clock ?? Date.now;
  /** Per connection: the kernel's answer does not change while it stays open. */
  const bySocket = new WeakMap<Socket, Identified>();
  const tokens = new Map<string, { caller: Caller; expiresMs: number }>();

  /** A user name for a uid, from the passwd database (NSS). */
  const callerOfUid = (uid: number, gid: number, via: Caller['via']): Identified => {
    const entry = nativeAddon().userById(uid);
    if (entry === null) return refuse(`uid ${uid} has no passwd entry on the controller's machine`, 'add the user to the passwd database (or NSS) of the controller\'s machine');
    return { ok: true, caller: { user: entry.name, uid, gid, via } };
  };

  function socketCaller(socket: Socket): Identified {
    let known = bySocket.get(socket);
    if (known === undefined) {
      const fd = (socket as unknown as { _handle?: { fd?: number } })._handle?.fd;
      if (typeof fd !== 'number' || fd < 0) {
        known = refuse('cannot read the credentials of this socket connection', 'connect again');
      } else {
        const peer = nativeAddon().peerCred(fd);
        known = callerOfUid(peer.uid, peer.gid, 'socket');
      }
      bySocket.set(socket, known);
    }
    return known;
  }

  /** Verifies `token` and remembers the caller under `header` (the whole Authorization value, so a hit needs no parsing). */
  async function verifyToken(token: string, header: string): Promise<Identified> {
    const key = options.jwtKey;
    if (key === undefined) return refuse('this controller does not accept bearer tokens (no token key)', 'use the local socket or MUNGE');
    const { jwtVerify } = await loadJose();
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(token, key, { algorithms: ['HS256'], requiredClaims: ['sun', 'iat', 'exp'], currentDate: new Date(clock()) }));
    } catch (error) {
      return joseRefusal(error);
    }
    const { sun, exp, iat } = payload;
    if (typeof sun !== 'string' || sun === '') return refuse('the bearer token names no user (claim "sun")', NEW_TOKEN);
    // Only a name an account can have is looked up (a NUL cannot be passed to the system's user database).
    if (sun.length > 256 || /[\0/:\s]/.test(sun)) return refuse('the bearer token\'s user (claim "sun") is not a user name', NEW_TOKEN);
    // jose checks that exp is past and iat is a number; the span between them is ours: as `taras admin token` issues them.
    if (typeof iat !== 'number' || typeof exp !== 'number' || !Number.isInteger(iat) || !Number.isInteger(exp)
      || iat * 1000 > clock() + MAX_ISSUED_AHEAD_MS || exp - iat > MAX_TOKEN_SECONDS) {
      return refuse(`the bearer token's times are not those of a token Taras issues (issued in the future, or valid for more than ${MAX_TOKEN_SECONDS / 86_400} days)`, NEW_TOKEN);
    }
    const entry = nativeAddon().userByName(sun);
    if (entry === null) return refuse(`the bearer token's user ${sun} has no account on the controller's machine`, 'ask an administrator for a token of an existing user');
    const caller: Caller = { user: entry.name, uid: entry.uid, gid: entry.gid, via: 'token' };
    if (tokens.size >= TOKEN_CACHE_LIMIT) tokens.clear();
    tokens.set(header, { caller, expiresMs: (exp as number) * 1000 });
    return { ok: true, caller };
  }

  // MUNGE credentials are decoded before their bodies arrive, and munged decodes a credential once only. A
  // credential counts as used when a request whose body it binds is taken, not when it is decoded: one sent
  // again (by whoever saw it on the wire) with another body, or with a body that never comes, is refused and
  // leaves it for the request it was made for. Those decoded and not yet used are kept here until they expire.
  const unused = new Map<string, DecodedCredential>();
  const unusedOfUid = new Map<number, Set<string>>();
  /** Decodes in flight, so that the same credential sent twice at once costs one unmunge and gets one answer. */
  const decoding = new Map<string, Promise<Identified & { decoded?: DecodedCredential }>>();

  const forget = (credential: string, uid: number): void => {
    unused.delete(credential);
    const ofUid = unusedOfUid.get(uid);
    ofUid?.delete(credential);
    if (ofUid?.size === 0) unusedOfUid.delete(uid);
  };

  const keepUnused = (credential: string, decoded: DecodedCredential): void => {
    let ofUid = unusedOfUid.get(decoded.uid);
    if (ofUid === undefined) unusedOfUid.set(decoded.uid, ofUid = new Set());
    // Only whoever holds a credential's text can have it kept, and a uid's make room among its own only:
    // its expired ones go, then its oldest past the cap.
    for (const old of ofUid) {
      if (unused.get(old)!.expiresMs > clock() && ofUid.size < UNUSED_CREDENTIALS_PER_UID) break;
      unused.delete(old);
      ofUid.delete(old);
    }
    unused.set(credential, decoded);
    ofUid.add(credential);
  };

  async function decodeMunge(credential: string, source: string): Promise<Identified & { decoded?: DecodedCredential }> {
    const { mungeDecode } = await import('./munge.js');
    let verdict: Awaited<ReturnType<typeof mungeDecode>>;
    try {
      verdict = await mungeDecode(credential, { socket: options.mungeSocket, source });
    } catch (error) {
      // unmunge missing or failing to start: the credential is not verified, so it is refused (never taken as anonymous).
      const fix = (error as { fix?: string }).fix ?? 'install MUNGE (Debian package munge) on the controller machine, or use a token';
      return refuse(`MUNGE credential could not be checked: ${(error as Error).message}`, fix);
    }
    if (!verdict.ok) return refuse(`MUNGE credential refused: ${verdict.reason}`, verdict.fix);
    const identified = callerOfUid(verdict.uid, verdict.gid, 'munge');
    if (!identified.ok) return identified;
    const decoded: DecodedCredential = { uid: verdict.uid, gid: verdict.gid, payload: verdict.payload, expiresMs: verdict.expiresMs, used: false };
    keepUnused(credential, decoded);
    return { ...identified, decoded };
  }

  async function mungeBeforeBody(credential: string, method: string, target: string, source: string): Promise<BeforeBody> {
    let found: (Identified & { decoded?: DecodedCredential }) | undefined;
    const kept = unused.get(credential);
    if (kept !== undefined && kept.expiresMs > clock()) {
      found = callerOfUid(kept.uid, kept.gid, 'munge');
      if (found.ok) found = { ...found, decoded: kept };
    } else {
      if (kept !== undefined) forget(credential, kept.uid); // expired: munged says so
      let pending = decoding.get(credential);
      if (pending === undefined) {
        pending = decodeMunge(credential, source).finally(() => decoding.delete(credential));
        decoding.set(credential, pending);
      }
      found = await pending;
    }
    const { decoded, ...identified } = found;
    if (decoded === undefined) return { identified: identified as Identified };
    const { payloadRefusal, requestPayload } = await import('./munge.js');
    return {
      identified: identified as Identified,
      checkBody: (body) => {
        if (decoded.used) return refuse('MUNGE credential refused: MUNGE credential replayed (already used by another request)', 'send a new credential with every request (taras does): a credential is good for one request only');
        const refusal = payloadRefusal(decoded.payload, requestPayload(method, target, body));
        if (refusal !== undefined) return refuse(`MUNGE credential refused: ${refusal.reason}`, refusal.fix);
        decoded.used = true;
        forget(credential, decoded.uid);
        return undefined;
      },
    };
  }

  const identifyBefore = (req: IncomingMessage, transport: Transport, target: string): BeforeBody | Promise<BeforeBody> => {
    // The kernel's word beats anything the request says; other credentials on the socket are ignored.
    if (transport === 'unix') return { identified: socketCaller(req.socket) };
    const authorization = req.headers.authorization;
    if (authorization !== undefined) {
      const hit = tokens.get(authorization);
      if (hit !== undefined) {
        if (hit.expiresMs > clock()) return { identified: { ok: true, caller: hit.caller } };
        tokens.delete(authorization);
      }
      const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
      if (match === null) return { identified: refuse('the Authorization header is not "Bearer TOKEN"', 'send Authorization: Bearer followed by a token from `taras admin token`') };
      return verifyToken(match[1], authorization).then((identified) => ({ identified }));
    }
    const munge = req.headers[MUNGE_HEADER];
    // Its sender (the connection's address) gets its share of unmunge's turns (munge.ts).
    if (typeof munge === 'string') return mungeBeforeBody(munge, req.method ?? 'GET', target, req.socket.remoteAddress ?? '');
    return { identified: { ok: true, caller: null } };
  };

  const withBody = (before: BeforeBody, body: Uint8Array): Identified =>
    (before.identified.ok && before.checkBody !== undefined ? before.checkBody(body) ?? before.identified : before.identified);

  return {
    identifyBefore,
    identify(req, transport, target, body) {
      const before = identifyBefore(req, transport, target);
      return before instanceof Promise ? before.then((known) => withBody(known, body)) : withBody(before, body);
    },
  };
}
