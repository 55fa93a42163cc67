// Trace replay with job types and deadlines (`taras simulate TRACE --cluster
// FILE --jobtypes TYPES`): the side file's format and errors, the admission
// at each arrival (guaranteed, unguaranteed, refused), the scheduled order on
// one node, the figures of deadlines met and missed, and the CLI.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseClusterConfig } from '../src/config/cluster.js';
import { simCluster } from '../src/cli/simulate.js';
import { normaliseOnCluster } from '../src/sim/cluster.js';
import { applyJobTypes, deadlineFigures, parseJobTypes } from '../src/sim/jobtypes.js';
import { simulate } from '../src/sim/simulator.js';
import { parseSwf } from '../src/sim/swf.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const work = mkdtempSync(join(tmpdir(), 'taras-simtypes-'));
after(() => rmSync(work, { recursive: true, force: true }));

const CLUSTER_TOML = `nodes = [{ names = "n1", cpus = 8, memory = "16G" }]
partitions = [{ name = "batch", nodes = "ALL", default = true }]
`;

const line = (id: number, submit: number, run: number, size: number, estimate: number) =>
  `${id} ${submit} -1 ${run} ${size} -1 -1 ${size} ${estimate} -1 1 1 1 -1 1 1 -1 -1`;

/** One node of 8 CPUs, every job takes it whole: 1 runs 0-100; 2, 3, 4 (100 s) wait; then three priority jobs. */
const TRACE = [
  '; MaxProcs: 8',
  line(1, 0, 100, 8, 100),
  line(2, 10, 100, 8, 100),
  line(3, 10, 100, 8, 100),
  line(4, 10, 100, 8, 100),
  line(5, 20, 50, 8, 50),
  line(6, 20, 50, 8, 50),
  line(7, 30, 50, 8, 50),
].join('\n');

/** 5: must end 250 s after submission (270): guaranteed. 6: by 80: short. 7: by 40, before 30 + 50: refused. */
const TYPES = 'job,type,deadline\n# priority jobs\n5,priority,250\n6,priority,60\n7,priority,10\n2,normal,\n';

function workloadWith(types?: string) {
  const parsed = parseClusterConfig(CLUSTER_TOML, join(work, 'cluster.toml'));
  assert.ok(parsed.ok);
  const workload = normaliseOnCluster(parseSwf(TRACE, 'trace.swf'), simCluster(parsed.config));
  return types === undefined ? { workload, unknown: 0 } : applyJobTypes(workload, parseJobTypes(types, 'types.csv'));
}

const startsOf = (result: ReturnType<typeof simulate>) => Object.fromEntries(result.outcomes.map((o) => [o.job.request.id, o.start]));

describe('simulate --jobtypes', () => {
  it('reads job,type,deadline lines; every problem names file:line and the fix', () => {
    const types = parseJobTypes(TYPES, 'types.csv');
    assert.deepEqual([...types], [[5, { type: 'priority', deadlineAfterSubmit: 250 }], [6, { type: 'priority', deadlineAfterSubmit: 60 }], [7, { type: 'priority', deadlineAfterSubmit: 10 }], [2, { type: 'normal' }]]);
    assert.throws(() => parseJobTypes('1,priority,\n2,urgent,5\n3,interactive,30\n3,normal,\n3,normal,\n4,normal,60\nx,normal,', 't.csv'), (error: Error) => {
      assert.equal(error.message, [
        "t.csv:1: a priority job needs its deadline in whole seconds after its submission (> 0), got ''",
        "t.csv:2: type 'urgent' is not normal, priority or interactive",
        't.csv:3: an interactive job has no deadline; leave the third field empty or make it priority',
        't.csv:5: job 3 is named twice; keep one line per job',
        't.csv:6: a normal job has no deadline; leave the third field empty or make it priority',
        "t.csv:7: job 'x' is not an SWF job number (a whole number)",
      ].join('\n'));
      return true;
    });
  });

  for (const policy of ['fcfs', 'easy', 'conservative'] as const) {
    it(`${policy}: 5 is guaranteed and ends by its deadline, 6 runs first and misses by 70 s, 7 is refused and runs as a normal job`, () => {
      const { workload } = workloadWith(TYPES);
      const result = simulate(workload, policy);
      assert.deepEqual(startsOf(result), { 1: 0, 6: 100, 5: 150, 2: 200, 3: 300, 4: 400, 7: 500 });
      assert.deepEqual(result.outcomes.map((o) => o.admission ?? '-'), ['-', '-', '-', '-', 'guaranteed', 'unguaranteed', 'refused']);
      const figures = deadlineFigures(result, 0);
      assert.deepEqual(figures.priority, {
        jobs: 2, meanWait: (130 + 80) / 2, meanBoundedSlowdown: ((130 + 50) / 50 + (80 + 50) / 50) / 2,
        guaranteed: 1, unguaranteed: 1, refused: 1, guaranteedMet: 1, guaranteedMissed: 0, unguaranteedMet: 0, unguaranteedMissed: 1, worstMissSeconds: 70,
      });
      assert.equal(figures.normal.jobs, 5);
      assert.equal(figures.normal.meanWait, (0 + 190 + 290 + 390 + 470) / 5);
    });
  }

  it('an interactive job goes first in the queue, after the running job: it overtakes every waiting job, and is counted on its own', () => {
    const { workload } = workloadWith('job,type,deadline\n7,interactive,\n');
    const result = simulate(workload, 'easy');
    // 7 arrives at 30 while 1 runs and 2-6 wait: it starts when 1 ends, ahead of them all.
    assert.deepEqual(startsOf(result), { 1: 0, 7: 100, 2: 150, 3: 250, 4: 350, 5: 450, 6: 500 });
    const figures = deadlineFigures(result, 0);
    assert.deepEqual(figures.interactive, { jobs: 1, meanWait: 70, meanBoundedSlowdown: (70 + 50) / 50 });
    assert.equal(figures.normal.jobs, 6);
  });

  it('without job types the same trace replays in FIFO order', () => {
    const result = simulate(workloadWith().workload, 'easy');
    assert.deepEqual(startsOf(result), { 1: 0, 2: 100, 3: 200, 4: 300, 5: 400, 6: 450, 7: 500 });
    assert.ok(result.outcomes.every((o) => o.admission === undefined));
  });

  it('the CLI reports deadlines met and missed per policy (--json), and needs --cluster', () => {
    writeFileSync(join(work, 'trace.swf'), `${TRACE}\n`);
    writeFileSync(join(work, 'cluster.toml'), CLUSTER_TOML);
    writeFileSync(join(work, 'types.csv'), `${TYPES}99,priority,100\n`);
    const taras = (...args: string[]) => spawnSync(process.execPath, [join(root, 'bin/taras.js'), 'simulate', join(work, 'trace.swf'), ...args], { encoding: 'utf8', timeout: 30_000 });
    const run = taras('--policy', 'easy', '--cluster', join(work, 'cluster.toml'), '--jobtypes', join(work, 'types.csv'), '--json');
    assert.equal(run.status, 0, run.stderr);
    const report = JSON.parse(run.stdout) as { deadlines: { priority: { guaranteedMet: number; unguaranteedMissed: number; refused: number; worstMissSeconds: number }; unknownJobs: number } };
    assert.deepEqual([report.deadlines.priority.guaranteedMet, report.deadlines.priority.unguaranteedMissed, report.deadlines.priority.refused, report.deadlines.priority.worstMissSeconds], [1, 1, 1, 70]);
    assert.equal(report.deadlines.unknownJobs, 1, 'job 99 is not in the trace');
    const table = taras('--policy', 'fcfs,conservative', '--cluster', join(work, 'cluster.toml'), '--jobtypes', join(work, 'types.csv'));
    assert.equal(table.status, 0, table.stderr);
    assert.match(table.stdout, /job types from types\.csv \(1 job numbers not in the replayed workload\):/);
    assert.match(table.stdout, /^fcfs\s+5\s+/m);
    const noCluster = taras('--jobtypes', join(work, 'types.csv'));
    assert.equal(noCluster.status, 2);
    assert.match(noCluster.stderr, /--jobtypes needs --cluster FILE/);
    const bad = taras('--cluster', join(work, 'cluster.toml'), '--jobtypes', join(work, 'trace.swf'));
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /trace\.swf:1: expected job,type,deadline/);
  });
});
