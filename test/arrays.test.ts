// Job arrays (sbatch --array): the spec's forms and errors, the option from
// flags, #TARAS lines and job.toml, %A/%a in file names, the task's
// SLURM_ARRAY_* variables; and in the controller engine with a real store:
// one submission stores every task as its own job in one transaction, ids
// consecutive, the array's id the first task's, refused whole when bad.

import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { jobLaunch } from '../src/agent/environment.js';
import { defaultClusterConfig, parseClusterConfig } from '../src/config/cluster.js';
import { arrayTaskOf, resolveJobRef, scriptOf } from '../src/controller/arrays.js';
import { apiJob, apiQueue, apiStatus, queueBuild } from '../src/controller/views.js';
import { unpackQueue } from '../src/api/queue.js';
import { ControllerEngine, SubmitRefused, type AgentLink, type StartOrder } from '../src/controller/engine.js';
import { jobId } from '../src/core/types.js';
import {
  arrayFacts, buildJobSpec, expandPattern, checkPattern, formatError, formatTaskIds, mergeJobSpec, parseArrayJobId, parseArraySpec, parseDirectives, parseFlagValues, parseJobFile,
  type JobSpec,
} from '../src/jobspec/index.js';
import { openStore } from '../src/store/store.js';

const work = mkdtempSync(join(tmpdir(), 'taras-arrays-'));
after(() => rmSync(work, { recursive: true, force: true }));

const ids = (text: string, max?: number) => {
  const parsed = parseArraySpec(text, max);
  assert.ok(parsed.ok, parsed.ok ? '' : parsed.message);
  return parsed.value;
};
const problem = (text: string, max?: number) => {
  const parsed = parseArraySpec(text, max);
  assert.ok(!parsed.ok, `expected '${text}' to be refused`);
  return parsed.message;
};

describe('--array values', () => {
  it('takes ids, ranges, steps, lists and a %N throttle, as sbatch', () => {
    assert.deepEqual(ids('0-15:4%4'), { text: '0-15:4%4', taskIds: [0, 4, 8, 12], throttle: 4 });
    assert.deepEqual(ids('1,3,5-9').taskIds, [1, 3, 5, 6, 7, 8, 9]);
    assert.equal(ids('1,3,5-9').throttle, undefined);
    assert.deepEqual(ids('7').taskIds, [7]);
    assert.deepEqual(ids('3,1,1-2').taskIds, [1, 2, 3], 'sorted, each id once');
    const big = ids('0-9999');
    assert.equal(big.taskIds.length, 10_000);
    assert.equal(big.taskIds[9999], 9999);
  });

  it('refuses bad forms with the part that is wrong and the form to use', () => {
    assert.match(problem(''), /expected task ids/);
    assert.match(problem('5-2'), /the range 5-2 ends before it starts/);
    assert.match(problem('0-10:0'), /step in 0-10:0 must be at least 1/);
    assert.match(problem('1,,3'), /an empty item between commas/);
    assert.match(problem('a-b'), /'a-b' is not a task id or range/);
    assert.match(problem('-1'), /not a task id or range/);
    assert.match(problem('0-9%0'), /'%0' is not a task limit/);
    assert.match(problem('0-9%x'), /'%x' is not a task limit/);
    assert.match(problem('0-9%x'), /e\.g\. --array=0-99%10/);
  });

  it('keeps task ids below max_array_size (default 10001: 0-10000)', () => {
    assert.equal(ids('1-10000').taskIds.length, 10_000);
    assert.match(problem('0-10001'), /task id 10001 is above the largest this cluster allows \(10000: max_array_size = 10001/);
    assert.equal(ids('0-1000', 1001).taskIds.length, 1001);
    assert.match(problem('0-1001', 1001), /task id 1001 is above the largest .*1000: max_array_size = 1001/);
    // Past what any cluster allows (the CLI's own check), no cluster.toml setting is named.
    assert.match(problem('4294967296', 4_000_001), /task id 4294967296 is above the largest any cluster allows \(4000000, the most Slurm's MaxArraySize may be\); use smaller ids$/);
    const config = parseClusterConfig('[cluster]\nmax_array_size = 1001\n[[nodes]]\nnames = "n1"\ncpus = 2\nmemory = "1G"\n[[partitions]]\nname = "batch"\nnodes = "ALL"\n', '/etc/taras/cluster.toml');
    assert.ok(config.ok, config.ok ? '' : JSON.stringify(config.errors));
    assert.equal(config.config.maxArraySize, 1001);
  });

  it('facts and squeue\'s folded form', () => {
    assert.deepEqual(arrayFacts([0, 4, 8, 12]), { count: 4, min: 0, max: 12, step: 4 });
    assert.deepEqual(arrayFacts([1, 3, 5, 6]), { count: 4, min: 1, max: 6, step: 1 });
    assert.deepEqual(arrayFacts([5]), { count: 1, min: 5, max: 5, step: 1 });
    assert.equal(formatTaskIds([4, 5, 6, 7, 9, 12, 13], 4), '4-7,9,12-13%4');
    assert.deepEqual(parseArrayJobId('12_3'), { id: 12, taskIds: [3] });
    assert.deepEqual(parseArrayJobId('12_[1-3,7]'), { id: 12, taskIds: [1, 2, 3, 7] });
    assert.equal(parseArrayJobId('12_[1-3%2]'), undefined);
    assert.deepEqual(parseArrayJobId('12'), { id: 12 });
    assert.equal(parseArrayJobId('12_'), undefined);
    assert.equal(parseArrayJobId('12_99999999999999999999'), undefined, 'a task id no number holds exactly');
  });

  it('comes from flags, #TARAS/#SBATCH-style lines and job.toml, into the spec and its summary', () => {
    // The command line leaves the size to the cluster's max_array_size (checked by the controller).
    const large = parseFlagValues({ array: '0-20000' });
    assert.ok(large.ok && large.value.values.array?.taskIds.length === 20_001);
    const flags = parseFlagValues({ array: '0-3%2' });
    assert.ok(flags.ok);
    assert.deepEqual(flags.value.values.array, { text: '0-3%2', taskIds: [0, 1, 2, 3], throttle: 2 });
    const script = '#!/bin/sh\n#TARAS --array=1,3\n#TARAS -a 5-6\necho\n';
    const lines = parseDirectives(script, 'run.sh');
    assert.ok(lines.ok);
    assert.deepEqual(lines.value.values.array?.taskIds, [5, 6], 'the later setting wins, as in sbatch');
    const file = parseJobFile('script = "run.sh"\ntime = "10"\narray = "0-9:3"\n', 'job.toml');
    assert.ok(file.ok, file.ok ? '' : file.errors.map(formatError).join('; '));
    assert.deepEqual(file.value.values.array?.taskIds, [0, 3, 6, 9]);
    const bad = parseDirectives('#!/bin/sh\n#TARAS --array=9-1\necho\n', 'run.sh');
    assert.ok(!bad.ok);
    assert.equal(formatError(bad.errors[0]), `run.sh:2: --array: '9-1': the range 9-1 ends before it starts; write ids and ranges such as 0-15, 1,3,5-9 or 0-15:4, optionally ending in %N (at most N tasks at once), e.g. --array=0-99%10`);
    const built = buildJobSpec(mergeJobSpec(file.value, lines.value, flags.value), { scriptText: script, submitDir: '/home/a' });
    assert.ok(built.ok);
    assert.deepEqual(built.value.spec.array, { text: '0-3%2' }, 'flags over directives over job.toml');
    assert.equal(built.value.spec.output, 'taras-%A_%a.out', 'an array\'s default output, as sbatch\'s slurm-%A_%a.out');
  });

  it('%A and %a in --output and --error, as sbatch', () => {
    assert.equal(checkPattern('out-%A_%a.txt'), undefined);
    assert.equal(expandPattern('out-%A_%a.txt', { jobId: 13, user: 'a', name: 'n', array: { jobId: 12, taskId: 1 } }), 'out-12_1.txt');
    assert.equal(expandPattern('o-%A-%3a', { jobId: 13, user: 'a', name: 'n', array: { jobId: 12, taskId: 7 } }), 'o-12-007');
    assert.equal(expandPattern('o-%A-%a', { jobId: 13, user: 'a', name: 'n' }), 'o-13-4294967294', 'not a task: sbatch\'s NO_VAL');
    // A width past 10 digits is 10, as Slurm's (red team: %999999999j made a gigabyte string at every listing of the job).
    assert.equal(expandPattern('o%999999999j-%12A-%11a', { jobId: 13, user: 'a', name: 'n', array: { jobId: 12, taskId: 7 } }), 'o0000000013-0000000012-0000000007');
  });

  it('a task\'s environment carries SLURM_ARRAY_* and TARAS_ARRAY_*; a plain job none, even from the submitting shell', () => {
    const spec = { ...jobSpec(), output: 'out-%A_%a.txt' };
    const launch = jobLaunch({
      jobId: 14, user: 'alice', nodes: ['n1'], cpusOnNode: 1, spec, submitEnv: { SLURM_ARRAY_TASK_ID: '99' }, submitDir: '/tmp', nodefilePath: '/x',
      array: { jobId: 12, taskId: 8, count: 4, min: 0, max: 12, step: 4 },
    });
    for (const prefix of ['SLURM_ARRAY_', 'TARAS_ARRAY_']) {
      assert.deepEqual(
        ['JOB_ID', 'TASK_ID', 'TASK_COUNT', 'TASK_MAX', 'TASK_MIN', 'TASK_STEP'].map((name) => launch.env[prefix + name]),
        ['12', '8', '4', '12', '0', '4'],
      );
    }
    assert.equal(launch.stdoutPath, '/tmp/out-12_8.txt');
    const plain = jobLaunch({ jobId: 14, user: 'alice', nodes: ['n1'], cpusOnNode: 1, spec: jobSpec(), submitEnv: { SLURM_ARRAY_TASK_ID: '99' }, submitDir: '/tmp', nodefilePath: '/x' });
    assert.equal(plain.env.SLURM_ARRAY_TASK_ID, undefined);
  });
});

function jobSpec(extra: Partial<JobSpec> = {}): JobSpec {
  return {
    script: { path: '/tmp/job.sh', text: '#!/bin/sh\necho hi\n', args: [] },
    nodes: { min: 1 }, cpusPerTask: 1, timeLimitSeconds: 600, name: 'job', workingDir: '/tmp', output: 'taras-%j.out',
    export: { all: true, variables: [] }, requeue: false, ...extra,
  };
}

class RecordingAgents implements AgentLink {
  readonly orders: StartOrder[] = [];
  async start(order: StartOrder): Promise<void> {
    this.orders.push(order);
  }
  async signal(): Promise<void> {}
}

let files = 0;
function setup() {
  const path = join(work, `store-${++files}.db`);
  const store = openStore(path);
  const agents = new RecordingAgents();
  const clock = { ms: Date.UTC(2026, 10, 22, 12) };
  const engine = new ControllerEngine(defaultClusterConfig(work), store, agents, () => clock.ms);
  engine.agentRegistered([...engine.nodes.keys()], []);
  return { store, agents, engine, clock, path };
}

/** The queue's JOBID cells (labels for array rows) and states, as GET /queue answers them. */
function queueIds(engine: ControllerEngine, unfold = false): string[] {
  const table = unpackQueue(apiQueue(engine, [...engine.active.values()], false, apiStatus(engine, Date.now(), null), undefined, unfold));
  return table.id.map((id, i) => {
    const label = table.label?.[i];
    return `${label === undefined || label === null ? id : table.strings[label]} ${table.strings[table.state[i]]}`;
  });
}

describe('arrays in the controller engine', () => {
  it('stores every task as its own job in one submission; the array id is the first task\'s', () => {
    const { store, agents, engine } = setup();
    const [before] = engine.submit([{ user: 'alice', spec: jobSpec() }]);
    const submitEnv = { HOME: '/home/alice', PROJECT: 'x' };
    const [id] = engine.submit([{ user: 'alice', spec: { ...jobSpec({ array: { text: '0-15:4' } }), submitEnv } as JobSpec }]);
    assert.equal(id, before + 1);
    const tasks = [0, 1, 2, 3].map((i) => store.job(jobId(id + i))!);
    assert.deepEqual(tasks.map((t) => arrayTaskOf(t)?.taskId), [0, 4, 8, 12]);
    assert.deepEqual(tasks.map((t) => arrayTaskOf(t)?.jobId), [id, id, id, id]);
    assert.equal(store.job(jobId(id + 4)), undefined);
    const started = engine.schedule();
    assert.deepEqual([...started].sort((a, b) => a - b).slice(1), [id, id + 1, id + 2, id + 3]);
    const orders = agents.orders.filter((o) => o.jobId >= id).sort((a, b) => a.jobId - b.jobId);
    assert.deepEqual(orders.map((o) => o.array), [0, 4, 8, 12].map((taskId) => ({ jobId: id, taskId, count: 4, min: 0, max: 12, step: 4 })));
    assert.equal(agents.orders.find((o) => o.jobId === before)!.array, undefined);
    // The submitting shell's environment is stored once (with the first task) and reaches every task.
    assert.deepEqual(orders.map((o) => (o.spec as { submitEnv?: unknown }).submitEnv), [submitEnv, submitEnv, submitEnv, submitEnv]);
    assert.equal((store.job(jobId(id + 3))!.request as { submitEnv?: unknown }).submitEnv, undefined);
    // So is the script's text: every order carries it, one row holds it.
    const text = jobSpec().script.text;
    assert.deepEqual(orders.map((o) => o.spec.script.text), [text, text, text, text]);
    assert.deepEqual(tasks.map((t) => t.script), [text, '', '', '']);
    assert.equal(scriptOf(tasks[2], (task) => store.job(jobId(task))), text);
  });

  it('refuses a bad array whole, before storing anything', () => {
    const { store, engine } = setup();
    assert.throws(() => engine.submit([{ user: 'alice', spec: jobSpec({ array: { text: '0-20000' } }) }]),
      (error: unknown) => error instanceof SubmitRefused && /--array '0-20000': task id 20000 is above the largest this cluster allows/.test(error.message));
    assert.throws(() => engine.submit([{ user: 'alice', spec: jobSpec({ array: { text: '0-3' }, interactive: { pty: false, command: ['true'] } }) }]),
      /arrays are for batch jobs/);
    assert.equal(store.jobs({}).length, 0);
  });

  it('10,000 tasks in one submission; an idempotency key stores them once', () => {
    const { store, engine } = setup();
    const submission = { user: 'alice', spec: jobSpec({ array: { text: '0-9999' } }), idempotencyKey: 'array-key-1' };
    const [first] = engine.accept([submission]);
    const again = engine.acceptEach([submission]);
    assert.deepEqual(again, [{ id: first, replayed: true }]);
    assert.equal(store.jobs({}).length, 10_000);
    // The same key twice in one batch stores the array once.
    const twice = { user: 'alice', spec: jobSpec({ array: { text: '0-2' } }), idempotencyKey: 'array-key-2' };
    const outcomes = engine.acceptEach([twice, twice]);
    assert.deepEqual(outcomes.map((o) => ('id' in o ? o.replayed : 'refused')), [false, true]);
    assert.equal((outcomes[0] as { id: number }).id, (outcomes[1] as { id: number }).id);
    assert.equal(store.jobs({}).length, 10_003);
    assert.equal(arrayTaskOf(store.job(jobId(first + 9999))!)?.taskId, 9999);
  });

  it('a restarted controller queues tasks that keep no script of their own, and they start with the first task\'s', () => {
    const { engine, store, clock, path } = setup();
    const [id] = engine.submit([{ user: 'alice', spec: jobSpec({ array: { text: '0-2' }, hold: true }) }]);
    store.close();
    const reopened = openStore(path);
    const agents = new RecordingAgents();
    const restarted = new ControllerEngine(defaultClusterConfig(work), reopened, agents, () => clock.ms);
    restarted.agentRegistered([...restarted.nodes.keys()], []);
    assert.deepEqual([0, 1, 2].map((i) => restarted.active.get(jobId(id + i))?.state), ['PENDING', 'PENDING', 'PENDING'], 'none ended FAILED at start-up');
    restarted.releaseMany([jobId(id + 2)], 'alice', false);
    assert.deepEqual(restarted.schedule(), [id + 2]);
    assert.equal(agents.orders.find((o) => o.jobId === id + 2)!.spec.script.text, jobSpec().script.text);
    reopened.close();
  });

  it('a task whose first task no longer holds the script ends FAILED, never runs an empty script (a damaged database)', () => {
    const { engine, store, agents, clock, path } = setup();
    const [id] = engine.submit([{ user: 'alice', spec: jobSpec({ array: { text: '0-2' }, hold: true }) }]);
    // Damage by hand: the first task's stored script text is blanked (the log's trigger dropped to do it).
    const raw = new Database(path);
    raw.exec('DROP TRIGGER job_events_no_update');
    raw.prepare("UPDATE job_events SET payload = json_remove(json_set(payload, '$.request.script.text', ''), '$.script') WHERE job_id = ? AND seq = 1").run(id);
    raw.close();
    assert.equal(store.job(jobId(id))!.script, '');
    // A running controller: the released task is not started.
    engine.releaseMany([jobId(id + 1)], 'alice', false);
    assert.deepEqual(engine.schedule(), []);
    assert.equal(agents.orders.some((o) => o.jobId === id + 1), false);
    assert.equal(store.job(jobId(id + 1))!.state, 'FAILED');
    assert.match(store.job(jobId(id + 1))!.reason ?? '', new RegExp(`first task \\(job ${id}\\) no longer holds the script`));
    // A task whose array text no longer parses (as after a parser change) is known by its stored index: it fails too.
    const db = new Database(path);
    db.prepare("UPDATE job_events SET payload = json_set(payload, '$.request.array.text', 'not an array') WHERE job_id = ? AND seq = 1").run(id + 2);
    db.close();
    // A restarted one: the last task ends FAILED at start-up, with the same reason.
    store.close();
    const reopened = openStore(path);
    const restarted = new ControllerEngine(defaultClusterConfig(work), reopened, new RecordingAgents(), () => clock.ms);
    assert.equal(restarted.active.has(jobId(id + 2)), false);
    assert.equal(reopened.job(jobId(id + 2))!.state, 'FAILED');
    assert.match(reopened.job(jobId(id + 2))!.reason ?? '', /no longer holds the script/);
    reopened.close();
  });
});

describe('GET /queue built in pieces (queueBuild)', () => {
  it('pauses every so many rows and gives what one build gives: arrays folded across pieces, one plan, the records it was given', () => {
    const { engine } = setup();
    // 16 nodes: 16 one-node jobs run, then an array (pending, folded on one line), held jobs and more pending ones.
    const running = engine.submit(Array.from({ length: 16 }, () => ({ user: 'alice', spec: jobSpec({ cpusPerTask: 8 }) })));
    const [array] = engine.submit([{ user: 'bob', spec: jobSpec({ array: { text: '0-9' }, cpusPerTask: 8 }) }]);
    const later = engine.submit(Array.from({ length: 7 }, (_, i) => ({ user: 'carol', spec: jobSpec({ cpusPerTask: 8, hold: i % 3 === 0 }) })));
    assert.deepEqual(engine.schedule(), running);
    const records = [...engine.active.values()];
    const status = apiStatus(engine, Date.now(), null);
    const whole = apiQueue(engine, records, true, status);

    const build = queueBuild(engine, records, true, status, undefined, false, false, 4);
    let pauses = 0;
    let step = build.next();
    // The plan changes during the build (a job ends, another is held): the listing stays the one of its start.
    engine.jobReport({ jobId: running[0], state: 'COMPLETED', exitCode: 0, endTimeMs: Date.now() });
    engine.holdMany([later[1]], 'carol', false);
    engine.schedule();
    while (!step.done) {
      pauses++;
      step = build.next();
    }
    assert.deepEqual(step.value, whole);
    // 33 records: the planned starts, the keys in pieces of 4 (9 pieces, 8 pauses), the order, the packing in pieces of 4.
    assert.ok(pauses >= 8 + 2 + 7, `paused ${pauses} times`);
    const table = unpackQueue(step.value);
    assert.equal(table.id.length, 16 + 1 + 7, 'the array\'s ten pending tasks on one line');
    assert.equal(table.strings[table.label![16]!], `${array}_[0-9]`);
    assert.deepEqual(table.id.slice(0, 16), running);
  });
});

describe('the %N throttle, cancel and the folded queue', () => {
  it('runs at most N tasks at once; the others wait out of the core, planned later, and start as tasks end', () => {
    const { agents, engine, clock } = setup();
    const [id] = engine.submit([{ user: 'alice', spec: jobSpec({ array: { text: '0-5%2' }, timeLimitSeconds: 600 }) }]);
    assert.deepEqual(engine.schedule(), [id, id + 1], '16 idle nodes, but %2');
    engine.touch();
    assert.deepEqual(engine.schedule(), [], 'no third task while two run');
    const waiting = [2, 3, 4, 5].map((i) => apiJob(engine, engine.active.get(jobId(id + i))!));
    assert.match(waiting[0].reason ?? '', /^JobArrayTaskLimit/);
    // Planned as the slots free: tasks 2 and 3 when the first two end (their limit), 4 and 5 after those.
    const at = (minutes: number) => new Date(clock.ms + minutes * 60_000).toISOString().replace(/\.\d+Z$/, 'Z');
    assert.deepEqual(waiting.map((job) => job.plannedStart?.replace(/\.\d+Z$/, 'Z')), [at(10), at(10), at(20), at(20)]);
    assert.deepEqual(queueIds(engine), [`${id}_0 RUNNING`, `${id}_1 RUNNING`, `${id}_[2-5%2] PENDING`]);
    assert.deepEqual(queueIds(engine, true).slice(2), [2, 3, 4, 5].map((t) => `${id}_${t} PENDING`));
    engine.jobReport({ jobId: id, state: 'COMPLETED', exitCode: 0, endTimeMs: clock.ms });
    assert.deepEqual(engine.schedule(), [id + 2], 'one slot freed: the next task');
    assert.equal(agents.orders.at(-1)!.array?.taskId, 2);
    assert.deepEqual(queueIds(engine), [`${id}_1 RUNNING`, `${id}_2 RUNNING`, `${id}_[3-5%2] PENDING`]);
  });

  it('a restarted controller keeps the throttle: running tasks hold their slots', () => {
    const { engine, store, clock, path } = setup();
    const [id] = engine.submit([{ user: 'alice', spec: jobSpec({ array: { text: '1-4%1' } }) }]);
    assert.deepEqual(engine.schedule(), [id]);
    store.close();
    const reopened = openStore(path);
    const restarted = new ControllerEngine(defaultClusterConfig(work), reopened, new RecordingAgents(), () => clock.ms);
    restarted.agentRegistered([...restarted.nodes.keys()], [{ jobId: id, run: 0, state: 'RUNNING', exitCode: null, endTimeMs: null }]);
    restarted.touch();
    assert.deepEqual(restarted.schedule(), [], 'task 1 still runs');
    restarted.jobReport({ jobId: id, state: 'COMPLETED', exitCode: 0, endTimeMs: clock.ms });
    assert.deepEqual(restarted.schedule(), [id + 1], 'then task 2');
  });

  it('scontrol update ArrayTaskThrottle: raising it starts more at the next pass, lowering it stops none, 0 lifts it, a throttle added to an array without one counts its running tasks; a restart keeps it', () => {
    const { engine, store, clock, path } = setup();
    const [id] = engine.submit([{ user: 'alice', spec: jobSpec({ array: { text: '0-7%2' } }) }]);
    assert.deepEqual(engine.schedule(), [id, id + 1]);
    engine.setArrayThrottle(jobId(id), 4, 'alice', false);
    assert.deepEqual(engine.schedule(), [id + 2, id + 3], 'two more slots');
    assert.deepEqual(queueIds(engine).at(-1), `${id}_[4-7%4] PENDING`);
    engine.setArrayThrottle(jobId(id), 1, 'alice', false);
    engine.touch();
    assert.deepEqual(engine.schedule(), [], 'four run on; none more');
    assert.deepEqual([0, 1, 2, 3].map((i) => engine.active.get(jobId(id + i))?.state), ['RUNNING', 'RUNNING', 'RUNNING', 'RUNNING']);
    for (const i of [0, 1, 2]) engine.jobReport({ jobId: jobId(id + i), state: 'COMPLETED', exitCode: 0, endTimeMs: clock.ms });
    assert.deepEqual(engine.schedule(), [], 'task 3 still holds the one slot');
    // The running task took the new %N too, so a restart sees %1 wherever it looks.
    assert.equal((store.job(jobId(id + 3))!.request.array as { text: string }).text, '0-7%1');
    store.close();
    const reopened = openStore(path);
    const restarted = new ControllerEngine(defaultClusterConfig(work), reopened, new RecordingAgents(), () => clock.ms);
    restarted.agentRegistered([...restarted.nodes.keys()], [{ jobId: jobId(id + 3), run: 0, state: 'RUNNING', exitCode: null, endTimeMs: null }]);
    restarted.touch();
    assert.deepEqual(restarted.schedule(), [], 'after a restart: still one at a time');
    restarted.setArrayThrottle(jobId(id), 0, 'alice', false);
    assert.deepEqual(restarted.schedule(), [id + 4, id + 5, id + 6, id + 7], '0: no limit');
    assert.equal((restarted.active.get(jobId(id + 7))!.request.array as { text: string }).text, '0-7');

    // An array that had no throttle: its running tasks hold slots of the new one. Tasks of whole nodes: as many start as nodes are free.
    const [free] = restarted.submit([{ user: 'alice', spec: jobSpec({ array: { text: '0-15' }, cpusPerTask: 8 }) }]);
    const first = restarted.schedule().length;
    assert.ok(first >= 11 && first < 16, `${first} started`);
    restarted.setArrayThrottle(jobId(free), first - 2, 'alice', false);
    for (const i of [0, 1, 2]) restarted.jobReport({ jobId: jobId(free + i), state: 'COMPLETED', exitCode: 0, endTimeMs: clock.ms });
    assert.deepEqual(restarted.schedule(), [free + first], `${first - 3} run: one slot of ${first - 2}, though three nodes are free`);
    reopened.close();
  });

  it('a throttled array submitted held and then released keeps its %N (release put every task in the queue)', () => {
    const { engine } = setup();
    const [id] = engine.submit([{ user: 'alice', spec: jobSpec({ array: { text: '0-3%1' }, hold: true }) }]);
    assert.deepEqual(engine.schedule(), []);
    engine.releaseMany([0, 1, 2, 3].map((i) => jobId(id + i)), 'alice', false);
    assert.deepEqual(engine.schedule(), [id], 'one at a time, on 16 idle nodes');
    // Held while it waits for a slot, then released: it waits on, and takes the slot when it frees.
    engine.holdMany([jobId(id + 1)], 'alice', false);
    engine.releaseMany([jobId(id + 1)], 'alice', false);
    engine.touch();
    assert.deepEqual(engine.schedule(), []);
  });

  it('ArrayTaskThrottle is refused on a task, a plain job, another user\'s array and an ended array, by name', () => {
    const { engine } = setup();
    const [plain] = engine.submit([{ user: 'alice', spec: jobSpec() }]);
    const [id] = engine.submit([{ user: 'alice', spec: jobSpec({ array: { text: '0-1' } }) }]);
    const refusal = (arrayId: number, user = 'alice') => {
      try {
        engine.setArrayThrottle(jobId(arrayId), 1, user, false);
        return 'accepted';
      } catch (error) {
        return (error as Error).message;
      }
    };
    assert.match(refusal(plain), new RegExp(`^job ${plain} is not a job array: ArrayTaskThrottle is set on an array's id`));
    assert.match(refusal(id + 1), new RegExp(`^job ${id + 1} is task ${id}_1: ArrayTaskThrottle is set on an array's id \\(JobId=${id}\\)`));
    assert.match(refusal(id, 'bob'), new RegExp(`^job ${id} belongs to alice; only they or an administrator can update it`));
    engine.cancelMany([jobId(id), jobId(id + 1)], 'alice', false);
    assert.match(refusal(id), new RegExp(`^array ${id} has ended`));
  });

  it('ArrayTaskThrottle that would make the array\'s stored text longer than a submission\'s may be is refused, nothing stored; a restart runs the array on (red team)', () => {
    const { engine, store, clock, path } = setup();
    const long = `0-${'0'.repeat(4093)}1`; // tasks 0 and 1, in the 4,096 characters a submission may give
    const [id] = engine.submit([{ user: 'alice', spec: jobSpec({ array: { text: long } }) }]);
    assert.deepEqual(engine.schedule(), [id, id + 1]);
    assert.throws(() => engine.setArrayThrottle(jobId(id), 1, 'alice', false),
      (error: unknown) => error instanceof SubmitRefused && error.message === `array ${id}: its --array text with %1 would be 4098 characters, more than the 4096 a job array's text may have; submit it again with a shorter one (ranges: 0-99 rather than 0,1,2,...)`);
    assert.equal((store.job(jobId(id + 1))!.request.array as { text: string }).text, long, 'nothing stored');
    store.close();
    // Before, the longer text was stored and the restart ended both tasks FAILED ("its stored request is not valid") while they ran.
    const reopened = openStore(path);
    const restarted = new ControllerEngine(defaultClusterConfig(work), reopened, new RecordingAgents(), () => clock.ms);
    assert.deepEqual([id, id + 1].map((n) => restarted.recordOf(jobId(n))?.state), ['RUNNING', 'RUNNING']);
    reopened.close();
  });

  it('ARRAYID names every task, ARRAYID_N one; errors name the problem', () => {
    const { engine, store } = setup();
    const [plain] = engine.submit([{ user: 'alice', spec: jobSpec() }]);
    const [id] = engine.submit([{ user: 'alice', spec: jobSpec({ array: { text: '1,3,5-7%2' } }) }]);
    const lookup = (n: number) => engine.active.get(jobId(n)) ?? store.job(jobId(n));
    assert.deepEqual(resolveJobRef(String(id), lookup), { ids: [id, id + 1, id + 2, id + 3, id + 4], array: true });
    assert.deepEqual(resolveJobRef(`${id}_5`, lookup), { ids: [id + 2], array: false });
    assert.deepEqual(resolveJobRef(`${id}_[1,5-6]`, lookup), { ids: [id, id + 2, id + 3], array: false }, 'as scancel 20_[1-3]');
    assert.deepEqual(resolveJobRef(`${id}_[3-4]`, lookup), { error: `array ${id} has no task 4 (its tasks: 1,3,5-7)` });
    assert.deepEqual(resolveJobRef(id + 2, lookup), { ids: [id + 2], array: false }, 'a task by its own job id');
    assert.deepEqual(resolveJobRef(plain, lookup), { ids: [plain], array: false });
    assert.deepEqual(resolveJobRef(`${id}_4`, lookup), { error: `array ${id} has no task 4 (its tasks: 1,3,5-7)` });
    assert.deepEqual(resolveJobRef(`${plain}_1`, lookup), { error: `job ${plain} is not a job array: write ${plain} without _1` });
    assert.deepEqual(resolveJobRef('99999_1', lookup), { error: 'no job 99999' });
    assert.match((resolveJobRef('x_1', lookup) as { error: string }).error, /'x_1' is not a job id/);
    // Cancel the whole array: pending (waiting ones too) and running; another user is refused every task.
    engine.schedule();
    const refused = engine.cancelMany((resolveJobRef(String(id), lookup) as { ids: number[] }).ids.map(jobId), 'bob');
    assert.deepEqual(refused.map((r) => r.result), ['refused', 'refused', 'refused', 'refused', 'refused']);
    assert.match(refused[0].message, /belongs to alice/);
    const results = engine.cancelMany((resolveJobRef(String(id), lookup) as { ids: number[] }).ids.map(jobId), 'alice');
    assert.deepEqual(results.map((r) => r.result === 'refused'), [false, false, false, false, false]);
    // Each task named as squeue shows it, with its own id (it said only "job 20075").
    assert.equal(results[4].message, `job ${id}_7 (${id + 4}): cancelled`);
    assert.deepEqual([2, 3, 4].map((i) => store.job(jobId(id + i))!.state), ['CANCELLED', 'CANCELLED', 'CANCELLED']);
    engine.touch();
    assert.deepEqual(engine.schedule(), [], 'no waiting task starts after the cancel');
  });
});
