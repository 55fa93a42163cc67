// MUNGE credentials for requests that arrive over TCP (as Slurm does): the
// client asks its local munged for a credential whose payload is a hash of the
// request and which only the controller's uid may decode; the controller asks
// its munged to decode it, which proves the sender's uid and gid on the
// sending host, and refuses expired and replayed credentials itself. There is
// no npm binding of libmunge, so the `munge` and `unmunge` commands of the
// Debian package are run with fixed arguments and a clean environment, the
// payload and credential on stdin. Nothing runs at import.

import { createHash } from 'node:crypto';

/** The request header that carries the credential. */
import { MUNGE_HEADER } from './headers.js';

export { MUNGE_HEADER };

export type MungeVerification =
  | { ok: true; uid: number; gid: number }
  | { ok: false; reason: string; fix: string };

/** A credential munged vouched for (mungeDecode): whose it is, what request it was made for, until when it is good. */
export type MungeDecoding =
  | { ok: true; uid: number; gid: number; payload: string; expiresMs: number }
  | { ok: false; reason: string; fix: string };

/** `munge` could not make a credential: why, and what to do. */
export class MungeError extends Error {
  constructor(message: string, readonly fix: string) {
    super(message);
    this.name = 'MungeError';
  }
}

/** The commands see only this: no LD_PRELOAD, no MUNGE_* or locale from the caller. */
const CLEAN_ENV = { PATH: '/usr/bin:/bin:/usr/sbin:/sbin' };
const TIMEOUT_MS = 10_000;
/** Far above any credential munge makes for a 64-character payload (about 200 characters). */
const MAX_CREDENTIAL_CHARS = 4096;
const CREDENTIAL_PATTERN = /^MUNGE:[A-Za-z0-9+/=]+:$/;
const PAYLOAD_PATTERN = /^[0-9a-f]{64}$/;
const INSTALL_FIX = 'install MUNGE (Debian: `apt-get install munge`), give every host the same /etc/munge/munge.key (mode 600, owner munge) and start munged';

/** Exit codes of munge/unmunge (munge_err_t in munge.h) this module names. */
const EMUNGE_SOCKET = 6;
const EMUNGE_TIMEOUT = 7;
const EMUNGE_BAD_CRED = 8;
const EMUNGE_BAD_MAC = 11;
const EMUNGE_CRED_INVALID = 14;
const EMUNGE_CRED_EXPIRED = 15;
const EMUNGE_CRED_REWOUND = 16;
const EMUNGE_CRED_REPLAYED = 17;
const EMUNGE_CRED_UNAUTHORIZED = 18;

const sha256Hex = (data: Uint8Array | string): string => createHash('sha256').update(data).digest('hex');

/** The credential's payload: hex sha256 of `METHOD\nPATH?QUERY\nhex sha256(BODY)`, so it is good for this one request only. */
export function requestPayload(method: string, pathWithQuery: string, body: Uint8Array): string {
  return sha256Hex(`${method.toUpperCase()}\n${pathWithQuery}\n${sha256Hex(body)}`);
}

interface Run {
  /** null: the command could not be started (spawnError says why) or was killed. */
  code: number | null;
  stdout: string;
  stderr: string;
  spawnError?: NodeJS.ErrnoException;
}

async function run(command: string, args: readonly string[], input: string): Promise<Run> {
  // Loaded on first use: a CLI command on the local socket never runs munge, and node:child_process
  // costs every command a few milliseconds to load.
  const { spawn } = await import('node:child_process');
  return new Promise((resolve) => {
    const child = spawn(command, args, { env: CLEAN_ENV, stdio: ['pipe', 'pipe', 'pipe'], timeout: TIMEOUT_MS });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let spawnError: NodeJS.ErrnoException | undefined;
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    child.stdin.on('error', () => {}); // a command that exits before reading its input: its exit code says why
    child.on('error', (error: NodeJS.ErrnoException) => { spawnError = error; });
    child.on('close', (code) => resolve({
      code, spawnError, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8'),
    }));
    child.stdin.end(input);
  });
}

const socketArgs = (socket: string | undefined): string[] => (socket === undefined ? [] : [`--socket=${socket}`]);
const socketName = (socket: string | undefined): string => socket ?? "munge's default socket (/run/munge/munge.socket.2)";
/** munge's own message, without its `unmunge: Error: ` prefix. */
const messageOf = (stderr: string): string => stderr.trim().split('\n').pop()?.replace(/^\w+: (Error|Warning): /, '') ?? '';

function notRunning(socket: string | undefined, stderr: string) {
  return {
    reason: `munged is not running or not reachable at ${socketName(socket)} (${messageOf(stderr)})`,
    fix: socket === undefined
      ? 'start munged (`systemctl start munge`, or `runuser -u munge -- munged`), or set munge_socket in cluster.toml to the socket it uses'
      : `start munged with --socket=${socket}, or point munge_socket in cluster.toml at the socket munged uses`,
  };
}

function notInstalled(command: string, error: NodeJS.ErrnoException) {
  return error.code === 'ENOENT'
    ? { reason: `MUNGE is not installed (no \`${command}\` command)`, fix: INSTALL_FIX }
    : { reason: `cannot run \`${command}\`: ${error.message}`, fix: `check that ${command} (Debian package munge) is installed and executable` };
}

/**
 * A credential for `payload` from the local munged (client side). Throws a
 * MungeError with the fix when munged is not there or refuses.
 */
export async function mungeEncode(payload: string, opts: { socket?: string; restrictUid?: number; ttlSeconds?: number } = {}): Promise<string> {
  const args = [...socketArgs(opts.socket)];
  if (opts.restrictUid !== undefined) {
    if (!Number.isSafeInteger(opts.restrictUid) || opts.restrictUid < 0) throw new RangeError(`mungeEncode: restrictUid ${opts.restrictUid} is not a uid`);
    args.push(`--restrict-uid=${opts.restrictUid}`);
  }
  if (opts.ttlSeconds !== undefined) {
    if (!Number.isSafeInteger(opts.ttlSeconds) || opts.ttlSeconds < 1) throw new RangeError(`mungeEncode: ttlSeconds ${opts.ttlSeconds} is not a positive whole number`);
    args.push(`--ttl=${opts.ttlSeconds}`);
  }
  const result = await run('munge', args, payload);
  if (result.spawnError) {
    const { reason, fix } = notInstalled('munge', result.spawnError);
    throw new MungeError(reason, fix);
  }
  if (result.code === EMUNGE_SOCKET) {
    const { reason, fix } = notRunning(opts.socket, result.stderr);
    throw new MungeError(reason, fix);
  }
  const credential = result.stdout.trim();
  if (result.code !== 0 || !CREDENTIAL_PATTERN.test(credential)) {
    throw new MungeError(`munge could not make a credential: ${messageOf(result.stderr) || `exit code ${result.code}`}`,
      'check munged\'s log (/var/log/munge/munged.log) and that munged runs with a valid key');
  }
  return credential;
}

/** unmunge --numeric output: `KEY: value` lines, a blank line, then the payload. */
function parseUnmunge(stdout: string): { metadata: Map<string, string>; payload: string } | null {
  const split = stdout.indexOf('\n\n');
  if (split < 0) return null;
  const metadata = new Map<string, string>();
  for (const line of stdout.slice(0, split).split('\n')) {
    const match = /^([A-Z_]+):\s*(.*)$/.exec(line);
    if (match) metadata.set(match[1], match[2].trim());
  }
  return { metadata, payload: stdout.slice(split + 2) };
}

const refuse = (reason: string, fix: string): { ok: false; reason: string; fix: string } => ({ ok: false, reason, fix });
const FRESH_FIX = 'send a new credential with every request (taras does): a credential is good for one request only';

/** unmunge processes at once, and credentials waiting for one, in all and from one sender (more are refused at once). */
const MAX_UNMUNGE_RUNNING = 8;
const MAX_UNMUNGE_WAITING = 256;
const MAX_UNMUNGE_WAITING_PER_SOURCE = 32;
let unmungeRunning = 0;
let unmungeWaitingCount = 0;
/**
 * Credentials waiting for an unmunge, by sender (the connection's address): a freed slot goes to each sender in
 * turn (this map's order is the rotation), so one host's flood of junk credentials makes another's wait for at
 * most one of its own per turn, not for the whole flood.
 */
const unmungeWaiting = new Map<string, (() => void)[]>();

/** The next credential's turn: the first sender in the rotation, which then goes to its end. */
function nextUnmungeTurn(): (() => void) | undefined {
  for (const [source, line] of unmungeWaiting) {
    const turn = line.shift()!;
    unmungeWaiting.delete(source);
    if (line.length > 0) unmungeWaiting.set(source, line);
    unmungeWaitingCount--;
    return turn;
  }
  return undefined;
}

/**
 * Decodes a credential with the local munged (server side) and accepts it only
 * when munged vouches for it (valid, not expired, not seen before), it was
 * restricted to this process's uid, and its payload is the expected one. On
 * success: the uid and gid of the process that made it.
 */
export async function mungeVerify(credential: string, expectedPayload: string, opts: { socket?: string; source?: string } = {}): Promise<MungeVerification> {
  if (!notACredential(credential) && !PAYLOAD_PATTERN.test(expectedPayload)) throw new RangeError('mungeVerify: the expected payload must be requestPayload(...)');
  const decoded = await mungeDecode(credential, opts);
  if (!decoded.ok) return decoded;
  return payloadRefusal(decoded.payload, expectedPayload) ?? { ok: true, uid: decoded.uid, gid: decoded.gid };
}

/** Whether `credential` cannot be one munge made (then nothing is run for it). */
const notACredential = (credential: string): boolean => credential.length > MAX_CREDENTIAL_CHARS || !CREDENTIAL_PATTERN.test(credential);

/**
 * Why a decoded credential's payload does not bind this request (`expectedPayload`, requestPayload(...)), or
 * undefined when it does. `echo PAYLOAD | munge` adds a newline; it changes nothing the hash binds.
 */
export function payloadRefusal(payload: string, expectedPayload: string): { ok: false; reason: string; fix: string } | undefined {
  if (payload === expectedPayload || payload === `${expectedPayload}\n`) return undefined;
  return { ok: false, reason: 'MUNGE credential was made for another request (its payload is not this request\'s method, path and body)',
    fix: 'make a new credential for each request over exactly what is sent; a request altered in transit is refused' };
}

/**
 * Decodes a credential with the local munged (server side), before the request's body is known: munged
 * vouches for it (valid, not expired, not seen before: once decoded, munged never decodes it again) and it
 * was restricted to this process's uid. On success: the uid and gid of the process that made it, the payload
 * (payloadRefusal holds it to the request once its body is in) and when it expires.
 */
export async function mungeDecode(credential: string, opts: { socket?: string; source?: string } = {}): Promise<MungeDecoding> {
  if (notACredential(credential)) {
    return refuse(`the ${MUNGE_HEADER} header is not a MUNGE credential`, `send the output of \`munge\` (MUNGE:...:) as ${MUNGE_HEADER}, made for this request`);
  }
  // unmunge is a process per credential, and anyone may send one: a few at a time, a bounded line behind them,
  // and a bounded share of it per sender.
  const source = opts.source ?? '';
  const ofSource = unmungeWaiting.get(source);
  if (unmungeWaitingCount >= MAX_UNMUNGE_WAITING) {
    return refuse(`too many MUNGE credentials are being checked (${MAX_UNMUNGE_RUNNING} at a time, ${MAX_UNMUNGE_WAITING} waiting)`, 'try again in a moment');
  }
  if ((ofSource?.length ?? 0) >= MAX_UNMUNGE_WAITING_PER_SOURCE) {
    return refuse(`too many MUNGE credentials from ${source || 'this sender'} are being checked (${MAX_UNMUNGE_WAITING_PER_SOURCE} waiting)`, 'send fewer requests at once, or try again in a moment');
  }
  // A slot freed goes straight to the next in turn (it is never free in between for a newcomer).
  if (unmungeRunning >= MAX_UNMUNGE_RUNNING) {
    await new Promise<void>((resolveTurn) => {
      if (ofSource === undefined) unmungeWaiting.set(source, [resolveTurn]);
      else ofSource.push(resolveTurn);
      unmungeWaitingCount++;
    });
  } else {
    unmungeRunning++;
  }
  let result: Awaited<ReturnType<typeof run>>;
  try {
    result = await run('unmunge', ['--numeric', ...socketArgs(opts.socket)], `${credential}\n`);
  } finally {
    const next = nextUnmungeTurn();
    if (next !== undefined) next();
    else unmungeRunning--;
  }
  if (result.spawnError) {
    const { reason, fix } = notInstalled('unmunge', result.spawnError);
    return refuse(`cannot check the MUNGE credential: ${reason}`, fix);
  }
  const parsed = parseUnmunge(result.stdout);
  const encodedAt = Number(parsed?.metadata.get('ENCODE_TIME'));
  const madeAt = Number.isFinite(encodedAt) && encodedAt > 0 ? new Date(encodedAt * 1000).toISOString() : 'an unknown time';
  switch (result.code) {
    case 0:
      break;
    case EMUNGE_SOCKET: {
      const { reason, fix } = notRunning(opts.socket, result.stderr);
      return refuse(`cannot check the MUNGE credential: ${reason}`, fix);
    }
    case EMUNGE_TIMEOUT:
      return refuse('cannot check the MUNGE credential: munged did not answer in time', 'check that munged is running and not overloaded (its log: /var/log/munge/munged.log)');
    case EMUNGE_CRED_EXPIRED:
      return refuse(`MUNGE credential expired (made at ${madeAt}, time to live ${parsed?.metadata.get('TTL') ?? '?'} s)`,
        `${FRESH_FIX}; if it was fresh, synchronise this host's clock with the sender's (NTP)`);
    case EMUNGE_CRED_REWOUND:
      return refuse(`MUNGE credential made in the future (${madeAt})`, "synchronise the sender's clock with this host's (NTP)");
    case EMUNGE_CRED_REPLAYED:
      return refuse(`MUNGE credential replayed (made at ${madeAt} and already used)`, FRESH_FIX);
    case EMUNGE_CRED_UNAUTHORIZED:
      return refuse(`MUNGE credential is restricted to another user, not to the controller's uid ${process.getuid?.()}`,
        `make it for the controller: \`munge --restrict-uid=${process.getuid?.()}\``);
    case EMUNGE_BAD_CRED:
    case EMUNGE_BAD_MAC:
    case EMUNGE_CRED_INVALID:
      return refuse(`MUNGE credential is not valid here (${messageOf(result.stderr) || 'munged refused it'})`,
        'every host needs the same MUNGE key (/etc/munge/munge.key, mode 600, owner munge): copy the controller\'s key to the sending host and restart its munged');
    default:
      return refuse(`MUNGE credential refused: ${messageOf(result.stderr) || `unmunge exit code ${result.code}`}`, 'check munged\'s log (/var/log/munge/munged.log)');
  }
  const uid = Number(parsed?.metadata.get('UID'));
  const gid = Number(parsed?.metadata.get('GID'));
  if (parsed === null || !Number.isSafeInteger(uid) || !Number.isSafeInteger(gid) || parsed.metadata.get('STATUS') !== '0') {
    return refuse('cannot read what unmunge said about the MUNGE credential', 'check that unmunge is the one of MUNGE 0.5 (`unmunge --version`)');
  }
  // Checked here too: munged refuses a credential restricted to another uid, but accepts one restricted to none.
  const restriction = parsed.metadata.get('UID_RESTRICTION');
  if (restriction === undefined || Number(restriction) !== process.getuid?.()) {
    return refuse(`MUNGE credential is not restricted to the controller's uid ${process.getuid?.()} (anyone on this host could have decoded it first)`,
      `make it with \`munge --restrict-uid=${process.getuid?.()}\` (taras does)`);
  }
  const ttl = Number(parsed.metadata.get('TTL'));
  // munged has checked the time to live; kept so that a decoded credential is not taken after it (identity.ts).
  const expiresMs = Number.isFinite(encodedAt) && Number.isFinite(ttl) ? (encodedAt + ttl) * 1000 : Date.now();
  return { ok: true, uid, gid, payload: parsed.payload, expiresMs };
}
