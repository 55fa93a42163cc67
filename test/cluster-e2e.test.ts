// The live system as a user runs it: `taras controller` and `taras agent
// --virtual` as real processes on loopback, jobs submitted with the CLI, and
// the controller killed with SIGKILL while a job runs. Every process started
// here is stopped by its PID.

import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const taras = join(root, 'bin/taras.js');
const work = mkdtempSync(join(tmpdir(), 'taras-e2e-'));
const started: ChildProcess[] = [];

after(async () => {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await new Promise((resolve) => setTimeout(resolve, 200));
  rmSync(work, { recursive: true, force: true });
});

/** Starts a daemon and resolves when its log shows `ready`. */
function daemon(args: string[], ready: RegExp): Promise<{ child: ChildProcess; match: RegExpMatchArray }> {
  const child = spawn(process.execPath, [taras, ...args], { cwd: work, stdio: ['ignore', 'ignore', 'pipe'] });
  started.push(child);
  return new Promise((resolve, reject) => {
    let log = '';
    const timer = setTimeout(() => reject(new Error(`not ready within 10 s: ${args.join(' ')}\n${log}`)), 10_000);
    child.stderr!.on('data', (chunk: Buffer) => {
      log += chunk.toString();
      const match = log.match(ready);
      if (match) {
        clearTimeout(timer);
        resolve({ child, match });
      }
    });
    child.on('exit', (code) => reject(new Error(`exited with ${code}: ${args.join(' ')}\n${log}`)));
  });
}

function cli(url: string, ...args: string[]) {
  const run = spawnSync(process.execPath, [taras, ...((args)[0] === 'submit' ? ['submit', '--controller', url, ...(args).slice(1)] : [...args, '--controller', url])], { cwd: work, encoding: 'utf8', timeout: 30_000 });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

const killed = (child: ChildProcess) => new Promise((resolve) => child.once('exit', resolve));

describe('a cluster on one machine', () => {
  it('runs jobs on virtual nodes, and loses nothing when the controller is killed mid-job', async () => {
    const data = join(work, 'data');
    const first = await daemon(['controller', '--data', data, '--port', '0'], /listening on (http:\/\/127\.0\.0\.1:(\d+))/);
    const url = first.match[1];
    const port = first.match[2];
    await daemon(['agent', '--controller', url, '--virtual', '4x2', '--data', join(data, 'agent'), '--key', join(data, 'cluster.key')], /registered 4 node/);

    writeFileSync(join(work, 'hello.sh'), '#!/bin/sh\n#TARAS --time 1\n#TARAS -J hello\necho "job $TARAS_JOB_ID on $TARAS_NODELIST"\n');
    const submitted = cli(url, 'submit', '--json', '-N', '2', 'hello.sh');
    assert.equal(submitted.code, 0, submitted.stderr);
    const { id } = JSON.parse(submitted.stdout) as { id: number };
    const waited = cli(url, 'wait', String(id));
    assert.equal(waited.code, 0, waited.stdout + waited.stderr);
    assert.match(waited.stdout, /COMPLETED \(exit code 0\)/);
    assert.equal(readFileSync(join(work, `taras-${id}.out`), 'utf8'), `job ${id} on node[01-02]\n`);

    // A job that runs 2 s and exits 4; the controller dies while it runs.
    writeFileSync(join(work, 'slow.sh'), '#!/bin/sh\n#TARAS --time 1\nsleep 2\nexit 4\n');
    const slow = JSON.parse(cli(url, 'submit', '--json', 'slow.sh').stdout) as { id: number };
    const pending = JSON.parse(cli(url, 'submit', '--json', '-N', '4', '-c', '2', 'slow.sh').stdout) as { id: number };
    await new Promise((resolve) => setTimeout(resolve, 500));
    first.child.kill('SIGKILL');
    await killed(first.child);
    await new Promise((resolve) => setTimeout(resolve, 2500)); // the job ends while no controller runs
    await daemon(['controller', '--data', data, '--port', port], /listening on/);

    const waitSlow = cli(url, 'wait', String(slow.id));
    assert.equal(waitSlow.code, 1);
    assert.match(waitSlow.stdout, new RegExp(`job ${slow.id}: FAILED \\(exit code 4\\)`));
    const shown = JSON.parse(cli(url, 'show', String(slow.id), '--json').stdout) as { events: { type: string }[]; startTime: string; endTime: string };
    assert.deepEqual(shown.events.map((e) => e.type), ['submitted', 'started', 'ended']);
    const ranMs = Date.parse(shown.endTime) - Date.parse(shown.startTime);
    assert.ok(ranMs >= 1900 && ranMs < 4500, `ran ${ranMs} ms: the end time is the real one, not the restart's`);
    // The job that was pending when the controller died is still there exactly once, and runs.
    const queue = JSON.parse(cli(url, 'queue', '--all', '--json').stdout) as { id: number }[];
    assert.equal(queue.filter((job) => job.id === pending.id).length, 1);
    assert.match(cli(url, 'wait', String(pending.id)).stdout, /FAILED \(exit code 4\)/);
  });

  it('admin commands say what they did; a job whose nodes are drained has no plan and one reason why; finished jobs show their end', async () => {
    // Exactly the agent's four nodes: none is still expected to register.
    const data = join(work, 'admin-data');
    const config = join(work, 'admin.toml');
    writeFileSync(config, `[cluster]\nname = "admin"\npolicy = "easy"\ndata_dir = "admin-data"\n[[nodes]]\nnames = "node[01-04]"\ncpus = 2\nmemory = "16G"\n[[partitions]]\nname = "batch"\nnodes = "ALL"\n`);
    const { match } = await daemon(['controller', '--config', config, '--port', '0'], /listening on (http:\/\/127\.0\.0\.1:\d+)/);
    const url = match[1];
    await daemon(['agent', '--controller', url, '--virtual', '4x2', '--data', join(data, 'agent'), '--key', join(data, 'cluster.key')], /registered 4 node/);

    const drained = cli(url, 'admin', 'drain', 'node[03-04]', '--reason', 'disk swap');
    assert.equal(drained.code, 0, drained.stderr);
    assert.match(drained.stdout, /^2 nodes: 0 idle, 2 drained\n/);
    assert.match(drained.stdout, /\nnode03 +drained .*disk swap\n/);
    const typo = cli(url, 'admin', 'drain', 'node01', 'node99', '--reason', 'typo');
    assert.deepEqual([typo.code, typo.stdout], [2, '']);
    assert.equal(typo.stderr, 'error: no node named node99 in this cluster (name nodes as `taras nodes` lists them; nothing was changed)\n');
    assert.match(cli(url, 'nodes').stdout, /\nnode01 +idle /);
    const json = JSON.parse(cli(url, 'admin', 'drain', 'node04', '--reason', 'disk swap', '--json').stdout) as { name: string; state: string }[];
    assert.deepEqual(json.map((n) => [n.name, n.state]), [['node04', 'drained']]);

    // Four nodes' worth of CPUs, two nodes drained: no plan, and the reason said once.
    writeFileSync(join(work, 'wide.sh'), '#!/bin/sh\n#TARAS --time 1\ntrue\n');
    const wide = JSON.parse(cli(url, 'submit', '--json', '-N', '4', 'wide.sh').stdout) as { id: number };
    const when = cli(url, 'when', String(wide.id));
    assert.equal(when.stdout, `Job ${wide.id} is 1st in line and has no planned start yet (it needs 4 nodes of partition batch).\n`
      + 'Fewer than the 4 nodes it needs in partition batch are up and taking jobs (node03, node04 are out); it is planned once they are back.\n');

    const resumed = cli(url, 'admin', 'resume', 'node[03-04]');
    assert.match(resumed.stdout, /\nnode03 +(idle|allocated|mixed) /);
    assert.match(cli(url, 'wait', String(wide.id)).stdout, /COMPLETED \(exit code 0\)/);
    assert.ok(!cli(url, 'queue').stdout.split('\n').some((line) => line.trimStart().startsWith(`${wide.id} `)), 'finished jobs only with --all');
    const row = cli(url, 'queue', '--all').stdout.split('\n').find((line) => line.trimStart().startsWith(`${wide.id} `))!;
    assert.match(row, /COMPLETED +batch +node\[01-04\] +today \d\d:\d\d +\d\d:\d\d +wide\.sh$/, 'a finished job shows when it ended');

    assert.equal(cli(url, 'admin', 'motd', 'maintenance Friday').stdout, 'Message of the day set: maintenance Friday\n');
    assert.match(cli(url, 'status').stdout, /maintenance Friday/);
    assert.equal(cli(url, 'admin', 'motd', '').stdout, 'Message of the day cleared.\n');
  });
});
