// The job supervisor (src/agent/supervisor.ts, driven through
// src/agent/jobdir.ts) and cgroup modes (src/agent/cgroup.ts) with real
// processes: end states and exit codes, the time limit's signals, cancel and
// signals through the control socket from a process that did not start the
// job, survival of a kill -9 of the launcher's process group, and memory
// limits in each cgroup mode this machine has (the others are skipped with the
// reason the probe gives).

import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { detectCgroupMode, probeCgroupV1, probeCgroupV2, type CgroupMode, type CgroupSystem } from '../src/agent/cgroup.js';
import {
  cancelStartingSupervisor, hasEnded, isAlive, jobFiles, launchSupervisor, prepareJobDir, processStartTicks, readStatus, requestSignal, requestTimeLimit,
  SupervisorLauncher, takesStopSignals, waitForStatus,
  type EndedStatus, type RunningStatus, type SupervisorSpecInput,
} from '../src/agent/jobdir.js';
import { waitUntil } from './poll.js';

const root = mkdtempSync(join(tmpdir(), 'taras-sv-'));
const supervisorModule = new URL('../src/agent/supervisor.js', import.meta.url);
const jobDirModule = new URL('../src/agent/jobdir.js', import.meta.url);
const jobEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
const launchedDirs: string[] = [];
const launchedPids: number[] = [];
const launchers: ChildProcess[] = [];
let jobCount = 0;

const killQuietly = (pid: number, signal: NodeJS.Signals = 'SIGKILL'): void => {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
};

after(() => {
  for (const launcher of launchers) if (launcher.pid !== undefined && launcher.exitCode === null) killQuietly(-launcher.pid);
  for (const dir of launchedDirs) {
    const status = readStatus(dir);
    if (status?.state !== 'RUNNING') continue;
    killQuietly(-status.pgid);
    killQuietly(status.supervisorPid);
    for (const cgroup of status.cgroup) {
      try {
        rmdirSync(cgroup);
      } catch {
        // already removed, or still busy: nothing more to do from here
      }
    }
  }
  for (const pid of launchedPids) if (isAlive(pid)) killQuietly(pid);
  rmSync(root, { recursive: true, force: true });
});

/** A job directory with the script written (executable unless told otherwise) and spec.json prepared. */
function prepareJob(body: string, spec: Partial<SupervisorSpecInput> = {}, executable = true): { dir: string; workDir: string } {
  const name = `j${++jobCount}`;
  const workDir = join(root, name);
  mkdirSync(workDir);
  const script = join(workDir, 'job.sh');
  writeFileSync(script, `#!/bin/sh\n${body}\n`);
  chmodSync(script, executable ? 0o755 : 0o644);
  const dir = join(workDir, 'sv');
  const prepared = prepareJobDir(dir, {
    jobId: jobCount, script: 'job.sh', args: [], workingDir: workDir, env: jobEnv, stdoutPath: 'out.txt', stderrPath: 'err.txt',
    memoryMiB: null, timeLimitSeconds: null, killGraceSeconds: 2, ...spec,
  });
  assert.ok(prepared.ok, prepared.ok ? '' : prepared.error);
  return { dir, workDir };
}

function launch(dir: string): number {
  const launched = launchSupervisor(dir);
  assert.ok(launched.ok, launched.ok ? '' : launched.error);
  launchedDirs.push(dir);
  launchedPids.push(launched.value);
  return launched.value;
}

async function waitForEnd(dir: string, timeoutMs = 20_000): Promise<EndedStatus> {
  const status = await waitForStatus(dir, (s) => s.state !== 'RUNNING', timeoutMs);
  assert.ok(hasEnded(status), `the job of ${dir} ended within ${timeoutMs} ms (status: ${JSON.stringify(status)}; log: ${readLog(dir)})`);
  return status;
}

async function waitForRunning(dir: string): Promise<RunningStatus> {
  // Generous: the suite's supervisor tests run at once, and each starts Node processes.
  const status = await waitForStatus(dir, () => true, 20_000);
  assert.equal(status?.state, 'RUNNING', `the job of ${dir} is running (log: ${readLog(dir)})`);
  return status as RunningStatus;
}

const readLog = (dir: string): string => (existsSync(jobFiles(dir).log) ? readFileSync(jobFiles(dir).log, 'utf8') : '(no log)');

async function runJob(body: string, spec: Partial<SupervisorSpecInput> = {}, executable = true): Promise<{ status: EndedStatus; workDir: string; dir: string }> {
  const { dir, workDir } = prepareJob(body, spec, executable);
  launch(dir);
  return { status: await waitForEnd(dir), workDir, dir };
}

/** Like the agent: a process of its own (and its own process group) that launches the supervisor and stays up until killed. */
function launchFromAnotherProcess(dir: string): ChildProcess {
  const code = `import { launchSupervisor } from ${JSON.stringify(jobDirModule.href)};
    const launched = launchSupervisor(${JSON.stringify(dir)});
    process.stdout.write(JSON.stringify(launched) + '\\n');
    setInterval(() => undefined, 1000);`;
  const launcher = spawn(process.execPath, ['--input-type=module', '-e', code], { detached: true, stdio: ['ignore', 'pipe', 'inherit'] });
  launchers.push(launcher);
  launchedDirs.push(dir);
  return launcher;
}

async function killProcessGroup(launcher: ChildProcess): Promise<void> {
  const exited = new Promise((resolveExit) => launcher.once('exit', resolveExit));
  process.kill(-launcher.pid!, 'SIGKILL');
  await exited;
}

const signalsOf = (status: EndedStatus): string[] => status.signalsSent.map((s) => `${s.signal} ${s.why}`);
const seconds = (from: string, to: string): number => (Date.parse(to) - Date.parse(from)) / 1000;

describe('supervisor launcher (warm standby)', () => {
  it('hands jobs to a supervisor started ahead, replaces it, and lets the standby exit on close', async () => {
    const launcher = new SupervisorLauncher(join(root, 'standby.log'));
    const pids: number[] = [];
    try {
      for (const word of ['first', 'second']) {
        const { dir, workDir } = prepareJob(`echo ${word} from $(pwd)`);
        const launched = launcher.launch(dir);
        assert.ok(launched.ok, launched.ok ? '' : launched.error);
        launchedDirs.push(dir);
        launchedPids.push(launched.value);
        pids.push(launched.value);
        const status = await waitForEnd(dir);
        assert.equal(status.state, 'COMPLETED', readLog(dir));
        assert.equal(status.supervisorPid, launched.value, 'the pid returned is the supervisor that ran the job');
        assert.equal(readFileSync(join(workDir, 'out.txt'), 'utf8'), `${word} from ${workDir}\n`);
        assert.match(readLog(dir), /job \d+ ended: COMPLETED/, 'the standby logs into the job\'s supervisor.log once it has the job');
      }
      assert.notEqual(pids[0], pids[1], 'each job gets its own supervisor');
    } finally {
      const waiting = launcher.standbyPid;
      assert.ok(waiting !== null && isAlive(waiting), 'a standby waits for the next job');
      launchedPids.push(waiting);
      launcher.close();
      // The standby waiting for a third job reads end-of-file and exits.
      await waitUntil(() => !isAlive(waiting), 20_000);
      assert.equal(isAlive(waiting), false, 'the standby exits when its launcher closes');
    }
  });
});

describe('cgroup mode detection', () => {
  it('detects this machine\'s mode and says why', (t) => {
    const detection = detectCgroupMode();
    t.diagnostic(`mode ${detection.mode}: ${detection.reason}`);
    assert.ok(detection.reason.length > 0);
    assert.equal(detection.layout === null, detection.mode === 'rlimit');
  });

  /** A fake /proc/self/mountinfo and /proc/self/cgroup over a directory tree (with a space in its path). */
  function fakeSystem(mounts: string[], selfCgroup: string): { system: CgroupSystem; base: string } {
    const base = join(mkdtempSync(join(root, 'fake-')), 'sys fs');
    mkdirSync(base);
    for (const mount of mounts) mkdirSync(join(base, mount.split(' ')[0]!));
    const lines = mounts.map((m, i) => `${40 + i} 31 0:${38 + i} / ${join(base, m.split(' ')[0]!).replace(/ /g, '\\040')} rw - ${m.split(' ')[1]} cgroup rw${m.split(' ')[2] ?? ''}`);
    writeFileSync(join(base, 'mountinfo'), `${lines.join('\n')}\n`);
    writeFileSync(join(base, 'cgroup'), selfCgroup);
    return { system: { mountinfoPath: join(base, 'mountinfo'), selfCgroupPath: join(base, 'cgroup') }, base };
  }

  it('a hybrid system whose v2 hierarchy has no memory controller is not v2', () => {
    const { system, base } = fakeSystem(['unified cgroup2'], '0::/\n');
    writeFileSync(join(base, 'unified', 'cgroup.controllers'), 'hugetlb\n', { flag: 'w' });
    const probe = probeCgroupV2(null, system);
    assert.equal(probe.ok, false);
    assert.match(probe.reason, /memory controller is not available in .*sys fs\/unified \(cgroup.controllers: hugetlb; on a hybrid system it belongs to v1\)/);
  });

  it('a v2 cgroup without memory in cgroup.subtree_control names that file and the fix', () => {
    const { system, base } = fakeSystem(['v2 cgroup2'], '0::/agent.service\n');
    const agent = join(base, 'v2', 'agent.service');
    mkdirSync(agent, { recursive: true });
    writeFileSync(join(agent, 'cgroup.controllers'), 'cpu memory pids\n');
    writeFileSync(join(agent, 'cgroup.subtree_control'), 'cpu\n');
    const probe = probeCgroupV2(null, system);
    assert.equal(probe.ok, false);
    assert.match(probe.reason, /memory is not enabled in .*agent\.service\/cgroup\.subtree_control: delegate .*Delegate=yes.*cgroup_parent/);
    writeFileSync(join(agent, 'cgroup.subtree_control'), 'cpu memory\n');
    assert.match(probeCgroupV2(null, system).reason, /is not a cgroup directory \(a new group there has no memory.max\)/, 'a plain directory is no cgroup');
    assert.match(probeCgroupV2('/elsewhere', system).reason, /cgroup \/elsewhere is not visible under the v2 mount/);
  });

  it('with no cgroup mounted the mode is rlimit and the reason covers v2 and v1', () => {
    const { system } = fakeSystem([], '0::/\n');
    const detection = detectCgroupMode(null, system);
    assert.equal(detection.mode, 'rlimit');
    assert.equal(detection.reason, 'no writable cgroup (v2: no cgroup v2 hierarchy is mounted; v1: no cgroup v1 memory hierarchy is mounted); memory is limited with ulimit -v');
    assert.match(probeCgroupV1(null, fakeSystem(['memory cgroup ,memory'], '4:memory:/\n').system).reason, /sys fs\/memory is not a cgroup directory \(a new group there has no memory\.limit_in_bytes\)$/);
  });
});

describe('the job supervisor', { concurrency: true }, () => {
  it('a script exiting 0 is COMPLETED; output is appended; a non-executable script runs with /bin/sh', async () => {
    const { dir, workDir } = prepareJob('echo out line\necho err line >&2\nexit 0', {}, false);
    writeFileSync(join(workDir, 'out.txt'), 'kept\n');
    launch(dir);
    const status = await waitForEnd(dir);
    assert.equal(status.state, 'COMPLETED');
    assert.equal(status.exitCode, 0);
    assert.equal(status.signal, null);
    assert.equal(status.reason, null);
    assert.equal(readFileSync(join(workDir, 'out.txt'), 'utf8'), 'kept\nout line\n');
    assert.equal(readFileSync(join(workDir, 'err.txt'), 'utf8'), 'err line\n');
    assert.ok(Date.parse(status.endTime) >= Date.parse(status.startTime!));
    assert.ok(!existsSync(jobFiles(dir).socket), 'the control socket is removed at the end');
  });

  it('a script exiting 3 is FAILED with exit code 3', async () => {
    const { status } = await runJob('exit 3');
    assert.equal(status.state, 'FAILED');
    assert.equal(status.exitCode, 3);
    assert.equal(status.reason, 'exit code 3');
  });

  it('the job gets exactly the spec\'s environment, arguments and working directory', async () => {
    const { status, workDir } = await runJob('echo "$FOO|${HOME-unset}|$1|$2|$(pwd)"', { env: { ...jobEnv, FOO: 'bar baz' }, args: ['a b', 'c'] });
    assert.equal(status.state, 'COMPLETED');
    assert.equal(readFileSync(join(workDir, 'out.txt'), 'utf8'), `bar baz|unset|a b|c|${workDir}\n`);
  });

  it('time limit: the warning signal comes first, SIGTERM at the limit, and the job is TIMEOUT', async () => {
    const body = `trap 'echo warned >> marker' USR1\ntrap 'echo terminated >> marker; exit 0' TERM\nwhile :; do sleep 0.05; done`;
    // The warning 2 s in: by then the shell has set its traps, even on a loaded machine.
    const { status, workDir } = await runJob(body, { timeLimitSeconds: 4, warnBeforeSeconds: 2, killGraceSeconds: 5 });
    assert.equal(status.state, 'TIMEOUT');
    assert.equal(status.exitCode, 0, 'the script\'s own exit code is kept');
    assert.equal(status.reason, 'time limit of 4 s reached');
    assert.equal(readFileSync(join(workDir, 'marker'), 'utf8'), 'warned\nterminated\n');
    assert.deepEqual(signalsOf(status), ['SIGUSR1 warning', 'SIGTERM time limit']);
    const [warning, term] = status.signalsSent;
    assert.ok(Math.abs(seconds(status.startTime!, warning!.time) - 2) < 0.75, `warning at ${warning!.time}`);
    assert.ok(Math.abs(seconds(status.startTime!, term!.time) - 4) < 0.75, `SIGTERM at ${term!.time}`);
  });

  it('suspend and resume are idempotent (a request sent again is done), and the warning is sent once even when a resume comes after it', async () => {
    const body = `trap 'echo warned >> marker' USR1\ntrap 'exit 0' TERM\nwhile :; do sleep 0.05; done`;
    // Warned 2 s in, ended at 7 s: the four requests after the warning have 5 s, on a loaded machine too.
    const { dir, workDir } = prepareJob(body, { timeLimitSeconds: 7, warnBeforeSeconds: 5, killGraceSeconds: 5 });
    launch(dir);
    const running = await waitForRunning(dir);
    await waitUntil(() => existsSync(join(workDir, 'marker')), 20_000); // warned at 2 s
    assert.deepEqual(await requestSignal(dir, 'SIGSTOP', { suspend: true }), { ok: true, pid: running.pid });
    assert.deepEqual(await requestSignal(dir, 'SIGSTOP', { suspend: true }), { ok: true, pid: running.pid }, 'already suspended: done');
    assert.deepEqual(await requestSignal(dir, 'SIGCONT', { resume: true }), { ok: true, pid: running.pid });
    assert.deepEqual(await requestSignal(dir, 'SIGCONT', { resume: true }), { ok: true, pid: running.pid }, 'not suspended: done');
    const status = await waitForEnd(dir);
    assert.equal(status.state, 'TIMEOUT');
    assert.equal(readFileSync(join(workDir, 'marker'), 'utf8'), 'warned\n', 'one warning, not again after the resume');
    assert.deepEqual(signalsOf(status), ['SIGUSR1 warning', 'SIGSTOP suspend', 'SIGCONT resume', 'SIGTERM time limit']);
  });

  it('a new time limit (scontrol update) counts from the start: raised, the warning and SIGTERM move later; lowered past, TIMEOUT at once; suspended time is not counted', async () => {
    const body = `trap 'echo warned >> marker' USR1\ntrap 'exit 0' TERM\nwhile :; do sleep 0.05; done`;
    // Raised from 3 s to 6 s at once: warned at 4 s (2 s before), SIGTERM at 6 s, not at 1 and 3.
    const raised = prepareJob(body, { timeLimitSeconds: 3, warnBeforeSeconds: 2, killGraceSeconds: 5 });
    launch(raised.dir);
    const running = await waitForRunning(raised.dir);
    assert.deepEqual(await requestTimeLimit(raised.dir, 6), { ok: true, pid: running.pid });
    assert.deepEqual(await requestTimeLimit(raised.dir, 6), { ok: true, pid: running.pid }, 'the same limit again: done');
    assert.deepEqual(await requestTimeLimit(raised.dir, -1 as number), { ok: false, error: 'expected {"timeLimitSeconds": a positive number of seconds or null}, got {"timeLimitSeconds":-1}' });
    const status = await waitForEnd(raised.dir);
    assert.equal(status.state, 'TIMEOUT');
    assert.equal(status.reason, 'time limit of 6 s reached');
    assert.deepEqual(signalsOf(status), ['SIGUSR1 warning', 'SIGTERM time limit']);
    const [warning, term] = status.signalsSent;
    assert.ok(Math.abs(seconds(status.startTime!, warning!.time) - 4) < 0.75, `warning at ${warning!.time}`);
    assert.ok(Math.abs(seconds(status.startTime!, term!.time) - 6) < 0.75, `SIGTERM at ${term!.time}`);

    // 60 s, suspended 1 s, then lowered to 2 s when 2 s have passed (1 of them running): ends at 3 s, a second later.
    const lowered = prepareJob(body, { timeLimitSeconds: 60, killGraceSeconds: 5 });
    launch(lowered.dir);
    await waitForRunning(lowered.dir);
    assert.equal((await requestSignal(lowered.dir, 'SIGSTOP', { suspend: true })).ok, true);
    await new Promise((wait) => setTimeout(wait, 1000));
    assert.equal((await requestSignal(lowered.dir, 'SIGCONT', { resume: true })).ok, true);
    assert.equal((await requestTimeLimit(lowered.dir, 2)).ok, true);
    const ended = await waitForEnd(lowered.dir);
    assert.equal(ended.state, 'TIMEOUT');
    const at = seconds(ended.startTime!, ended.signalsSent.find((signal) => signal.why === 'time limit')!.time);
    assert.ok(at > 2.5 && at < 4.5, `SIGTERM at ${at} s: the 2 s limit plus the 1 s suspended`);

    // Already past its new limit: TIMEOUT at once; a job that has ended takes no new limit.
    const past = prepareJob(body, { timeLimitSeconds: 60, killGraceSeconds: 5 });
    launch(past.dir);
    await waitForRunning(past.dir);
    await new Promise((wait) => setTimeout(wait, 1500));
    const askedAt = Date.now();
    assert.equal((await requestTimeLimit(past.dir, 1)).ok, true);
    const over = await waitForEnd(past.dir);
    assert.deepEqual([over.state, over.reason], ['TIMEOUT', 'time limit of 1 s reached']);
    assert.ok(Date.parse(over.signalsSent.at(-1)!.time) - askedAt < 1000, 'SIGTERM at once');
    assert.equal((await requestTimeLimit(past.dir, 100)).ok, false);
  });

  it('a limit lowered into the warning\'s time sends the warning at once, as Slurm (its time passed: never sent before)', async () => {
    const body = `trap 'echo warned >> marker' USR1\ntrap 'exit 0' TERM\nwhile :; do sleep 0.05; done`;
    // --signal=USR1@10 with 60 s: lowered to 3 s, the warning is due 7 s before the start; sent now, SIGTERM at 3 s.
    const { dir, workDir } = prepareJob(body, { timeLimitSeconds: 60, warnBeforeSeconds: 10, killGraceSeconds: 5 });
    launch(dir);
    await waitForRunning(dir);
    const askedAt = Date.now();
    assert.equal((await requestTimeLimit(dir, 3)).ok, true);
    const status = await waitForEnd(dir);
    assert.equal(status.state, 'TIMEOUT');
    assert.deepEqual(signalsOf(status), ['SIGUSR1 warning', 'SIGTERM time limit']);
    assert.ok(Date.parse(status.signalsSent[0]!.time) - askedAt < 1000, 'the warning at once');
    assert.equal(readFileSync(join(workDir, 'marker'), 'utf8'), 'warned\n');
  });

  it('a new time limit for a job that checkpoints: its preemption signal a checkpoint duration before the new limit, SIGKILL at it; the periodic signal keeps its pace', async () => {
    const body = `trap 'echo periodic >> marker' USR1\ntrap 'echo last >> marker' USR2\nwhile :; do sleep 0.05; done`;
    const { dir, workDir } = prepareJob(body, { timeLimitSeconds: 60, killGraceSeconds: 5, checkpoint: { periodicSignal: 'SIGUSR1', preemptSignal: 'SIGUSR2', intervalSeconds: 2, durationSeconds: 1 } });
    launch(dir);
    await waitForRunning(dir);
    await waitUntil(() => existsSync(join(workDir, 'marker')), 20_000); // the first periodic signal, 2 s in
    assert.equal((await requestTimeLimit(dir, 6)).ok, true);
    const status = await waitForEnd(dir);
    assert.equal(status.state, 'TIMEOUT');
    assert.deepEqual(signalsOf(status), ['SIGUSR1 checkpoint', 'SIGUSR1 checkpoint', 'SIGUSR2 preempt', 'SIGKILL time limit']);
    const at = status.signalsSent.map((signal) => seconds(status.startTime!, signal.time));
    for (const [got, want] of at.map((time, i) => [time, [2, 4, 5, 6][i]!])) assert.ok(Math.abs(got - want) < 0.75, `signals at ${at.join(', ')} s, not 2, 4, 5, 6`);
    assert.equal(readFileSync(join(workDir, 'marker'), 'utf8'), 'periodic\nperiodic\nlast\n');
  });

  it('time limit: a script ignoring SIGTERM is SIGKILLed after the grace', async () => {
    const { status } = await runJob(`trap '' TERM\nwhile :; do sleep 0.05; done`, { timeLimitSeconds: 2, killGraceSeconds: 1 });
    assert.equal(status.state, 'TIMEOUT');
    assert.equal(status.exitCode, null);
    assert.equal(status.signal, 'SIGKILL');
    assert.deepEqual(signalsOf(status), ['SIGTERM time limit', 'SIGKILL kill grace']);
    const elapsed = seconds(status.startTime!, status.endTime);
    assert.ok(elapsed >= 2.9 && elapsed < 4.5, `ended ${elapsed} s after the start`);
  });

  it('a cancel through the control socket ends the job as CANCELLED; later requests say it has ended', async () => {
    const { dir } = prepareJob('sleep 30');
    launch(dir);
    const running = await waitForRunning(dir);
    assert.deepEqual(await requestSignal(dir, 'SIGTERM', { cancel: true, reason: 'cancelled by ada' }), { ok: true, pid: running.pid });
    const status = await waitForEnd(dir);
    assert.equal(status.state, 'CANCELLED');
    assert.equal(status.reason, 'cancelled by ada');
    assert.equal(status.signal, 'SIGTERM');
    assert.deepEqual(signalsOf(status), ['SIGTERM cancel']);
    assert.deepEqual(await requestSignal(dir, 'SIGTERM', { cancel: true }), { ok: false, error: 'the job has ended (CANCELLED)' });
  });

  it('SIGTERM to the supervisor (a node shutdown) cancels the job and records it', async () => {
    const { dir } = prepareJob('sleep 30');
    launch(dir);
    const running = await waitForRunning(dir);
    process.kill(running.supervisorPid, 'SIGTERM');
    const status = await waitForEnd(dir);
    assert.equal(status.state, 'CANCELLED');
    assert.equal(status.reason, 'the supervisor got SIGTERM (node shutdown?)');
    assert.deepEqual(signalsOf(status), ['SIGTERM cancel']);
  });

  it('a SIGTERM while the job is being started (a cancel before there is a control socket) is never lost: the job ends CANCELLED', async () => {
    const launcher = new SupervisorLauncher(join(root, 'standby-cancel.log'));
    try {
      // A standby still loading (Node's own handler would end it), one loaded that has not read its job yet,
      // through the start, to a job just running: the agent's cancel waits for the supervisor's title.
      for (const [waitMs, delayMs] of [[0, 0], [700, 0], [700, 5], [700, 20], [700, 60], [700, 120], [700, 250]]) {
        await new Promise((r) => setTimeout(r, waitMs)); // the next standby is loaded, or not
        const { dir } = prepareJob('sleep 30');
        const launched = launcher.launch(dir);
        assert.ok(launched.ok, launched.ok ? '' : launched.error);
        launchedDirs.push(dir);
        launchedPids.push(launched.value);
        if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
        assert.equal(await cancelStartingSupervisor(launched.value, processStartTicks(launched.value)), true);
        const status = await waitForEnd(dir);
        assert.equal(status.state, 'CANCELLED', `SIGTERM ${delayMs} ms after the launch: ${readLog(dir)}`);
        assert.match(status.reason ?? '', /SIGTERM/);
      }
      // Without a standby (started the slow way), cancelled at once.
      const { dir } = prepareJob('sleep 30');
      const pid = launch(dir);
      const ticks = processStartTicks(pid);
      assert.equal(takesStopSignals(pid), false, 'a supervisor just spawned is still loading');
      assert.equal(await cancelStartingSupervisor(pid, ticks), true);
      const status = await waitForEnd(dir);
      assert.equal(status.state, 'CANCELLED', readLog(dir));
      assert.match(status.reason ?? '', /cancelled \(the supervisor got SIGTERM\) before the job started|SIGTERM/);
      // A pid that is gone is not signalled (its supervisor may still be exiting when the status says ended).
      for (let tries = 0; tries < 500 && isAlive(pid, ticks); tries++) await new Promise((r) => setTimeout(r, 10));
      assert.equal(await cancelStartingSupervisor(pid, ticks, 200), false);
      assert.equal(await cancelStartingSupervisor(pid, null, 200), false, 'nor one whose start time is unknown');
    } finally {
      launcher.close();
    }
  });

  it('a supervisor says by its title when it takes stop signals: taras-sv standby, then taras-sv JOBDIR', async () => {
    const launcher = new SupervisorLauncher(join(root, 'standby-title.log'));
    try {
      const standby = launcher.standbyPid!;
      for (let tries = 0; tries < 2000 && !takesStopSignals(standby); tries++) await new Promise((r) => setTimeout(r, 10));
      assert.equal(readFileSync(`/proc/${standby}/comm`, 'utf8').trim(), 'taras-sv standby'.slice(0, 15));
      assert.match(readFileSync(`/proc/${standby}/cmdline`, 'utf8'), /^taras-sv standby/);
      const { dir } = prepareJob('sleep 30');
      const launched = launcher.launch(dir);
      assert.ok(launched.ok && launched.value === standby);
      launchedDirs.push(dir);
      launchedPids.push(standby);
      const running = await waitForRunning(dir);
      assert.equal(running.supervisorPid, standby);
      assert.ok(readFileSync(`/proc/${standby}/cmdline`, 'utf8').startsWith(`taras-sv ${dir}`));
      assert.deepEqual(await requestSignal(dir, 'SIGTERM', { cancel: true }), { ok: true, pid: running.pid });
      assert.equal((await waitForEnd(dir)).state, 'CANCELLED');
    } finally {
      launcher.close();
    }
  });

  it('a job on a terminal that reads no input: the supervisor stops reading the client past 64 KiB queued, and the job still ends on time', async () => {
    const interactive = { pty: true, cols: 80, rows: 24, graceSeconds: 30, idleSeconds: 0, warnSeconds: 0, bufferBytes: 1 << 20 };
    const { dir } = prepareJob('sleep 6', { interactive });
    launch(dir);
    let client: Socket | null = null;
    for (let tries = 0; tries < 400 && client === null; tries++) {
      client = await new Promise<Socket | null>((resolveConnect) => {
        const socket = createConnection(jobFiles(dir).stream);
        socket.once('connect', () => resolveConnect(socket));
        socket.once('error', () => resolveConnect(null));
      });
      if (client === null) await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(client !== null, `the session socket listens (log: ${readLog(dir)})`);
    let frames = '';
    client.setEncoding('utf8');
    client.on('data', (chunk: string) => (frames += chunk)); // the echo is read: only input may back up
    await waitForRunning(dir);
    const chunk = JSON.stringify({ t: 'in', d: Buffer.alloc(48 * 1024, 'a').toString('base64') }) + '\n';
    const chunks = 256; // 12 MiB of keys
    for (let i = 0; i < chunks; i++) client.write(chunk);
    await new Promise((r) => setTimeout(r, 1500));
    const unsent = client.writableLength;
    assert.ok(unsent > (chunks * chunk.length) / 2, `the supervisor stopped reading: ${unsent} of ${chunks * chunk.length} bytes still wait in the client`);
    const status = await waitForEnd(dir);
    assert.equal(status.state, 'COMPLETED', readLog(dir));
    for (let i = 0; i < 100 && !frames.includes('"t":"exit"'); i++) await new Promise((r) => setTimeout(r, 50));
    assert.match(frames, /"t":"exit","state":"COMPLETED"/, 'the end reaches the client');
    client.destroy();
  });

  it('the supervisor survives kill -9 of the launcher\'s process group and records the real exit code and end time', async () => {
    const { dir, workDir } = prepareJob('sleep 5\necho done\nexit 7');
    const launcher = launchFromAnotherProcess(dir);
    const running = await waitForRunning(dir);
    await killProcessGroup(launcher);
    const killedAt = Date.now();
    assert.ok(isAlive(running.supervisorPid, running.supervisorStartTicks), 'the supervisor outlives its launcher');
    const status = await waitForEnd(dir);
    assert.equal(status.state, 'FAILED');
    assert.equal(status.exitCode, 7);
    assert.ok(Date.parse(status.endTime) >= killedAt, 'the end was recorded after the launcher died');
    assert.equal(readFileSync(join(workDir, 'out.txt'), 'utf8'), 'done\n');
  });

  it('a restarted agent reads the status and signals the job through the socket', async () => {
    // The job says when its trap is set: RUNNING is written once the job is spawned, and a SIGUSR1 before the
    // shell has read its trap line ends it by the signal's default action (no exit code).
    const { dir, workDir } = prepareJob(`trap 'echo usr1 > marker; exit 5' USR1\n: > armed\nwhile :; do sleep 0.05; done`);
    const launcher = launchFromAnotherProcess(dir);
    await waitForRunning(dir);
    await waitUntil(() => existsSync(join(workDir, 'armed')), 20_000);
    assert.ok(existsSync(join(workDir, 'armed')), `the job set its trap (log: ${readLog(dir)})`);
    await killProcessGroup(launcher);
    // From here on this process plays the restarted agent: it never started the supervisor or the job.
    const seen = readStatus(dir);
    assert.equal(seen?.state, 'RUNNING');
    assert.ok(isAlive(seen.pid) && isAlive(seen.supervisorPid, seen.supervisorStartTicks));
    assert.deepEqual(await requestSignal(dir, 'SIGUSR1'), { ok: true, pid: seen.pid });
    const status = await waitForEnd(dir);
    assert.equal(status.state, 'FAILED', 'a plain signal is no cancel');
    assert.equal(status.exitCode, 5);
    assert.deepEqual(signalsOf(status), ['SIGUSR1 request']);
    assert.equal(readFileSync(join(workDir, 'marker'), 'utf8'), 'usr1\n');
  });

  it('a second supervisor for the same job directory refuses to start', async () => {
    const { dir } = await runJob('exit 0');
    const second = spawn(process.execPath, [fileURLToPath(supervisorModule), dir], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    second.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    // 'close', not 'exit': the exit can come before the last of stderr is read.
    const exitCode = await new Promise((resolveExit) => second.once('close', resolveExit));
    assert.equal(exitCode, 1);
    assert.match(stderr, /supervisor\.lock exists .*a supervisor already ran/);
    assert.equal(readStatus(dir)?.state, 'COMPLETED');
  });

  it('a bad spec or a missing working directory is FAILED with a reason naming the field', async () => {
    const rejected = prepareJobDir(join(root, 'bad'), { jobId: 0, script: 'x', args: [], workingDir: 'relative', env: {}, stdoutPath: 'o', stderrPath: 'e', memoryMiB: -1, timeLimitSeconds: null });
    assert.equal(rejected.ok, false);
    assert.match(rejected.ok ? '' : rejected.error, /field "jobId": expected a positive integer, got 0; field "workingDir": expected an absolute path, got "relative"; field "memoryMiB"/);
    const { dir } = prepareJob('exit 0');
    writeFileSync(jobFiles(dir).spec, JSON.stringify({ ...JSON.parse(readFileSync(jobFiles(dir).spec, 'utf8')), timeLimitSeconds: 'soon' }));
    launch(dir);
    const bad = await waitForEnd(dir);
    assert.equal(bad.state, 'FAILED');
    assert.equal(bad.pid, null);
    assert.match(bad.reason!, /spec\.json: field "timeLimitSeconds": expected a positive number of seconds or null, got "soon"/);
    const gone = prepareJob('exit 0', { workingDir: join(root, 'no-such-dir') });
    launch(gone.dir);
    assert.match((await waitForEnd(gone.dir)).reason!, /^working directory .*no-such-dir is not accessible to .* \(ENOENT: No such file or directory\)/);
  });

  it('rlimit mode: CPU time from the children\'s times, peak RSS sampled, and memory over ulimit -v fails the job (no OOM is detectable)', async () => {
    const body = 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done\nsleep 30 &\necho $! > background.pid\nx=$(head -c 200000000 /dev/zero | tr "\\0" a)\necho survived ${#x}';
    const { status, workDir } = await runJob(body, { cgroupMode: 'rlimit', memoryMiB: 64 });
    assert.equal(status.mode, 'rlimit');
    assert.equal(status.state, 'FAILED');
    assert.ok(status.exitCode !== 0, `exit ${status.exitCode} signal ${status.signal}`);
    assert.equal(readFileSync(join(workDir, 'out.txt'), 'utf8'), '', 'the allocation did not succeed');
    assert.ok(status.cpuSeconds !== null && status.cpuSeconds > 0.05, `cpuSeconds ${status.cpuSeconds}`);
    assert.ok(status.maxRssKiB !== null && status.maxRssKiB > 0, `maxRssKiB ${status.maxRssKiB}`);
    const background = Number(readFileSync(join(workDir, 'background.pid'), 'utf8'));
    // Killed at the end; its reaping (it is init's by then) may take a moment.
    await waitUntil(() => !isAlive(background), 2000);
    assert.ok(background > 0 && !isAlive(background), `the background sleep (pid ${background}) was killed at the end`);
  });

  for (const mode of ['v2', 'v1'] as const satisfies readonly CgroupMode[]) {
    const probe = mode === 'v2' ? probeCgroupV2(null) : probeCgroupV1(null);
    const skip = probe.ok ? false : `cgroup ${mode} is not available here: ${probe.reason}`;

    it(`cgroup ${mode}: memory over the limit is OUT_OF_MEMORY, and the cgroup is removed`, { skip }, async () => {
      const allocate = `const kept = []; for (;;) kept.push(Buffer.alloc(1 << 20, 1));`;
      const { status } = await runJob(`exec ${process.execPath} -e '${allocate}'`, { cgroupMode: mode, memoryMiB: 64 });
      assert.equal(status.mode, mode);
      assert.equal(status.state, 'OUT_OF_MEMORY');
      assert.equal(status.signal, 'SIGKILL');
      assert.match(status.reason!, /^memory limit of 64 MiB: \d+ process\(es\) killed by the OOM killer$/);
      assert.ok(status.maxRssKiB !== null && status.maxRssKiB > 32 * 1024 && status.maxRssKiB <= 64 * 1024, `maxRssKiB ${status.maxRssKiB}`);
      assert.ok(status.cgroup.length > 0 && status.cgroup.every((dir) => !existsSync(dir)), 'the job cgroup is gone');
    });

    it(`cgroup ${mode}: CPU time and peak memory are measured, and a process that left the session is killed at the end`, { skip }, async () => {
      const body = 'setsid sleep 30 &\necho $! > escaped.pid\ni=0; while [ $i -lt 200000 ]; do i=$((i+1)); done';
      const { status, workDir } = await runJob(body, { cgroupMode: mode, memoryMiB: 256 });
      assert.equal(status.state, 'COMPLETED');
      assert.ok(status.cpuSeconds !== null && status.cpuSeconds > 0.05, `cpuSeconds ${status.cpuSeconds}`);
      assert.ok(status.maxRssKiB !== null && status.maxRssKiB > 0, `maxRssKiB ${status.maxRssKiB}`);
      const escaped = Number(readFileSync(join(workDir, 'escaped.pid'), 'utf8'));
      assert.ok(escaped > 0 && !isAlive(escaped), `the setsid sleep (pid ${escaped}) is gone`);
      assert.ok(status.cgroup.every((dir) => !existsSync(dir)), 'the job cgroup is gone');
    });
  }
});
