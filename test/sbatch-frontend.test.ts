// The sbatch front end (issue 12): #SBATCH lines read like #TARAS lines (#TARAS
// wins for the same option), script arguments after the script's name, and
// Slurm's names in the job's environment.

import assert from 'node:assert/strict';
import { spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir, userInfo } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { killHard, killJobProcesses, startDaemon } from './daemon-process.js';
import { formatError, parseDirectives, type Parsed } from '../src/jobspec/index.js';

function valueOf<T>(parsed: Parsed<T>): T {
  assert.ok(parsed.ok, `expected success, got ${parsed.ok ? '' : parsed.errors.map(formatError).join('; ')}`);
  return parsed.value;
}

describe('#SBATCH directives', () => {
  it('reads a script like the examples of Slurm\'s sbatch documentation', () => {
    const text = [
      '#!/bin/bash',
      '#',
      '#SBATCH --job-name=test',
      '#SBATCH --output=slurm-%j.out',
      '#SBATCH -N 2',
      '#SBATCH --ntasks=4',
      '#SBATCH --time=10:00',
      '#SBATCH --mem=100',
      '#SBATCH -p debug',
      '',
      'srun hostname',
      '',
    ].join('\n');
    const layer = valueOf(parseDirectives(text, 'job.sh'));
    assert.deepEqual(layer.values, {
      name: 'test', output: 'slurm-%j.out', nodes: { min: 2 }, ntasks: 4, timeLimitSeconds: 600, memoryMiB: 100, partition: 'debug',
    });
    assert.deepEqual(layer.origins.nodes, { source: 'directive', file: 'job.sh', line: 5, option: '-N' });
  });

  it('lets #TARAS win over #SBATCH for the same option, whatever the line order', () => {
    for (const lines of [
      ['#SBATCH -t 10', '#TARAS -t 20'],
      ['#TARAS -t 20', '#SBATCH -t 10'],
    ]) {
      const layer = valueOf(parseDirectives(['#!/bin/sh', ...lines, '#SBATCH -J both', 'true', ''].join('\n'), 'a.sh'));
      assert.equal(layer.values.timeLimitSeconds, 20 * 60, lines.join(' / '));
      assert.equal(layer.values.name, 'both');
      assert.equal(layer.origins.timeLimitSeconds?.option, '-t');
      assert.equal(layer.origins.timeLimitSeconds?.line, lines[0].startsWith('#TARAS') ? 2 : 3);
    }
  });

  it('stops at the first command and reports #SBATCH errors with their line, as #TARAS ones', () => {
    const parsed = parseDirectives('#!/bin/sh\n#SBATCH --cpu-per-task=2\n#TARAS -N x\necho hi\n#SBATCH -N 4\n', 'b.sh');
    assert.ok(!parsed.ok);
    assert.deepEqual(parsed.errors.map(formatError), [
      'b.sh:2: --cpu-per-task: unknown option; did you mean --cpus-per-task?',
      "b.sh:3: -N: got 'x': expected a node count N or a range N-M (e.g. 4 or 2-4)",
    ]);
    assert.match(formatError(parsed.warnings[0]), /^b\.sh:5: ignored: #SBATCH lines after the first command \(line 4\)/);
    const words = parseDirectives('#!/bin/sh\n#SBATCH hostname\n', 'c.sh');
    assert.ok(!words.ok);
    assert.match(formatError(words.errors[0]), /^c\.sh:2: 'hostname' is not an option: a #SBATCH line holds options/);
    // #SBATCHX and ##SBATCH are comments, as in sbatch
    assert.deepEqual(valueOf(parseDirectives('#!/bin/sh\n#SBATCHX -N 2\n##SBATCH -N 3\n', 'd.sh')).values, {});
  });
});

// ---- through the real CLI, a real controller and a real agent ----

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const taras = join(root, 'bin/taras.js');
const work = mkdtempSync(join(tmpdir(), 'taras-sbatch-'));
const started: ChildProcess[] = [];

after(async () => {
  for (const child of started) await killHard(child);
  killJobProcesses([join(work, 'data', 'agent')]);
  rmSync(work, { recursive: true, force: true });
});

/** Starts a daemon and resolves when its log shows `ready`. */
const daemon = async (args: string[], ready: RegExp): Promise<RegExpMatchArray> => (await startDaemon(taras, started, args, ready, work)).match;

let url = '';
/** `taras ARGS` as a user types it, the controller from the environment (options after a script belong to the script). */
function cli(...args: string[]) {
  const run = spawnSync(process.execPath, [taras, ...args], { cwd: work, encoding: 'utf8', timeout: 30_000, env: { ...process.env, TARAS_CONTROLLER: url, TARAS_JOB_ID: '' } });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

function submitted(run: { code: number | null; stdout: string; stderr: string }): number {
  assert.equal(run.code, 0, run.stderr);
  const match = /^Submitted batch job (\d+)\n$/.exec(run.stdout);
  assert.ok(match, `sbatch's line, got ${JSON.stringify(run.stdout)}`);
  return Number(match[1]);
}

function waitDone(id: number): void {
  const waited = cli('wait', String(id));
  assert.match(waited.stdout, /COMPLETED \(exit code 0\)/, waited.stdout + waited.stderr);
}

describe('an unchanged Slurm script through taras submit', () => {
  before(async () => {
    const data = join(work, 'data');
    const config = join(work, 'cluster.toml');
    writeFileSync(config, `[cluster]\nname = "sb"\ndata_dir = "data"\n[[nodes]]\nnames = "node[01-04]"\ncpus = 2\nmemory = "16G"\n[[partitions]]\nname = "debug"\nnodes = "ALL"\ndefault = true\n`);
    url = (await daemon(['controller', '--config', config, '--port', '0'], /listening on (http:\/\/127\.0\.0\.1:\d+)/))[1];
    await daemon(['agent', '--controller', url, '--virtual', '4x2', '--data', join(data, 'agent'), '--key', join(data, 'cluster.key')], /registered 4 node/);
  });

  it('runs with its #SBATCH options, its arguments after its name, and Slurm\'s variables', () => {
    writeFileSync(join(work, 'slurm.sh'), [
      '#!/bin/bash',
      '#SBATCH --job-name=hello_slurm',
      '#SBATCH -N 2',
      '#SBATCH --ntasks=4',
      '#SBATCH --time=00:05:00',
      '#SBATCH --mem=100',
      '#SBATCH -o slurm-%j.out',
      '#TARAS -J from_taras',
      '',
      'echo "args: $*"',
      'for v in SLURM_JOB_ID SLURM_JOBID SLURM_JOB_NAME SLURM_JOB_NODELIST SLURM_NODELIST SLURM_NNODES SLURM_JOB_NUM_NODES SLURM_NTASKS \\',
      '  SLURM_NPROCS SLURM_CPUS_PER_TASK SLURM_CPUS_ON_NODE SLURM_MEM_PER_NODE SLURM_JOB_PARTITION SLURM_SUBMIT_DIR SLURM_SUBMIT_HOST \\',
      '  SLURM_JOB_USER SLURM_RESTART_COUNT; do eval "echo $v=\\${$v-unset}"; done',
      '',
    ].join('\n'));
    const id = submitted(cli('submit', 'slurm.sh', '--foo', '-n', '3', 'last word'));
    waitDone(id);
    const out = readFileSync(join(work, `slurm-${id}.out`), 'utf8');
    assert.equal(out, [
      'args: --foo -n 3 last word',
      `SLURM_JOB_ID=${id}`, `SLURM_JOBID=${id}`, 'SLURM_JOB_NAME=from_taras',
      'SLURM_JOB_NODELIST=node[01-02]', 'SLURM_NODELIST=node[01-02]', 'SLURM_NNODES=2', 'SLURM_JOB_NUM_NODES=2',
      'SLURM_NTASKS=4', 'SLURM_NPROCS=4', 'SLURM_CPUS_PER_TASK=1', 'SLURM_CPUS_ON_NODE=2', 'SLURM_MEM_PER_NODE=100',
      'SLURM_JOB_PARTITION=debug', `SLURM_SUBMIT_DIR=${work}`, `SLURM_SUBMIT_HOST=${hostname()}`,
      `SLURM_JOB_USER=${userInfo().username}`, 'SLURM_RESTART_COUNT=0', '',
    ].join('\n'));
    const shown = JSON.parse(cli('show', '--json', String(id)).stdout) as { name: string; spec: { script: { args: string[] }; timeLimitSeconds: number } };
    assert.equal(shown.name, 'from_taras');
  });

  it('keeps taras submit\'s own options before the script, and --many, working', () => {
    writeFileSync(join(work, 'plain.sh'), '#!/bin/sh\n#SBATCH -t 1\necho "plain $1"\n');
    const json = cli('submit', '--json', '-J', 'j', 'plain.sh', '--json');
    assert.equal(json.code, 0, json.stderr);
    const { id } = JSON.parse(json.stdout) as { id: number };
    waitDone(id);
    assert.equal(readFileSync(join(work, `taras-${id}.out`), 'utf8'), 'plain --json\n');
    writeFileSync(join(work, 'many.jsonl'), '{"script": "plain.sh", "arguments": ["a"]}\n{"script": "plain.sh", "arguments": ["b"]}\n');
    const many = cli('submit', '--many', 'many.jsonl', '-t', '1');
    assert.equal(many.code, 0, many.stderr);
    assert.match(many.stdout, /^Submitted 2 jobs: \d+-\d+\n$/);
    const noScript = cli('submit', '-t', '1');
    assert.equal(noScript.code, 2);
    assert.match(noScript.stderr, /taras submit needs a batch script/);
  });
});
