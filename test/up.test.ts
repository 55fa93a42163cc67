// `npm start` (= `taras up`): a controller with its SQLite file under a data
// directory and a virtual agent in one process, which prints the commands to
// submit a job and watch the queue, runs real jobs, and stops cleanly on
// Ctrl-C (SIGINT). With `--config cluster.toml` the agent serves exactly the
// file's nodes, partitions and features. Every process started here is
// stopped by its PID.

import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { ApiClusterStatus, ApiJob, ApiNode } from '../src/api/types.js';
import { createApiClient } from '../src/net/client.js';
import { waitForOutput } from './daemon-process.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const work = mkdtempSync(join(tmpdir(), 'taras-up-'));
const started: ChildProcess[] = [];
after(() => {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
});

function taras(args: string[], controller: string, cwd = work) {
  const run = spawnSync(process.execPath, [join(root, 'bin/taras.js'), ...args], {
    cwd, encoding: 'utf8', input: '', timeout: 30_000, env: { ...process.env, TARAS_CONTROLLER: controller, TARAS_JOB_ID: '' },
  });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** Whether anything answers HTTP at `url`. */
function answers(url: string): Promise<boolean> {
  return new Promise((resolvePromise) => {
    const req = request(`${url}/status`, { method: 'GET', timeout: 2000 }, (res) => {
      res.resume();
      resolvePromise(true);
    });
    req.on('error', () => resolvePromise(false));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

describe('npm start (taras up)', () => {
  it('is what `npm start` runs', () => {
    const scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    assert.equal(scripts.start, 'node bin/taras.js up');
  });

  it('starts a controller and a virtual agent, prints how to submit and watch, runs a job, and stops on Ctrl-C', async () => {
    const data = join(work, 'data');
    const up = spawn(process.execPath, [join(root, 'bin/taras.js'), 'up', '--port', '0', '--virtual', '4x2', '--data', data], {
      cwd: work, stdio: ['ignore', 'pipe', 'pipe'],
    });
    started.push(up);
    const printed = await waitForOutput(up, /Ctrl-C stops/, 20_000);
    const url = /controller at (http:\/\/127\.0\.0\.1:\d+), 4 virtual nodes of 2 CPUs/.exec(printed)?.[1];
    assert.ok(url, printed);
    // The exact commands: where the controller is (not the default port here), a job, the queue.
    assert.match(printed, new RegExp(`export TARAS_CONTROLLER=${url.replace(/\./g, '\\.')}\n`));
    assert.match(printed, /npx taras submit -N 2 hello\.sh\n/);
    assert.match(printed, /npx taras queue\n/);
    assert.ok(existsSync(join(data, 'taras.db')), 'the SQLite file is under the data directory');

    writeFileSync(join(work, 'hello.sh'), '#!/bin/sh\n#TARAS --time 5\necho hello from $TARAS_NODELIST\n');
    const submitted = taras(['submit', '-N', '2', 'hello.sh'], url);
    assert.equal(submitted.code, 0, submitted.stderr);
    const id = /Submitted batch job (\d+)/.exec(submitted.stdout)?.[1];
    assert.ok(id, submitted.stdout);
    const waited = taras(['wait', id], url);
    assert.equal(waited.code, 0, waited.stdout + waited.stderr);
    assert.equal(readFileSync(join(work, `taras-${id}.out`), 'utf8'), 'hello from node[01-02]\n');
    const queue = taras(['queue', '--state', 'COMPLETED'], url);
    assert.match(queue.stdout, new RegExp(`\\b${id}\\s+\\S+\\s+COMPLETED\\s+batch\\s+node\\[01-02\\]`));

    assert.equal(await ctrlC(up), 0, 'Ctrl-C stops both and exits 0');
    assert.equal(await answers(url), false, 'nothing listens after the stop');
  });
});

/** SIGINT to `up` by its PID: its exit code, or 'hung' if it is still running 15 s later. */
function ctrlC(up: ChildProcess): Promise<number | null | 'hung'> {
  const exited = new Promise<number | null>((resolvePromise) => up.once('exit', (code) => resolvePromise(code)));
  up.kill('SIGINT');
  return Promise.race([exited, sleep(15_000, 'hung' as const)]);
}

/** Two partitions of two nodes each, with a feature apiece; listen and data_dir that --port and --data override. */
const TWO_PARTITIONS = `[cluster]
name = "two"
listen = "127.0.0.1:6817"
data_dir = "file-data"

[[nodes]]
names = "n[1-2]"
cpus = 8
memory = "4G"
features = ["a"]

[[nodes]]
names = "n[3-4]"
cpus = 4
memory = "2G"
features = ["b"]

[[partitions]]
name = "a"
nodes = "n[1-2]"
default = true

[[partitions]]
name = "b"
nodes = "n[3-4]"
`;

describe('taras up --config cluster.toml', () => {
  const dir = join(work, 'two');
  const file = join(dir, 'cluster.toml');
  mkdirSync(dir);
  writeFileSync(file, TWO_PARTITIONS);
  const up = (...args: string[]) => spawnSync(process.execPath, [join(root, 'bin/taras.js'), 'up', ...args], { cwd: dir, encoding: 'utf8', timeout: 20_000 });

  it('serves exactly the file\'s nodes, partitions and features; a job for partition b with a feature runs on n3 or n4', async () => {
    const data = join(dir, 'data');
    const daemon = spawn(process.execPath, [join(root, 'bin/taras.js'), 'up', '--config', file, '--port', '0', '--data', data], {
      cwd: dir, stdio: ['ignore', 'pipe', 'pipe'],
    });
    started.push(daemon);
    const printed = await waitForOutput(daemon, /Ctrl-C stops/, 20_000);
    const said = new RegExp(
      `Taras is up: controller at (http://127\\.0\\.0\\.1:\\d+), 4 nodes in 2 partitions from ${file} ` +
      `\\(a: n\\[1-2\\], 16 CPUs, the default; b: n\\[3-4\\], 8 CPUs\\), data in ${data}\\.\n`,
    );
    const url = said.exec(printed)?.[1];
    assert.ok(url, printed);
    assert.match(printed, /npx taras submit -N 2 hello\.sh\n/);
    // The flags win over the file: not its port 6817 nor its data_dir.
    assert.notEqual(new URL(url).port, '6817');
    assert.ok(existsSync(join(data, 'taras.db')), 'the database is under --data');
    assert.equal(existsSync(join(dir, 'file-data')), false, 'the file\'s data_dir is not used');

    // Root, through the controller's socket (under --data).
    const api = createApiClient({ socketPath: join(data, 'taras.sock') }, { timeoutMs: 5000 });
    try {
      // The agent registers as `up` prints; give it a few seconds at most.
      let nodes: ApiNode[] = [];
      for (let tries = 0; tries < 50; tries++) {
        nodes = await api.get<ApiNode[]>('/nodes');
        if (nodes.every((node) => node.state === 'idle')) break;
        await sleep(100);
      }
      assert.deepEqual(nodes.map((n) => [n.name, n.state, n.cpus, n.memoryMiB, n.features, n.partitions]), [
        ['n1', 'idle', 8, 4096, ['a'], ['a']],
        ['n2', 'idle', 8, 4096, ['a'], ['a']],
        ['n3', 'idle', 4, 2048, ['b'], ['b']],
        ['n4', 'idle', 4, 2048, ['b'], ['b']],
      ]);
      const status = await api.get<ApiClusterStatus>('/status');
      assert.equal(status.cluster, 'two');
      assert.deepEqual(status.nodes, { total: 4, idle: 4, allocated: 0, mixed: 0, down: 0, drained: 0 });

      // As a user would: the CLI, partition b, the feature of its nodes, a whole node's CPUs.
      writeFileSync(join(dir, 'where.sh'), '#!/bin/sh\n#TARAS --time 5\necho on $TARAS_NODELIST\n');
      const refused = taras(['submit', '-p', 'b', '-C', 'a', 'where.sh'], url, dir);
      assert.equal(refused.code, 2, refused.stdout + refused.stderr);
      assert.match(refused.stderr, /^error: no node of partition b has the feature a /);
      const submitted = taras(['submit', '-p', 'b', '-C', 'b', '-c', '4', 'where.sh'], url, dir);
      assert.equal(submitted.code, 0, submitted.stderr);
      const id = Number(/Submitted batch job (\d+)/.exec(submitted.stdout)?.[1]);
      assert.ok(id > 0, submitted.stdout);
      const waited = taras(['wait', String(id)], url, dir);
      assert.equal(waited.code, 0, waited.stdout + waited.stderr);
      const job = await api.get<ApiJob>(`/jobs/${id}`);
      assert.deepEqual([job.state, job.exitCode, job.partition, job.cpusPerTask], ['COMPLETED', 0, 'b', 4]);
      assert.ok(job.nodes.length === 1 && ['n3', 'n4'].includes(job.nodes[0]), `ran on ${job.nodes.join(',')}`);
      assert.equal(readFileSync(join(dir, `taras-${id}.out`), 'utf8'), `on ${job.nodes[0]}\n`);
    } finally {
      api.close();
    }
    assert.equal(await ctrlC(daemon), 0, 'Ctrl-C stops both and exits 0');
    assert.equal(await answers(url), false, 'nothing listens after the stop');
  });

  it('a bad file is one line naming file, line, key and fix, exit 2, and nothing starts', () => {
    const bad = join(dir, 'bad.toml');
    writeFileSync(bad, TWO_PARTITIONS.replace('name = "two"', 'name = "two"\npolicy = "fifo"'));
    const data = join(dir, 'bad-data');
    const run = up('--config', bad, '--port', '0', '--data', data);
    assert.deepEqual([run.status, run.stdout, run.stderr],
      [2, '', `${bad}:3: cluster.policy: unknown policy "fifo" (fix: use one of: fcfs, easy, conservative)\n`]);
    assert.equal(existsSync(data), false);
    const missing = up('--config', join(dir, 'nope.toml'), '--port', '0', '--data', data);
    assert.equal(missing.status, 2);
    assert.match(missing.stderr, /^\S+nope\.toml: no such file \(fix: pass the path of an existing cluster\.toml with --config .*\)\n$/);
  });

  it('--virtual with --config is refused: the file says which nodes run', () => {
    const run = up('--config', file, '--virtual', '4x2', '--port', '0');
    assert.equal(run.status, 2);
    assert.equal(run.stderr, `error: --virtual and --config both say which nodes to run: with --config they are the [[nodes]] of ${file}; drop --virtual (or --config)\n`);
    assert.equal(existsSync(join(dir, 'file-data')), false);
  });
});
