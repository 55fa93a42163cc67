// WebSocket upgrades on the API server (src/net/server.ts) against a peer
// that misbehaves: a refused upgrade is closed by the server even when the
// peer never closes; a request without the WebSocket headers (which ws would
// drop without a word) is refused at once; a client that leaves during the
// handshake frees what the route opened; and the relay (src/net/stream.ts)
// stops reading a source while the other end has a megabyte unsent.

import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { WebSocket } from 'ws';
import { createAuthenticator, issueToken } from '../src/net/identity.js';
import type { NetLog } from '../src/net/log.js';
import { createApiServer, RouteError, type ApiServer } from '../src/net/server.js';
import { relaySockets } from '../src/net/stream.js';

const quiet: NetLog = { info: () => {}, warn: () => {}, error: () => {} };
let server: ApiServer;
let port = 0;
const events: string[] = [];

before(async () => {
  server = createApiServer({
    routes: [],
    authenticator: createAuthenticator({}),
    log: quiet,
    upgrades: [
      {
        method: 'GET', path: '/private', handler: (ctx) => {
          if (ctx.caller === null) throw new RouteError(401, 'who are you?');
        },
      },
      {
        // What the attach route does: open something for the client, then accept.
        method: 'GET', path: '/slow', handler: async (_ctx, accept) => {
          events.push('opened upstream');
          await sleep(300);
          try {
            await accept();
          } catch {
            events.push('released upstream');
          }
        },
      },
    ],
  });
  const bound = await server.listen({ host: '127.0.0.1', port: 0 });
  port = bound.tcp!.port;
});
after(async () => {
  await server.close();
});

/**
 * A raw TCP peer that sends `request` and never ends its side. Once answered,
 * it keeps writing now and then: to a server that still holds the socket the
 * writes go through unnoticed; once the server has closed it they fail
 * (reset), and the peer sees its socket close. Resolves with what it received
 * and whether that happened within `ms`.
 */
function rawPeer(request: string, ms: number): Promise<{ received: string; closedByServer: boolean }> {
  return new Promise((resolvePeer) => {
    const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true }, () => socket.write(request));
    let received = '';
    socket.on('data', (chunk) => (received += chunk.toString()));
    const poke = setInterval(() => {
      if (received !== '' && socket.writable) socket.write('x');
    }, 200);
    const finish = (closedByServer: boolean) => {
      clearInterval(poke);
      clearTimeout(timer);
      socket.destroy();
      resolvePeer({ received, closedByServer });
    };
    const timer = setTimeout(() => finish(false), ms);
    socket.on('close', () => finish(true));
    socket.on('error', () => finish(true));
  });
}

const upgradeHeaders = 'Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n';

describe('WebSocket upgrades against misbehaving peers', () => {
  it('a refused upgrade (anonymous caller) is answered and then closed by the server, though the peer never closes', async () => {
    const peer = await rawPeer(`GET /private HTTP/1.1\r\nHost: x\r\n${upgradeHeaders}\r\n`, 5000);
    assert.match(peer.received, /^HTTP\/1\.1 401 /);
    assert.equal(peer.closedByServer, true);
  });

  it('an upgrade without the WebSocket headers is refused with 400 at once (ws would drop it without calling back)', async () => {
    const peer = await rawPeer('GET /slow HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n', 5000);
    assert.match(peer.received, /^HTTP\/1\.1 400 /);
    assert.match(peer.received, /Sec-WebSocket-Key/);
    assert.equal(peer.closedByServer, true);
    assert.ok(!events.includes('opened upstream'), 'the route never ran');
  });

  it('a client that leaves during the handshake: accept() fails and the route lets go of what it opened', async () => {
    const socket = connect(port, '127.0.0.1', () => socket.write(`GET /slow HTTP/1.1\r\nHost: x\r\n${upgradeHeaders}\r\n`));
    socket.on('error', () => {});
    await sleep(100);
    socket.destroy();
    for (let i = 0; i < 50 && !events.includes('released upstream'); i++) await sleep(20);
    assert.deepEqual(events, ['opened upstream', 'released upstream']);
  });

  it('the relay stops reading a source while the other end has a megabyte unsent, and goes on once it is sent', async () => {
    // Two socket pairs through a local ws server: producer -> relay(a, b) -> consumer; the consumer does not read at first.
    const { WebSocketServer } = await import('ws');
    const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise((resolveListen) => wss.once('listening', resolveListen));
    const address = wss.address() as { port: number };
    const serverSides: WebSocket[] = [];
    wss.on('connection', (ws) => serverSides.push(ws));
    const producer = new WebSocket(`ws://127.0.0.1:${address.port}`);
    const consumer = new WebSocket(`ws://127.0.0.1:${address.port}`);
    await Promise.all([producer, consumer].map((ws) => new Promise((resolveOpen) => ws.once('open', resolveOpen))));
    for (let i = 0; i < 50 && serverSides.length < 2; i++) await sleep(10);
    const [fromProducer, toConsumer] = serverSides;
    relaySockets(fromProducer, toConsumer);
    consumer.pause(); // a client that stops reading
    const chunk = 'x'.repeat(64 * 1024);
    let sent = 0;
    const until = Date.now() + 5000;
    // The producer keeps sending; once the relay pauses it, its own unsent bytes grow and it stops too.
    while (Date.now() < until && producer.bufferedAmount < 8 * 1024 * 1024) {
      producer.send(chunk);
      sent += chunk.length;
      await sleep(1);
    }
    assert.ok(producer.bufferedAmount >= 8 * 1024 * 1024, `the relay stopped reading: the producer has ${producer.bufferedAmount} bytes unsent`);
    assert.ok(toConsumer.bufferedAmount < 16 * 1024 * 1024, `the relay holds ${toConsumer.bufferedAmount} bytes, not all ${sent}`);
    let received = 0;
    consumer.on('message', (data) => (received += (data as Buffer).length));
    consumer.resume();
    for (let i = 0; i < 500 && received < sent; i++) await sleep(20);
    assert.equal(received, sent, 'everything arrives once the consumer reads again');
    for (const ws of [producer, consumer]) ws.terminate();
    await new Promise((resolveClose) => wss.close(resolveClose));
  });
});

describe('streams per user (max_streams_per_user)', () => {
  let capped: ApiServer;
  let url = '';
  let key: Uint8Array;
  const held: WebSocket[] = [];

  before(async () => {
    key = new Uint8Array(32).fill(7);
    capped = createApiServer({
      routes: [],
      authenticator: createAuthenticator({ jwtKey: key }),
      log: quiet,
      maxStreamsPerUser: 2,
      upgrades: [{ method: 'GET', path: '/hold', handler: async (_ctx, accept) => void await accept() }],
    });
    const bound = await capped.listen({ host: '127.0.0.1', port: 0 });
    url = `ws://127.0.0.1:${bound.tcp!.port}/hold`;
  });
  after(async () => {
    for (const socket of held) socket.terminate();
    await capped.close();
  });

  /** Opens a stream as `user`: the socket once open, or the refusal's status and body. */
  async function open(user: string): Promise<{ socket?: WebSocket; status?: number; body?: string }> {
    const { token } = await issueToken(key, user, 600, Date.now());
    return new Promise((resolveOpen) => {
      const socket = new WebSocket(url, { headers: { authorization: `Bearer ${token}` } });
      socket.once('open', () => {
        held.push(socket);
        resolveOpen({ socket });
      });
      socket.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => resolveOpen({ status: res.statusCode, body }));
      });
      socket.once('error', () => resolveOpen({}));
    });
  }

  it('a user holds at most the cap; the next is a 429 naming the cap; others are not affected; a closed stream frees its slot', async () => {
    const first = await open('root');
    const second = await open('root');
    assert.ok(first.socket && second.socket, 'the first two streams open');
    const third = await open('root');
    assert.equal(third.status, 429);
    assert.match(JSON.parse(third.body!).error, /^root has 2 WebSocket streams open \(taras attach, taras run, srun\), the most one user may hold at once \(2\)$/);
    assert.match(JSON.parse(third.body!).fix, /max_streams_per_user in cluster\.toml/);
    const other = await open('nobody');
    assert.ok(other.socket, 'another user still opens a stream');
    first.socket!.close();
    // The slot is freed when the connection closes: a bounded wait for it.
    let again: Awaited<ReturnType<typeof open>> = {};
    for (let attempt = 0; attempt < 50 && again.socket === undefined; attempt++) {
      again = await open('root');
      if (again.socket === undefined) await sleep(50);
    }
    assert.ok(again.socket, 'a stream opens again once one of the two closed');
  });

  it('a client that leaves while its credentials are checked frees its slot; HEAD is no upgrade (the route never runs)', async () => {
    let ran = 0;
    // Credentials checked asynchronously and slowly (as a first token or a MUNGE credential is).
    const slow = createApiServer({
      routes: [],
      authenticator: {
        identify: async () => (await sleep(50), { ok: true, caller: { user: 'ada', uid: 4242, gid: 4242, via: 'token' } }),
        identifyBefore: async () => (await sleep(50), { identified: { ok: true, caller: { user: 'ada', uid: 4242, gid: 4242, via: 'token' } } }),
      },
      log: quiet,
      maxStreamsPerUser: 2,
      upgrades: [{ method: 'GET', path: '/hold', handler: async (_ctx, accept) => { ran++; await accept(); } }],
    });
    const bound = await slow.listen({ host: '127.0.0.1', port: 0 });
    const upgrade = (method: string) => `${method} /hold HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n`
      + 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n';
    try {
      for (let i = 0; i < 3; i++) {
        const socket = connect({ port: bound.tcp!.port, host: '127.0.0.1' }, () => {
          socket.write(upgrade('GET'));
          setTimeout(() => socket.resetAndDestroy(), 10);
        });
        socket.on('error', () => {});
      }
      await sleep(200);
      const opened: WebSocket[] = [];
      for (let i = 0; i < 2; i++) {
        opened.push(await new Promise<WebSocket>((resolveOpen, reject) => {
          const socket = new WebSocket(`ws://127.0.0.1:${bound.tcp!.port}/hold`);
          socket.once('open', () => resolveOpen(socket));
          socket.once('unexpected-response', (_req, res) => reject(new Error(`refused with ${res.statusCode}`)));
        }));
      }
      assert.equal(opened.length, 2, 'the three that left hold no slot');
      for (const socket of opened) socket.terminate();
      const before = ran;
      const head = await new Promise<string>((resolveHead) => {
        const socket = connect({ port: bound.tcp!.port, host: '127.0.0.1' }, () => socket.write(upgrade('HEAD')));
        let received = '';
        socket.on('data', (chunk) => (received += chunk.toString()));
        socket.on('close', () => resolveHead(received));
        socket.on('error', () => resolveHead(received));
      });
      assert.match(head, /^HTTP\/1\.1 404 /);
      assert.equal(ran, before, 'the WebSocket route never ran for HEAD');
    } finally {
      await slow.close();
    }
  });
});
