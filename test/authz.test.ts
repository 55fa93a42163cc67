// Who may do what (src/controller/authz.ts), with real Unix users running
// the real `taras` CLI through the controller's socket: a user affects only
// their own jobs and sees only their own jobs' private details; an
// administrator listed through a group ("@group" in `admins`) may act on any;
// root's submissions can be refused (`allow_root_jobs = false`).

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { ApiJob, ApiJobWithEvents } from '../src/api/types.js';
import { readClusterConfig } from '../src/config/load.js';
import { publicJob, publicReason } from '../src/controller/authz.js';
import { startController, type RunningController } from '../src/controller/daemon.js';
import { ApiRequestError, createApiClient } from '../src/net/client.js';
import { runAs } from './auth-helpers.js';
import { createTestUser, notRootReason, removeTestUsers, type TestUser } from './unix-users.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const work = mkdtempSync(join(tmpdir(), 'taras-authz-'));
chmodSync(work, 0o711);
const group = `ttg${randomBytes(4).toString('hex')}`;
after(() => {
  rmSync(work, { recursive: true, force: true });
  removeTestUsers();
  spawnSync('/usr/sbin/groupdel', [group]);
});

const clusterToml = (allowRootJobs: boolean) => `[cluster]
name = "authz"
data_dir = "data"
admins = ["@${group}"]
allow_root_jobs = ${allowRootJobs}
[[nodes]]
names = "n[1-2]"
cpus = 2
memory = "1G"
[[partitions]]
name = "batch"
nodes = "ALL"
`;

describe('what others see of a job', () => {
  it('no reason once the job ran (the agent\'s failure reasons name its paths); a pending one\'s with paths hidden', () => {
    const failed = { id: 7, user: 'alice', state: 'FAILED', reason: 'output file /home/alice/secret/out.txt is a FIFO', workingDir: '/home/alice/secret', stdoutPath: '/home/alice/secret/out.txt', stderrPath: null } as unknown as ApiJob;
    const shown = publicJob(failed);
    assert.deepEqual([shown.reason, shown.workingDir, shown.stdoutPath], [null, null, null]);
    assert.doesNotMatch(JSON.stringify(shown), /secret/);
    assert.equal(publicReason('PENDING', 'Resources'), 'Resources');
    assert.equal(publicReason('PENDING', 'requeued: working directory /home/alice/secret is not accessible'), 'requeued: working directory (path hidden) is not accessible');
    assert.equal(publicReason('COMPLETED', null), null);
    // A date is not a path (red team: "not before 11/27/2026" became "11(path hidden)"); paths after brackets and quotes are.
    assert.equal(publicReason('PENDING', 'BeginTime: not before 11/27/2026 10:00'), 'BeginTime: not before 11/27/2026 10:00');
    assert.equal(publicReason('PENDING', "cannot read '/home/alice/x' (/home/alice/y)"), "cannot read '(path hidden)' ((path hidden))");
    // Where the owner's mail goes is not shown to others (red team).
    const mailed = publicJob({ ...failed, mailUser: 'alice@example.org', mailType: ['END'] } as ApiJob);
    assert.equal('mailUser' in mailed, false);
    assert.deepEqual(mailed.mailType, ['END']);
  });
});

describe('authorisation with real users and the CLI', { skip: notRootReason }, () => {
  let controller: RunningController;
  let file: string;
  let alice: TestUser;
  let bob: TestUser;
  let carol: TestUser;
  let aliceJob: number;

  /** `taras ARGS` as `user`, through the controller's socket, from their home. */
  const taras = (user: TestUser, ...args: string[]) => runAs(user, [join(root, 'bin/taras.js'), ...((args)[0] === 'submit' ? ['submit', '--controller', `unix:${controller.socketPath}`, ...(args).slice(1)] : [...args, '--controller', `unix:${controller.socketPath}`])]);

  before(async () => {
    alice = createTestUser('alice');
    bob = createTestUser('bob');
    carol = createTestUser('carol');
    // carol is an administrator through a supplementary group only.
    assert.equal(spawnSync('/usr/sbin/groupadd', [group]).status, 0);
    assert.equal(spawnSync('/usr/sbin/usermod', ['-aG', group, carol.name]).status, 0);
    file = join(work, 'cluster.toml');
    writeFileSync(file, clusterToml(true));
    const parsed = await readClusterConfig(file);
    assert.ok(parsed.ok);
    // No agent: the nodes are down and every job stays PENDING, which is all these checks need.
    controller = await startController({ config: parsed.config, configPath: file, clusterKey: null, port: 0, log: () => {} });
    chmodSync(parsed.config.dataDir, 0o711);
    writeFileSync(join(alice.home, 'secret-job.sh'), '#!/bin/sh\n#TARAS --time 5\necho private\n');
    spawnSync('chown', [alice.name, join(alice.home, 'secret-job.sh')]);
    const submitted = await taras(alice, 'submit', '--json', 'secret-job.sh');
    assert.equal(submitted.status, 0, submitted.stderr);
    aliceJob = JSON.parse(submitted.stdout).id;
  });

  after(async () => {
    await controller?.close();
  });

  it('the job belongs to the verified submitter', () => {
    assert.equal(controller.engine().active.get(aliceJob as never)?.user, alice.name);
  });

  it('only an administrator may give a negative --nice (raise a job\'s priority); anyone may lower it', async () => {
    const refused = await taras(alice, 'submit', '--nice=-10', 'secret-job.sh');
    assert.equal(refused.status, 1);
    assert.match(refused.stderr, /--nice=-10: only administrators may raise a job's priority \(a negative nice\)/);
    const lowered = await taras(alice, 'submit', '--json', '--nice', 'secret-job.sh');
    assert.equal(lowered.status, 0, lowered.stderr);
    writeFileSync(join(carol.home, 'job.sh'), '#!/bin/sh\n#SBATCH --time 5\ntrue\n');
    spawnSync('chown', [carol.name, join(carol.home, 'job.sh')]);
    const byAdmin = await taras(carol, 'submit', '--json', '--nice=-10', 'job.sh');
    assert.equal(byAdmin.status, 0, byAdmin.stderr);
    for (const [user, id] of [[alice, JSON.parse(lowered.stdout).id], [carol, JSON.parse(byAdmin.stdout).id]] as const) {
      assert.equal((await taras(user, 'cancel', String(id))).status, 0);
    }
  });

  it('another user sees the job in the queue but not its private details; its owner sees them', async () => {
    const asBob = await taras(bob, 'show', String(aliceJob), '--json');
    assert.equal(asBob.status, 0, asBob.stderr);
    const seen = JSON.parse(asBob.stdout) as ApiJobWithEvents;
    assert.deepEqual([seen.user, seen.state, seen.workingDir, seen.stdoutPath, seen.stderrPath], [alice.name, 'PENDING', null, null, null]);
    assert.ok(seen.events.length > 0 && seen.events.every((event) => Object.keys(event.detail).length === 0), 'event details are private');
    const shown = await taras(bob, 'show', String(aliceJob));
    assert.match(shown.stdout, /Working dir:\s+\(private\)/);
    assert.doesNotMatch(shown.stdout, new RegExp(alice.home));

    const listed = JSON.parse((await taras(bob, 'queue', '--json')).stdout) as ApiJob[];
    const row = listed.find((job) => job.id === aliceJob);
    assert.deepEqual([row?.user, row?.workingDir], [alice.name, null]);
    const long = await taras(bob, 'queue', '--long');
    assert.match(long.stdout, new RegExp(alice.name.slice(0, 8)));
    assert.doesNotMatch(long.stdout, new RegExp(alice.home));

    const mine = JSON.parse((await taras(alice, 'show', String(aliceJob), '--json')).stdout) as ApiJobWithEvents;
    assert.equal(mine.workingDir, alice.home);
    assert.equal(mine.stdoutPath, `${alice.home}/taras-${aliceJob}.out`);
  });

  it('another user cannot cancel the job, drain, set the motd, reconfigure, shut down or get a token for the owner', async () => {
    const cancel = await taras(bob, 'cancel', String(aliceJob));
    assert.equal(cancel.status, 1);
    // The job is named once (it was "job 7: job 7 belongs to ...").
    assert.match(cancel.stderr, new RegExp(`^error: job ${aliceJob} belongs to ${alice.name}; only they or an administrator can cancel it$`, 'm'));
    for (const args of [['admin', 'drain', 'n1', '--reason', 'mine'], ['admin', 'motd', 'owned'], ['admin', 'reconfigure'], ['admin', 'shutdown'],
      ['admin', 'token', '--user', alice.name]]) {
      const run = await taras(bob, ...args);
      assert.equal(run.status, 1, args.join(' '));
      assert.match(run.stderr, /only administrators may/, args.join(' '));
    }
    assert.equal(controller.engine().active.get(aliceJob as never)?.state, 'PENDING');
    assert.equal(controller.engine().nodes.get('n1')?.drained, false);
  });

  it('another user cannot hold the job; it stays unheld', async () => {
    for (const args of [['hold', String(aliceJob)]]) {
      const run = await taras(bob, ...args);
      assert.notEqual(run.status, 0, `${args.join(' ')}: ${run.stdout}`);
      assert.match(run.stderr, new RegExp(`${aliceJob}.*${alice.name}`), args.join(' '));
      assert.equal(controller.engine().active.get(aliceJob as never)?.held, false, args.join(' '));
    }
    // scontrol hold as Slurm's: the refusal said, exit 1 (it was silent, exit 0: red team).
    for (const verb of ['hold', 'release']) {
      const run = await runAs(bob, [join(root, 'bin/taras.js'), '--slurm-command', 'scontrol', verb, String(aliceJob)], { env: { TARAS_CONTROLLER: `unix:${controller.socketPath}` } });
      assert.equal(run.status, 1, `scontrol ${verb}: ${run.stdout}${run.stderr}`);
      assert.match(run.stderr, new RegExp(`^scontrol: error: ${verb} job ${aliceJob}: .*${alice.name}`, 'm'));
    }
    assert.equal(controller.engine().active.get(aliceJob as never)?.held, false);
  });

  it('an administrator through a supplementary group sees the details, drains and cancels another user\'s job', async () => {
    const shown = JSON.parse((await taras(carol, 'show', String(aliceJob), '--json')).stdout) as ApiJobWithEvents;
    assert.equal(shown.workingDir, alice.home);
    const drain = await taras(carol, 'admin', 'drain', 'n2', '--reason', 'test');
    assert.equal(drain.status, 0, drain.stderr);
    assert.equal(controller.engine().nodes.get('n2')?.drained, true);
    assert.equal((await taras(carol, 'admin', 'resume', 'n2')).status, 0);
    const token = await taras(carol, 'admin', 'token', '--user', alice.name, '--json');
    assert.equal(token.status, 0, token.stderr);
    assert.equal(JSON.parse(token.stdout).user, alice.name);
    const rootToken = await taras(carol, 'admin', 'token', '--user', 'root');
    assert.equal(rootToken.status, 1, 'an administrator cannot become root with a token');
    assert.match(rootToken.stderr, /only root may issue a token for root/);
    const cancel = await taras(carol, 'cancel', String(aliceJob));
    assert.equal(cancel.status, 0, cancel.stderr);
    assert.equal((await controller.engine().active.get(aliceJob as never)), undefined, 'no longer active');
  });

  it('allow_root_jobs = false refuses root\'s submissions with the reason; root stays an administrator', async () => {
    writeFileSync(file, clusterToml(false));
    const api = createApiClient({ socketPath: controller.socketPath }, {});
    try {
      await api.post('/admin/reconfigure', {});
      const spec = {
        script: { path: '/tmp/x.sh', text: '#!/bin/sh\n', args: [] }, nodes: { min: 1 }, cpusPerTask: 1, timeLimitSeconds: 60,
        name: 'as-root', workingDir: '/tmp', output: 'x-%j.out', export: { all: false, variables: [] }, requeue: false,
      };
      await assert.rejects(api.post('/jobs', { spec }), (error: unknown) => error instanceof ApiRequestError && error.status === 403
        && /does not run jobs as root \(allow_root_jobs = false/.test(error.error));
      const asAlice = await taras(alice, 'submit', '--json', 'secret-job.sh');
      assert.equal(asAlice.status, 0, asAlice.stderr);
    } finally {
      api.close();
    }
  });
});
