// Checkpoints, preemption, requeue and suspend with real processes: `taras
// controller` and `taras agent --virtual` on loopback, and the checkpointing
// job of test/fixtures/checkpointer.sh, which counts steps, checkpoints on
// USR1 and on USR2 (then exits), and resumes from its checkpoint when started
// with -Restart. Every process started here is stopped by its PID.

import assert from 'node:assert/strict';
import { spawnSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { readStatus } from '../src/agent/jobdir.js';
import type { ApiJobWithEvents } from '../src/api/types.js';
import { clientAs } from './auth-helpers.js';
import { killHard, killJobProcesses, startDaemon } from './daemon-process.js';
import { eventually } from './poll.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const taras = join(root, 'bin/taras.js');
const work = mkdtempSync(join(tmpdir(), 'taras-ckpt-'));
const data = join(work, 'ckpt-data');
const agentData = join(data, 'agent');
const started: ChildProcess[] = [];
let url = '';

const CONFIG = `[cluster]
name = "ckpt"
policy = "easy"
data_dir = "ckpt-data"
kill_grace = "2s"
max_checkpoint_interval = "1h"
max_checkpoint_duration = "10m"

[[nodes]]
names = "node[01-04]"
cpus = 2
memory = "16G"

[[partitions]]
name = "batch"
nodes = "ALL"
default = true
preempt_mode = "requeue"
grace_time = "1s"

[[partitions]]
name = "urgent"
nodes = "node[01-02]"
priority = 10

[[program_class]]
name = "script"
periodic_signal = "USR1"
preempt_signal = "USR2"
restart = "arg"
`;

before(async () => {
  writeFileSync(join(work, 'cluster.toml'), CONFIG);
  copyFileSync(join(root, 'test/fixtures/checkpointer.sh'), join(work, 'checkpointer.sh'));
  const controller = await startDaemon(taras, started, ['controller', '--config', join(work, 'cluster.toml'), '--port', '0'], /listening on (http:\/\/127\.0\.0\.1:\d+)/, work);
  url = controller.match[1];
  await startDaemon(taras, started, ['agent', '--controller', url, '--virtual', '4x2', '--data', agentData, '--key', join(data, 'cluster.key')], /registered 4 node/, work);
});

after(async () => {
  for (const child of [...started].reverse()) await killHard(child);
  killJobProcesses([agentData]);
  rmSync(work, { recursive: true, force: true });
});

const { TARAS_CONTROLLER: _controller, ...withoutController } = process.env;

function cli(args: string[], env: Record<string, string> = {}) {
  const run = spawnSync(process.execPath, [taras, ...((args)[0] === 'submit' ? ['submit', '--controller', url, ...(args).slice(1)] : [...args, '--controller', url])], {
    // No TARAS_CONTROLLER: `taras checkpointed` inside a job finds the controller through the one the agent sets.
    cwd: work, encoding: 'utf8', timeout: 30_000, env: { ...withoutController, TARAS_BIN: taras, ...env },
  });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

function submit(args: string[], env: Record<string, string> = {}): number {
  const run = cli(['submit', '--json', ...args], env);
  assert.equal(run.code, 0, run.stderr);
  return (JSON.parse(run.stdout) as { id: number }).id;
}

const show = (id: number): ApiJobWithEvents => JSON.parse(cli(['show', String(id), '--json']).stdout) as ApiJobWithEvents;
const output = (id: number): string => (existsSync(join(work, `taras-${id}.out`)) ? readFileSync(join(work, `taras-${id}.out`), 'utf8') : '');
const progress = (id: number): number => {
  const file = join(work, `ckpt-${id}.progress`);
  return existsSync(file) ? Number(readFileSync(file, 'utf8').trim() || 0) : 0;
};

const until = <T>(what: string, probe: () => T | undefined | false, ms = 20_000): Promise<T> => eventually(what, probe, ms);

const finished = (id: number) => until(`job ${id} to end`, () => {
  const job = show(id);
  return ['COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT', 'NODE_FAIL', 'OUT_OF_MEMORY', 'PREEMPTED'].includes(job.state) ? job : undefined;
}, 40_000);

/** CPU ticks (utime + stime) of a process from /proc. */
function cpuTicks(pid: number): number {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

describe('checkpointing jobs', () => {
  it('refuses checkpoint requests the cluster cannot honour, naming the fix', () => {
    const unknownClass = cli(['submit', '-t', '1', '--checkpoint-duration', '0:05', '--program-class', 'mpi', 'checkpointer.sh']);
    assert.equal(unknownClass.code, 2, unknownClass.stdout);
    assert.match(unknownClass.stderr, /no program class 'mpi' in this cluster: use one of script/);
    const tooLong = cli(['submit', '-t', '2:00:00', '--checkpoint-duration', '20', 'checkpointer.sh']);
    assert.match(tooLong.stderr, /--checkpoint-duration of 1200 s is longer than this cluster's max_checkpoint_duration \(600 s\)/);
    const noDuration = cli(['submit', '-t', '1', '--checkpoint-interval', '0:05', 'checkpointer.sh']);
    assert.match(noDuration.stderr, /--checkpoint-interval needs --checkpoint-duration TIME too/);
  });

  it('sends the periodic signal every interval; a requeued job restarts from its checkpoint with -Restart, output appended, id and history kept', async () => {
    const id = submit(['-t', '1', '--checkpoint-interval', '0:01', '--checkpoint-duration', '0:05', 'checkpointer.sh'], { STEPS: '70' });
    await until('three periodic checkpoints', () => (output(id).match(/checkpoint periodic/g)?.length ?? 0) >= 3);
    const times = [...output(id).matchAll(/checkpoint periodic at \d+ ([\d.]+)/g)].map((m) => Number(m[1]));
    for (let i = 1; i < times.length; i++) {
      const gap = times[i] - times[i - 1];
      assert.ok(gap > 0.5 && gap < 2, `periodic signals ${gap.toFixed(2)} s apart, expected about 1 s: ${times.join(', ')}`);
    }
    const before = progress(id);
    assert.ok(before >= 10, `progress ${before}`);
    const requeued = cli(['requeue', String(id)]);
    assert.equal(requeued.code, 0, requeued.stderr);
    assert.match(requeued.stdout, new RegExp(`job ${id}: being requeued; its nodes are free within 5 s`));
    const job = await finished(id);
    assert.equal(job.state, 'COMPLETED', JSON.stringify(job));
    const text = output(id);
    const final = /checkpoint final at (\d+)/.exec(text);
    assert.ok(final, text);
    const saved = Number(final[1]);
    assert.ok(saved >= before, `checkpointed at ${saved}, had reached ${before} before the requeue`);
    // Appended, never truncated: the first run's lines are still there, then the restart from the checkpoint.
    assert.match(text, /^fresh start \(run 0\)\n/);
    assert.match(text, new RegExp(`\\nrestart from ${saved} \\(run 1\\)\\n`));
    assert.match(text, /\ndone at 70\n$/);
    assert.equal(job.id, id);
    assert.equal(job.restarts, 1);
    const types = job.events.map((e) => e.type);
    assert.deepEqual(types.filter((t) => ['started', 'requeued', 'ended'].includes(t)), ['started', 'requeued', 'started', 'ended']);
    const requeue = job.events.find((e) => e.type === 'requeued')!;
    assert.equal(requeue.detail.reason, 'requeued by root');
    assert.ok((job.checkpoints ?? []).length >= 1, 'the checkpoint made on exit is recorded');
    assert.ok(job.events.some((e) => e.type === 'checkpointed' && e.detail.by === 'exit'));
    assert.match(cli(['show', String(id)]).stdout, /Checkpoints: +every 1 second, each at most 5 seconds \(class script\)/);
  });

  it('at its limit a job gets the preemption signal a checkpoint duration early, and is killed at the limit if it ignores it', async () => {
    const polite = submit(['-t', '0:06', '--checkpoint-duration', '0:02', 'checkpointer.sh'], { STEPS: '1000' });
    const stubborn = submit(['-t', '0:04', '--checkpoint-duration', '0:02', 'checkpointer.sh'], { STEPS: '1000', IGNORE_PREEMPT: '1' });
    const [a, b] = [await finished(polite), await finished(stubborn)];
    assert.equal(a.state, 'TIMEOUT');
    const ranA = (Date.parse(a.endTime!) - Date.parse(a.startTime!)) / 1000;
    assert.ok(ranA > 3.5 && ranA < 6.5, `the polite job exited after ${ranA} s: its signal came 2 s before the 6 s limit`);
    assert.match(output(polite), /checkpoint final at \d+/);
    assert.ok(a.events.some((e) => e.type === 'checkpointed'));
    assert.equal(b.state, 'TIMEOUT');
    const ranB = (Date.parse(b.endTime!) - Date.parse(b.startTime!)) / 1000;
    assert.ok(ranB > 3.7 && ranB < 6.5, `the stubborn job was killed after ${ranB} s (limit 4 s)`);
    assert.match(output(stubborn), /ignoring the preemption signal/);
    assert.ok(!b.events.some((e) => e.type === 'checkpointed'), 'killed, so no checkpoint');
  });

  it('taras checkpointed records a checkpoint from inside the job; another user cannot requeue, suspend or checkpoint the job', async () => {
    const id = submit(['-t', '1', '--checkpoint-interval', '0:01', '--checkpoint-duration', '0:03', 'checkpointer.sh'], { STEPS: '40', REPORT: '1' });
    const recorded = await until('a checkpoint reported by the job', () => {
      const job = show(id);
      return job.events.some((e) => e.type === 'checkpointed' && e.detail.by === 'job') ? job : undefined;
    });
    assert.equal(recorded.checkpoints!.length >= 1, true);
    assert.match(cli(['show', String(id)]).stdout, /Last checkpoint: .*\(\d+ checkpoints? in all\)/);

    const { parseClusterConfig } = await import('../src/config/cluster.js');
    const parsed = parseClusterConfig(CONFIG, join(work, 'cluster.toml'));
    assert.ok(parsed.ok);
    const mallory = await clientAs(url, parsed.config, 'nobody');
    for (const action of ['requeue', 'checkpointed']) {
      await assert.rejects(mallory.post(`/jobs/${id}/${action}`, {}), (error: { status: number; error: string }) => {
        assert.equal(error.status, 403, `${action}: ${error.error}`);
        assert.match(error.error, /belongs to root/);
        return true;
      });
    }
    for (const action of ['suspend', 'resume']) {
      await assert.rejects(mallory.post(`/jobs/${id}/${action}`, {}), (error: { status: number; error: string }) => {
        assert.equal(error.status, 403);
        assert.match(error.error, /only administrators may/);
        return true;
      });
    }
    mallory.close();
    const job = await finished(id);
    assert.equal(job.state, 'COMPLETED');
    assert.equal(job.restarts, 0, 'nobody requeued it');
  });

  it('suspend stops every process of the job (no CPU used) and resume continues it; the limit moves later by the time suspended', async () => {
    writeFileSync(join(work, 'burn.sh'), '#!/bin/sh\nwhile :; do :; done\n');
    const id = submit(['-t', '0:04', 'burn.sh']);
    const status = await until('the burner to run', () => {
      const s = readStatus(join(agentData, 'jobs', `${id}.0`));
      return s?.state === 'RUNNING' ? s : undefined;
    });
    await sleep(500);
    const suspended = cli(['suspend', String(id)]);
    assert.equal(suspended.code, 0, suspended.stderr);
    assert.equal(show(id).state, 'SUSPENDED');
    // The agent stops the job after the controller has answered: wait for the stop, then watch it use nothing.
    await until('the burner to stop', () => /\) T /.test(readFileSync(`/proc/${status.pid}/stat`, 'utf8')), 5000);
    const stopped = cpuTicks(status.pid);
    await sleep(2500);
    assert.equal(cpuTicks(status.pid), stopped, 'no CPU used while suspended');
    assert.match(readFileSync(`/proc/${status.pid}/stat`, 'utf8'), /\) T /, 'stopped (state T)');
    const resumed = cli(['resume', String(id)]);
    assert.equal(resumed.code, 0, resumed.stderr);
    await until('the burner to use CPU again', () => cpuTicks(status.pid) > stopped + 20, 5000);
    // The limit moves by the time the controller counted as suspended, from its events (CLI starts included).
    const moved = show(id);
    const at = (type: string): number => Date.parse(moved.events.find((e) => e.type === type)!.time);
    const suspendedFor = (at('resumed') - at('suspended')) / 1000;
    assert.ok(suspendedFor >= 2.5, `suspended for ${suspendedFor} s`);
    const endsAfter = (Date.parse(moved.predictedEnd!) - Date.parse(moved.startTime!)) / 1000;
    assert.ok(Math.abs(endsAfter - (4 + suspendedFor)) <= 1.5, `its predicted end is ${endsAfter} s after its start: the 4 s limit plus the ${suspendedFor} s suspended`);
    const job = await finished(id);
    assert.equal(job.state, 'TIMEOUT');
    const ran = (Date.parse(job.endTime!) - Date.parse(job.startTime!)) / 1000;
    assert.ok(ran > 4 + suspendedFor - 0.7 && ran < 4 + suspendedFor + 2.5, `ran ${ran} s: a 4 s limit plus ${suspendedFor} s suspended`);
    assert.deepEqual(job.events.map((e) => e.type).filter((t) => t === 'suspended' || t === 'resumed'), ['suspended', 'resumed']);
  });

  it('a job of a higher-priority partition preempts the most recently started job on its nodes, which restarts from its checkpoint', async () => {
    // The jobs that must still run when the urgent one comes wait for the gate (at most a minute), which
    // is opened once it has run: on a slow machine, fixed sleeps could end before the CLI calls between.
    const gate = join(work, 'preempt.gate');
    writeFileSync(join(work, 'sleeper.sh'), `#!/bin/sh\ni=0\nwhile [ ! -e ${gate} ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done\necho slept\n`);
    writeFileSync(join(work, 'urgent.sh'), '#!/bin/sh\necho "urgent on $TARAS_NODELIST"\nsleep 1\n');
    const older = submit(['-t', '1', '-c', '2', 'sleeper.sh']);
    await until('the older job to run', () => show(older).state === 'RUNNING');
    await sleep(1100); // a later start, in whole seconds
    const newer = submit(['-t', '1', '-c', '2', '--checkpoint-duration', '0:03', 'checkpointer.sh'], { STEPS: '50', GATE: gate, GATE_AT: '10' });
    await until('the newer job to run', () => show(newer).state === 'RUNNING' && progress(newer) >= 5);
    const elsewhere = submit(['-t', '1', '-N', '2', '-c', '2', 'sleeper.sh']); // node03-04: outside partition urgent
    await until('the wide job to run', () => show(elsewhere).state === 'RUNNING');
    assert.deepEqual([show(older).nodes, show(newer).nodes, show(elsewhere).nodes], [['node01'], ['node02'], ['node03', 'node04']]);

    const urgent = submit(['-t', '1', '-p', 'urgent', '-c', '2', 'urgent.sh']);
    const done = await finished(urgent);
    assert.equal(done.state, 'COMPLETED');
    assert.equal(output(urgent), 'urgent on node02\n');
    writeFileSync(gate, '');
    const victim = await finished(newer);
    assert.equal(victim.state, 'COMPLETED');
    assert.equal(victim.restarts, 1);
    const requeued = victim.events.find((e) => e.type === 'requeued')!;
    assert.match(String(requeued.detail.reason), new RegExp(`preempted: preempted by job ${urgent} of partition urgent \\(priority 10\\)`));
    assert.match(output(newer), /\nrestart from [1-9]\d* \(run 1\)\n/);
    assert.match(output(newer), /\ndone at 50\n$/);
    for (const untouched of [older, elsewhere]) {
      const job = await finished(untouched);
      assert.deepEqual([job.state, job.restarts], ['COMPLETED', 0], `job ${untouched} was not preempted`);
    }
  });

  it('shutdown --mode checkpoint checkpoints and requeues running jobs; they restart from their checkpoints at the next start', async () => {
    const gate = join(work, 'shutdown.gate');
    const id = submit(['-t', '1', '--checkpoint-duration', '0:03', 'checkpointer.sh'], { STEPS: '50', GATE: gate, GATE_AT: '10' });
    await until('the job to make progress', () => show(id).state === 'RUNNING' && progress(id) >= 10);
    const shutdown = cli(['admin', 'shutdown', '--mode', 'checkpoint']);
    assert.equal(shutdown.code, 0, shutdown.stderr);
    assert.match(shutdown.stdout, /is shutting down; 1 running job\(s\) are being checkpointed and requeued first \(at most 3 s\); they restart at its next start\./);
    const controller = started[0];
    await until('the controller to exit', () => controller.exitCode !== null || controller.signalCode !== null, 15_000);
    assert.match(output(id), /checkpoint final at \d+/);
    const saved = Number(/checkpoint final at (\d+)/.exec(output(id))![1]);
    writeFileSync(gate, '');
    const port = new URL(url).port;
    await startDaemon(taras, started, ['controller', '--config', join(work, 'cluster.toml'), '--port', port], /listening on/, work);
    const job = await finished(id);
    assert.equal(job.state, 'COMPLETED');
    assert.match(output(id), new RegExp(`\\nrestart from ${saved} \\(run 1\\)\\n`));
    assert.match(String(job.events.find((e) => e.type === 'requeued')!.detail.reason), /the controller is shutting down/);
  });
});
