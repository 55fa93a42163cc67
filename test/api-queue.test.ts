// GET /queue's wire format: the queue table's columns run-length encoded
// (ids and starts as differences) must come back exactly, and a malformed
// answer must fail naming the column rather than draw a wrong table.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { packQueue, unpackQueue, type QueueTable } from '../src/api/queue.js';
import type { ApiClusterStatus } from '../src/api/types.js';
import { SeededRandom } from '../src/core/random.js';

const status: ApiClusterStatus = {
  up: true, version: '0.1.0', cluster: 't', policy: 'easy', placement: 'first-fit', now: '2026-11-22T12:00:00.000Z',
  nodes: { total: 1, idle: 1, allocated: 0, mixed: 0, down: 0, drained: 0 }, jobs: { pending: 0, running: 0 }, motd: null,
};

function randomTable(random: SeededRandom, count: number, long: boolean): QueueTable {
  const pick = <T>(values: T[]): T => values[random.int(0, values.length - 1)];
  const maybe = (value: number): number | null => (random.chance(0.2) ? null : value);
  let id = 0;
  let start = -50;
  const starts = Array.from({ length: count }, () => (random.chance(0.1) ? null : (start += pick([0, 0, 0, 60, 3600]))));
  const table: QueueTable = {
    status, timeBase: 1_795_000_000, strings: ['alice', 'bob', 'PENDING', 'RUNNING', 'batch', '', 'node01', 'job'],
    id: Array.from({ length: count }, () => (id += pick([1, 1, 1, 7]))),
    user: Array.from({ length: count }, () => pick([0, 0, 1])),
    state: Array.from({ length: count }, () => pick([2, 2, 3])),
    partition: Array.from({ length: count }, () => 4),
    nodes: Array.from({ length: count }, () => pick([5, 5, 6])),
    nodeCount: Array.from({ length: count }, () => pick([1, 1, 2])),
    start: starts,
    end: starts.map((s) => (s === null || random.chance(0.1) ? null : s + pick([60, 600]))),
    endTime: Array.from({ length: count }, () => (random.chance(0.9) ? null : random.int(-100, 0))),
    name: Array.from({ length: count }, () => 7),
  };
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
      const table = randomTable(random, random.int(0, 300), round % 2 === 0);
      assert.deepEqual(unpackQueue(JSON.parse(JSON.stringify(packQueue(table)))), table);
    }
    const similar = randomTable(new SeededRandom(3), 50_000, false);
    const uniform = { ...similar, user: similar.user.map(() => 0), state: similar.state.map(() => 2), nodes: similar.nodes.map(() => 5),
      nodeCount: similar.nodeCount.map(() => 1), start: similar.start.map(() => 0), end: similar.end.map(() => 60),
      endTime: similar.endTime.map(() => null), id: similar.id.map((_, i) => i + 1) };
    assert.ok(JSON.stringify(packQueue(uniform)).length < 1000, 'one run per column');
  });

  it('a column with too many or too few values is refused, naming it', () => {
    const packed = packQueue(randomTable(new SeededRandom(5), 10, false));
    assert.throws(() => unpackQueue({ ...packed, count: 9 }), /GET \/queue: column (id|start) has more than 9 values/);
    assert.throws(() => unpackQueue({ ...packed, count: 11 }), /GET \/queue: column (id|start) has 10 values, expected 11/);
  });
});
