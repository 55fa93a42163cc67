// Crash safety with real processes on loopback (issue 4, "Crash safety"): a
// submission storm while the controller is killed with SIGKILL again and
// again; an agent killed with SIGKILL while its job runs; an agent that stays
// silent past node_timeout. Every process started here is stopped by its PID,
// and job processes left behind are stopped by the pids in their status.json.

import assert from 'node:assert/strict';
import { spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { killHard, killJobProcesses, running, startDaemon, type Daemon } from './daemon-process.js';
import type { ApiJobWithEvents, ApiNode } from '../src/api/types.js';
import { isAlive, readStatus, type RunningStatus } from '../src/agent/jobdir.js';
import { SeededRandom } from '../src/core/random.js';
import type { JobSpec } from '../src/jobspec/types.js';
import { ApiRequestError, ControllerUnreachableError, createApiClient } from '../src/net/client.js';
import { openStore } from '../src/store/store.js';
import { eventually } from './poll.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const taras = join(root, 'bin/taras.js');
const work = mkdtempSync(join(tmpdir(), 'taras-crash-'));
const started: ChildProcess[] = [];
/** Agent data directories: the status.json of each job in them names the processes to stop at the end. */
const agentDirs: string[] = [];
const LISTENING = /listening on (http:\/\/127\.0\.0\.1:(\d+))/;

const sleep = (ms: number) => new Promise((resolveSleep) => setTimeout(resolveSleep, ms));

after(async () => {
  for (const child of started) if (running(child)) child.kill('SIGKILL');
  killJobProcesses(agentDirs);
  await sleep(200);
  rmSync(work, { recursive: true, force: true });
});

const daemon = (args: readonly string[], ready: RegExp, cwd: string): Promise<Daemon> => startDaemon(taras, started, args, ready, cwd);

function cli(cwd: string, url: string, ...args: string[]) {
  const run = spawnSync(process.execPath, [taras, ...((args)[0] === 'submit' ? ['submit', '--controller', url, ...(args).slice(1)] : [...args, '--controller', url])], { cwd, encoding: 'utf8', timeout: 30_000 });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

const show = (cwd: string, url: string, id: number): ApiJobWithEvents => {
  const shown = cli(cwd, url, 'show', String(id), '--json');
  assert.equal(shown.code, 0, shown.stderr);
  return JSON.parse(shown.stdout) as ApiJobWithEvents;
};

const submit = (cwd: string, url: string, ...args: string[]): number => {
  const submitted = cli(cwd, url, 'submit', '--json', ...args);
  assert.equal(submitted.code, 0, submitted.stderr);
  return (JSON.parse(submitted.stdout) as { id: number }).id;
};

describe('crash safety with real processes', () => {
  it('a submission storm with random kill -9 of the controller loses and duplicates no acknowledged job', async (t) => {
    const dir = join(work, 'storm');
    const data = join(dir, 'data');
    mkdirSync(dir, { recursive: true });
    const seed = Number(process.env.TARAS_CRASH_SEED ?? 20261122);
    const random = new SeededRandom(seed);
    t.diagnostic(`seed ${seed} (set TARAS_CRASH_SEED to replay another)`);

    let controller = await daemon(['controller', '--data', data, '--port', '0'], LISTENING, dir);
    const url = controller.match[1];
    const port = controller.match[2];
    // One virtual node of 2 CPUs, so that some jobs run (and are adopted across restarts) while most wait.
    agentDirs.push(join(data, 'agent'));
    const agent = await daemon(['agent', '--controller', url, '--virtual', '1x2', '--data', join(data, 'agent'), '--key', join(data, 'cluster.key')],
      /registered 1 node/, dir);

    // Each submission carries a tag (its name) sent once: a tag in the store was sent by us, and at most once.
    const spec = (tag: string): JobSpec => ({
      script: { path: join(dir, 'storm.sh'), text: '#!/bin/sh\nsleep 0.2\n', args: [] },
      nodes: { min: 1 }, cpusPerTask: 1, timeLimitSeconds: 60, name: tag, workingDir: dir, output: '/dev/null',
      export: { all: false, variables: [] }, requeue: false,
    });
    const sent = new Set<string>();
    const acknowledged: { tag: string; id: number }[] = [];
    const answeredWithError: string[] = [];
    let unanswered = 0;
    let stormOver = false;
    const SUBMITTERS = 6;
    const MAX_PER_SUBMITTER = 3000; // bounds the store's size whatever the machine's speed

    const submitter = async (index: number) => {
      // Root through the controller's socket: the kernel vouches for the submitter.
      const api = createApiClient({ socketPath: join(data, 'taras.sock') }, { timeoutMs: 5000 });
      try {
        for (let n = 0; !stormOver && n < MAX_PER_SUBMITTER; n++) {
          const tag = `storm-${index}-${n}`;
          sent.add(tag);
          try {
            const { id } = await api.post<{ id: number }>('/jobs', { spec: spec(tag) });
            acknowledged.push({ tag, id });
          } catch (error) {
            if (error instanceof ApiRequestError) answeredWithError.push(`${tag}: ${error.status} ${error.error}`);
            else if (!(error instanceof ControllerUnreachableError)) throw error;
            unanswered++;
            await sleep(20); // not acknowledged: the controller is down or going; try the next tag
          }
        }
      } finally {
        api.close();
      }
    };
    const submitters = Array.from({ length: SUBMITTERS }, (_, index) => submitter(index));

    const KILLS = 4;
    const restartsMs: number[] = [];
    for (let kill = 0; kill < KILLS; kill++) {
      await sleep(random.uniform(700, 1800));
      await killHard(controller.child);
      await sleep(random.uniform(0, 300));
      const restartedAt = Date.now();
      controller = await daemon(['controller', '--data', data, '--port', port], LISTENING, dir);
      restartsMs.push(Date.now() - restartedAt);
    }
    await sleep(800);
    stormOver = true;
    await Promise.all(submitters);
    await killHard(agent.child);
    await killHard(controller.child); // one more crash: the store is read as the last kill left it

    const store = openStore(join(data, 'taras.db'));
    try {
      const jobs = store.jobs();
      t.diagnostic(`${acknowledged.length} acknowledged, ${unanswered} unanswered, ${jobs.length} jobs stored; restarts took ${restartsMs.join(', ')} ms`);
      assert.deepEqual(answeredWithError, [], 'the controller answered some submissions with an error');
      assert.ok(acknowledged.length > 100, `only ${acknowledged.length} submissions acknowledged`);
      assert.equal(new Set(acknowledged.map((a) => a.id)).size, acknowledged.length, 'an id was acknowledged twice');

      const byId = new Map(jobs.map((job) => [job.id as number, job]));
      for (const { tag, id } of acknowledged) {
        assert.equal(byId.get(id)?.name, tag, `acknowledged job ${id} (${tag}) is missing or holds another submission`);
      }
      const tags = new Map<string, number>();
      for (const job of jobs) tags.set(job.name, (tags.get(job.name) ?? 0) + 1);
      const duplicated = [...tags].filter(([, count]) => count > 1);
      assert.deepEqual(duplicated, [], 'a submission was stored more than once');
      const neverSent = jobs.filter((job) => !sent.has(job.name)).map((job) => job.id);
      assert.deepEqual(neverSent, [], 'jobs that nobody sent');
      // What is stored beyond the acknowledged: unanswered submissions that had committed when the controller died.
      const ackedTags = new Set(acknowledged.map((a) => a.tag));
      const committedUnanswered = jobs.filter((job) => !ackedTags.has(job.name)).length;
      assert.equal(jobs.length, acknowledged.length + committedUnanswered);
      assert.ok(committedUnanswered <= unanswered, `${committedUnanswered} unacknowledged jobs stored, but only ${unanswered} went unanswered`);

      for (const job of jobs) {
        const types = store.events(job.id).map((stored) => stored.event.type);
        assert.equal(types[0], 'submitted', `job ${job.id}: ${types.join(', ')}`);
        assert.equal(types.filter((type) => type === 'submitted').length, 1, `job ${job.id}: ${types.join(', ')}`);
      }
      assert.ok(jobs.some((job) => job.startTimeMs !== null), 'no job ever started: the agent took no part');
    } finally {
      store.close();
    }
  });

  it('an agent killed with kill -9 leaves its jobs running; a restarted agent re-adopts them', async () => {
    const dir = join(work, 'agent-kill');
    const data = join(dir, 'data');
    mkdirSync(dir, { recursive: true });
    const controller = await daemon(['controller', '--data', data, '--port', '0'], LISTENING, dir);
    const url = controller.match[1];
    const agentArgs = ['agent', '--controller', url, '--virtual', '2x2', '--data', join(data, 'agent'), '--key', join(data, 'cluster.key')];
    agentDirs.push(join(data, 'agent'));
    const agent = await daemon(agentArgs, /registered 2 node/, dir);

    // A line a second for 8 s, then exit code 5: long enough to outlive the kill, the checks and the restart
    // of the agent (Node's start) on a slow machine.
    writeFileSync(join(dir, 'ticker.sh'), '#!/bin/sh\n#TARAS --time 1\nfor i in 1 2 3 4 5 6 7 8; do echo "tick $i"; sleep 1; done\nexit 5\n');
    const id = submit(dir, url, 'ticker.sh');
    const jobDir = join(data, 'agent', 'jobs', `${id}.0`);
    const status = await eventually('the job runs', () => {
      const current = readStatus(jobDir);
      return current?.state === 'RUNNING' ? current : undefined;
    }, 5000, 25) as RunningStatus;
    const output = join(dir, `taras-${id}.out`);
    const lines = () => (existsSync(output) ? readFileSync(output, 'utf8').split('\n').filter(Boolean).length : 0);

    await sleep(700);
    await killHard(agent.child);
    assert.ok(isAlive(status.pid), `the job (pid ${status.pid}) died with its agent`);
    assert.ok(isAlive(status.supervisorPid, status.supervisorStartTicks), 'the supervisor died with its agent');
    const linesAtKill = lines();
    await sleep(1100);
    assert.ok(lines() > linesAtKill, `the job stopped writing after the agent was killed (${linesAtKill} lines, then ${lines()})`);
    assert.equal(show(dir, url, id).state, 'RUNNING');

    await daemon(agentArgs, /registered 2 node/, dir);
    assert.equal(readStatus(jobDir)?.state, 'RUNNING', 'the job ended before the restarted agent could re-adopt it: the test is too slow');

    const waited = cli(dir, url, 'wait', String(id));
    assert.equal(waited.code, 1, waited.stdout + waited.stderr);
    assert.match(waited.stdout, new RegExp(`job ${id}: FAILED \\(exit code 5\\)`));
    const job = show(dir, url, id);
    assert.deepEqual(job.events.map((e) => e.type), ['submitted', 'started', 'ended']);
    const ranMs = Date.parse(job.endTime!) - Date.parse(job.startTime!);
    assert.ok(ranMs >= 7700 && ranMs < 10_000, `ran ${ranMs} ms: the end time should be the job's own, about 8 s after its start`);
    assert.equal(readFileSync(output, 'utf8'), 'tick 1\ntick 2\ntick 3\ntick 4\ntick 5\ntick 6\ntick 7\ntick 8\n');
  });

  it('an agent that stays silent past node_timeout makes its node DOWN and its job NODE_FAIL; --requeue jobs are requeued', async () => {
    const dir = join(work, 'node-timeout');
    mkdirSync(dir, { recursive: true });
    const configFile = join(dir, 'cluster.toml');
    writeFileSync(configFile, [
      '[cluster]', 'listen = "127.0.0.1:0"', 'data_dir = "data"', 'node_timeout = "3s"', 'warn_before_limit = "0s"', 'kill_grace = "1s"',
      '[[nodes]]', 'names = "node[1-2]"', 'cpus = 2', 'memory = "1G"',
      '[[partitions]]', 'name = "all"', 'nodes = "ALL"', '',
    ].join('\n'));
    const data = join(dir, 'data');
    const controller = await daemon(['controller', '--config', configFile, '--port', '0'], LISTENING, dir);
    const url = controller.match[1];
    const agentOf = (node: string) => {
      const agentDir = join(dir, `agent-${node}`);
      agentDirs.push(agentDir);
      return daemon(['agent', '--controller', url, '--nodes', node, '--data', agentDir, '--key', join(data, 'cluster.key')], /registered 1 node/, dir);
    };
    const first = await agentOf('node1');

    writeFileSync(join(dir, 'long.sh'), '#!/bin/sh\n#TARAS --time 1\nfor i in $(seq 1 30); do echo "tick $i"; sleep 1; done\n');
    const plain = submit(dir, url, 'long.sh');
    const requeued = submit(dir, url, '--requeue', 'long.sh');
    for (const id of [plain, requeued]) {
      const job = await eventually(`job ${id} runs`, () => {
        const current = show(dir, url, id);
        return current.state === 'RUNNING' ? current : undefined;
      }, 5000);
      assert.deepEqual(job.nodes, ['node1']);
    }
    await agentOf('node2');

    await killHard(first.child);
    const killedAt = Date.now();
    const failed = await eventually('the job on the silent node ends', () => {
      const job = show(dir, url, plain);
      return job.state === 'RUNNING' ? undefined : job;
    }, 10_000, 200);
    const afterMs = Date.now() - killedAt;
    assert.equal(failed.state, 'NODE_FAIL', JSON.stringify(failed));
    assert.ok(afterMs >= 2000 && afterMs < 8000, `NODE_FAIL came ${afterMs} ms after the agent went silent; node_timeout is 3 s`);
    assert.match(failed.reason ?? '', /node1/);

    const nodes = JSON.parse(cli(dir, url, 'nodes', '--json').stdout) as ApiNode[];
    const node1 = nodes.find((node) => node.name === 'node1')!;
    assert.equal(node1.state, 'down');
    assert.match(node1.reason ?? '', /no heartbeat/);
    assert.notEqual(nodes.find((node) => node.name === 'node2')!.state, 'down', 'node2 has a live agent');

    // The --requeue job went back to the queue and runs again, on the node that is still up.
    const again = await eventually('the requeued job runs again', () => {
      const job = show(dir, url, requeued);
      return job.state === 'RUNNING' && job.events.some((e) => e.type === 'requeued') ? job : undefined;
    }, 5000);
    assert.deepEqual(again.events.map((e) => e.type), ['submitted', 'started', 'requeued', 'started']);
    assert.deepEqual(again.nodes, ['node2']);
    // A live agent heartbeats often enough for a short node_timeout: past another timeout, node2 and its job are untouched.
    await sleep(3500);
    const later = show(dir, url, requeued);
    assert.equal(later.state, 'RUNNING', JSON.stringify(later));
    assert.equal(later.events.length, 4);
    const node2 = (JSON.parse(cli(dir, url, 'nodes', '--json').stdout) as ApiNode[]).find((node) => node.name === 'node2')!;
    assert.notEqual(node2.state, 'down', `node2 went down with its agent alive: ${node2.reason}`);

    // The silent node's job processes still run under their supervisors: only the controller gave up on them.
    const status = readStatus(join(dir, 'agent-node1', 'jobs', `${plain}.0`));
    assert.equal(status?.state, 'RUNNING');
    assert.ok(isAlive((status as RunningStatus).pid));
    killJobProcesses([join(dir, 'agent-node1'), join(dir, 'agent-node2')]);
  });
});
