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
import { buildJobSpec, formatError, mergeJobSpec, parseDirectives, parseFlagValues, parseJobFile, type Parsed } from '../src/jobspec/index.js';
import { wrapScript } from '../src/jobspec/merge.js';
import { optionByLong, optionByShort } from '../src/jobspec/options.js';
import { SBATCH_UNSUPPORTED, unsupportedOptionMessage } from '../src/jobspec/unsupported.js';

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
  rmSync(work, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
});

/** Starts a daemon and resolves when its log shows `ready`. */
const daemon = async (args: string[], ready: RegExp): Promise<RegExpMatchArray> => (await startDaemon(taras, started, args, ready, work)).match;

let url = '';
/** `taras ARGS` as a user types it, the controller from the environment (options after a script belong to the script). */
function cli(...args: string[]) {
  return cliWith({}, ...args);
}

function cliWith(env: Record<string, string>, ...args: string[]) {
  const run = spawnSync(process.execPath, [taras, ...args], { cwd: work, encoding: 'utf8', timeout: 30_000, env: { ...process.env, TARAS_CONTROLLER: url, TARAS_JOB_ID: '', ...env } });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** One controller (fcfs, partition debug) and a virtual agent of 4 nodes of 2 CPUs and 16 GiB, for every test here. */
async function startCluster(): Promise<void> {
  if (url !== '') return;
    const data = join(work, 'data');
    const config = join(work, 'cluster.toml');
    writeFileSync(config, `[cluster]\nname = "sb"\npolicy = "fcfs"\ndata_dir = "data"\n[[nodes]]\nnames = "node[01-04]"\ncpus = 2\nmemory = "16G"\n[[partitions]]\nname = "debug"\nnodes = "ALL"\ndefault = true\n`);
    url = (await daemon(['controller', '--config', config, '--port', '0'], /listening on (http:\/\/127\.0\.0\.1:\d+)/))[1];
    await daemon(['agent', '--controller', url, '--virtual', '4x2', '--data', join(data, 'agent'), '--key', join(data, 'cluster.key')], /registered 4 node/);
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
  before(startCluster);

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
      'srun -l bash -c \'echo "task $SLURM_PROCID of $SLURM_NTASKS on $SLURMD_NODENAME"\' | sort',
      '',
    ].join('\n'));
    // As after an install: srun (bin/) on the PATH the job gets from the submitting shell.
    const id = submitted(cliWith({ PATH: `${join(root, 'bin')}:${process.env.PATH ?? '/usr/bin:/bin'}`, SLURM_JOB_ID: '' }, 'submit', 'slurm.sh', '--foo', '-n', '3', 'last word'));
    waitDone(id);
    const out = readFileSync(join(work, `slurm-${id}.out`), 'utf8');
    assert.equal(out, [
      'args: --foo -n 3 last word',
      `SLURM_JOB_ID=${id}`, `SLURM_JOBID=${id}`, 'SLURM_JOB_NAME=from_taras',
      'SLURM_JOB_NODELIST=node[01-02]', 'SLURM_NODELIST=node[01-02]', 'SLURM_NNODES=2', 'SLURM_JOB_NUM_NODES=2',
      'SLURM_NTASKS=4', 'SLURM_NPROCS=4', 'SLURM_CPUS_PER_TASK=1', 'SLURM_CPUS_ON_NODE=2', 'SLURM_MEM_PER_NODE=100',
      'SLURM_JOB_PARTITION=debug', `SLURM_SUBMIT_DIR=${work}`, `SLURM_SUBMIT_HOST=${hostname()}`,
      `SLURM_JOB_USER=${userInfo().username}`, 'SLURM_RESTART_COUNT=0',
      '0: task 0 of 4 on node01', '1: task 1 of 4 on node01', '2: task 2 of 4 on node02', '3: task 3 of 4 on node02', '',
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

  it('--requeue and --no-requeue on the command line win over #SBATCH lines; neither leaves the script\'s', () => {
    writeFileSync(join(work, 'requeue.sh'), '#!/bin/sh\n#SBATCH -t 1\n#SBATCH --requeue\ntrue\n');
    writeFileSync(join(work, 'no-requeue.sh'), '#!/bin/sh\n#SBATCH -t 1\n#SBATCH --no-requeue\ntrue\n');
    const sbatch = (...args: string[]) => {
      const run = spawnSync(join(root, 'bin/sbatch'), args, { cwd: work, encoding: 'utf8', timeout: 30_000, env: { ...process.env, TARAS_CONTROLLER: url, TARAS_JOB_ID: '' } });
      return { code: run.status, stdout: run.stdout, stderr: run.stderr };
    };
    // Held, so that none of them runs: only what was stored counts.
    const ids = [
      submitted(sbatch('-H', '--no-requeue', 'requeue.sh')),
      submitted(cli('submit', '-H', '--no-requeue', 'requeue.sh')),
      submitted(cli('submit', '-H', 'requeue.sh')),
      submitted(sbatch('-H', '--requeue', 'no-requeue.sh')),
      submitted(cli('submit', '-H', 'no-requeue.sh')),
    ];
    const requeue = ids.map((id) => (JSON.parse(cli('show', '--json', String(id)).stdout) as { requeue: boolean }).requeue);
    assert.deepEqual(requeue, [false, false, true, true, false]);
    assert.equal(cli('cancel', ...ids.map(String)).code, 0);
  });
});

describe('sbatch options: parsing and building', () => {
  const build = (...lines: string[]) => buildJobSpec(
    mergeJobSpec(undefined, valueOf(parseDirectives(['#!/bin/sh', '#SBATCH -t 5', ...lines, 'true', ''].join('\n'), 'j.sh')), valueOf(parseFlagValues({}, { script: 'j.sh' }))),
    { scriptText: '', submitDir: '/home/u' },
  );
  const specOf = (...lines: string[]) => valueOf(build(...lines)).spec;

  it('--ntasks-per-node: N tasks on each node, or at most N with --ntasks', () => {
    assert.deepEqual([specOf('#SBATCH -N 2', '#SBATCH --ntasks-per-node=4')].map((s) => [s.nodes, s.ntasks, s.ntasksPerNode]), [[{ min: 2 }, 8, 4]]);
    assert.deepEqual([specOf('#SBATCH -n 10', '#SBATCH --ntasks-per-node=4')].map((s) => [s.nodes, s.ntasks]), [[{ min: 3, max: 10 }, 10]]);
    assert.deepEqual(specOf('#SBATCH --ntasks-per-node=3').ntasks, 3);
  });

  it('--mem-per-cpu and --mem are mutually exclusive', () => {
    assert.equal(specOf('#SBATCH --mem-per-cpu=2G').memPerCpuMiB, 2048);
    const both = build('#SBATCH --mem-per-cpu=2G', '#SBATCH --mem=4G');
    assert.ok(!both.ok);
    assert.match(formatError(both.errors[0]), /--mem \(j\.sh:4\) and --mem-per-cpu \(j\.sh:3\) are mutually exclusive/);
  });

  it('--nodelist and --exclude take host lists; a node list raises the node count', () => {
    const spec = specOf('#SBATCH -w node[01-03]', '#SBATCH --exclude=node07');
    assert.deepEqual([spec.nodelist, spec.exclude, spec.nodes], [['node01', 'node02', 'node03'], ['node07'], { min: 3 }]);
    const overlap = build('#SBATCH -w node[1-2]', '#SBATCH -x node2');
    assert.ok(!overlap.ok);
    assert.match(formatError(overlap.errors[0]), /node2 is in both --nodelist .* and --exclude/);
    assert.ok(!parseDirectives('#!/bin/sh\n#SBATCH -w node[3-1]\n', 'k.sh').ok);
  });

  it('--open-mode, --account, --comment, --mail-type, --mail-user are stored; --parsable is read; others refused by name', () => {
    const spec = specOf('#SBATCH --open-mode=truncate', '#SBATCH -A physics', '#SBATCH --comment="a run"', '#SBATCH --mail-type=end,FAIL', '#SBATCH --mail-user=a@b');
    assert.deepEqual([spec.openMode, spec.account, spec.comment, spec.mailType, spec.mailUser], ['truncate', 'physics', 'a run', ['END', 'FAIL'], 'a@b']);
    assert.equal(valueOf(parseDirectives('#!/bin/sh\n#SBATCH --parsable\n', 'p.sh')).values.parsable, true);
    const bad = parseDirectives('#!/bin/sh\n#SBATCH --open-mode=keep\n#SBATCH --mail-type=SOMETIMES\n', 'q.sh');
    assert.ok(!bad.ok);
    assert.deepEqual(bad.errors.map(formatError), [
      "q.sh:2: --open-mode: got 'keep': expected append or truncate",
      "q.sh:3: --mail-type: got 'SOMETIMES': expected mail types separated by commas: NONE, BEGIN, END, FAIL, REQUEUE, ALL, INVALID_DEPEND, STAGE_OUT, TIME_LIMIT, TIME_LIMIT_90, TIME_LIMIT_80, TIME_LIMIT_50, ARRAY_TASKS ('SOMETIMES' is not one)",
    ]);
  });

  it('--nice takes its value only attached; bare it is 100', () => {
    assert.equal(valueOf(parseDirectives('#!/bin/sh\n#SBATCH --nice\n', 'n.sh')).values.nice, 100);
    assert.equal(valueOf(parseDirectives('#!/bin/sh\n#SBATCH --nice=-20\n', 'n.sh')).values.nice, -20);
    assert.equal(valueOf(parseFlagValues({ nice: true })).values.nice, 100);
    const bad = parseDirectives('#!/bin/sh\n#SBATCH --nice=20000\n#SBATCH --nice 5\n', 'n.sh');
    assert.ok(!bad.ok);
    assert.deepEqual(bad.errors.map(formatError), [
      "n.sh:2: --nice: got '20000': expected a whole number from -10000 to 10000 (higher: later; negative: administrators only)",
      "n.sh:3: '5' is not an option: a #SBATCH line holds options such as --time=10",
    ]);
  });

  it('job.toml takes the same options', () => {
    const file = valueOf(parseJobFile('ntasks_per_node = 2\nmem_per_cpu = "1G"\nnodelist = "n[1-2]"\nopen_mode = "append"\naccount = "x"\nparsable = true\n', 'job.toml'));
    assert.deepEqual(file.values, { ntasksPerNode: 2, memPerCpuMiB: 1024, nodelist: ['n1', 'n2'], openMode: 'append', account: 'x', parsable: true });
  });

  it('--wrap is the whole script: a script besides it is refused', () => {
    const flags = valueOf(parseFlagValues({ wrap: 'hostname', time: '1' }, { script: 'run.sh' }));
    const built = buildJobSpec(mergeJobSpec(undefined, undefined, flags), { scriptText: wrapScript('hostname'), submitDir: '/' });
    assert.ok(!built.ok);
    assert.match(formatError(built.errors[0]), /--wrap \(--wrap\) is the whole script: leave out the script run\.sh/);
    assert.equal(wrapScript('hostname; date'), '#!/bin/sh\nhostname; date\n');
  });
});

describe('sbatch options through taras submit, a controller and an agent', () => {
  before(startCluster);
  const nodesOf = (id: number) => (JSON.parse(cli('show', '--json', String(id)).stdout) as { nodes: string[] }).nodes;

  it('--parsable prints the id alone; --wrap runs the command as the script', () => {
    const run = cli('submit', '--parsable', '-t', '1', '--wrap', 'echo "wrapped $((1 + 1)) $SLURM_JOB_NAME"');
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^\d+\n$/);
    const id = Number(run.stdout);
    waitDone(id);
    assert.equal(readFileSync(join(work, `taras-${id}.out`), 'utf8'), 'wrapped 2 wrap\n');
    writeFileSync(join(work, 'p.sh'), '#!/bin/sh\n#SBATCH --parsable\n#SBATCH -t 1\ntrue\n');
    assert.match(cli('submit', 'p.sh').stdout, /^\d+\n$/);
    const both = cli('submit', '-t', '1', '--wrap', 'true', 'p.sh');
    assert.deepEqual([both.code, both.stderr], [2, 'error: --wrap is the whole script: leave out the script p.sh (sbatch allows no script with --wrap)\n']);
  });

  it('--nodelist and --exclude choose the nodes; an unknown node is refused by name', () => {
    writeFileSync(join(work, 'n.sh'), '#!/bin/sh\n#SBATCH -t 1\necho "$SLURM_JOB_NODELIST $SLURM_NNODES"\n');
    const listed = submitted(cli('submit', '-w', 'node[03-04]', 'n.sh'));
    const excluded = submitted(cli('submit', '-x', 'node[01-03]', 'n.sh'));
    waitDone(listed);
    waitDone(excluded);
    assert.deepEqual(nodesOf(listed), ['node03', 'node04']);
    assert.equal(readFileSync(join(work, `taras-${listed}.out`), 'utf8'), 'node[03-04] 2\n');
    assert.deepEqual(nodesOf(excluded), ['node04']);
    const unknown = cli('submit', '-w', 'node[04-05]', 'n.sh');
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /--nodelist: no node named node05 in this cluster/);
    // Every node of the partition excluded: a job the cluster can never run, refused at submission saying why.
    const all = cli('submit', '-x', 'node[01-04]', 'n.sh');
    assert.deepEqual([all.code, all.stdout], [2, '']);
    assert.match(all.stderr, /^error: --exclude node\[01-04\] leaves no node of partition \w+ that could run the job, and it needs 1 node: the cluster could never run it; exclude fewer nodes/);
  });

  it('--ntasks-per-node and --mem-per-cpu set the tasks and memory of each node', () => {
    writeFileSync(join(work, 't.sh'), [
      '#!/bin/sh', '#SBATCH -t 1', '#SBATCH -N 2', '#SBATCH --ntasks-per-node=2', '#SBATCH --mem-per-cpu=100',
      'echo "$SLURM_NTASKS $SLURM_NTASKS_PER_NODE $SLURM_CPUS_ON_NODE ${SLURM_MEM_PER_CPU-} ${SLURM_MEM_PER_NODE-unset}"', '',
    ].join('\n'));
    const id = submitted(cli('submit', 't.sh'));
    waitDone(id);
    assert.equal(readFileSync(join(work, `taras-${id}.out`), 'utf8'), '4 2 2 100 unset\n');
    assert.equal(nodesOf(id).length, 2);
    const both = cli('submit', '--mem=1G', 't.sh');
    assert.equal(both.code, 2);
    assert.match(both.stderr, /--mem \(--mem\) and --mem-per-cpu \(t\.sh:5\) are mutually exclusive/);
  });

  it('--exclusive takes whole nodes: a one-CPU job waits for the node rather than share it', () => {
    writeFileSync(join(work, 'e.sh'), '#!/bin/sh\n#SBATCH -t 1\n#SBATCH -w node02\necho "$SLURM_CPUS_ON_NODE ${SLURM_MEM_PER_NODE-unset}"\nsleep 2\n');
    const whole = submitted(cli('submit', '--exclusive', 'e.sh'));
    const shared = submitted(cli('submit', 'e.sh'));
    waitDone(whole);
    waitDone(shared);
    type Shown = { startTime: string; endTime: string };
    const [a, b] = [whole, shared].map((id) => JSON.parse(cli('show', '--json', String(id)).stdout) as Shown);
    assert.ok(Date.parse(b.startTime) >= Date.parse(a.endTime), `the second job started ${b.startTime}, after the exclusive one ended ${a.endTime}`);
    assert.equal(readFileSync(join(work, `taras-${whole}.out`), 'utf8'), '2 16384\n');
    assert.equal(readFileSync(join(work, `taras-${shared}.out`), 'utf8'), '1 unset\n');
  });

  it('--nice puts a job behind the partition\'s other jobs; bare --nice is 100', () => {
    writeFileSync(join(work, 'all.sh'), '#!/bin/sh\n#SBATCH -t 1\n#SBATCH -N 4\n#SBATCH -c 2\nsleep 1\n');
    // Holds every node while the three are submitted (each submission is a process start: up to a second on a
    // busy machine), then is cancelled: the three are all pending when the nodes come free.
    const blocker = submitted(cli('submit', '--wrap', 'sleep 60', '-t', '2', '-N', '4', '-c', '2'));
    const nice = submitted(cli('submit', '--nice', 'all.sh'));
    const plain = submitted(cli('submit', 'all.sh'));
    const keen = submitted(cli('submit', '--nice=-5', 'all.sh')); // root is an administrator
    const cancelled = cli('cancel', String(blocker));
    assert.equal(cancelled.code, 0, cancelled.stderr);
    for (const id of [nice, plain, keen]) waitDone(id);
    const start = (id: number) => Date.parse((JSON.parse(cli('show', '--json', String(id)).stdout) as { startTime: string }).startTime);
    assert.ok(start(keen) <= start(plain) && start(plain) <= start(nice), `keen ${start(keen)}, plain ${start(plain)}, nice ${start(nice)}`);
    assert.ok(start(keen) < start(nice));
  });

  it('--test-only says when and where the plan would start the job, and stores nothing', () => {
    writeFileSync(join(work, 'two.sh'), '#!/bin/sh\n#SBATCH -t 1\n#SBATCH -N 2\n#SBATCH -c 2\ntrue\n');
    const idle = cli('submit', '--test-only', 'two.sh');
    assert.equal(idle.code, 0, idle.stderr);
    assert.equal(idle.stdout, '');
    const line = /^sbatch: Job (\d+) to start at (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d) using 4 processors on nodes node\[01-02\] in partition debug\n$/.exec(idle.stderr);
    assert.ok(line, idle.stderr);
    assert.ok(Math.abs(new Date(line[2]).getTime() - Date.now()) < 5000, `starts now: ${line[2]}`);
    // Nothing was stored: the next job gets the id it named.
    writeFileSync(join(work, 'all.sh'), '#!/bin/sh\n#SBATCH -t 1\n#SBATCH -N 4\n#SBATCH -c 2\nsleep 1\n');
    const blocker = submitted(cli('submit', 'all.sh'));
    assert.equal(blocker, Number(line[1]));
    const busy = cli('submit', '--test-only', 'two.sh');
    const when = /to start at (\S+) using 4 processors on nodes node\[01-02\] in partition debug\n$/.exec(busy.stderr);
    assert.ok(when, busy.stderr);
    const end = Date.parse((JSON.parse(cli('show', '--json', String(blocker)).stdout) as { predictedEnd: string }).predictedEnd);
    assert.ok(Math.abs(new Date(when[1]).getTime() - end) <= 1000, `planned at the blocker's predicted end ${new Date(end).toISOString()}: ${when[1]}`);
    const refused = cli('submit', '--test-only', '-w', 'node09', 'two.sh');
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /no node named node09/);
    // A reservation that does not exist: the words the real submission gets (red team: --test-only answered a start).
    const noReservation = cli('submit', '--test-only', '--reservation', 'nosuch', 'two.sh');
    const realOne = cli('submit', '--reservation', 'nosuch', 'two.sh');
    assert.equal(noReservation.code, realOne.code);
    assert.notEqual(noReservation.code, 0);
    assert.match(noReservation.stderr, /no reservation named nosuch; list them with `taras reserve list`/);
    assert.match(realOne.stderr, /no reservation named nosuch; list them with `taras reserve list`/);
    waitDone(blocker);
  });

  it('--open-mode truncates or appends; --account, --comment and mail are shown', () => {
    writeFileSync(join(work, 'o.sh'), '#!/bin/sh\n#SBATCH -t 1\n#SBATCH -o kept.out\necho new\n');
    writeFileSync(join(work, 'kept.out'), 'old\n');
    waitDone(submitted(cli('submit', '--open-mode=append', 'o.sh')));
    assert.equal(readFileSync(join(work, 'kept.out'), 'utf8'), 'old\nnew\n');
    waitDone(submitted(cli('submit', '--open-mode=truncate', 'o.sh')));
    assert.equal(readFileSync(join(work, 'kept.out'), 'utf8'), 'new\n');
    const id = submitted(cli('submit', '-A', 'physics', '--comment', 'first try', '--mail-type=END,FAIL', '--mail-user=me@example.org', 'o.sh'));
    const shown = cli('show', String(id)).stdout;
    assert.match(shown, /\n {2}Account: +physics\n/);
    assert.match(shown, /\n {2}Comment: +first try\n/);
    assert.match(shown, /\n {2}Mail: +END,FAIL to me@example\.org\n/);
    const json = JSON.parse(cli('show', '--json', String(id)).stdout) as { account: string; comment: string; mailType: string[] };
    assert.deepEqual([json.account, json.comment, json.mailType], ['physics', 'first try', ['END', 'FAIL']]);
    waitDone(id);
  });
});

describe('the README\'s table of sbatch options', () => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('### Slurm compatibility: sbatch options'));
  const rows = section.slice(0, section.indexOf('\n\n', section.indexOf('| option |'))).split('\n').filter((line) => /^\| `-/.test(line));
  const table = rows.map((line) => {
    const [names, supported] = line.split(' | ');
    return { names: [...names.matchAll(/`(-[^`]+)`/g)].map((m) => m[1]), supported: supported.trim() };
  });
  /** Supported options that are not job options: the command line's own. */
  const COMMAND_LINE_ONLY = ['-h', '--help', '--immediate'];

  it('lists every option Taras refuses, and refuses every option it marks unsupported, by name', () => {
    const listed = new Set(table.flatMap((row) => row.names));
    for (const [long, short] of SBATCH_UNSUPPORTED) {
      assert.ok(listed.has(`--${long}`), `--${long} is in the table`);
      if (short !== undefined) assert.ok(listed.has(`-${short}`), `-${short} is in the table`);
    }
    for (const row of table) {
      for (const name of row.names) {
        const refused = unsupportedOptionMessage(name);
        if (row.supported === 'no') assert.equal(refused, 'not supported by Taras (see README: sbatch options)', name);
        else {
          assert.equal(row.supported, 'yes', name);
          assert.equal(refused, undefined, name);
          const known = name.startsWith('--') ? optionByLong(name.slice(2)) : optionByShort(name.slice(1));
          assert.ok(known !== undefined || COMMAND_LINE_ONLY.includes(name), `${name} is a job option`);
        }
      }
    }
    assert.ok(table.length > 60, `${table.length} rows`);
  });

  it('takes on the command line every option it marks supported (--no-requeue was refused as unknown)', () => {
    const help = cli('submit', '--help').stdout;
    const known = new Set(help.match(/(?<![\w-])--?[A-Za-z][\w-]*/g));
    for (const row of table.filter((r) => r.supported === 'yes')) {
      for (const name of row.names) assert.ok(known.has(name.replace(/[[=].*$/, '')), `${name} is an option of taras submit`);
    }
  });

  it('an unsupported option is refused by name on the command line and in a script', () => {
    writeFileSync(join(work, 'u.sh'), '#!/bin/sh\n#SBATCH -t 1\n#SBATCH --qos=high\ntrue\n');
    const flag = cli('submit', '--gres=gpu:1', '-t', '1', '--wrap', 'true');
    assert.deepEqual([flag.code, flag.stderr], [2, 'error: --gres: not supported by Taras (see README: sbatch options)\n']);
    const short = cli('submit', '-q', 'high', 'u.sh');
    assert.deepEqual([short.code, short.stderr], [2, 'error: -q: not supported by Taras (see README: sbatch options)\n']);
    const line = cli('submit', 'u.sh');
    assert.deepEqual([line.code, line.stderr], [2, 'error: u.sh:3: --qos: not supported by Taras (see README: sbatch options)\n']);
  });
});
