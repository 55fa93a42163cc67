// `node dist/bench/acct.js [DIR]`: `taras acct` end to end over a store of
// 100,000 finished jobs (30 days of them, about 3,300 a day): the store is
// filled, a real `taras controller` opens it, and the real CLI asks for a
// day's window, a week's, and the whole month (every job), as an
// administrator (all users). Each figure is the median of 5 runs, printed
// next to the target (0.5 s end to end). Also the store's query alone (the
// page as JSON made by SQLite, as the controller sends it).

import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { JobUsage, NewJob } from '../src/store/events.js';
import { openStore, type JobTransition } from '../src/store/store.js';
import type { JobId } from '../src/core/types.js';

const JOBS = 100_000;
const DAYS = 30;
const TARGET_MS = 500;
const RUNS = 5;
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const taras = join(root, 'bin/taras.js');

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

export function fill(path: string, nowMs: number): void {
  const store = openStore(path, { durability: 'process' });
  const batch = 100;
  const spanMs = DAYS * 86_400_000;
  for (let first = 0; first < JOBS; first += batch) {
    // A batch shares its times: submitted, started a minute later, ended 10 minutes after that.
    const submitMs = nowMs - spanMs + Math.floor((first / JOBS) * spanMs);
    const jobs: NewJob[] = Array.from({ length: batch }, (_, i) => ({
      user: `user${(first + i) % 7}`, name: `job-${first + i}`, partition: 'batch', scriptPath: '/home/user/run.sh',
      script: '#!/bin/sh\n#TARAS -N 1 -t 30\n./simulate\n', request: { nodes: { min: 1 }, ntasks: 4, cpusPerTask: 1, timeLimitSeconds: 1800 },
    }));
    const ids = store.submitMany(jobs, submitMs);
    store.appendMany(ids.map((jobId): JobTransition => ({ jobId, event: { type: 'started', nodes: ['node01'] } })), submitMs + 60_000);
    const usage: JobUsage = { cpuSeconds: 1200, userCpuSeconds: 1100, systemCpuSeconds: 100, maxRssKiB: 524_288 };
    store.appendMany(ids.map((jobId: JobId): JobTransition => ({ jobId, event: { type: 'ended', state: 'COMPLETED', exitCode: 0, usage } })), submitMs + 660_000);
  }
  store.close();
}

function timeQuery(path: string, fromMs: number, toMs: number): { ms: number; rows: number } {
  const store = openStore(path, { durability: 'process' });
  const times: number[] = [];
  let rows = 0;
  for (let run = 0; run < RUNS; run++) {
    const began = performance.now();
    rows = store.accountingJson({ fromMs, toMs }).count; // what GET /acct?format=rows (taras acct) asks for
    times.push(performance.now() - began);
  }
  store.close();
  return { ms: median(times), rows };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(process.argv[2] ?? tmpdir(), 'taras-bench-acct-'));
  const data = join(dir, 'data');
  const nowMs = Date.now();
  let began = performance.now();
  spawnSync('mkdir', ['-p', data]);
  fill(join(data, 'taras.db'), nowMs);
  console.log(`filled a store with ${JOBS.toLocaleString('en-US')} finished jobs over ${DAYS} days in ${((performance.now() - began) / 1000).toFixed(1)} s`);

  const controller = spawn(process.execPath, [taras, 'controller', '--data', data, '--port', '0'], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  try {
    const url = await new Promise<string>((resolveUrl, reject) => {
      let log = '';
      const timer = setTimeout(() => reject(new Error(`the controller did not start within 30 s:\n${log}`)), 30_000);
      controller.stderr!.on('data', (chunk: Buffer) => {
        log += chunk.toString();
        const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(log);
        if (match) {
          clearTimeout(timer);
          resolveUrl(match[1]);
        }
      });
    });
    const windows: [string, string, string][] = [['one day', 'now-1days', 'now'], ['one week', 'now-7days', 'now'], ['the whole month', 'now-31days', 'now']];
    console.log(`\n${'window'.padEnd(16)} ${'jobs'.padStart(8)} ${'store query'.padStart(12)} ${'taras acct'.padStart(11)}  target`);
    for (const [label, from, to] of windows) {
      const times: number[] = [];
      let lines = 0;
      for (let run = 0; run < RUNS; run++) {
        began = performance.now();
        const cli = spawnSync(process.execPath, [taras, 'acct', '-a', '-S', from, '-E', to, '-P', '-n', '--controller', url], { cwd: dir, encoding: 'utf8', maxBuffer: 1 << 28 });
        times.push(performance.now() - began);
        if (cli.status !== 0) throw new Error(`taras acct failed: ${cli.stderr}`);
        lines = cli.stdout.split('\n').length - 1;
      }
      const days = { 'one day': 1, 'one week': 7, 'the whole month': 31 }[label]!;
      const query = timeQuery(join(data, 'taras.db'), nowMs - days * 86_400_000, nowMs);
      const ms = median(times);
      console.log(`${label.padEnd(16)} ${String(lines).padStart(8)} ${`${query.ms.toFixed(0)} ms`.padStart(12)} ${`${ms.toFixed(0)} ms`.padStart(11)}  ${TARGET_MS} ms ${ms <= TARGET_MS ? 'met' : 'MISSED'}`);
    }
    // `taras report` over the whole month: every user's sums, made by SQLite in the controller (others wait meanwhile).
    const reports: number[] = [];
    let users = 0;
    for (let run = 0; run < RUNS; run++) {
      began = performance.now();
      const cli = spawnSync(process.execPath, [taras, 'report', '-S', 'now-31days', '-E', 'now', '--json', '--controller', url], { cwd: dir, encoding: 'utf8' });
      reports.push(performance.now() - began);
      if (cli.status !== 0) throw new Error(`taras report failed: ${cli.stderr}`);
      users = (JSON.parse(cli.stdout) as { users: unknown[] }).users.length;
    }
    const store = openStore(join(data, 'taras.db'), { durability: 'process' });
    const sums: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      began = performance.now();
      store.usageTotals(nowMs - 31 * 86_400_000, nowMs, nowMs);
      sums.push(performance.now() - began);
    }
    store.close();
    console.log(`\`taras report\`, the whole month: ${users} users' lines from ${JOBS.toLocaleString('en-US')} jobs, ${median(reports).toFixed(0)} ms end to end; the store's sums ${median(sums).toFixed(0)} ms (what holds the controller)`);
  } finally {
    controller.kill('SIGTERM');
    await new Promise((resolveExit) => controller.once('exit', resolveExit));
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) void main();
