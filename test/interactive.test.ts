// Interactive jobs as a user runs them: `taras up --config` (a real controller
// and agent), `taras run` / `taras attach` as real processes, driven through a
// real terminal (node-pty) where the test is about terminals. Every process
// started here is stopped by its PID; the Unix user made here is removed.

import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { terminalSize } from '../src/cli/interactive.js';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { IPty } from 'node-pty';
import type { ApiJob } from '../src/api/types.js';
import { ApiRequestError, createApiClient, openWebSocket, type ApiClient } from '../src/net/client.js';
import { runAs } from './auth-helpers.js';
import { killJobProcesses, waitForOutput } from './daemon-process.js';
import { killTerminals, onTerminal as startOnTerminal } from './terminal.js';
import { createTestUser, notRootReason, removeTestUsers } from './unix-users.js';
import { eventually } from './poll.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const taras = join(root, 'bin/taras.js');
const pty = createRequire(import.meta.url)('node-pty') as typeof import('node-pty');
const work = mkdtempSync(join(tmpdir(), 'taras-interactive-'));
chmodSync(work, 0o711); // another user's CLI reaches the controller's socket in here
const started: ChildProcess[] = [];
const terminals: IPty[] = [];
const dataDirs: string[] = [];

after(async () => {
  killTerminals(terminals);
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  killJobProcesses(dataDirs.map((data) => join(data, 'agent')));
  removeTestUsers();
  await sleep(200);
  rmSync(work, { recursive: true, force: true });
});

interface Cluster {
  readonly data: string;
  readonly socket: string;
  readonly agentUrl: string;
  readonly api: ApiClient;
  /** What the controller wrote to standard error so far (with `taras up`, the agent's log too). */
  readonly log: () => string;
}

/** `taras up --config` with these [cluster] lines, on two nodes of two CPUs; resolves once both nodes are idle. */
async function startCluster(name: string, clusterLines: string): Promise<Cluster> {
  const data = join(work, name);
  dataDirs.push(data);
  const file = join(work, `${name}.toml`);
  writeFileSync(file, `[cluster]\nname = "${name}"\npolicy = "easy"\n${clusterLines}\n\n[[nodes]]\nnames = "n[1-2]"\ncpus = 2\nmemory = "2G"\n\n[[partitions]]\nname = "main"\nnodes = "n[1-2]"\ndefault = true\ndefault_time = "10m"\n`);
  const up = spawn(process.execPath, [taras, 'up', '--config', file, '--port', '0', '--data', data], { cwd: work, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(up);
  let log = '';
  up.stderr!.on('data', (chunk: Buffer) => (log += chunk.toString()));
  await waitForOutput(up, /Ctrl-C stops/, 20_000);
  const agentUrl = /agent: agent for \d+ node\(s\) listening on (http:\/\/[\d.:]+)/.exec(log)?.[1];
  assert.ok(agentUrl, log);
  const socket = join(data, 'taras.sock');
  const api = createApiClient({ socketPath: socket }, { timeoutMs: 10_000 });
  for (let tries = 0; ; tries++) {
    const nodes = await api.get<{ state: string }[]>('/nodes');
    if (nodes.length === 2 && nodes.every((node) => node.state === 'idle')) break;
    assert.ok(tries < 100, `the agent did not register: ${JSON.stringify(nodes)}\n${log}`);
    await sleep(100);
  }
  return { data, socket, agentUrl, api, log: () => log };
}

/**
 * A CLI command on a real terminal (node-pty), with its output so far and its
 * exit code. The job's terminal turns \n into \r\n and the CLI's (raw mode
 * keeps output processing, as libuv sets it) adds another \r: lines end \r\r\n.
 */
const onTerminal = (cluster: Cluster, args: string[], size = { cols: 100, rows: 30 }) => startOnTerminal(process.execPath, [taras, ...args], {
  ...size, cwd: work, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/root', TERM: 'xterm', TARAS_CONTROLLER: `unix:${cluster.socket}`, PS1: '$ ' },
}, terminals);

/** A CLI command with plain pipes: stdin given (then closed; 'open': left to the caller), stdout and stderr apart, and its exit code. */
function withPipes(cluster: Cluster, args: string[], stdin: string | null | 'open' = null) {
  const child = spawn(process.execPath, [taras, ...args], { cwd: work, env: { ...process.env, TARAS_CONTROLLER: `unix:${cluster.socket}` }, stdio: ['pipe', 'pipe', 'pipe'] });
  started.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  if (stdin === null) child.stdin!.end();
  else if (stdin !== 'open') child.stdin!.end(stdin);
  const exited = new Promise<number | null>((resolveExit) => child.on('close', (code) => resolveExit(code)));
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

async function latestJob(api: ApiClient): Promise<ApiJob> {
  const page = await api.get<{ jobs: ApiJob[] }>('/jobs');
  return page.jobs[page.jobs.length - 1];
}

async function waitForState(api: ApiClient, id: number, states: readonly string[], ms: number): Promise<ApiJob> {
  let job: ApiJob | undefined;
  return eventually(() => `job ${id} to be ${states.join('/')}: it is ${job?.state} (${job?.reason})`, async () => {
    job = await api.get<ApiJob>(`/jobs/${id}`);
    return states.includes(job.state) ? job : undefined;
  }, ms);
}

describe('the terminal size taras run sends', () => {
  it('is the terminal\'s, or 80x24 where it says 0 or nothing (under `script`: red team, spec.interactive.cols 0 was refused)', () => {
    assert.deepEqual(terminalSize({ columns: 132, rows: 43 }), { cols: 132, rows: 43 });
    assert.deepEqual(terminalSize({ columns: 0, rows: 0 }), { cols: 80, rows: 24 });
    assert.deepEqual(terminalSize({}), { cols: 80, rows: 24 });
  });
});

describe('interactive jobs (taras run / attach) on a real controller and agent', () => {
  let cluster: Cluster;
  before(async () => {
    // A grace of 6 s: `taras attach` after a killed client must reattach within it, Node's start included.
    cluster = await startCluster('ia', 'interactive_grace = "6s"\ninteractive_max_time = "2m"\ninteractive_warn = "115s"');
  });

  it('a terminal on the node: output, window size, Ctrl-C, exit code, type interactive', { timeout: 60_000 }, async () => {
    const run = onTerminal(cluster, ['run', '-t', '5', '--', 'sh', '-i']);
    await run.waitFor(/\$ $/);
    run.terminal.write('stty size\r');
    await run.waitFor(/\r+\n30 100\r+\n/);
    const job = await latestJob(cluster.api);
    assert.equal(job.type, 'interactive');
    assert.equal(job.state, 'RUNNING');
    assert.equal(job.stdoutPath, null);

    run.terminal.resize(120, 40); // SIGWINCH here; the size goes to the job's terminal
    await sleep(300);
    let mark = run.output().length;
    run.terminal.write('stty size\r');
    await run.waitFor(/\r+\n40 120\r+\n/, 10_000, mark);

    // Ctrl-C is a byte: the job's terminal turns it into SIGINT for the foreground command, not for the CLI.
    mark = run.output().length;
    run.terminal.write('sleep 30; echo slept\r');
    await sleep(500);
    const interruptedAt = Date.now();
    run.terminal.write('\x03');
    await run.waitFor(/\$ $/, 5_000, mark + 10);
    assert.ok(Date.now() - interruptedAt < 5_000);
    assert.doesNotMatch(run.output().slice(mark), /\nslept/);

    run.terminal.write('exit 42\r');
    assert.equal(await run.exited, 42);
    const ended = await waitForState(cluster.api, job.id, ['FAILED'], 10_000);
    assert.equal(ended.exitCode, 42);
  });

  it('taras alloc: the user\'s login shell (from passwd) on the first allocated node, its exit code', { timeout: 30_000 }, async () => {
    const loginShell = readFileSync('/etc/passwd', 'utf8').split('\n').find((line) => line.startsWith('root:'))!.split(':')[6];
    const alloc = onTerminal(cluster, ['alloc', '-t', '2']);
    await sleep(1000);
    alloc.terminal.write('echo "shell=$(readlink /proc/$$/exe) node=$TARAS_NODELIST"\r');
    await alloc.waitFor(/shell=\/\S+ node=n[12]\r/);
    assert.equal(/shell=(\/\S+) node=/.exec(alloc.output())?.[1], realpathSync(loginShell));
    alloc.terminal.write('exit 3\r');
    assert.equal(await alloc.exited, 3);
  });

  it('the terminal is restored after the job ends and when the CLI is killed with SIGTERM', { timeout: 40_000 }, async () => {
    const pidFile = join(work, 'cli.pid');
    const inner = `echo $$ > ${pidFile}; exec ${process.execPath} ${taras} run -t 2 -- sleep 30`;
    const shell = pty.spawn('/bin/sh', ['-c', `${process.execPath} ${taras} run -t 2 -- sh -c 'exit 4'; echo rc=$?; stty -a; sh -c '${inner}'; echo rc=$?; stty -a`], {
      cols: 200, rows: 30, cwd: work, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/root', TERM: 'xterm', TARAS_CONTROLLER: `unix:${cluster.socket}` },
    });
    terminals.push(shell);
    let output = '';
    shell.onData((data) => (output += data));
    const done = new Promise<number>((resolveExit) => shell.onExit(({ exitCode }) => resolveExit(exitCode)));
    await eventually(() => `the first job's end and the second's pid; the terminal shows: ${output}`,
      () => /rc=4/.test(output) && /\d/.test(readFileSync(pidFile, { encoding: 'utf8', flag: 'a+' })), 20_000);
    await sleep(2000); // the second job runs, its terminal in raw mode
    process.kill(Number(readFileSync(pidFile, 'utf8')), 'SIGTERM');
    assert.equal(await done, 0, output);
    const [afterExit, afterKill] = output.split(/rc=\d+/).slice(1);
    assert.match(output, /rc=4[\s\S]*rc=143/);
    for (const modes of [afterExit, afterKill]) {
      assert.match(modes, /(^|\s)icanon(\s|;|$)/m, modes);
      assert.match(modes, /(^|\s)echo(\s|;|$)/m, modes);
    }
    // The killed CLI's job would wait out interactive_grace detached, holding its node: the next tests find it free.
    const left = await latestJob(cluster.api);
    await cluster.api.delete(`/jobs/${left.id}`);
    await waitForState(cluster.api, left.id, ['CANCELLED'], 10_000);
  });

  it('plain pipes when stdin is not a terminal: echo data | taras run -- wc -c prints 5; stdout and stderr apart', { timeout: 30_000 }, async () => {
    const count = withPipes(cluster, ['run', '--', 'wc', '-c'], 'data\n');
    assert.equal(await count.exited, 0, count.stderr());
    assert.equal(count.stdout().trim(), '5');

    const apart = withPipes(cluster, ['run', '-t', '2', '--', 'sh', '-c', 'echo out; echo err >&2; exit 7']);
    assert.equal(await apart.exited, 7);
    assert.equal(apart.stdout(), 'out\n');
    assert.equal(apart.stderr(), 'err\n');
  });

  it('taras attach after the client was killed (kill -9) gets the output produced meanwhile and the exit code', { timeout: 60_000 }, async () => {
    const run = onTerminal(cluster, ['run', '-t', '5', '--', 'sh', '-c', 'echo first; sleep 2; echo second-$((20+1)); sleep 4; echo third-$((30+1)); exit 5']);
    await run.waitFor(/first/);
    const job = await latestJob(cluster.api);
    process.kill(run.terminal.pid, 'SIGKILL');
    await run.exited;
    await sleep(2500); // "second" is printed while no client is attached (2 s after "first"; the grace is 6 s)
    assert.doesNotMatch(run.output(), /second-21/);
    const again = onTerminal(cluster, ['attach', String(job.id)]);
    assert.equal(await again.exited, 5, again.output());
    assert.match(again.output(), /second-21\r+\n/);
    assert.match(again.output(), /third-31\r+\n/);
    assert.equal((await waitForState(cluster.api, job.id, ['FAILED'], 10_000)).exitCode, 5);
    const show = withPipes(cluster, ['show', String(job.id)]);
    assert.equal(await show.exited, 0, show.stderr());
    assert.match(show.stdout(), new RegExp(`Output: +\\(interactive: the terminal of taras run; taras attach ${job.id}\\)`));
  });

  it('a session with no client past interactive_grace ends CANCELLED with the reason', { timeout: 30_000 }, async () => {
    const run = withPipes(cluster, ['run', '-t', '5', '--', 'sh', '-c', 'echo started; sleep 60']);
    await waitForOutput(run.child, /started/, 10_000);
    const job = await latestJob(cluster.api);
    run.child.kill('SIGKILL');
    const ended = await waitForState(cluster.api, job.id, ['CANCELLED'], 20_000);
    assert.match(ended.reason ?? '', /no client attached to the interactive session for 6 s \(interactive_grace\)/);
    const events = (await cluster.api.get<{ events: { type: string; detail: Record<string, unknown> }[] }>(`/jobs/${job.id}`)).events;
    assert.ok(events.some((event) => event.type === 'ended'), JSON.stringify(events));
  });

  it('interactive_max_time caps the limit and the warning line appears interactive_warn before the end', { timeout: 30_000 }, async () => {
    const run = withPipes(cluster, ['run', '-t', '10', '--', 'sh', '-c', 'sleep 7; echo done']);
    await waitForOutput(run.child, /done/, 20_000);
    assert.equal(await run.exited, 0);
    const job = await latestJob(cluster.api);
    assert.equal(job.timeLimitSeconds, 120); // 10 min asked, interactive_max_time 2 min
    assert.match(run.stderr(), new RegExp(`taras: job ${job.id} reaches its time limit in 115 s \\(at \\d\\d:\\d\\d:\\d\\d UTC\\) and will be ended then`));
  });

  it('only the owner attaches: another Unix user is refused; an unsigned or forged stream request to the agent is refused', { skip: notRootReason, timeout: 60_000 }, async () => {
    const run = withPipes(cluster, ['run', '-t', '5', '--', 'sh', '-c', 'echo up; sleep 30']);
    await waitForOutput(run.child, /up/, 10_000);
    const job = await latestJob(cluster.api);
    const mallory = createTestUser('att');
    // The user's own interactive job runs as them (the exec helper's privilege drop), on a terminal too.
    const asUser = pty.spawn('setpriv', ['--reuid', mallory.name, '--regid', mallory.name, '--init-groups', process.execPath, taras, 'run', '-t', '2', '--', 'sh', '-c', 'echo "who=$(id -un) tty=$(tty)"'], {
      cols: 80, rows: 24, cwd: mallory.home, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: mallory.home, TERM: 'xterm', TARAS_CONTROLLER: `unix:${cluster.socket}` },
    });
    terminals.push(asUser);
    let userOutput = '';
    asUser.onData((data) => (userOutput += data));
    assert.equal(await new Promise<number>((resolveExit) => asUser.onExit(({ exitCode }) => resolveExit(exitCode))), 0, userOutput);
    assert.match(userOutput, new RegExp(`who=${mallory.name} tty=/dev/pts/\\d+`));

    const refused = await runAs(mallory, [taras, 'attach', String(job.id)], { env: { TARAS_CONTROLLER: `unix:${cluster.socket}` } });
    assert.equal(refused.status, 1, refused.stdout + refused.stderr);
    assert.match(refused.stderr, new RegExp(`job ${job.id} belongs to root: only its owner may attach to it`));

    const unsigned = await openWebSocket({ baseUrl: cluster.agentUrl }, `/jobs/${job.id}/stream`, { timeoutMs: 5000 }).then(() => null, (error: unknown) => error);
    assert.ok(unsigned instanceof ApiRequestError, String(unsigned));
    assert.equal(unsigned.status, 401);
    assert.match(unsigned.error, /missing signature/);
    const forged = await openWebSocket({ baseUrl: cluster.agentUrl }, `/jobs/${job.id}/stream`, { timeoutMs: 5000, clusterKey: Buffer.from('f'.repeat(64)), destination: 'anything' })
      .then(() => null, (error: unknown) => error);
    assert.ok(forged instanceof ApiRequestError, String(forged));
    assert.equal(forged.status, 401);
    assert.match(forged.error, /bad signature/);
    run.child.kill('SIGKILL');
    await cluster.api.delete(`/jobs/${job.id}`);
    assert.ok(readFileSync(join(cluster.data, 'cluster.key'), 'utf8').length >= 32);
  });
});

/** `taras submit` of a job that sleeps, holding `nodes` nodes of 2 CPUs each; resolves with its id once it runs (or, `pending`, once queued). */
async function holdNodes(cluster: Cluster, nodes: number, seconds: number, pending = false): Promise<number> {
  const script = join(work, `sleep-${seconds}.sh`);
  writeFileSync(script, `#!/bin/sh\nsleep ${seconds}\n`);
  const submit = withPipes(cluster, ['submit', '--json', '-N', String(nodes), '-c', '2', '-t', '1', script]);
  assert.equal(await submit.exited, 0, submit.stderr());
  const { id } = JSON.parse(submit.stdout()) as { id: number };
  await waitForState(cluster.api, id, [pending ? 'PENDING' : 'RUNNING'], 10_000);
  return id;
}

describe('interactive = "immediate" (the default): at once or not at all, ahead of the queue', () => {
  let cluster: Cluster;
  before(async () => {
    cluster = await startCluster('im', 'interactive_grace = "3s"');
  });

  it('refuses with the reason when no nodes are free, and the job ends CANCELLED with it', { timeout: 30_000 }, async () => {
    const holder = await holdNodes(cluster, 2, 30);
    const run = withPipes(cluster, ['run', '--', 'echo', 'hi']);
    assert.equal(await run.exited, 1);
    assert.equal(run.stdout(), '');
    assert.match(run.stderr(), /did not start: CANCELLED \(no nodes free for it now \(interactive = "immediate": an interactive job starts at once or not at all\)/);
    const job = await latestJob(cluster.api);
    assert.equal(job.type, 'interactive');
    assert.equal(job.state, 'CANCELLED');
    assert.match(job.reason ?? '', /interactive = "immediate"/);
    await cluster.api.delete(`/jobs/${holder}`);
    await waitForState(cluster.api, holder, ['CANCELLED'], 40_000);
  });

  it('frees a node by preempting the batch job furthest into its limit, which checkpoints, waits and resumes from its checkpoint afterwards', { timeout: 90_000 }, async () => {
    // Two checkpointing jobs of 10 s of steps, one per node: A (limit 1 min) starts first, B (limit 10 min) second.
    // Relative to their limits A has run much longer: A is the victim, B is never touched.
    const ckpt = join(work, 'ckpt');
    mkdirSync(ckpt, { recursive: true });
    const submitCheckpointing = async (name: string, limit: string): Promise<number> => {
      const submit = spawn(process.execPath, [taras, 'submit', '-c', '2', '-t', limit, '--checkpoint-duration', '0:03', '--job-name', name, '--json',
        join(root, 'test/fixtures/checkpointer.sh')], { cwd: ckpt, env: { ...process.env, TARAS_CONTROLLER: `unix:${cluster.socket}`, STEPS: '100', CKPT_DIR: ckpt } });
      let out = '';
      submit.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
      await new Promise((resolveExit) => submit.on('close', resolveExit));
      const { id } = JSON.parse(out) as { id: number };
      await waitForState(cluster.api, id, ['RUNNING'], 10_000);
      return id;
    };
    const a = await submitCheckpointing('A', '1');
    await sleep(1500);
    const b = await submitCheckpointing('B', '10');
    await sleep(1000);
    const run = withPipes(cluster, ['run', '-c', '2', '--', 'echo', 'interactive']);
    assert.equal(await run.exited, 0, run.stderr());
    assert.equal(run.stdout(), 'interactive\n');
    assert.match(run.stderr(), new RegExp(`waits: freeing nodes for it: job ${a} \\(root\\) checkpoints and leaves within 3 s`));
    const afterRun = await cluster.api.get<ApiJob & { restarts?: number }>(`/jobs/${b}`);
    assert.equal(afterRun.state, 'RUNNING', 'B is not the victim');
    assert.equal(afterRun.restarts, 0);
    // A went back to the queue, restarts from its checkpoint (not from the start) and completes; its output is appended.
    const done = await waitForState(cluster.api, a, ['COMPLETED'], 40_000);
    assert.equal((done as ApiJob & { restarts?: number }).restarts, 1);
    const output = readFileSync(join(ckpt, `taras-${a}.out`), 'utf8');
    assert.match(output, /^fresh start \(run 0\)\n/);
    const resumed = /restart from (\d+) \(run 1\)/.exec(output);
    assert.ok(resumed !== null && Number(resumed[1]) > 10, `A resumed from its checkpoint:\n${output}`);
    assert.match(output, /done at 100\n$/);
    await waitForState(cluster.api, b, ['COMPLETED'], 40_000);
  });

  it('taras submit --immediate (sbatch\'s): a batch job that cannot start now fails (exit 1, CANCELLED with the reason) and preempts nothing; one that can starts', { timeout: 40_000 }, async () => {
    const holder = await holdNodes(cluster, 2, 30);
    writeFileSync(join(work, 'now.sh'), '#!/bin/sh\nsleep 1\n');
    const refused = withPipes(cluster, ['submit', '--immediate', '-c', '2', '-t', '1', join(work, 'now.sh')]);
    assert.equal(await refused.exited, 1);
    const job = await latestJob(cluster.api);
    assert.match(refused.stderr(), new RegExp(`job ${job.id} did not start: CANCELLED \\(not started within 0 s \\(--immediate=0\\)`));
    assert.equal(job.state, 'CANCELLED');
    // Logged as what it is (it was "job N (interactive): not started...").
    assert.match(cluster.log(), new RegExp(`Z job ${job.id} \\(batch\\): not started within 0 s \\(--immediate=0\\); try again later or ask for fewer resources\n`));
    assert.equal((await cluster.api.get<ApiJob>(`/jobs/${holder}`)).state, 'RUNNING', 'a batch job preempts nothing');
    await cluster.api.delete(`/jobs/${holder}`);
    await waitForState(cluster.api, holder, ['CANCELLED'], 40_000);
    const accepted = withPipes(cluster, ['submit', '--immediate=5', '-c', '2', '-t', '1', join(work, 'now.sh')]);
    assert.equal(await accepted.exited, 0, accepted.stderr());
    assert.match(accepted.stdout(), /^Submitted batch job \d+\n$/);
    await waitForState(cluster.api, Number(/\d+/.exec(accepted.stdout())![0]), ['COMPLETED'], 20_000);
  });

  it('goes ahead of pending batch jobs (after the running ones): starts on a free node a waiting batch job could not let it backfill', { timeout: 60_000 }, async () => {
    const running = await holdNodes(cluster, 1, 30);
    const waiting = await holdNodes(cluster, 2, 30, true); // needs both nodes: waits for the first one's end
    const run = withPipes(cluster, ['run', '-t', '5', '--', 'echo', 'front']);
    assert.equal(await run.exited, 0, run.stderr());
    assert.equal(run.stdout(), 'front\n');
    assert.equal((await cluster.api.get<ApiJob>(`/jobs/${waiting}`)).state, 'PENDING');
    await cluster.api.delete(`/jobs/${waiting}`);
    await cluster.api.delete(`/jobs/${running}`);
    await waitForState(cluster.api, running, ['CANCELLED'], 40_000);
  });
});

describe('interactive = "queued": waits its turn, showing its planned start', () => {
  let cluster: Cluster;
  before(async () => {
    cluster = await startCluster('iq', 'interactive = "queued"\ninteractive_grace = "3s"\ninteractive_idle = "2s"');
  });

  it('shows the planned start while it waits, then runs', { timeout: 40_000 }, async () => {
    const holder = await holdNodes(cluster, 2, 8); // long enough for the run's CLI to start and queue behind it
    const run = withPipes(cluster, ['run', '--', 'echo', 'after']);
    assert.equal(await run.exited, 0, run.stderr());
    assert.equal(run.stdout(), 'after\n');
    const id = (await latestJob(cluster.api)).id;
    assert.match(run.stderr(), new RegExp(`taras: job ${id} queued: planned start \\d{1,2}:\\d\\d:\\d\\d`));
    assert.equal((await cluster.api.get<ApiJob>(`/jobs/${holder}`)).state, 'COMPLETED');
  });

  it('Ctrl-C while it waits cancels it; --immediate=1 fails it when it has not started within 1 s', { timeout: 40_000 }, async () => {
    const holder = await holdNodes(cluster, 2, 30);
    const run = withPipes(cluster, ['run', '--', 'echo', 'never']);
    await new Promise<void>((resolveQueued) => run.child.stderr!.on('data', () => {
      if (/queued/.test(run.stderr())) resolveQueued();
    }));
    const id = (await latestJob(cluster.api)).id;
    run.child.kill('SIGINT');
    assert.equal(await run.exited, 130);
    assert.equal(run.stdout(), '');
    const cancelled = await waitForState(cluster.api, id, ['CANCELLED'], 5_000);
    assert.equal(cancelled.reason, 'cancelled by root');

    const hurried = withPipes(cluster, ['run', '--immediate=1', '--', 'echo', 'never']);
    assert.equal(await hurried.exited, 1);
    assert.match(hurried.stderr(), /not started within 1 s \(--immediate=1\)/);
    await cluster.api.delete(`/jobs/${holder}`);
    await waitForState(cluster.api, holder, ['CANCELLED'], 40_000);
  });

  it('a session idle (no input, no output) past interactive_idle ends TIMEOUT with the reason', { timeout: 30_000 }, async () => {
    const run = withPipes(cluster, ['run', '--', 'sleep', '30']);
    assert.equal(await run.exited, 129); // SIGHUP ended it: 128 + 1
    const job = await waitForState(cluster.api, (await latestJob(cluster.api)).id, ['TIMEOUT'], 5_000);
    assert.match(job.reason ?? '', /interactive session idle \(no input and no output\) for 2 s \(interactive_idle\)/);
    assert.match(run.stderr(), new RegExp(`job ${job.id} ended: TIMEOUT \\(interactive session idle`));
  });
});

/** A controller and an agent in processes of their own (the agent can be killed and started again), on two nodes. */
async function startSplitCluster(name: string): Promise<{ cluster: Cluster; agent: ChildProcess; startAgent: () => Promise<ChildProcess> }> {
  const data = join(work, name);
  dataDirs.push(data);
  const file = join(work, `${name}.toml`);
  writeFileSync(file, `[cluster]\nname = "${name}"\ninteractive_grace = "60s"\n\n[[nodes]]\nnames = "n[1-2]"\ncpus = 2\nmemory = "2G"\n\n`
    + '[[partitions]]\nname = "main"\nnodes = "n[1-2]"\ndefault = true\ndefault_time = "10m"\n');
  const controller = spawn(process.execPath, [taras, 'controller', '--config', file, '--data', data, '--port', '0'], { cwd: work, stdio: ['ignore', 'ignore', 'pipe'] });
  started.push(controller);
  let controllerLog = '';
  const url = await new Promise<string>((resolveUrl, reject) => {
    const timer = setTimeout(() => reject(new Error(`controller not ready:\n${controllerLog}`)), 15_000);
    controller.stderr!.on('data', (chunk: Buffer) => {
      controllerLog += chunk.toString();
      const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(controllerLog);
      if (match) {
        clearTimeout(timer);
        resolveUrl(match[1]);
      }
    });
  });
  const startAgent = async (): Promise<ChildProcess> => {
    const agent = spawn(process.execPath, [taras, 'agent', '--controller', url, '--nodes', 'n[1-2]', '--data', join(data, 'agent'), '--key', join(data, 'cluster.key')],
      { cwd: work, stdio: ['ignore', 'ignore', 'pipe'] });
    started.push(agent);
    let log = '';
    await new Promise<void>((resolveReady, reject) => {
      const timer = setTimeout(() => reject(new Error(`agent not ready:\n${log}`)), 15_000);
      agent.stderr!.on('data', (chunk: Buffer) => {
        log += chunk.toString();
        if (/registered 2 node/.test(log)) {
          clearTimeout(timer);
          resolveReady();
        }
      });
    });
    return agent;
  };
  const agent = await startAgent();
  const cluster: Cluster = { data, socket: join(data, 'taras.sock'), agentUrl: '', api: createApiClient({ socketPath: join(data, 'taras.sock') }, { timeoutMs: 10_000 }), log: () => controllerLog };
  for (let tries = 0; ; tries++) {
    const nodes = await cluster.api.get<{ state: string }[]>('/nodes');
    if (nodes.every((node) => node.state === 'idle')) break;
    assert.ok(tries < 100, JSON.stringify(nodes));
    await sleep(100);
  }
  return { cluster, agent, startAgent };
}

describe('the session lives in the job\'s supervisor: an agent restart does not end it', () => {
  it('kill -9 of the agent: taras run reconnects once a new agent is up, and the job goes on to its exit code', { timeout: 90_000 }, async () => {
    const { cluster, agent, startAgent } = await startSplitCluster('restart');
    const run = onTerminal(cluster, ['run', '-t', '5', '--', 'sh', '-i']);
    await run.waitFor(/\$ $/);
    run.terminal.write('echo before-$((1+2))\r');
    await run.waitFor(/before-3/);
    agent.kill('SIGKILL');
    await new Promise((resolveExit) => agent.once('exit', resolveExit));
    await run.waitFor(/lost the connection to job \d+: reconnecting/);
    await sleep(1000);
    await startAgent();
    const mark = run.output().length;
    // Typed while the CLI may still be reconnecting: it is sent once it is back.
    await sleep(3000);
    run.terminal.write('echo after-$((2+3))\r');
    await run.waitFor(/after-5/, 20_000, mark);
    run.terminal.write('exit 9\r');
    assert.equal(await run.exited, 9, run.output());
  });

  it('output on its way through the agent when it dies is not lost: the session keeps it until taras run acknowledges it, and each line is shown once, in order', { timeout: 90_000 }, async () => {
    const { cluster, agent, startAgent } = await startSplitCluster('in-flight');
    const dir = join(work, 'in-flight-files');
    mkdirSync(dir);
    const run = withPipes(cluster, ['run', '-t', '5', '--', 'sh', '-c',
      `echo start; while [ ! -e ${dir}/go ]; do sleep 0.05; done; seq 1 20000; touch ${dir}/printed; while [ ! -e ${dir}/down ]; do sleep 0.05; done; seq 20001 20100`]);
    for (let tries = 0; !run.stdout().startsWith('start\n'); tries++) {
      assert.ok(tries < 200, `no first line: ${run.stderr()}`);
      await sleep(100);
    }
    // The agent stops reading: the job's 109 KB reach its socket and go no further, then it dies with them.
    process.kill(agent.pid!, 'SIGSTOP');
    writeFileSync(join(dir, 'go'), '');
    for (let tries = 0; !existsSync(join(dir, 'printed')); tries++) {
      assert.ok(tries < 200, 'the job did not print its lines');
      await sleep(100);
    }
    await sleep(500);
    agent.kill('SIGKILL');
    await new Promise((resolveExit) => agent.once('exit', resolveExit));
    writeFileSync(join(dir, 'down'), '');
    await startAgent();
    assert.equal(await run.exited, 0, run.stderr());
    const expected = `start\n${Array.from({ length: 20_100 }, (_, i) => `${i + 1}\n`).join('')}`;
    const gotLines = run.stdout().split('\n');
    const firstWrong = expected.split('\n').findIndex((line, i) => gotLines[i] !== line);
    assert.equal(firstWrong, -1, `line ${firstWrong + 1} is ${JSON.stringify(gotLines[firstWrong])}; stderr:\n${run.stderr()}`);
    assert.equal(run.stdout(), expected);
    assert.match(run.stderr(), /lost the connection to job \d+: reconnecting/);
    assert.doesNotMatch(run.stderr(), /were lost/);
  });

  it('the job\'s end on its way through the agent when it dies is not lost: the session keeps it until taras run acknowledges it, and taras run exits with the job\'s code', { timeout: 90_000 }, async () => {
    const { cluster, agent, startAgent } = await startSplitCluster('end-in-flight');
    const dir = join(work, 'end-in-flight-files');
    mkdirSync(dir);
    const run = withPipes(cluster, ['run', '-t', '5', '--', 'sh', '-c', `echo start; while [ ! -e ${dir}/go ]; do sleep 0.05; done; echo bye; touch ${dir}/ending; exit 7`]);
    for (let tries = 0; !run.stdout().startsWith('start\n'); tries++) {
      assert.ok(tries < 200, `no first line: ${run.stderr()}`);
      await sleep(100);
    }
    // The agent stops reading: the job's last line and its end reach its socket and go no further, then it dies with them.
    process.kill(agent.pid!, 'SIGSTOP');
    writeFileSync(join(dir, 'go'), '');
    for (let tries = 0; !existsSync(join(dir, 'ending')); tries++) {
      assert.ok(tries < 200, 'the job did not end');
      await sleep(100);
    }
    await sleep(2500); // past the 2 s a supervisor used to wait for its client before leaving
    agent.kill('SIGKILL');
    await new Promise((resolveExit) => agent.once('exit', resolveExit));
    await startAgent();
    assert.equal(await run.exited, 7, run.stderr());
    assert.equal(run.stdout(), 'start\nbye\n');
    assert.match(run.stderr(), /lost the connection to job \d+: reconnecting/);
  });

  it('taras run\'s output into a slow pipe is all written before it exits (writes to a pipe are asynchronous: process.exit dropped what was queued)', { timeout: 60_000 }, async () => {
    const { cluster } = await startSplitCluster('slow-reader');
    const count = join(work, 'slow-reader-count');
    const shell = spawn('/bin/sh', ['-c', `"${process.execPath}" "${taras}" run -t 5 -- sh -c 'head -c 3000000 /dev/zero | tr "\\\\0" x' | (sleep 2; wc -c) > ${count}`],
      { cwd: work, env: { ...process.env, TARAS_CONTROLLER: `unix:${cluster.socket}` }, stdio: ['ignore', 'ignore', 'pipe'] });
    started.push(shell);
    let stderr = '';
    shell.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolveExit) => shell.on('close', resolveExit));
    assert.equal(code, 0, stderr);
    assert.equal(readFileSync(count, 'utf8').trim(), '3000000', stderr);
  });

  it('taras run holds no more than about a megabyte of output for a slow reader: the rest waits at the node (it held all of it)', { timeout: 90_000 }, async () => {
    const { cluster } = await startSplitCluster('paced-reader');
    const dir = join(work, 'paced-reader-files');
    mkdirSync(dir);
    // 150 MB into a reader that takes one byte, then waits 5 s: taras run's peak memory is read then, from /proc.
    const script = `mkfifo ${dir}/fifo
"${process.execPath}" "${taras}" run -t 5 -- sh -c 'head -c 150000000 /dev/zero | tr "\\\\0" x' > ${dir}/fifo &
pid=$!
(dd bs=1 count=1 status=none > /dev/null; sleep 5; grep VmHWM /proc/$pid/status > ${dir}/peak; wc -c) < ${dir}/fifo > ${dir}/count
wait $pid`;
    const shell = spawn('/bin/sh', ['-c', script], { cwd: work, env: { ...process.env, TARAS_CONTROLLER: `unix:${cluster.socket}` }, stdio: ['ignore', 'ignore', 'pipe'] });
    started.push(shell);
    let stderr = '';
    shell.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolveExit) => shell.on('close', resolveExit));
    assert.equal(code, 0, stderr);
    assert.equal(readFileSync(join(dir, 'count'), 'utf8').trim(), '149999999', stderr);
    const peakKiB = Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(join(dir, 'peak'), 'utf8'))?.[1]);
    assert.ok(peakKiB > 0 && peakKiB < 120 * 1024, `taras run's peak memory ${peakKiB} KiB while its reader waited: it held the output itself`);
  });

  it('taras attach after a client that typed more: its input is numbered on from the session\'s, and the job reads all of it once', { timeout: 60_000 }, async () => {
    const { cluster } = await startSplitCluster('attach-input');
    const dir = join(work, 'attach-input-files');
    mkdirSync(dir);
    const got = (): string => (existsSync(join(dir, 'got')) ? readFileSync(join(dir, 'got'), 'utf8') : '');
    const first = withPipes(cluster, ['run', '-t', '5', '--', 'sh', '-c', `cat > ${dir}/got; echo read all`], 'open');
    for (const line of ['a1', 'a2', 'a3', 'a4']) first.child.stdin!.write(`${line}\n`);
    for (let tries = 0; got() !== 'a1\na2\na3\na4\n'; tries++) {
      assert.ok(tries < 200, `the job did not read a1 to a4: ${JSON.stringify(got())} ${first.stderr()}`);
      await sleep(100);
    }
    const id = (await latestJob(cluster.api)).id;
    first.child.kill('SIGKILL'); // the job runs on, detached, within interactive_grace
    await first.exited;
    const second = withPipes(cluster, ['attach', String(id)], 'open');
    second.child.stdin!.end('b1\n');
    assert.equal(await second.exited, 0, second.stderr());
    assert.equal(got(), 'a1\na2\na3\na4\nb1\n');
    assert.equal(second.stdout(), 'read all\n');
  });

  it('input on its way through the agent when it dies is not lost: taras run keeps it until the session has taken it, sends it again, and the job reads it once', { timeout: 90_000 }, async () => {
    const { cluster, agent, startAgent } = await startSplitCluster('input-in-flight');
    const dir = join(work, 'input-in-flight-files');
    mkdirSync(dir);
    const run = withPipes(cluster, ['run', '-t', '5', '--', 'sh', '-c', `cat > ${dir}/got; echo read all`], 'open');
    const got = (): string => (existsSync(join(dir, 'got')) ? readFileSync(join(dir, 'got'), 'utf8') : '');
    run.child.stdin!.write('part1\n');
    for (let tries = 0; got() !== 'part1\n'; tries++) {
      assert.ok(tries < 200, `the job did not read part1: ${run.stderr()}`);
      await sleep(100);
    }
    // The agent stops reading: the next input reaches its socket and goes no further, then it dies with it.
    process.kill(agent.pid!, 'SIGSTOP');
    run.child.stdin!.write('part2\n');
    await sleep(500);
    agent.kill('SIGKILL');
    await new Promise((resolveExit) => agent.once('exit', resolveExit));
    run.child.stdin!.write('part3\n'); // typed while nothing is connected
    await startAgent();
    run.child.stdin!.end('part4\n');
    assert.equal(await run.exited, 0, run.stderr());
    assert.equal(got(), 'part1\npart2\npart3\npart4\n', run.stderr());
    assert.equal(run.stdout(), 'read all\n');
    assert.match(run.stderr(), /lost the connection to job \d+: reconnecting/);
  });
});
