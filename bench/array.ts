// `node dist/bench/array.js`: one request submitting a job array of 10,000
// tasks (sbatch --array=0-9999) to a real `taras controller` (a child
// process, its store on the system temp folder, 16 virtual nodes and no
// agents), timed from the request sent to the answer received over the Unix
// socket, then `GET /queue` (what `taras queue` reads) with the 10,000 tasks
// pending. Each figure is printed beside its target. Not a test: figures vary
// with the machine and its disk.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createApiClient } from '../src/net/client.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const TASKS = 10_000;
const RUNS = 3;

const spec = (name: string) => ({
  script: { path: '/tmp/array.sh', text: '#!/bin/sh\n#SBATCH --array=0-9999\necho "$SLURM_ARRAY_TASK_ID"\n', args: [] },
  nodes: { min: 1 }, cpusPerTask: 1, timeLimitSeconds: 600, name, workingDir: '/tmp', output: 'out-%A_%a.txt',
  export: { all: true, variables: [] }, requeue: false,
  // A typical shell's environment rides with each submission (and with each stored task).
  submitEnv: Object.fromEntries(Object.entries(process.env).filter(([, value]) => value !== undefined)) as Record<string, string>,
  submitDir: '/tmp',
  array: { text: `0-${TASKS - 1}` },
});

function startController(data: string): Promise<{ child: ChildProcess; socket: string }> {
  const child = spawn(process.execPath, [join(root, 'bin/taras.js'), 'controller', '--data', data, '--port', '0'], { stdio: ['ignore', 'ignore', 'pipe'] });
  return new Promise((resolveReady, reject) => {
    let log = '';
    const timer = setTimeout(() => reject(new Error(`controller not ready in 10 s:\n${log}`)), 10_000);
    child.stderr!.on('data', (chunk: Buffer) => {
      log += chunk.toString();
      const match = / and (\S+\.sock) /.exec(log);
      if (match) {
        clearTimeout(timer);
        resolveReady({ child, socket: match[1] });
      }
    });
    child.once('exit', (code) => reject(new Error(`controller exited (${code}):\n${log}`)));
  });
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'taras-array-bench-'));
  const { child, socket } = await startController(join(work, 'data'));
  const client = createApiClient({ socketPath: socket }, { timeoutMs: 60_000 });
  try {
    const submits: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      const began = performance.now();
      await client.post('/jobs', { spec: spec(`array-${run}`) });
      submits.push(performance.now() - began);
    }
    // The first listing after a change is the one that costs (the controller reuses an answer while nothing changed):
    // each run submits one small job first, so every listing is computed afresh.
    const timeQueue = async (path: string): Promise<number[]> => {
      const times: number[] = [];
      for (let run = 0; run < RUNS; run++) {
        await client.post('/jobs', { spec: { ...spec('touch'), array: undefined } });
        const began = performance.now();
        await client.get(path);
        times.push(performance.now() - began);
      }
      return times;
    };
    const folded = await timeQueue('/queue');
    const unfolded = await timeQueue('/queue?array=1');
    const throttled: number[] = [];
    const began = performance.now();
    await client.post('/jobs', { spec: { ...spec('throttled'), array: { text: `0-${TASKS - 1}%10` } } });
    throttled.push(performance.now() - began);
    const foldedThrottled = await timeQueue('/queue');
    const line = (what: string, ms: number[], target: number) =>
      `${what.padEnd(60)} ${median(ms).toFixed(0).padStart(6)} ms (median of ${ms.map((m) => m.toFixed(0)).join(', ')})   target < ${target} ms\n`;
    process.stdout.write(line(`submit one array of ${TASKS} tasks (request to answer)`, submits, 1000));
    process.stdout.write(line(`submit one array of ${TASKS} tasks with %10`, throttled, 1000));
    process.stdout.write(line(`GET /queue, ${RUNS} arrays of ${TASKS} pending tasks, folded`, folded, 300));
    process.stdout.write(line(`GET /queue?array=1 (taras queue -r), the same unfolded`, unfolded, 300));
    process.stdout.write(line(`GET /queue, folded, with a %10 array of ${TASKS} more`, foldedThrottled, 300));
  } finally {
    client.close();
    child.kill('SIGKILL');
    await new Promise((done) => child.once('exit', done));
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
