// Signed requests name their destination: the controller signs each request
// to an agent for that agent's nodes, address and boot id (drawn at every
// agent start, given at registration), so a captured request is refused by
// another agent and by the same agent once restarted. An agent the controller
// refuses says why in its own log. Real servers and agents on 127.0.0.1.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { startAgent, type RunningAgent } from '../src/agent/agent.js';
import { agentDestination, signRequest, type ClusterKey } from '../src/net/hmac.js';
import type { NetLog } from '../src/net/log.js';
import { createApiServer, type ApiServer } from '../src/net/server.js';
import { eventually } from './poll.js';

const KEY: ClusterKey = Buffer.from('0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef');
const OTHER_KEY: ClusterKey = Buffer.from('fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210');
const work = mkdtempSync(join(tmpdir(), 'taras-signatures-'));
const closing: (() => Promise<void>)[] = [];
after(async () => {
  for (const close of closing.reverse()) await close();
  rmSync(work, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function recordingLog(): NetLog & { lines: string[] } {
  const lines: string[] = [];
  return { lines, info: (m) => lines.push(m), warn: (m) => lines.push(m), error: (m) => lines.push(m) };
}

function post(url: string, path: string, body: string, headers: Record<string, string>):
  Promise<{ status: number; refused: unknown; body: { error?: string; fix?: string } }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { method: 'POST', agent: false, headers: { 'content-type': 'application/json', ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, refused: res.headers['x-taras-refused'], body: JSON.parse(Buffer.concat(chunks).toString('utf8')) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A request as the controller signs it for `destination`. */
function signedFor(destination: string, path: string, body: string): Record<string, string> {
  return signRequest(KEY, { method: 'POST', path, body, timestamp: Date.now(), nonce: `n-${randomUUID()}`, destination });
}

/** An agent-like server that answers /signal once the signature passes. */
async function agentServer(destinationOf: (hostPort: string) => string, port = 0): Promise<{ url: string; log: ReturnType<typeof recordingLog>; server: ApiServer }> {
  const log = recordingLog();
  let destination = '';
  const server = createApiServer({
    routes: [{ method: 'POST', path: '/signal', handler: () => ({ status: 200, body: { ok: true } }) }],
    clusterKey: KEY, log, destination: () => destination,
  });
  const bound = await server.listen({ port, host: '127.0.0.1' });
  destination = destinationOf(new URL(bound.tcp!.url).host);
  closing.push(() => server.close(100));
  return { url: bound.tcp!.url, log, server };
}

describe('signatures bound to the destination', () => {
  const body = JSON.stringify({ jobId: 7, signal: 'SIGKILL', cancel: true });

  it('a request signed for one agent is refused by another (same key), with the reason logged there', async () => {
    const a = await agentServer((hostPort) => agentDestination(['node01', 'node02'], hostPort, 'boot-a'));
    const b = await agentServer((hostPort) => agentDestination(['node03', 'node04'], hostPort, 'boot-b'));
    const forA = signedFor(agentDestination(['node01', 'node02'], new URL(a.url).host, 'boot-a'), '/signal', body);
    assert.equal((await post(a.url, '/signal', body, forA)).status, 200);
    const replayed = await post(b.url, '/signal', body, forA);
    assert.equal(replayed.status, 401);
    assert.equal(replayed.refused, 'wrong-destination');
    assert.equal(replayed.body.error,
      `cluster key check failed: signed for agent node01..node02 (2 nodes) at ${new URL(a.url).host} boot boot-a, not for this agent node03..node04 (2 nodes) at ${new URL(b.url).host} boot boot-b`);
    assert.ok(b.log.lines.some((line) => line.includes('refused POST /signal') && line.endsWith(`boot boot-b`)), b.log.lines.join('\n'));
  });

  it('a request captured before an agent restarted is refused after it (same nodes, same port, new boot id)', async () => {
    const nodes = ['node01'];
    const first = await agentServer((hostPort) => agentDestination(nodes, hostPort, 'boot-before'));
    const hostPort = new URL(first.url).host;
    const captured = signedFor(agentDestination(nodes, hostPort, 'boot-before'), '/signal', body);
    assert.equal((await post(first.url, '/signal', body, captured)).status, 200);
    await first.server.close(100);
    const restarted = await agentServer((hp) => agentDestination(nodes, hp, 'boot-after'), Number(hostPort.split(':')[1]));
    assert.equal(new URL(restarted.url).host, hostPort);
    const replayed = await post(restarted.url, '/signal', body, captured);
    assert.equal(replayed.status, 401);
    assert.equal(replayed.refused, 'wrong-destination');
    assert.match(replayed.body.error ?? '', /boot boot-before, not for this agent node01 \(1 node\) at .* boot boot-after$/);
  });

  it('a request signed for the controller is refused by an agent', async () => {
    const agent = await agentServer((hostPort) => agentDestination(['node01'], hostPort, 'boot-c'));
    const answer = await post(agent.url, '/signal', body, signedFor('controller', '/signal', body));
    assert.equal(answer.refused, 'wrong-destination');
  });
});

describe('real agents: boot ids at registration, and refusals logged on the agent', () => {
  /** A controller stand-in: records registrations, refuses them when `refuseWith` is set. */
  async function fakeController(key: ClusterKey) {
    const registrations: { url: string; nodes: string[]; bootId: string }[] = [];
    const server = createApiServer({
      routes: [{ method: 'POST', path: '/agent/register', handler: (ctx) => {
        registrations.push(ctx.body as { url: string; nodes: string[]; bootId: string });
        return { status: 200, body: { ok: true, heartbeatMs: 200, kill: [] } };
      } }],
      clusterKey: key, log: recordingLog(),
    });
    const bound = await server.listen({ port: 0, host: '127.0.0.1' });
    closing.push(() => server.close(100));
    return { url: bound.tcp!.url, registrations };
  }

  async function agent(controllerUrl: string, name: string, log: string[]): Promise<RunningAgent> {
    const running = await startAgent({
      controller: { baseUrl: controllerUrl }, nodes: ['node01', 'node02'], dataDir: join(work, name), clusterKey: KEY, heartbeatMs: 200,
      log: (line) => log.push(line),
    });
    closing.push(() => running.close());
    return running;
  }

  it('each agent start registers a new boot id, and what the controller signed for the first start is refused by the second', async () => {
    const controller = await fakeController(KEY);
    const firstLog: string[] = [];
    const first = await agent(controller.url, 'first', firstLog);
    await eventually('the first registration', () => controller.registrations.length > 0, 5000, 50);
    const before = controller.registrations[0];
    assert.match(before.bootId, /^[0-9a-f-]{36}$/);
    const body = JSON.stringify({ jobId: 99, signal: 'SIGTERM', cancel: false });
    const captured = signedFor(agentDestination(before.nodes, new URL(before.url).host, before.bootId), '/signal', body);
    // Accepted by the agent it was signed for (it runs no job 99: 404 comes after the signature check).
    assert.equal((await post(first.url, '/signal', body, captured)).status, 404);
    await first.close();

    const secondLog: string[] = [];
    const second = await agent(controller.url, 'first', secondLog); // the same data folder: a restart
    await eventually('the second registration', () => controller.registrations.some((r) => r.url === second.url), 5000, 50);
    const after = controller.registrations.find((r) => r.url === second.url)!;
    assert.notEqual(after.bootId, before.bootId);
    const replayed = await post(second.url, '/signal', body, captured);
    assert.equal(replayed.status, 401);
    assert.equal(replayed.refused, 'wrong-destination');
    // Signed for the new start, the same request is accepted.
    const fresh = signedFor(agentDestination(after.nodes, new URL(after.url).host, after.bootId), '/signal', body);
    assert.equal((await post(second.url, '/signal', body, fresh)).status, 404);
  });

  it('an agent whose registration the controller refuses logs why, once, on its own side', async () => {
    const controller = await fakeController(OTHER_KEY);
    const log: string[] = [];
    await agent(controller.url, 'refused', log);
    await sleep(1500); // several attempts (every 500 ms while unregistered)
    const refusals = log.filter((line) => line.startsWith("the controller refused this agent's registration"));
    assert.deepEqual(refusals, [
      "the controller refused this agent's registration (HTTP 401): cluster key check failed: bad signature (the client's cluster key differs from the controller's, or the request was altered in transit: copy the controller's key file to this node (mode 600))",
    ]);
    assert.equal(controller.registrations.length, 0);
  });
});
