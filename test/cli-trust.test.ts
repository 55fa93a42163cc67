// Whom the CLI takes for the controller on its own machine (red team, issue
// 9): a socket another user planted at ./taras-data/taras.sock in a shared
// folder, or another user's process listening on the controller's TCP port,
// gets nothing from it: no script, no environment, no token. Real users, real
// listeners (each run as the planting user), the real CLI.

import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, chownSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runAs } from './auth-helpers.js';
import { eventually } from './poll.js';
import { createTestUser, notRootReason, removeTestUsers } from './unix-users.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const taras = join(root, 'bin/taras.js');
const shared = mkdtempSync(join(tmpdir(), 'taras-trust-'));
chmodSync(shared, 0o1777);
const started: ChildProcess[] = [];
after(() => {
  for (const child of started) child.kill('SIGKILL');
  rmSync(shared, { recursive: true, force: true });
  removeTestUsers();
});

/** A listener run as `user` that writes every request it gets (headers and body) to `log`, and answers GET /status. */
function plant(user: { name: string }, where: string, log: string): ChildProcess {
  const program = `
    const http = require('http'); const fs = require('fs');
    const server = http.createServer((req, res) => {
      let body = ''; req.on('data', (c) => (body += c));
      req.on('end', () => {
        fs.appendFileSync(${JSON.stringify(log)}, JSON.stringify({ url: req.url, headers: req.headers, body }) + '\\n');
        res.setHeader('content-type', 'application/json');
        res.end(req.url === '/status' ? JSON.stringify({ up: true, uid: process.getuid() }) : JSON.stringify({ id: 4242 }));
      });
    });
    const where = ${JSON.stringify(where)};
    server.listen(/^\\d+$/.test(where) ? { host: '127.0.0.1', port: Number(where) } : where, () => fs.writeFileSync(${JSON.stringify(`${log}.ready`)}, String(server.address().port ?? where)));
  `;
  const child = spawn('setpriv', ['--reuid', user.name, '--regid', user.name, '--init-groups', process.execPath, '-e', program], { stdio: 'ignore' });
  started.push(child);
  return child;
}

const readyAt = async (log: string): Promise<string> => eventually(`${log}.ready`, () => {
  try {
    return readFileSync(`${log}.ready`, 'utf8') || undefined;
  } catch {
    return undefined;
  }
}, 10_000);

describe('the CLI trusts only root\'s or its own user\'s controller on this machine', { skip: notRootReason }, () => {
  it('a taras.sock planted by another user in a shared folder is not used: the submission and its environment do not reach it', async () => {
    const victim = createTestUser('vict');
    const planter = createTestUser('plant');
    const folder = join(shared, 'taras-data');
    mkdirSync(folder, { mode: 0o777 });
    chmodSync(folder, 0o777);
    const log = join(shared, 'socket.log');
    writeFileSync(log, '');
    chmodSync(log, 0o666);
    plant(planter, join(folder, 'taras.sock'), log);
    await readyAt(log);
    writeFileSync(join(shared, 'job.sh'), '#!/bin/sh\necho hi\n');
    chownSync(join(shared, 'job.sh'), victim.uid, victim.gid);
    const run = await runAs(victim, [taras, 'submit', '-t', '1', 'job.sh'], { cwd: shared, env: { SECRET_KEY: 'topsecret123', TARAS_RETRY_SECONDS: '0' } });
    assert.equal(run.status, 1, run.stdout + run.stderr);
    assert.doesNotMatch(run.stdout, /4242/);
    assert.match(run.stderr, /controller not reachable at http:\/\/127\.0\.0\.1:6817/);
    assert.equal(readFileSync(log, 'utf8'), '', 'nothing reached the planted socket');
  });

  it('a socket whose file passes the owner check but another user listens on (the file swapped between the check and the connect) gets nothing: the CLI asks the kernel who listens before it sends', async () => {
    const victim = createTestUser('vict');
    const planter = createTestUser('plant');
    const place = join(shared, 'race');
    mkdirSync(join(place, 'taras-data'), { recursive: true, mode: 0o777 });
    chmodSync(place, 0o777);
    chmodSync(join(place, 'taras-data'), 0o777);
    const socket = join(place, 'taras-data', 'taras.sock');
    const log = join(shared, 'race.log');
    writeFileSync(log, '');
    chmodSync(log, 0o666);
    plant(planter, socket, log);
    await readyAt(log);
    // The race, made certain: the CLI stats the path, then connects to it. Had the planter renamed its socket
    // over a root-owned one in between, the stat would have seen root's file and the connect reached the
    // planter's listener. Here the planter's socket file itself is made root's (root may chown it; the listener
    // stays the planter's process): the stat sees root, the connect reaches the planter, exactly as after the
    // swap. Only the listener's own credentials, read from the connected socket (SO_PEERCRED), tell them apart.
    chmodSync(socket, 0o666); // open to everyone, as a controller's socket is
    chownSync(socket, 0, 0);
    writeFileSync(join(place, 'job.sh'), '#!/bin/sh\necho hi\n');
    chownSync(join(place, 'job.sh'), victim.uid, victim.gid);
    const run = await runAs(victim, [taras, 'submit', '-t', '1', 'job.sh'], { cwd: place, env: { SECRET_KEY: 'topsecret123', TARAS_RETRY_SECONDS: '0' } });
    assert.equal(run.status, 1, run.stdout + run.stderr);
    assert.doesNotMatch(run.stdout, /4242/);
    assert.equal(run.stderr, `error: the process listening on the socket ${socket} runs as uid ${planter.uid}, not as root or you (the socket file belongs to uid 0: `
      + 'it was replaced after it was checked, or is not the one that process listens on): it is not taken for the controller, and nothing was sent to it '
      + '(if the controller runs as that user, set TARAS_CONTROLLER_UID to its uid; else tell your administrator, and give the controller\'s address with --controller)\n');
    assert.equal(readFileSync(log, 'utf8'), '', 'nothing reached the listener: not the script, not the environment');
    // The same socket named with --controller (or TARAS_CONTROLLER): checked the same way, nothing sent.
    for (const named of [['--controller', `unix:${socket}`], []]) {
      const explicit = await runAs(victim, [taras, 'submit', ...named, '-t', '1', 'job.sh'], { cwd: shared, env: { SECRET_KEY: 'topsecret123', TARAS_RETRY_SECONDS: '0', ...(named.length === 0 ? { TARAS_CONTROLLER: `unix:${socket}` } : {}) } });
      assert.equal(explicit.status, 1, explicit.stdout + explicit.stderr);
      assert.match(explicit.stderr, new RegExp(`^error: the process listening on the socket ${socket} runs as uid ${planter.uid}, not as root or you: it is not taken for the controller, and nothing was sent to it`));
    }
    assert.equal(readFileSync(log, 'utf8'), '', 'nothing reached the listener through an address named either');
    // Its own listener at such a socket is the victim's controller (its own `npm start`): the request goes.
    const own = join(shared, 'own');
    mkdirSync(join(own, 'taras-data'), { recursive: true, mode: 0o777 });
    chmodSync(own, 0o777);
    chmodSync(join(own, 'taras-data'), 0o777);
    const ownLog = join(shared, 'own.log');
    writeFileSync(ownLog, '');
    chmodSync(ownLog, 0o666);
    plant(victim, join(own, 'taras-data', 'taras.sock'), ownLog);
    await readyAt(ownLog);
    chmodSync(join(own, 'taras-data', 'taras.sock'), 0o666);
    writeFileSync(join(own, 'job.sh'), '#!/bin/sh\necho hi\n');
    chownSync(join(own, 'job.sh'), victim.uid, victim.gid);
    const trusted = await runAs(victim, [taras, 'submit', '-t', '1', 'job.sh'], { cwd: own, env: { TARAS_RETRY_SECONDS: '0' } });
    assert.match(trusted.stdout, /4242/, trusted.stderr);
    assert.match(readFileSync(ownLog, 'utf8'), /"url":"\/jobs"/);
  });

  it('another user listening on the controller\'s port gets no request, so no token: the CLI says who listens', async () => {
    const victim = createTestUser('vict');
    const squatter = createTestUser('squat');
    const log = join(shared, 'port.log');
    writeFileSync(log, '');
    chmodSync(log, 0o666);
    plant(squatter, '0', log);
    const port = await readyAt(log);
    const run = await runAs(victim, [taras, 'queue', '--controller', `127.0.0.1:${port}`], { env: { TARAS_TOKEN: 'eyJ.victims.token' } });
    assert.equal(run.status, 1);
    assert.equal(run.stderr, `error: the process listening on 127.0.0.1:${port} runs as uid ${squatter.uid}, not as root or you: it is not taken for the controller, `
      + 'and nothing is sent to it (if the controller runs as that user, set TARAS_CONTROLLER_UID to its uid)\n');
    assert.equal(readFileSync(log, 'utf8'), '', 'not even GET /status');
    // Other ways of writing this machine are this machine too (review: 0.0.0.0, 127.1, LOCALHOST passed).
    for (const host of ['0.0.0.0', '127.1', 'LOCALHOST']) {
      const other = await runAs(victim, [taras, 'queue', '--controller', `http://${host}:${port}`], { env: { TARAS_TOKEN: 'eyJ.victims.token' } });
      assert.equal(other.status, 1, host);
      assert.match(other.stderr, new RegExp(`runs as uid ${squatter.uid}, not as root or you`), host);
    }
    assert.equal(readFileSync(log, 'utf8'), '', 'nothing reached the squatter');
    // Told that this user runs the controller, the CLI talks to it.
    const trusting = await runAs(victim, [taras, 'queue', '--controller', `127.0.0.1:${port}`, '--json'], { env: { TARAS_TOKEN: 'eyJ.victims.token', TARAS_CONTROLLER_UID: String(squatter.uid) } });
    assert.match(readFileSync(log, 'utf8'), /"url":"\/status"/, trusting.stderr);
  });
});
