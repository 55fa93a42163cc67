// Who holds the other end of a TCP connection on this machine (net/tcp-peer.ts),
// with real sockets: this process's own listener, another Unix user's
// listener (a process run as that user), a dual-stack listener reached over
// IPv4, ::1, and an end shut for writing (which still reads). Then the
// client's check on a loopback address (net/client.ts): a refused peer gets
// no byte. Every process started here is stopped by its PID.

import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createApiClient, UntrustedPeerError } from '../src/net/client.js';
import { forTests, tcpPeerUid, tcpPeerUidAsync } from '../src/net/tcp-peer.js';
import { createTestUser, notRootReason, removeTestUsers } from './unix-users.js';

const { addressKey, procAddressKey, peerUidIn } = forTests;
const started: ChildProcess[] = [];
after(() => {
  for (const child of started) child.kill('SIGKILL');
  removeTestUsers();
});

const listen = (server: Server, host: string): Promise<number> =>
  new Promise((resolve) => server.listen({ host, port: 0 }, () => resolve((server.address() as AddressInfo).port)));
/** Half-open allowed: a far end's FIN does not end this one (so the far end stays in FIN_WAIT2, reading). */
const connected = (host: string, port: number): Promise<Socket> =>
  new Promise((resolve, reject) => {
    const socket = connect({ host, port, allowHalfOpen: true }, () => resolve(socket));
    socket.once('error', reject);
  });

describe('addresses as /proc writes them', () => {
  it('reads IPv4 and IPv6 words in the machine\'s order, IPv4 as IPv4-mapped', () => {
    assert.equal(procAddressKey('0100007F'), addressKey('127.0.0.1'));
    assert.equal(procAddressKey('0100007F'), addressKey('::ffff:127.0.0.1'));
    assert.equal(procAddressKey('00000000000000000000000001000000'), addressKey('::1'));
    assert.equal(procAddressKey('0000000000000000FFFF00000100007F'), addressKey('::ffff:7f00:1'));
    assert.equal(addressKey('[::1]'), '00000000000000000000000000000001');
    assert.equal(addressKey('fe80::1%eth0'), 'fe800000000000000000000000000001');
    for (const bad of ['1.2.3', '::1::2', '1:2:3:4:5:6:7:8:9', 'g::1', 'localhost']) assert.equal(addressKey(bad), undefined, bad);
    assert.equal(procAddressKey('XYZ'), undefined);
  });
});

/** /proc/net/tcp as the kernel writes it: a header, then sl local rem st queues timer retrnsmt uid timeout inode. */
const table = (...rows: [local: string, remote: string, state: string, uid: number][]) =>
  ['  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
    ...rows.map(([local, remote, state, uid], i) => `   ${i}: ${local} ${remote} ${state} 00000000:00000000 00:00000000 00000000 ${String(uid).padStart(5)}        0 ${uid === 0 ? 0 : 1000 + i} 1 0000000000000000 20 4 30 10 -1`),
    ''].join('\n');

describe('the owner read from the tables', () => {
  // The client 127.0.0.1:54321 (D431) connected to 127.0.0.1:8080 (1F90), where uid 1001 listens.
  const ends = { localAddress: '127.0.0.1', localPort: 54321, remoteAddress: '127.0.0.1', remotePort: 8080 };
  const client: [string, string, string, number] = ['0100007F:D431', '0100007F:1F90', '01', 1000];

  it('is the listener\'s for an accepted end no process holds yet, which kernels before 6.17 list as uid 0', () => {
    // sock_i_uid() before Linux 6.17: uid 0 for a socket with no sk_socket (an end still in its listener's queue, not accept()ed).
    for (const listener of ['0100007F:1F90', '00000000:1F90']) {
      const tables = [table([listener, '00000000:0000', '0A', 1001], ['0100007F:1F90', '0100007F:D431', '01', 0], client)];
      assert.equal(peerUidIn(tables, ends), 1001, `listener on ${listener}`);
    }
    // A dual-stack listener (tcp6 ::) whose accepted end is listed as IPv4-mapped.
    const tcp6 = table(['00000000000000000000000000000000:1F90', '00000000000000000000000000000000:0000', '0A', 1001],
      ['0000000000000000FFFF00000100007F:1F90', '0000000000000000FFFF00000100007F:D431', '01', 0]);
    assert.equal(peerUidIn([table(client), tcp6], ends), 1001);
  });

  it('is the listener\'s when the far end is not listed but a listener on its port is (a table read while it changed)', () => {
    assert.equal(peerUidIn([table(['0100007F:1F90', '00000000:0000', '0A', 1001], client)], ends), 1001);
  });

  it('is root\'s for root\'s listener, the far end\'s own owner once accepted, and unknown with neither', () => {
    assert.equal(peerUidIn([table(['0100007F:1F90', '00000000:0000', '0A', 0], ['0100007F:1F90', '0100007F:D431', '01', 0], client)], ends), 0);
    assert.equal(peerUidIn([table(['0100007F:1F90', '00000000:0000', '0A', 1001], ['0100007F:1F90', '0100007F:D431', '01', 1001], client)], ends), 1001);
    assert.equal(peerUidIn([table(client)], ends), undefined);
    // Another machine's end (10.0.0.9:8080, from 10.0.0.5) is not this machine's listener on its port.
    const remote = { localAddress: '10.0.0.5', localPort: 54321, remoteAddress: '10.0.0.9', remotePort: 8080 };
    assert.equal(peerUidIn([table(['00000000:1F90', '00000000:0000', '0A', 1001], ['0500000A:D431', '0900000A:1F90', '01', 1000])], remote), undefined);
    // Another address's listener on the port is not this connection's, nor an IPv4 one's of an IPv6 connection.
    const v6 = { localAddress: '::1', localPort: 54321, remoteAddress: '::1', remotePort: 8080 };
    assert.equal(peerUidIn([table(['00000000:1F90', '00000000:0000', '0A', 1001]),
      table(['00000000000000000000000001000000:1F90', '00000000000000000000000001000000:D431', '01', 0])], v6), 0);
    assert.equal(peerUidIn([table(['0200007F:1F90', '00000000:0000', '0A', 1001], ['0100007F:1F90', '0100007F:D431', '01', 0], client)], ends), 0);
  });
});

describe('the owner of a TCP connection\'s other end', () => {
  it('is this process\'s uid for its own listener, on 127.0.0.1, ::1 and a dual-stack :: reached over IPv4', async () => {
    for (const [listenOn, connectTo] of [['127.0.0.1', '127.0.0.1'], ['::1', '::1'], ['::', '127.0.0.1']]) {
      const server = createServer((socket) => socket.on('error', () => undefined));
      const port = await listen(server, listenOn);
      const socket = await connected(connectTo, port);
      try {
        assert.equal(tcpPeerUid(socket), process.getuid!(), `${listenOn} reached at ${connectTo}`);
      } finally {
        socket.destroy();
        server.close();
      }
    }
  });

  it('is read without blocking for a burst of connections (the controller checks each one it opens to an agent), each with its own owner', async () => {
    const server = createServer(() => undefined);
    const port = await listen(server, '127.0.0.1');
    const sockets = await Promise.all(Array.from({ length: 20 }, () => connected('127.0.0.1', port)));
    assert.deepEqual(await Promise.all(sockets.map((socket) => tcpPeerUidAsync(socket))), sockets.map(() => process.getuid!()));
    assert.equal(await tcpPeerUidAsync({ localAddress: '127.0.0.1', localPort: 1, remoteAddress: '127.0.0.1', remotePort: 2 }), undefined);
    for (const socket of sockets) socket.destroy();
    server.close();
  });

  it('is not known for an address with no socket of this machine behind it', () => {
    assert.equal(tcpPeerUid({ localAddress: '127.0.0.1', localPort: 1, remoteAddress: '127.0.0.1', remotePort: 2 }), undefined);
    assert.equal(tcpPeerUid({}), undefined);
  });

  it('is another user\'s uid for that user\'s listener, also once it has shut its end for writing (it still reads); the client sends it nothing', { skip: notRootReason }, async () => {
    const squatter = createTestUser('tcpq');
    // Accepts, shuts its end for writing at once (FIN_WAIT2: still reading), and prints how many bytes it got.
    const program = `
      const net = require('net');
      const server = net.createServer((socket) => { socket.end(); let got = 0; socket.on('data', (c) => { got += c.length; console.log('got', got); }); });
      server.listen({ host: '127.0.0.1', port: 0 }, () => console.log('port', server.address().port));
    `;
    const child = spawn('setpriv', ['--reuid', squatter.name, '--regid', squatter.name, '--init-groups', process.execPath, '-e', program], { stdio: ['ignore', 'pipe', 'inherit'] });
    started.push(child);
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
    for (let i = 0; i < 100 && !/port \d+/.test(out); i++) await sleep(50);
    const port = Number(/port (\d+)/.exec(out)![1]);

    const socket = await connected('127.0.0.1', port);
    await sleep(100); // its FIN is in: the far end is FIN_WAIT2
    assert.equal(tcpPeerUid(socket), squatter.uid);
    socket.destroy();

    const refusals: number[] = [];
    const api = createApiClient({
      baseUrl: `http://127.0.0.1:${port}`,
      peer: (uid) => {
        refusals.push(uid);
        return uid === 0 ? undefined : { message: `uid ${uid} listens`, fix: 'none' };
      },
    }, { credentials: () => ({ authorization: 'Bearer victims.token' }) });
    await assert.rejects(api.post('/jobs', { spec: { secret: 'topsecret' } }), (error: unknown) =>
      error instanceof UntrustedPeerError && error.message === `uid ${squatter.uid} listens` && error.address === `http://127.0.0.1:${port}`);
    api.close();
    await sleep(200);
    assert.deepEqual(refusals, [squatter.uid]);
    assert.doesNotMatch(out, /got/, 'not a byte reached the squatter');
  });
});
