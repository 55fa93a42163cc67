// The job request module (src/jobspec): sbatch's value forms, #TARAS directives,
// job.toml, flags, precedence, defaults, the Argonne-style summary, output
// patterns and the submission-time rejections of seed 000 2.2.1.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  buildJobSpec, formatError, mergeJobSpec, missingItems, parseCommitAnswer, parseConstraint, parseDirectives, parseExport,
  parseFlagValues, parseJobFile, parseMemory, parseNodes, parseTime, promptLayer, renderSummary, validateAgainstCluster,
  expandPattern, checkPattern, formatSbatchTime, formatHumanTime,
  type ClusterShape, type JobSpec, type Parsed,
} from '../src/jobspec/index.js';

function valueOf<T>(parsed: Parsed<T>): T {
  assert.ok(parsed.ok, `expected success, got ${parsed.ok ? '' : parsed.errors.map(formatError).join('; ')}`);
  return parsed.value;
}

function errorsOf<T>(parsed: Parsed<T>) {
  assert.ok(!parsed.ok, 'expected errors');
  return parsed.errors;
}

const script = (...lines: string[]) => ['#!/bin/bash', ...lines, 'srun ./a.out', ''].join('\n');
const directives = (...lines: string[]) => valueOf(parseDirectives(script(...lines), 'run.sh')).values;

describe('sbatch value forms', () => {
  it('--time takes minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS and UNLIMITED', () => {
    const cases: [string, number | 'UNLIMITED'][] = [
      ['90', 5400], ['5:30', 330], ['90:00', 5400], ['1:30:00', 5400], ['2-12', 2 * 86400 + 12 * 3600],
      ['1-02:30', 86400 + 2 * 3600 + 30 * 60], ['1-02:30:15', 86400 + 2 * 3600 + 30 * 60 + 15],
      ['UNLIMITED', 'UNLIMITED'], ['infinite', 'UNLIMITED'], ['-1', 'UNLIMITED'], ['0', 'UNLIMITED'],
    ];
    for (const [text, seconds] of cases) assert.deepEqual(parseTime(text), { ok: true, value: seconds }, text);
    // cluster.toml's unit forms ("90s", "1h") are not sbatch's
    for (const text of ['', '1h', '90s', '0s', '1:2:3:4', '1-2-3', '-5', '1.5', 'ten']) assert.equal(parseTime(text).ok, false, text);
  });

  it('--mem defaults to MiB and takes K (rounded up), M, G and T in either case, with a B as sbatch allows', () => {
    const cases: [string, number][] = [
      ['4096', 4096], ['1500K', 2], ['1024k', 1], ['512M', 512], ['4G', 4096], ['4g', 4096], ['2T', 2 * 1024 * 1024], ['0', 0],
      ['4GB', 4096], ['512mb', 512],
    ];
    for (const [text, mebibytes] of cases) assert.deepEqual(parseMemory(text), { ok: true, value: mebibytes }, text);
    // sbatch refuses "GiB" and a space before the unit, which cluster.toml allows
    for (const text of ['4GiB', '4 G', '1.5G', '-1', 'lots', '4P', '4B']) assert.equal(parseMemory(text).ok, false, text);
    // A whole number that is only too large is told so (it was told it is no whole number).
    const huge = parseMemory('99999999999999999999');
    assert.ok(!huge.ok && /; this one is too large$/.test(huge.message), JSON.stringify(huge));
  });

  it('--nodes takes N or N-M with 1 <= N <= M', () => {
    assert.deepEqual(parseNodes('4'), { ok: true, value: { min: 4 } });
    assert.deepEqual(parseNodes('2-4'), { ok: true, value: { min: 2, max: 4 } });
    assert.deepEqual(parseNodes('3-3'), { ok: true, value: { min: 3 } });
    for (const text of ['0', '4-2', '2-', 'x', '1,2']) assert.equal(parseNodes(text).ok, false, text);
  });

  it('--export takes ALL, NONE, ALL,VAR=value,VAR2 and a bare list', () => {
    assert.deepEqual(parseExport('ALL'), { ok: true, value: { all: true, variables: [] } });
    assert.deepEqual(parseExport('none'), { ok: true, value: { all: false, variables: [] } });
    assert.deepEqual(parseExport('ALL,EDITOR=vim,HOME'), { ok: true, value: { all: true, variables: [{ name: 'EDITOR', value: 'vim' }, { name: 'HOME' }] } });
    assert.deepEqual(parseExport('A=1,B='), { ok: true, value: { all: false, variables: [{ name: 'A', value: '1' }, { name: 'B', value: '' }] } });
    for (const text of ['NONE,A=1', 'A,ALL', '1X=2', 'ALL,,A']) assert.equal(parseExport(text).ok, false, text);
  });

  it('--constraint takes & (and) and | (or) with & binding tighter; comma, counts and brackets are errors', () => {
    assert.deepEqual(parseConstraint('gpu'), { ok: true, value: { text: 'gpu', anyOf: [['gpu']] } });
    assert.deepEqual(parseConstraint('gpu&ib'), { ok: true, value: { text: 'gpu&ib', anyOf: [['gpu', 'ib']] } });
    assert.deepEqual(parseConstraint('a|b&c'), { ok: true, value: { text: 'a|b&c', anyOf: [['a'], ['b', 'c']] } });
    const comma = parseConstraint('a,b');
    assert.ok(!comma.ok && /',' is not an operator/.test(comma.message));
    for (const text of ['gpu*2', '[a|b]', '(a&b)', '!gpu', 'a&&b', '&a', 'a|']) assert.equal(parseConstraint(text).ok, false, text);
  });

  it('time limits display in human and sbatch form', () => {
    assert.equal(formatSbatchTime(5400), '01:30:00');
    assert.equal(formatSbatchTime(86400 + 3723), '1-01:02:03');
    assert.equal(formatSbatchTime('UNLIMITED'), 'UNLIMITED');
    assert.equal(formatHumanTime(86400 + 2 * 3600 + 60), '1 day 2 hours 1 minute');
    assert.equal(formatHumanTime(45), '45 seconds');
  });
});

describe('output and error patterns', () => {
  const values = { jobId: 42, user: 'alice', name: 'sim' };

  it('expands %j, %u, %x and %%, with zero padding for %j', () => {
    assert.equal(expandPattern('taras-%j.out', values), 'taras-42.out');
    assert.equal(expandPattern('%u/%x-%j.log', values), 'alice/sim-42.log');
    assert.equal(expandPattern('100%%-%x', values), '100%-sim');
    assert.equal(expandPattern('job%6j', values), 'job000042');
  });

  it('takes a pattern with a backslash literally, as sbatch does', () => {
    assert.equal(expandPattern('out\\%j', values), 'out%j');
  });

  it('rejects unsupported specifiers and a lone % when parsed', () => {
    assert.match(checkPattern('slurm-%N.out') ?? '', /'%N' .* not supported/);
    assert.equal(checkPattern('slurm-%A_%a.out'), undefined, 'job arrays: test/arrays.test.ts');
    assert.match(checkPattern('out%') ?? '', /lone %/);
    assert.equal(checkPattern('%x-%j.%u.out'), undefined);
    // The longest expansion must fit a path (4,096): four job names of 1,024 do, five do not.
    assert.equal(checkPattern('%x%x%x%x'), undefined);
    assert.equal(checkPattern('%x%x%x%x%x'), "'%x%x%x%x%x' could expand to 5120 characters, more than a path may have (4096): use fewer %x and %u");
    assert.equal(expandPattern('%x'.repeat(5), values), '%x'.repeat(5), 'one stored before the bound is left as written');
    const errors = errorsOf(parseDirectives(script('#TARAS -o out-%N.log'), 'run.sh'));
    assert.deepEqual([errors[0].line, errors[0].option], [2, '-o']);
  });
});

describe('#TARAS directives', () => {
  it('reads long and short names in --opt=value, --opt value, -X value and -Xvalue forms', () => {
    const values = directives(
      '#TARAS --nodes=2-4 --ntasks 8',
      '#TARAS -c 2 --mem=4G -t 1:00:00',
      '#TARAS -p batch -J "my job" -D /scratch',
      '#TARAS -o out-%j.log -e err-%j.log',
      '#TARAS --export=ALL,A=1 -C gpu&ib --requeue',
    );
    assert.deepEqual(values, {
      nodes: { min: 2, max: 4 }, ntasks: 8, cpusPerTask: 2, memoryMiB: 4096, timeLimitSeconds: 3600, partition: 'batch',
      name: 'my job', workingDir: '/scratch', output: 'out-%j.log', error: 'err-%j.log',
      export: { all: true, variables: [{ name: 'A', value: '1' }] }, constraint: { text: 'gpu&ib', anyOf: [['gpu', 'ib']] }, requeue: true,
    });
    assert.deepEqual(directives('#TARAS -N3 -n6 -t90 --no-requeue'), { nodes: { min: 3 }, ntasks: 6, timeLimitSeconds: 5400, requeue: false });
  });

  it('--signal as sbatch: [B:]SIG[@TIME], TIME 60 s by default, names with or without SIG, numbers; R: and unknown names refused', () => {
    assert.deepEqual(directives('#TARAS --signal=B:USR1@2'), { signal: { signal: 'USR1', beforeSeconds: 2, batchOnly: true } });
    assert.deepEqual(directives('#TARAS --signal sigterm'), { signal: { signal: 'TERM', beforeSeconds: 60, batchOnly: false } });
    assert.deepEqual(valueOf(parseFlagValues({ signal: '10@30' })).values, { signal: { signal: '10', beforeSeconds: 30, batchOnly: false } });
    const errors = errorsOf(parseDirectives(script('#TARAS --signal=R:USR1', '#TARAS --signal=USR9', '#TARAS --signal=USR1@soon'), 'run.sh'));
    assert.deepEqual(errors.map((e) => [e.line, e.option]), [[2, '--signal'], [3, '--signal'], [4, '--signal']]);
    assert.match(errors[0].message, /'R:' is not supported \(only B:\)/);
    // Each message names the part at fault, then the forms with an example (sbatch only says "Invalid --signal specification").
    const forms = 'write [B:]SIG[@TIME]: a signal name or a number from 1 to 31 (USR1, SIGUSR1, 10), B: for the batch shell only, '
      + 'TIME seconds before the time limit (0 to 65535, default 60), e.g. --signal=B:USR1@120';
    assert.deepEqual(errors.map((e) => e.message), [
      `'R:' is not supported (only B:); ${forms}`, `'USR9' is not a signal name (kill -l lists them); ${forms}`, `'soon' after @ is not a number of seconds; ${forms}`,
    ]);
    const why = (text: string) => { const parsed = parseFlagValues({ signal: text }); assert.ok(!parsed.ok); return parsed.errors[0].message.replace(`; ${forms}`, ''); };
    assert.deepEqual(['FOO', 'B:USR1@abc', 'B:USR1@', '@10', 'B:', '99', 'USR1@70000'].map(why), [
      "'FOO' is not a signal name (kill -l lists them)", "'abc' after @ is not a number of seconds", 'no TIME after @ (or leave out @ for 60 s)', 'no signal before @', 'no signal',
      "'99': signal numbers go from 1 to 31", "'70000' after @: TIME is at most 65535 seconds",
    ]);
  });

  it('--signal refuses the real-time signals 32 to 64, which the agent cannot send (they were accepted and every such job FAILED at its start)', () => {
    const why = (text: string) => { const parsed = parseFlagValues({ signal: text }); assert.ok(!parsed.ok); return parsed.errors[0].message; };
    assert.deepEqual(['40@30', 'B:32', 'sig64'].map(why).map((message) => message.replace(/; write .*/, '')), [
      "'40' is a real-time signal (32 to 64), which Taras cannot send to a job", "'32' is a real-time signal (32 to 64), which Taras cannot send to a job",
      "'sig64' is a real-time signal (32 to 64), which Taras cannot send to a job",
    ]);
    assert.match(why('40'), /; write \[B:\]SIG\[@TIME\]: a signal name or a number from 1 to 31 \(USR1, SIGUSR1, 10\)/);
    assert.equal(errorsOf(parseDirectives(script('#SBATCH --signal=B:40@30'), 'run.sh'))[0].option, '--signal');
    // The highest number Taras sends, and each name's number, are accepted as before.
    assert.deepEqual(valueOf(parseFlagValues({ signal: '31@5' })).values, { signal: { signal: '31', beforeSeconds: 5, batchOnly: false } });
    assert.deepEqual(valueOf(parseFlagValues({ signal: 'SYS' })).values, { signal: { signal: 'SYS', beforeSeconds: 60, batchOnly: false } });
  });

  it('stops at the first command: later #TARAS lines are ignored with a warning naming them', () => {
    const text = ['#!/bin/bash', '#TARAS --time=10', '', '  # indented comment', '#TARAS -N 2', 'module load mpi', '#TARAS --time=99', '#TARAS --bogus'].join('\n');
    const parsed = parseDirectives(text, 'run.sh');
    assert.deepEqual(valueOf(parsed).values, { timeLimitSeconds: 600, nodes: { min: 2 } });
    assert.deepEqual(parsed.warnings.map((w) => w.line), [7, 8]);
    assert.match(parsed.warnings[0].message, /after the first command \(line 6\)/);
  });

  it('treats indented, lower-case and glued #TARAS as plain comments, and stops a line at an unquoted #', () => {
    const values = directives(' #TARAS --time=1', '#taras --time=2', '#TARASX --time=3', '#TARAS --time=4 # --nodes=9 ignored', '#TARAS -J \'a # b\'');
    assert.deepEqual(values, { timeLimitSeconds: 240, name: 'a # b' });
  });

  it('a later directive for the same option wins', () => {
    assert.deepEqual(directives('#TARAS -t 10', '#TARAS --time=20'), { timeLimitSeconds: 1200 });
  });

  it('names the line and option of an unknown option, with a did-you-mean', () => {
    const errors = errorsOf(parseDirectives(script('#TARAS --time=10', '#TARAS --cpu-per-task=2', '#TARAS --partiton batch'), 'run.sh'));
    assert.deepEqual(errors.map((e) => [e.line, e.option, e.message]), [
      [3, '--cpu-per-task', 'unknown option; did you mean --cpus-per-task?'],
      [4, '--partiton', 'unknown option; did you mean --partition?'],
    ]);
    const abbreviated = errorsOf(parseDirectives(script('#TARAS --part=batch'), 'run.sh'));
    assert.equal(abbreviated[0].message, 'unknown option; did you mean --partition?');
    assert.equal(formatError(errors[0]), 'run.sh:3: --cpu-per-task: unknown option; did you mean --cpus-per-task?');
  });

  it('says an sbatch option is unsupported, and suggests the case slip of a short option', () => {
    const errors = errorsOf(parseDirectives(script('#TARAS --gres=gpu:1', '#TARAS -j name', '#TARAS -Z 1'), 'run.sh'));
    assert.deepEqual(errors.map((e) => [e.line, e.option, e.message]), [
      [2, '--gres', 'not supported by Taras (see README: sbatch options)'],
      [3, '-j', 'unknown option; did you mean -J?'],
      [4, '-Z', 'unknown option'],
    ]);
  });

  it('names the line and option of a bad value, a missing value and a stray word', () => {
    const errors = errorsOf(parseDirectives(script('#TARAS --time=soon', '#TARAS -N 0', '#TARAS --mem', '#TARAS --requeue=yes', '#TARAS batch'), 'run.sh'));
    assert.deepEqual(errors.map((e) => [e.line, e.option]), [[2, '--time'], [3, '-N'], [4, '--mem'], [5, '--requeue'], [6, undefined]]);
    assert.match(errors[0].message, /got 'soon': expected minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or UNLIMITED/);
    assert.match(errors[2].message, /needs a value/);
    assert.match(errors[3].message, /takes no value/);
    assert.match(errors[4].message, /'batch' is not an option/);
  });

  it('requires a #! first line and Unix line ends, and reports an unmatched quote', () => {
    assert.deepEqual(errorsOf(parseDirectives('#TARAS -t 5\necho\n', 'a.sh')).map((e) => [e.line, e.message]),
      [[1, 'a batch script must start with #! and an interpreter, e.g. #!/bin/bash']]);
    assert.match(errorsOf(parseDirectives('#!/bin/sh\r\n#TARAS -t 5\r\n', 'a.sh'))[0].message, /DOS line breaks/);
    assert.deepEqual(errorsOf(parseDirectives(script('#TARAS -J "open'), 'a.sh')).map((e) => [e.line, e.message]), [[2, 'unmatched " quote']]);
  });
});

describe('job.toml', () => {
  const file = [
    'script = "run.sh"',
    'arguments = ["-v", "in.dat"]',
    'nodes = "2-4"',
    'ntasks = 8',
    'cpus_per_task = 2',
    'mem = "4G"',
    'time = 90',
    'partition = "batch"',
    'job_name = "sim"',
    'chdir = "/scratch"',
    'output = "%x-%j.out"',
    'error = "%x-%j.err"',
    'export = ["ALL", "OMP_NUM_THREADS=2"]',
    'constraint = "gpu|bigmem"',
    'requeue = true',
  ].join('\n');

  it('reads every item under its snake_case key, integers for counts, MiB and minutes', () => {
    const layer = valueOf(parseJobFile(file, 'job.toml'));
    assert.deepEqual(layer.values, {
      script: 'run.sh', scriptArgs: ['-v', 'in.dat'], nodes: { min: 2, max: 4 }, ntasks: 8, cpusPerTask: 2, memoryMiB: 4096,
      timeLimitSeconds: 5400, partition: 'batch', name: 'sim', workingDir: '/scratch', output: '%x-%j.out', error: '%x-%j.err',
      export: { all: true, variables: [{ name: 'OMP_NUM_THREADS', value: '2' }] },
      constraint: { text: 'gpu|bigmem', anyOf: [['gpu'], ['bigmem']] }, requeue: true,
    });
    assert.deepEqual(layer.origins.timeLimitSeconds, { source: 'file', file: 'job.toml', line: 7, option: 'time' });
    assert.deepEqual(valueOf(parseJobFile('time = "1-00:00:00"\nmem = 512\nnodes = 3', 'j.toml')).values,
      { timeLimitSeconds: 86400, memoryMiB: 512, nodes: { min: 3 } });
  });

  it('names the line and key of unknown keys (with a did-you-mean) and bad values', () => {
    const text = ['time = 10', 'cpus-per-task = 2', 'job_nmae = "x"', 'mem = "lots"', 'requeue = "yes"', 'nodes = 1.5', 'arguments = "a b"'].join('\n');
    const errors = errorsOf(parseJobFile(text, 'job.toml'));
    assert.deepEqual(errors.map((e) => [e.line, e.option]), [[2, 'cpus-per-task'], [3, 'job_nmae'], [4, 'mem'], [5, 'requeue'], [6, 'nodes'], [7, 'arguments']]);
    assert.equal(formatError(errors[0]), 'job.toml:2: cpus-per-task: unknown key; did you mean cpus_per_task?');
    assert.match(errors[1].message, /did you mean job_name\?/);
    assert.match(errors[2].message, /got 'lots'/);
    assert.match(errors[3].message, /expected true or false/);
    assert.match(errors[4].message, /expected a whole number, got 1.5/);
  });

  it('reports TOML syntax errors with their line, and tables as not allowed', () => {
    const syntax = errorsOf(parseJobFile('time = 10\npartition = "batch\n', 'job.toml'));
    assert.equal(syntax[0].line, 2);
    assert.match(syntax[0].message, /^not valid TOML: /);
    const table = errorsOf(parseJobFile('time = 10\n\n[resources]\nnodes = 2\n', 'job.toml'));
    assert.deepEqual([table[0].line, table[0].option], [3, 'resources']);
    assert.match(table[0].message, /flat/);
  });

  it('takes an injected TOML parser', () => {
    const layer = valueOf(parseJobFile('ignored', 'job.toml', () => ({ time: '5' })));
    assert.deepEqual(layer.values, { timeLimitSeconds: 300 });
  });
});

describe('flags', () => {
  it('take long names or commander camelCase keys, and the script operand', () => {
    const layer = valueOf(parseFlagValues({ 'cpus-per-task': '4', jobName: 'x', time: '2-00', requeue: false, nodes: undefined }, { script: 'run.sh', args: ['1'] }));
    assert.deepEqual(layer.values, { cpusPerTask: 4, name: 'x', timeLimitSeconds: 172800, requeue: false, script: 'run.sh', scriptArgs: ['1'] });
    assert.deepEqual(valueOf(parseFlagValues({ requeue: true })).values, { requeue: true });
    assert.deepEqual(valueOf(parseFlagValues({ 'no-requeue': true })).values, { requeue: false });
  });

  it('name the flag of an unknown option or a bad value', () => {
    const errors = errorsOf(parseFlagValues({ tme: '10', mem: '1.5G', partition: true }));
    assert.deepEqual(errors.map((e) => [e.option, e.message]), [
      ['--tme', 'unknown option; did you mean --time?'],
      ['--mem', "got '1.5G': expected a whole number with an optional K, M, G or T suffix (default M): 4096, 4G"],
      ['--partition', 'needs a value: NAME'],
    ]);
  });
});

describe('precedence and completion', () => {
  const fileLayer = valueOf(parseJobFile('script = "run.sh"\ntime = 10\npartition = "batch"\nmem = "1G"\njob_name = "from-file"', 'job.toml'));
  const directiveLayer = valueOf(parseDirectives(script('#TARAS --time=20 --partition=gpu -J from-script'), 'run.sh'));
  const flagLayer = valueOf(parseFlagValues({ time: '30' }));

  it('job file < directives < flags, item by item, each value keeping its origin', () => {
    const merged = mergeJobSpec(fileLayer, directiveLayer, flagLayer);
    assert.deepEqual(merged.values, { script: 'run.sh', timeLimitSeconds: 1800, partition: 'gpu', memoryMiB: 1024, name: 'from-script' });
    assert.deepEqual(merged.origins.timeLimitSeconds, { source: 'flag', option: '--time' });
    assert.deepEqual(merged.origins.partition, { source: 'directive', file: 'run.sh', line: 2, option: '--partition' });
    assert.deepEqual(merged.origins.memoryMiB, { source: 'file', file: 'job.toml', line: 4, option: 'mem' });
    assert.equal(mergeJobSpec(fileLayer, directiveLayer, undefined).values.timeLimitSeconds, 1200);
    assert.equal(mergeJobSpec(fileLayer, undefined, undefined).values.timeLimitSeconds, 600);
  });

  it('lists missing required items, and prompt answers fill them last', () => {
    const nodesOnly = valueOf(parseDirectives(script('#TARAS -N 2'), 'run.sh'));
    const bare = mergeJobSpec(undefined, nodesOnly, undefined);
    assert.deepEqual(missingItems(bare).map((m) => [m.key, m.flag, m.tomlKey]), [['script', 'SCRIPT', 'script'], ['timeLimitSeconds', '--time', 'time']]);
    assert.deepEqual(missingItems(bare, ['nodes', 'memoryMiB']).map((m) => m.label), ['Memory per node']);
    const answers = valueOf(promptLayer({ script: 'run.sh', timeLimitSeconds: '15' }));
    const merged = mergeJobSpec(undefined, nodesOnly, undefined, answers);
    assert.deepEqual(missingItems(merged), []);
    assert.equal(merged.values.timeLimitSeconds, 900);
    assert.deepEqual(merged.origins.timeLimitSeconds, { source: 'prompt', option: '--time' });
    assert.deepEqual(errorsOf(promptLayer({ timeLimitSeconds: 'soon', requeue: 'maybe' })).map((e) => e.option), ['--time', '--requeue']);
  });

  it('--deadline (#TARAS or flag) is read against the submitting clock, guarantee by default; the policy alone is refused', () => {
    const nowMs = new Date(2026, 10, 24, 12, 0, 0).getTime();
    const build = (line: string, flags: Record<string, string> = {}) => buildJobSpec(
      mergeJobSpec(undefined, valueOf(parseDirectives(script(line), 'r.sh')), valueOf(parseFlagValues({ time: '1', ...flags }, { script: 'r.sh' }))),
      { scriptText: 'text', submitDir: '/home/alice', nowMs });
    assert.deepEqual(valueOf(build('#TARAS --deadline 18:00')).spec.deadline, { atMs: new Date(2026, 10, 24, 18, 0, 0).getTime(), policy: 'guarantee' });
    assert.deepEqual(valueOf(build('#TARAS --deadline now+2hours', { deadlinePolicy: 'cancel' })).spec.deadline, { atMs: nowMs + 7_200_000, policy: 'cancel' });
    assert.deepEqual(errorsOf(build('#TARAS --deadline-policy cancel')).map((e) => [e.option, e.message]),
      [['--deadline-policy', '--deadline-policy (r.sh:2) goes with a deadline: add --deadline TIME or leave it out']]);
    assert.match(errorsOf(parseDirectives(script('#TARAS --deadline soon'), 'r.sh'))[0].message, /got 'soon': expected now, now\+N/);
    assert.match(errorsOf(parseDirectives(script('#TARAS --deadline-policy maybe'), 'r.sh'))[0].message, /expected guarantee .* or cancel/);
  });

  it('fills sbatch defaults and resolves a relative working directory against the submit directory', () => {
    const merged = mergeJobSpec(undefined, valueOf(parseDirectives(script('#TARAS -t 5 -D out'), 'jobs/run.sh')), valueOf(parseFlagValues({}, { script: 'jobs/run.sh' })));
    const { spec, origins } = valueOf(buildJobSpec(merged, { scriptText: 'text', submitDir: '/home/alice' }));
    assert.deepEqual(spec, {
      script: { path: 'jobs/run.sh', text: 'text', args: [] }, nodes: { min: 1 }, cpusPerTask: 1, timeLimitSeconds: 300,
      name: 'run.sh', workingDir: '/home/alice/out', output: 'taras-%j.out', export: { all: true, variables: [] }, requeue: false,
    });
    assert.deepEqual(origins.name, { source: 'default' });
    assert.deepEqual(origins.workingDir, { source: 'directive', file: 'jobs/run.sh', line: 2, option: '-D' });
  });

  it('with --ntasks and no --nodes the job takes 1 to ntasks nodes; a larger --nodes maximum is lowered to ntasks', () => {
    const nodesOf = (line: string) => valueOf(buildJobSpec(
      mergeJobSpec(undefined, valueOf(parseDirectives(script(line), 'r.sh')), valueOf(parseFlagValues({ time: '1' }, { script: 'r.sh' }))),
      { scriptText: '', submitDir: '/' },
    )).spec.nodes;
    assert.deepEqual(nodesOf('#TARAS -n 8'), { min: 1, max: 8 });
    assert.deepEqual(nodesOf('#TARAS -n 4 -N 2-10'), { min: 2, max: 4 });
    assert.deepEqual(nodesOf('#TARAS -n 1'), { min: 1 });
  });

  it('refuses fewer tasks than nodes and missing required items, naming where each value came from', () => {
    const merged = mergeJobSpec(undefined, valueOf(parseDirectives(script('#TARAS -N 4'), 'run.sh')), valueOf(parseFlagValues({ ntasks: '2' })));
    const errors = errorsOf(buildJobSpec(merged, { scriptText: '', submitDir: '/' }));
    assert.deepEqual(errors.map((e) => e.option), ['SCRIPT', '--time', '--ntasks']);
    assert.equal(errors[2].message, '2 task(s) (--ntasks) cannot cover 4 nodes (run.sh:2): every node runs at least one task; raise --ntasks or lower --nodes');
  });
});

describe('the summary before "(C)ommit or (A)bort"', () => {
  it('aligns one line per item with the time limit in human and sbatch form and each origin', () => {
    const merged = mergeJobSpec(
      valueOf(parseJobFile('mem = "4G"\nexport = "ALL,A=1"', 'job.toml')),
      valueOf(parseDirectives(script('#TARAS -N 2-4 -t 1-02:30:00 -C gpu&ib'), 'run.sh')),
      valueOf(parseFlagValues({ partition: 'batch' }, { script: '/home/alice/run.sh', args: ['4', '16'] })),
    );
    const { spec, origins } = valueOf(buildJobSpec(merged, { scriptText: '', submitDir: '/home/alice' }));
    assert.equal(renderSummary(spec, { origins, user: 'alice' }), [
      'Username:           alice',
      'Script:             /home/alice/run.sh                     (command line)',
      'Arguments:          4 16                                   (command line)',
      'Job name:           run.sh                                 (default)',
      'Partition:          batch                                  (--partition)',
      'Nodes:              2-4                                    (run.sh:2)',
      'Tasks:              one per node',
      'CPUs per task:      1                                      (default)',
      'Memory per node:    4 GiB (4096 MiB)                       (job.toml:1)',
      'Time limit:         1 day 2 hours 30 minutes (1-02:30:00)  (run.sh:2)',
      'Working directory:  /home/alice                            (default)',
      'Output:             taras-%j.out                           (default)',
      'Error:              (with the output)',
      'Export:             ALL,A=1                                (job.toml:2)',
      'Constraint:         gpu&ib                                 (run.sh:2)',
      'Requeue:            no                                     (default)',
      '',
    ].join('\n'));
    const signalled = valueOf(buildJobSpec(mergeJobSpec(undefined, valueOf(parseDirectives(script('#TARAS -t 5 --signal=B:USR1@90'), 'run.sh')), valueOf(parseFlagValues({}, { script: 'run.sh' }))), { scriptText: '', submitDir: '/' }));
    assert.equal(renderSummary(signalled.spec, { origins: signalled.origins }).split('\n').at(-2), 'Warning signal:     B:USR1@90 (to the batch shell 90 s before the limit)  (run.sh:2)');
  });

  it('shows defaults for absent items without origins', () => {
    const spec: JobSpec = {
      script: { path: 'a.sh', text: '', args: [] }, nodes: { min: 1 }, cpusPerTask: 1, memoryMiB: 0, timeLimitSeconds: 'UNLIMITED',
      name: 'a', workingDir: '/', output: 'o', export: { all: false, variables: [] }, requeue: true,
    };
    const lines = renderSummary(spec).split('\n');
    assert.ok(lines.includes("Memory per node:    all of each node's memory"));
    assert.ok(lines.includes('Time limit:         unlimited (UNLIMITED)'));
    assert.ok(lines.includes('Partition:          (the default partition)'));
    assert.ok(lines.includes('Export:             NONE'));
  });

  it('reads c/commit and a/abort in any case, anything else asks again', () => {
    assert.deepEqual(['c', 'C', 'commit', ' a ', 'Abort', 'x', ''].map(parseCommitAnswer), ['commit', 'commit', 'commit', 'abort', 'abort', undefined, undefined]);
  });
});

describe('rejections at submission (seed 000 2.2.1)', () => {
  const node = (name: string, cpus: number, memoryMiB: number, ...features: string[]) => ({ name, cpus, memoryMiB, features });
  const cluster: ClusterShape = {
    nodes: [
      node('n01', 8, 16384), node('n02', 8, 16384), node('n03', 8, 16384), node('n04', 8, 16384),
      node('g01', 16, 65536, 'gpu', 'ib'), node('g02', 16, 65536, 'gpu'),
    ],
    partitions: [
      { name: 'batch', nodes: ['n01', 'n02', 'n03', 'n04'], isDefault: true, maxTimeSeconds: 86400 },
      { name: 'gpu', nodes: ['g01', 'g02'], isDefault: false, maxTimeSeconds: 3600 },
      { name: 'all', nodes: ['n01', 'n02', 'n03', 'n04', 'g01', 'g02'], isDefault: false, maxTimeSeconds: null, maxNodes: 5 },
    ],
  };
  const job = (overrides: Partial<JobSpec> = {}): JobSpec => ({
    script: { path: 'a.sh', text: '', args: [] }, nodes: { min: 1 }, cpusPerTask: 1, timeLimitSeconds: 600,
    name: 'a', workingDir: '/', output: 'o', export: { all: true, variables: [] }, requeue: false, ...overrides,
  });
  const kinds = (spec: JobSpec, shape: ClusterShape = cluster) => validateAgainstCluster(spec, shape).map((r) => r.kind);
  const constraint = (text: string) => { const parsed = parseConstraint(text); assert.ok(parsed.ok); return parsed.value; };

  it('accepts a job that fits its partition', () => {
    assert.deepEqual(validateAgainstCluster(job({ nodes: { min: 4 }, ntasks: 32, memoryMiB: 16384 }), cluster), []);
    assert.deepEqual(validateAgainstCluster(job({ partition: 'gpu', constraint: constraint('gpu&ib') }), cluster), []);
  });

  it('no such partition, with a did-you-mean', () => {
    const [rejection] = validateAgainstCluster(job({ partition: 'gpus' }), cluster);
    assert.deepEqual(rejection, { kind: 'no-such-partition', partition: 'gpus', suggestion: 'gpu', message: 'no such partition gpus; did you mean gpu? (partitions: batch, gpu, all)' });
  });

  it('no partition given and no default partition', () => {
    const noDefault = { ...cluster, partitions: cluster.partitions.map((p) => ({ ...p, isDefault: false })) };
    assert.deepEqual(kinds(job(), noDefault), ['no-default-partition']);
  });

  it('larger than any partition (MaxNodes counts), and larger than the chosen one with a partition that fits', () => {
    const [any] = validateAgainstCluster(job({ nodes: { min: 6 } }), cluster);
    assert.deepEqual(any, { kind: 'larger-than-any-partition', requestedNodes: 6, largestNodes: 5, message: 'larger than any partition: the job needs at least 6 nodes, the largest partition (all) takes 5' });
    const [one] = validateAgainstCluster(job({ nodes: { min: 5 } }), cluster);
    assert.equal(one.kind, 'larger-than-partition');
    assert.equal(one.message, 'larger than partition batch: the job needs at least 5 nodes, batch has 4 nodes; partition all is large enough (--partition all)');
  });

  it("over the partition's time limit, UNLIMITED included", () => {
    const [over] = validateAgainstCluster(job({ partition: 'gpu', timeLimitSeconds: 7200 }), cluster);
    assert.equal(over.message, 'over the time limit of partition gpu: the job asks for 2 hours (02:00:00), gpu allows 1 hour (01:00:00)');
    assert.deepEqual(kinds(job({ timeLimitSeconds: 'UNLIMITED' })), ['over-time-limit']);
    assert.deepEqual(kinds(job({ partition: 'all', timeLimitSeconds: 'UNLIMITED' })), []);
  });

  it('no node has the feature, in the cluster or in the partition', () => {
    const [nowhere] = validateAgainstCluster(job({ constraint: constraint('gpu&fpga') }), cluster);
    assert.deepEqual([nowhere.kind, nowhere.message], ['no-node-has-feature', 'no node has the feature fpga']);
    const [notHere] = validateAgainstCluster(job({ constraint: constraint('gpu') }), cluster);
    assert.deepEqual([notHere.kind, notHere.message], ['no-node-has-feature', 'no node of partition batch has the feature gpu']);
    assert.deepEqual(kinds(job({ constraint: constraint('fpga|gpu'), partition: 'gpu' })), []);
  });

  it('more memory or CPUs per node than any node has, in the cluster or in the partition', () => {
    const [memory] = validateAgainstCluster(job({ memoryMiB: 131072 }), cluster);
    assert.equal(memory.message, 'more memory per node than any node has: the job asks for 128 GiB, the largest has 64 GiB');
    assert.deepEqual(kinds(job({ memoryMiB: 32768 })), ['memory-per-node']);
    assert.equal(validateAgainstCluster(job({ memoryMiB: 32768 }), cluster)[0].message,
      'more memory per node than any node of partition batch has: the job asks for 32 GiB, the largest has 16 GiB');
    const [cpus] = validateAgainstCluster(job({ cpusPerTask: 32 }), cluster);
    assert.equal(cpus.message, 'more CPUs per node than any node has: the job asks for 32 per task, the largest has 16');
    assert.deepEqual(kinds(job({ cpusPerTask: 12 })), ['cpus-per-node']);
    assert.deepEqual(kinds(job({ memoryMiB: 0 })), []);
  });

  it('too few nodes meet every per-node need together, and too many tasks for the nodes', () => {
    const [few] = validateAgainstCluster(job({ partition: 'gpu', nodes: { min: 2 }, constraint: constraint('gpu&ib') }), cluster);
    assert.deepEqual([few.kind, few.message], ['too-few-suitable-nodes', 'partition gpu has 1 node with 1 CPU and gpu&ib; the job needs 2']);
    const [tasks] = validateAgainstCluster(job({ nodes: { min: 2, max: 3 }, ntasks: 25 }), cluster);
    assert.deepEqual([tasks.kind, tasks.message], ['too-many-tasks', 'more tasks than partition batch can hold: 25 tasks of 1 CPU on 2 to 3 nodes, each node running the same number of tasks, hold at most 24; ask for fewer tasks or CPUs per task']);
  });

  it('an --exclude that leaves the partition too few nodes says so (it was: partition batch has 0 nodes with 1 CPU)', () => {
    const [none] = validateAgainstCluster(job({ exclude: ['n01', 'n02', 'n03', 'n04'] }), cluster);
    assert.deepEqual([none.kind, none.message], ['excluded-too-many', '--exclude n[01-04] leaves no node of partition batch that could run the job, and it needs 1 node: '
      + 'the cluster could never run it; exclude fewer nodes or choose another partition (--partition)']);
    const [one] = validateAgainstCluster(job({ nodes: { min: 2 }, exclude: ['n01', 'n02', 'n04', 'g01'] }), cluster);
    assert.deepEqual([one.kind, one.message], ['excluded-too-many', '--exclude g01,n[01-02,04] leaves only 1 node (n03) of partition batch that could run the job, and it needs 2 nodes: '
      + 'the cluster could never run it; exclude fewer nodes, ask for fewer (--nodes) or choose another partition (--partition)']);
    // Nodes of other partitions excluded, or enough left: accepted; too few for other reasons: the words as before.
    assert.deepEqual(kinds(job({ nodes: { min: 2 }, exclude: ['n01', 'n02', 'g01', 'g02'] })), []);
    assert.deepEqual(kinds(job({ partition: 'gpu', nodes: { min: 2 }, constraint: constraint('gpu&ib'), exclude: ['n01'] })), ['too-few-suitable-nodes']);
  });

  it('reports every reason at once', () => {
    assert.deepEqual(kinds(job({ partition: 'gpu', timeLimitSeconds: 7200, nodes: { min: 3 }, memoryMiB: 131072 })),
      ['memory-per-node', 'over-time-limit', 'larger-than-partition']);
  });

  it('checks a cluster of 200,000 nodes (no value list spread into a call, which overflows the stack), the same answers twice', () => {
    const big: ClusterShape = {
      nodes: Array.from({ length: 200_000 }, (_, i) => node(`n${i}`, i === 123_456 ? 64 : 8, 16384, ...(i % 1000 === 0 ? ['ib'] : []))),
      partitions: [{ name: 'batch', nodes: Array.from({ length: 200_000 }, (_, i) => `n${i}`), isDefault: true, maxTimeSeconds: null }],
    };
    for (let round = 0; round < 2; round++) {
      assert.deepEqual(validateAgainstCluster(job({ nodes: { min: 150_000 }, ntasks: 150_000 }), big), []);
      assert.deepEqual(validateAgainstCluster(job({ constraint: constraint('ib'), nodes: { min: 200 } }), big), []);
      const [few] = validateAgainstCluster(job({ constraint: constraint('ib'), nodes: { min: 201 } }), big);
      assert.equal(few.message, 'partition batch has 200 nodes with 1 CPU and ib; the job needs 201');
      const [cpus] = validateAgainstCluster(job({ cpusPerTask: 65 }), big);
      assert.equal(cpus.message, 'more CPUs per node than any node has: the job asks for 65 per task, the largest has 64');
      assert.deepEqual(kinds(job({ nodes: { min: 200_001 } }), big), ['larger-than-any-partition']);
    }
  });
});
