// Behaviour of the synthetic workload generator (src/sim/workload.ts), its
// seeded random source (src/core/random.ts) and the `workload generate` command.

import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Command, CommanderError } from 'commander';
import { registerWorkloadCommand } from '../src/cli/workload.js';
import { SeededRandom } from '../src/core/random.js';
import { ESTIMATE_STEPS_SECONDS, generateWorkload, type WorkloadOptions } from '../src/sim/workload.js';

// SWF field positions (0-based) used below.
const ID = 0;
const SUBMIT = 1;
const WAIT = 2;
const RUNTIME = 3;
const ALLOCATED = 4;
const REQUESTED = 7;
const ESTIMATE = 8;
const STATUS = 10;
const USER = 11;
const QUEUE = 14;
const PARTITION = 15;

const DAY = 86400;
const HOUR = 3600;

interface Workload {
  text: string;
  header: string[];
  jobs: number[][];
}

function generate(options: Partial<WorkloadOptions> = {}): Workload {
  const o: WorkloadOptions = { jobs: 5000, procs: 128, load: 0.8, seed: 1, ...options };
  const lines = [...generateWorkload(o)];
  return {
    text: lines.join('\n') + '\n',
    header: lines.filter((l) => l.startsWith(';')),
    jobs: lines.filter((l) => !l.startsWith(';')).map((l) => l.split(' ').map(Number)),
  };
}

const isPowerOfTwo = (n: number): boolean => n > 0 && (n & (n - 1)) === 0;

function offeredLoad(jobs: number[][], procs: number): number {
  const work = jobs.reduce((sum, j) => sum + j[ALLOCATED] * j[RUNTIME], 0);
  const span = jobs[jobs.length - 1][SUBMIT] - jobs[0][SUBMIT];
  return work / (procs * span);
}

describe('synthetic workload generator', () => {
  const standard = generate();

  it('gives byte-identical output for the same seed and different output for another seed', () => {
    assert.equal(generate().text, standard.text);
    assert.notEqual(generate({ seed: 2 }).text, standard.text);
  });

  it('writes one line of 18 integer fields per job, numbered 1..N, submitted in order from 0', () => {
    assert.equal(standard.jobs.length, 5000);
    standard.jobs.forEach((fields, i) => {
      assert.equal(fields.length, 18, `job line ${i + 1}`);
      assert.ok(fields.every(Number.isInteger), `job line ${i + 1}: ${fields.join(' ')}`);
      assert.equal(fields[ID], i + 1);
      if (i > 0) assert.ok(fields[SUBMIT] >= standard.jobs[i - 1][SUBMIT], `submit of job ${i + 1} goes back`);
    });
    assert.equal(standard.jobs[0][SUBMIT], 0);
  });

  it('writes a header with MaxProcs, MaxJobs and the options', () => {
    assert.ok(standard.header.includes('; MaxProcs: 128'));
    assert.ok(standard.header.includes('; MaxJobs: 5000'));
    assert.ok(standard.header.includes('; Version: 2'));
    assert.ok(standard.header.includes('; Computer: Taras synthetic'));
    assert.ok(standard.header.some((l) => l.includes('--jobs 5000 --procs 128 --load 0.8 --seed 1')));
  });

  it('fills the fixed fields: wait -1, allocated = requested, queue 1, partition 1, users 1..50', () => {
    for (const j of standard.jobs) {
      assert.equal(j[WAIT], -1);
      assert.equal(j[ALLOCATED], j[REQUESTED]);
      assert.equal(j[QUEUE], 1);
      assert.equal(j[PARTITION], 1);
      assert.ok(j[USER] >= 1 && j[USER] <= 50, `user ${j[USER]}`);
    }
  });

  it('gives the first users far more jobs than the last ones (Zipf-like activity)', () => {
    const countOf = (user: number): number => standard.jobs.filter((j) => j[USER] === user).length;
    assert.ok(countOf(1) > 5 * countOf(50), `user 1: ${countOf(1)}, user 50: ${countOf(50)}`);
  });

  it('sizes fit the machine, most are powers of two and many are serial', () => {
    const sizes = standard.jobs.map((j) => j[ALLOCATED]);
    assert.ok(sizes.every((s) => s >= 1 && s <= 128));
    const powerOfTwoShare = sizes.filter(isPowerOfTwo).length / sizes.length;
    const serialShare = sizes.filter((s) => s === 1).length / sizes.length;
    assert.ok(powerOfTwoShare > 0.7 && powerOfTwoShare < 0.9, `powers of two: ${powerOfTwoShare}`);
    assert.ok(serialShare > 0.1 && serialShare < 0.3, `serial: ${serialShare}`);
    assert.ok(sizes.includes(128), 'some jobs use the whole machine');
  });

  it('sizes never exceed a machine whose size is not a power of two', () => {
    const { jobs } = generate({ procs: 100, jobs: 2000 });
    assert.ok(jobs.every((j) => j[ALLOCATED] >= 1 && j[ALLOCATED] <= 100));
    assert.ok(generate({ procs: 1, jobs: 100 }).jobs.every((j) => j[ALLOCATED] === 1));
  });

  it('runtimes are heavy-tailed between 1 s and 36 h', () => {
    const runtimes = standard.jobs.map((j) => j[RUNTIME]).sort((a, b) => a - b);
    const median = runtimes[Math.floor(runtimes.length / 2)];
    const mean = runtimes.reduce((a, b) => a + b, 0) / runtimes.length;
    assert.ok(runtimes[0] >= 1 && runtimes[runtimes.length - 1] <= 36 * HOUR);
    assert.ok(mean > 3 * median, `mean ${mean}, median ${median}`);
    assert.ok(runtimes.filter((r) => r < 60).length > runtimes.length / 10, 'many jobs under a minute');
    assert.ok(runtimes.filter((r) => r > 12 * HOUR).length > 0, 'some jobs over 12 hours');
  });

  it('estimates are round limits, never below the runtime and often far above it', () => {
    for (const j of standard.jobs) {
      assert.ok(ESTIMATE_STEPS_SECONDS.includes(j[ESTIMATE]), `estimate ${j[ESTIMATE]} of job ${j[ID]}`);
      assert.ok(j[ESTIMATE] >= j[RUNTIME], `job ${j[ID]}: estimate ${j[ESTIMATE]} < runtime ${j[RUNTIME]}`);
    }
    const farAbove = standard.jobs.filter((j) => j[ESTIMATE] >= 3 * j[RUNTIME]).length;
    assert.ok(farAbove > standard.jobs.length / 3, `estimate >= 3x runtime for ${farAbove} jobs`);
  });

  it('kills a plausible share of jobs at their limit, with status 0', () => {
    const atLimit = standard.jobs.filter((j) => j[RUNTIME] === j[ESTIMATE]);
    const share = atLimit.length / standard.jobs.length;
    assert.ok(share > 0.04 && share < 0.12, `share at limit: ${share}`);
    const killed = standard.jobs.filter((j) => j[STATUS] === 0);
    assert.ok(killed.every((j) => j[RUNTIME] === j[ESTIMATE]));
    assert.ok(killed.length >= 0.9 * atLimit.length, 'almost every job at its limit was killed there');
    assert.ok(standard.jobs.every((j) => j[STATUS] === 0 || j[STATUS] === 1));
  });

  for (const load of [0.5, 0.9]) {
    it(`realises the requested offered load ${load} within 10%`, () => {
      for (const procs of [64, 256]) {
        const realised = offeredLoad(generate({ load, procs, seed: 11 }).jobs, procs);
        assert.ok(Math.abs(realised - load) <= 0.1 * load, `procs ${procs}: realised load ${realised}`);
      }
    });
  }

  it('submits more jobs in the busiest 8 hours of the day than in the quietest 8', () => {
    const perHour = new Array<number>(24).fill(0);
    for (const j of standard.jobs) perHour[Math.floor((j[SUBMIT] % DAY) / HOUR)]++;
    const windows = perHour.map((_, start) =>
      Array.from({ length: 8 }, (_, k) => perHour[(start + k) % 24]).reduce((a, b) => a + b, 0),
    );
    const busiest = Math.max(...windows);
    const quietest = Math.min(...windows);
    assert.ok(standard.jobs[standard.jobs.length - 1][SUBMIT] > 10 * DAY, 'the trace spans many days');
    assert.ok(busiest > 2 * quietest, `busiest 8 h: ${busiest} jobs, quietest 8 h: ${quietest}`);
  });

  it('streams 100,000 jobs with ids 1..N and a header', () => {
    let jobs = 0;
    let headers = 0;
    for (const line of generateWorkload({ jobs: 100_000, procs: 256, load: 0.9, seed: 7 })) {
      if (line.startsWith(';')) headers++;
      else assert.equal(Number(line.slice(0, line.indexOf(' '))), ++jobs);
    }
    assert.equal(jobs, 100_000);
    assert.ok(headers > 0);
  });

  it('rejects invalid options with a RangeError naming the option', () => {
    assert.throws(() => generateWorkload({ jobs: 10, procs: 0, load: 0.8, seed: 1 }).next(), /procs/);
    assert.throws(() => generateWorkload({ jobs: 10, procs: 8, load: 2.5, seed: 1 }).next(), /load/);
  });
});

describe('SeededRandom', () => {
  it('repeats its sequence for a seed and stays within its ranges', () => {
    const a = new SeededRandom(42);
    const b = new SeededRandom(42);
    for (let i = 0; i < 1000; i++) {
      const x = a.next();
      assert.equal(x, b.next());
      assert.ok(x >= 0 && x < 1);
      const n = a.int(3, 5);
      b.int(3, 5);
      assert.ok(Number.isInteger(n) && n >= 3 && n <= 5);
    }
    assert.notEqual(new SeededRandom(42).next(), new SeededRandom(43).next());
    assert.notEqual(new SeededRandom(42, 1).next(), new SeededRandom(42, 2).next());
  });

  it('draws exponentials with the requested mean and picks by weight', () => {
    const rng = new SeededRandom(7);
    let sum = 0;
    for (let i = 0; i < 20_000; i++) sum += rng.exponential(10);
    assert.ok(Math.abs(sum / 20_000 - 10) < 0.5, `mean ${sum / 20_000}`);
    const counts = [0, 0, 0];
    for (let i = 0; i < 20_000; i++) counts[rng.pick([1, 0, 3])]++;
    assert.equal(counts[1], 0);
    assert.ok(counts[2] > 2.5 * counts[0] && counts[2] < 3.5 * counts[0], `counts ${counts.join(' ')}`);
  });
});

describe('taras workload generate', () => {
  function program(stderr: string[]): Command {
    const p = new Command('taras').exitOverride().configureOutput({
      writeErr: (s) => stderr.push(s),
      writeOut: () => {},
    });
    registerWorkloadCommand(p);
    return p;
  }

  for (const [flags, named] of [
    [['--jobs', '1.5'], '--jobs'],
    [['--load', '3'], '--load'],
    [['--procs', '-4'], '--procs'],
  ] as const) {
    it(`rejects ${flags.join(' ')} with one line naming the flag and exit code 2`, async () => {
      const stderr: string[] = [];
      await assert.rejects(
        program(stderr).parseAsync(['workload', 'generate', ...flags], { from: 'user' }),
        (e: unknown) => e instanceof CommanderError && e.exitCode === 2,
      );
      const text = stderr.join('');
      assert.equal(text.trimEnd().split('\n').length, 1, text);
      assert.ok(text.includes(named) && text.includes(`'${flags[1]}'`), text);
    });
  }

  it('writes to --output the same bytes the generator yields', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'taras-workload-'));
    try {
      const file = join(dir, 'w.swf');
      const args = ['--jobs', '3000', '--procs', '64', '--load', '0.7', '--seed', '5', '-o', file];
      await program([]).parseAsync(['workload', 'generate', ...args], { from: 'user' });
      const expected = generate({ jobs: 3000, procs: 64, load: 0.7, seed: 5 }).text;
      assert.equal(await readFile(file, 'utf8'), expected);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
