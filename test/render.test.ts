// The terminal views of `taras queue`, `nodes`, `show`, `when` and `status`,
// rendered from API objects at a fixed moment (Tue 24 Nov 2026 12:00) in UTC,
// and compared with the exact text a user sees.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ApiClusterStatus, ApiJob, ApiJobWithEvents, ApiNode, ApiWhen } from '../src/api/types.js';
import { renderShow, renderWhen } from '../src/cli/render/job.js';
import { renderNodes } from '../src/cli/render/nodes.js';
import { MIN_NAME_WIDTH, queueOrder, renderQueue } from '../src/cli/render/queue.js';
import { renderStatus } from '../src/cli/render/status.js';
import { cutToWidth, displayWidth, LineChunks, truncate } from '../src/cli/render/text.js';
import { fullTime, localTime, relative, toMillis } from '../src/cli/render/time.js';

const NOW = '2026-11-24T12:00:00Z';
const UTC = 'UTC';

const text = (...lines: string[]): string => `${lines.join('\n')}\n`;
const widest = (output: string): number => Math.max(...output.split('\n').map((line) => Array.from(line).length));

function job(fields: Partial<ApiJob> & Pick<ApiJob, 'id' | 'user' | 'state' | 'name'>): ApiJob {
  return {
    reason: null,
    partition: 'batch',
    nodes: [],
    nodeCount: 1,
    ntasks: 1,
    cpusPerTask: 1,
    memoryMiB: null,
    timeLimitSeconds: 4 * 3600,
    submitTime: '2026-11-24T09:00:00Z',
    startTime: null,
    plannedStart: null,
    predictedEnd: null,
    endTime: null,
    exitCode: null,
    workingDir: `/home/${fields.user}`,
    stdoutPath: `/home/${fields.user}/taras-${fields.id}.out`,
    stderrPath: `/home/${fields.user}/taras-${fields.id}.out`,
    requeue: false,
    type: 'normal',
    deadline: null,
    guaranteed: null,
    ...fields,
  };
}

const RUNNING_17 = job({
  id: 17, user: 'alice', state: 'RUNNING', name: 'train-resnet50-imagenet-full', nodes: ['node01', 'node02'], nodeCount: 2,
  ntasks: 16, memoryMiB: 1536, submitTime: '2026-11-23T18:20:00Z', startTime: '2026-11-24T10:00:00Z', predictedEnd: '2026-11-24T14:00:00Z',
});
const RUNNING_19 = job({
  id: 19, user: 'bob', state: 'RUNNING', name: 'postprocess', nodes: ['node03'], timeLimitSeconds: 3 * 3600,
  startTime: '2026-11-24T11:05:00Z', predictedEnd: '2026-11-24T14:05:00Z',
});
const PENDING_42 = job({
  id: 42, user: 'carol', state: 'PENDING', name: 'sweep-learning-rate-0.001', nodeCount: 2, ntasks: 8, cpusPerTask: 2,
  memoryMiB: 4096, timeLimitSeconds: 2 * 3600, submitTime: '2026-11-24T11:30:00Z',
  plannedStart: '2026-11-24T14:05:00Z', predictedEnd: '2026-11-24T16:05:00Z', workingDir: '/home/carol/sweep',
});
const PENDING_43 = job({
  id: 43, user: 'alice', state: 'PENDING', name: 'eval', timeLimitSeconds: 2 * 3600,
  plannedStart: '2026-11-25T09:30:00Z', predictedEnd: '2026-11-25T11:30:00Z',
});
const UNPLANNED_44 = job({ id: 44, user: 'dave', state: 'PENDING', name: 'render-frames', partition: 'gpu', reason: 'no gpu node is up' });

/** Two running, three pending (one with no plan), given out of order. */
const JOBS: ApiJob[] = [UNPLANNED_44, PENDING_43, RUNNING_19, PENDING_42, RUNNING_17];

const STATUS: ApiClusterStatus = {
  up: true,
  version: '0.1.0',
  cluster: 'demo',
  policy: 'easy',
  placement: 'first-fit',
  now: NOW,
  nodes: { total: 6, idle: 1, allocated: 2, mixed: 1, down: 1, drained: 1 },
  jobs: { pending: 3, running: 2 },
  motd: 'Maintenance on Friday 08:00-12:00.\nSave your work.',
};

function node(fields: Partial<ApiNode> & Pick<ApiNode, 'name' | 'state'>): ApiNode {
  return {
    reason: null, cpus: 8, cpusAllocated: 0, memoryMiB: 32768, memoryAllocatedMiB: 0, features: [], partitions: ['batch'],
    jobs: [], lastHeartbeat: NOW, ...fields,
  };
}

const NODES: ApiNode[] = [
  node({ name: 'node10', state: 'drained', reason: 'bad DIMM', partitions: ['batch', 'gpu'], features: ['gpu'] }),
  node({ name: 'node02', state: 'allocated', cpusAllocated: 8, memoryAllocatedMiB: 1536, jobs: [{ id: 17, user: 'alice' }] }),
  node({ name: 'node01', state: 'allocated', cpusAllocated: 8, memoryAllocatedMiB: 1536, jobs: [{ id: 17, user: 'alice' }] }),
  node({ name: 'node03', state: 'mixed', cpusAllocated: 3, memoryAllocatedMiB: 8192, jobs: [{ id: 21, user: 'erin' }, { id: 19, user: 'bob' }] }),
  node({ name: 'node04', state: 'idle', features: ['ib'] }),
  node({ name: 'node09', state: 'down', reason: 'no heartbeat for 60 s', partitions: ['gpu'], features: ['gpu'] }),
];

const HEADER_200 = [
  'Tue 24 Nov 2026 12:00, cluster demo, controller up (taras 0.1.0), policy easy',
  '6 nodes: 1 idle, 2 allocated, 1 mixed, 1 down, 1 drained; jobs: 2 running, 3 pending',
  '',
];
const HEADER_80 = [
  'Tue 24 Nov 2026 12:00, cluster demo, controller up (taras 0.1.0), policy easy',
  '6 nodes: 1 idle, 2 allocated, 1 mixed, 1 down, 1 drained;',
  'jobs: 2 running, 3 pending',
  '',
];

describe('localTime and relative', () => {
  it('names today, tomorrow and yesterday by the local day, cutting seconds as a clock does', () => {
    assert.equal(localTime('2026-11-24T14:05:59Z', NOW, UTC), 'today 14:05');
    assert.equal(localTime('2026-11-24T00:00:00Z', NOW, UTC), 'today 00:00');
    assert.equal(localTime('2026-11-25T09:30:00Z', NOW, UTC), 'tomorrow 09:30');
    assert.equal(localTime('2026-11-23T23:59:00Z', NOW, UTC), 'yesterday 23:59');
  });

  it('gives weekday, date and month for other days, and the year when it is not now\'s', () => {
    assert.equal(localTime('2026-11-26T14:05:00Z', NOW, UTC), 'Thu 26 Nov 14:05');
    assert.equal(localTime('2026-11-20T08:00:00Z', NOW, UTC), 'Fri 20 Nov 08:00');
    assert.equal(localTime('2027-01-02T09:00:00Z', NOW, UTC), 'Sat 2 Jan 2027 09:00');
    assert.equal(localTime('2025-11-25T09:00:00Z', NOW, UTC), 'Tue 25 Nov 2025 09:00');
  });

  it('counts days in the given zone: 23:30 UTC is already tomorrow in Berlin', () => {
    assert.equal(localTime('2026-11-24T23:30:00Z', NOW, UTC), 'today 23:30');
    assert.equal(localTime('2026-11-24T23:30:00Z', NOW, 'Europe/Berlin'), 'tomorrow 00:30');
    assert.equal(localTime('2026-11-24T12:00:00Z', NOW, 'America/New_York'), 'today 07:00');
  });

  it('follows daylight saving time changes of the zone', () => {
    const now = '2026-03-28T12:00:00Z';
    assert.equal(localTime('2026-03-29T00:59:00Z', now, 'Europe/Berlin'), 'tomorrow 01:59');
    assert.equal(localTime('2026-03-29T01:00:00Z', now, 'Europe/Berlin'), 'tomorrow 03:00');
    assert.equal(localTime('2026-10-25T00:30:00Z', now, 'Europe/Berlin'), 'Sun 25 Oct 02:30');
    assert.equal(localTime('2026-10-25T01:30:00Z', now, 'Europe/Berlin'), 'Sun 25 Oct 02:30');
  });

  it('shows seconds when asked, and an unparsable time as given', () => {
    assert.equal(localTime('2026-11-24T10:00:07.250Z', NOW, UTC, { seconds: true }), 'today 10:00:07');
    assert.equal(localTime('soon', NOW, UTC), 'soon');
    assert.equal(fullTime(NOW, UTC), 'Tue 24 Nov 2026 12:00');
  });

  it('says how far a time is: two largest units, rounded to the minute', () => {
    assert.equal(relative('2026-11-24T14:10:00Z', NOW), 'in 2 h 10 min');
    assert.equal(relative('2026-11-24T14:00:00Z', NOW), 'in 2 h');
    assert.equal(relative('2026-11-24T11:55:00Z', NOW), '5 min ago');
    assert.equal(relative('2026-11-24T12:00:40Z', NOW), 'in 40 s');
    assert.equal(relative('2026-11-27T16:20:00Z', NOW), 'in 3 d 4 h');
    assert.equal(relative(NOW, NOW), 'now');
    assert.equal(relative('never', NOW), '');
  });
});

describe('LineChunks (long listings written a thousand lines at a time)', () => {
  it('hands on chunks of 1,000 lines whose text is the lines joined by newlines, one after the last; kept whole without a sink', () => {
    const lines = Array.from({ length: 2500 }, (_, i) => `line ${i}`);
    const chunks: string[] = [];
    const streamed = new LineChunks((chunk) => chunks.push(chunk));
    const kept = new LineChunks();
    for (const line of lines) {
      streamed.push(line);
      kept.push(line);
    }
    assert.equal(chunks.length, 2, 'two full chunks handed on as they filled');
    assert.equal(streamed.length, 2500);
    assert.equal(streamed.end(), '', 'a sink takes everything');
    assert.equal(chunks.length, 3);
    assert.deepEqual(chunks.map((chunk) => chunk.split('\n').length - 1), [1000, 1000, 500]);
    assert.equal(chunks.join(''), `${lines.join('\n')}\n`);
    assert.equal(kept.end(), `${lines.join('\n')}\n`);
    assert.equal(new LineChunks().end(), '', 'no lines: no text, not a lone newline');
  });

  it('taras queue written in chunks is the same text as drawn whole', () => {
    const many: ApiJob[] = Array.from({ length: 2300 }, (_, i) => ({ ...PENDING_43, id: 100 + i, name: i % 7 === 0 ? `odd-${i}` : 'eval' }));
    const view = { status: STATUS, jobs: [...JOBS, ...many], now: NOW, width: 120, timeZone: UTC };
    const chunks: string[] = [];
    assert.equal(renderQueue(view, (chunk) => chunks.push(chunk)), '');
    assert.ok(chunks.length >= 3);
    assert.equal(chunks.join(''), renderQueue(view));
  });
});

describe('renderQueue', () => {
  it('lists running jobs by start, then pending by planned start with the unplanned last, names whole at 200 columns', () => {
    const output = renderQueue({ status: STATUS, jobs: JOBS, now: NOW, width: 200, timeZone: UTC });
    assert.equal(output, text(
      ...HEADER_200,
      'JOBID  USER   STATE    PARTITION  NODES        START           END    NAME',
      '   17  alice  RUNNING  batch      node[01-02]  today 10:00     14:00  train-resnet50-imagenet-full',
      '   19  bob    RUNNING  batch      node03       today 11:05     14:05  postprocess',
      '   42  carol  PENDING  batch      2 nodes      today 14:05     16:05  sweep-learning-rate-0.001',
      '   43  alice  PENDING  batch      1 node       tomorrow 09:30  11:30  eval',
      '   44  dave   PENDING  gpu        1 node       -               -      render-frames',
    ));
    assert.ok(widest(output) <= 200);
  });

  it('with a priority job listed: a T column (N, P) after the id and DEADLINE after END, aligned', () => {
    const priority = { ...PENDING_42, type: 'priority' as const, deadline: '2026-11-24T17:00:00Z', guaranteed: true };
    const output = renderQueue({ status: STATUS, jobs: [UNPLANNED_44, PENDING_43, RUNNING_19, priority, RUNNING_17], now: NOW, width: 200, timeZone: UTC });
    assert.equal(output, text(
      ...HEADER_200,
      'JOBID  T  USER   STATE    PARTITION  NODES        START           END    DEADLINE     NAME',
      '   17  N  alice  RUNNING  batch      node[01-02]  today 10:00     14:00  -            train-resnet50-imagenet-full',
      '   19  N  bob    RUNNING  batch      node03       today 11:05     14:05  -            postprocess',
      '   42  P  carol  PENDING  batch      2 nodes      today 14:05     16:05  today 17:00  sweep-learning-rate-0.001',
      '   43  N  alice  PENDING  batch      1 node       tomorrow 09:30  11:30  -            eval',
      '   44  N  dave   PENDING  gpu        1 node       -               -      -            render-frames',
    ));
  });

  it('cuts only the names, with an ellipsis, so every line fits 80 columns', () => {
    const output = renderQueue({ status: STATUS, jobs: JOBS, now: NOW, width: 80, timeZone: UTC });
    assert.equal(output, text(
      ...HEADER_80,
      'JOBID  USER   STATE    PARTITION  NODES        START           END    NAME',
      '   17  alice  RUNNING  batch      node[01-02]  today 10:00     14:00  train-res…',
      '   19  bob    RUNNING  batch      node03       today 11:05     14:05  postproce…',
      '   42  carol  PENDING  batch      2 nodes      today 14:05     16:05  sweep-lea…',
      '   43  alice  PENDING  batch      1 node       tomorrow 09:30  11:30  eval',
      '   44  dave   PENDING  gpu        1 node       -               -      render-fr…',
    ));
    assert.equal(widest(output), 80);
  });

  it('measures and cuts wide names by terminal columns: every line fits 80 columns, no character split', () => {
    const wide = [
      { ...RUNNING_17, name: '日本語のジョブ名前です' }, { ...RUNNING_19, name: '🧪🧪🧪🧪🧪test' }, { ...PENDING_42, name: '👩‍🔬👩‍🔬👩‍🔬👩‍🔬lab' },
      { ...PENDING_43, name: '🇩🇪🇫🇷' }, { ...UNPLANNED_44, name: 'e\u0301cole-e\u0301te\u0301-2026' },
    ];
    const output = renderQueue({ status: STATUS, jobs: wide, now: NOW, width: 80, timeZone: UTC });
    assert.deepEqual(output.split('\n').slice(HEADER_80.length + 1, -1).map((line) => line.slice(70)), [
      '日本語の…', '🧪🧪🧪🧪…', '👩‍🔬👩‍🔬👩‍🔬👩‍🔬l…', '🇩🇪🇫🇷', 'e\u0301cole-e\u0301te\u0301…',
    ]);
    for (const line of output.split('\n')) assert.ok(displayWidth(line) <= 80, line);
  });

  it('never cuts a name below the minimum: at 50 columns the lines pass the width instead', () => {
    const output = renderQueue({ status: STATUS, jobs: JOBS, now: NOW, width: 50, timeZone: UTC });
    const row17 = output.split('\n').find((line) => line.trimStart().startsWith('17 '));
    assert.equal(row17, '   17  alice  RUNNING  batch      node[01-02]  today 10:00     14:00  train-res…');
    assert.equal(MIN_NAME_WIDTH, 10);
  });

  it('never cuts names without a width (output is not a terminal)', () => {
    const output = renderQueue({ status: STATUS, jobs: JOBS, now: NOW, timeZone: UTC });
    assert.ok(output.includes('train-resnet50-imagenet-full\n'));
  });

  it('--long adds CPUs, memory per node, submit time, limit and working directory', () => {
    const output = renderQueue({ status: STATUS, jobs: JOBS, now: NOW, width: 200, long: true, timeZone: UTC });
    assert.equal(output, text(
      ...HEADER_200,
      'JOBID  USER   STATE    PARTITION  NODES        CPUS    MEMORY  SUBMITTED        START           END    LIMIT     WORKDIR            NAME',
      '   17  alice  RUNNING  batch      node[01-02]    16  1536 MiB  yesterday 18:20  today 10:00     14:00  04:00:00  /home/alice        train-resnet50-imagenet-full',
      '   19  bob    RUNNING  batch      node03          1         -  today 09:00      today 11:05     14:05  03:00:00  /home/bob          postprocess',
      '   42  carol  PENDING  batch      2 nodes        16     4 GiB  today 11:30      today 14:05     16:05  02:00:00  /home/carol/sweep  sweep-learning-rate-0.001',
      '   43  alice  PENDING  batch      1 node          1         -  today 09:00      tomorrow 09:30  11:30  02:00:00  /home/alice        eval',
      '   44  dave   PENDING  gpu        1 node          1         -  today 09:00      -               -      04:00:00  /home/dave         render-frames',
    ));
  });

  it('prints a friendly line for an empty queue', () => {
    const output = renderQueue({ status: { ...STATUS, jobs: { pending: 0, running: 0 } }, jobs: [], now: NOW, width: 200, timeZone: UTC });
    assert.equal(output, text(
      'Tue 24 Nov 2026 12:00, cluster demo, controller up (taras 0.1.0), policy easy',
      '6 nodes: 1 idle, 2 allocated, 1 mixed, 1 down, 1 drained; jobs: 0 running, 0 pending',
      '',
      'No jobs are running or waiting.',
    ));
  });

  it('orders ties by id: equal planned starts, and jobs with no plan', () => {
    const at = '2026-11-24T15:00:00Z';
    const jobs = [
      job({ id: 9, user: 'a', state: 'PENDING', name: 'x' }),
      job({ id: 8, user: 'a', state: 'PENDING', name: 'x', plannedStart: at }),
      job({ id: 3, user: 'a', state: 'PENDING', name: 'x' }),
      job({ id: 5, user: 'a', state: 'PENDING', name: 'x', plannedStart: at }),
      job({ id: 7, user: 'a', state: 'COMPLETING', name: 'x', startTime: '2026-11-24T11:00:00Z' }),
      job({ id: 6, user: 'a', state: 'RUNNING', name: 'x', startTime: '2026-11-24T11:00:00Z' }),
    ];
    assert.deepEqual(queueOrder(jobs).map((j) => j.id), [6, 7, 5, 8, 3, 9]);
  });

  it('shows no terminal escapes from job names or users', () => {
    const hostile = job({ id: 1, user: 'eve\u001b[2J', state: 'PENDING', name: 'x\u001b]0;pwned\u0007\nfake line' });
    const output = renderQueue({ status: STATUS, jobs: [hostile], now: NOW, width: 200, timeZone: UTC });
    assert.ok(!/[\u0000-\u0009\u000b-\u001f]/.test(output));
    assert.ok(output.endsWith('    1  eve?[2J  PENDING  batch      1 node  -      -    x?]0;pwned??fake line\n'), output);
  });

  it('renders 100,000 jobs (no call-stack limit on the number of lines)', () => {
    const starts = Array.from({ length: 5000 }, (_, i) => new Date(toMillis(NOW) + i * 60_000).toISOString());
    const jobs = Array.from({ length: 100_000 }, (_, i) =>
      job({ id: i + 1, user: `u${i % 50}`, state: 'PENDING', name: `job-${i}`, plannedStart: starts[i % starts.length] }));
    const output = renderQueue({ status: STATUS, jobs, now: NOW, width: 80, timeZone: UTC });
    assert.equal(output.split('\n').length, HEADER_80.length + 1 + 100_000 + 1);
  });
});

describe('renderNodes', () => {
  it('shows one row per node in name order: state, CPUs and memory in use, partitions, features, jobs and reasons', () => {
    assert.equal(renderNodes(NODES), text(
      '6 nodes: 1 idle, 2 allocated, 1 mixed, 1 down, 1 drained',
      '',
      'NODE    STATE      CPUS      MEMORY  PARTITIONS  FEATURES  JOBS             REASON',
      'node01  allocated   8/8  1.5/32 GiB  batch       -         17 alice',
      'node02  allocated   8/8  1.5/32 GiB  batch       -         17 alice',
      'node03  mixed       3/8    8/32 GiB  batch       -         19 bob, 21 erin',
      'node04  idle        0/8    0/32 GiB  batch       ib        -',
      'node09  down        0/8    0/32 GiB  gpu         gpu       -                no heartbeat for 60 s',
      'node10  drained     0/8    0/32 GiB  batch,gpu   gpu       -                bad DIMM',
    ));
  });

  it('--free counts idle nodes and free CPUs per partition; down and drained nodes offer none', () => {
    assert.equal(renderNodes(NODES, { free: true }), text(
      '1 idle node of 6, 13 free CPUs of 48.',
      '',
      'PARTITION  NODES  IDLE  DOWN/DRAINED  FREE CPUS  CPUS',
      'batch          5     1             1         13    40',
      'gpu            2     0             2          0    16',
      '(all)          6     1             2         13    48',
    ));
  });

  it('leaves the reason column out when no node has one, and says when no node has registered', () => {
    const header = renderNodes([node({ name: 'n1', state: 'idle', cpus: 4, memoryMiB: 512 })]).split('\n')[2];
    assert.equal(header, 'NODE  STATE  CPUS     MEMORY  PARTITIONS  FEATURES  JOBS');
    assert.equal(renderNodes([]), 'No nodes have registered with the controller yet.\n');
  });
});

describe('renderShow', () => {
  it('shows every field of a running job as aligned lines, then its event history', () => {
    const withEvents: ApiJobWithEvents = {
      ...RUNNING_17,
      events: [
        { time: '2026-11-23T18:20:00Z', type: 'submitted', detail: { partition: 'batch', nodes: 2, limit: 14400 } },
        { time: '2026-11-24T10:00:00.250Z', type: 'started', detail: { nodes: ['node01', 'node02'] } },
        { time: '2026-11-24T11:00:00Z', type: 'signalled', detail: { signal: 'SIGUSR1', note: 'checkpoint now' } },
      ],
    };
    assert.equal(renderShow(withEvents, NOW, UTC), text(
      'Job 17',
      '  Name:             train-resnet50-imagenet-full',
      '  User:             alice',
      '  State:            RUNNING',
      '  Partition:        batch',
      '  Nodes:            2: node[01-02]',
      '  Tasks:            16 x 1 CPU (16 CPUs)',
      '  Memory per node:  1536 MiB',
      '  Time limit:       4 hours (04:00:00)',
      '  Submitted:        yesterday 18:20 (17 h 40 min ago)',
      '  Started:          today 10:00 (2 h ago)',
      '  Predicted end:    today 14:00 (in 2 h)',
      '  Working dir:      /home/alice',
      '  Output:           /home/alice/taras-17.out',
      '  Error:            (with the output)',
      '  Requeue:          no',
      '',
      'Events (3):',
      '  TIME                EVENT      DETAIL',
      '  yesterday 18:20:00  submitted  partition=batch nodes=2 limit=14400',
      '  today 10:00:00      started    nodes=node[01-02]',
      '  today 11:00:00      signalled  signal=SIGUSR1 note="checkpoint now"',
    ));
  });

  it('shows a pending job\'s planned start, and a finished job\'s end, run time and exit code', () => {
    const pending = renderShow({ ...PENDING_42, events: [] }, NOW, UTC);
    assert.ok(pending.includes('  Nodes:            2 (none allocated yet)\n'));
    assert.ok(pending.includes('  Planned start:    today 14:05 (in 2 h 5 min)\n'));
    assert.ok(pending.endsWith('\nNo events recorded.\n'));
    const finished = renderShow({
      ...RUNNING_19, state: 'FAILED', exitCode: 3, reason: 'exit code 3', endTime: '2026-11-24T11:50:00Z', stderrPath: '/home/bob/err', events: [],
    }, NOW, UTC);
    assert.ok(finished.includes('  State:            FAILED (exit code 3)\n'));
    assert.ok(finished.includes('  Ended:            today 11:50 (10 min ago), after 45 min\n'));
    assert.ok(finished.includes('  Exit code:        3\n'));
    assert.ok(finished.includes('  Error:            /home/bob/err\n'));
    assert.ok(!finished.includes('Predicted end'));
  });

  it('shows the instants in the controller\'s words and events in local time, never UTC text or epoch milliseconds', () => {
    const begin = renderShow({ ...PENDING_42, reason: 'BeginTime: not before 2026-11-24T18:00:00.000Z (--begin)', events: [
      { time: '2026-11-24T10:00:00Z', type: 'started', detail: { nodes: ['node01'], promisedMs: Date.parse('2026-11-24T09:30:00Z') } },
    ] }, NOW, 'Asia/Tokyo');
    assert.ok(begin.includes('  State:            PENDING (BeginTime: not before tomorrow 03:00 (--begin))\n'), begin);
    assert.match(begin, /started +nodes=node01 promisedMs=today 18:30\n/);
  });
});

describe('renderWhen', () => {
  const when = (job: ApiJob, fields: Partial<ApiWhen> = {}): ApiWhen => ({
    job, plannedStart: job.plannedStart, predictedEnd: job.predictedEnd, position: null, waitsFor: [], explanation: '',
    plannedNodes: null, heldBy: [], heldByMore: 0, moved: null, ...fields,
  });

  it('a pending job: its planned start and end, the jobs it waits for and its place in line', () => {
    const output = renderWhen(when(PENDING_42, {
      position: 3,
      waitsFor: [{ id: 17, user: 'alice', predictedEnd: '2026-11-24T14:00:00Z' }, { id: 19, user: 'bob', predictedEnd: '2026-11-24T14:05:00Z' }],
    }), NOW, UTC);
    assert.equal(output, text(
      'Job 42 is planned to start today 14:05 (in 2 h 5 min) on 2 nodes of partition batch and end by 16:05.',
      'It waits for jobs 17 (alice, ends 14:00) and 19 (bob, ends 14:05).',
      'It is 3rd in line.',
    ));
  });

  it('a pending job planned on nodes: the nodes, what holds it there, "and N more", and why it moved', () => {
    const output = renderWhen(when(PENDING_42, {
      position: 2,
      plannedNodes: ['n1', 'n2'],
      heldBy: [
        { kind: 'running', id: '17', user: 'alice', until: '2026-11-24T14:05:00Z', nodes: ['n1'] },
        { kind: 'planned', id: '30', user: 'carl', until: '2026-11-24T14:05:00Z', nodes: ['n2'] },
        { kind: 'maintenance', id: 'kernel', user: null, until: '2026-11-24T14:05:00Z', nodes: ['n1', 'n2'] },
      ],
      heldByMore: 2,
      moved: 'its planned start moved later because capacity was taken away after it was planned',
    }), NOW, UTC);
    assert.equal(output, text(
      'Job 42 is planned to start today 14:05 (in 2 h 5 min) on n[1-2] (2 nodes of partition batch) and end by 16:05.',
      'It waits for job 17 (alice, running, ends 14:05) on n1, job 30 (carl, planned ahead of it, ends 14:05) on n2, '
        + 'maintenance window kernel (until 14:05) on n[1-2] and 2 more.',
      'It is 2nd in line.',
      'Its planned start moved later because capacity was taken away after it was planned.',
    ));
  });

  it('a pending job next in line waiting for one job, with the scheduler\'s explanation', () => {
    const output = renderWhen(when(PENDING_43, {
      position: 1, waitsFor: [{ id: 17, user: 'alice', predictedEnd: null }], explanation: 'Partition batch is full until then.',
    }), NOW, UTC);
    assert.equal(output, text(
      'Job 43 is planned to start tomorrow 09:30 (in 21 h 30 min) on 1 node of partition batch and end by 11:30.',
      'It waits for job 17 (alice, end unknown).',
      'It is next in line.',
      'Partition batch is full until then.',
    ));
  });

  it('a pending job with no plan: its place in line and why', () => {
    const output = renderWhen(when(UNPLANNED_44, { position: 5, explanation: 'No node of partition gpu is up.' }), NOW, UTC);
    assert.equal(output, text(
      'Job 44 is 5th in line and has no planned start yet (it needs 1 node of partition gpu).',
      'No node of partition gpu is up.',
    ));
  });

  it('a running job: since when, where, and the latest it ends', () => {
    assert.equal(renderWhen(when(RUNNING_17), NOW, UTC), text(
      'Job 17 has been running since today 10:00 (2 h ago) on node[01-02] and will end by 14:00 (in 2 h) at the latest.',
    ));
    const overdue = renderWhen(when(RUNNING_17), '2026-11-24T14:00:20Z', UTC);
    assert.equal(overdue, text('Job 17 has been running since today 10:00 (4 h ago) on node[01-02] and reached its time limit at 14:00.'));
  });

  it('a finished job: when and how it ended', () => {
    const finished = { ...RUNNING_17, state: 'COMPLETED' as const, endTime: '2026-11-24T11:50:00Z', exitCode: 0 };
    assert.equal(renderWhen(when(finished), NOW, UTC), text(
      'Job 17 is no longer in the queue: it ended today 11:50 (10 min ago) as COMPLETED with exit code 0, having started today 10:00.',
    ));
    const cancelled = { ...UNPLANNED_44, state: 'CANCELLED' as const, endTime: '2026-11-24T11:00:00Z', reason: 'cancelled by dave' };
    assert.equal(renderWhen(when(cancelled), NOW, UTC), text(
      'Job 44 is no longer in the queue: it ended today 11:00 (1 h ago) as CANCELLED (cancelled by dave) without starting.',
    ));
  });
});

describe('renderStatus', () => {
  it('up: version, cluster, clock, policy, placement, node and job counts, and the message of the day framed', () => {
    assert.equal(renderStatus(STATUS, 'http://127.0.0.1:6817', UTC), text(
      'Controller:  up at http://127.0.0.1:6817, taras 0.1.0',
      'Cluster:     demo',
      'Clock:       Tue 24 Nov 2026 12:00',
      'Policy:      easy',
      'Placement:   first-fit',
      'Nodes:       6 nodes: 1 idle, 2 allocated, 1 mixed, 1 down, 1 drained',
      'Jobs:        2 running, 3 pending',
      '',
      '┌─ Message of the day ───────────────┐',
      '│ Maintenance on Friday 08:00-12:00. │',
      '│ Save your work.                    │',
      '└────────────────────────────────────┘',
    ));
  });

  it('no message of the day: no frame', () => {
    const output = renderStatus({ ...STATUS, motd: null }, 'http://127.0.0.1:6817', UTC);
    assert.ok(output.endsWith('Jobs:        2 running, 3 pending\n'));
  });

  it('maintenance windows and reservations: one line each, local times', () => {
    const output = renderStatus({
      ...STATUS, motd: null, windows: [
        { name: 'maint-20261124-1800', kind: 'maintenance', start: '2026-11-24T18:00:00Z', end: '2026-11-24T20:00:00Z', nodes: ['node01', 'node02'] },
        { name: 'course', kind: 'reservation', start: '2026-11-25T09:00:00Z', end: '2026-11-25T12:00:00Z', nodes: ['node04'] },
      ],
    }, 'http://127.0.0.1:6817', UTC);
    assert.ok(output.endsWith('Jobs:         2 running, 3 pending\n'
      + 'Maintenance:  maint-20261124-1800 on node[01-02], today 18:00 to 20:00\n'
      + 'Reservation:  course on node04, tomorrow 09:00 to 12:00\n'), output);
  });

  it('down: the address tried and how to start a controller', () => {
    assert.equal(renderStatus(null, 'http://127.0.0.1:6817'), text(
      'Controller: down (no answer at http://127.0.0.1:6817)',
      '',
      'Start a whole test cluster on this machine with `npm start` in the Taras folder,',
      'or a controller alone with `taras controller --config cluster.toml`.',
      'To reach a controller elsewhere, pass --controller ADDRESS or set TARAS_CONTROLLER.',
    ));
  });
});

describe('text helpers', () => {
  it('truncate cuts by characters and marks the cut', () => {
    assert.equal(truncate('abcdef', 6), 'abcdef');
    assert.equal(truncate('abcdefg', 6), 'abcde…');
    assert.equal(truncate('façade-été', 6), 'façad…');
  });

  it('wide characters and emoji take two columns, combining marks none, and a cut never splits a character (it split surrogate pairs and 👩‍🔬)', () => {
    assert.deepEqual(['日本語', '🧪', '👩‍🔬', '🇩🇪', 'e\u0301', 'école', 'ｱ', 'abc'].map(displayWidth), [6, 2, 2, 2, 1, 5, 1, 3]);
    assert.equal(truncate('🧪🧪🧪🧪🧪test', 6), '🧪🧪…');
    assert.equal(truncate('👩‍🔬👩‍🔬👩‍🔬lab', 6), '👩‍🔬👩‍🔬…');
    assert.equal(truncate('🇩🇪🇫🇷🇮🇹flags', 6), '🇩🇪🇫🇷…');
    assert.equal(truncate('e\u0301cole-e\u0301te\u0301', 6), 'e\u0301cole…');
    assert.equal(truncate('日本語のジョブ', 7), '日本語…');
    assert.equal(truncate('日本語', 6), '日本語');
    // A wide character that would cross the edge stays out: the cut is a column short, and says so.
    assert.deepEqual(cutToWidth('日本語', 5), { text: '日本', width: 4 });
    assert.deepEqual(cutToWidth('a👩‍🔬b', 2), { text: 'a', width: 1 });
    assert.deepEqual(cutToWidth('a👩‍🔬b', 3), { text: 'a👩‍🔬', width: 3 });
  });
});
