// MUNGE credentials (src/net/munge.ts) against a real munged started by the
// test (test/munged.ts): a credential proves its maker's uid, binds one
// request, is restricted to the verifier's uid, and is refused once used,
// expired, altered, or when munged is down. Skips when not root or MUNGE is
// missing (scripts/test-deps.sh installs it in CI).

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { MungeError, mungeEncode, mungeVerify, requestPayload, type MungeVerification } from '../src/net/munge.js';
import { mungeSkipReason, startMunged, type RunningMunged } from './munged.js';
import { createTestUser, notRootReason, removeTestUsers, type TestUser } from './unix-users.js';

const body = (text: string) => Buffer.from(text, 'utf8');
const refusal = (verdict: MungeVerification) => {
  assert.equal(verdict.ok, false, `expected a refusal, got ${JSON.stringify(verdict)}`);
  return verdict as Extract<MungeVerification, { ok: false }>;
};

describe('the request payload', () => {
  it('is the hex sha256 of METHOD, PATH?QUERY and the hex sha256 of the body', () => {
    const sha = (text: string) => createHash('sha256').update(text).digest('hex');
    assert.equal(requestPayload('post', '/jobs?x=1', body('{"a":1}')), sha(`POST\n/jobs?x=1\n${sha('{"a":1}')}`));
  });

  it('changes with the method, the path, the query and the body', () => {
    const base = requestPayload('POST', '/jobs', body('{}'));
    assert.notEqual(requestPayload('PUT', '/jobs', body('{}')), base);
    assert.notEqual(requestPayload('POST', '/jobs/1', body('{}')), base);
    assert.notEqual(requestPayload('POST', '/jobs?user=root', body('{}')), base);
    assert.notEqual(requestPayload('POST', '/jobs', body('{ }')), base);
  });
});

describe('checking credentials costs a process each', () => {
  it('at most 8 unmunge run at once and 256 wait, 32 of one sender; more credentials at the same moment are refused at once (red team: anyone may send them)', async () => {
    const payload = requestPayload('GET', '/jobs', body(''));
    // Ten senders of 40 each, interleaved: 8 run, 256 wait (25 or 26 of each sender), the rest are turned away.
    const answers = await Promise.all(Array.from({ length: 400 }, (_, i) =>
      mungeVerify('MUNGE:AwQFAAAAbm90IGEgY3JlZGVudGlhbA==:', payload, { socket: join(tmpdir(), 'taras-no-munged.sock'), source: `10.0.0.${i % 10}` })));
    const turnedAway = answers.filter((answer) => !answer.ok && answer.reason === 'too many MUNGE credentials are being checked (8 at a time, 256 waiting)');
    assert.equal(turnedAway.length, 400 - 8 - 256);
    assert.ok(answers.every((answer) => !answer.ok), 'none verifies');
    // Once they are done, a new one is checked again.
    const later = await mungeVerify('MUNGE:AwQFAAAAbm90IGEgY3JlZGVudGlhbA==:', payload, { socket: join(tmpdir(), 'taras-no-munged.sock') });
    assert.ok(!later.ok && !/too many/.test(later.reason), later.ok ? '' : later.reason);
  });

  it('a sender\'s flood takes turns with the others: another sender waits for one of its credentials at a time, not for the whole flood', async () => {
    const payload = requestPayload('GET', '/jobs', body(''));
    const served: string[] = [];
    const check = (source: string) => mungeVerify('MUNGE:AwQFAAAAbm90IGEgY3JlZGVudGlhbA==:', payload, { socket: join(tmpdir(), 'taras-no-munged.sock'), source })
      .then((answer) => {
        if (answer.ok || !/too many/.test(answer.reason)) served.push(source);
        return answer;
      });
    const flood = Array.from({ length: 100 }, () => check('10.0.0.66'));
    const other = check('10.0.0.7');
    const answers = await Promise.all([...flood, other]);
    assert.equal(answers.filter((answer) => !answer.ok && answer.reason === 'too many MUNGE credentials from 10.0.0.66 are being checked (32 waiting)').length, 100 - 8 - 32);
    assert.equal(served.length, 8 + 32 + 1);
    // In a single line it would be checked last (41st); in turns, right after the flood's first waiting one.
    assert.ok(served.indexOf('10.0.0.7') < 8 + 2 + 8, `served ${served.indexOf('10.0.0.7') + 1}th`);
  });
});

describe('MUNGE credentials against a real munged', { skip: mungeSkipReason }, () => {
  let munged: RunningMunged;
  let user: TestUser;
  const uid = process.getuid!();
  const payload = requestPayload('POST', '/jobs', body('{"spec":{}}'));
  const encode = (p = payload, opts: { restrictUid?: number; ttlSeconds?: number } = { restrictUid: uid }) =>
    mungeEncode(p, { socket: munged.socket, ...opts });

  before(async () => {
    munged = await startMunged();
    user = createTestUser('munge');
  });
  after(async () => {
    await munged?.stop();
    removeTestUsers();
  });

  it("a fresh credential restricted to the controller's uid verifies to its maker's uid and gid", async () => {
    const credential = await encode();
    assert.match(credential, /^MUNGE:[A-Za-z0-9+/=]+:$/);
    assert.deepEqual(await mungeVerify(credential, payload, { socket: munged.socket }), { ok: true, uid, gid: process.getgid!() });
  });

  it('a credential made by another Unix user verifies to that user, not to the verifier', async () => {
    const made = spawnSync('runuser', ['-u', user.name, '--', 'munge', `--socket=${munged.socket}`, `--restrict-uid=${uid}`],
      { input: payload, encoding: 'utf8', env: { PATH: '/usr/bin:/bin:/usr/sbin:/sbin' } });
    assert.equal(made.status, 0, made.stderr);
    assert.deepEqual(await mungeVerify(made.stdout.trim(), payload, { socket: munged.socket }), { ok: true, uid: user.uid, gid: user.gid });
  });

  it('a credential used once is refused the second time (replay)', async () => {
    const credential = await encode();
    assert.equal((await mungeVerify(credential, payload, { socket: munged.socket })).ok, true);
    const refused = refusal(await mungeVerify(credential, payload, { socket: munged.socket }));
    assert.match(refused.reason, /^MUNGE credential replayed \(made at \d{4}-\d\d-\d\dT.* and already used\)$/);
    assert.match(refused.fix, /new credential with every request/);
  });

  it('a credential made for one body is refused for another (altered request)', async () => {
    const credential = await encode();
    const altered = requestPayload('POST', '/jobs', body('{"spec":{"user":"root"}}'));
    const refused = refusal(await mungeVerify(credential, altered, { socket: munged.socket }));
    assert.match(refused.reason, /made for another request/);
  });

  it('a credential restricted to another uid is refused', async () => {
    const credential = await encode(payload, { restrictUid: user.uid });
    const refused = refusal(await mungeVerify(credential, payload, { socket: munged.socket }));
    assert.match(refused.reason, new RegExp(`restricted to another user, not to the controller's uid ${uid}`));
    assert.equal(refused.fix, `make it for the controller: \`munge --restrict-uid=${uid}\``);
  });

  it('a credential restricted to no uid is refused (any local user could have used it first)', async () => {
    const credential = await encode(payload, {});
    const refused = refusal(await mungeVerify(credential, payload, { socket: munged.socket }));
    assert.match(refused.reason, /not restricted to the controller's uid/);
  });

  it('an expired credential is refused (time to live 1 s, used after 2 s)', async () => {
    const credential = await encode(payload, { restrictUid: uid, ttlSeconds: 1 });
    await new Promise((resolve) => setTimeout(resolve, 2200));
    const refused = refusal(await mungeVerify(credential, payload, { socket: munged.socket }));
    assert.match(refused.reason, /^MUNGE credential expired \(made at .*, time to live 1 s\)$/);
  });

  it('a credential made with another MUNGE key is refused as not valid here', async () => {
    const other = await startMunged();
    try {
      const credential = await mungeEncode(payload, { socket: other.socket, restrictUid: uid });
      const refused = refusal(await mungeVerify(credential, payload, { socket: munged.socket }));
      assert.match(refused.reason, /^MUNGE credential is not valid here/);
      assert.match(refused.fix, /same MUNGE key/);
    } finally {
      await other.stop();
    }
  });

  it('a header that is not a credential is refused without asking munged', async () => {
    const refused = refusal(await mungeVerify('root', payload, { socket: '/nonexistent/socket' }));
    assert.equal(refused.reason, 'the x-taras-munge header is not a MUNGE credential');
  });

  it('with munged down, encoding throws and verifying refuses, both saying munged is not running and how to start it', async () => {
    const stopped = await startMunged();
    const credential = await mungeEncode(payload, { socket: stopped.socket, restrictUid: uid });
    await stopped.stop();
    const refused = refusal(await mungeVerify(credential, payload, { socket: stopped.socket }));
    assert.match(refused.reason, new RegExp(`^cannot check the MUNGE credential: munged is not running or not reachable at ${stopped.socket} `));
    assert.match(refused.fix, /start munged with --socket=/);
    await assert.rejects(mungeEncode(payload, { socket: stopped.socket }),
      (error: MungeError) => error instanceof MungeError && /munged is not running/.test(error.message) && /munge_socket/.test(error.fix));
  });
});

describe('scripts/test-deps.sh (npm test\'s pretest)', { skip: notRootReason }, () => {
  const script = resolve(dirname(fileURLToPath(import.meta.url)), '../../scripts/test-deps.sh');

  it('as a user who cannot install MUNGE and msmtp, says the tests that need them will be skipped and why, and exits 0', () => {
    // A PATH with the shell's basic tools but no munge.
    const bin = mkdtempSync(join(tmpdir(), 'taras-nomunge-'));
    chmodSync(bin, 0o755);
    for (const tool of ['id', 'sh']) symlinkSync(`/usr/bin/${tool}`, join(bin, tool));
    try {
      const run = spawnSync('runuser', ['-u', 'nobody', '--', '/usr/bin/env', `PATH=${bin}`, 'sh', script], { encoding: 'utf8', input: '' });
      assert.equal(run.status, 0, run.stderr);
      assert.equal(run.stdout, 'test-deps: not installed: munge msmtp; this is not root, so the tests that need them will be skipped (install them with: sudo apt-get install munge msmtp)\n');
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  });
});
