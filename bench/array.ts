// `node dist/bench/array.js`: one request submitting a job array of 10,000
// tasks (sbatch --array=0-9999) to a real `taras controller` (a child
// process, its store on the system temp folder, 16 virtual nodes and no
// agents), timed from the request sent to the answer received over the Unix
// socket, then `GET /queue` (what `taras queue` reads) with the 10,000 tasks
// pending. Each figure is printed beside its target. Then, in this process,
// the controller's engine on its own store: one scheduling pass with a job
// waiting on a whole array of 10,000 tasks (--dependency=afterok:ARRAY),
// with all but 10 tasks ended, and with all of them pending. Not a test:
// figures vary with the machine and its disk.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createApiClient } from '../src/net/client.js';
import { defaultClusterConfig } from '../src/config/cluster.js';
import { ControllerEngine } from '../src/controller/engine.js';
import type { JobSpec } from '../src/jobspec/types.js';
import { openStore } from '../src/store/store.js';

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

/**
 * One pass of the engine (median of 20, each after a change) with and without a job waiting on array
 * `ARRAY` (afterok): `ended` true ends all but 10 tasks first (16 nodes of 8 CPUs), else all wait.
 */
function dependencyPass(ended: boolean): { without: number; with: number } {
  const work = mkdtempSync(join(tmpdir(), 'taras-array-deps-'));
  const store = openStore(join(work, 'jobs.db'));
  const clock = { ms: Date.UTC(2026, 10, 28, 12) };
  const engine = new ControllerEngine(defaultClusterConfig(work, { count: 16, cpus: 8 }), store, { start: async () => {}, signal: async () => {} }, () => clock.ms, () => {});
  engine.agentRegistered([...engine.nodes.keys()], []);
  const job = (extra: Partial<JobSpec>): JobSpec => ({ ...spec('deps'), submitEnv: undefined, array: undefined, ...extra } as unknown as JobSpec);
  try {
    const [array] = engine.submit([{ user: 'alice', spec: job({ array: { text: `0-${TASKS - 1}` } }) }]);
    let left = TASKS;
    for (let started = engine.schedule(); ended && started.length > 0; started = engine.schedule()) {
      for (const id of started) if (left > 10) engine.jobReport({ jobId: id, state: 'COMPLETED', exitCode: 0, endTimeMs: clock.ms }), left--;
    }
    const pass = (): number => {
      const times: number[] = [];
      for (let run = 0; run < 20; run++) {
        engine.touch();
        const began = performance.now();
        engine.schedule();
        times.push(performance.now() - began);
      }
      return median(times);
    };
    const without = pass();
    engine.submit([{ user: 'alice', spec: job({ dependency: { text: `afterok:${array}`, all: true, items: [{ type: 'afterok', ids: [array] }] } }) }]);
    return { without, with: pass() };
  } finally {
    store.close();
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
for (const ended of [true, false]) {
  const figures = dependencyPass(ended);
  const what = ended ? `all but 10 of its ${TASKS} tasks ended` : `its ${TASKS} tasks pending`;
  process.stdout.write(`${`a pass with a job waiting on an array, ${what}`.padEnd(60)} ${figures.with.toFixed(2).padStart(6)} ms (${figures.without.toFixed(2)} ms without it)   target < 50 ms\n`);
}
