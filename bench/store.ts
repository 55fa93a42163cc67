// `node dist/bench/store.js [DIR]`: durable submissions per second through the
// store for group-commit batches of 1, 8 and 64 (synchronous FULL, and NORMAL
// for comparison), and the time to load 50,000 pending jobs. Not a test:
// figures depend on the disk, whose fsync latency varies from run to run, so
// each figure is the median of several short runs. DIR (default: the system
// temp folder) should be on the disk the controller's data directory will use.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NewJob } from '../src/store/events.js';
import { openStore, type StoreOptions } from '../src/store/store.js';

const SCRIPT = '#!/bin/sh\n#TARAS --nodes=2 --time=10\nsrun ./simulate --steps 1000\n';
const RUNS = 5;
const SECONDS_PER_RUN = 1;

function newJob(i: number): NewJob {
  return {
    user: `user${i % 7}`,
    name: `job-${i}`,
    partition: 'batch',
    scriptPath: '/home/user/run.sh',
    script: SCRIPT,
    request: { nodes: 2, ntasks: 16, cpusPerTask: 1, memoryMiB: 4096, timeLimitMinutes: 10, chdir: '/home/user', output: 'slurm-%j.out' },
  };
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** Submissions per second, committing `batch` jobs per transaction for SECONDS_PER_RUN. */
function submissionsPerSecond(path: string, batch: number, durability: StoreOptions['durability']): number {
  const store = openStore(path, { durability });
  const jobs = Array.from({ length: batch }, (_, i) => newJob(i));
  let submitted = 0;
  const began = performance.now();
  while (performance.now() - began < SECONDS_PER_RUN * 1000) {
    store.submitMany(jobs, Date.now());
    submitted += batch;
  }
  const rate = submitted / ((performance.now() - began) / 1000);
  store.close();
  return rate;
}

function pendingLoadMs(path: string, pending: number): number {
  const store = openStore(path, { durability: 'process' });
  for (let i = 0; i < pending; i += 1000) store.submitMany(Array.from({ length: 1000 }, (_, j) => newJob(i + j)), Date.now());
  const times: number[] = [];
  for (let run = 0; run < 3; run++) {
    const began = performance.now();
    const listed = store.pendingJobs().length;
    times.push(performance.now() - began);
    if (listed !== pending) throw new Error(`listed ${listed} of ${pending}`);
  }
  store.close();
  return median(times);
}

const format = (n: number): string => Math.round(n).toLocaleString('en');

const dir = mkdtempSync(join(process.argv[2] ?? tmpdir(), 'taras-store-bench-'));
try {
  console.log(`store: submissions/s committed, median of ${RUNS} runs of ${SECONDS_PER_RUN} s, in ${dir}`);
  console.log('batch  synchronous=FULL (min-max)       ms/commit  synchronous=NORMAL');
  for (const batch of [1, 8, 64]) {
    const full: number[] = [];
    const normal: number[] = [];
    // Alternating runs share the disk's slow and fast moments.
    for (let run = 0; run < RUNS; run++) {
      full.push(submissionsPerSecond(join(dir, `full-${batch}.db`), batch, 'full'));
      normal.push(submissionsPerSecond(join(dir, `normal-${batch}.db`), batch, 'process'));
    }
    const fullRate = median(full);
    const range = `(${format(Math.min(...full))}-${format(Math.max(...full))})`;
    console.log(`${String(batch).padStart(5)}  ${format(fullRate).padStart(16)} ${range.padEnd(17)}  ${((1000 * batch) / fullRate).toFixed(2).padStart(9)}  ${format(median(normal)).padStart(18)}`);
  }
  console.log(`pendingJobs() loading 50,000 pending jobs: ${pendingLoadMs(join(dir, 'listing.db'), 50_000).toFixed(0)} ms`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
