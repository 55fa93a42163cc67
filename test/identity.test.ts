// Who the controller believes a request comes from (src/net/identity.ts):
// the kernel's word on the Unix socket, a JWT or MUNGE credential on TCP,
// nobody otherwise. A real controller on loopback, real Unix users, real
// tokens; each attack here succeeded when the controller believed the
// x-taras-user header.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { request, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { SignJWT } from 'jose';
import { readClusterConfig } from '../src/config/load.js';
import type { ClusterConfig } from '../src/config/cluster.js';
import { startController, type RunningController } from '../src/controller/daemon.js';
import type { JobSpec } from '../src/jobspec/types.js';
import { createAuthenticator, issueToken, loadOrCreateJwtKey } from '../src/net/identity.js';
import { requestPayload } from '../src/net/munge.js';
import { runAs, tokenFor } from './auth-helpers.js';
import { mungeSkipReason, startMunged, type RunningMunged } from './munged.js';
import { createTestUser, notRootReason, removeTestUsers, type TestUser } from './unix-users.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const work = mkdtempSync(join(tmpdir(), 'taras-identity-'));
// Other users must reach the socket: a 0711 path, as the data directory is.
chmodSync(work, 0o711);
after(() => {
  rmSync(work, { recursive: true, force: true });
  removeTestUsers();
});

interface Answer {
  status: number;
  body: { error?: string; fix?: string } & Record<string, unknown>;
}

/** One raw request, over TCP (`url`) or the socket (`socketPath`), with exactly these headers. */
function raw(target: { url: string } | { socketPath: string }, method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<Answer> {
  const text = body === undefined ? '' : JSON.stringify(body);
  const where = 'url' in target ? new URL(target.url) : undefined;
  return new Promise((resolvePromise, reject) => {
    const req = request({
      ...(where ? { host: where.hostname, port: Number(where.port) } : { socketPath: (target as { socketPath: string }).socketPath }),
      method, path, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const textBody = Buffer.concat(chunks).toString('utf8');
        resolvePromise({ status: res.statusCode ?? 0, body: textBody === '' ? {} : JSON.parse(textBody) });
      });
    });
    req.on('error', reject);
    req.end(text);
  });
}

const FORGED_ROOT = { 'x-taras-user': 'root', 'x-taras-uid': '0' };
const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

const spec = (dir: string): JobSpec => ({
  script: { path: join(dir, 'x.sh'), text: '#!/bin/sh\ntrue\n', args: [] }, nodes: { min: 1 }, cpusPerTask: 1, timeLimitSeconds: 60,
  name: 'probe', workingDir: dir, output: 'x-%j.out', export: { all: false, variables: [] }, requeue: false,
});

describe('verified identity on a live controller', { skip: notRootReason }, () => {
  let controller: RunningController;
  let config: ClusterConfig;
  let tcp: { url: string };
  let bob: TestUser;

  before(async () => {
    bob = createTestUser('bob');
    const file = join(work, 'cluster.toml');
    writeFileSync(file, '[cluster]\nname = "ident"\ndata_dir = "data"\n[[nodes]]\nnames = "n1"\ncpus = 2\nmemory = "1G"\n[[partitions]]\nname = "batch"\nnodes = "ALL"\n');
    const parsed = await readClusterConfig(file);
    assert.ok(parsed.ok);
    config = parsed.config;
    controller = await startController({ config, configPath: file, clusterKey: null, port: 0, log: () => {} });
    chmodSync(config.dataDir, 0o711);
    tcp = { url: controller.url };
  });

  after(async () => {
    await controller?.close();
  });

  it('creates the token key on first start, 0600, and keeps it across starts', () => {
    const mode = statSync(config.jwtKeyPath).mode & 0o777;
    assert.equal(mode, 0o600);
    assert.deepEqual(loadOrCreateJwtKey(config.jwtKeyPath), loadOrCreateJwtKey(config.jwtKeyPath));
  });

  it('anonymous TCP requests get 401 with how to authenticate on every route but GET /status, which names the socket', async () => {
    const routes: [string, string, unknown?][] = [
      ['GET', '/jobs'], ['GET', '/queue'], ['GET', '/queue?long=1'], ['GET', '/jobs/1'], ['GET', '/jobs/1/when'], ['DELETE', '/jobs/1'],
      ['GET', '/nodes'], ['POST', '/jobs', { spec: spec(work) }], ['POST', '/admin/drain', { nodes: ['n1'], reason: 'x' }],
      ['PUT', '/admin/motd', { text: 'owned' }], ['POST', '/admin/reconfigure', {}], ['POST', '/admin/shutdown', {}], ['POST', '/admin/token', {}],
    ];
    for (const [method, path, body] of routes) {
      const answer = await raw(tcp, method, path, {}, body);
      assert.equal(answer.status, 401, `${method} ${path}`);
      assert.match(answer.body.error ?? '', /no verified identity/);
      assert.match(answer.body.fix ?? '', /local socket.*MUNGE.*taras admin token/);
    }
    const status = await raw(tcp, 'GET', '/status', {});
    assert.equal(status.status, 200);
    assert.equal(status.body.socket, controller.socketPath);
  });

  it('a forged x-taras-user claiming root over TCP is refused: no job stored, no shutdown, no motd', async () => {
    const submitted = await raw(tcp, 'POST', '/jobs', FORGED_ROOT, { spec: spec(work) });
    assert.equal(submitted.status, 401);
    assert.equal((await raw(tcp, 'POST', '/admin/shutdown', FORGED_ROOT, {})).status, 401);
    assert.equal((await raw(tcp, 'PUT', '/admin/motd', FORGED_ROOT, { text: 'owned' })).status, 401);
    assert.equal(controller.engine().active.size, 0, 'nothing was stored');
    assert.equal((await raw(tcp, 'GET', '/status', {})).body.up, true, 'the controller still runs');
  });

  it('on the socket the caller is the connecting process\'s real user: a forged root header from another user is ignored', async () => {
    // bob's process, through the socket, claims root in the headers and tries root's powers.
    const script = `
      const http = require('http');
      const call = (method, path, body) => new Promise((ok, fail) => {
        const text = body === undefined ? '' : JSON.stringify(body);
        const req = http.request({ socketPath: ${JSON.stringify(controller.socketPath)}, method, path,
          headers: { 'x-taras-user': 'root', 'x-taras-uid': '0', 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) } },
          (res) => { let s = ''; res.on('data', (c) => s += c); res.on('end', () => ok({ status: res.statusCode, body: JSON.parse(s || '{}') })); });
        req.on('error', fail); req.end(text);
      });
      (async () => {
        // A uid in the body is refused (unknown field); the job's uid is the kernel's word.
        const claimed = await call('POST', '/jobs', { spec: ${JSON.stringify({ ...spec('/tmp'), submitUid: 0 })} });
        const submit = await call('POST', '/jobs', { spec: ${JSON.stringify(spec('/tmp'))} });
        const job = await call('GET', '/jobs/' + submit.body.id);
        const shutdown = await call('POST', '/admin/shutdown', {});
        const drain = await call('POST', '/admin/drain', { nodes: ['n1'], reason: 'mine now' });
        console.log(JSON.stringify({ claimed: claimed.status, submit: submit.status, user: job.body.user, shutdown: shutdown.status, drain: drain.status, error: shutdown.body.error }));
      })();`;
    const run = await runAs(bob, ['-e', script]);
    assert.equal(run.status, 0, run.stderr);
    const seen = JSON.parse(run.stdout);
    assert.deepEqual({ ...seen, error: undefined }, { claimed: 400, submit: 201, user: bob.name, shutdown: 403, drain: 403, error: undefined });
    assert.match(seen.error, new RegExp(`only administrators may shut the controller down; you are ${bob.name}`));
    // The uid kept for the agent is the kernel's, not one the body carried.
    const record = [...controller.engine().active.values()].find((r) => r.user === bob.name)!;
    assert.equal((controller.engine().specOf(record) as unknown as { submitUid: number }).submitUid, bob.uid);
  });

  it('a uid with no passwd entry still gets GET /status over the socket (which says nothing about anyone), and 401 everywhere else', async () => {
    // A uid no account has (setpriv takes numbers): the kernel vouches for it, the passwd database knows no name for it.
    let uid = 61_000;
    while (spawnSync('getent', ['passwd', String(uid)]).status === 0) uid++;
    const script = `
      const http = require('http');
      const call = (method, path, body) => new Promise((ok, fail) => {
        const text = body === undefined ? '' : JSON.stringify(body);
        const req = http.request({ socketPath: ${JSON.stringify(controller.socketPath)}, method, path,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) } },
          (res) => { let s = ''; res.on('data', (c) => s += c); res.on('end', () => ok({ status: res.statusCode, body: JSON.parse(s || '{}') })); });
        req.on('error', fail); req.end(text);
      });
      (async () => {
        const status = await call('GET', '/status');
        const jobs = await call('GET', '/jobs');
        const submit = await call('POST', '/jobs', { spec: ${JSON.stringify(spec('/tmp'))} });
        console.log(JSON.stringify({ status: status.status, socket: status.body.socket, jobs: jobs.status, submit: submit.status, error: submit.body.error }));
      })();`;
    // Asynchronously: the controller answering it runs in this process.
    const child = spawn('setpriv', ['--reuid', String(uid), '--regid', String(uid), '--clear-groups', process.execPath, '-e', script],
      { cwd: '/', env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    const code = await new Promise((resolveExit) => child.on('close', resolveExit));
    clearTimeout(timer);
    assert.equal(code, 0, stderr);
    const seen = JSON.parse(stdout);
    assert.deepEqual({ ...seen, error: undefined }, { status: 200, socket: controller.socketPath, jobs: 401, submit: 401, error: undefined });
    assert.equal(seen.error, `uid ${uid} has no passwd entry on the controller's machine`);
  });

  it('a valid bearer token over TCP is its user; expired, tampered, wrong-key, alg none and sun-less tokens are refused with 401', async () => {
    const key = loadOrCreateJwtKey(config.jwtKeyPath);
    const good = await tokenFor(config, bob.name);
    const asBob = await raw(tcp, 'POST', '/jobs', { authorization: `Bearer ${good}`, ...FORGED_ROOT }, { spec: spec(work) });
    assert.equal(asBob.status, 201, asBob.body.error);
    assert.equal(controller.engine().active.get(asBob.body.id as never)?.user, bob.name, 'the token\'s user, not the header\'s');

    const [head, payload, signature] = good.split('.');
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const bad: [string, string, RegExp][] = [
      ['expired', (await issueToken(key, bob.name, 60, Date.now() - 3_600_000)).token, /has expired/],
      ['tampered', `${head}.${b64url({ ...claims, sun: 'root' })}.${signature}`, /signature does not match/],
      ['wrong key', (await issueToken(new Uint8Array(32).fill(7), 'root', 600, Date.now())).token, /signature does not match/],
      ['alg none', `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url({ ...claims, sun: 'root' })}.`, /not signed with HS256|not a valid JWT/],
      ['no sun', await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime('1h').sign(key), /claims are not valid|names no user/],
      ['unknown user', (await issueToken(key, 'ttnosuchuser00', 600, Date.now())).token, /has no account/],
      // Signed with the key, yet not as Taras issues them (red team): a NUL in the user was a 500; no span was checked.
      ['a NUL in the user', await new SignJWT({ sun: `${bob.name}\u0000` }).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime('1h').sign(key), /is not a user name/],
      ['valid for ten years', await new SignJWT({ sun: bob.name }).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime('3650d').sign(key), /valid for more than 365 days/],
      ['issued tomorrow', await new SignJWT({ sun: bob.name }).setProtectedHeader({ alg: 'HS256' }).setIssuedAt(Math.floor(Date.now() / 1000) + 86_400).setExpirationTime('2d').sign(key), /issued in the future/],
      ['not bearer', '', /not "Bearer TOKEN"/],
    ];
    for (const [what, token, reason] of bad) {
      const answer = await raw(tcp, 'GET', '/jobs', { authorization: what === 'not bearer' ? 'Basic cm9vdDpyb290' : `Bearer ${token}` });
      assert.equal(answer.status, 401, what);
      assert.match(answer.body.error ?? '', reason, what);
    }
  });

  it('a MUNGE credential that does not verify is refused with 401, never taken as anonymous', async () => {
    const answer = await raw(tcp, 'GET', '/jobs', { 'x-taras-munge': 'MUNGE:AwQFAAC...:', ...FORGED_ROOT });
    assert.equal(answer.status, 401);
    assert.match(answer.body.error ?? '', /MUNGE credential refused/);
  });

  it('taras admin token gives a user a token for themselves that then works over TCP, and refuses one for another user', async () => {
    const cli = (args: string[], env: Record<string, string> = {}) => runAs(bob, [join(root, 'bin/taras.js'), ...args], { env });
    const issued = await cli(['admin', 'token', '--lifespan', '2h', '--controller', `unix:${controller.socketPath}`]);
    assert.equal(issued.status, 0, issued.stderr);
    const token = issued.stdout.trim();
    assert.match(token, /^[\w-]+\.[\w-]+\.[\w-]+$/);
    assert.match(issued.stderr, /TARAS_TOKEN/);
    // Its end in local time, as every time the CLI prints: "Fri 27 Nov 2026 06:40".
    assert.match(issued.stderr, new RegExp(`^Token for ${bob.name}, valid until [A-Z][a-z]{2} \\d{1,2} [A-Z][a-z]{2} \\d{4} \\d\\d:\\d\\d\\. Use it with\n`));
    const claims = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString());
    assert.equal(claims.sun, bob.name);
    assert.equal(claims.exp - claims.iat, 7200);
    // A user who cannot reach the socket (its folder closed to them) goes over TCP with the token: from TARAS_TOKEN, then from the token file.
    chmodSync(config.dataDir, 0o700);
    try {
      const anonymous = await cli(['queue', '--controller', controller.url]);
      assert.equal(anonymous.status, 1);
      assert.match(anonymous.stderr, /no verified identity.*taras admin token/);
      const withToken = await cli(['queue', '--json', '--controller', controller.url.replace('http://', '')], { TARAS_TOKEN: token });
      assert.equal(withToken.status, 0, withToken.stderr);
      assert.ok(Array.isArray(JSON.parse(withToken.stdout)));
      const setup = [
        "const fs = require('fs');",
        "fs.mkdirSync(process.env.HOME + '/.config/taras', { recursive: true });",
        `fs.writeFileSync(process.env.HOME + '/.config/taras/token', ${JSON.stringify(`${token}\n`)}, { mode: 0o600 });`,
        `fs.writeFileSync('job.sh', ${JSON.stringify('#!/bin/sh\n#TARAS --time 1\ntrue\n')});`,
      ].join(' ');
      const saved = await runAs(bob, ['-e', setup]);
      assert.equal(saved.status, 0, saved.stderr);
      const fromFile = await cli(['submit', '--json', '--controller', controller.url, 'job.sh']);
      assert.equal(fromFile.status, 0, fromFile.stderr);
      assert.equal(controller.engine().active.get(JSON.parse(fromFile.stdout).id)?.user, bob.name);
    } finally {
      chmodSync(config.dataDir, 0o711);
    }
    const forRoot = await cli(['admin', 'token', '--user', 'root', '--controller', `unix:${controller.socketPath}`]);
    assert.equal(forRoot.status, 1);
    assert.match(forRoot.stderr, /only administrators may issue tokens for other users/);
  });
});

describe('the authenticator', () => {
  const key = new Uint8Array(32).fill(3);
  const fakeRequest = (headers: Record<string, string>) => ({ headers, method: 'GET', socket: {} as Socket }) as unknown as IncomingMessage;

  it('remembers a verified token until it expires, then refuses it', async () => {
    let now = Date.now();
    const authenticator = createAuthenticator({ jwtKey: key, clock: () => now });
    const { token } = await issueToken(key, 'root', 60, now);
    const request = fakeRequest({ authorization: `Bearer ${token}` });
    const first = await authenticator.identify(request, 'tcp', '/jobs', new Uint8Array());
    assert.deepEqual(first, { ok: true, caller: { user: 'root', uid: 0, gid: 0, via: 'token' } });
    const second = authenticator.identify(request, 'tcp', '/jobs', new Uint8Array());
    assert.ok(!(second instanceof Promise), 'a remembered token is checked without waiting');
    now += 61_000;
    const late = await authenticator.identify(request, 'tcp', '/jobs', new Uint8Array());
    assert.equal(late.ok, false);
    assert.match((late as { reason: string }).reason, /has expired/);
  });

  it('without a token key every token is refused, and a request with no credentials is anonymous', async () => {
    const authenticator = createAuthenticator({});
    const { token } = await issueToken(key, 'root', 60, Date.now());
    const refused = await authenticator.identify(fakeRequest({ authorization: `Bearer ${token}` }), 'tcp', '/', new Uint8Array());
    assert.equal(refused.ok, false);
    assert.deepEqual(await authenticator.identify(fakeRequest(FORGED_ROOT), 'tcp', '/', new Uint8Array()), { ok: true, caller: null });
  });

  it('refuses a token key file that others may read', () => {
    const path = join(work, 'open.key');
    writeFileSync(path, Buffer.alloc(32, 1).toString('base64'), { mode: 0o644 });
    chmodSync(path, 0o644);
    assert.throws(() => loadOrCreateJwtKey(path), /readable by others .*chmod 600/);
  });
});

describe('MUNGE over TCP against a real munged', { skip: notRootReason || mungeSkipReason }, () => {
  let munged: RunningMunged;
  let controller: RunningController;
  let config: ClusterConfig;
  let carl: TestUser;

  before(async () => {
    munged = await startMunged();
    carl = createTestUser('carl');
    const dir = join(work, 'munge');
    mkdirSync(dir, { mode: 0o711 });
    const file = join(dir, 'cluster.toml');
    writeFileSync(file, `[cluster]\nname = "munge"\ndata_dir = "data"\nmunge_socket = "${munged.socket}"\n[[nodes]]\nnames = "n1"\ncpus = 2\nmemory = "1G"\n[[partitions]]\nname = "batch"\nnodes = "ALL"\n`);
    const parsed = await readClusterConfig(file);
    assert.ok(parsed.ok);
    config = parsed.config;
    controller = await startController({ config, configPath: file, clusterKey: null, port: 0, log: () => {} });
    // carl cannot reach the socket: the CLI has to prove who he is over TCP.
    chmodSync(config.dataDir, 0o700);
  });

  after(async () => {
    await controller?.close();
    await munged?.stop();
  });

  it('the CLI of a user who cannot reach the socket submits with a MUNGE credential; the job is theirs', async () => {
    await runAs(carl, ['-e', `require('fs').writeFileSync('job.sh', ${JSON.stringify('#!/bin/sh\n#TARAS --time 1\ntrue\n')})`]);
    const run = await runAs(carl, [join(root, 'bin/taras.js'), 'submit', '--json', '--controller', controller.url, 'job.sh'], { env: { TARAS_MUNGE_SOCKET: munged.socket } });
    assert.equal(run.status, 0, run.stderr);
    assert.equal(controller.engine().active.get(JSON.parse(run.stdout).id)?.user, carl.name);
  });

  it('with munged unusable and no token, the CLI says so in one line (no stack trace)', async () => {
    const notASocket = join(tmpdir(), `taras-not-munge-${randomBytes(4).toString('hex')}`);
    writeFileSync(notASocket, '', { mode: 0o644 });
    try {
      const run = await runAs(carl, [join(root, 'bin/taras.js'), 'queue', '--controller', controller.url], { env: { TARAS_MUNGE_SOCKET: notASocket } });
      assert.equal(run.status, 1, run.stderr);
      assert.match(run.stderr, /^error: .*munge/i);
      assert.equal(run.stderr.trimEnd().split('\n').length, 1, run.stderr);
      assert.doesNotMatch(run.stderr, /\n\s+at /);
    } finally {
      rmSync(notASocket, { force: true });
    }
  });

  it('a credential is good once, for its own request, restricted to the controller\'s uid', async () => {
    const credential = (payload: string, restrict = String(process.getuid?.())) =>
      spawnSync('munge', [`--socket=${munged.socket}`, `--restrict-uid=${restrict}`], { input: payload, encoding: 'utf8' }).stdout.trim();
    const forList = credential(requestPayload('GET', '/jobs', new Uint8Array()));
    assert.equal((await raw(tcp(), 'GET', '/jobs', { 'x-taras-munge': forList })).status, 200);
    const replayed = await raw(tcp(), 'GET', '/jobs', { 'x-taras-munge': forList });
    assert.equal(replayed.status, 401);
    assert.match(replayed.body.error ?? '', /MUNGE credential refused: .*replayed/);
    const other = await raw(tcp(), 'POST', '/admin/shutdown', { 'x-taras-munge': credential(requestPayload('GET', '/jobs', new Uint8Array())) }, {});
    assert.equal(other.status, 401, 'a credential made for GET /jobs does not shut the controller down');
    const unrestricted = await raw(tcp(), 'GET', '/jobs', { 'x-taras-munge': credential(requestPayload('GET', '/jobs', new Uint8Array()), '4242') });
    assert.equal(unrestricted.status, 401);
  });

  const tcp = () => ({ url: controller.url });
});
