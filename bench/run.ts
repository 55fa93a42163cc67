// `npm run bench`: the speed targets, measured on this machine and
// printed next to the targets. Not a test: figures vary with the machine.

import { resolve } from 'node:path';
import { SeededRandom } from '../src/core/random.js';
import { Scheduler, type PolicyName } from '../src/core/scheduler.js';
import { jobId, type JobRequest } from '../src/core/types.js';
import { simulate } from '../src/sim/simulator.js';
import { normalise, parseSwf, readSwf, type Workload } from '../src/sim/swf.js';
import { generateWorkload } from '../src/sim/workload.js';
import { tracesFolder } from '../src/cli/demo.js';
import { renderTable, round } from '../src/cli/format.js';

interface Row {
  what: string;
  measured: number;
  unit: 's' | 'ms';
  target: number;
  extra?: string;
}

function timeSimulation(workload: Workload, policy: PolicyName, predictions = true): { seconds: number; jobs: number } {
  const began = performance.now();
  const result = simulate(workload, policy, { predictions });
  return { seconds: (performance.now() - began) / 1000, jobs: result.outcomes.length };
}

function request(id: number, submitTime: number, size: number, estimate: number): JobRequest {
  return { id: jobId(id), submitTime, size, estimate, user: 1, queue: 1, partition: 1 };
}

/** A scheduler at t=100 with `running` jobs started at 0 and `queued` jobs waiting (already planned if asked). */
function loadedScheduler(policy: PolicyName, running: number, queued: number, seed: number, planQueued: boolean): Scheduler {
  const random = new SeededRandom(seed);
  const processors = 4096;
  const scheduler = new Scheduler(policy, { processors }, 0);
  let id = 1;
  for (let i = 0; i < running; i++) scheduler.submit(request(id++, 0, random.int(1, 4), random.int(600, 86400)));
  scheduler.pass(0);
  for (let i = 0; i < queued; i++) {
    const size = random.chance(0.5) ? 2 ** random.int(0, 11) : random.int(1, 2048);
    scheduler.submit(request(id++, 50, size, random.int(60, 86400)));
  }
  if (planQueued) scheduler.pass(50);
  return scheduler;
}

function medianMs(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** Median wall time of one pass at t=100 over fresh schedulers. */
function timePass(policy: PolicyName, planQueued: boolean, predictions: boolean, before?: (s: Scheduler) => void): number {
  const samples: number[] = [];
  for (let round = 0; round < 7; round++) {
    const scheduler = loadedScheduler(policy, 1000, 10000, 11 + round, planQueued);
    before?.(scheduler);
    const began = performance.now();
    scheduler.pass(100, { predictions });
    samples.push(performance.now() - began);
  }
  return medianMs(samples);
}

async function main(): Promise<void> {
  const rows: Row[] = [];
  const say = (text: string) => process.stderr.write(`${text}\n`);

  say('generating 100,000 jobs (256 processors, load 0.9, seed 7)...');
  const text = [...generateWorkload({ jobs: 100000, procs: 256, load: 0.9, seed: 7 })].join('\n');
  const generated = normalise(parseSwf(text, 'generated'), 256);
  for (const [policy, target] of [['easy', 1], ['conservative', 10]] as const) {
    say(`simulating it with ${policy}...`);
    const { seconds, jobs } = timeSimulation(generated, policy);
    rows.push({ what: `${policy}: generated 100,000 jobs`, measured: seconds, unit: 's', target, extra: `${round(jobs / seconds, 0)} jobs/s` });
  }

  say('simulating it with easy, without predictions...');
  const bare = timeSimulation(generated, 'easy', false);
  rows.push({ what: 'easy: same, without predictions', measured: bare.seconds, unit: 's', target: Infinity, extra: `${round(bare.jobs / bare.seconds, 0)} jobs/s` });

  const lublinPath = resolve(tracesFolder(), 'lublin-256.swf');
  say(`simulating ${lublinPath} with conservative...`);
  const lublin = await readSwf(lublinPath);
  const lublinRun = timeSimulation(normalise(lublin, lublin.headerProcessors!), 'conservative');
  rows.push({ what: 'conservative: lublin-256.swf', measured: lublinRun.seconds, unit: 's', target: 5, extra: `${round(lublinRun.jobs / lublinRun.seconds, 0)} jobs/s` });

  say('timing single passes (10,000 queued, 1,000 running)...');
  rows.push({ what: 'easy: one pass, 10,000 queued, 1,000 running', measured: timePass('easy', false, false), unit: 'ms', target: 5 });
  rows.push({
    what: 'conservative: one pass planning all 10,000 new',
    measured: timePass('conservative', false, true),
    unit: 'ms',
    target: 100,
  });
  rows.push({
    what: 'conservative: one pass compressing all 10,000',
    measured: timePass('conservative', true, true, (s) => {
      const first = s.state.running[0];
      s.end(first.job.id, 100); // an early end: every reservation may move
    }),
    unit: 'ms',
    target: 100,
  });
  rows.push({
    what: 'easy: one pass + planned starts of all 10,000',
    measured: timePass('easy', false, true),
    unit: 'ms',
    target: Infinity,
    extra: 'queue projection, rebuilt',
  });

  const table = renderTable(
    ['benchmark', 'measured', 'target', 'met', 'note'],
    rows.map((r) => [
      r.what,
      `${round(r.measured, 2)} ${r.unit}`,
      r.target === Infinity ? '-' : `< ${r.target} ${r.unit}`,
      r.target === Infinity ? '' : r.measured < r.target ? 'yes' : 'NO',
      r.extra ?? '',
    ]),
    new Set([1, 2]),
  );
  process.stdout.write(`${table}\n`);
}

await main();
