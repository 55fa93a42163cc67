// The FIFO of frames the streams keep (src/net/frame-queue.ts): order, size,
// dropping from the front, and slots gone holding nothing.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FrameQueue } from '../src/net/frame-queue.js';

describe('FrameQueue', () => {
  it('keeps frames in order with their total size; the oldest leave first, also across the cuts of its array', () => {
    const queue = new FrameQueue<string>((text) => text.length);
    for (let i = 0; i < 5000; i++) queue.push(`f${i}`);
    assert.equal(queue.length, 5000);
    assert.equal(queue.first(), 'f0');
    assert.equal(queue.dropWhile((text) => Number(text.slice(1)) < 3000), 3000);
    assert.equal(queue.length, 2000);
    assert.equal(queue.bytes, [...queue].reduce((sum, text) => sum + text.length, 0));
    assert.deepEqual([...queue].slice(0, 2), ['f3000', 'f3001']);
    assert.equal(queue.shift(), 'f3000');
    const internals = queue as unknown as { items: unknown[]; head: number };
    assert.ok(internals.items.slice(0, internals.head).every((item) => item === undefined), 'a slot gone holds nothing');
    queue.dropWhile(() => true);
    assert.deepEqual([queue.length, queue.bytes, queue.first(), queue.shift()], [0, 0, undefined, undefined]);
    queue.push('again');
    assert.deepEqual([...queue], ['again']);
    queue.clear();
    assert.deepEqual([queue.length, queue.bytes], [0, 0]);
  });
});
