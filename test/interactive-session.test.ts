// The supervisor's side of an interactive session (src/agent/session.ts) on a
// real Unix socket: who may connect, the frames a client may send, the bounded
// replay of output produced while nobody was attached, one client at a time,
// and the grace and idle ends.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { createConnection, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, it } from 'node:test';
import { InteractiveSession, parseClientFrame, type InteractiveSpec } from '../src/agent/session.js';

const work = mkdtempSync(join(tmpdir(), 'taras-session-'));
after(() => rmSync(work, { recursive: true, force: true }));

const SPEC: InteractiveSpec = { pty: false, cols: 80, rows: 24, graceSeconds: 30, idleSeconds: 0, warnSeconds: 0, bufferBytes: 1024 };
let count = 0;

function session(spec: Partial<InteractiveSpec> = {}): InteractiveSession {
  return new InteractiveSession(join(work, `s${++count}.sock`), 7, { ...SPEC, ...spec }, () => undefined);
}

/** Starts the session listening; its socket's path. */
async function listen(s: InteractiveSession): Promise<string> {
  await s.listen();
  return join(work, `s${count}.sock`);
}

/** A client attached to `s` (connected, and taken by the session). */
async function attach(s: InteractiveSession, path: string): Promise<Awaited<ReturnType<typeof connect>>> {
  const client = await connect(path);
  await s.waitForClient();
  return client;
}

/** A client: the frames it got so far. */
async function connect(path: string): Promise<{ socket: Socket; frames: () => Record<string, unknown>[] }> {
  const socket = createConnection(path);
  let text = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (text += chunk));
  await new Promise((resolveConnect) => socket.once('connect', resolveConnect));
  // Whole lines only: the last may still be on its way.
  return { socket, frames: () => text.slice(0, text.lastIndexOf('\n') + 1).split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>) };
}

const outputOf = (frames: Record<string, unknown>[]) => frames.filter((f) => f.t === 'out').map((f) => Buffer.from(f.d as string, 'base64').toString()).join('');

describe('interactive session (supervisor side)', () => {
  it('a client that stops reading pauses the job\'s output past a megabyte unsent, and it goes on once the client reads', async () => {
    const s = session();
    const path = await listen(s);
    const flow: string[] = [];
    s.handlers = { ...s.handlers, pauseOutput: () => flow.push('pause'), resumeOutput: () => flow.push('resume') };
    const client = await attach(s, path);
    client.socket.pause(); // it stops reading
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    for (let i = 0; i < 200 && !flow.includes('pause'); i++) {
      s.output('out', chunk);
      await sleep(1);
    }
    assert.deepEqual(flow, ['pause'], 'the job\'s output is no longer read');
    client.socket.resume();
    for (let i = 0; i < 200 && !flow.includes('resume'); i++) await sleep(10);
    assert.deepEqual(flow, ['pause', 'resume']);
    client.socket.destroy();
    await s.close(0);
  });

  it('accepts only well-formed client frames', () => {
    assert.deepEqual(parseClientFrame('{"t":"in","d":"aGk="}'), { t: 'in', d: Buffer.from('hi') });
    assert.deepEqual(parseClientFrame('{"t":"size","cols":120,"rows":40}'), { t: 'size', cols: 120, rows: 40 });
    assert.deepEqual(parseClientFrame('{"t":"signal","sig":"SIGINT"}'), { t: 'signal', sig: 'SIGINT' });
    assert.equal(parseClientFrame('{"t":"signal","sig":"SIGKILL"}'), null); // only what a terminal could send
    assert.equal(parseClientFrame('{"t":"size","cols":0,"rows":40}'), null);
    assert.equal(parseClientFrame('{"t":"exit"}'), null);
    assert.deepEqual(parseClientFrame('{"t":"ack","n":12}'), { t: 'ack', n: 12 });
    assert.equal(parseClientFrame('{"t":"ack","n":-1}'), null);
    assert.equal(parseClientFrame('{"t":"ack","n":1.5}'), null);
    assert.equal(parseClientFrame('{"t":"ack"}'), null);
    assert.equal(parseClientFrame('not json'), null);
    // Frames are flat: a nested one is dropped unread (JSON.parse held 4 MiB of brackets for 2 s).
    assert.equal(parseClientFrame(`{"t":"in","d":"aGk=","x":${'['.repeat(1_000_000)}${']'.repeat(1_000_000)}}`), null);
    assert.equal(parseClientFrame('{"t":"in","d":"aGk=","x":{}}'), null);
  });

  it('its socket is 0600; output while detached is kept within bufferBytes (the oldest dropped, counted) and replayed to the next client', async () => {
    const s = session({ bufferBytes: 1024 });
    const path = await listen(s);
    assert.equal(statSync(path).mode & 0o777, 0o600);
    for (let i = 0; i < 40; i++) s.output('out', Buffer.from(`line-${String(i).padStart(2, '0')}\n`)); // about 40 frames of 40 bytes
    const client = await connect(path);
    await sleep(100);
    const frames = client.frames();
    assert.deepEqual(frames[0], { t: 'hello', pty: false, jobId: 7, inputTaken: 0 });
    assert.match(String(frames[1].text), /^\d+ bytes of output produced while detached were dropped \(the buffer keeps 1024\)$/);
    const replayed = outputOf(frames);
    assert.ok(replayed.endsWith('line-39\n'), replayed);
    assert.ok(!replayed.includes('line-00'), replayed);
    assert.ok(replayed.length < 1024);
    s.finish({ state: 'COMPLETED', exitCode: 0, signal: null, reason: null });
    await s.close(1000);
    assert.deepEqual(client.frames().at(-1), { t: 'exit', state: 'COMPLETED', exitCode: 0, signal: null, reason: null, n: 41 });
  });

  it('the job\'s end is numbered and kept until a client acknowledges it: one that leaves without doing so leaves it for the next, and the session closes on the acknowledgement', async () => {
    const s = session({ graceSeconds: 30 });
    const path = await listen(s);
    const first = await attach(s, path);
    first.socket.write('{"t":"ack","n":0,"ends":true}\n'); // a reader that acknowledges the end says so at once
    s.output('out', Buffer.from('last words\n'));
    await sleep(50);
    s.finish({ state: 'FAILED', exitCode: 3, signal: null, reason: 'exit code 3' });
    let closed = false;
    const closing = s.close(1000).then(() => (closed = true));
    await sleep(1500); // past the second after which a client that never acknowledged is taken to have the end
    assert.deepEqual(first.frames().at(-1), { t: 'exit', state: 'FAILED', exitCode: 3, signal: null, reason: 'exit code 3', n: 2 });
    assert.equal(first.socket.readyState, 'open', 'the session waits for the acknowledgement');
    assert.equal(closed, false);
    first.socket.destroy(); // gone with the end in flight (the controller died)
    await sleep(100);
    const second = await connect(path);
    second.socket.write('{"t":"ack","n":0,"ends":true}\n');
    await sleep(100);
    assert.deepEqual(second.frames().map((f) => f.n ?? f.t), ['hello', 1, 2]);
    assert.equal(outputOf(second.frames()), 'last words\n');
    assert.equal(closed, false);
    const ended = new Promise((resolveEnd) => second.socket.once('end', resolveEnd));
    second.socket.write('{"t":"ack","n":2}\n');
    await ended;
    await closing;
    assert.equal(closed, true);
  });

  it('after the end, a client still attached that takes its output slowly is waited for past the grace (srun into a slow reader): it gets every byte and the end (the session gave up at the grace, the rest lost with the supervisor)', async () => {
    const s = session({ graceSeconds: 1, bufferBytes: 64 * 1024 });
    const path = await listen(s);
    const client = await attach(s, path);
    client.socket.write('{"t":"ack","n":0,"ends":true}\n');
    await sleep(50);
    client.socket.pause(); // its reader waits: it takes nothing more for now
    const chunk = Buffer.alloc(64 * 1024, 0x62);
    for (let i = 0; i < 64; i++) s.output('out', chunk); // 4 MiB: more than the socket holds, most of it waits here
    s.finish({ state: 'COMPLETED', exitCode: 0, signal: null, reason: null });
    let closed = false;
    const closing = s.close(1000).then(() => (closed = true));
    try {
      await sleep(2500); // past the 1 s grace
      assert.equal(closed, false, 'the session still waits for its client');
      client.socket.resume();
      // The client reads on, acknowledging as srun does, until it has the end.
      for (let tries = 0; client.frames().at(-1)?.t !== 'exit'; tries++) {
        assert.ok(tries < 300, 'the end did not come');
        const last = client.frames().filter((f) => typeof f.n === 'number').at(-1);
        if (last !== undefined) client.socket.write(`{"t":"ack","n":${last.n as number}}\n`);
        await sleep(20);
      }
      assert.equal(outputOf(client.frames()).length, 64 * chunk.length);
      client.socket.write(`{"t":"ack","n":${client.frames().at(-1)!.n as number}}\n`);
      await closing;
      assert.equal(closed, true);
    } finally {
      client.socket.destroy();
      await closing;
    }
  });

  it('a client that does not say it acknowledges the end (an older reader, which acknowledges output only) is taken to have it after a second; with no client at all, the end waits the grace', async () => {
    const s = session({ graceSeconds: 5 });
    const path = await listen(s);
    const old = await attach(s, path);
    s.output('out', Buffer.from('x\n'));
    old.socket.write('{"t":"ack","n":1}\n');
    await sleep(50);
    const ended = new Promise((resolveEnd) => old.socket.once('end', resolveEnd));
    const startMs = Date.now();
    s.finish({ state: 'COMPLETED', exitCode: 0, signal: null, reason: null });
    await ended;
    await s.close(1000);
    const tookMs = Date.now() - startMs;
    assert.ok(tookMs >= 900 && tookMs < 1800, `${tookMs} ms`);
    assert.deepEqual(old.frames().at(-1), { t: 'exit', state: 'COMPLETED', exitCode: 0, signal: null, reason: null, n: 2 });
    // Nobody attached: the end waits the grace (1 s here) for a client, then the session closes.
    const alone = session({ graceSeconds: 1 });
    await alone.listen();
    alone.finish({ state: 'COMPLETED', exitCode: 0, signal: null, reason: null });
    const aloneStartMs = Date.now();
    await alone.close(0);
    const aloneMs = Date.now() - aloneStartMs;
    assert.ok(aloneMs >= 900 && aloneMs < 1800, `${aloneMs} ms`);
  });

  it('thousands of frames pushed out by the bound or acknowledged keep their numbers in order (the kept frames are cut now and then, not copied for each)', async () => {
    const s = session({ bufferBytes: 4096, graceSeconds: 1 });
    const path = await listen(s);
    for (let i = 1; i <= 5000; i++) s.output('out', Buffer.from(`${i}\n`));
    const first = await attach(s, path);
    await sleep(100);
    let numbers = first.frames().filter((f) => f.t === 'out').map((f) => f.n as number);
    assert.ok(numbers.length > 50 && numbers.length < 200, String(numbers.length));
    assert.deepEqual(numbers, numbers.map((_, i) => 5000 - numbers.length + 1 + i));
    for (let i = 5001; i <= 8000; i++) {
      s.output('out', Buffer.from(`${i}\n`));
      if (i % 500 === 0) first.socket.write(`{"t":"ack","n":${i - 10}}\n`);
    }
    await sleep(100);
    first.socket.destroy();
    await sleep(100);
    const second = await connect(path);
    await sleep(100);
    numbers = second.frames().filter((f) => f.t === 'out').map((f) => f.n as number);
    assert.deepEqual(numbers, Array.from({ length: 10 }, (_, i) => 7991 + i), 'what the last acknowledgement left');
    // Frames gone keep no text while they wait for the array to be cut (64 KiB pieces would stay in memory).
    const internals = (s as unknown as { kept: { items: unknown[]; head: number } }).kept;
    assert.ok(internals.items.slice(0, internals.head).every((frame) => frame === undefined));
    s.finish({ state: 'COMPLETED', exitCode: 0, signal: null, reason: null });
    second.socket.destroy();
    await s.close(0);
  });

  it('output frames are numbered and kept until the client acknowledges them: the next client gets again those not acknowledged, then the new', async () => {
    const s = session({ bufferBytes: 1024 });
    const path = await listen(s);
    const first = await attach(s, path);
    for (let i = 1; i <= 5; i++) s.output('out', Buffer.from(`a${i}\n`));
    await sleep(100);
    assert.deepEqual(first.frames().filter((f) => f.t === 'out').map((f) => f.n), [1, 2, 3, 4, 5]);
    first.socket.write('{"t":"ack","n":3}\n');
    await sleep(100);
    first.socket.destroy(); // 4 and 5 may never have reached whoever reads through it
    await sleep(100);
    s.note('a warning');
    s.output('out', Buffer.from('a7\n'));
    const second = await connect(path);
    await sleep(100);
    const frames = second.frames();
    assert.deepEqual(frames[0], { t: 'hello', pty: false, jobId: 7, inputTaken: 0 });
    assert.deepEqual(frames.slice(1).map((f) => f.n), [4, 5, 6, 7]);
    assert.equal(outputOf(frames), 'a4\na5\na7\n');
    assert.deepEqual(frames[3], { t: 'note', text: 'a warning', n: 6 });
    // Acknowledged: not sent again. An acknowledgement may come late or twice.
    second.socket.write('{"t":"ack","n":7}\n{"t":"ack","n":5}\n');
    await sleep(100);
    second.socket.destroy();
    await sleep(100);
    const third = await connect(path);
    await sleep(100);
    assert.deepEqual(third.frames(), [{ t: 'hello', pty: false, jobId: 7, inputTaken: 0 }]);
    s.finish({ state: 'COMPLETED', exitCode: 0, signal: null, reason: null });
    await s.close(1000);
  });

  it('frames sent and not acknowledged leave within bufferBytes too, without a "dropped" note (they were sent); numbers stay in order', async () => {
    const s = session({ bufferBytes: 1024 });
    const path = await listen(s);
    const first = await attach(s, path);
    for (let i = 0; i < 40; i++) s.output('out', Buffer.from(`line-${String(i).padStart(2, '0')}\n`));
    await sleep(100);
    assert.equal(first.frames().filter((f) => f.t === 'out').length, 40);
    first.socket.destroy();
    await sleep(100);
    const second = await connect(path);
    await sleep(100);
    const frames = second.frames();
    assert.ok(!frames.some((f) => f.t === 'note'), JSON.stringify(frames));
    const numbers = frames.filter((f) => f.t === 'out').map((f) => f.n as number);
    assert.ok(numbers.length > 5 && numbers.length < 40, String(numbers));
    assert.deepEqual(numbers, numbers.map((_, i) => 40 - numbers.length + 1 + i));
    assert.ok(outputOf(frames).endsWith('line-39\n'));
    s.finish({ state: 'COMPLETED', exitCode: 0, signal: null, reason: null });
    await s.close(1000);
  });

  it('numbered input is taken once: the session says what it took (in its hello, then after each read), and input sent again after a reconnect is dropped', async () => {
    const s = session({ graceSeconds: 1 });
    const inputs: unknown[] = [];
    s.handlers = { ...s.handlers, input: (frame) => inputs.push(frame) };
    const path = await listen(s);
    const first = await attach(s, path);
    first.socket.write('{"t":"in","d":"YQ==","i":1}\n{"t":"in","d":"Yg==","i":2}\n');
    await sleep(100);
    assert.deepEqual(first.frames(), [{ t: 'hello', pty: false, jobId: 7, inputTaken: 0 }, { t: 'inack', i: 2 }]);
    first.socket.write('{"t":"signal","sig":"SIGINT","i":3}\n');
    await sleep(100);
    first.socket.destroy(); // the writer may not have heard of 3
    await sleep(100);
    const second = await connect(path);
    await sleep(100);
    assert.deepEqual(second.frames(), [{ t: 'hello', pty: false, jobId: 7, inputTaken: 3 }]);
    // Sent again from 2 (what the writer did not know was taken), then new input; unnumbered input (an older writer) always counts.
    second.socket.write('{"t":"in","d":"Yg==","i":2}\n{"t":"signal","sig":"SIGINT","i":3}\n{"t":"in","d":"Yw==","i":4}\n{"t":"eof","i":5}\n{"t":"in","d":"ZA=="}\n');
    await sleep(100);
    assert.deepEqual(inputs, [
      { t: 'in', d: Buffer.from('a'), i: 1 }, { t: 'in', d: Buffer.from('b'), i: 2 }, { t: 'signal', sig: 'SIGINT', i: 3 },
      { t: 'in', d: Buffer.from('c'), i: 4 }, { t: 'eof', i: 5 }, { t: 'in', d: Buffer.from('d') },
    ]);
    assert.deepEqual(second.frames().at(-1), { t: 'inack', i: 5 });
    assert.equal(parseClientFrame('{"t":"in","d":"YQ==","i":0}'), null, 'numbers start at 1');
    assert.equal(parseClientFrame('{"t":"eof","i":"7"}'), null);
    second.socket.destroy();
    s.finish({ state: 'COMPLETED', exitCode: 0, signal: null, reason: null });
    await s.close(0);
  });

  it('each writer numbers its own input: a second client\'s numbers are not taken for the first\'s, and the first\'s sent again are taken once', async () => {
    const s = session({ graceSeconds: 1 });
    const inputs: string[] = [];
    s.handlers = { ...s.handlers, input: (frame) => inputs.push(frame.t === 'in' ? frame.d.toString() : frame.t) };
    const path = await listen(s);
    const a = await attach(s, path);
    a.socket.write('{"t":"in","d":"YTE=","i":1,"w":"a"}\n{"t":"in","d":"YTI=","i":2,"w":"a"}\n{"t":"in","d":"YTM=","i":3,"w":"a"}\n');
    await sleep(100);
    assert.deepEqual(a.frames().at(-1), { t: 'inack', i: 3, w: 'a' });
    a.socket.destroy();
    await sleep(100);
    const b = await connect(path);
    await sleep(100);
    assert.deepEqual(b.frames()[0], { t: 'hello', pty: false, jobId: 7, inputTaken: 3, inputWriter: 'a' });
    b.socket.write('{"t":"in","d":"YjE=","i":1,"w":"b"}\n{"t":"in","d":"YjI=","i":2,"w":"b"}\n');
    await sleep(100);
    assert.deepEqual(b.frames().at(-1), { t: 'inack', i: 2, w: 'b' });
    b.socket.destroy();
    await sleep(100);
    const again = await connect(path);
    again.socket.write('{"t":"in","d":"YTM=","i":3,"w":"a"}\n{"t":"in","d":"YTQ=","i":4,"w":"a"}\n');
    await sleep(100);
    assert.deepEqual(inputs, ['a1', 'a2', 'a3', 'b1', 'b2', 'a4']);
    assert.equal(parseClientFrame('{"t":"in","d":"YQ==","i":1,"w":"a b"}'), null, 'a writer id is letters, digits, - and _');
    again.socket.destroy();
    s.finish({ state: 'COMPLETED', exitCode: 0, signal: null, reason: null });
    await s.close(0);
  });

  it('a second client takes over: the first is told and closed; input reaches the handler', async () => {
    const s = session();
    const inputs: unknown[] = [];
    s.handlers = { ...s.handlers, input: (frame) => inputs.push(frame) };
    const path = await listen(s);
    const first = await connect(path);
    const closed = new Promise((resolveClose) => first.socket.once('close', resolveClose));
    const second = await connect(path);
    await closed;
    assert.ok(first.frames().some((f) => f.t === 'detached'));
    second.socket.write('{"t":"in","d":"eA=="}\n{"t":"eof"}\n');
    await sleep(100);
    assert.deepEqual(inputs, [{ t: 'in', d: Buffer.from('x') }, { t: 'eof' }]);
    s.finish({ state: 'FAILED', exitCode: 3, signal: null, reason: 'exit code 3' });
    await s.close(1000);
  });

  it('no client past the grace: CANCELLED; no input and no output past the idle limit: TIMEOUT', async () => {
    const s = session({ graceSeconds: 1, idleSeconds: 1 });
    const ends: string[] = [];
    s.handlers = { ...s.handlers, expire: (state, reason) => ends.push(`${state}: ${reason}`) };
    await s.listen();
    s.armGraceIfDetached();
    await sleep(1600);
    assert.ok(ends.includes('CANCELLED: no client attached to the interactive session for 1 s (interactive_grace); reattach sooner with taras attach'), ends.join('\n'));
    assert.ok(ends.some((end) => end.startsWith('TIMEOUT: interactive session idle (no input and no output) for 1 s')), ends.join('\n'));
    s.finish({ state: 'CANCELLED', exitCode: null, signal: 'SIGHUP', reason: 'grace' });
    await s.close(0);
  });
});
