// `node dist/bench/net.js`: requests per second through the API transport
// (src/net) for 8 concurrent keep-alive clients posting a small JSON job to a
// handler that answers at once, over TCP (127.0.0.1) and the Unix socket,
// unsigned (the CLI) and signed with the cluster key (agents). The server runs
// in a child process, as the controller would, so clients and server do not
// share one event loop. Not a test: figures vary with the machine. The
// issue's 4,000 durable submissions/s also include the store's commit; this is
// the transport's share of that budget.

import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createApiClient } from '../src/net/client.js';
import { createApiServer, type BoundAddress } from '../src/net/server.js';

const SERVER_ENV = 'TARAS_NET_BENCH_SERVER';
const KEY = Buffer.from('bench-cluster-key-0123456789abcdef0123456789abcdef');
const CLIENTS = 8;
const SECONDS = 3;
const JOB = { name: 'sim', script: '#!/bin/sh\n#TARAS --nodes=2 --time=10\nsrun ./simulate --steps 1000\n', nodes: 2, timeLimitMinutes: 10 };

/** The child: a server whose only job is to answer, on both transports, reporting its address to the parent. */
async function serve(socketPath: string): Promise<void> {
  let nextId = 1;
  const server = createApiServer({
    routes: [{ method: 'POST', path: '/jobs', handler: () => ({ status: 201, body: { id: nextId++ } }) }],
    clusterKey: KEY,
    requireKeyFor: () => false,
    log: { info() {}, warn: console.error, error: console.error },
  });
  const bound = await server.listen({ port: 0, socketPath });
  process.send?.(bound);
  process.on('message', () => process.send?.(process.cpuUsage()));
  process.on('disconnect', () => void server.close(0).then(() => process.exit(0)));
}

async function startServer(socketPath: string): Promise<{ child: ChildProcess; bound: BoundAddress }> {
  const child = fork(fileURLToPath(import.meta.url), [socketPath], { env: { ...process.env, [SERVER_ENV]: '1' } });
  const bound = await new Promise<BoundAddress>((resolve, reject) => {
    child.once('message', (message) => resolve(message as BoundAddress));
    child.once('exit', (code) => reject(new Error(`bench server exited with code ${code}`)));
  });
  return { child, bound };
}

/** The server's CPU time so far (user + system), in microseconds. */
function serverCpuMicros(child: ChildProcess): Promise<number> {
  return new Promise((resolve) => {
    child.once('message', (usage) => resolve((usage as NodeJS.CpuUsage).user + (usage as NodeJS.CpuUsage).system));
    child.send('cpu');
  });
}

interface Figure {
  requestsPerSecond: number;
  /** Server CPU per request: the controller's cost, whatever the clients' share of the machine. */
  serverMicrosPerRequest: number;
}

async function measure(child: ChildProcess, target: { baseUrl: string } | { socketPath: string }, signed: boolean): Promise<Figure> {
  const clients = Array.from({ length: CLIENTS }, () =>
    createApiClient(target, { clusterKey: signed ? KEY : undefined }));
  // Warm up: open the connections and let both sides' JIT settle.
  await Promise.all(clients.map(async (client) => { for (let i = 0; i < 200; i++) await client.post('/jobs', JOB); }));
  let answered = 0;
  const cpuBefore = await serverCpuMicros(child);
  const began = performance.now();
  const deadline = began + SECONDS * 1000;
  await Promise.all(clients.map(async (client) => {
    while (performance.now() < deadline) {
      await client.post('/jobs', JOB);
      answered++;
    }
  }));
  const rate = answered / ((performance.now() - began) / 1000);
  const cpuMicros = (await serverCpuMicros(child)) - cpuBefore;
  for (const client of clients) client.close();
  return { requestsPerSecond: rate, serverMicrosPerRequest: cpuMicros / answered };
}

async function main(): Promise<void> {
  const folder = mkdtempSync(join(tmpdir(), 'taras-net-bench-'));
  const { child, bound } = await startServer(join(folder, 'controller.sock'));
  try {
    const tcp = { baseUrl: bound.tcp?.url ?? '' };
    const unix = { socketPath: bound.socketPath ?? '' };
    console.log(`${CLIENTS} keep-alive clients, POST /jobs with ${JSON.stringify(JOB).length} bytes of JSON, ${SECONDS} s per figure, server in a child process`);
    console.log('transport      requests    req/s  server CPU/req  server-bound req/s per core');
    for (const [name, target] of [['TCP 127.0.0.1', tcp], ['Unix socket', unix]] as const) {
      for (const signed of [false, true]) {
        const figure = await measure(child, target, signed);
        console.log([
          name.padEnd(14),
          (signed ? 'signed' : 'unsigned').padEnd(8),
          Math.round(figure.requestsPerSecond).toLocaleString('en').padStart(8),
          `${Math.round(figure.serverMicrosPerRequest)} µs`.padStart(15),
          Math.round(1e6 / figure.serverMicrosPerRequest).toLocaleString('en').padStart(28),
        ].join(' '));
      }
    }
    console.log('req/s: clients and server share this machine\'s cores; the last column is what one core of the server alone could answer.');
  } finally {
    child.disconnect();
    await new Promise((resolve) => child.once('exit', resolve));
    rmSync(folder, { recursive: true, force: true });
  }
}

if (process.env[SERVER_ENV] === '1') await serve(process.argv[2]);
else await main();
