// The reading end of a numbered output stream (src/net/output-cursor.ts):
// what srun and taras run/attach keep of a job's output after a reconnect.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ACK_AFTER_MS, ACK_BYTES, OutputCursor } from '../src/net/output-cursor.js';

describe('OutputCursor', () => {
  it('shows each number once, says how many were skipped, and takes unnumbered frames as they come', () => {
    const cursor = new OutputCursor(() => undefined);
    assert.deepEqual([1, 2, 3].map((n) => cursor.take(n, 10)), [1, 2, 3].map(() => ({ fresh: true, lost: 0 })));
    // Sent again after a reconnect: dropped.
    assert.deepEqual(cursor.take(2, 10), { fresh: false, lost: 0 });
    assert.deepEqual(cursor.take(3, 10), { fresh: false, lost: 0 });
    // 4 and 5 fell out of what the writer keeps.
    assert.deepEqual(cursor.take(6, 10), { fresh: true, lost: 2 });
    assert.equal(cursor.position, 6);
    assert.deepEqual(cursor.take(undefined, 10), { fresh: true, lost: 0 });
    cursor.flush();
  });

  it('from a job others read before (start null): any first number, nothing counted as lost', () => {
    const cursor = new OutputCursor(() => undefined, null);
    assert.equal(cursor.position, null);
    assert.deepEqual(cursor.take(41, 10), { fresh: true, lost: 0 });
    assert.deepEqual(cursor.take(41, 10), { fresh: false, lost: 0 });
    assert.deepEqual(cursor.take(42, 10), { fresh: true, lost: 0 });
    cursor.flush();
  });

  it('acknowledges the last number ACK_AFTER_MS after the first frame, at once past ACK_BYTES, and again for frames sent again', async () => {
    const acks: number[] = [];
    const cursor = new OutputCursor((n) => acks.push(n));
    cursor.take(1, 100);
    cursor.take(2, 100);
    assert.deepEqual(acks, []);
    await sleep(ACK_AFTER_MS + 100);
    assert.deepEqual(acks, [2]);
    // Nothing new: nothing sent.
    await sleep(ACK_AFTER_MS + 100);
    assert.deepEqual(acks, [2]);
    cursor.take(3, ACK_BYTES - 1);
    assert.deepEqual(acks, [2]);
    cursor.take(4, 1);
    assert.deepEqual(acks, [2, 4], 'past ACK_BYTES: at once');
    // A reconnect: the writer did not get the last acknowledgement and sends 3 and 4 again.
    cursor.take(3, 10);
    cursor.take(4, 10);
    await sleep(ACK_AFTER_MS + 100);
    assert.deepEqual(acks, [2, 4, 4]);
    cursor.take(5, 10);
    cursor.flush();
    assert.deepEqual(acks, [2, 4, 4, 5], 'flush: at once');
  });
});
