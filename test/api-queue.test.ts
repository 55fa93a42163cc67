// GET /queue's wire format: the queue table's columns run-length encoded
// (ids and starts as differences) must come back exactly, and a malformed
// answer must fail naming the column rather than draw a wrong table. The
// segments `taras queue` renders from must say what the unpacked columns
// say, and the table drawn a segment at a time must be the plain per-row
// table, cell for cell.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { packQueue, queueSegments, SEGMENT_COLUMNS, unpackQueue, type ApiQueue, type QueueTable } from '../src/api/queue.js';
import type { ApiClusterStatus } from '../src/api/types.js';
import { MIN_NAME_WIDTH, renderQueue } from '../src/cli/render/queue.js';
import { alignColumns, counted, hostlistText, printable } from '../src/cli/render/text.js';
import { LocalClock } from '../src/cli/render/time.js';
import { SeededRandom } from '../src/core/random.js';
import { formatMemory, formatSbatchTime } from '../src/jobspec/values.js';

const status: ApiClusterStatus = {
  up: true, version: '0.1.0', cluster: 't', policy: 'easy', placement: 'first-fit', now: '2026-11-22T12:00:00.000Z',
  nodes: { total: 1, idle: 1, allocated: 0, mixed: 0, down: 0, drained: 0 }, jobs: { pending: 0, running: 0 }, motd: null,
};

function randomTable(random: SeededRandom, count: number, long: boolean, typed = false): QueueTable {
  const pick = <T>(values: T[]): T => values[random.int(0, values.length - 1)];
  const maybe = (value: number): number | null => (random.chance(0.2) ? null : value);
  let id = 0;
  let start = -50;
  const starts = Array.from({ length: count }, () => (random.chance(0.1) ? null : (start += pick([0, 0, 0, 60, 3600]))));
  const table: QueueTable = {
    status, timeBase: 1_795_000_000, strings: ['alice', 'bob', 'PENDING', 'RUNNING', 'batch', '', 'node01,node02', 'a-rather-long-job-name'],
    id: Array.from({ length: count }, () => (id += pick([1, 1, 1, 7]))),
    user: Array.from({ length: count }, () => pick([0, 0, 1])),
    state: Array.from({ length: count }, () => pick([2, 2, 3])),
    partition: Array.from({ length: count }, () => 4),
    nodes: Array.from({ length: count }, () => pick([5, 5, 6])),
    nodeCount: Array.from({ length: count }, () => pick([1, 1, 2])),
    start: starts,
    end: starts.map((s) => (s === null || random.chance(0.1) ? null : s + pick([60, 600]))),
    endTime: Array.from({ length: count }, () => (random.chance(0.9) ? null : random.int(-100, 0))),
    name: Array.from({ length: count }, () => pick([7, 7, 7, 5])),
  };
  if (typed && count > 0) {
    // Only a queue with a job that is not normal carries these columns (the first job is a priority one).
    table.type = Array.from({ length: count }, (_, i) => (i === 0 ? 1 : pick([0, 0, 1, 2])));
    table.deadline = table.type.map((type) => (type === 1 ? random.int(0, 7200) : null));
  }
  if (long) {
    table.long = {
      cpus: Array.from({ length: count }, () => pick([1, 8])),
      memoryMiB: Array.from({ length: count }, () => maybe(1024)),
      submit: Array.from({ length: count }, () => random.int(-3600, 0)),
      limitSeconds: Array.from({ length: count }, () => maybe(600)),
      workingDir: Array.from({ length: count }, () => 5),
    };
  }
  return table;
}

describe('GET /queue wire format', () => {
  it('packs and unpacks random tables exactly, and a queue of similar jobs to a few hundred bytes', () => {
    const random = new SeededRandom(11);
    for (let round = 0; round < 50; round++) {
      const table = randomTable(random, random.int(0, 300), round % 2 === 0, round % 3 === 0);
      assert.deepEqual(unpackQueue(JSON.parse(JSON.stringify(packQueue(table)))), table);
    }
    const similar = randomTable(new SeededRandom(3), 50_000, false);
    const uniform = { ...similar, user: similar.user.map(() => 0), state: similar.state.map(() => 2), nodes: similar.nodes.map(() => 5),
      nodeCount: similar.nodeCount.map(() => 1), start: similar.start.map(() => 0), end: similar.end.map(() => 60),
      endTime: similar.endTime.map(() => null), id: similar.id.map((_, i) => i + 1), name: similar.name.map(() => 7) };
    assert.ok(JSON.stringify(packQueue(uniform)).length < 1000, 'one run per column');
  });

  it('a column with too many or too few values is refused, naming it', () => {
    const packed = packQueue(randomTable(new SeededRandom(5), 10, false));
    assert.throws(() => unpackQueue({ ...packed, count: 9 }), /GET \/queue: column (id|start) has more than 9 values/);
    assert.throws(() => unpackQueue({ ...packed, count: 11 }), /GET \/queue: column (id|start) has 10 values, expected 11/);
  });
});

/** The table as plain rows, one cell at a time (what the segment renderer must equal). */
function plainTable(api: ApiQueue, width: number | undefined, timeZone: string): string[] {
  const table = unpackQueue(api);
  const clock = new LocalClock(api.status.now, timeZone);
  const text = (index: number) => printable(table.strings[index]);
  const at = (offset: number | null) => (offset === null ? '-' : clock.at((table.timeBase + offset) * 1000));
  const long = table.long;
  const head = ['JOBID', 'USER', 'STATE', 'PARTITION', 'NODES', ...(long ? ['CPUS', 'MEMORY', 'SUBMITTED'] : []), 'START', 'END', ...(long ? ['LIMIT', 'WORKDIR'] : []), 'NAME'];
  const rows = table.id.map((id, r) => {
    const nodes = table.strings[table.nodes[r]];
    const start = table.start[r];
    const end = table.end[r];
    const ended = table.endTime[r];
    const startMs = start === null ? null : (table.timeBase + start) * 1000;
    const times = [
      at(start),
      end !== null ? clock.end((table.timeBase + end) * 1000, startMs) : ended !== null ? clock.end((table.timeBase + ended) * 1000, startMs) : '-',
    ];
    return [
      String(id), text(table.user[r]), text(table.state[r]), text(table.partition[r]), nodes === '' ? counted(table.nodeCount[r], 'node') : hostlistText(nodes.split(',')),
      ...(long ? [String(long.cpus[r]), long.memoryMiB[r] === null ? '-' : formatMemory(long.memoryMiB[r]!), at(long.submit[r])] : []),
      ...times,
      ...(long ? [long.limitSeconds[r] === null ? 'UNLIMITED' : formatSbatchTime(long.limitSeconds[r]!), text(long.workingDir[r])] : []),
      text(table.name[r]),
    ];
  });
  const right = new Set(long ? [0, 5, 6] : [0]);
  return alignColumns(head, rows, { right, fit: width === undefined ? undefined : { column: head.length - 1, width, min: MIN_NAME_WIDTH } });
}

describe('GET /queue segments and the table drawn from them', () => {
  it('segments say what the unpacked columns say, row for row', () => {
    const random = new SeededRandom(17);
    for (let round = 0; round < 40; round++) {
      const long = round % 2 === 1;
      const typed = round % 3 === 0;
      const packed = packQueue(randomTable(random, random.int(0, 400), long, typed));
      const table = unpackQueue(packed);
      const expanded: Record<string, (number | null)[]> = Object.fromEntries(SEGMENT_COLUMNS.map((name) => [name, []]));
      for (const segment of queueSegments(packed)) {
        for (let j = 0; j < segment.rows; j++) {
          SEGMENT_COLUMNS.forEach((name, c) => expanded[name].push(segment.first[c] === null ? null : segment.first[c]! + segment.step[c] * j));
        }
      }
      assert.deepEqual(expanded.id, table.id);
      assert.deepEqual(expanded.start, table.start);
      assert.deepEqual(expanded.length.map((span, i) => (span === null || table.start[i] === null ? null : table.start[i]! + span)), table.end);
      for (const name of ['user', 'state', 'partition', 'nodes', 'nodeCount', 'endTime', 'name'] as const) assert.deepEqual(expanded[name], table[name], name);
      if (typed && table.id.length > 0) {
        assert.deepEqual(expanded.type, table.type);
        assert.deepEqual(expanded.deadline, table.deadline);
      } else assert.ok(expanded.type.every((value) => value === null) && packed.columns.type === undefined, 'no type column for normal jobs only');
      if (long) {
        assert.deepEqual(expanded.submit, table.long!.submit);
        for (const name of ['cpus', 'memoryMiB', 'limitSeconds', 'workingDir'] as const) assert.deepEqual(expanded[name], table.long![name], name);
      }
    }
  });

  it('a malformed answer is refused, naming the column', () => {
    const packed = packQueue(randomTable(new SeededRandom(5), 10, false));
    assert.throws(() => queueSegments({ ...packed, count: 9 }), /GET \/queue: column \w+ has more than 9 values/);
    assert.throws(() => queueSegments({ ...packed, count: 11 }), /GET \/queue: column \w+ has 10 values, expected 11/);
    assert.throws(() => queueSegments({ ...packed, columns: { ...packed.columns, user: [0, 'x' as unknown as number] } }), /column user has a run of x values/);
    const { name: _name, ...withoutName } = packed.columns;
    assert.throws(() => queueSegments({ ...packed, columns: withoutName as ApiQueue['columns'] }), /column name is missing/);
    const long = packQueue(randomTable(new SeededRandom(5), 10, true));
    const { submit: _submit, ...withoutSubmit } = long.columns;
    assert.throws(() => queueSegments({ ...long, columns: withoutSubmit as ApiQueue['columns'] }), /column submit is missing/);
    assert.throws(() => queueSegments({ ...packed, count: 2.5 }), /count 2.5 is not a number of jobs/);
    assert.equal(queueSegments({ ...packed, columns: { ...packed.columns, user: [...packed.columns.user, 1, 0] } }).reduce((sum, s) => sum + s.rows, 0), 10);
  });

  it('draws the plain per-row table exactly: random queues, short and long, cut to a width or not, in two zones', () => {
    const random = new SeededRandom(23);
    for (let round = 0; round < 60; round++) {
      const long = round % 2 === 1;
      const packed = packQueue(randomTable(random, random.int(1, 300), long));
      for (const width of [undefined, 100, 40]) {
        for (const timeZone of ['UTC', 'America/New_York']) {
          const output = renderQueue({ status, queue: packed, now: status.now, long, width, timeZone }).split('\n');
          const table = output.slice(output.indexOf('') + 1, -1);
          assert.deepEqual(table, plainTable(packed, width, timeZone), `round ${round}, width ${width}, ${timeZone}`);
        }
      }
    }
  });

  it('leaves no trailing spaces when the last cells are empty after times that step', () => {
    // Job 1 ends the next day (a wide END); jobs 2-4 start a minute apart and have no name.
    const base = Date.parse('2026-11-22T23:00:00Z') / 1000;
    const table: QueueTable = {
      status, timeBase: base, strings: ['alice', 'PENDING', 'batch', '', 'x'],
      id: [1, 2, 3, 4], user: [0, 0, 0, 0], state: [1, 1, 1, 1], partition: [2, 2, 2, 2], nodes: [3, 3, 3, 3], nodeCount: [1, 1, 1, 1],
      start: [0, 60, 120, 180], end: [7200, 120, 180, 240], endTime: [null, null, null, null], name: [4, 3, 3, 3],
    };
    const packed = packQueue(table);
    const output = renderQueue({ status, queue: packed, now: status.now, timeZone: 'UTC' }).split('\n');
    const lines = output.slice(output.indexOf('') + 1, -1);
    assert.deepEqual(lines, plainTable(packed, undefined, 'UTC'));
    assert.deepEqual(lines.filter((line) => line !== line.trimEnd()), []);
    assert.equal(lines[0], 'JOBID  USER   STATE    PARTITION  NODES   START        END             NAME');
    assert.equal(lines[2], '    2  alice  PENDING  batch      1 node  today 23:01  23:02');
  });
});

describe('squeue from GET /queue a segment at a time', () => {
  it('prints exactly what the row-by-row squeue prints, for formats, sorts and filters', async () => {
    const { renderSqueue, renderSqueueQueue, sqJobsOfQueue } = await import('../src/cli/slurm/squeue.js');
    const { queueOrderOf } = await import('../src/api/queue.js');
    const random = new SeededRandom(12);
    const pick = <T>(values: readonly T[]): T => values[random.int(0, values.length - 1)];
    for (let round = 0; round < 6; round++) {
      const table = randomTable(random, 300, true);
      // More states, partitions, reasons and array labels than the plain table has.
      const extra = ['debug', 'COMPLETED', 'FAILED', 'JobHeldUser', 'waits for job 3 (dependency)', 'BeginTime: not before 10:00', '40_[3-9%2]', '41_2'];
      const first = table.strings.length;
      table.strings.push(...extra);
      table.partition = table.partition.map(() => pick([4, first]));
      table.state = table.state.map(() => pick([2, 2, 2, 3, first + 1, first + 2]));
      table.endTime = table.state.map((state) => (state === first + 1 || state === first + 2 ? random.int(-600, 0) : null));
      table.reason = table.state.map(() => pick([null, null, first + 3, first + 4, first + 5]));
      table.label = table.state.map(() => pick([null, null, null, null, first + 6, first + 7]));
      // In queue order, as the controller sends it.
      const jobs = sqJobsOfQueue(packQueue(table));
      const order = queueOrderOf(jobs, (job) => ({ state: job.state, id: job.id, endTime: job.endMs, start: job.startMs ?? job.plannedMs }));
      const reorder = <T>(values: T[]): T[] => order.map((i) => values[i]);
      const sorted: QueueTable = {
        ...table, id: reorder(table.id), user: reorder(table.user), state: reorder(table.state), partition: reorder(table.partition), nodes: reorder(table.nodes),
        nodeCount: reorder(table.nodeCount), start: reorder(table.start), end: reorder(table.end), endTime: reorder(table.endTime), name: reorder(table.name),
        reason: reorder(table.reason), label: reorder(table.label),
        long: { cpus: reorder(table.long!.cpus), memoryMiB: reorder(table.long!.memoryMiB), submit: reorder(table.long!.submit), limitSeconds: reorder(table.long!.limitSeconds), workingDir: reorder(table.long!.workingDir) },
      };
      const api = packQueue(sorted);
      const nowMs = table.timeBase * 1000;
      const cases = [
        {}, { long: true }, { format: '%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R' }, { format: '%i|%A|%Q|%p|%S|%e|%V|%L|%l|%C|%m|%Z|%N|%r|%T', sort: 'u,-t,p' },
        { sort: '-P,j' }, { sort: 'T,Q' }, { states: ['PENDING'] as never }, { users: ['bob'] }, { partitions: ['debug'] }, { noheader: true, sort: 'p' },
        { states: ['COMPLETED', 'FAILED', 'PENDING'] as never, sort: '-u' },
      ];
      for (const extraOptions of cases) {
        const options = { nowMs, timeZone: 'UTC', ...extraOptions };
        const fast = renderSqueueQueue(api, options);
        assert.notEqual(fast, null, JSON.stringify(extraOptions));
        assert.equal(fast, renderSqueue(sqJobsOfQueue(api), null, options), JSON.stringify(extraOptions));
        // Written in chunks (squeue to stdout): the same text.
        const chunks: string[] = [];
        assert.equal(renderSqueueQueue(api, options, (chunk) => chunks.push(chunk)), '');
        assert.equal(chunks.join(''), fast, JSON.stringify(extraOptions));
      }
      // Requests it leaves to the row-by-row path.
      assert.equal(renderSqueueQueue(api, { nowMs, sort: 'S' }), null);
      assert.equal(renderSqueueQueue(api, { nowMs, jobs: [1] }), null);
    }
  });
});
