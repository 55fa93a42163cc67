// Jobs run as the Unix user who submitted them: users.ts resolves names and
// uids, the agent decides whether it can run a user's job, and the supervisor
// (as root) starts the job through the exec helper, which takes the user's
// ids before it enters the working directory or opens the output files, so
// the kernel checks them as that user and the output is theirs. The supervisor tests need root and `nobody` (Debian has it).

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { credentialsFor, startAgent } from '../src/agent/agent.js';
import { probeCgroupV1 } from '../src/agent/cgroup.js';
import { hasEnded, jobFiles, launchSupervisor, prepareJobDir, readStatus, waitForStatus, type EndedStatus, type SupervisorSpecInput } from '../src/agent/jobdir.js';
import { lookupUser, lookupUserById } from '../src/agent/users.js';
import type { StartOrder } from '../src/controller/engine.js';
import type { JobSpec } from '../src/jobspec/types.js';
import { createApiClient } from '../src/net/client.js';

const NOBODY = 65534;
const isRoot = process.getuid!() === 0;
const nobody = lookupUser('nobody');
const notRoot = !isRoot ? `not running as root (uid ${process.getuid!()}): only root can start jobs as another user`
  : !nobody.ok ? `no user nobody here: ${nobody.error}` : false;

// The job's user must be able to enter every directory above its files: mkdtemp makes 0700.
const root = mkdtempSync(join(tmpdir(), 'taras-user-'));
chmodSync(root, 0o755);
after(() => rmSync(root, { recursive: true, force: true }));
let jobCount = 0;

describe('lookupUser', () => {
  it('finds root and nobody with their ids, home and shell', () => {
    const rootUser = lookupUser('root');
    assert.ok(rootUser.ok);
    assert.deepEqual({ uid: rootUser.value.uid, gid: rootUser.value.gid, home: rootUser.value.home }, { uid: 0, gid: 0, home: '/root' });
    assert.ok(rootUser.value.shell.startsWith('/'));
    const found = lookupUser('nobody');
    assert.ok(found.ok, found.ok ? '' : found.error);
    assert.deepEqual(found.value, { name: 'nobody', uid: NOBODY, gid: NOBODY, home: '/nonexistent', shell: '/usr/sbin/nologin' });
  });

  it('a missing user is an error that says what to do', () => {
    assert.deepEqual(lookupUser('taras-no-such-user'), { ok: false, error: 'no user taras-no-such-user on this node: create it or submit as a user the nodes know' });
    assert.deepEqual(lookupUser('-x'), { ok: false, error: '"-x" is not a valid Unix user name' });
  });

  it('reads a passwd file line by line, skipping comments and NIS entries; looks up by uid too', () => {
    const passwd = join(root, 'passwd');
    writeFileSync(passwd, '# comment\n+@netgroup::::::\nada:x:1001:100:Ada L:/home/ada:/bin/bash\nbad:x:uid:1::/:/bin/sh\n');
    assert.deepEqual(lookupUser('ada', { passwdPath: passwd, useGetent: false }), { ok: true, value: { name: 'ada', uid: 1001, gid: 100, home: '/home/ada', shell: '/bin/bash' } });
    assert.equal(lookupUser('bad', { passwdPath: passwd, useGetent: false }).ok, false);
    assert.equal(lookupUserById(1001, { passwdPath: passwd, useGetent: false })?.name, 'ada');
    assert.equal(lookupUserById(0)?.name, 'root');
    assert.equal(lookupUserById(NOBODY)?.name, 'nobody');
    assert.equal(lookupUserById(4_000_000_000), null);
  });
});

describe('the agent decides who a job runs as', { skip: notRoot }, () => {
  it('as root: root\'s jobs as root, nobody\'s as nobody, an unknown user\'s not at all', () => {
    assert.deepEqual(credentialsFor('root'), { ok: true, value: null });
    assert.deepEqual(credentialsFor('nobody'), { ok: true, value: { uid: NOBODY, gid: NOBODY } });
    assert.deepEqual(credentialsFor('nobody', NOBODY), { ok: true, value: { uid: NOBODY, gid: NOBODY } });
    assert.match((credentialsFor('nobody', 4242) as { error: string }).error, /is uid \d+ on this node but uid 4242 where the job was submitted/);
    assert.deepEqual(credentialsFor('taras-no-such-user'), { ok: false, error: 'no user taras-no-such-user on this node: create it or submit as a user the nodes know' });
  });

  it('an agent that is not root runs only its own user\'s jobs', () => {
    const agentModule = new URL('../src/agent/agent.js', import.meta.url).href;
    const code = `import { credentialsFor } from ${JSON.stringify(agentModule)};
      process.stdout.write(JSON.stringify([credentialsFor('nobody'), credentialsFor('root')]));`;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', code], { uid: NOBODY, gid: NOBODY, cwd: '/', encoding: 'utf8' });
    assert.equal(run.status, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout), [
      { ok: true, value: null },
      { ok: false, error: 'the agent runs as nobody and cannot start jobs for root; run agents as root' },
    ]);
  });

  it('a start order runs the job as its user, and one for an unknown user ends FAILED with the reason', async () => {
    const workDir = join(root, 'agent-work');
    mkdirSync(workDir, { mode: 0o755 });
    chownSync(workDir, NOBODY, NOBODY);
    const dataDir = join(root, 'agent-data');
    // No controller listens there: the agent keeps trying to register, which does not stop it from starting jobs.
    const agent = await startAgent({ controller: { baseUrl: 'http://127.0.0.1:9' }, nodes: ['node01'], dataDir, clusterKey: null, heartbeatMs: 60_000, log: () => undefined });
    const client = createApiClient({ baseUrl: agent.url }, { timeoutMs: 5000 });
    try {
      const spec: JobSpec = {
        script: { path: join(workDir, 'job.sh'), text: '#!/bin/sh\nid -un\n', args: [] }, nodes: { min: 1 }, cpusPerTask: 1, timeLimitSeconds: 60, name: 'who',
        workingDir: workDir, output: 'who-%j.out', export: { all: true, variables: [] }, requeue: false,
      };
      const order = (jobId: number, user: string): StartOrder => ({ jobId: jobId as StartOrder['jobId'], run: 0, user, name: 'who', nodes: ['node01'], cpusOnNode: 1, spec, warnSignal: null, killGraceSeconds: 1 });
      await client.post('/start', order(1, 'nobody'));
      await client.post('/start', order(2, 'taras-no-such-user'));
      const ran = await waitForStatus(join(dataDir, 'jobs', '1.0'), hasEnded, 10_000);
      assert.equal(ran?.state, 'COMPLETED', JSON.stringify(ran));
      assert.equal(readFileSync(join(workDir, 'who-1.out'), 'utf8'), 'nobody\n');
      assert.deepEqual(ownerOf(join(workDir, 'who-1.out')), [NOBODY, NOBODY]);
      const refused = readStatus(join(dataDir, 'jobs', '2.0'));
      assert.ok(hasEnded(refused));
      assert.equal(refused.state, 'FAILED');
      assert.equal(refused.reason, 'no user taras-no-such-user on this node: create it or submit as a user the nodes know');
    } finally {
      client.close();
      await agent.close();
    }
  });
});

/** A working directory of nobody's (as a submit directory is its user's) with job.sh, and a prepared job directory whose spec runs as nobody. */
function prepareJob(body: string, spec: Partial<SupervisorSpecInput> = {}): { dir: string; workDir: string } {
  const name = `j${++jobCount}`;
  const workDir = join(root, name);
  mkdirSync(workDir, { mode: 0o755 });
  chmodSync(workDir, 0o755);
  chownSync(workDir, NOBODY, NOBODY);
  writeFileSync(join(workDir, 'job.sh'), `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  const dir = join(workDir, 'sv');
  const prepared = prepareJobDir(dir, {
    jobId: jobCount, script: 'job.sh', args: [], workingDir: workDir, env: { PATH: '/usr/bin:/bin' }, stdoutPath: 'out.txt', stderrPath: 'err.txt',
    memoryMiB: null, timeLimitSeconds: 30, killGraceSeconds: 1, cgroupMode: 'rlimit', uid: NOBODY, gid: NOBODY, ...spec,
  });
  assert.ok(prepared.ok, prepared.ok ? '' : prepared.error);
  return { dir, workDir };
}

async function runJob(dir: string): Promise<EndedStatus> {
  const launched = launchSupervisor(dir);
  assert.ok(launched.ok, launched.ok ? '' : launched.error);
  const status = await waitForStatus(dir, hasEnded, 10_000);
  assert.ok(hasEnded(status), `the job of ${dir} ended (status: ${JSON.stringify(status)}; log: ${readFileSync(jobFiles(dir).log, 'utf8')})`);
  return status;
}

const ownerOf = (path: string): [number, number] => {
  const stats = statSync(path);
  return [stats.uid, stats.gid];
};

/** A throwaway user whose only supplementary group is a throwaway group; both removed after the tests. */
function scratchUserWithGroup(): { user: string; group: string; uid: number; gid: number; groupId: number } | string {
  const suffix = String(process.pid);
  const group = `tarasg${suffix}`;
  const user = `tarasu${suffix}`;
  const run = (command: string, args: string[]) => spawnSync(command, args, { encoding: 'utf8' });
  const added = run('groupadd', [group]);
  if (added.status !== 0) return `groupadd failed: ${added.stderr || added.error?.message}`;
  after(() => {
    run('userdel', [user]);
    run('groupdel', [group]);
  });
  const created = run('useradd', ['-M', '-N', '-g', 'nogroup', '-G', group, '-d', '/nonexistent', '-s', '/usr/sbin/nologin', user]);
  if (created.status !== 0) return `useradd failed: ${created.stderr || created.error?.message}`;
  const found = lookupUser(user);
  if (!found.ok) return found.error;
  const groupId = Number(run('getent', ['group', group]).stdout.split(':')[2]);
  return { user, group, uid: found.value.uid, gid: found.value.gid, groupId };
}

describe('a job with a user\'s uid and gid', { skip: notRoot, concurrency: true }, () => {
  it('runs with the user\'s supplementary groups, and may write where only one of them may', async () => {
    const scratch = scratchUserWithGroup();
    assert.ok(typeof scratch !== 'string', String(scratch));
    const workDir = join(root, `groups-${++jobCount}`);
    mkdirSync(workDir, { mode: 0o755 });
    chmodSync(workDir, 0o755);
    chownSync(workDir, scratch.uid, scratch.gid);
    // Writable by the group only: the job's output lands there through its supplementary group.
    const shared = join(workDir, 'shared');
    mkdirSync(shared);
    chownSync(shared, 0, scratch.groupId);
    chmodSync(shared, 0o770);
    writeFileSync(join(workDir, 'job.sh'), '#!/bin/sh\nid -un\nid -Gn\n', { mode: 0o755 });
    const dir = join(workDir, 'sv');
    const prepared = prepareJobDir(dir, {
      jobId: jobCount, script: 'job.sh', args: [], workingDir: workDir, env: { PATH: '/usr/bin:/bin' }, stdoutPath: 'shared/out.txt', stderrPath: 'shared/err.txt',
      memoryMiB: null, timeLimitSeconds: 30, killGraceSeconds: 1, cgroupMode: 'rlimit', uid: scratch.uid, gid: scratch.gid,
    });
    assert.ok(prepared.ok, prepared.ok ? '' : prepared.error);
    const status = await runJob(dir);
    assert.equal(status.state, 'COMPLETED', status.reason ?? '');
    const [name, groups] = readFileSync(join(shared, 'out.txt'), 'utf8').trim().split('\n');
    assert.equal(name, scratch.user);
    assert.deepEqual(groups.split(' ').sort(), ['nogroup', scratch.group].sort());
    assert.deepEqual(ownerOf(join(shared, 'out.txt')), [scratch.uid, scratch.gid]);
  });


  it('runs as that user, with their HOME, USER and LOGNAME, and its new output files are theirs', async () => {
    const { dir, workDir } = prepareJob('id -un\nid -u\necho "$HOME|$USER|$LOGNAME"\npwd\necho oops >&2');
    const status = await runJob(dir);
    assert.equal(status.state, 'COMPLETED', status.reason ?? '');
    assert.equal(readFileSync(join(workDir, 'out.txt'), 'utf8'), `nobody\n${NOBODY}\n/nonexistent|nobody|nobody\n${workDir}\n`);
    assert.deepEqual(ownerOf(join(workDir, 'out.txt')), [NOBODY, NOBODY]);
    assert.deepEqual(ownerOf(join(workDir, 'err.txt')), [NOBODY, NOBODY]);
    assert.equal(readFileSync(join(workDir, 'err.txt'), 'utf8'), 'oops\n');
  });

  it('appends to an existing output file of its own, and keeps HOME from its environment', async () => {
    const { dir, workDir } = prepareJob('id -un; echo "$HOME|$USER"', { env: { PATH: '/usr/bin:/bin', HOME: '/tmp' } });
    writeFileSync(join(workDir, 'out.txt'), 'kept\n', { mode: 0o600 });
    chownSync(join(workDir, 'out.txt'), NOBODY, NOBODY);
    const status = await runJob(dir);
    assert.equal(status.state, 'COMPLETED', status.reason ?? '');
    assert.equal(readFileSync(join(workDir, 'out.txt'), 'utf8'), 'kept\nnobody\n/tmp|nobody\n');
    assert.deepEqual(ownerOf(join(workDir, 'out.txt')), [NOBODY, NOBODY]);
  });

  it('a 0666 output file of root\'s is not written by a user\'s job', async () => {
    const { dir, workDir } = prepareJob('echo should not run');
    writeFileSync(join(workDir, 'out.txt'), '');
    chmodSync(join(workDir, 'out.txt'), 0o666);
    const status = await runJob(dir);
    assert.equal(status.state, 'FAILED');
    assert.equal(status.reason, `output file ${join(workDir, 'out.txt')} belongs to uid 0, not to nobody (uid ${NOBODY}): a job never writes into another user's file; remove it or choose another --output`);
    assert.equal(readFileSync(join(workDir, 'out.txt'), 'utf8'), '');
  });

  it('a working directory the user cannot enter fails the job with that reason', async () => {
    const { dir, workDir } = prepareJob('echo should not run');
    chownSync(workDir, 0, 0);
    chmodSync(workDir, 0o700);
    const status = await runJob(dir);
    assert.equal(status.state, 'FAILED');
    assert.equal(status.pid, null);
    assert.equal(status.reason, `working directory ${workDir} is not accessible to nobody (uid ${NOBODY}) (EACCES: Permission denied): it must exist and every directory on its path must be searchable by them`);
  });

  it('an output file in a directory the user may not write is not created for them by root', async () => {
    const { dir, workDir } = prepareJob('echo should not run', { stdoutPath: 'root-only/out.txt' });
    mkdirSync(join(workDir, 'root-only'), { mode: 0o755 });
    const status = await runJob(dir);
    assert.equal(status.state, 'FAILED');
    assert.match(status.reason!, /^cannot open the job's output file .*root-only\/out\.txt as nobody \(uid 65534\) \(EACCES: Permission denied\)$/);
  });

  it('a supervisor that is not root refuses to start another user\'s job', async () => {
    const { dir } = prepareJob('echo should not run', { uid: 0, gid: 0 });
    chownSync(dir, NOBODY, NOBODY);
    chownSync(jobFiles(dir).spec, NOBODY, NOBODY);
    const supervisor = fileURLToPath(new URL('../src/agent/supervisor.js', import.meta.url));
    const child = spawn(process.execPath, [supervisor, dir], { uid: NOBODY, gid: NOBODY, cwd: dir, stdio: 'ignore' });
    assert.equal(await new Promise((resolveExit) => child.once('exit', resolveExit)), 1);
    const status = readStatus(dir);
    assert.ok(hasEnded(status));
    assert.equal(status.reason, `the supervisor runs as uid ${NOBODY} and cannot start jobs as root (uid 0): run the agent as root`);
  });

  const v1 = probeCgroupV1(null);
  it('cgroup v1: the supervisor moves the user\'s job into its cgroup before the script runs', { skip: v1.ok ? false : `cgroup v1 is not available here: ${v1.reason}` }, async () => {
    const { dir, workDir } = prepareJob('id -un\ngrep -c taras-job- /proc/self/cgroup', { cgroupMode: 'v1', memoryMiB: 256 });
    const status = await runJob(dir);
    assert.equal(status.state, 'COMPLETED', status.reason ?? readFileSync(join(workDir, 'err.txt'), 'utf8'));
    assert.equal(status.mode, 'v1');
    const [user, memberships] = readFileSync(join(workDir, 'out.txt'), 'utf8').trim().split('\n');
    assert.equal(user, 'nobody');
    assert.ok(Number(memberships) >= 1, `in the job's cgroup (${memberships} hierarchies)`);
  });
});
