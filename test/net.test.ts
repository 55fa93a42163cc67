// The transport between the controller, its agents and the CLI (src/net):
// real servers on 127.0.0.1 (ephemeral ports) and on Unix sockets in a temp
// folder, real clients, and the cluster-key checks with each refusal reason
// seen on both sides.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, lstatSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ApiRequestError, ControllerUnreachableError, createApiClient, type ApiClient } from '../src/net/client.js';
import {
  ClusterKeyError, generateClusterKey, loadClusterKey, NonceCache, signRequest, verifyRequest, type ClusterKey,
} from '../src/net/hmac.js';
import { createAuthenticator, localIdentity } from '../src/net/identity.js';
import type { NetLog } from '../src/net/log.js';
import { createApiServer, JsonPieces, ListenError, MAX_BODY_DEPTH, nestedDeeperThan, RouteError, type ApiServer, type BoundAddress, type Route } from '../src/net/server.js';
import { SeededRandom } from '../src/core/random.js';

const KEY: ClusterKey = Buffer.from('0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef');
const OTHER_KEY: ClusterKey = Buffer.from('fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210');

interface LogLine {
  level: 'info' | 'warn' | 'error';
  message: string;
}

function recordingLog(): NetLog & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  return {
    lines,
    info: (message) => lines.push({ level: 'info', message }),
    warn: (message) => lines.push({ level: 'warn', message }),
    error: (message) => lines.push({ level: 'error', message }),
  };
}

let posted = 0;
/** Pieces the /listing route has made so far (JsonPieces). */
let piecesMade = 0;
const LISTING_PIECES = 100;
function* listingPieces(): Generator<string> {
  for (let i = 0; i < LISTING_PIECES; i++) {
    piecesMade++;
    const items = Array.from({ length: 1000 }, (_, j) => JSON.stringify({ n: i * 1000 + j, pad: 'x'.repeat(200) }));
    yield `${i === 0 ? '[' : ','}${items.join(',')}${i === LISTING_PIECES - 1 ? ']' : ''}`;
  }
}

const routes: Route[] = [
  { method: 'GET', path: '/status', handler: () => ({ status: 200, body: { up: true } }) },
  {
    method: 'POST',
    path: '/jobs/:id/notes/:note',
    handler: (ctx) => ({
      status: 201,
      body: { params: ctx.params, query: Object.fromEntries(ctx.query), body: ctx.body, route: ctx.route, signed: ctx.signed },
    }),
  },
  { method: 'GET', path: '/whoami', handler: (ctx) => ({ status: 200, body: { caller: ctx.caller, transport: ctx.transport } }) },
  { method: 'DELETE', path: '/jobs/:id', handler: (ctx) => { throw new RouteError(404, `no job ${ctx.params.id}`, 'list jobs with `taras queue`'); } },
  { method: 'GET', path: '/boom', handler: () => { throw new Error('database file /srv/taras/secret.db is corrupt'); } },
  { method: 'POST', path: '/agent/heartbeat', handler: (ctx) => ({ status: 200, body: { signed: ctx.signed, body: ctx.body } }) },
  { method: 'POST', path: '/submit', handler: (ctx) => ({ status: 200, body: { id: ++posted, echo: ctx.body } }) },
  { method: 'GET', path: '/listing', handler: () => ({ status: 200, body: new JsonPieces(listingPieces()) }) },
  { method: 'GET', path: '/pieces-made', handler: () => ({ status: 200, body: { made: piecesMade } }) },
  {
    method: 'GET', path: '/listing-broken/:at',
    handler: (ctx) => ({
      status: 200,
      body: new JsonPieces((function* broken() {
        for (let i = 0; ; i++) {
          if (i === Number(ctx.params.at)) throw new Error(`listing broke at piece ${i}`);
          yield i === 0 ? `[${'1,'.repeat(50_000)}1` : `,${'1,'.repeat(50_000)}1`;
        }
      })()),
    }),
  },
];

/** Agent routes need the key; the CLI's routes are open (identity only). */
const agentRoutesOnly = (route: Route): boolean => route.path.startsWith('/agent/');

function rawRequest(url: string, method: string, path: string, body: string | Buffer, headers: Record<string, string>):
  Promise<{ status: number; headers: Record<string, unknown>; body: { error?: string; fix?: string } & Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { method, headers: { 'content-type': 'application/json', ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail('expected the request to fail');
}

async function apiError(promise: Promise<unknown>): Promise<ApiRequestError> {
  const error = await rejection(promise);
  assert.ok(error instanceof ApiRequestError, `expected ApiRequestError, got ${String(error)}`);
  return error;
}

describe('signing with the cluster key', () => {
  const parts = { method: 'POST', path: '/agent/heartbeat', body: '{"node":"n01"}', timestamp: 1_767_225_600_000, nonce: 'nonce-0123456789abcdef', destination: 'controller' };
  const now = parts.timestamp + 2_000;

  it('a request signed with the same key verifies, and one signed with another key is a bad signature', () => {
    const headers = signRequest(KEY, parts);
    assert.match(headers['x-taras-signature'], /^[0-9a-f]{64}$/);
    assert.deepEqual(verifyRequest(KEY, { ...parts, headers }, { now, seenNonces: new NonceCache(), destination: 'controller' }), { ok: true });
    const other = verifyRequest(OTHER_KEY, { ...parts, headers }, { now, seenNonces: new NonceCache(), destination: 'controller' });
    assert.equal(other.ok ? 'ok' : other.reason, 'bad signature');
  });

  it('any change to method, path, body, timestamp, nonce or destination breaks the signature', () => {
    const headers = signRequest(KEY, parts);
    for (const changed of [{ method: 'PUT' }, { path: '/agent/heartbeat?x=1' }, { body: '{"node":"n02"}' }]) {
      const verdict = verifyRequest(KEY, { ...parts, ...changed, headers }, { now, seenNonces: new NonceCache(), destination: 'controller' });
      assert.equal(verdict.ok ? 'ok' : verdict.reason, 'bad signature', JSON.stringify(changed));
    }
    for (const header of [{ 'x-taras-timestamp': String(parts.timestamp + 1) }, { 'x-taras-nonce': 'nonce-0123456789abcdeF' }, { 'x-taras-destination': 'agent node01 (1 node) at 127.0.0.1:1 boot b' }]) {
      const verdict = verifyRequest(KEY, { ...parts, headers: { ...headers, ...header } }, { now, seenNonces: new NonceCache(), destination: 'controller' });
      assert.equal(verdict.ok ? 'ok' : verdict.reason, 'bad signature', JSON.stringify(header));
    }
  });

  it('the skew reason names the whole seconds and the fix says which clock is ahead', () => {
    const headers = signRequest(KEY, parts);
    const verdict = verifyRequest(KEY, { ...parts, headers }, { now: parts.timestamp - 412_300, seenNonces: new NonceCache(), destination: 'controller' });
    assert.ok(!verdict.ok);
    assert.equal(verdict.reason, 'clock skew 412 s');
    assert.match(verdict.fix, /412 s ahead of the controller's \(at most 300 s allowed\)/);
    const lenient = verifyRequest(KEY, { ...parts, headers }, { now: parts.timestamp - 412_300, maxSkewSeconds: 600, seenNonces: new NonceCache(), destination: 'controller' });
    assert.deepEqual(lenient, { ok: true });
  });

  it('a nonce is refused the second time, and a refused request does not use it up', () => {
    const cache = new NonceCache();
    const headers = signRequest(KEY, parts);
    const forged = { ...parts, body: 'tampered', headers };
    assert.equal(verifyRequest(KEY, forged, { now, seenNonces: cache, destination: 'controller' }).ok, false);
    assert.equal(cache.size, 0);
    assert.deepEqual(verifyRequest(KEY, { ...parts, headers }, { now, seenNonces: cache, destination: 'controller' }), { ok: true });
    const again = verifyRequest(KEY, { ...parts, headers }, { now, seenNonces: cache, destination: 'controller' });
    assert.equal(again.ok ? 'ok' : again.reason, 'replayed nonce');
  });

  it('the nonce cache forgets entries once their timestamp is past the skew window', () => {
    const cache = new NonceCache();
    const skewMs = 300_000;
    assert.equal(cache.remember('a'.repeat(16), 1_000, 1_000, skewMs), 'fresh');
    assert.equal(cache.remember('b'.repeat(16), 2_000, 2_000, skewMs), 'fresh');
    assert.equal(cache.remember('a'.repeat(16), 1_000, 2_000, skewMs), 'replayed');
    assert.equal(cache.remember('c'.repeat(16), 301_500, 301_500, skewMs), 'fresh');
    assert.equal(cache.size, 2, 'a expired at 301,000 ms');
  });

  it('a server started at t refuses what was signed before t and takes what was signed at t (CI flake of a test that signed in the millisecond its server started)', () => {
    const cache = new NonceCache(10, 5_000);
    assert.equal(cache.remember('before'.padEnd(16, 'x'), 4_999, 5_000, 300_000), 'before-start');
    assert.equal(cache.remember('at-start'.padEnd(16, 'x'), 5_000, 5_000, 300_000), 'fresh');
    assert.equal(cache.remember('at-start'.padEnd(16, 'x'), 5_000, 5_001, 300_000), 'replayed');
  });

  it('a full nonce cache drops its oldest entries and refuses requests at or before them, never letting a replay through', () => {
    const cache = new NonceCache(3);
    const skewMs = 300_000;
    for (let i = 0; i < 5; i++) assert.equal(cache.remember(`nonce-${i}`.padEnd(16, 'x'), 1_000 + i, 2_000, skewMs), 'fresh');
    assert.equal(cache.size, 3);
    assert.equal(cache.remember('nonce-0'.padEnd(16, 'x'), 1_000, 2_000, skewMs), 'before-horizon', 'dropped nonce 0 cannot be replayed');
    assert.equal(cache.remember('nonce-9'.padEnd(16, 'x'), 1_001, 2_000, skewMs), 'before-horizon', 'as old as the newest dropped one');
    assert.equal(cache.remember('nonce-9'.padEnd(16, 'x'), 1_002, 2_000, skewMs), 'fresh');
  });
});

describe('the nesting check on request bodies', () => {
  /** Depth of arrays and objects in a parsed value. */
  const depthOf = (value: unknown): number => typeof value !== 'object' || value === null ? 0
    : 1 + Math.max(0, ...Object.values(value as Record<string, unknown>).map(depthOf));
  const STRINGS = ['', 'a', '"', '\\', '\\"', '[', '{', ']', '}', '\\\\', 'x"]}', '[{\\', 'é[', '\u0000{'];

  it('counts levels exactly, whatever the strings hold (quotes, backslash runs, brackets), on 2,000 random documents', () => {
    const random = new SeededRandom(9);
    const make = (level: number): unknown => {
      const kind = level > 12 ? random.int(0, 2) : random.int(0, 4);
      if (kind === 0) return STRINGS[random.int(0, STRINGS.length - 1)] + STRINGS[random.int(0, STRINGS.length - 1)];
      if (kind === 1) return random.int(-5, 5);
      if (kind === 2) return random.chance(0.5) ? null : true;
      const items = Array.from({ length: random.int(0, 3) }, () => make(level + 1));
      return kind === 3 ? items : Object.fromEntries(items.map((item, i) => [STRINGS[(i * 7 + level) % STRINGS.length] + i, item]));
    };
    for (let n = 0; n < 2000; n++) {
      const value = make(0);
      const bytes = Buffer.from(JSON.stringify(value));
      const depth = depthOf(value);
      assert.equal(nestedDeeperThan(bytes, depth), false, bytes.toString());
      if (depth > 0) assert.equal(nestedDeeperThan(bytes, depth - 1), true, bytes.toString());
    }
  });

  it('stops at the first level too deep: a megabyte of brackets is refused at once', () => {
    assert.equal(nestedDeeperThan(Buffer.from(`${'['.repeat(500_000)}${']'.repeat(500_000)}`), MAX_BODY_DEPTH), true);
    assert.equal(nestedDeeperThan(Buffer.from(`${'['.repeat(MAX_BODY_DEPTH)}${']'.repeat(MAX_BODY_DEPTH)}`), MAX_BODY_DEPTH), false);
    assert.equal(nestedDeeperThan(Buffer.from(`["${'['.repeat(1000)}"]`), MAX_BODY_DEPTH), false, 'brackets in a string');
  });
});

describe('the cluster key file', () => {
  let folder: string;
  before(() => { folder = mkdtempSync(join(tmpdir(), 'taras-key-')); });
  after(() => rmSync(folder, { recursive: true, force: true }));

  it('a generated key has mode 600, loads back identical, and is never overwritten', () => {
    const path = join(folder, 'cluster.key');
    const key = generateClusterKey(path);
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.match(readFileSync(path, 'utf8'), /^[0-9a-f]{64}\n$/);
    assert.deepEqual(loadClusterKey(path), key);
    assert.throws(() => generateClusterKey(path), (error: ClusterKeyError) => /already exists/.test(error.message));
    assert.deepEqual(loadClusterKey(path), key);
  });

  it('a world-readable key file is refused with the chmod that fixes it', () => {
    const path = join(folder, 'open.key');
    writeFileSync(path, `${'k'.repeat(40)}\n`);
    chmodSync(path, 0o644);
    assert.throws(() => loadClusterKey(path), (error: ClusterKeyError) =>
      error instanceof ClusterKeyError && /readable by every user \(mode 644\)/.test(error.message) && error.fix === `chmod 600 ${path}`);
    chmodSync(path, 0o640);
    assert.equal(loadClusterKey(path).length, 40, 'group-readable is allowed (a taras group)');
  });

  it('a missing or short key file is refused with a way to make one', () => {
    assert.throws(() => loadClusterKey(join(folder, 'none.key')), (error: ClusterKeyError) => /does not exist/.test(error.message) && /openssl rand -hex 32/.test(error.fix));
    const short = join(folder, 'short.key');
    writeFileSync(short, 'secret\n', { mode: 0o600 });
    assert.throws(() => loadClusterKey(short), (error: ClusterKeyError) => /6 characters long; at least 32/.test(error.message));
  });
});

describe('the caller identity', () => {
  it('the local identity is this process\'s user (for display only: the server verifies)', () => {
    const me = localIdentity();
    assert.equal(typeof me.user, 'string');
    assert.ok(me.user.length > 0);
    assert.equal(me.uid, process.getuid?.());
  });
});

describe('API server and client over TCP and a Unix socket', () => {
  let folder: string;
  let log: ReturnType<typeof recordingLog>;
  let server: ApiServer;
  let bound: BoundAddress;
  let url: string;
  const clients: ApiClient[] = [];
  const client = (target: Parameters<typeof createApiClient>[0], options: Partial<Parameters<typeof createApiClient>[1]> = {}): ApiClient => {
    const made = createApiClient(target, { ...options });
    clients.push(made);
    return made;
  };

  before(async () => {
    folder = mkdtempSync(join(tmpdir(), 'taras-net-'));
    log = recordingLog();
    server = createApiServer({ routes, clusterKey: KEY, requireKeyFor: agentRoutesOnly, authenticator: createAuthenticator({}), log, maxBodyBytes: 4096 });
    bound = await server.listen({ host: '127.0.0.1', port: 0, socketPath: join(folder, 'controller.sock') });
    assert.ok(bound.tcp && bound.socketPath);
    url = bound.tcp.url;
  });

  after(async () => {
    for (const made of clients) made.close();
    await server.close();
    assert.equal(existsSync(join(folder, 'controller.sock')), false, 'closing removes the socket file');
    rmSync(folder, { recursive: true, force: true });
  });

  it('listens on loopback with an ephemeral port and on the socket at once', () => {
    assert.equal(bound.tcp?.host, '127.0.0.1');
    assert.ok((bound.tcp?.port ?? 0) > 0);
    assert.equal(url, `http://127.0.0.1:${bound.tcp?.port}`);
    assert.ok(lstatSync(bound.socketPath ?? '').isSocket());
  });

  it('a POST round trip carries path parameters (decoded), the query and the JSON body, on both transports', async () => {
    for (const api of [client({ baseUrl: url }), client({ socketPath: bound.socketPath ?? '' })]) {
      const answer = await api.post('/jobs/42/notes/a%20b%2Fc?verbose=1&user=ada', { text: 'hello', list: [1, 2], nested: { ok: true } });
      assert.deepEqual(answer, {
        params: { id: '42', note: 'a b/c' },
        query: { verbose: '1', user: 'ada' },
        body: { text: 'hello', list: [1, 2], nested: { ok: true } },
        route: '/jobs/:id/notes/:note',
        signed: false,
      });
    }
  });

  it('the handler gets the kernel\'s word for the socket\'s peer, and no caller for an anonymous TCP request, whatever headers claim', async () => {
    const me = localIdentity();
    const forged = (): Record<string, string> => ({ 'x-taras-user': 'grace', 'x-taras-uid': '1003' });
    assert.deepEqual(await client({ socketPath: bound.socketPath ?? '' }, { credentials: forged }).get('/whoami'),
      { caller: { user: me.user, uid: me.uid, gid: process.getgid?.(), via: 'socket' }, transport: 'unix' });
    assert.deepEqual(await client({ baseUrl: url }, { credentials: forged }).get('/whoami'), { caller: null, transport: 'tcp' });
  });

  it('a request signed with the cluster key is accepted and marked signed, on a route that needs it and one that does not', async () => {
    const agent = client({ baseUrl: url }, { clusterKey: KEY });
    assert.deepEqual(await agent.post('/agent/heartbeat', { node: 'n01', load: 0.5 }), { signed: true, body: { node: 'n01', load: 0.5 } });
    const note = await agent.post<{ signed: boolean }>('/jobs/1/notes/x', {});
    assert.equal(note.signed, true);
    const overSocket = client({ socketPath: bound.socketPath ?? '' }, { clusterKey: KEY });
    assert.deepEqual(await overSocket.post('/agent/heartbeat', { node: 'n02' }), { signed: true, body: { node: 'n02' } });
  });

  /** The refusal as the client reports it, and the server's log line for it. */
  async function refusedBothSides(request: (clientLog: NetLog) => Promise<unknown>, reason: string): Promise<ApiRequestError> {
    const clientLog = recordingLog();
    const before = log.lines.length;
    const error = await apiError(request(clientLog));
    assert.equal(error.status, 401);
    assert.equal(error.error, `cluster key check failed: ${reason}`);
    assert.ok(error.fix && error.fix.length > 0, 'the refusal carries a fix');
    const serverLines = log.lines.slice(before).filter((line) => line.level === 'warn' && line.message.endsWith(`: ${reason}`));
    assert.equal(serverLines.length, 1, `server logged: ${JSON.stringify(log.lines.slice(before))}`);
    assert.match(serverLines[0].message, /^refused POST \/agent\/heartbeat from (127\.0\.0\.1:\d+|unix:\S+): /);
    if (error.refusal !== undefined && clientLog.lines.length > 0) {
      assert.match(clientLog.lines[0].message, new RegExp(`refused POST /agent/heartbeat: cluster key check failed: ${reason}$`));
    }
    return error;
  }

  it('a wrong key is refused with 401 "bad signature", logged by the server with the remote address and by the client', async () => {
    const clientLog = recordingLog();
    const error = await refusedBothSides(async () => client({ baseUrl: url }, { clusterKey: OTHER_KEY, log: clientLog }).post('/agent/heartbeat', { node: 'n01' }), 'bad signature');
    assert.equal(error.refusal, 'bad-signature');
    assert.match(error.fix ?? '', /copy the controller's key file/);
    assert.equal(clientLog.lines.length, 1);
    assert.equal(clientLog.lines[0].level, 'warn');
    assert.equal(clientLog.lines[0].message, `controller at ${url} refused POST /agent/heartbeat: cluster key check failed: bad signature`);
    const signedElsewhere = await apiError(client({ baseUrl: url }, { clusterKey: OTHER_KEY }).get('/status'));
    assert.equal(signedElsewhere.refusal, 'bad-signature', 'a signature that is present is checked even on an open route');
  });

  it('a missing key is refused with 401 "missing signature" where the route needs it, over TCP and the socket', async () => {
    for (const target of [{ baseUrl: url }, { socketPath: bound.socketPath ?? '' }]) {
      const clientLog = recordingLog();
      const error = await refusedBothSides(() => client(target, { log: clientLog }).post('/agent/heartbeat', { node: 'n01' }), 'missing signature');
      assert.equal(error.refusal, 'missing-signature');
      assert.equal(clientLog.lines.length, 1);
    }
    assert.deepEqual(await client({ baseUrl: url }).get('/status'), { up: true }, 'open routes need no key');
  });

  it('a tampered body is refused with 401 "bad signature"', async () => {
    const body = JSON.stringify({ node: 'n01', cpus: 8 });
    const headers = { ...signRequest(KEY, { method: 'POST', path: '/agent/heartbeat', body, timestamp: Date.now(), nonce: 'tamper-0123456789', destination: 'controller' }) };
    const before = log.lines.length;
    const answer = await rawRequest(url, 'POST', '/agent/heartbeat', body.replace('8', '9'), headers);
    assert.equal(answer.status, 401);
    assert.equal(answer.body.error, 'cluster key check failed: bad signature');
    assert.equal(answer.headers['x-taras-refused'], 'bad-signature');
    assert.ok(log.lines.slice(before).some((line) => /^refused POST \/agent\/heartbeat from 127\.0\.0\.1:\d+: bad signature$/.test(line.message)));
  });

  it('a replayed request is accepted once and then refused with 401 "replayed nonce"', async () => {
    const body = JSON.stringify({ node: 'n01' });
    const headers = signRequest(KEY, { method: 'POST', path: '/agent/heartbeat', body, timestamp: Date.now(), nonce: 'replay-0123456789', destination: 'controller' });
    const first = await rawRequest(url, 'POST', '/agent/heartbeat', body, headers);
    assert.equal(first.status, 200);
    const before = log.lines.length;
    const second = await rawRequest(url, 'POST', '/agent/heartbeat', body, headers);
    assert.equal(second.status, 401);
    assert.equal(second.body.error, 'cluster key check failed: replayed nonce');
    assert.ok(log.lines.slice(before).some((line) => line.message.endsWith(': replayed nonce')));
  });

  it('a request signed before a server started is refused by it: a capture cannot be replayed after a restart (red team, issue 9)', async () => {
    const body = JSON.stringify({ node: 'n01' });
    const headers = signRequest(KEY, { method: 'POST', path: '/agent/heartbeat', body, timestamp: Date.now(), nonce: 'restart-0123456789', destination: 'controller' });
    assert.equal((await rawRequest(url, 'POST', '/agent/heartbeat', body, headers)).status, 200, 'accepted by the running server');
    await new Promise((r) => setTimeout(r, 5));
    // The same server started again (its nonces are gone with its memory).
    const restarted = createApiServer({ routes, clusterKey: KEY, requireKeyFor: agentRoutesOnly, authenticator: createAuthenticator({}), log: recordingLog(), maxBodyBytes: 4096 });
    const again = await restarted.listen({ host: '127.0.0.1', port: 0 });
    try {
      const replay = await rawRequest(again.tcp!.url, 'POST', '/agent/heartbeat', body, headers);
      assert.equal(replay.status, 401);
      assert.match(replay.body.error ?? '', /^cluster key check failed: signed before this server started/);
      assert.equal(replay.headers['x-taras-refused'], 'replayed-nonce');
      // Signed anew, the same heartbeat is taken.
      const fresh = signRequest(KEY, { method: 'POST', path: '/agent/heartbeat', body, timestamp: Date.now(), nonce: 'restart-abcdefghij', destination: 'controller' });
      assert.equal((await rawRequest(again.tcp!.url, 'POST', '/agent/heartbeat', body, fresh)).status, 200);
    } finally {
      await restarted.close();
    }
  });

  it('a client whose clock is 412 s ahead is refused with 401 "clock skew 412 s"', async () => {
    const clientLog = recordingLog();
    const skewed = client({ baseUrl: url }, { clusterKey: KEY, clock: () => Date.now() + 412_000, log: clientLog });
    const error = await refusedBothSides(() => skewed.post('/agent/heartbeat', {}), 'clock skew 412 s');
    assert.equal(error.refusal, 'clock-skew');
    assert.match(error.fix ?? '', /ahead of the controller's/);
    assert.equal(clientLog.lines.length, 1);
  });

  it('a body over the limit gets 413 with a fix, whether its length is declared or streamed, and the connection stays usable', async () => {
    const api = client({ baseUrl: url });
    const error = await apiError(api.post('/jobs/1/notes/x', { text: 'y'.repeat(10_000) }));
    assert.equal(error.status, 413);
    assert.equal(error.error, 'request body is larger than the limit of 4096 bytes');
    // It named "the controller's body limit", which no setting changes.
    assert.equal(error.fix, 'send less in one request: a job\'s script and environment together must stay under it (keep large data in files the script reads), and many jobs go in several requests');
    assert.deepEqual(await api.get('/status'), { up: true });

    const streamed = await new Promise<number>((resolve, reject) => {
      const req = request(`${url}/jobs/1/notes/x`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.write('["');
      for (let i = 0; i < 10; i++) req.write('z'.repeat(1000));
      req.end('"]');
    });
    assert.equal(streamed, 413);
  });

  it('an unknown route gets 404 listing every route, and a wrong method 405 with the allowed ones', async () => {
    const api = client({ baseUrl: url });
    const notFound = await apiError(api.get('/jobz'));
    assert.equal(notFound.status, 404);
    assert.equal(notFound.error, 'no such API route: GET /jobz');
    assert.equal(notFound.fix, `valid routes: ${routes.map((route) => `${route.method} ${route.path}`).join(', ')}`);
    const wrongMethod = await apiError(api.post('/status', {}));
    assert.equal(wrongMethod.status, 405);
    assert.equal(wrongMethod.error, 'POST is not allowed on /status (allowed: GET, HEAD)');
    assert.match(wrongMethod.fix ?? '', /^valid routes: GET \/status, /);
  });

  it('a handler\'s RouteError becomes its status with error and fix', async () => {
    const error = await apiError(client({ baseUrl: url }).delete('/jobs/77'));
    assert.equal(error.status, 404);
    assert.equal(error.error, 'no job 77');
    assert.equal(error.fix, 'list jobs with `taras queue`');
  });

  it('a handler exception is a 500 naming an incident, with the stack in the server log and not in the answer', async () => {
    const before = log.lines.length;
    const answer = await rawRequest(url, 'GET', '/boom', '', {});
    assert.equal(answer.status, 500);
    assert.deepEqual(Object.keys(answer.body).sort(), ['error', 'fix']);
    const text = JSON.stringify(answer.body);
    assert.doesNotMatch(text, /secret\.db|corrupt|at .*\.js|Error:/);
    const incident = /incident ([0-9a-f]{8})/.exec(answer.body.error ?? '')?.[1];
    assert.ok(incident, answer.body.error);
    const logged = log.lines.slice(before).filter((line) => line.level === 'error');
    assert.equal(logged.length, 1);
    assert.match(logged[0].message, new RegExp(`^internal error ${incident} in GET /boom \\(/boom\\) from 127\\.0\\.0\\.1:\\d+: Error: database file /srv/taras/secret\\.db is corrupt\\n\\s+at `));
  });

  it('a listing sent in pieces is one JSON answer, and others are served while it is being made; a caller that leaves stops it', async () => {
    piecesMade = 0;
    // The lister is another process that reads as fast as it can (so the server's writes rarely wait): the
    // server must still serve others between pieces.
    const reader = `const http = require('node:http'); http.get({ socketPath: process.argv[1], path: '/listing' }, (res) => {
      const chunks = []; res.on('data', (c) => chunks.push(c)); res.on('end', () => process.stdout.write(Buffer.concat(chunks))); });`;
    const lister = spawn(process.execPath, ['-e', reader, bound.socketPath ?? ''], { stdio: ['ignore', 'pipe', 'inherit'] });
    const output: Buffer[] = [];
    lister.stdout.on('data', (chunk: Buffer) => output.push(chunk));
    const listed = new Promise((resolveExit) => lister.once('exit', resolveExit));
    try {
      const other = client({ socketPath: bound.socketPath ?? '' });
      // Asked once the listing has begun: answered before it ends, between two pieces.
      for (let i = 0; i < 1000 && piecesMade === 0; i++) await new Promise((resolveWait) => setTimeout(resolveWait, 5));
      const during = await other.get<{ made: number }>('/pieces-made');
      assert.ok(during.made > 0 && during.made < LISTING_PIECES, `answered after ${during.made} of ${LISTING_PIECES} pieces`);
      assert.equal(await listed, 0);
    } finally {
      if (lister.exitCode === null) lister.kill('SIGKILL');
    }
    const items = JSON.parse(Buffer.concat(output).toString('utf8')) as { n: number }[];
    assert.equal(items.length, LISTING_PIECES * 1000);
    assert.deepEqual(items.map((item) => item.n).slice(0, 3), [0, 1, 2]);
    assert.equal(items[items.length - 1].n, LISTING_PIECES * 1000 - 1);

    // A caller that leaves: the rest is never made.
    piecesMade = 0;
    const cut = request({ socketPath: bound.socketPath ?? '', path: '/listing' }, (res) => res.once('data', () => res.destroy()));
    cut.on('error', () => undefined);
    cut.end();
    for (let i = 0; i < 200 && piecesMade === 0; i++) await new Promise((resolveWait) => setTimeout(resolveWait, 10));
    await new Promise((resolveWait) => setTimeout(resolveWait, 300));
    const made = piecesMade;
    await new Promise((resolveWait) => setTimeout(resolveWait, 200));
    assert.equal(piecesMade, made, 'no piece made once the caller left');
    assert.ok(made < LISTING_PIECES, `${made} pieces made for a caller that left`);
  });

  it('a listing that fails at its first piece is a 500 with an incident; one that fails later is cut and logged', async () => {
    const api = client({ socketPath: bound.socketPath ?? '' });
    const first = await apiError(api.get('/listing-broken/0'));
    assert.equal(first.status, 500);
    assert.match(first.error, /internal error in the controller while handling GET \/listing-broken\/:at \(incident [0-9a-f]{8}\)/);
    const before = log.lines.length;
    await assert.rejects(api.get('/listing-broken/3'), (error: unknown) => error instanceof ControllerUnreachableError || error instanceof ApiRequestError);
    const cut = log.lines.slice(before).filter((line) => line.level === 'error');
    assert.equal(cut.length, 1, JSON.stringify(log.lines.slice(before)));
    assert.match(cut[0].message, /^internal error [0-9a-f]{8} in GET \/listing-broken\/:at \(\/listing-broken\/3\) from unix:.* after its answer began \(the answer was cut\): Error: listing broke at piece 3/);
    assert.deepEqual(await api.get('/status'), { up: true }, 'the server goes on');
  });

  it('a body that is not JSON gets 400 saying so', async () => {
    const answer = await rawRequest(url, 'POST', '/jobs/1/notes/x', '{"text": nope}', {});
    assert.equal(answer.status, 400);
    assert.match(answer.body.error ?? '', /^request body is not valid JSON: /);
    assert.match(answer.body.fix ?? '', /application\/json/);
  });

  it('a body must be JSON: any other content type is a 415 and invalid UTF-8 a 400, each naming the fix; nothing reaches the route (red team, issue 9)', async () => {
    const before = posted;
    for (const contentType of ['text/plain;charset=UTF-8', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonp']) {
      const answer = await rawRequest(url, 'POST', '/submit', '{"text": "hi"}', { 'content-type': contentType });
      assert.equal(answer.status, 415, contentType);
      assert.equal(answer.body.error, `request body is of type ${JSON.stringify(contentType)}: the API takes JSON only`);
      assert.match(answer.body.fix ?? '', /content-type: application\/json/);
    }
    const bare = await new Promise<number>((resolveStatus, reject) => {
      const req = request(`${url}/submit`, { method: 'POST' }, (res) => {
        res.resume();
        resolveStatus(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end('{"text": "hi"}');
    });
    assert.equal(bare, 415, 'no content type at all');
    const latin1 = await rawRequest(url, 'POST', '/submit', Buffer.from('{"text": "caf\xe9"}', 'latin1'), {});
    assert.equal(latin1.status, 400);
    assert.equal(latin1.body.error, 'request body is not valid UTF-8');
    for (const contentType of ['application/json; charset=utf-8', 'APPLICATION/JSON', 'application/merge-patch+json']) {
      assert.equal((await rawRequest(url, 'POST', '/submit', '{"text": "caf\u00e9"}', { 'content-type': contentType })).status, 200, contentType);
    }
    assert.equal(posted, before + 3, 'only the JSON bodies reached the route');
  });

  it('HEAD is answered as GET without the body; HEAD appears among the allowed methods', async () => {
    const head = await new Promise<{ status: number; headers: Record<string, unknown>; bytes: number }>((resolveHead, reject) => {
      const req = request(`${url}/status`, { method: 'HEAD' }, (res) => {
        let bytes = 0;
        res.on('data', (chunk: Buffer) => (bytes += chunk.length));
        res.on('end', () => resolveHead({ status: res.statusCode ?? 0, headers: res.headers, bytes }));
      });
      req.on('error', reject);
      req.end();
    });
    assert.equal(head.status, 200);
    assert.equal(head.bytes, 0);
    assert.match(String(head.headers['content-type']), /^application\/json/);
    const get = await rawRequest(url, 'GET', '/status', '', {});
    assert.equal(Number(head.headers['content-length']), Buffer.byteLength(JSON.stringify(get.body)), 'the length GET would send');
    const wrong = await rawRequest(url, 'DELETE', '/status', '', {});
    assert.equal(wrong.status, 405);
    assert.equal(wrong.headers.allow, 'GET, HEAD');
  });

  it('8 concurrent clients x 500 POSTs are all answered, each once', async () => {
    const first = posted;
    const perClient = 500;
    const seen = new Set<number>();
    const results = await Promise.all(Array.from({ length: 8 }, async (_, c) => {
      const api = client(c % 2 === 0 ? { baseUrl: url } : { socketPath: bound.socketPath ?? '' });
      let answered = 0;
      for (let i = 0; i < perClient; i++) {
        const job = { client: c, i, script: '#!/bin/sh\nsleep 1\n' };
        const answer = await api.post<{ id: number; echo: typeof job }>('/submit', job);
        assert.deepEqual(answer.echo, job);
        seen.add(answer.id);
        answered++;
      }
      return answered;
    }));
    assert.deepEqual(results, Array(8).fill(perClient));
    assert.equal(seen.size, 8 * perClient);
    assert.equal(posted - first, 8 * perClient);
  });
});

describe('claiming the socket path and unreachable controllers', () => {
  let folder: string;
  before(() => { folder = mkdtempSync(join(tmpdir(), 'taras-sock-')); });
  after(() => rmSync(folder, { recursive: true, force: true }));

  it('a stale socket file left by a killed process is replaced, and the log says so', async () => {
    const path = join(folder, 'stale.sock');
    // A process that binds the socket and dies by SIGKILL leaves the file behind, as a killed controller would.
    spawnSync(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(path)}, () => process.kill(process.pid, 'SIGKILL'))`]);
    assert.ok(lstatSync(path).isSocket(), 'the stale socket file exists');
    const log = recordingLog();
    const server = createApiServer({ routes, log });
    try {
      const bound = await server.listen({ socketPath: path });
      assert.equal(bound.socketPath, path);
      assert.equal(bound.tcp, undefined);
      const api = createApiClient({ socketPath: path }, {});
      assert.deepEqual(await api.get('/status'), { up: true });
      api.close();
      assert.deepEqual(log.lines, [{ level: 'warn', message: `removed stale socket file ${path} (nothing answered on it; left by a stopped controller)` }]);
    } finally {
      await server.close();
    }
  });

  it('a live socket is refused and keeps serving; a file that is not a socket is never replaced', async () => {
    const path = join(folder, 'live.sock');
    const first = createApiServer({ routes, log: recordingLog() });
    await first.listen({ socketPath: path });
    const second = createApiServer({ routes, log: recordingLog() });
    try {
      const error = await rejection(second.listen({ socketPath: path, port: 0 }));
      assert.ok(error instanceof ListenError);
      assert.match(error.message, /another process is listening on .*live\.sock/);
      assert.match(error.fix, /stop it first/);
      const api = createApiClient({ socketPath: path }, {});
      assert.deepEqual(await api.get('/status'), { up: true }, 'the first server still answers');
      api.close();
    } finally {
      await second.close();
      await first.close();
    }
    const regular = join(folder, 'notes.txt');
    writeFileSync(regular, 'keep me');
    const third = createApiServer({ routes, log: recordingLog() });
    const error = await rejection(third.listen({ socketPath: regular }));
    assert.ok(error instanceof ListenError);
    assert.match(error.message, /exists and is not a socket/);
    assert.equal(readFileSync(regular, 'utf8'), 'keep me');
  });

  it('a controller that is not running is reported as not reachable, with how to start it', async () => {
    const probe = createApiServer({ routes, log: recordingLog() });
    const { tcp } = await probe.listen({ port: 0 });
    await probe.close();
    const targets: [Parameters<typeof createApiClient>[0], string][] = [
      [{ baseUrl: tcp?.url ?? '' }, tcp?.url ?? ''],
      [{ socketPath: join(folder, 'absent.sock') }, `unix:${join(folder, 'absent.sock')}`],
    ];
    for (const [target, address] of targets) {
      const error = await rejection(createApiClient(target, {}).post('/submit', {}));
      assert.ok(error instanceof ControllerUnreachableError);
      assert.equal(error.message, `controller not reachable at ${address} (is it running? start it with \`npm start\` or set TARAS_CONTROLLER)`);
      assert.equal(error.address, address);
    }
    // The controller's order to an agent that is down: its log names the agent, not the CLI's remedies.
    const error = await rejection(createApiClient({ baseUrl: tcp?.url ?? '', agent: true }, {}).post('/limit', {}));
    assert.ok(error instanceof ControllerUnreachableError);
    assert.equal(error.message, `the agent at ${tcp?.url} is not reachable (ECONNREFUSED)`);
    assert.equal(error.fix, 'start `taras agent` on its node again; it registers itself');
  });

  it('a server given requireKeyFor without a key refuses to start rather than leave those routes open', () => {
    assert.throws(() => createApiServer({ routes, log: recordingLog(), requireKeyFor: () => true }), /no clusterKey/);
  });
});
