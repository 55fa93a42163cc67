// The agent's least privilege, attacked with real throwaway Unix users and
// real supervisor processes (root only; skipped elsewhere): the submitter's
// LD_PRELOAD never runs as root; a symlink, FIFO or another user's 0666 file
// planted at an output path does not capture or redirect output; new output
// files follow the submitter's umask; a working directory swapped by a
// symlink race is never entered as root; job directories are private; no
// warning signal unless the job asks, and `--signal=B:` reaches the batch
// shell only. Each of these failed on the setpriv-based supervisor.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, closeSync, constants, existsSync, linkSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { makeJobFiles, startAgent } from '../src/agent/agent.js';
import { detectCgroupMode } from '../src/agent/cgroup.js';
import { hasEnded, jobFiles, launchSupervisor, prepareJobDir, waitForStatus, type EndedStatus, type SupervisorSpecInput } from '../src/agent/jobdir.js';
import type { StartOrder } from '../src/controller/engine.js';
import type { JobSpec } from '../src/jobspec/types.js';
import { createApiClient } from '../src/net/client.js';
import { createTestUser, notRootReason, removeTestUsers, type TestUser } from './unix-users.js';

const skip = notRootReason || (spawnSync('gcc', ['--version']).status === 0 ? false : 'gcc is not installed (needed to build the LD_PRELOAD probe)');
const root = mkdtempSync(join(tmpdir(), 'taras-sec-'));
chmodSync(root, 0o755);
let victim: TestUser;
let attacker: TestUser;
let jobCount = 0;

before(() => {
  if (skip) return;
  victim = createTestUser('vic');
  attacker = createTestUser('att');
});
after(() => {
  if (!skip) removeTestUsers();
  rmSync(root, { recursive: true, force: true });
});

/** A directory of `owner` (mode given) under the test root. */
function dirOf(name: string, owner: { uid: number; gid: number }, mode: number): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  chownSync(dir, owner.uid, owner.gid);
  chmodSync(dir, mode);
  return dir;
}

/** Runs a command as the attacker (so what it plants is theirs). */
function asAttacker(command: string): void {
  const run = spawnSync('/bin/sh', ['-c', command], { uid: attacker.uid, gid: attacker.gid, cwd: '/', encoding: 'utf8' });
  assert.equal(run.status, 0, `as ${attacker.name}: ${command}: ${run.stderr}`);
}

/** A victim's job (script job.sh in their own working directory, 0755) prepared for the supervisor; `as: null` runs it as root. */
function prepareJob(body: string, spec: Partial<SupervisorSpecInput> = {}, as: TestUser | null = victim): { dir: string; workDir: string } {
  const name = `j${++jobCount}`;
  const owner = as ?? { uid: 0, gid: 0 };
  const workDir = dirOf(name, owner, 0o755);
  writeFileSync(join(workDir, 'job.sh'), `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  chownSync(join(workDir, 'job.sh'), owner.uid, owner.gid);
  const dir = join(root, `${name}-sv`);
  const prepared = prepareJobDir(dir, {
    jobId: jobCount, script: join(workDir, 'job.sh'), args: [], workingDir: workDir, env: { PATH: '/usr/bin:/bin' }, stdoutPath: 'out.txt', stderrPath: 'out.txt',
    memoryMiB: null, timeLimitSeconds: 30, killGraceSeconds: 1, cgroupMode: 'rlimit', uid: as?.uid ?? null, gid: as?.gid ?? null, ...spec,
  });
  assert.ok(prepared.ok, prepared.ok ? '' : prepared.error);
  return { dir, workDir };
}

async function runJob(dir: string, timeoutMs = 10_000): Promise<EndedStatus> {
  const launched = launchSupervisor(dir);
  assert.ok(launched.ok, launched.ok ? '' : launched.error);
  const status = await waitForStatus(dir, hasEnded, timeoutMs);
  const log = existsSync(jobFiles(dir).log) ? readFileSync(jobFiles(dir).log, 'utf8') : '(no log)';
  if (!hasEnded(status)) {
    try {
      process.kill(launched.value, 'SIGKILL'); // a hung supervisor (the old FIFO bug) must not outlive the test
    } catch {
      // gone
    }
  }
  assert.ok(hasEnded(status), `the job of ${dir} ended within ${timeoutMs} ms (status: ${JSON.stringify(status)}; log: ${log})`);
  return status;
}

const modeOf = (path: string): number => statSync(path).mode & 0o777;

describe('the submitter\'s environment never runs as root', { skip }, () => {
  it('LD_PRELOAD, LD_LIBRARY_PATH and BASH_ENV reach the job but run nothing as root', async () => {
    const probeDir = dirOf('preload', { uid: 0, gid: 0 }, 0o755);
    const markers = dirOf('markers', { uid: 0, gid: 0 }, 0o777);
    const marker = join(markers, 'euids');
    const source = join(probeDir, 'probe.c');
    // Every process the loader starts with this library records its effective uid.
    writeFileSync(source, `#include <fcntl.h>\n#include <stdio.h>\n#include <sys/stat.h>\n#include <unistd.h>\n
__attribute__((constructor)) static void mark(void) {
  char line[64]; int n = snprintf(line, sizeof line, "%d\\n", (int) geteuid());
  umask(0); int fd = open(${JSON.stringify(marker)}, O_WRONLY | O_APPEND | O_CREAT, 0666);
  if (fd >= 0) { if (write(fd, line, n) < 0) {} close(fd); }
}\n`);
    const built = spawnSync('gcc', ['-shared', '-fPIC', '-o', join(probeDir, 'probe.so'), source], { encoding: 'utf8' });
    assert.equal(built.status, 0, built.stderr);
    const bashEnv = join(probeDir, 'bash-env.sh');
    writeFileSync(bashEnv, `id -u >> ${join(markers, 'bash-env')}\n`, { mode: 0o755 });
    const env = { PATH: '/usr/bin:/bin', LD_PRELOAD: join(probeDir, 'probe.so'), LD_LIBRARY_PATH: probeDir, BASH_ENV: bashEnv };
    const { dir, workDir } = prepareJob('echo "$LD_PRELOAD|$LD_LIBRARY_PATH|$BASH_ENV"\nid -u', { env });
    const status = await runJob(dir);
    assert.equal(status.state, 'COMPLETED', status.reason ?? '');
    assert.equal(readFileSync(join(workDir, 'out.txt'), 'utf8'), `${env.LD_PRELOAD}|${probeDir}|${bashEnv}\n${victim.uid}\n`, 'the job sees its variables');
    const euids = readFileSync(marker, 'utf8').trim().split('\n');
    assert.ok(euids.includes(String(victim.uid)), `the preload ran in the job (${euids.join(',')})`);
    assert.deepEqual(euids.filter((euid) => euid === '0'), [], 'no process with the submitter\'s LD_PRELOAD ran as root');
    if (existsSync(join(markers, 'bash-env'))) assert.doesNotMatch(readFileSync(join(markers, 'bash-env'), 'utf8'), /^0$/m);
  });

  /**
   * Runs a job of the victim with a preloaded library whose constructor, in every process the loader starts,
   * writes `body`'s text (C: it sets `text` and `n`) to a file of its own; returns those texts.
   */
  async function preloadedJob(name: string, body: string, spec: Partial<SupervisorSpecInput>): Promise<string[]> {
    const probeDir = dirOf(`preload-${name}`, { uid: 0, gid: 0 }, 0o755);
    const markers = dirOf(`markers-${name}`, { uid: 0, gid: 0 }, 0o777);
    const source = join(probeDir, `${name}.c`);
    writeFileSync(source, `#include <fcntl.h>\n#include <stdio.h>\n#include <sys/resource.h>\n#include <sys/stat.h>\n#include <unistd.h>\n
__attribute__((constructor)) static void probe(void) {
  char path[256], text[4096]; ssize_t n = 0; snprintf(path, sizeof path, "${markers}/%d", (int) getpid());
  ${body}
  if (n <= 0) return;
  umask(0); int out = open(path, O_WRONLY | O_CREAT | O_EXCL, 0666); if (out < 0) return;
  if (write(out, text, (size_t) n) < 0) {} close(out);
}\n`);
    const built = spawnSync('gcc', ['-shared', '-fPIC', '-o', join(probeDir, `${name}.so`), source], { encoding: 'utf8' });
    assert.equal(built.status, 0, built.stderr);
    const { dir } = prepareJob('true', { env: { PATH: '/usr/bin:/bin', LD_PRELOAD: join(probeDir, `${name}.so`) }, ...spec });
    const status = await runJob(dir);
    assert.equal(status.state, 'COMPLETED', status.reason ?? '');
    const seen = readdirSync(markers).map((pid) => readFileSync(join(markers, pid), 'utf8'));
    assert.ok(seen.length >= 1, 'the preload ran');
    return seen;
  }

  it('without cgroups, the first thing the job runs (a preloaded library) has the job\'s memory limit already (ulimit -v)', async () => {
    // Each process's address space limit, in bytes.
    const limits = await preloadedJob('rlimit', `struct rlimit as; if (getrlimit(RLIMIT_AS, &as) != 0) return;
  n = snprintf(text, sizeof text, "%lld", as.rlim_cur == RLIM_INFINITY ? -1LL : (long long) as.rlim_cur);`, { cgroupMode: 'rlimit', memoryMiB: 512 });
    assert.deepEqual([...new Set(limits)], [String(512 * 1024 * 1024)], 'every process of the job, the first included, under the limit');
  });

  it('with cgroups, the first thing the job runs (a preloaded library) is in the job\'s cgroup already: nothing it starts escapes the limit', async (t) => {
    if (detectCgroupMode().mode === 'rlimit') {
      t.skip('no writable cgroup on this machine');
      return;
    }
    // Each process's /proc/self/cgroup.
    const seen = await preloadedJob('cgroup', `int in = open("/proc/self/cgroup", O_RDONLY); if (in < 0) return;
  n = read(in, text, sizeof text); close(in);`, { cgroupMode: 'auto', memoryMiB: 256 });
    // cgroup v2: "0::/path"; v1: one line per hierarchy, the memory one counts.
    const memoryLine = (text: string) => text.split('\n').find((line) => /^0::|:memory:/.test(line)) ?? '';
    for (const text of seen) assert.match(memoryLine(text), new RegExp(`taras-job-${jobCount}-`), `a process of the job ran outside its cgroup: ${text}`);
  });
});

describe('planted output files', { skip, concurrency: true }, () => {
  it('a symlink at a root job\'s output path does not redirect it into a root-only directory', async () => {
    const secret = dirOf('root-only', { uid: 0, gid: 0 }, 0o700);
    writeFileSync(join(secret, 'target'), 'untouched\n');
    const shared = dirOf('shared-link', attacker, 0o755);
    asAttacker(`ln -s ${join(secret, 'target')} ${join(shared, 'root-job.out')}`);
    const { dir } = prepareJob('echo written by root\'s job', { stdoutPath: join(shared, 'root-job.out'), stderrPath: join(shared, 'root-job.out') }, null);
    const status = await runJob(dir);
    assert.equal(status.state, 'FAILED');
    assert.equal(status.pid, null);
    assert.equal(status.reason, `output file ${join(shared, 'root-job.out')} is a symbolic link: output is never written through one; remove it or choose another --output`);
    assert.equal(readFileSync(join(secret, 'target'), 'utf8'), 'untouched\n');
  });

  it('a symlink at a user job\'s output path does not redirect it, even to a file the user may write', async () => {
    const shared = dirOf('shared-link2', { uid: 0, gid: 0 }, 0o777);
    const own = join(victim.home, 'notes');
    writeFileSync(own, 'mine\n');
    chownSync(own, victim.uid, victim.gid);
    symlinkSync(own, join(shared, 'v.out'));
    const { dir } = prepareJob('echo job output', { stdoutPath: join(shared, 'v.out'), stderrPath: join(shared, 'v.out') });
    const status = await runJob(dir);
    assert.equal(status.state, 'FAILED');
    assert.match(status.reason!, /^output file .*v\.out is a symbolic link/);
    assert.equal(readFileSync(own, 'utf8'), 'mine\n');
  });

  it('a hard link at the output path to a file of the user\'s elsewhere is not written through', async () => {
    const shared = dirOf('shared-hardlink', { uid: 0, gid: 0 }, 0o777);
    const own = join(victim.home, 'diary');
    writeFileSync(own, 'private\n');
    chownSync(own, victim.uid, victim.gid);
    linkSync(own, join(shared, 'v.out')); // as an attacker can where fs.protected_hardlinks is 0
    const { dir } = prepareJob('echo job output', { stdoutPath: join(shared, 'v.out'), stderrPath: join(shared, 'v.out') });
    const status = await runJob(dir);
    assert.equal(status.state, 'FAILED');
    assert.equal(status.reason, `output file ${join(shared, 'v.out')} has 2 hard links: output goes only to a file with one name; remove it or choose another --output`);
    assert.equal(readFileSync(own, 'utf8'), 'private\n');
  });

  it('a FIFO at the output path fails the job at once, with or without a reader', async () => {
    const shared = dirOf('shared-fifo', { uid: 0, gid: 0 }, 0o777);
    const fifo = join(shared, 'v.out');
    asAttacker(`mkfifo -m 0666 ${fifo}`);
    const started = Date.now();
    const alone = prepareJob('echo secret output', { stdoutPath: fifo, stderrPath: fifo });
    const status = await runJob(alone.dir, 5000);
    assert.equal(status.state, 'FAILED');
    assert.equal(status.reason, `output file ${fifo} is a FIFO: output goes only to regular files; remove it or choose another --output`);
    assert.ok(Date.now() - started < 5000, 'no hang');
    // The attacker listening at the other end gets nothing either.
    const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      const listened = prepareJob('echo secret output', { stdoutPath: fifo, stderrPath: fifo });
      const second = await runJob(listened.dir, 5000);
      assert.equal(second.state, 'FAILED');
      assert.equal(second.reason, `output file ${fifo} is a FIFO: output goes only to regular files; remove it or choose another --output`);
    } finally {
      closeSync(reader);
    }
  });

  it('another user\'s 0666 file at the output path is not appended to', async () => {
    const shared = dirOf('shared-foreign', { uid: 0, gid: 0 }, 0o777);
    const trap = join(shared, 'v.out');
    asAttacker(`umask 0; : > ${trap}`);
    assert.equal(modeOf(trap), 0o666);
    const { dir } = prepareJob('echo secret output', { stdoutPath: trap, stderrPath: trap });
    const status = await runJob(dir);
    assert.equal(status.state, 'FAILED');
    assert.equal(status.reason, `output file ${trap} belongs to uid ${attacker.uid}, not to ${victim.name} (uid ${victim.uid}): a job never writes into another user's file; remove it or choose another --output`);
    assert.equal(readFileSync(trap, 'utf8'), '');
  });

  it('a device other than /dev/null is refused (output goes only to regular files); /dev/null discards it, as in sbatch', async () => {
    const { dir } = prepareJob('echo x', { stdoutPath: '/dev/zero', stderrPath: '/dev/zero' });
    const status = await runJob(dir);
    assert.equal(status.state, 'FAILED');
    assert.equal(status.reason, 'output file /dev/zero is a character device: output goes only to regular files; remove it or choose another --output');
    // With no terminal, /dev/tty does not open at all (ENXIO, as a FIFO with no reader): it was called a FIFO (red team).
    const tty = prepareJob('echo x', { stdoutPath: '/dev/tty', stderrPath: '/dev/tty' });
    const ttyStatus = await runJob(tty.dir);
    assert.equal(ttyStatus.state, 'FAILED');
    assert.equal(ttyStatus.reason, 'output file /dev/tty is a character device: output goes only to regular files; remove it or choose another --output');
    const discarded = prepareJob('echo x', { stdoutPath: '/dev/null', stderrPath: '/dev/null' });
    assert.equal((await runJob(discarded.dir)).state, 'COMPLETED');
  });

  it('a user job may still append to its own file (owner kept)', async () => {
    const { dir, workDir } = prepareJob('echo appended');
    writeFileSync(join(workDir, 'out.txt'), 'kept\n');
    chownSync(join(workDir, 'out.txt'), victim.uid, victim.gid);
    const status = await runJob(dir);
    assert.equal(status.state, 'COMPLETED', status.reason ?? '');
    assert.equal(readFileSync(join(workDir, 'out.txt'), 'utf8'), 'kept\nappended\n');
  });
});

describe('output file modes follow the submitter\'s umask', { skip, concurrency: true }, () => {
  for (const [umask, mode] of [[0o077, 0o600], [0o022, 0o644], [0o002, 0o664]] as const) {
    it(`umask ${umask.toString(8).padStart(3, '0')}: new output and error files are ${mode.toString(8)}, the user's`, async () => {
      const { dir, workDir } = prepareJob('echo out; echo err >&2', { umask, stdoutPath: 'o.txt', stderrPath: 'e.txt' });
      const status = await runJob(dir);
      assert.equal(status.state, 'COMPLETED', status.reason ?? '');
      for (const file of ['o.txt', 'e.txt']) {
        assert.equal(modeOf(join(workDir, file)), mode, file);
        assert.equal(statSync(join(workDir, file)).uid, victim.uid);
      }
    });
  }
});

describe('the working directory is entered as the user only', { skip }, () => {
  it('a symlink swapped between an open directory and one the user cannot reach is never entered', async () => {
    const open = dirOf('wd-open', victim, 0o755);
    const hidden = join(dirOf('wd-hidden', { uid: 0, gid: 0 }, 0o700), 'inner');
    mkdirSync(hidden, { mode: 0o755 });
    chmodSync(hidden, 0o755); // readable once inside: only its 0700 parent keeps the user out
    writeFileSync(join(hidden, 'secret-file'), 'TOP SECRET\n', { mode: 0o644 });
    const link = join(root, 'wd-link');
    symlinkSync(open, link);
    // Flips the link as fast as a shell can, for the whole test.
    const swapper = spawn('/bin/sh', ['-c', `while :; do ln -sfn ${hidden} ${link}; ln -sfn ${open} ${link}; done`], { stdio: 'ignore' });
    const outputs = dirOf('wd-out', victim, 0o755);
    try {
      const jobs = [];
      for (let round = 0; round < 3; round++) {
        const batch = Array.from({ length: 8 }, () => {
          const output = join(outputs, `out-${jobCount + 1}.txt`);
          const job = prepareJob('cat secret-file 2>/dev/null; pwd -P', { workingDir: link, stdoutPath: output, stderrPath: output });
          return runJob(job.dir).then((status) => ({ status, output }));
        });
        jobs.push(...(await Promise.all(batch)));
      }
      for (const { status, output } of jobs) {
        if (status.state === 'FAILED') {
          assert.match(status.reason!, new RegExp(`^working directory ${link} is not accessible to ${victim.name} \\(uid ${victim.uid}\\) \\((EACCES: Permission denied|ENOENT: No such file or directory)\\)`));
          continue;
        }
        assert.equal(status.state, 'COMPLETED');
        assert.equal(readFileSync(output, 'utf8'), `${open}\n`, 'the job ran in the directory the user may enter');
      }
      assert.ok(jobs.some(({ status }) => status.state === 'COMPLETED'), 'some jobs ran');
    } finally {
      swapper.kill('SIGKILL');
    }
  });
});

describe('a job\'s files folder', { skip }, () => {
  it('is root\'s: the job\'s user reads its files there but cannot plant, remove or list anything, so root removes it as its own', () => {
    const jobs = dirOf('files-jobs', { uid: 0, gid: 0 }, 0o711);
    const dir = join(jobs, '7.0');
    const folder = makeJobFiles(dir, { uid: victim.uid, gid: victim.gid }, [{ name: 'script', text: '#!/bin/sh\necho hi\n', mode: 0o700 }, { name: 'nodefile', text: 'node01\n', mode: 0o600 }]);
    assert.equal(folder, `${dir}.files`);
    const stats = statSync(folder);
    assert.deepEqual([stats.mode & 0o777, stats.uid, stats.gid], [0o710, 0, victim.gid]);
    const asVictim = (command: string) => spawnSync('/bin/sh', ['-c', command], { uid: victim.uid, gid: victim.gid, cwd: '/', encoding: 'utf8' });
    assert.equal(asVictim(`cat ${folder}/nodefile`).stdout, 'node01\n');
    assert.equal(asVictim(`${folder}/script`).stdout, 'hi\n');
    // The attacks: a link to root's files, a file to fill the disk, the script swapped, a listing.
    for (const command of [`ln -s /etc/shadow ${folder}/link`, `touch ${folder}/fill`, `mv ${folder}/script ${folder}/old`, `rm -f ${folder}/nodefile`, `ls ${folder}`]) {
      const run = asVictim(command);
      assert.notEqual(run.status, 0, `${victim.name} could: ${command}`);
    }
    assert.deepEqual(readdirSync(folder).sort(), ['nodefile', 'script']);
    const other = spawnSync('/bin/cat', [join(folder, 'script')], { uid: attacker.uid, gid: attacker.gid, encoding: 'utf8' });
    assert.notEqual(other.status, 0, 'another user read the script');
    // Made again for the same run (a start repeated): the old one goes, nothing of it is written into.
    makeJobFiles(dir, { uid: victim.uid, gid: victim.gid }, [{ name: 'script', text: '#!/bin/sh\necho again\n', mode: 0o700 }]);
    assert.deepEqual(readdirSync(folder), ['script']);
  });
});

describe('the agent: private job directories and the warning signal', { skip }, () => {
  const jobSpec = (workDir: string, text: string, extra: Partial<JobSpec> = {}): JobSpec => ({
    script: { path: join(workDir, 'job.sh'), text, args: [] }, nodes: { min: 1 }, cpusPerTask: 1, timeLimitSeconds: 60, name: 'sec',
    workingDir: workDir, output: 'sec-%j.out', export: { all: false, variables: [{ name: 'PATH', value: '/usr/bin:/bin' }] }, requeue: false, ...extra,
  });

  it('job directories are root\'s and 0700; the script and node file are the user\'s alone, in a 0700 folder of theirs; the umask travels in the order', async () => {
    const workDir = dirOf('agent-work', victim, 0o755);
    const dataDir = join(root, 'agent-data');
    const agent = await startAgent({ controller: { baseUrl: 'http://127.0.0.1:9' }, nodes: ['node01'], dataDir, clusterKey: null, heartbeatMs: 60_000, log: () => undefined });
    const client = createApiClient({ baseUrl: agent.url }, { timeoutMs: 5000 });
    try {
      const order = (jobId: number, user: string, spec: JobSpec, warnSignal: StartOrder['warnSignal'] = null): StartOrder => ({
        jobId: jobId as StartOrder['jobId'], run: 0, user, name: 'sec', nodes: ['node01'], cpusOnNode: 1, spec, warnSignal, killGraceSeconds: 1,
      });
      await client.post('/start', order(1, victim.name, jobSpec(workDir, '#!/bin/sh\necho mine\n', { umask: 0o077 })));
      await client.post('/start', order(2, 'root', jobSpec(workDir, '#!/bin/sh\necho root\n', { output: join(root, 'root-job.out') })));
      const userDir = join(dataDir, 'jobs', '1.0');
      const rootDir = join(dataDir, 'jobs', '2.0');
      const ran = await waitForStatus(userDir, hasEnded, 10_000);
      assert.equal(ran?.state, 'COMPLETED', JSON.stringify(ran));
      assert.equal((await waitForStatus(rootDir, hasEnded, 10_000))?.state, 'COMPLETED');
      const userStats = statSync(userDir);
      assert.deepEqual([userStats.mode & 0o777, userStats.uid, userStats.gid], [0o700, 0, 0]);
      assert.equal(modeOf(rootDir), 0o700);
      const files = `${userDir}.files`;
      const folder = statSync(files);
      assert.deepEqual([folder.mode & 0o777, folder.uid, folder.gid], [0o710, 0, victim.gid]);
      const script = statSync(join(files, 'script'));
      assert.deepEqual([script.mode & 0o777, script.uid], [0o700, victim.uid]);
      const nodefile = statSync(join(files, 'nodefile'));
      assert.deepEqual([nodefile.mode & 0o777, nodefile.uid], [0o600, victim.uid]);
      assert.equal(readFileSync(join(files, 'nodefile'), 'utf8'), 'node01\n');
      for (const file of ['spec.json', 'status.json', 'supervisor.log']) assert.equal(modeOf(join(userDir, file)), 0o600, file);
      // The job reached both as its user.
      const seen = spawnSync('/bin/cat', [join(files, 'nodefile')], { uid: victim.uid, gid: victim.gid, encoding: 'utf8' });
      assert.equal(seen.stdout, 'node01\n');
      assert.equal(readFileSync(join(workDir, 'sec-1.out'), 'utf8'), 'mine\n');
      assert.equal(modeOf(join(workDir, 'sec-1.out')), 0o600, 'the submitter\'s umask 077');
      // Another user cannot even look, in either; the job's own user lists neither.
      for (const [who, folder] of [[attacker, userDir], [attacker, files], [victim, userDir], [victim, files]] as const) {
        const peek = spawnSync('/bin/ls', [folder], { uid: who.uid, gid: who.gid, encoding: 'utf8' });
        assert.notEqual(peek.status, 0, `${who.name} listed ${folder}`);
      }
    } finally {
      client.close();
      await agent.close();
    }
  });

  it('no warning signal by default; --signal=B:USR1@2 reaches the batch shell only, USR1@2 every process', async () => {
    const workDir = dirOf('agent-signal', victim, 0o755);
    const dataDir = join(root, 'agent-signal-data');
    const agent = await startAgent({ controller: { baseUrl: 'http://127.0.0.1:9' }, nodes: ['node01'], dataDir, clusterKey: null, heartbeatMs: 60_000, log: () => undefined });
    const client = createApiClient({ baseUrl: agent.url }, { timeoutMs: 5000 });
    const trapping = (marker: string) => `#!/bin/sh
sh -c 'trap "echo child >> ${marker}" USR1; while :; do sleep 0.1; done' &
trap 'echo batch >> ${marker}; i=0; while ! grep -q child ${marker} && [ $i -lt 20 ]; do sleep 0.1; i=$((i+1)); done; exit 0' USR1
wait
`;
    try {
      const order = (jobId: number, spec: JobSpec, warnSignal: StartOrder['warnSignal']): StartOrder => ({
        jobId: jobId as StartOrder['jobId'], run: 0, user: victim.name, name: 'sig', nodes: ['node01'], cpusOnNode: 1, spec, warnSignal, killGraceSeconds: 1,
      });
      // Not trapping USR1 and asking for nothing: it runs to its end.
      await client.post('/start', order(1, jobSpec(workDir, '#!/bin/sh\nsleep 3\necho done\n', { timeLimitSeconds: 8 }), null));
      await client.post('/start', order(2, jobSpec(workDir, trapping(join(workDir, 'b.marker')), { timeLimitSeconds: 6 }), { signal: 'USR1', beforeSeconds: 4, batchOnly: true }));
      await client.post('/start', order(3, jobSpec(workDir, trapping(join(workDir, 'all.marker')), { timeLimitSeconds: 6 }), { signal: 'USR1', beforeSeconds: 4, batchOnly: false }));
      const [quiet, batchOnly, everyone] = await Promise.all([1, 2, 3].map((id) => waitForStatus(join(dataDir, 'jobs', `${id}.0`), hasEnded, 15_000)));
      assert.ok(hasEnded(quiet) && hasEnded(batchOnly) && hasEnded(everyone));
      assert.equal(quiet.state, 'COMPLETED', quiet.reason ?? '');
      assert.deepEqual(quiet.signalsSent, []);
      assert.equal(readFileSync(join(workDir, 'sec-1.out'), 'utf8'), 'done\n');
      for (const status of [batchOnly, everyone]) {
        assert.equal(status.state, 'COMPLETED', status.reason ?? '');
        assert.deepEqual(status.signalsSent.map((s) => `${s.signal} ${s.why}`), ['SIGUSR1 warning']);
      }
      assert.equal(readFileSync(join(workDir, 'b.marker'), 'utf8'), 'batch\n');
      assert.deepEqual(readFileSync(join(workDir, 'all.marker'), 'utf8').trim().split('\n').sort(), ['batch', 'child']);
    } finally {
      client.close();
      await agent.close();
    }
  });
});
