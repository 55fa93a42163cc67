// Another local user's process on the port of a Taras daemon that is down (a
// restart, a crash) is not taken for that daemon (red team). The cluster key
// proves who sends a request, not who receives it: before, the controller
// sent a dead agent's squatter every start order for its nodes (the job's
// script and its submitter's environment), and an agent sent its
// registration to a squatter on the controller's port and killed the jobs
// named in the answer. Both ends now check who listens, as the CLI does
// (net/client.ts daemonPeer): root, their own user, or the uid an agent's
// signed registration gave. Squatters run as a throwaway Unix user; every
// process started here is stopped by its PID.

import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startAgent } from '../src/agent/agent.js';
import { readClusterConfig } from '../src/config/load.js';
import { startController } from '../src/controller/daemon.js';
import { UNREACHABLE_PAUSE_MS } from '../src/controller/engine.js';
import type { JobSpec } from '../src/jobspec/types.js';
import { createApiClient } from '../src/net/client.js';
import type { ClusterKey } from '../src/net/hmac.js';
import { eventually } from './poll.js';
import { createTestUser, notRootReason, removeTestUsers, type TestUser } from './unix-users.js';

const KEY: ClusterKey = Buffer.from('0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef');
const work = mkdtempSync(join(tmpdir(), 'taras-daemon-peers-'));
const started: ChildProcess[] = [];
const closing: (() => Promise<void>)[] = [];
after(async () => {
  for (const close of closing.reverse()) await close();
  for (const child of started) child.kill('SIGKILL');
  if (!notRootReason) removeTestUsers();
  rmSync(work, { recursive: true, force: true });
});

/**
 * An HTTP server run as `user` on 127.0.0.1 that prints each request it gets (`got PATH BODY`) and answers as
 * a controller (a registration's answer names job 7 to kill) or an agent would.
 */
async function squatter(user: TestUser): Promise<{ url: string; out: () => string }> {
  const program = `
    const http = require('http');
    const server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => { body += c; });
      req.on('end', () => {
        console.log('got', req.url, body);
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify(req.url === '/agent/register' ? { ok: true, heartbeatMs: 100, kill: [{ jobId: 7 }] } : { ok: true }));
      });
    });
    server.listen({ host: '127.0.0.1', port: 0 }, () => console.log('port', server.address().port));
  `;
  const child = spawn('setpriv', ['--reuid', user.name, '--regid', user.name, '--init-groups', process.execPath, '-e', program], { stdio: ['ignore', 'pipe', 'inherit'] });
  started.push(child);
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const port = await eventually('the squatter listens', () => /port (\d+)/.exec(out)?.[1], 10_000, 50);
  return { url: `http://127.0.0.1:${port}`, out: () => out };
}

describe('a squatter on a daemon\'s port', { skip: notRootReason }, () => {
  it('gets no registration from an agent (so no kill list of its is carried out), and the agent says why', { timeout: 30_000 }, async () => {
    const squat = await squatter(createTestUser('ctlsq'));
    const log: string[] = [];
    const agent = await startAgent({ controller: { baseUrl: squat.url }, nodes: ['node01'], dataDir: join(work, 'agent'), clusterKey: KEY, heartbeatMs: 100, log: (line) => log.push(line) });
    closing.push(() => agent.close());
    await eventually('the agent says why it did not register', () => log.some((line) => /not registered: the process listening at the controller http:\/\/127\.0\.0\.1:\d+ runs as uid \d+/.test(line)), 5000, 50);
    await sleep(500); // a few heartbeats more
    assert.doesNotMatch(squat.out(), /got/, 'not a byte of the registration reached the squatter');
    assert.equal(log.filter((line) => line.startsWith('not registered')).length, 1, 'said once');
  });

  it('gets no start order (script, environment) from the controller for the nodes of the agent that registered its address; an agent whose signed registration names its uid gets them', { timeout: 45_000 }, async () => {
    const user = createTestUser('agsq');
    const squat = await squatter(user);
    const file = join(work, 'cluster.toml');
    writeFileSync(file, ['[cluster]', 'name = "peers"', 'policy = "easy"', 'data_dir = "data"', '[[nodes]]', 'names = "n1"', 'cpus = 2', 'memory = "1G"',
      '[[partitions]]', 'name = "batch"', 'nodes = "ALL"', 'default = true', ''].join('\n'));
    const parsed = await readClusterConfig(file);
    assert.ok(parsed.ok);
    const logged: string[] = [];
    const controller = await startController({ config: parsed.config, configPath: file, clusterKey: KEY, port: 0, log: (line) => logged.push(line) });
    closing.push(() => controller.close());
    const root = createApiClient({ socketPath: controller.socketPath }, {});
    const signed = createApiClient({ baseUrl: controller.url }, { clusterKey: KEY });
    closing.push(async () => {
      root.close();
      signed.close();
    });
    // The agent of n1 registered at this address (signed with the cluster key), then went away; the squatter took its port.
    await signed.post('/agent/register', { url: squat.url, nodes: ['n1'], bootId: randomUUID() });
    const spec: JobSpec = {
      script: { path: '/tmp/x.sh', text: '#!/bin/sh\necho TOPSECRET\n', args: [] }, nodes: { min: 1 }, cpusPerTask: 1, timeLimitSeconds: 60,
      name: 'x', workingDir: work, output: '/dev/null', export: { all: false, variables: [] }, requeue: false,
    };
    const { id } = await root.post<{ id: number }>('/jobs', { spec });
    await eventually('the start is known not to have reached n1\'s agent', () => logged.some((line) => line.includes(`job ${id}: its start did not reach the agent of n1 (UNTRUSTED)`)), 5000, 50);
    assert.doesNotMatch(squat.out(), /got/, 'not a byte of the start order reached the squatter');
    assert.equal((await root.get<{ state: string }>(`/jobs/${id}`)).state, 'PENDING', 'it never ran, and waits in the queue again');

    // An agent that runs as that user (a non-root agent) says so in its signed registration: its orders reach it.
    await sleep(UNREACHABLE_PAUSE_MS + 200); // the node takes jobs again after a pause
    await signed.post('/agent/register', { url: squat.url, nodes: ['n1'], bootId: randomUUID(), uid: user.uid });
    await eventually('the start order reaches the agent that registered as that uid', () => /got \/start .*TOPSECRET/.test(squat.out()), 10_000, 50);
  });
});
