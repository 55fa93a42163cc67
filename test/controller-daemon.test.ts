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

const work = mkdtempSync(join(tmpdir(), 'taras-daemon-'));
after(() => rmSync(work, { recursive: true, force: true }));

const file = join(work, 'cluster.toml');
const toml = (policy: string, nodes: string, partition = 'batch') => `
[cluster]
name = "test"
policy = "${policy}"
data_dir = "data"
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

describe('controller daemon', () => {
  it('admin reconfigure: refuses a bad file and a file that strands jobs, applies a good one without losing jobs', async () => {
    writeFileSync(file, toml('easy', 'n[1-2]'));
    const parsed = await readClusterConfig(file);
    assert.ok(parsed.ok);
    const controller = await startController({ config: parsed.config, configPath: file, clusterKey: null, port: 0, log: () => {} });
    const api = createApiClient({ baseUrl: controller.url }, { identity: { user: 'root', uid: 0 } });
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
      assert.equal((await api.get<unknown[]>('/jobs')).length, 1);
    } finally {
      api.close();
      await controller.close();
    }
  });
});
