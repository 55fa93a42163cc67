// The controller daemon in-process over real HTTP on loopback: reconfigure
// reloads cluster.toml without losing jobs, and a bad file (or one that
// cannot hold the accepted jobs) is refused with the old configuration kept.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { readClusterConfig } from '../src/config/load.js';
import { startController } from '../src/controller/daemon.js';
import type { JobSpec } from '../src/jobspec/types.js';
import { ApiRequestError, createApiClient } from '../src/net/client.js';
import { unpackQueue, type ApiQueue } from '../src/api/queue.js';
import type { ApiJob } from '../src/api/types.js';
import { renderQueue } from '../src/cli/render/queue.js';
import { clientAs } from './auth-helpers.js';
import { createTestUser, notRootReason, removeTestUsers } from './unix-users.js';

const work = mkdtempSync(join(tmpdir(), 'taras-daemon-'));
after(() => {
  rmSync(work, { recursive: true, force: true });
  removeTestUsers();
});

const file = join(work, 'cluster.toml');
const toml = (policy: string, nodes: string, partition = 'batch', dataDir = 'data') => `
[cluster]
name = "test"
policy = "${policy}"
data_dir = "${dataDir}"
[[nodes]]
names = "${nodes}"
cpus = 4
memory = "8G"
[[partitions]]
name = "${partition}"
nodes = "ALL"
`;
const spec: JobSpec = {
  script: { path: '/tmp/x.sh', text: '#!/bin/sh\n', args: [] }, nodes: { min: 2 }, cpusPerTask: 4, timeLimitSeconds: 60,
  partition: 'batch', name: 'x', workingDir: work, output: 'x-%j.out', export: { all: false, variables: [] }, requeue: false,
};

describe('controller daemon', { skip: notRootReason }, () => {
  it('admin reconfigure: refuses a bad file and a file that strands jobs, applies a good one without losing jobs', async () => {
    writeFileSync(file, toml('easy', 'n[1-2]'));
    const parsed = await readClusterConfig(file);
    assert.ok(parsed.ok);
    const controller = await startController({ config: parsed.config, configPath: file, clusterKey: null, port: 0, log: () => {} });
    // Root, verified by the kernel through the socket.
    const api = createApiClient({ socketPath: controller.socketPath }, {});
    try {
      const { id } = await api.post<{ id: number }>('/jobs', { spec });
      assert.equal(id, 1);

      writeFileSync(file, toml('easy', 'n[1-2]').replace('cpus = 4', 'cpus = four'));
      await assert.rejects(api.post('/admin/reconfigure', {}), (e: unknown) => e instanceof ApiRequestError && e.status === 400 && /cluster\.toml:\d+: nodes\[0\]\.cpus/.test(e.error));
      assert.equal((await api.get<{ policy: string }>('/status')).policy, 'easy');

      writeFileSync(file, toml('easy', 'n[1-2]', 'other'));
      await assert.rejects(api.post('/admin/reconfigure', {}), (e: unknown) => e instanceof ApiRequestError && /cannot hold the jobs/.test(e.error));

      writeFileSync(file, toml('conservative', 'n[1-4]'));
      const status = await api.post<{ policy: string; nodes: { total: number } }>('/admin/reconfigure', {});
      assert.equal(status.policy, 'conservative');
      assert.equal(status.nodes.total, 4);
      const job = await api.get<{ id: number; state: string }>('/jobs/1');
      assert.equal(job.state, 'PENDING');
      assert.equal((await api.get<{ jobs: unknown[] }>('/jobs')).jobs.length, 1);
    } finally {
      api.close();
      await controller.close();
    }
  });

  it('GET /queue lists what GET /jobs lists, in queue order, and renders to the same table', async () => {
    writeFileSync(file, toml('easy', 'n[1-2]', 'batch', 'queue-data'));
    const parsed = await readClusterConfig(file);
    assert.ok(parsed.ok);
    const controller = await startController({ config: parsed.config, configPath: file, clusterKey: null, port: 0, log: () => {} });
    const bobUser = createTestUser('bob').name;
    const alice = await clientAs(controller.url, parsed.config, createTestUser('alice').name);
    const bob = await clientAs(controller.url, parsed.config, bobUser);
    try {
      // No agent: both nodes are down, so all wait; longer limits plan later starts.
      await alice.post('/jobs', { spec: { ...spec, name: 'first', timeLimitSeconds: 600 } });
      await bob.post('/jobs', { spec: { ...spec, name: 'second', nodes: { min: 1 }, memoryMiB: 1024 } });
      await alice.post('/jobs', { spec: { ...spec, name: 'third', workingDir: '/tmp' } });
      // A job gets its first planned start at the first pass after it is queued (passes run at most every
      // 10 ms, so the answer to its submission can come first): wait for those, so that no pass falls
      // between the two listings compared below.
      for (let i = 0; i < 100; i++) {
        if ((await alice.get<{ jobs: ApiJob[] }>('/jobs')).jobs.every((job) => job.plannedStart !== null)) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      for (const long of [false, true]) {
        const [answer, jobs] = await Promise.all([alice.get<ApiQueue>(`/queue${long ? '?long=1' : ''}`), alice.get<{ jobs: ApiJob[] }>('/jobs').then((page) => page.jobs)]);
        const queue = unpackQueue(answer);
        assert.equal(queue.id.length, 3);
        const byId = new Map(jobs.map((job) => [job.id, job]));
        for (let i = 0; i < queue.id.length; i++) {
          const job = byId.get(queue.id[i])!;
          assert.deepEqual(
            [queue.strings[queue.user[i]], queue.strings[queue.state[i]], queue.strings[queue.name[i]], queue.nodeCount[i]],
            [job.user, job.state, job.name, job.nodeCount],
          );
          const planned = job.plannedStart === null ? null : Date.parse(job.plannedStart) / 1000 - queue.timeBase;
          assert.equal(queue.start[i], planned === null ? null : Math.floor(planned), `job ${job.id}: planned start`);
          // Another user's working directory is private: '' in the queue, null in /jobs.
          if (long) assert.equal(queue.strings[queue.long!.workingDir[i]], job.workingDir ?? '');
        }
        assert.equal(queue.long === undefined, !long);
        const view = { status: queue.status, now: queue.status.now, width: 120, long, timeZone: 'UTC' };
        assert.equal(renderQueue({ ...view, queue: answer }), renderQueue({ ...view, jobs }));
      }
      const filtered = unpackQueue(await alice.get<ApiQueue>(`/queue?user=${bobUser}`));
      assert.deepEqual(filtered.id.map((_, i) => filtered.strings[filtered.name[i]]), ['second']);
      // A repeated listing may be reused, but never past a change: a new job, a cancel.
      const names = (queue: ReturnType<typeof unpackQueue>) => queue.name.map((index) => queue.strings[index]).sort();
      assert.deepEqual(names(unpackQueue(await alice.get<ApiQueue>('/queue'))), ['first', 'second', 'third']);
      const { id: fourth } = await bob.post<{ id: number }>('/jobs', { spec: { ...spec, name: 'fourth' } });
      assert.deepEqual(names(unpackQueue(await alice.get<ApiQueue>('/queue'))), ['first', 'fourth', 'second', 'third']);
      await bob.delete(`/jobs/${fourth}`);
      const afterCancel = unpackQueue(await alice.get<ApiQueue>('/queue?state=PENDING'));
      assert.deepEqual(names(afterCancel), ['first', 'second', 'third']);
    } finally {
      alice.close();
      bob.close();
      await controller.close();
    }
  });
});
