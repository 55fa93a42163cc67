import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { outputBytes, readOutputFrame, writeOutputFrame } from '../src/net/output-frame.js';

const line = (frame: object): Buffer => Buffer.from(JSON.stringify(frame));

describe('output frames read and written as bytes (src/net/output-frame.ts)', () => {
  it('reads what JSON.stringify writes, with and without task and number, and gives the bytes back', () => {
    const bytes = Buffer.from('hello\n\u00e9\u0000\u00ff world');
    const d = bytes.toString('base64');
    for (const frame of [{ t: 'out', d, n: 7 }, { t: 'err', d }, { t: 'out', task: 3, d, n: 123456789 }, { t: 'err', task: 0, d: '', n: 1 }]) {
      const read = readOutputFrame(line(frame));
      assert.ok(read !== null, JSON.stringify(frame));
      assert.deepEqual({ ...read, d: read.d.toString('latin1') }, frame);
      assert.deepEqual(outputBytes(read), Buffer.from(frame.d, 'base64'));
    }
  });

  it('writes exactly what JSON.stringify writes', () => {
    const d = Buffer.from('some output').toString('base64');
    for (const frame of [{ t: 'out' as const, task: 2, d, n: 5 }, { t: 'err' as const, d }, { t: 'out' as const, d, n: 1 }]) {
      assert.equal(writeOutputFrame({ ...frame, d: Buffer.from(frame.d) }).toString(), JSON.stringify(frame));
    }
  });

  it('leaves every other line to JSON.parse: other frames, other key orders, escapes, spaces, bad numbers, trailing bytes', () => {
    const others = [
      '{"t":"note","text":"x","n":1}', '{"t":"exit","state":"COMPLETED","n":3}', '{"d":"aGk=","t":"out","n":1}',
      '{"t":"out","d":"a\\/b","n":1}', '{"t":"out", "d":"aGk=","n":1}', '{"t":"out","d":"aGk=","n":01}', '{"t":"out","d":"aGk=","n":-1}',
      '{"t":"out","d":"aGk=","n":1.5}', '{"t":"out","d":"aGk=","n":1}x', '{"t":"out","d":"aGk=","n":12345678901234567890}', '{"t":"out","d":"aGk=",',
      '{"t":"out","task":-1,"d":"aGk="}', '{"t":"out","task":"1","d":"aGk="}', '{"t":"out","d":"aGk=","n":1,"i":2}', '{"t":"out","d":"aGk=""}', '',
    ];
    for (const text of others) assert.equal(readOutputFrame(Buffer.from(text)), null, text);
  });

  it('non-ASCII bytes or control characters inside d (no supervisor writes them) decode as JSON.parse\'s d does: its base64 characters alone', () => {
    const read = readOutputFrame(Buffer.from('{"t":"out","d":"aG\u00e9k=","n":1}'));
    assert.ok(read !== null);
    assert.deepEqual(outputBytes(read), Buffer.from('hi'));
    assert.deepEqual(outputBytes(read), Buffer.from((JSON.parse('{"d":"aG\u00e9k="}') as { d: string }).d, 'base64'));
  });

  it('never reads a line differently from JSON.parse (random frames, cut and changed)', () => {
    let seed = 42;
    const random = (below: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % below;
    };
    const alphabet = '{}":,tdnask0123456789outerrABC+/=\\ \u0001\t\u00e9';
    for (let round = 0; round < 5000; round++) {
      const base = JSON.stringify({ t: random(2) === 0 ? 'out' : 'err', ...(random(2) === 0 ? { task: random(20) } : {}), d: Buffer.from([random(256), random(256)]).toString('base64'), n: random(1000) });
      const chars = [...base];
      for (let k = random(3); k > 0; k--) chars.splice(random(chars.length), random(2), alphabet[random(alphabet.length)]!);
      const text = chars.join('');
      const read = readOutputFrame(Buffer.from(text));
      if (read === null) continue;
      let parsed: Record<string, unknown> | null = null;
      try {
        parsed = JSON.parse(text) as Record<string, unknown>;
      } catch {
        // JSON.parse refuses it
      }
      if (read.d.some((byte) => byte < 0x20 || byte >= 0x80)) {
        // Raw control characters or non-ASCII bytes inside d (no supervisor writes them): the same bytes as JSON.parse's d, where it reads one.
        if (parsed !== null) assert.deepEqual(outputBytes(read), Buffer.from(parsed.d as string, 'base64'), text);
        continue;
      }
      assert.ok(parsed !== null, text);
      assert.deepEqual({ ...read, d: read.d.toString('latin1') }, parsed, text);
    }
  });
});
