// `taras simulate` as a user runs it: the real CLI in a child process, on the
// shared traces and on small files written here.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const traces = process.env.TARAS_TRACES ?? resolve(root, '../shared/traces');
const ccs = join(traces, 'ccs-example.swf');
const work = mkdtempSync(join(tmpdir(), 'taras-cli-'));
after(() => rmSync(work, { recursive: true, force: true }));

function taras(...args: string[]) {
  const run = spawnSync(process.execPath, [join(root, 'bin/taras.js'), ...args], { encoding: 'utf8', cwd: work });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

const line = (id: number, submit: number, run: string, size: number, estimate: number) =>
  `${id} ${submit} -1 ${run} ${size} -1 -1 ${size} ${estimate} -1 1 1 1 -1 1 1 -1 -1`;

describe('taras simulate', () => {
  it('prints one row per policy with the CCS figures', () => {
    const run = taras('simulate', ccs, '--policy', 'fcfs-star,ffdh');
    assert.equal(run.code, 0, run.stderr);
    const rows = run.stdout.split('\n').filter((l) => /^(fcfs-star|ffdh) /.test(l));
    assert.equal(rows.length, 2);
    assert.match(rows[0], /27\.0 min .* 82\.0 %/);
    assert.match(rows[1], /85\.6 %/);
  });

  it('--json gives one object with the documented keys, a list for several policies', () => {
    const one = JSON.parse(taras('simulate', ccs, '--policy', 'conservative', '--json').stdout);
    for (const key of ['policy', 'procs', 'jobs', 'skipped', 'meanWait', 'meanBoundedSlowdown', 'utilization', 'makespan',
      'predictionMeanAbsError', 'predictionExactShare', 'predictionEV', 'predictionLate', 'wallSeconds']) {
      assert.ok(key in one, `missing key ${key}`);
    }
    assert.equal(one.policy, 'conservative');
    assert.equal(one.procs, 16);
    assert.equal(one.jobs, 10);
    assert.equal(one.meanWait, 1620);
    assert.equal(one.makespan, 7200);
    const many = JSON.parse(taras('simulate', ccs, '--policy', 'fcfs,easy', '--json').stdout);
    assert.deepEqual(many.map((r: { policy: string }) => r.policy), ['fcfs', 'easy']);
  });

  it('--out writes the per-job SWF in job id order with wait and runtime; one file per policy', () => {
    const single = join(work, 'one.swf');
    assert.equal(taras('simulate', ccs, '--policy', 'conservative', '--out', single).code, 0);
    const jobs = readFileSync(single, 'utf8').split('\n').filter((l) => l && !l.startsWith(';')).map((l) => l.split(' ').map(Number));
    assert.deepEqual(jobs.map((f) => f[0]), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    assert.deepEqual(jobs.map((f) => f[2] / 60), [0, 25, 0, 75, 0, 80, 0, 0, 10, 80]); // FCFS* starts
    assert.equal(jobs[1][3], 3000);
    const run = taras('simulate', ccs, '--policy', 'fcfs,easy', '--out', join(work, 'many.swf'));
    assert.ok(existsSync(join(work, 'many.fcfs.swf')) && existsSync(join(work, 'many.easy.swf')));
    assert.match(run.stdout, /many\.easy\.swf/);
  });

  it('reads gzipped traces and --procs overrides the header', () => {
    const gz = join(work, 'ccs.swf.gz');
    writeFileSync(gz, gzipSync(readFileSync(ccs)));
    const plain = JSON.parse(taras('simulate', ccs, '--policy', 'easy', '--json').stdout);
    const zipped = JSON.parse(taras('simulate', gz, '--policy', 'easy', '--json').stdout);
    assert.equal(zipped.meanWait, plain.meanWait);
    const small = JSON.parse(taras('simulate', ccs, '--policy', 'easy', '--json', '--procs', '8').stdout);
    assert.equal(small.procs, 8);
    assert.equal(small.skipped, 2); // the two 16-processor requests no longer fit
  });

  it('a malformed line stops the run naming file, line and field; --skip-bad-lines counts it', () => {
    const bad = join(work, 'bad.swf');
    writeFileSync(bad, ['; MaxProcs: 4', line(1, 0, '10', 1, 10), line(2, 0, '1O', 1, 10), '3 0 -1 10 1'].join('\n'));
    const run = taras('simulate', bad);
    assert.equal(run.code, 2);
    assert.equal(run.stderr.trim().split('\n').length, 1);
    assert.match(run.stderr, /bad\.swf:3: field 4 \(run time\): "1O" is not a number/);
    const skipped = taras('simulate', bad, '--skip-bad-lines', '--json');
    assert.equal(skipped.code, 0);
    assert.equal(JSON.parse(skipped.stdout).badLines, 2);
    assert.equal(JSON.parse(skipped.stdout).jobs, 1);
  });

  it('a missing file, an unknown policy, a bad number or no machine size: one line, exit code 2', () => {
    const noHeader = join(work, 'noheader.swf');
    writeFileSync(noHeader, line(1, 0, '10', 1, 10) + '\n');
    const cases: Array<[string[], RegExp]> = [
      [['simulate', join(work, 'nope.swf')], /nope\.swf: no such file/],
      [['simulate', ccs, '--policy', 'sjf'], /unknown policy 'sjf': expected one or more of fcfs, easy, conservative/],
      [['simulate', ccs, '--procs', '12x'], /option '--procs' got '12x'/],
      [['simulate', noHeader], /no '; MaxProcs:' or '; MaxNodes:' header: give the machine size with --procs N/],
    ];
    for (const [args, message] of cases) {
      const run = taras(...args);
      assert.equal(run.code, 2, args.join(' '));
      assert.match(run.stderr, message);
      assert.doesNotMatch(run.stderr, /\n\s+at /, 'no stack trace');
    }
  });

  it('every command answers --help with examples', () => {
    for (const args of [['--help'], ['simulate', '--help'], ['workload', 'generate', '--help'], ['demo', '--help']]) {
      const run = taras(...args);
      assert.equal(run.code, 0);
      assert.match(run.stdout, /Examples:/);
    }
  });
});
