// scontrol update TimeLimit= of running jobs with a real controller, agent and
// supervisors (src/controller/engine.ts checkedUpdate, the agent's signed
// POST /limit, src/agent/supervisor.ts setTimeLimit): a user lowers the limit of
// their running job and it ends TIMEOUT at the new limit; raising it is refused
// and changes nothing; root raises it and the job runs past the old limit; a
// change made while the agent is down, and the controller restarted, reaches
// the job once the agent is back. Every process is stopped by the PID started.

import assert from 'node:assert/strict';
import { spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runAs } from './auth-helpers.js';
import { killHard, killJobProcesses, startDaemon, type Daemon } from './daemon-process.js';
import { eventually } from './poll.js';
import { createTestUser, notRootReason, removeTestUsers, type TestUser } from './unix-users.js';

const taras = join(resolve(dirname(fileURLToPath(import.meta.url)), '../..'), 'bin/taras.js');
const work = mkdtempSync(join(tmpdir(), 'taras-update-limit-'));
const data = join(work, 'data');
const agentData = join(work, 'agent');
const configFile = join(work, 'cluster.toml');
const socket = `unix:${join(data, 'taras.sock')}`;
const started: ChildProcess[] = [];
const LISTENING = /listening on (http:\/\/127\.0\.0\.1:\d+)/;
let alice: TestUser | undefined;

after(async () => {
  for (const child of started) await killHard(child);
  killJobProcesses([agentData]);
  if (!notRootReason) removeTestUsers();
  rmSync(work, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
});

interface Job { id: number; state: string; reason: string | null; timeLimitSeconds: number | null; startTime: string | null; endTime: string | null; predictedEnd: string | null }

/** `taras ARGS` (or bin/scontrol's `--slurm-command scontrol ARGS`) as root through the controller's socket. */
const cli = (...args: string[]) => spawnSync(process.execPath, [taras, ...args, '--controller', socket], { cwd: work, encoding: 'utf8', timeout: 30_000 });
const scontrol = (...args: string[]) => cli('--slurm-command', 'scontrol', ...args);
const show = (id: number): Job => JSON.parse(cli('show', String(id), '--json').stdout) as Job;
const runSeconds = (job: Job): number => (Date.parse(job.endTime!) - Date.parse(job.startTime!)) / 1000;

function submit(...args: string[]): number {
  const run = spawnSync(process.execPath, [taras, 'submit', '--controller', socket, '--json', ...args], { cwd: work, encoding: 'utf8', timeout: 30_000 });
  assert.equal(run.status, 0, run.stderr);
  return (JSON.parse(run.stdout) as { id: number }).id;
}

const controller = (): Promise<Daemon> => startDaemon(taras, started, ['controller', '--config', configFile, '--port', '0'], LISTENING, work);
const agent = (url: string): Promise<Daemon> => startDaemon(taras, started, ['agent', '--controller', url, '--nodes', 'node1', '--data', agentData, '--key', join(data, 'cluster.key')], /registered 1 node/, work);
const running = (id: number): Promise<Job> => eventually(`job ${id} runs`, () => {
  const job = show(id);
  return job.state === 'RUNNING' ? job : undefined;
}, 20_000, 100);
const ended = (id: number, ms = 30_000): Promise<Job> => eventually(`job ${id} ends`, () => {
  const job = show(id);
  return job.endTime !== null && !['RUNNING', 'COMPLETING', 'SUSPENDED'].includes(job.state) ? job : undefined;
}, ms, 100);

describe('scontrol update TimeLimit= of a running job, end to end', () => {
  let current: { controller: Daemon; agent: Daemon };

  before(async () => {
    writeFileSync(configFile, [
      '[cluster]', 'name = "limits"', 'policy = "easy"', 'data_dir = "data"', 'node_timeout = "60s"', 'warn_before_limit = "0s"', 'kill_grace = "1s"',
      '[[nodes]]', 'names = "node1"', 'cpus = 2', 'memory = "1G"',
      '[[partitions]]', 'name = "batch"', 'nodes = "ALL"', 'default = true', '',
    ].join('\n'));
    writeFileSync(join(work, 'long.sh'), '#!/bin/sh\nsleep 60\n');
    writeFileSync(join(work, 'twelve.sh'), '#!/bin/sh\nsleep 12\necho done\n');
    const first = await controller();
    current = { controller: first, agent: await agent(first.match[1]) };
  });

  it('a user lowers the limit of their running job and it ends TIMEOUT at the new limit; raising it is refused and nothing changes', { skip: notRootReason, timeout: 90_000 }, async () => {
    alice = createTestUser('limit');
    for (const path of [work, data]) chmodSync(path, 0o711);
    const script = join(alice.home, 'long.sh');
    writeFileSync(script, '#!/bin/sh\nsleep 60\n');
    chownSync(script, alice.uid, alice.gid);
    const as = (...args: string[]) => runAs(alice!, [taras, ...args]);
    const submitted = await as('submit', '--controller', socket, '--json', '-t', '1', '-n', '1', 'long.sh');
    assert.equal(submitted.status, 0, submitted.stderr);
    const id = (JSON.parse(submitted.stdout) as { id: number }).id;
    await running(id);

    const raised = await as('--slurm-command', 'scontrol', 'update', `JobId=${id}`, 'TimeLimit=10', '--controller', socket);
    assert.equal(raised.status, 1);
    assert.equal(raised.stderr, `scontrol: error: job ${id} is RUNNING: only an administrator can raise its time limit (it is 60 s); give a lower one, or ask an administrator\n`);
    const stepped = await as('--slurm-command', 'scontrol', 'update', `JobId=${id}`, 'TimeLimit=+1', '--controller', socket);
    assert.equal(stepped.status, 1);
    assert.match(stepped.stderr, /only an administrator can raise its time limit \(it is 60 s\)/);
    assert.equal(show(id).timeLimitSeconds, 60, 'nothing changed');
    assert.equal(show(id).state, 'RUNNING');

    const lowered = await as('--slurm-command', 'scontrol', 'update', `JobId=${id}`, 'TimeLimit=0:06', '--controller', socket);
    assert.deepEqual([lowered.status, lowered.stdout, lowered.stderr], [0, '', '']);
    assert.equal(show(id).timeLimitSeconds, 6);
    const job = await ended(id);
    assert.equal(job.state, 'TIMEOUT');
    assert.equal(job.timeLimitSeconds, 6);
    const ran = runSeconds(job);
    assert.ok(ran >= 5 && ran < 12, `ran ${ran} s: ended at the new 6 s limit (kill_grace 1 s), not the old 60 s`);
  });

  it('root raises the limit of a running job and it runs past the old one; lowered below the time it has run, it ends TIMEOUT at once', { timeout: 90_000 }, async () => {
    const id = submit('-t', '0:06', '-n', '1', 'twelve.sh');
    await running(id);
    const raised = scontrol('update', `JobId=${id}`, 'TimeLimit=+0:30');
    assert.deepEqual([raised.status, raised.stderr], [0, '']);
    const now = show(id);
    assert.equal(now.timeLimitSeconds, 36);
    assert.equal(Date.parse(now.predictedEnd!) - Date.parse(now.startTime!), 36_000, 'its predicted end follows the new limit');
    // The plan follows it: a job that needs the whole node is planned at that end.
    const waiting = submit('-t', '1', '-n', '2', 'long.sh');
    const when = await eventually('planned', () => {
      const answer = JSON.parse(cli('when', String(waiting), '--json').stdout) as { plannedStart: string | null };
      return answer.plannedStart ?? undefined;
    }, 10_000, 100);
    assert.ok(Math.abs(Date.parse(when) - Date.parse(now.predictedEnd!)) <= 1000, `planned at ${when}, the raised job's end ${now.predictedEnd}`);
    assert.equal(cli('cancel', String(waiting)).status, 0);
    const job = await ended(id);
    assert.equal(job.state, 'COMPLETED', `ran to its end: ${JSON.stringify(job)}`);
    assert.ok(runSeconds(job) >= 11, `ran ${runSeconds(job)} s, past the old 6 s limit`);

    const late = submit('-t', '1', '-n', '1', 'long.sh');
    const start = Date.parse((await running(late)).startTime!);
    // The agent takes a limit from the controller only (signed with the cluster key): an unsigned order is refused.
    const agentUrl = /listening on (http:\/\/[\d.:]+)/.exec(current.agent.log())![1];
    const unsigned = await fetch(`${agentUrl}/limit`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jobId: late, timeLimitSeconds: 1 }) });
    assert.equal(unsigned.status, 401);
    assert.match(await unsigned.text(), /missing signature/);
    await eventually('3 s of running', () => Date.now() - start >= 3000, 10_000, 100);
    const askedAt = Date.now();
    assert.equal(scontrol('update', `JobId=${late}`, 'TimeLimit=0:01').status, 0);
    const over = await ended(late);
    assert.equal(over.state, 'TIMEOUT');
    assert.ok(Date.parse(over.endTime!) >= askedAt - 500, 'ended by the update, not by the unsigned order');
    assert.ok(Date.parse(over.endTime!) - askedAt < 5000, `ended ${Date.parse(over.endTime!) - askedAt} ms after the update: at once (kill_grace 1 s)`);
  });

  it('a change made while the agent is down survives a controller restart and reaches the job when the agent is back', { timeout: 90_000 }, async () => {
    const id = submit('-t', '1', '-n', '1', 'long.sh');
    const start = Date.parse((await running(id)).startTime!);
    await killHard(current.agent.child); // the job's supervisor runs on
    const lowered = scontrol('update', `JobId=${id}`, 'TimeLimit=0:10');
    assert.deepEqual([lowered.status, lowered.stderr], [0, ''], 'stored; the agent gets it when it can');
    await killHard(current.controller.child);
    const restarted = await controller();
    assert.equal(show(id).timeLimitSeconds, 10, 'the stored limit, after the restart');
    assert.equal(show(id).state, 'RUNNING');
    current = { controller: restarted, agent: await agent(restarted.match[1]) };
    const job = await ended(id);
    assert.equal(job.state, 'TIMEOUT');
    const ran = (Date.parse(job.endTime!) - start) / 1000;
    assert.ok(ran < 30, `ended ${ran} s after its start: the new 10 s limit (or at once if the agent came back later), not the old 60 s`);
  });
});
