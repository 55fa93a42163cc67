// `taras submit --many FILE` (and `-`, standard input): many jobs in one call,
// one JSON line each with job.toml's keys, the command's flags applied to
// every job; one bad line refuses the whole file (file:line), nothing stored.
// A real controller (in this process, no agent: the jobs wait) and the CLI as
// a child process.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { ApiJob, ApiJobPage } from '../src/api/types.js';
import { idRanges } from '../src/cli/many.js';
import { readClusterConfig } from '../src/config/load.js';
import { startController } from '../src/controller/daemon.js';
import { createApiClient, type ApiClient } from '../src/net/client.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const work = mkdtempSync(join(tmpdir(), 'taras-many-'));
let controller: Awaited<ReturnType<typeof startController>>;
let api: ApiClient;

before(async () => {
  const file = join(work, 'cluster.toml');
  writeFileSync(file, `[cluster]\nname = "many"\npolicy = "easy"\ndata_dir = "data"\n[[nodes]]\nnames = "n1"\ncpus = 4\nmemory = "1G"\n[[partitions]]\nname = "batch"\nnodes = "ALL"\n`);
  const parsed = await readClusterConfig(file);
  assert.ok(parsed.ok);
  controller = await startController({ config: parsed.config, configPath: file, clusterKey: null, port: 0, log: () => {} });
  api = createApiClient({ socketPath: controller.socketPath }, {});
  writeFileSync(join(work, 'a.sh'), '#!/bin/sh\n#TARAS --cpus-per-task 2\necho "$@"\n');
  writeFileSync(join(work, 'b.sh'), '#!/bin/sh\necho b\n');
});
after(async () => {
  api.close();
  await controller.close();
  rmSync(work, { recursive: true, force: true });
});

/** `taras ARGS` with `input` on its standard input, asynchronously (the controller runs in this process). */
function taras(args: string[], input = ''): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolveRun) => {
    const child = spawn(process.execPath, [join(root, 'bin/taras.js'), 'submit', '--controller', `unix:${controller.socketPath}`, ...args], {
      cwd: work, env: { ...process.env, TARAS_JOB_ID: '' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('close', (code) => resolveRun({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

const jobs = async () => (await api.get<ApiJobPage>('/jobs')).jobs;

describe('taras submit --many', () => {
  it('submits every line of a file, each as its own job.toml, its script\'s #TARAS lines and the flags on top', async () => {
    const lines = [
      '# one job a line',
      JSON.stringify({ script: 'a.sh', arguments: ['1'], time: 10, job_name: 'first' }),
      '',
      JSON.stringify({ script: 'a.sh', arguments: ['2'], time: '0:30' }),
      JSON.stringify({ script: 'b.sh', time: 5, cpus_per_task: 3 }),
    ];
    writeFileSync(join(work, 'jobs.jsonl'), `${lines.join('\n')}\n`);
    const run = await taras(['--many', 'jobs.jsonl', '--partition', 'batch', '--json']);
    assert.equal(run.code, 0, run.stderr);
    const answer = JSON.parse(run.stdout) as { line: number; id: number }[];
    assert.deepEqual(answer.map((a) => a.line), [2, 4, 5]);
    const byId = new Map((await jobs()).map((job) => [job.id, job]));
    const [first, second, third] = answer.map((a) => byId.get(a.id)!);
    assert.deepEqual([first.name, first.timeLimitSeconds, first.cpusPerTask, first.partition], ['first', 600, 2, 'batch']);
    assert.deepEqual([second.name, second.timeLimitSeconds, second.cpusPerTask], ['a.sh', 30, 2]);
    assert.deepEqual([third.name, third.timeLimitSeconds, third.cpusPerTask], ['b.sh', 300, 3]);
    const shown = await api.get<ApiJob & { events: unknown[] }>(`/jobs/${first.id}`);
    assert.equal(shown.state, 'PENDING');
  });

  it('reads standard input with -, and says the ids as ranges', async () => {
    const before = (await jobs()).length;
    const input = Array.from({ length: 30 }, (_, i) => JSON.stringify({ script: 'b.sh', arguments: [String(i)], time: 1 })).join('\n');
    const run = await taras(['--many', '-'], input);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^Submitted 30 jobs: [\d,-]+\n$/);
    assert.equal((await jobs()).length, before + 30);
  });

  it('one bad line refuses the whole file, naming file:line and the fix; nothing is stored', async () => {
    const before = (await jobs()).length;
    writeFileSync(join(work, 'bad.jsonl'), [
      JSON.stringify({ script: 'a.sh', time: 10 }),
      '{"script": "a.sh", time: 10}',
      JSON.stringify({ script: 'a.sh', time: 10, cpu_per_task: 2 }),
      JSON.stringify({ script: 'missing.sh', time: 10 }),
      JSON.stringify({ script: 'b.sh' }),
      JSON.stringify({ time: 10 }),
    ].join('\n'));
    const run = await taras(['--many', 'bad.jsonl']);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /^error: bad\.jsonl:2: not JSON /m);
    assert.match(run.stderr, /^error: bad\.jsonl:3: cpu_per_task: unknown key; did you mean cpus_per_task\?/m);
    assert.match(run.stderr, /^error: bad\.jsonl:4: cannot read the script missing\.sh/m);
    assert.match(run.stderr, /^error: bad\.jsonl:5: .*time limit/m);
    assert.match(run.stderr, /^error: bad\.jsonl:6: no "script"/m);
    assert.match(run.stderr, /nothing was submitted\n$/);
    assert.equal((await jobs()).length, before);
    const both = await taras(['--many', 'bad.jsonl', 'a.sh']);
    assert.equal(both.code, 2);
    assert.match(both.stderr, /leave out the script a\.sh/);
  });

  it('idRanges folds runs of ids', () => {
    assert.equal(idRanges([3, 4, 5, 9, 7, 8]), '3-5,9,7-8');
    assert.equal(idRanges([1]), '1');
  });
});
