// What every command that talks to the controller shares: where the
// controller is and how to prove who we are, an API client whose errors
// become one line and an exit code, output helpers, job-id parsing and the
// --controller option. Only type imports, node:fs/os/path and ./flags.js at
// the top, so loading this costs nothing; the network modules load when a
// command runs (and MUNGE's only when it is used; no JWT code: a token is a
// header).
//
// How the CLI authenticates, by itself: the local Unix socket when it can
// reach one (the kernel tells the controller who we are), else MUNGE when
// munged's socket is there, else a token from TARAS_TOKEN or
// ~/.config/taras/token (`taras admin token` makes one).

import { existsSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import type { ApiClient, ControllerTarget, Credentials, PeerCheck } from '../net/client.js';
import { givenControllerUid } from '../net/controller-uid.js';
import { fail } from './flags.js';

export const DEFAULT_CONTROLLER = 'http://127.0.0.1:6817';
export const DEFAULT_DATA_DIR = 'taras-data';

export const controllerOption = ['--controller <address>',
  `controller: http://host:port, host:port or unix:/path (default $TARAS_CONTROLLER, else ./${DEFAULT_DATA_DIR}/taras.sock if present, else ${DEFAULT_CONTROLLER})`] as const;

/** munged's socket on Debian; TARAS_MUNGE_SOCKET names another. */
const MUNGE_SOCKET = '/run/munge/munge.socket.2';
/** A 429's Retry-After is waited out at most this long, at most this many times in all (then the refusal is the answer). */
const MAX_BACKOFF_SECONDS = 10;
const MAX_BACKOFF_ATTEMPTS = 6;

/** The controller's address as given: --controller, else $TARAS_CONTROLLER, else the local default. */
export function controllerAddress(flag: string | undefined): string {
  return flag ?? (process.env.TARAS_CONTROLLER || DEFAULT_CONTROLLER);
}

/** `http://host:port`, `host:port`, `unix:/path`, or a bare socket path (anything with a slash). */
export function parseAddress(address: string): ControllerTarget {
  const kinds = 'give http://host:port, host:port or unix:/path/to/taras.sock';
  if (address.startsWith('unix:') && address.length > 'unix:'.length) return { socketPath: address.slice('unix:'.length) };
  const url = /^[a-z][a-z0-9+.-]*:\/\//i.test(address) ? address
    : /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/.test(address) ? `http://${address}` : undefined;
  if (url !== undefined) {
    // Checked here, once: a scheme other than http, a port past 65535 or a broken host is a typo, not an unreachable controller.
    let parsed: URL | undefined;
    try {
      parsed = new URL(url);
    } catch {
      parsed = undefined;
    }
    if (parsed?.protocol !== 'http:' || parsed.hostname === '') fail(`error: the controller address "${address}" is not a valid http:// address: ${kinds}`);
    return { baseUrl: url };
  }
  if (address.includes('/') || address.endsWith('.sock')) return { socketPath: address };
  fail(`error: cannot tell what kind of controller address "${address}" is: ${kinds}`);
}

/** A saved or given token: TARAS_TOKEN, else the token file (first line). */
function savedToken(): string | undefined {
  const fromEnv = process.env.TARAS_TOKEN?.trim();
  if (fromEnv) return fromEnv;
  const file = join(process.env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'taras', 'token');
  try {
    return readFileSync(file, 'utf8').trim().split('\n')[0] || undefined;
  } catch {
    return undefined;
  }
}

type Status = { socket?: string; uid?: number };

/** GET /status, which anyone may read: the controller's socket and uid. */
async function statusOf(target: ControllerTarget): Promise<Status> {
  const { createApiClient } = await import('../net/client.js');
  const probe = createApiClient(target, { timeoutMs: 5_000 });
  try {
    return await probe.get<Status>('/status');
  } finally {
    probe.close();
  }
}

/** The controller's uid, which a MUNGE credential is restricted to: TARAS_CONTROLLER_UID, else what its GET /status says (asked once). */
async function controllerUid(target: ControllerTarget, known: Status | null): Promise<number> {
  const given = givenControllerUid();
  if (given !== undefined) return given;
  const { uid } = known ?? await statusOf(target);
  if (typeof uid !== 'number') throw new Error('the controller does not say its uid (GET /status): set TARAS_CONTROLLER_UID to the uid it runs as');
  return uid;
}

/**
 * How to prove who we are over TCP: MUNGE when munged is there (falling back
 * to a token if it fails, and keeping to the token after a first failure),
 * else a token; undefined: nothing (the controller's 401 says how).
 */
function tcpCredentials(target: ControllerTarget, status: Status | null, bearer: (token: string) => Credentials): Credentials | undefined {
  const token = savedToken();
  const withToken = token === undefined ? undefined : bearer(token);
  const mungeSocket = process.env.TARAS_MUNGE_SOCKET || MUNGE_SOCKET;
  if (!existsSync(mungeSocket)) return withToken;
  let restrictUid: Promise<number> | undefined;
  let mungeFailed = false;
  return async (method, path, body) => {
    if (mungeFailed && withToken !== undefined) return withToken(method, path, body);
    try {
      const { mungeEncode, requestPayload, MUNGE_HEADER } = await import('../net/munge.js');
      restrictUid ??= controllerUid(target, status);
      return { [MUNGE_HEADER]: await mungeEncode(requestPayload(method, path, body), { socket: mungeSocket, restrictUid: await restrictUid }) };
    } catch (error) {
      if (withToken === undefined) throw error;
      mungeFailed = true;
      return withToken(method, path, body);
    }
  };
}

/**
 * A loopback address or name: 127.0.0.0/8, ::1, IPv4-mapped 127.x (as a URL writes it, ::ffff:7f00:1, or as a
 * lookup may give it, ::ffff:127.0.0.1) and localhost, in any case and with or without brackets. A host name that
 * only starts with digits (127.example.org) is not one.
 */
function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  return bare === 'localhost' || bare === '::1' || /^(::ffff:)?127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare) || /^::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}$/.test(bare);
}

/**
 * Whom this user trusts to be the controller: root, itself (its own `npm start`), or TARAS_CONTROLLER_UID.
 * Another user's socket or port on this machine may be planted to collect scripts, environments and tokens
 * (red team: a taras-data/taras.sock in a shared folder, a squatter on port 6817 while the controller was down).
 */
function trustedUid(uid: number): boolean {
  return uid === 0 || uid === process.getuid?.() || uid === givenControllerUid();
}

/**
 * A socket found by itself (./taras-data/taras.sock, or named by a controller's GET /status): tried if a
 * trusted user owns the file, and used only if a trusted user listens on it. The owner is read before
 * connecting, and the file could be swapped for another user's socket in between: once connected, the
 * client asks the kernel who listens (PeerCheck, SO_PEERCRED) before it sends a byte.
 */
function trustedSocket(path: string): ControllerTarget | undefined {
  const stats = statSync(path, { throwIfNoEntry: false });
  if (stats === undefined || !stats.isSocket() || !trustedUid(stats.uid)) return undefined;
  return { socketPath: path, peer: socketPeer(path, stats.uid) };
}

/**
 * Who may listen on a socket: a trusted user (SO_PEERCRED, once connected, before a byte is sent). Also for a
 * socket named with --controller or TARAS_CONTROLLER: a path in a shared folder may be another user's by then.
 */
function socketPeer(path: string, fileUid?: number): PeerCheck {
  const file = fileUid === undefined ? '' : ` (the socket file belongs to uid ${fileUid}: it was replaced after it was checked, or is not the one that process listens on)`;
  return (uid) => (trustedUid(uid) ? undefined : {
    message: `the process listening on the socket ${path} runs as uid ${uid}, not as root or you${file}: it is not taken for the controller, and nothing was sent to it`,
    fix: 'if the controller runs as that user, set TARAS_CONTROLLER_UID to its uid; else tell your administrator, and give the controller\'s address with --controller',
  });
}

/**
 * Where to connect and with what. A socket needs nothing. A loopback TCP
 * address is first asked (GET /status, which anyone may read) for its
 * socket, used if this process can reach it; else MUNGE (restricted to the
 * uid the same answer gives) or a token.
 */
export async function connection(flag: string | undefined): Promise<{ target: ControllerTarget; credentials?: Credentials }> {
  // An empty TARAS_CONTROLLER is no address (as an unset one); an empty --controller is refused by parseAddress.
  const given = flag ?? (process.env.TARAS_CONTROLLER || undefined);
  if (given === undefined) {
    const local = resolve(DEFAULT_DATA_DIR, 'taras.sock');
    const found = existsSync(local) ? trustedSocket(local) : undefined;
    if (found !== undefined) return { target: found };
  }
  const address = parseAddress(given ?? DEFAULT_CONTROLLER);
  if ('socketPath' in address) return { target: { ...address, peer: socketPeer(address.socketPath) } };
  let status: Status | null = null;
  const url = new URL(address.baseUrl);
  // The kernel says who holds the other end of each connection within this machine, once connected and before
  // a byte is sent (net/tcp-peer.ts): nothing about us goes to another user's process, even one that took the
  // port after a look at the listeners and before the connect. Every TCP connection is checked, whatever its
  // name resolved to: another machine's end is not listed here, and passes.
  const target: ControllerTarget = {
    ...address,
    peer: (uid) => (trustedUid(uid) ? undefined : {
      message: `the process listening on ${url.host} runs as uid ${uid}, not as root or you: it is not taken for the controller, and nothing is sent to it`,
      fix: 'if the controller runs as that user, set TARAS_CONTROLLER_UID to its uid',
    }),
  };
  // Loopback in any spelling (127.1 and LOCALHOST are loopback too), for a URL's host.
  if (isLoopbackHost(url.hostname)) {
    try {
      status = await statusOf(target);
      const named = typeof status.socket === 'string' && existsSync(status.socket) ? trustedSocket(status.socket) : undefined;
      if (named !== undefined) return { target: named };
    } catch (error) {
      // Down (a restart): said now, not by a request sent without the socket's identity to a controller that
      // may be back a moment later (a 401, which nothing retries); a command that waits it out asks again.
      const { ControllerUnreachableError } = await import('../net/client.js');
      // Another user's process at the other end: said now, and nothing more is sent (not a MUNGE credential either).
      if (error instanceof ControllerUnreachableError || (error as Error).name === 'UntrustedPeerError') throw error;
      // Not a Taras controller: the real request reports it.
    }
  }
  const { bearer } = await import('../net/client.js');
  return { target, credentials: tcpCredentials(target, status, bearer) };
}

/**
 * The API client, with where and how to connect chosen as above. After the
 * controller could not be reached the choice is made again at the next
 * request: a command that waits out a restart (withRetries) finds the socket
 * once the controller is back, instead of going on over TCP with no identity.
 */
export async function client(flag: string | undefined): Promise<ApiClient> {
  const { createApiClient, ApiRequestError, ControllerUnreachableError } = await import('../net/client.js');
  const open = async (): Promise<ApiClient> => {
    const { target, credentials } = await connection(flag);
    return createApiClient(target, { credentials });
  };
  // A controller down now is chosen at the first request instead (withRetries waits it out there).
  let current: ApiClient | undefined;
  let downAt = '';
  try {
    current = await open();
  } catch (error) {
    if (!(error instanceof ControllerUnreachableError)) throw error;
    downAt = error.address;
  }
  let stale = false;
  let told = false;
  const call = async <T>(request: (api: ApiClient) => Promise<T>): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      if (stale || current === undefined) {
        current?.close();
        current = undefined;
        current = await open();
        stale = false;
      }
      try {
        return await request(current);
      } catch (error) {
        // Chosen again at the next request (not now: the controller is not back yet).
        if (error instanceof ControllerUnreachableError) stale = true;
        // A 429 with Retry-After did nothing and says when to ask again (a per-user rate, a heavy read's rest):
        // asked again then, as Slurm's commands back off when rate limited; a few times, never for long.
        const wait = error instanceof ApiRequestError && error.status === 429 ? error.retryAfterSeconds : undefined;
        if (wait === undefined || wait > MAX_BACKOFF_SECONDS || attempt >= MAX_BACKOFF_ATTEMPTS) throw error;
        if (!told) process.stderr.write(`taras: the controller asks to wait ${wait} s: ${(error as Error).message}; waiting\n`);
        told = true;
        // Up to half as long again, at random: the tasks of an array that were refused together do not all come back together.
        await new Promise((resolve) => setTimeout(resolve, Math.max(1, wait) * 1000 * (1 + Math.random() / 2)));
      }
    }
  };
  return {
    get address() {
      return current?.address ?? downAt;
    },
    get: (path) => call((api) => api.get(path)),
    post: (path, body) => call((api) => api.post(path, body)),
    put: (path, body) => call((api) => api.put(path, body)),
    delete: (path) => call((api) => api.delete(path)),
    close: () => current?.close(),
  };
}

/** The job fields the controller's refusals name, as the flags of taras submit and sbatch that set them. */
const FIELD_FLAGS: Readonly<Record<string, string>> = {
  'nodes.min': '-N/--nodes', 'nodes.max': '-N/--nodes', ntasks: '-n/--ntasks', cpusPerTask: '-c/--cpus-per-task', ntasksPerNode: '--ntasks-per-node',
  memoryMiB: '--mem', memPerCpuMiB: '--mem-per-cpu', timeLimitSeconds: '-t/--time', name: '-J/--job-name', partition: '-p/--partition',
  workingDir: '-D/--chdir', output: '-o/--output', error: '-e/--error', comment: '--comment', account: '--account', nice: '--nice',
  mailUser: '--mail-user', mailType: '--mail-type', reservation: '--reservation', nodelist: '-w/--nodelist', exclude: '-x/--exclude',
  'constraint.text': '-C/--constraint', 'array.text': '-a/--array', 'dependency.text': '-d/--dependency', beginMs: '--begin', 'deadline.atMs': '--deadline',
};

/** A refusal as a CLI user reads it: `spec.nodes.min` is `-N/--nodes (spec.nodes.min)`. */
export function inFlagWords(text: string): string {
  return text.replace(/\bspec\.([A-Za-z]+(?:\.[A-Za-z]+)?)/g, (whole, field: string) => (FIELD_FLAGS[field] === undefined ? whole : `${FIELD_FLAGS[field]} (${whole})`));
}

/** Runs a client command: API errors become one line and exit 1 (2 for a refused request). */
export async function withClient<T>(flag: string | undefined, run: (api: ApiClient) => Promise<T>): Promise<T> {
  const api = await client(flag);
  try {
    return await run(api);
  } catch (error) {
    const { ApiRequestError, ControllerUnreachableError } = await import('../net/client.js');
    if (error instanceof ControllerUnreachableError) fail(`error: ${error.message}`, 1);
    if (error instanceof ApiRequestError) fail(`error: ${inFlagWords(error.error)}${error.fix ? ` (${error.fix})` : ''}`, error.status === 400 ? 2 : 1);
    // munged unusable and no other way to say who the caller is (munge.ts: the message names the problem and the fix);
    // or a socket found by itself that another user listens on (client.ts: UntrustedPeerError).
    if (error instanceof Error && (error.name === 'MungeError' || error.name === 'UntrustedPeerError')) fail(`error: ${error.message} (${(error as Error & { fix: string }).fix})`, 1);
    throw error;
  } finally {
    api.close();
  }
}

/** How long a command keeps trying a controller that does not answer (a restart takes a second or two); TARAS_RETRY_SECONDS changes it. */
export const RETRY_FOR_MS = Number.isFinite(Number(process.env.TARAS_RETRY_SECONDS ?? 'x')) ? Number(process.env.TARAS_RETRY_SECONDS) * 1000 : 30_000;

/**
 * Runs `request` again while the controller cannot be reached (connection
 * refused or reset, no answer: a restart), with backoff from 100 ms to 2 s,
 * for at most RETRY_FOR_MS; says once on stderr that it is waiting. Only for
 * requests that are safe to repeat: reads, and submissions that carry an
 * idempotency key. An answer, even an error, is returned or thrown at once.
 */
export async function withRetries<T>(what: string, request: () => Promise<T>, retryForMs = RETRY_FOR_MS): Promise<T> {
  const { ControllerUnreachableError } = await import('../net/client.js');
  const deadline = Date.now() + retryForMs;
  let delayMs = 100;
  let told = false;
  for (;;) {
    try {
      return await request();
    } catch (error) {
      if (!(error instanceof ControllerUnreachableError) || Date.now() + delayMs > deadline) throw error;
      if (!told) process.stderr.write(`${what}: the controller at ${error.address} does not answer (${error.code}); retrying for up to ${Math.round(retryForMs / 1000)} s (Ctrl-C to stop)\n`);
      told = true;
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      delayMs = Math.min(delayMs * 2, 2000);
    }
  }
}

/**
 * Every job `GET /jobs` lists for `query` (user, state), page after page:
 * the controller answers at most 1,000 per request and a `next` cursor.
 */
export async function listAllJobs<T = import('../api/types.js').ApiJob>(api: ApiClient, query: URLSearchParams = new URLSearchParams()): Promise<T[]> {
  const jobs: T[] = [];
  for (let after: number | null = 0; after !== null;) {
    query.set('after', String(after));
    const page: { jobs: T[]; next: number | null } = await api.get(`/jobs?${query}`);
    jobs.push(...page.jobs);
    after = page.next;
  }
  return jobs;
}

/**
 * POSTs a list of job ids (or refs) in as many requests as the controller takes them (LIMITS.jobIdsPerRequest
 * each) and gives the jobs of every answer, in order. One request when they fit: the controller then cancels the
 * pending ones first, so that none of them starts; across requests that holds within each.
 */
export async function postIds<T>(api: ApiClient, path: string, ids: readonly (string | number)[]): Promise<T[]> {
  const { LIMITS } = await import('../api/schema.js');
  const jobs: T[] = [];
  for (let from = 0; from < ids.length; from += LIMITS.jobIdsPerRequest) {
    for (const job of (await api.post<{ jobs: T[] }>(path, { ids: ids.slice(from, from + LIMITS.jobIdsPerRequest) })).jobs) jobs.push(job);
  }
  return jobs;
}

export const print = (text: string) => process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
export const printJson = (value: unknown) => print(JSON.stringify(value, null, 2));

/** Job ids as `taras cancel`, `show` and `when` take them: N, or ARRAYID_TASK for one task of a job array (12_3); cancel also ARRAYID_[TASKS] (12_[1-3]). */
export function parseJobRefs(raw: readonly string[]): (number | string)[] {
  return raw.map((text) => {
    if (/^\d+_(\d+|\[[0-9,:-]+\])$/.test(text.trim())) return text.trim();
    return jobIdOf(text) ?? fail(`error: '${text}' is not a job id: give its digits, as \`taras queue\` shows them (42; 12_3 for task 3 of array 12)`);
  });
}

/** Job ids: digits only, as the controller takes them (Number() would read 0xbf2, 1e3 and 0b1 as other jobs' ids). */
export function parseJobIds(raw: readonly string[]): number[] {
  return raw.map((text) => jobIdOf(text) ?? fail(`error: '${text}' is not a job id: give its digits, as \`taras queue\` shows them (e.g. 42)`));
}

function jobIdOf(text: string): number | undefined {
  const id = /^\d+$/.test(text.trim()) ? Number(text.trim()) : NaN;
  return Number.isSafeInteger(id) && id > 0 ? id : undefined;
}
