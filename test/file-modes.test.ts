// Who may read what Taras keeps on the disk, after a real `taras up` ran a
// job of a throwaway Unix user: the data folder 0711 (it holds the socket:
// reachable, not listable), taras.db and its -wal/-shm 0600, cluster.key
// 0600, the socket 0666, the agent's folders 0711, a job directory 0700
// owned by root, the job's script and node file (its user's) beside it in a
// folder of root's that the job's group may only pass through. A data folder left open by an
// older Taras is tightened at the next start, with a log line. Skips when not
// root (throwaway users need it).

import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { makeFolder, unreachableFolderOf } from '../src/net/private-files.js';
import { createTestUser, notRootReason, removeTestUsers, type TestUser } from './unix-users.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const modeOf = (path: string) => (statSync(path).mode & 0o7777).toString(8).padStart(4, '0');
const sleep = (ms: number) => new Promise((resolvePromise) => setTimeout(resolvePromise, ms));

/** `taras up` on a data folder; resolves once it printed that it is up, with everything it logged so far and later. */
async function up(data: string): Promise<{ child: ChildProcess; logged: () => string }> {
  const child = spawn(process.execPath, [join(root, 'bin/taras.js'), 'up', '--port', '0', '--virtual', '2x2', '--data', data], {
    stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, TARAS_JOB_ID: '' },
  });
  let text = '';
  child.stdout!.on('data', (chunk: Buffer) => (text += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (text += chunk.toString()));
  for (let i = 0; i < 200 && !/Ctrl-C stops/.test(text); i++) {
    if (child.exitCode !== null) break;
    await sleep(100);
  }
  assert.match(text, /Ctrl-C stops/, `taras up did not start:\n${text}`);
  return { child, logged: () => text };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolvePromise) => child.once('exit', resolvePromise));
  child.kill('SIGINT');
  await Promise.race([exited, sleep(10_000)]);
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

/** Runs `taras ARGS` as `user` in their home, through the controller's socket. */
function tarasAs(user: TestUser, args: string[]) {
  return spawnSync('runuser', ['-u', user.name, '--', process.execPath, join(root, 'bin/taras.js'), ...args], {
    cwd: user.home, encoding: 'utf8', input: '', timeout: 30_000,
    env: { PATH: process.env.PATH, HOME: user.home, TARAS_JOB_ID: '' },
  });
}

describe('modes of the files Taras keeps', { skip: notRootReason }, () => {
  const work = mkdtempSync(join(tmpdir(), 'taras-modes-'));
  const data = join(work, 'data');
  const started: ChildProcess[] = [];
  let user: TestUser;
  before(() => {
    chmodSync(work, 0o755); // the job's user must pass through it
    user = createTestUser('modes');
  });
  after(async () => {
    for (const child of started) await stop(child);
    removeTestUsers();
    rmSync(work, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  });

  it('after taras up ran a job of another user, every file and folder has its private mode and the job still ran', async () => {
    const previousUmask = process.umask(0o000); // the modes must not depend on the umask of whoever starts Taras
    let running;
    try {
      running = await up(data);
    } finally {
      process.umask(previousUmask);
    }
    started.push(running.child);
    writeFileSync(join(user.home, 'job.sh'), '#!/bin/sh\necho ran as $(id -un)\n', { mode: 0o755 });
    spawnSync('chown', [`${user.name}:`, join(user.home, 'job.sh')]);
    const socket = join(data, 'taras.sock');
    const submitted = tarasAs(user, ['submit', '--controller', socket, '-t', '1', '-o', 'out.txt', 'job.sh']);
    assert.equal(submitted.status, 0, submitted.stderr);
    const waited = tarasAs(user, ['wait', '--controller', socket, '1']);
    assert.equal(waited.status, 0, `${waited.stdout}${waited.stderr}\n${running.logged()}`);
    assert.equal(readFileSync(join(user.home, 'out.txt'), 'utf8'), `ran as ${user.name}\n`);

    assert.equal(modeOf(data), '0711');
    for (const file of ['taras.db', 'taras.db-wal', 'taras.db-shm', 'cluster.key', 'controller.lock']) assert.equal(modeOf(join(data, file)), '0600', file);
    // Every other file there too (the lock's journal: 0644 before, red team), but the pid file, which says only who runs.
    const loose = readdirSync(data).filter((name) => statSync(join(data, name)).isFile() && name !== 'controller.pid' && (statSync(join(data, name)).mode & 0o077) !== 0);
    assert.deepEqual(loose, []);
    assert.equal(modeOf(socket), '0666');
    assert.equal(modeOf(join(data, 'agent')), '0711');
    assert.equal(modeOf(join(data, 'agent', 'jobs')), '0711');
    const jobDirs = readdirSync(join(data, 'agent', 'jobs'));
    assert.deepEqual(jobDirs.sort(), ['1.0', '1.0.files']);
    const jobDir = statSync(join(data, 'agent', 'jobs', '1.0'));
    assert.deepEqual({ mode: modeOf(join(data, 'agent', 'jobs', '1.0')), uid: jobDir.uid, gid: jobDir.gid }, { mode: '0700', uid: 0, gid: 0 });
    assert.equal(modeOf(join(data, 'agent', 'jobs', '1.0', 'spec.json')), '0600');
    // The job's script and node file: its user's, in a folder of root's that their group may only pass through.
    const filesDir = statSync(join(data, 'agent', 'jobs', '1.0.files'));
    assert.deepEqual({ mode: modeOf(join(data, 'agent', 'jobs', '1.0.files')), uid: filesDir.uid, gid: filesDir.gid }, { mode: '0710', uid: 0, gid: user.gid });
    assert.deepEqual(['script', 'nodefile'].map((file) => modeOf(join(data, 'agent', 'jobs', '1.0.files', file))), ['0700', '0600']);
    // The other users of the machine: nothing in the data folder can be listed or read.
    const other = spawnSync('runuser', ['-u', 'nobody', '--', 'sh', '-c', `ls ${data}; cat ${data}/taras.db; ls ${data}/agent/jobs; ls ${data}/agent/jobs/1.0; ls ${data}/agent/jobs/1.0.files`], { encoding: 'utf8' });
    assert.equal(other.stdout, '');
    assert.equal(other.stderr.match(/Permission denied/g)?.length, 5, other.stderr);

    // Another user cannot read the job's output or its script: output follows the submitter's umask (077 here,
    // in a folder everyone may write), the script is the job user's 0700 file in a folder only their group may pass through.
    const shared = join(work, 'shared');
    mkdirSync(shared);
    chmodSync(shared, 0o1777);
    const privateRun = spawnSync('runuser', ['-u', user.name, '--', 'sh', '-c',
      `umask 077; exec "${process.execPath}" "${join(root, 'bin/taras.js')}" submit --controller ${socket} -t 1 -o ${shared}/out2.txt job.sh`], { cwd: user.home, encoding: 'utf8', input: '', timeout: 30_000, env: { PATH: process.env.PATH, HOME: user.home } });
    assert.equal(privateRun.status, 0, privateRun.stderr);
    const waitedPrivate = tarasAs(user, ['wait', '--controller', socket, '2']);
    assert.equal(waitedPrivate.status, 0, `${waitedPrivate.stdout}${waitedPrivate.stderr}`);
    assert.equal(modeOf(join(shared, 'out2.txt')), '0600');
    assert.equal(readFileSync(join(shared, 'out2.txt'), 'utf8'), `ran as ${user.name}\n`);
    const reader = spawnSync('runuser', ['-u', 'nobody', '--', 'sh', '-c',
      `cat ${shared}/out2.txt; cat ${user.home}/out.txt; cat ${data}/agent/jobs/2.0.files/script`], { encoding: 'utf8' });
    assert.equal(reader.stdout, '', 'another user read the job\'s output or script');
    assert.equal(reader.stderr.match(/Permission denied/g)?.length, 3, reader.stderr);
    await stop(running.child);
  });

  it('an existing data folder and database left readable by everyone are tightened at the next start, with a log line', async () => {
    chmodSync(data, 0o755);
    chmodSync(join(data, 'taras.db'), 0o644);
    chmodSync(join(data, 'controller.lock'), 0o644);
    chmodSync(join(data, 'agent', 'jobs', '1.0'), 0o755);
    const running = await up(data);
    started.push(running.child);
    assert.equal(modeOf(data), '0711');
    assert.equal(modeOf(join(data, 'taras.db')), '0600');
    assert.equal(modeOf(join(data, 'controller.lock')), '0600');
    assert.equal(modeOf(join(data, 'agent', 'jobs', '1.0')), '0700');
    assert.match(running.logged(), new RegExp(`tightened data folder ${data} from mode 0755 to 0711`));
    assert.match(running.logged(), new RegExp(`tightened database file ${data}/taras.db from mode 0644 to 0600`));
    assert.match(running.logged(), new RegExp(`tightened job directory ${data}/agent/jobs/1.0 from mode 0755 to 0700`));
    await stop(running.child);
  });
});

describe('a data folder through a symbolic link', () => {
  it('is the folder the link leads to: taken (it was refused as "not a folder" once links were looked at), its mode set there, the link left', () => {
    const place = mkdtempSync(join(tmpdir(), 'taras-link-'));
    try {
      const real = join(place, 'real');
      mkdirSync(real, { mode: 0o755 });
      chmodSync(real, 0o755);
      const link = join(place, 'data');
      symlinkSync(real, link);
      const lines: string[] = [];
      makeFolder(link, 0o700, (line) => lines.push(line), 'data folder');
      assert.equal(modeOf(real), '0700');
      assert.deepEqual(lines, [`tightened data folder ${real} from mode 0755 to 0700`]);
      assert.ok(lstatSync(link).isSymbolicLink());
      makeFolder(link, 0o700, (line) => lines.push(line), 'data folder');
      assert.equal(lines.length, 1, 'nothing to tighten the second time');
    } finally {
      rmSync(place, { recursive: true, force: true });
    }
  });
});

describe('a socket other users cannot reach', () => {
  const work = mkdtempSync(join(tmpdir(), 'taras-reach-'));
  after(() => rmSync(work, { recursive: true, force: true }));

  it('names the first folder on the way that others cannot enter', () => {
    chmodSync(work, 0o755);
    mkdirSync(join(work, 'home', 'data'), { recursive: true });
    const socket = join(work, 'home', 'data', 'taras.sock');
    assert.equal(unreachableFolderOf(socket), null);
    chmodSync(join(work, 'home'), 0o700);
    assert.deepEqual(unreachableFolderOf(socket), { folder: join(work, 'home'), mode: 0o700 });
    chmodSync(join(work, 'home'), 0o711);
    assert.equal(unreachableFolderOf(socket), null);
  });

  it('taras up warns at start, naming the folder and the fix, and still starts', async () => {
    chmodSync(work, 0o755);
    const home = join(work, 'private-home');
    mkdirSync(home, { mode: 0o700 });
    chmodSync(home, 0o700);
    const running = await up(join(home, 'data'));
    try {
      assert.match(running.logged(), new RegExp(`warning: other users cannot reach the socket .*: ${home} is mode 0700 .*chmod o\\+x ${home}`));
    } finally {
      await stop(running.child);
    }
  });
});
