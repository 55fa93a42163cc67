// `node dist/bench/cluster.js`: the issue's live-system targets, measured on
// this machine with real processes on loopback (`taras controller`, `taras
// agent --virtual`, the CLI) and, for the scheduling pass, the controller
// engine in-process. Prints the figures next to the targets. Not a test:
// figures vary with the machine. Every process started here is stopped by its
// PID, and the whole run is bounded by a deadline.

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, createWriteStream, existsSync, fdatasyncSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { ApiJob } from '../src/api/types.js';
import { listAllJobs } from '../src/cli/controller-client.js';
import { renderTable, round } from '../src/cli/format.js';
import { defaultClusterConfig, type ClusterConfig } from '../src/config/cluster.js';
import { ControllerEngine, type AgentLink } from '../src/controller/engine.js';
import { SeededRandom } from '../src/core/random.js';
import type { JobSpec } from '../src/jobspec/types.js';
import { createApiClient, type ApiClient } from '../src/net/client.js';
import { issueToken, loadOrCreateJwtKey, localIdentity } from '../src/net/identity.js';
import { openStore } from '../src/store/store.js';
import { Client } from 'undici';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const taras = join(root, 'bin/taras.js');
/** The installed command (the sh launcher npm links), as a user's shell finds it on PATH. */
const launcher = join(root, 'bin/taras');
/** The whole run stops (children killed by PID) if it takes longer than this. */
const DEADLINE_MS = 15 * 60_000;
const READY_TIMEOUT_MS = 20_000;

const SINGLE_CLIENT_JOBS = 5_000;
const CONCURRENT_CLIENTS = 8;
const CONCURRENT_JOBS = 20_000;
const CONCURRENT_ROUNDS = 4;
/**
 * Submissions before the measured ones: V8 goes on optimising the submission path (some 400 functions,
 * on its own threads, which take the second core from the clients) for about the first 6,000.
 */
const WARMUP_JOBS_PER_CLIENT = 1_000;
const QUEUE_JOBS = 50_000;
const CLI_SUBMIT_RUNS = 10;
const QUEUE_RUNS = 5;
const LATENCY_JOBS = 50;
const PASS_NODES = 1_000;
const PASS_PENDING = 10_000;
const PASS_ROUNDS = 9;

interface Row {
  what: string;
  measured: string;
  target: string;
  /** undefined: informational, no target. */
  met?: boolean;
  note?: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const say = (text: string) => process.stderr.write(`${text}\n`);
const work = mkdtempSync(join(tmpdir(), 'taras-cluster-bench-'));
const started: ChildProcess[] = [];
/** Children started in a process group of their own (shell loops): stopped with their group. */
const groupLeaders = new WeakSet<ChildProcess>();
/** Set once the run is being abandoned (deadline, signal): only `abandon` cleans up then. */
let abandoning = false;

function removeWork(): void {
  try {
    // A job's supervisor may still write its output file for a moment after its agent is gone.
    rmSync(work, { recursive: true, force: true, maxRetries: 30, retryDelay: 100 });
  } catch (error) {
    say(`could not remove ${work}: ${(error as Error).message}`);
  }
}

/** Stops every child still running, by its PID: SIGTERM, then SIGKILL after a grace period. */
async function stopAll(): Promise<void> {
  for (const child of started.reverse()) await stop(child);
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  // A shell loop leads its own process group: its taras call goes with it.
  const target = groupLeaders.has(child) ? -child.pid : child.pid;
  process.kill(target, 'SIGTERM');
  const timer = setTimeout(() => {
    if (child.exitCode === null && child.signalCode === null) process.kill(target, 'SIGKILL');
  }, 3000);
  await exited;
  clearTimeout(timer);
}

/** Ends the run at once: every child killed by its PID, the scratch folder removed. */
async function abandon(why: string): Promise<never> {
  abandoning = true;
  say(why);
  const exits = started
    .filter((child) => child.pid !== undefined && child.exitCode === null && child.signalCode === null)
    .map((child) => {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      process.kill(child.pid!, 'SIGKILL');
      return exited;
    });
  await Promise.race([Promise.all(exits), sleep(2000)]);
  await sleep(500); // supervisors of jobs started just before finish writing their output
  removeWork();
  process.exit(1);
}

const deadline = setTimeout(() => void abandon(`benchmark exceeded ${DEADLINE_MS / 60_000} min: stopping`), DEADLINE_MS);
deadline.unref();
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void abandon(`${signal}: stopping`));

/** Starts a daemon and resolves when its log matches `ready`. */
function daemon(args: string[], ready: RegExp, entry = taras): Promise<{ child: ChildProcess; match: RegExpMatchArray }> {
  // TARAS_BENCH_PROFILE=DIR: each daemon writes a V8 CPU profile there when it stops.
  const profile = process.env.TARAS_BENCH_PROFILE ? ['--cpu-prof', '--cpu-prof-dir', resolve(process.env.TARAS_BENCH_PROFILE)] : [];
  const child = spawn(process.execPath, [...profile, entry, ...args], { cwd: work, stdio: ['ignore', 'ignore', 'pipe'] });
  started.push(child);
  const logs = process.env.TARAS_BENCH_LOGS ? resolve(process.env.TARAS_BENCH_LOGS) : undefined;
  return new Promise((resolve, reject) => {
    let log = '';
    const timer = setTimeout(() => reject(new Error(`not ready within ${READY_TIMEOUT_MS / 1000} s: ${args.join(' ')}\n${log}`)), READY_TIMEOUT_MS);
    const onData = (chunk: Buffer) => {
      log += chunk.toString();
      const match = log.match(ready);
      if (match) {
        clearTimeout(timer);
        child.stderr!.off('data', onData);
        // Keep draining the log so the daemon never blocks on a full pipe; TARAS_BENCH_LOGS=DIR keeps it there.
        if (logs !== undefined) {
          const file = createWriteStream(join(logs, `${basename(entry)}-${child.pid}.log`));
          file.write(log);
          child.stderr!.pipe(file);
        } else {
          child.stderr!.resume();
        }
        resolve({ child, match });
      }
    };
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`exited with ${code}: ${args.join(' ')}\n${log}`)));
  });
}

interface BenchController {
  child: ChildProcess;
  url: string;
  data: string;
  /** `unix:` and the controller's socket: the CLI's address on this machine (the kernel vouches for the caller). */
  socket: string;
  /** What API clients over TCP send to say who they are: a bearer token of this user, or what another checkout takes. */
  auth: Record<string, string>;
}

/** A checkout's src/net/identity.js, as far as the bench needs it (the code before issue 9 had only identityHeaders). */
type IdentityModule = Partial<{ issueToken: typeof issueToken; loadOrCreateJwtKey: typeof loadOrCreateJwtKey; identityHeaders: (who: { user: string; uid: number }) => Record<string, string> }>;

/**
 * A controller of this checkout, or of another (`entry`, its bin/taras.js, and `identity`, its identity
 * module: the lead part), with the headers its requests carry: a bearer token from the controller's key, or,
 * for a checkout without verified identity, the headers it believed.
 */
async function startController(name: string, other?: { entry: string; identity: IdentityModule }): Promise<BenchController> {
  const data = join(work, name);
  const { child, match } = await daemon(['controller', '--data', data, '--port', '0'], /listening on (http:\/\/127\.0\.0\.1:\d+)/, other?.entry);
  const identity = other?.identity ?? { issueToken, loadOrCreateJwtKey };
  const me = localIdentity();
  const auth = identity.issueToken === undefined || identity.loadOrCreateJwtKey === undefined
    ? identity.identityHeaders!(me)
    : { authorization: `Bearer ${(await identity.issueToken(identity.loadOrCreateJwtKey(join(data, 'jwt.key')), me.user, 3600, Date.now())).token}` };
  return { child, url: match[1], data, socket: `unix:${join(data, 'taras.sock')}`, auth };
}

/** A small checked job: one CPU for at most a minute, running `true`. */
const tinySpec = (name: string, extra: Partial<JobSpec> = {}): JobSpec => ({
  script: { path: join(work, 'tiny.sh'), text: '#!/bin/sh\n#TARAS --time 1\ntrue\n', args: [] },
  nodes: { min: 1 }, cpusPerTask: 1, timeLimitSeconds: 60, name, workingDir: work, output: 'taras-%j.out',
  export: { all: true, variables: [] }, requeue: false, ...extra,
});

/** The body `taras submit` sends: the spec plus the submitting shell's environment and folder. */
const submitBody = (name: string) => ({ spec: { ...tinySpec(name), submitEnv: { ...process.env }, submitDir: work } });

const client = (controller: BenchController): ApiClient => createApiClient({ baseUrl: controller.url }, { credentials: () => controller.auth });

/**
 * Submits `jobs` jobs from `clients` clients, each one keep-alive connection
 * with one request in flight (sbatch's pattern, without its process start).
 * The load generator is undici's Client, not the CLI's node:http client: on
 * two cores the clients share the machine with the controller, and node:http
 * spends as much CPU per request as the controller does. Returns jobs per second.
 */
async function submitStorm(controller: Pick<BenchController, 'url' | 'auth'>, clients: number, jobs: number): Promise<number> {
  const body = JSON.stringify(submitBody('storm'));
  // Each request carries the token: the controller verifies it once, then finds it in its cache.
  const headers = { ...controller.auth, 'content-type': 'application/json', accept: 'application/json' };
  const connections = Array.from({ length: clients }, () => new Client(controller.url, { pipelining: 1 }));
  try {
    let next = 0;
    const began = performance.now();
    await Promise.all(connections.map(async (connection) => {
      while (next < jobs) {
        next++;
        const response = await connection.request({ method: 'POST', path: '/jobs', headers, body });
        const answer = await response.body.text();
        if (response.statusCode !== 201) throw new Error(`submission refused (${response.statusCode}): ${answer}`);
      }
    }));
    return jobs / ((performance.now() - began) / 1000);
  } finally {
    await Promise.all(connections.map((connection) => connection.close()));
  }
}

/** Requests the bare server takes after its warm-up (as many as one round of the storm). */
const BARE_REQUESTS = CONCURRENT_JOBS / CONCURRENT_ROUNDS;

/** A bare node:http server: it reads the body, parses it and answers 201 with an id. No identity, no checks, no store. */
const BARE_SERVER = `const http = require('node:http');
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    JSON.parse(Buffer.concat(chunks).toString());
    const text = JSON.stringify({ id: 1 });
    res.writeHead(201, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  });
});
server.listen(0, '127.0.0.1', () => process.stderr.write('listening on http://127.0.0.1:' + server.address().port + '\\n'));
`;

/**
 * The storm's clients and body against the bare server, in the same minute as the controller's rounds: what
 * this machine's loopback TCP and Node's HTTP cost then, the floor under any submission. Requests a second,
 * and the server's CPU per request.
 */
async function bareServerStorm(): Promise<{ rate: number; cpuUs: number }> {
  const file = join(work, 'bare-server.cjs');
  writeFileSync(file, BARE_SERVER);
  const { child, match } = await daemon([], /listening on (http:\/\/127\.0\.0\.1:\d+)/, file);
  try {
    const bare = { url: match[1], auth: {} };
    await submitStorm(bare, CONCURRENT_CLIENTS, CONCURRENT_CLIENTS * WARMUP_JOBS_PER_CLIENT);
    const before = cpuMsOf(`/proc/${child.pid}/stat`);
    const rate = await submitStorm(bare, CONCURRENT_CLIENTS, BARE_REQUESTS);
    return { rate, cpuUs: ((cpuMsOf(`/proc/${child.pid}/stat`) - before) * 1000) / BARE_REQUESTS };
  } finally {
    await stop(child);
  }
}

/** The measured storm, in rounds: this machine's speed changes from one minute to the next, and the range shows how much. */
async function stormRounds(controller: BenchController): Promise<number[]> {
  const rates: number[] = [];
  for (let i = 0; i < CONCURRENT_ROUNDS; i++) rates.push(await submitStorm(controller, CONCURRENT_CLIENTS, CONCURRENT_JOBS / CONCURRENT_ROUNDS));
  return rates;
}

/** The rate over all of a storm's rounds (each of CONCURRENT_JOBS / CONCURRENT_ROUNDS jobs): jobs over the seconds they took. */
const pooledRate = (roundRates: readonly number[]): number =>
  CONCURRENT_JOBS / roundRates.reduce((seconds, rate) => seconds + CONCURRENT_JOBS / CONCURRENT_ROUNDS / rate, 0);

const DISK_SYNCS = 300;

/**
 * What one sync of the controller's disk costs: 64 kB rewritten in a file
 * beside the controller's data and fdatasync'd, the median of DISK_SYNCS,
 * with the machine quiet and then with a process spinning on one core (as the
 * clients do during a storm). The submission rate cannot pass the batch size
 * over this time.
 */
async function diskSyncs(): Promise<{ quiet: number; busy: number }> {
  const file = join(work, 'disk-sync.bin');
  const fd = openSync(file, 'w+');
  const block = Buffer.alloc(64 * 1024, 1);
  const measure = (): number => {
    const times: number[] = [];
    for (let i = 0; i < DISK_SYNCS; i++) {
      const began = performance.now();
      writeSync(fd, block, 0, block.length, (i % 16) * block.length);
      fdatasyncSync(fd);
      times.push(performance.now() - began);
    }
    return median(times);
  };
  try {
    measure(); // the file's blocks exist from here on: every measured write rewrites them
    const quiet = measure();
    const spinner = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
    started.push(spinner);
    try {
      await sleep(200);
      return { quiet, busy: measure() };
    } finally {
      await stop(spinner);
    }
  } finally {
    closeSync(fd);
    rmSync(file, { force: true });
  }
}

/** CPU milliseconds (user + system) from a /proc stat file: a process's, or one thread's (task/TID/stat). */
function cpuMsOf(statFile: string): number {
  const fields = readFileSync(statFile, 'utf8').split(') ')[1].split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}
/** The kernel's clock ticks per second (USER_HZ), 100 on Linux. */
const CLOCK_TICKS = 100;

/** A client that lists the running jobs every 20 ms until stopped; `stop` gives the response times (ms). */
function probeDuring(controller: BenchController): { stop: () => Promise<number[]> } {
  const connection = new Client(controller.url);
  const headers = { ...controller.auth, accept: 'application/json' };
  const times: number[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const began = performance.now();
      const response = await connection.request({ method: 'GET', path: '/jobs?state=RUNNING', headers });
      await response.body.text();
      times.push(performance.now() - began);
      await sleep(20);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      await connection.close();
      return times;
    },
  };
}

/** Wall milliseconds of one run of `file ARGS`, process start included; stdout to /dev/null. */
function timeRun(file: string, args: string[], env: NodeJS.ProcessEnv = process.env): number {
  const devNull = openSync('/dev/null', 'w');
  try {
    const began = performance.now();
    const run = spawnSync(file, args, { cwd: work, env, stdio: ['ignore', devNull, 'pipe'], timeout: 30_000 });
    const ms = performance.now() - began;
    if (run.status !== 0) throw new Error(`${file} ${args.join(' ')} failed (${run.status}): ${run.stderr}`);
    return ms;
  } finally {
    closeSync(devNull);
  }
}

/** This process's environment without NODE_EXTRA_CA_CERTS, which makes Node load that certificate file as it starts. */
function environmentWithoutCerts(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.NODE_EXTRA_CA_CERTS;
  return env;
}

/** Wall milliseconds of one `node ARGS` run, Node start included. */
function timeNode(args: string[], env: NodeJS.ProcessEnv = process.env): number {
  // TARAS_BENCH_CLI_PROFILE=DIR: each command writes a CPU profile there (the timings then include profiling).
  const profile = process.env.TARAS_BENCH_CLI_PROFILE;
  return timeRun(process.execPath, [...(profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : []), ...args], env);
}

/**
 * The CLI's runs keep V8's code cache (bin/taras.js) in the bench's own folder, so the
 * first run of each command here starts without one, as after an install or an upgrade.
 */
const cliEnv = (env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv => ({ ...env, XDG_CACHE_HOME: join(work, 'cli-cache') });
const timeCli = (args: string[], env?: NodeJS.ProcessEnv): number => timeNode([taras, ...args], cliEnv(env));

const sorted = (samples: readonly number[]) => [...samples].sort((a, b) => a - b);
/** The middle sample; for an even count, the mean of the two in the middle. */
const median = (samples: readonly number[]) => {
  const inOrder = sorted(samples);
  const half = Math.floor(inOrder.length / 2);
  return inOrder.length % 2 === 1 ? inOrder[half] : (inOrder[half - 1] + inOrder[half]) / 2;
};
const percentile = (samples: readonly number[], share: number) => sorted(samples)[Math.min(samples.length - 1, Math.ceil(share * samples.length) - 1)];
const ms = (value: number) => `${round(value, value < 10 ? 2 : 1)} ms`;

/** 1 client, then `taras submit` from the shell, on a fresh controller. */
async function submissions(rows: Row[]): Promise<void> {
  const controller = await startController('submit');
  try {
    say(`1 client: ${SINGLE_CLIENT_JOBS.toLocaleString('en')} submissions...`);
    const single = await submitStorm(controller, 1, SINGLE_CLIENT_JOBS);
    rows.push({ what: 'durable submissions, 1 API client', measured: `${round(single, 0)} jobs/s`, target: '-', note: `${SINGLE_CLIENT_JOBS.toLocaleString('en')} jobs, fresh controller` });

    writeFileSync(join(work, 'tiny.sh'), '#!/bin/sh\n#TARAS --time 1\ntrue\n');
    say(`taras submit from the shell, ${CLI_SUBMIT_RUNS} runs...`);
    const args = ['submit', '--controller', controller.socket, 'tiny.sh'];
    // `taras` as a shell finds it on PATH: bin/taras, the launcher npm links. This shell's environment as it is
    // (NODE_EXTRA_CA_CERTS included, if set: the launcher starts Node without it and hands it back to the job).
    const installed = (env: NodeJS.ProcessEnv = process.env) => timeRun(launcher, args, cliEnv(env));
    // The first run finds no code cache and writes one; it also warms the file cache, as any shell session has.
    const first = installed();
    const samples = Array.from({ length: CLI_SUBMIT_RUNS }, () => installed());
    const uncached = median(Array.from({ length: CLI_SUBMIT_RUNS }, () => installed({ ...process.env, TARAS_CLI_CACHE: 'off' })));
    const direct = median(Array.from({ length: CLI_SUBMIT_RUNS }, () => timeCli(args)));
    const nodeAlone = median(Array.from({ length: CLI_SUBMIT_RUNS }, () => timeNode(['-e', ''])));
    const value = median(samples);
    rows.push({ what: 'one `taras submit` from the shell', measured: ms(value), target: '< 120 ms', met: value < 120, note: `bin/taras, median of ${CLI_SUBMIT_RUNS}, min ${ms(Math.min(...samples))}` });
    rows.push({ what: '  without the code cache', measured: ms(uncached), target: '-', note: `TARAS_CLI_CACHE=off, median of ${CLI_SUBMIT_RUNS}; the first run, which writes the cache, took ${ms(first)}` });
    rows.push({ what: '  as `node bin/taras.js`', measured: ms(direct), target: '-', note: 'Node started directly, with this shell\'s environment' });
    rows.push({ what: '`node -e ""` alone, for comparison', measured: ms(nodeAlone), target: '-', note: 'Node start on this machine now' });
    // NODE_EXTRA_CA_CERTS makes every Node process read and parse that certificate file as it starts;
    // bin/taras spares it, `node bin/taras.js` and `node -e ""` do not.
    if (process.env.NODE_EXTRA_CA_CERTS) {
      const nodeWithoutCerts = median(Array.from({ length: CLI_SUBMIT_RUNS }, () => timeNode(['-e', ''], environmentWithoutCerts())));
      rows.push({ what: '  without NODE_EXTRA_CA_CERTS', measured: ms(nodeWithoutCerts), target: '-', note: 'this shell sets it; bin/taras starts Node without it' });
    }
  } finally {
    await stop(controller.child);
  }
}

/** Starts `taras agent --virtual 16x8` for `controller` and resolves once its nodes are registered. */
function startAgent(controller: { url: string; data: string }) {
  return daemon(
    ['agent', '--controller', controller.url, '--virtual', '16x8', '--data', join(controller.data, 'agent'), '--key', join(controller.data, 'cluster.key')],
    /registered 16 node/,
  );
}

const BUSY_NODES = 16;

/**
 * A busy cluster, as a deep queue has one: 16 whole-node jobs running (`sleep`
 * limited to 5 minutes), then 8 clients submitting, then filled to 50,000 pending jobs
 * for `taras queue`. The running jobs are cancelled at the end.
 */
async function concurrentAndQueue(rows: Row[]): Promise<void> {
  const controller = await startController('queue');
  const agent = await startAgent(controller);
  const api = client(controller);
  try {
    say(`filling the ${BUSY_NODES} nodes with long jobs...`);
    const sleeper = {
      spec: {
        // Limited to 5 minutes: should the cancels below not get through, they still end soon after the bench.
        ...tinySpec('busy', { script: { path: join(work, 'busy.sh'), text: '#!/bin/sh\nexec sleep 3600\n', args: [] }, cpusPerTask: 8, timeLimitSeconds: 300 }),
        submitEnv: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, submitDir: work,
      },
    };
    for (let i = 0; i < BUSY_NODES; i++) await api.post('/jobs', sleeper);
    const until = performance.now() + 20_000;
    while ((await api.get<{ jobs: ApiJob[] }>('/jobs?state=RUNNING')).jobs.length < BUSY_NODES) {
      if (performance.now() > until) throw new Error(`the ${BUSY_NODES} long jobs did not all start within 20 s`);
      await sleep(100);
    }

    say(`${CONCURRENT_CLIENTS} clients: ${CONCURRENT_JOBS.toLocaleString('en')} submissions...`);
    const warmup = CONCURRENT_CLIENTS * WARMUP_JOBS_PER_CLIENT;
    const cold = await submitStorm(controller, CONCURRENT_CLIENTS, warmup);
    const pid = controller.child.pid!;
    const cpuBefore = { process: cpuMsOf(`/proc/${pid}/stat`), main: cpuMsOf(`/proc/${pid}/task/${pid}/stat`) };
    // Meanwhile another user's view: a 9th client lists the running jobs every 20 ms.
    const probe = probeDuring(controller);
    const roundRates = await stormRounds(controller);
    const rate = pooledRate(roundRates);
    const probes = await probe.stop();
    const perJob = (ms: number) => `${round((ms * 1000) / CONCURRENT_JOBS, 0)} µs`;
    rows.push({
      what: `durable submissions, ${CONCURRENT_CLIENTS} API clients`, measured: `${round(rate, 0)} jobs/s`, target: '>= 4,000 jobs/s', met: rate >= 4000,
      note: `${CONCURRENT_JOBS.toLocaleString('en')} jobs after ${warmup.toLocaleString('en')} of warm-up, every node busy; `
        + `${CONCURRENT_ROUNDS} rounds of ${(CONCURRENT_JOBS / CONCURRENT_ROUNDS).toLocaleString('en')}: ${round(Math.min(...roundRates), 0)} to ${round(Math.max(...roundRates), 0)} jobs/s`,
    });
    rows.push({ what: '  the warm-up itself', measured: `${round(cold, 0)} jobs/s`, target: '-', note: `the first ${warmup.toLocaleString('en')} a just-started controller takes, V8 still optimising` });
    rows.push({
      what: '  controller CPU per submission', measured: perJob(cpuMsOf(`/proc/${pid}/stat`) - cpuBefore.process), target: '-',
      note: `its main thread ${perJob(cpuMsOf(`/proc/${pid}/task/${pid}/stat`) - cpuBefore.main)} (the rest: V8's and libuv's threads)`,
    });
    rows.push({
      what: '  GET /jobs?state=RUNNING meanwhile', measured: ms(median(probes)), target: '-',
      note: `another client every 20 ms, median of ${probes.length}; p95 ${ms(percentile(probes, 0.95))}`,
    });
    const bare = await bareServerStorm();
    rows.push({
      what: '  a bare node:http server, the same clients and body', measured: `${round(bare.rate, 0)} req/s`, target: '-',
      note: `${round(bare.cpuUs, 0)} µs of CPU a request, run just after the storm: this machine's loopback and Node's HTTP in that minute, `
        + 'with no identity, checks or store',
    });
    const disk = await diskSyncs();
    rows.push({
      what: '  one fdatasync of this disk (64 kB rewritten)', measured: `${round(disk.quiet, 2)} ms`, target: '-',
      note: `median of ${DISK_SYNCS}; ${round(disk.busy, 2)} ms while another process keeps one core busy. One per batch of up to ${CONCURRENT_CLIENTS} submissions`,
    });

    const remaining = QUEUE_JOBS - warmup - CONCURRENT_JOBS;
    say(`filling the queue to ${QUEUE_JOBS.toLocaleString('en')} pending jobs...`);
    await submitStorm(controller, CONCURRENT_CLIENTS, remaining);
    const pending = (await listAllJobs(api, new URLSearchParams({ state: 'PENDING' }))).length;
    const listing: number[] = [];
    const onePage: number[] = [];
    for (let i = 0; i < 3; i++) {
      let began = performance.now();
      await listAllJobs(api);
      listing.push(performance.now() - began);
      began = performance.now();
      await api.get('/jobs?after=25000');
      onePage.push(performance.now() - began);
    }
    if (pending !== QUEUE_JOBS) throw new Error(`expected ${QUEUE_JOBS} pending jobs, the controller lists ${pending}`);
    // (The measurements below add a few more: one per run.)

    say(`taras queue with ${QUEUE_JOBS.toLocaleString('en')} pending, ${QUEUE_RUNS} runs...`);
    const args = ['queue', '--controller', controller.socket];
    // As a user's shell runs them: bin/taras and bin/squeue, the launchers npm links (as `taras submit` above).
    const installed = (file: string, commandArgs: string[], env: NodeJS.ProcessEnv = process.env) => timeRun(file, commandArgs, cliEnv(env));
    installed(launcher, args); // warms the file cache and writes the code cache for `queue`
    // The controller reuses a listing while nothing in it changed: each measured run follows a
    // submission (so the listing is built anew), and the reuse is shown on its own row.
    const afterChange: number[] = [];
    for (let i = 0; i < QUEUE_RUNS; i++) {
      await api.post('/jobs', submitBody('change'));
      afterChange.push(installed(launcher, args));
    }
    const value = median(afterChange) / 1000;
    rows.push({
      what: '`taras queue`, 50,000 pending jobs', measured: `${round(value, 2)} s`, target: '< 0.3 s', met: value < 0.3,
      note: `bin/taras, median of ${QUEUE_RUNS}, each after a new submission; ${BUSY_NODES} running; stdout to /dev/null`,
    });
    // squeue (bin/squeue: the same CLI as Slurm's command, Slurm's default format), timed the same way.
    const squeueLauncher = join(root, 'bin/squeue');
    const squeueEnv = { ...process.env, TARAS_CONTROLLER: controller.socket };
    installed(squeueLauncher, [], squeueEnv);
    const squeueRuns: number[] = [];
    for (let i = 0; i < QUEUE_RUNS; i++) {
      await api.post('/jobs', submitBody('change'));
      squeueRuns.push(installed(squeueLauncher, [], squeueEnv));
    }
    const squeue = median(squeueRuns) / 1000;
    rows.push({
      what: '`squeue`, 50,000 pending jobs', measured: `${round(squeue, 2)} s`, target: '< 0.3 s', met: squeue < 0.3,
      note: `bin/squeue, median of ${QUEUE_RUNS}, each after a new submission; Slurm's default format; stdout to /dev/null`,
    });
    const reused = median(Array.from({ length: QUEUE_RUNS }, () => installed(launcher, args))) / 1000;
    rows.push({ what: '  repeated with nothing changed', measured: `${round(reused, 2)} s`, target: '-', note: 'bin/taras; the controller reuses its last listing' });
    const direct = median(Array.from({ length: QUEUE_RUNS }, () => timeCli(args))) / 1000;
    rows.push({ what: '  repeated, as `node bin/taras.js`', measured: `${round(direct, 2)} s`, target: '-', note: 'Node started directly, with this shell\'s environment (see `taras submit` above)' });
    rows.push({ what: 'GET /jobs alone, 50,000 pending', measured: `${round(median(listing) / 1000, 2)} s`, target: '-', note: 'the full vocabulary, every page of 1,000, received and parsed, median of 3' });
    rows.push({ what: '  one page of it (what others wait for at most)', measured: ms(median(onePage)), target: '-', note: 'GET /jobs?after=25000: 1,000 jobs, median of 3' });
    // `scontrol hold` and `release` of 10,000 pending jobs (one request's most) among the 50,000.
    const held: number[] = [];
    for (let after = 0; held.length < 10_000;) {
      const page = await api.get<{ jobs: ApiJob[]; next: number | null }>(`/jobs?state=PENDING&after=${after}`);
      held.push(...page.jobs.map((job) => job.id).slice(0, 10_000 - held.length));
      if (page.next === null) break;
      after = page.next;
    }
    const timed = async (action: 'hold' | 'release'): Promise<number> => {
      const began = performance.now();
      const answer = await api.post<{ jobs: { result: string }[] }>(`/jobs/${action}`, { ids: held });
      const took = performance.now() - began;
      const done = answer.jobs.filter((job) => job.result === 'cancelled').length;
      if (done !== held.length) throw new Error(`${action} took ${done} of ${held.length} jobs`);
      return took;
    };
    const holdMs = await timed('hold');
    const releaseMs = await timed('release');
    const updateBegan = performance.now();
    const updated = await api.post<{ jobs: { result: string }[] }>('/jobs/update', { ids: held, timeLimitSeconds: 30 });
    const updateMs = performance.now() - updateBegan;
    if (updated.jobs.filter((job) => job.result === 'cancelled').length !== held.length) throw new Error('scontrol update did not update every job');
    rows.push({
      what: `\`scontrol hold\` / \`release\` / \`update\`, ${held.length.toLocaleString('en')} jobs`,
      measured: `${round(holdMs / 1000, 2)} / ${round(releaseMs / 1000, 2)} / ${round(updateMs / 1000, 2)} s`, target: '-',
      note: 'one request each, the oldest pending jobs of the 50,000: a released job goes back to its place in the queue; update: TimeLimit=0:30',
    });
    // `taras cancel --all` of every job at once: one request, 1,000 jobs a turn of the event loop (a commit each);
    // meanwhile another client asks for /status every 5 ms, and its longest wait is what others wait for at most.
    const other = client(controller);
    const cancelBegan = performance.now();
    let cancelOver = false;
    const cancelling = api.post<{ jobs: unknown[] }>('/jobs/cancel', { all: true }).finally(() => (cancelOver = true));
    const waits: number[] = [];
    while (!cancelOver) {
      const asked = performance.now();
      await other.get('/status');
      waits.push(performance.now() - asked);
      await sleep(5);
    }
    const cancelled = await cancelling;
    const cancelMs = performance.now() - cancelBegan;
    other.close();
    rows.push({
      what: `\`taras cancel --all\`, ${cancelled.jobs.length.toLocaleString('en')} jobs`, measured: `${round(cancelMs / 1000, 2)} s`, target: '-',
      note: 'one request: every pending job ended CANCELLED, 1,000 a turn, the 16 running ones signalled; the request to its answer',
    });
    rows.push({
      what: '  another client\'s longest wait meanwhile', measured: ms(Math.max(...waits)), target: '-',
      note: `GET /status every 5 ms during the cancel: ${waits.length} answered, median ${ms(median(waits))}`,
    });
  } finally {
    // Every job is cancelled in one request (pending ones never start), so the long jobs' supervisors kill
    // them before the agent stops; the controller re-sends a cancel that does not reach the agent at once.
    await api.post('/jobs/cancel', { all: true }).catch(() => undefined);
    const until = performance.now() + 15_000;
    while (performance.now() < until && (await api.get<{ jobs: ApiJob[] }>('/jobs?state=RUNNING,COMPLETING').then((page) => page.jobs, () => [])).length > 0) await sleep(100);
    api.close();
    await stop(agent.child);
    await stop(controller.child);
  }
}

/**
 * Submit-to-running on an idle `--virtual 16x8` cluster, one job at a time:
 * from just before the POST to the moment the job's own script runs (it
 * prints `date +%s%N` first thing; same machine, same clock).
 */
async function startLatency(rows: Row[]): Promise<void> {
  const controller = await startController('latency');
  const agent = await startAgent(controller);
  const api = client(controller);
  const script = '#!/bin/sh\ndate +%s%N\n';
  const body = {
    spec: {
      ...tinySpec('latency', { script: { path: join(work, 'latency.sh'), text: script, args: [] }, output: 'latency-%j.out' }),
      submitEnv: { ...process.env }, submitDir: work,
    },
  };
  try {
    say(`submit-to-running, ${LATENCY_JOBS} jobs one at a time...`);
    const running: number[] = [];
    const recorded: number[] = [];
    for (let i = 0; i < LATENCY_JOBS + 5; i++) {
      const sentMs = Date.now();
      const { id } = await api.post<{ id: number }>('/jobs', body);
      let job = await api.get<ApiJob>(`/jobs/${id}`);
      const giveUp = performance.now() + 5000;
      while (job.endTime === null && performance.now() < giveUp) {
        await sleep(2);
        job = await api.get<ApiJob>(`/jobs/${id}`);
      }
      if (job.state !== 'COMPLETED') throw new Error(`job ${id} did not complete within 5 s (state ${job.state})`);
      if (i < 5) continue; // warm-up: first connections and the controller's JIT
      const scriptRanMs = Number(BigInt(readFileSync(join(work, `latency-${id}.out`), 'utf8').trim()) / 1_000_000n);
      running.push(scriptRanMs - sentMs);
      recorded.push(Date.parse(job.startTime!) - Date.parse(job.submitTime));
      await sleep(20); // idle between jobs
    }
    const value = median(running);
    rows.push({
      what: 'submit-to-running, idle 16x8 virtual cluster', measured: ms(value), target: '< 50 ms (median)', met: value < 50,
      note: `until the job's script runs; p95 ${ms(percentile(running, 0.95))}; the controller records the start ${ms(median(recorded))} after the submission (median)`,
    });
  } finally {
    api.close();
    await stop(agent.child);
    await stop(controller.child);
  }
}

/** Bytes each srun run prints through its step, in all. */
const STEP_OUTPUT_BYTES = 64 * 1024 * 1024;

/**
 * srun's output throughput: a batch job runs `srun -n N` whose tasks print STEP_OUTPUT_BYTES in all (supervisor,
 * agent, controller, srun: each piece a numbered JSON frame, acknowledged every 32 KiB), into `wc -c`; against the
 * same command run in the job without srun. Timed inside the job, so the job's own start is not counted.
 */
async function stepOutput(rows: Row[]): Promise<void> {
  const controller = await startController('stepio');
  const agent = await startAgent(controller);
  const api = client(controller);
  const srun = join(root, 'bin', 'srun');
  const runs: [label: string, tasks: number][] = [['1 task', 1], ['4 tasks', 4]];
  const lines = runs.map(([, tasks], k) => {
    const each = STEP_OUTPUT_BYTES / tasks;
    const print = `head -c ${each} /dev/zero | tr "\\0" "x"`;
    return `t0=$(date +%s%N); ${srun} -n ${tasks} sh -c '${print}' | wc -c > ${join(work, `stepio-${k}.bytes`)}; t1=$(date +%s%N); echo $((t1 - t0)) > ${join(work, `stepio-${k}.ns`)}\n`
      + `t0=$(date +%s%N); for i in $(seq ${tasks}); do sh -c '${print}'; done | wc -c > ${join(work, `bare-${k}.bytes`)}; t1=$(date +%s%N); echo $((t1 - t0)) > ${join(work, `bare-${k}.ns`)}\n`;
  }).join('');
  const script = `#!/bin/sh\n${lines}`;
  try {
    say(`srun output: ${STEP_OUTPUT_BYTES / 1024 / 1024} MiB through a step, ${runs.map(([label]) => label).join(' and ')}...`);
    const { id } = await api.post<{ id: number }>('/jobs', {
      spec: { ...tinySpec('stepio', { script: { path: join(work, 'stepio.sh'), text: script, args: [] }, output: 'stepio-%j.out', nodes: { min: 1, max: 1 }, ntasks: 4, cpusPerTask: 1, timeLimitSeconds: 300 }), submitEnv: { ...process.env }, submitDir: work },
    });
    let job = await api.get<ApiJob>(`/jobs/${id}`);
    const giveUp = performance.now() + 280_000;
    while (job.endTime === null && performance.now() < giveUp) {
      await sleep(200);
      job = await api.get<ApiJob>(`/jobs/${id}`);
    }
    const read = (name: string): number => Number(readFileSync(join(work, name), 'utf8').trim());
    runs.forEach(([label], k) => {
      if (!existsSync(join(work, `stepio-${k}.ns`))) throw new Error(`the step job ${id} did not run its srun (${job.state}): ${readFileSync(join(work, `stepio-${id}.out`), 'utf8').slice(0, 2000)}`);
      const bytes = read(`stepio-${k}.bytes`);
      if (bytes !== STEP_OUTPUT_BYTES) throw new Error(`srun ${label} gave ${bytes} bytes, not ${STEP_OUTPUT_BYTES}: ${readFileSync(join(work, `stepio-${id}.out`), 'utf8').slice(0, 2000)}`);
      const seconds = read(`stepio-${k}.ns`) / 1e9;
      const bare = read(`bare-${k}.ns`) / 1e9;
      const mibs = (s: number) => `${round(STEP_OUTPUT_BYTES / 1024 / 1024 / s, 1)} MiB/s`;
      rows.push({
        what: `srun output, ${label} (${STEP_OUTPUT_BYTES / 1024 / 1024} MiB in all)`, measured: mibs(seconds), target: '-',
        note: `${round(seconds, 2)} s for srun ... | wc -c inside the job; the same command without srun ${mibs(bare)}`,
      });
    });
  } finally {
    api.close();
    await stop(agent.child);
    await stop(controller.child);
  }
}

/** A ClusterConfig like the default one, with `count` nodes of 8 CPUs in one partition. */
function clusterOf(count: number, dataDir: string): ClusterConfig {
  const base = defaultClusterConfig(dataDir);
  const names = Array.from({ length: count }, (_, i) => `node${String(i + 1).padStart(4, '0')}`);
  return {
    ...base,
    nodes: names.map((name) => ({ name, cpus: 8, memoryMiB: 16 * 1024, features: [] })),
    partitions: [{ ...base.partitions[0], nodes: names }],
  };
}

const acceptAll: AgentLink = { start: async () => {}, signal: async () => {} };

/** One pass after a job ends, with 10,000 pending on 1,000 full nodes, the engine in this process. */
function schedulingPass(rows: Row[]): void {
  say(`scheduling passes: ${PASS_PENDING.toLocaleString('en')} pending on ${PASS_NODES.toLocaleString('en')} virtual nodes...`);
  const folder = join(work, 'pass');
  mkdirSync(folder, { recursive: true });
  const store = openStore(join(folder, 'taras.db'));
  const clock = { ms: Date.UTC(2026, 10, 22, 12, 0, 0) };
  const engine = new ControllerEngine(clusterOf(PASS_NODES, folder), store, acceptAll, () => clock.ms);
  const random = new SeededRandom(7);
  const spec = (nodes: number, limitSeconds: number) => tinySpec('pass', { nodes: { min: nodes }, cpusPerTask: 8, timeLimitSeconds: limitSeconds });

  engine.agentRegistered([...engine.nodes.keys()], []);
  const running = engine.submit(Array.from({ length: PASS_NODES }, () => ({ user: 'bench', spec: spec(1, random.int(3600, 86400)) })));
  const startedRunning = engine.schedule();
  if (startedRunning.length !== PASS_NODES) throw new Error(`expected ${PASS_NODES} running jobs, started ${startedRunning.length}`);

  clock.ms += 60_000;
  const users = ['alice', 'bob', 'carol', 'dan'];
  const pendingIds = engine.submit(Array.from({ length: PASS_PENDING }, (_, i) => ({
    user: users[i % users.length], spec: spec(random.chance(0.5) ? 2 ** random.int(0, 6) : random.int(1, 100), random.int(600, 86400)),
  })));
  engine.schedule();

  const samples: number[] = [];
  const plannedStarts: number[] = [];
  let startedInPasses = 0;
  for (let round = 0; round < PASS_ROUNDS; round++) {
    clock.ms += 10_000;
    engine.jobReport({ jobId: running[round], state: 'COMPLETED', exitCode: 0, endTimeMs: clock.ms });
    let began = performance.now();
    startedInPasses += engine.schedule().length;
    samples.push(performance.now() - began);
    // What `taras queue` adds once per pass: the planned starts of the whole queue.
    began = performance.now();
    engine.plannedStartMs(pendingIds[pendingIds.length - 1]);
    plannedStarts.push(performance.now() - began);
  }
  store.close();
  const value = median(samples);
  rows.push({
    what: 'easy pass, 10,000 pending on 1,000 nodes', measured: ms(value), target: '< 50 ms', met: value < 50,
    note: `after a job ends (${startedInPasses} started in ${PASS_ROUNDS} passes, commits included); median of ${PASS_ROUNDS}`,
  });
  rows.push({ what: 'planned starts of those 10,000', measured: ms(median(plannedStarts)), target: '-', note: 'on demand, once per pass (queue listing)' });
}

const BIG_NODES = 100_000;
const STATUS_RUNS = 10;

/** The text of a cluster.toml with BIG_NODES nodes in two overlapping partitions. */
const bigClusterToml = (dataDir: string): string => `[cluster]
name = "big"
data_dir = "${dataDir}"
[[nodes]]
names = "n[000001-${BIG_NODES}]"
cpus = 8
memory = "16G"
[[partitions]]
name = "batch"
nodes = "ALL"
default = true
[[partitions]]
name = "half"
nodes = "n[000001-${BIG_NODES / 2}]"
`;

/** A real controller with 100,000 nodes in cluster.toml: its start, GET /status and GET /nodes over loopback. */
async function bigCluster(rows: Row[]): Promise<void> {
  say(`a controller with ${BIG_NODES.toLocaleString('en')} nodes: start, GET /status, GET /nodes...`);
  const folder = join(work, 'big');
  mkdirSync(folder, { recursive: true });
  const file = join(folder, 'cluster.toml');
  writeFileSync(file, bigClusterToml(join(folder, 'data')));
  const began = performance.now();
  const { match } = await daemon(['controller', '--config', file, '--port', '0'], /listening on (http:\/\/127\.0\.0\.1:\d+)/);
  const startMs = performance.now() - began;
  void match;
  // Through the socket: GET /nodes needs a verified caller, and the kernel vouches for this process.
  const api = createApiClient({ socketPath: join(folder, 'data', 'taras.sock') }, {});
  try {
    const status: number[] = [];
    for (let i = 0; i < STATUS_RUNS; i++) {
      const at = performance.now();
      const answer = await api.get<{ nodes: { total: number } }>('/status');
      status.push(performance.now() - at);
      if (answer.nodes.total !== BIG_NODES) throw new Error(`GET /status counts ${answer.nodes.total} nodes, expected ${BIG_NODES}`);
    }
    // After a change (a node drained or resumed) the counts are made anew: one pass over every node.
    const afterChange: number[] = [];
    for (let i = 0; i < STATUS_RUNS; i++) {
      await api.post('/admin/drain', i % 2 === 0 ? { nodes: ['n000001'], reason: 'bench' } : { nodes: ['n000001'], resume: true });
      const at = performance.now();
      await api.get('/status');
      afterChange.push(performance.now() - at);
    }
    const at = performance.now();
    const nodes = await api.get<unknown[]>('/nodes');
    const nodesMs = performance.now() - at;
    if (nodes.length !== BIG_NODES) throw new Error(`GET /nodes lists ${nodes.length} nodes, expected ${BIG_NODES}`);
    const value = median(status);
    rows.push({
      what: `GET /status, ${BIG_NODES.toLocaleString('en')} nodes`, measured: ms(value), target: '< 100 ms', met: value < 100,
      note: `two partitions over them; received and parsed, median of ${STATUS_RUNS} (was 20 s)`,
    });
    const recounted = median(afterChange);
    rows.push({
      what: '  right after a node changed', measured: ms(recounted), target: '< 100 ms', met: recounted < 100,
      note: `a drain or resume before each; the counts made anew (unchanged, the last are reused); median of ${STATUS_RUNS}`,
    });
    rows.push({ what: '  GET /nodes, all of them', measured: ms(nodesMs), target: '-', note: 'every node with its partitions and jobs, received and parsed' });
    // Another process lists every node (reading as fast as it can) while this one asks GET /status every 20 ms.
    const reader = `require('node:http').get({ socketPath: process.argv[1], path: '/nodes' }, (res) => { let n = 0; res.on('data', (c) => { n += c.length; }); res.on('end', () => process.stdout.write(String(n))); });`;
    const lister = spawn(process.execPath, ['-e', reader, join(folder, 'data', 'taras.sock')], { stdio: ['ignore', 'pipe', 'ignore'] });
    started.push(lister);
    let listed = '';
    lister.stdout!.on('data', (chunk: Buffer) => { listed += chunk.toString(); });
    const listerDone = new Promise((resolveExit) => lister.once('exit', resolveExit));
    const waits: number[] = [];
    while (lister.exitCode === null) {
      const at = performance.now();
      await api.get('/status');
      waits.push(performance.now() - at);
      await Promise.race([sleep(20), listerDone]);
    }
    if (!(Number(listed) > 0)) throw new Error(`the other process's GET /nodes read ${listed || 'nothing'}`);
    rows.push({
      what: '  GET /status while another lists them', measured: ms(Math.max(...waits)), target: '-',
      note: `the longest of ${waits.length}, one every 20 ms (median ${ms(median(waits))}): the listing is sent 1,000 nodes at a time, others served between`,
    });
    rows.push({ what: '  controller start', measured: `${round(startMs / 1000, 2)} s`, target: '-', note: 'process start to listening: cluster.toml read, engine, recovery' });
  } finally {
    api.close();
  }
}

const LOOP_CALLS = 200;
const LOOP_SHELLS = 8;
const STEP_RUNS = 20;
const MANY_JOBS = 5_000;

/**
 * Runs `shells` shell loops of `calls` `taras submit` each at once (`command` is how the
 * loop calls taras) and answers jobs per second over the whole wall time.
 */
function shellLoops(shells: number, calls: number, command: string, controller: BenchController, env: NodeJS.ProcessEnv): Promise<number> {
  const loop = `i=0; while [ $i -lt ${calls} ]; do ${command} submit --controller ${controller.socket} tiny.sh >/dev/null || exit 1; i=$((i+1)); done`;
  const began = performance.now();
  return Promise.all(Array.from({ length: shells }, () => new Promise<void>((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', loop], { cwd: work, env: cliEnv(env), stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    started.push(child);
    groupLeaders.add(child);
    let errors = '';
    child.stderr!.on('data', (chunk: Buffer) => { errors += chunk.toString(); });
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`a shell loop failed (${code}): ${errors}`))));
  }))).then(() => (shells * calls) / ((performance.now() - began) / 1000));
}

/** Median user+system CPU milliseconds and wall milliseconds of a command, from /usr/bin/time over `runs` runs. */
function cpuOf(argv: string[], env: NodeJS.ProcessEnv, runs = STEP_RUNS): { cpuMs: number; wallMs: number } {
  const cpu: number[] = [];
  const wall: number[] = [];
  for (let i = 0; i < runs; i++) {
    const run = spawnSync('/usr/bin/time', ['-f', 'taras-bench-time %U %S %e', ...argv], { cwd: work, env: cliEnv(env), encoding: 'utf8', timeout: 30_000 });
    const match = /taras-bench-time ([\d.]+) ([\d.]+) ([\d.]+)/.exec(run.stderr);
    if (run.status !== 0 || !match) throw new Error(`${argv.join(' ')} failed (${run.status}): ${run.stderr}`);
    cpu.push((Number(match[1]) + Number(match[2])) * 1000);
    wall.push(Number(match[3]) * 1000);
  }
  return { cpuMs: median(cpu), wallMs: median(wall) };
}

/**
 * Issue 13's shell-loop figures: 8 x 200 and 1 x 200 `taras submit` from sh loops through
 * the installed command (bin/taras), with NODE_EXTRA_CA_CERTS set and not, and the same
 * through `node bin/taras.js` (what the command was); then one call's CPU split by step.
 */
async function cliLoops(rows: Row[]): Promise<void> {
  const controller = await startController('loops');
  try {
    writeFileSync(join(work, 'tiny.sh'), '#!/bin/sh\n#TARAS --time 1\ntrue\n');
    const withCerts = { ...process.env, NODE_EXTRA_CA_CERTS: process.env.NODE_EXTRA_CA_CERTS ?? '/etc/ssl/certs/ca-certificates.crt' };
    const withoutCerts = environmentWithoutCerts();
    // The first call writes the code cache; later ones use it, as in any shell session.
    cpuOf([launcher, 'submit', '--controller', controller.socket, 'tiny.sh'], withCerts, 1);
    const variants: [string, string, NodeJS.ProcessEnv][] = [
      ['taras (bin/taras), NODE_EXTRA_CA_CERTS set', launcher, withCerts],
      ['taras (bin/taras), NODE_EXTRA_CA_CERTS unset', launcher, withoutCerts],
      ['node bin/taras.js, NODE_EXTRA_CA_CERTS set', `${process.execPath} ${taras}`, withCerts],
    ];
    for (const [what, command, env] of variants) {
      say(`${LOOP_SHELLS} x ${LOOP_CALLS} and 1 x ${LOOP_CALLS} shell loops: ${what}...`);
      const many = await shellLoops(LOOP_SHELLS, LOOP_CALLS, command, controller, env);
      const one = await shellLoops(1, LOOP_CALLS, command, controller, env);
      const installed = command === launcher;
      rows.push({ what: `${LOOP_SHELLS} shell loops x ${LOOP_CALLS}: ${what}`, measured: `${round(many, 1)} jobs/s`, target: installed ? '>= 80 jobs/s' : '-', met: installed ? many >= 80 : undefined });
      rows.push({ what: `1 shell loop x ${LOOP_CALLS}: ${what}`, measured: `${round(one, 1)} jobs/s`, target: installed ? '>= 30 jobs/s' : '-', met: installed ? one >= 30 : undefined });
    }
    say(`taras submit --many: ${MANY_JOBS} jobs in one call...`);
    const lines = Array.from({ length: MANY_JOBS }, (_, i) => JSON.stringify({ script: 'tiny.sh', arguments: [String(i)] })).join('\n');
    writeFileSync(join(work, 'many.jsonl'), `${lines}\n`);
    const manyBegan = performance.now();
    const many = spawnSync(launcher, ['submit', '--many', 'many.jsonl', '--controller', controller.socket], { cwd: work, env: cliEnv(withCerts), encoding: 'utf8', timeout: 120_000 });
    if (many.status !== 0) throw new Error(`taras submit --many failed (${many.status}): ${many.stderr}`);
    const manyRate = MANY_JOBS / ((performance.now() - manyBegan) / 1000);
    rows.push({ what: `taras submit --many, ${MANY_JOBS} jobs in one call`, measured: `${round(manyRate, 0)} jobs/s`, target: '-', note: 'JSON lines; the whole call, Node start included' });
    say(`one call's CPU by step, median of ${STEP_RUNS} each...`);
    const nodeStart = cpuOf([process.execPath, '-e', ''], withoutCerts);
    const certs = cpuOf([process.execPath, '-e', ''], withCerts);
    const bundle = cpuOf([launcher, 'jobid'], { ...withCerts, TARAS_JOB_ID: '1' });
    const submit = cpuOf([launcher, 'submit', '--controller', controller.socket, 'tiny.sh'], withCerts);
    const queue = cpuOf([launcher, 'queue', '--controller', controller.socket], withCerts);
    const cpu = (value: number) => `${round(value, 0)} ms CPU`;
    rows.push({ what: 'one `taras submit` (bin/taras)', measured: `${cpu(submit.cpuMs)}, ${round(submit.wallMs, 0)} ms`, target: '<= 25 ms CPU, 40 ms', met: submit.cpuMs <= 25 && submit.wallMs <= 40, note: `median of ${STEP_RUNS}, /usr/bin/time` });
    rows.push({ what: '  Node start (`node -e ""`)', measured: cpu(nodeStart.cpuMs), target: '-', note: `${round(nodeStart.wallMs, 0)} ms wall; the floor of any Node command` });
    rows.push({ what: '  CA certificates (NODE_EXTRA_CA_CERTS), if Node loaded them', measured: cpu(certs.cpuMs - nodeStart.cpuMs), target: '-', note: 'bin/taras starts Node without them' });
    rows.push({ what: '  loading the CLI bundle (`taras jobid`, less Node start)', measured: cpu(bundle.cpuMs - nodeStart.cpuMs), target: '-', note: 'with the code cache' });
    rows.push({ what: '  identity, request, answer, output (submit less jobid)', measured: cpu(submit.cpuMs - bundle.cpuMs), target: '-', note: 'the Unix socket: the kernel vouches for the caller' });
    rows.push({ what: 'one `taras queue` (bin/taras)', measured: `${cpu(queue.cpuMs)}, ${round(queue.wallMs, 0)} ms`, target: '<= 25 ms CPU, 40 ms', met: queue.cpuMs <= 25 && queue.wallMs <= 40, note: `median of ${STEP_RUNS}; the loops' jobs pending (no agent)` });
  } finally {
    await stop(controller.child);
  }
}

const LEAD_PAIRS = 4;
/** The other checkout the lead part compares with ('': none). */
const against = process.env.TARAS_BENCH_AGAINST ?? '';

/** A lead run's controller stopped and its data removed: each run starts from an empty disk. */
async function stopAndRemove(controller: BenchController): Promise<void> {
  await stop(controller.child);
  rmSync(controller.data, { recursive: true, force: true });
}

/**
 * Issue 9's "verified identity must not cost the submission path its lead", as a comparison: the same
 * storm (8 undici clients, one request in flight each, the same body, 8,000 of warm-up, then 4 rounds of
 * 5,000) against a controller of another built checkout (TARAS_BENCH_AGAINST, say the code before issue
 * 9) and against this one, in turn, LEAD_PAIRS times: the machine's speed moves by half from one minute
 * to the next, and only runs taken in turn compare. No agent: every job stays pending in both. Then one
 * `taras submit` of each, in turn (submitLead).
 */
async function submissionLead(rows: Row[]): Promise<void> {
  const other = resolve(against);
  const otherEntry = join(other, 'bin/taras.js');
  const identity = await import(pathToFileURL(join(other, 'dist/src/net/identity.js')).href) as IdentityModule;
  const start = (side: 'this' | 'other', name: string): Promise<BenchController> =>
    startController(name, side === 'this' ? undefined : { entry: otherEntry, identity });
  const rates = { this: [] as number[], other: [] as number[] };
  const ratios: number[] = [];
  for (let pair = 0; pair < LEAD_PAIRS; pair++) {
    const mean: Record<'this' | 'other', number> = { this: 0, other: 0 };
    // Each side first in turn: what a run leaves behind (the disk's writeback) falls on both alike.
    for (const side of pair % 2 === 0 ? ['other', 'this'] as const : ['this', 'other'] as const) {
      say(`pair ${pair + 1} of ${LEAD_PAIRS}: ${side === 'this' ? 'this checkout' : other}...`);
      const controller = await start(side, `lead-${side}-${pair}`);
      try {
        await submitStorm(controller, CONCURRENT_CLIENTS, CONCURRENT_CLIENTS * WARMUP_JOBS_PER_CLIENT);
        const roundRates = await stormRounds(controller);
        rates[side].push(...roundRates);
        mean[side] = pooledRate(roundRates);
      } finally {
        await stopAndRemove(controller);
      }
    }
    ratios.push(mean.this / mean.other);
  }
  const submits = await submitLead(other, otherEntry, start);
  const range = (values: number[]) => `${round(Math.min(...values), 0)} to ${round(Math.max(...values), 0)}`;
  const met = rates.this.filter((rate) => rate >= 4000).length;
  rows.push({
    what: `durable submissions, ${CONCURRENT_CLIENTS} API clients, this code`, measured: `${round(median(rates.this), 0)} jobs/s`, target: '>= 4,000 jobs/s', met: median(rates.this) >= 4000,
    note: `median of ${rates.this.length} rounds of ${(CONCURRENT_JOBS / CONCURRENT_ROUNDS).toLocaleString('en')} (${range(rates.this)}); ${met} of them >= 4,000`,
  });
  rows.push({
    what: `  the other checkout, in turn`, measured: `${round(median(rates.other), 0)} jobs/s`, target: '-',
    note: `${other}: ${range(rates.other)}; ${rates.other.filter((rate) => rate >= 4000).length} rounds >= 4,000`,
  });
  rows.push({
    what: '  this code / the other, pair by pair', measured: `${round(median(ratios), 2)}x`, target: '>= 1.00x', met: median(ratios) >= 1,
    note: `${LEAD_PAIRS} pairs: ${ratios.map((ratio) => round(ratio, 2)).join(', ')}`,
  });
  const under = (samples: number[]) => samples.filter((sample) => sample < 120).length;
  rows.push({
    what: 'one `taras submit` through the socket, this code', measured: ms(median(submits.this)), target: '< 120 ms', met: median(submits.this) < 120,
    note: `node bin/taras.js, median of ${submits.this.length} (min ${ms(Math.min(...submits.this))}); ${under(submits.this)} under 120 ms`,
  });
  rows.push({
    what: '  the other checkout, in turn', measured: ms(median(submits.other)), target: '-',
    note: `min ${ms(Math.min(...submits.other))}; ${under(submits.other)} under 120 ms`,
  });
  rows.push({
    what: '  the other / this code, run by run', measured: `${round(median(submits.ratios), 2)}x`, target: '>= 1.00x', met: median(submits.ratios) >= 1,
    note: `${submits.ratios.length} pairs, each side first in every other pair`,
  });
}

const LEAD_SUBMIT_RUNS = 20;

/**
 * One `taras submit` through the Unix socket, this checkout's and the other's, in turn: each with a
 * controller of its own (no agent: the jobs stay pending), started the same way (`node bin/taras.js`, without
 * NODE_EXTRA_CA_CERTS: the code before issue 9 has no bin/taras launcher), each with its own code cache,
 * written by two runs first. The socket is named by its bare path, which both checkouts read.
 */
async function submitLead(other: string, otherEntry: string, start: (side: 'this' | 'other', name: string) => Promise<BenchController>) {
  writeFileSync(join(work, 'tiny.sh'), '#!/bin/sh\n#TARAS --time 1\ntrue\n');
  const env = environmentWithoutCerts();
  const controllers = { this: await start('this', 'lead-submit-this'), other: await start('other', 'lead-submit-other') };
  const entries = { this: taras, other: otherEntry };
  const once = (side: 'this' | 'other') => timeNode(
    [entries[side], 'submit', '--controller', join(controllers[side].data, 'taras.sock'), '-t', '1', 'tiny.sh'],
    { ...env, XDG_CACHE_HOME: join(work, `lead-cache-${side}`) });
  try {
    say(`one taras submit, this checkout and ${other} in turn, ${LEAD_SUBMIT_RUNS} runs each...`);
    for (const side of ['this', 'other'] as const) for (let run = 0; run < 2; run++) once(side);
    const times = { this: [] as number[], other: [] as number[] };
    const ratios: number[] = [];
    for (let run = 0; run < LEAD_SUBMIT_RUNS; run++) {
      for (const side of run % 2 === 0 ? ['other', 'this'] as const : ['this', 'other'] as const) times[side].push(once(side));
      ratios.push(times.other[run] / times.this[run]);
    }
    return { ...times, ratios };
  } finally {
    for (const controller of Object.values(controllers)) await stopAndRemove(controller);
  }
}

/** Each part by name; `node dist/bench/cluster.js pass latency` runs only those. */
const parts: Record<string, (rows: Row[]) => void | Promise<void>> = {
  submit: submissions, queue: concurrentAndQueue, latency: startLatency, pass: schedulingPass, status: bigCluster, loops: cliLoops,
  stepio: stepOutput, lead: submissionLead,
};

async function main(): Promise<void> {
  const rows: Row[] = [];
  const chosen = process.argv.slice(2);
  const unknown = chosen.filter((name) => !(name in parts));
  if (unknown.length > 0) {
    say(`error: no benchmark part ${unknown.join(', ')}: choose from ${Object.keys(parts).join(', ')} (none: all)`);
    removeWork();
    process.exit(2);
  }
  if (chosen.includes('lead') && against === '') {
    say('error: the lead part compares this code with another built checkout; name it in TARAS_BENCH_AGAINST, e.g.\n'
      + '  git worktree add ../taras-before 737eabf && (cd ../taras-before && npm ci && npm run build)\n'
      + '  TARAS_BENCH_AGAINST=../taras-before node dist/bench/cluster.js lead');
    removeWork();
    process.exit(2);
  }
  const loadBefore = loadavg()[0];
  try {
    for (const [name, run] of Object.entries(parts)) {
      // All parts but `lead`, which needs another checkout to compare with (run when named, or when one is given).
      const wanted = chosen.length === 0 ? name !== 'lead' || against !== '' : chosen.includes(name);
      if (wanted) await run(rows);
    }
  } catch (error) {
    if (abandoning) await new Promise(() => {}); // abandon() cleans up and exits
    throw error;
  } finally {
    await stopAll();
    removeWork();
    clearTimeout(deadline);
  }
  const table = renderTable(
    ['benchmark', 'measured', 'target', 'met', 'note'],
    rows.map((r) => [r.what, r.measured, r.target, r.met === undefined ? '' : r.met ? 'yes' : 'NO', r.note ?? '']),
    new Set([1, 2]),
  );
  process.stdout.write(`${table}\n`);
  // Clients, controller and agent share this machine's cores: a busy machine shows in every figure.
  process.stdout.write(`load average (1 min) ${round(loadBefore, 2)} before, ${round(loadavg()[0], 2)} after, on ${availableParallelism()} cores\n`);
}

await main();
