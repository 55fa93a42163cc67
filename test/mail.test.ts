// Mail about jobs (--mail-type/--mail-user): a real controller and agent run
// real jobs, the controller runs the configured mail_program (msmtp, Debian
// package msmtp, installed by scripts/test-deps.sh, behind a wrapper that
// gives it its configuration) and the messages are received by a real SMTP
// listener started here (smtp-server) on loopback. Subjects are Slurm's.
// Bad addresses are refused at submission, before anything is stored, and a
// job's name cannot add a header. Every process started here is stopped by
// its PID.

import assert from 'node:assert/strict';
import { spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { SMTPServer } from 'smtp-server';
import { startDaemon } from './daemon-process.js';
import { encodeHeader, formatMessage, mailDuration, mailTypesOf, recipientOf } from '../src/controller/mail.js';
import { parseMailUser } from '../src/jobspec/values.js';
import { createApiClient } from '../src/net/client.js';
import { eventually } from './poll.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const taras = join(root, 'bin/taras.js');
const MSMTP = '/usr/bin/msmtp';

describe('mail pieces (pure)', () => {
  it('durations, types, recipients and headers as Slurm and RFC 2047 have them', () => {
    assert.deepEqual([0, 61, 3661, 86_400 + 3723].map(mailDuration), ['00:00:00', '00:01:01', '01:01:01', '1-01:02:03']);
    assert.deepEqual([...mailTypesOf({ mailType: ['ALL'] })].sort(), ['ALL', 'BEGIN', 'END', 'FAIL', 'INVALID_DEPEND', 'REQUEUE', 'STAGE_OUT', 'TIME_LIMIT']);
    assert.equal(mailTypesOf({ mailType: ['NONE', 'END'] }).size, 0);
    assert.equal(recipientOf({ user: 'ada' }, {}, 'example.org'), 'ada@example.org');
    assert.equal(recipientOf({ user: 'ada' }, { mailUser: 'x@y.org' }, 'example.org'), 'x@y.org');
    assert.equal(recipientOf({ user: 'ada' }, {}, undefined), 'ada');
    for (const bad of ['-oQ/tmp/x', 'a@b.org, c@d.org', 'a@b.org\nBcc: c@d.org', 'a b@c.org', '<a@b.org>', 'a@-b.org', '']) assert.equal(parseMailUser(bad).ok, false, bad);
    for (const good of ['ada', 'ada.lovelace+jobs@mail.example.org', 'a_b%c@x-y.z']) assert.equal(parseMailUser(good).ok, true, good);
    assert.equal(encodeHeader('Slurm Job_id=1 Name=plain'), 'Slurm Job_id=1 Name=plain');
    const encoded = encodeHeader('Slurm Job_id=1 Name=résumé');
    assert.match(encoded, /^=\?UTF-8\?B\?[A-Za-z0-9+/=]+\?=( =\?UTF-8\?B\?[A-Za-z0-9+/=]+\?=)*$/);
    const message = formatMessage({ to: 'a@b.org', subject: 'S', body: 'B', jobId: 3 });
    assert.match(message, /^To: a@b\.org\nSubject: S\n.*\nX-Taras-Job-Id: 3\n\nB\n$/s);
  });
});

describe('the mailer\'s time-limit warnings and invalid dependencies (a mail program that writes files)', () => {
  it('TIME_LIMIT_50/80/90: once each, the highest share passed; shares passed before a (re)start are not sent; INVALID_DEPEND', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'taras-mailer-'));
    try {
      const program = join(dir, 'mailprog');
      writeFileSync(program, `#!/bin/sh\n[ "$1 $2" = "-t -oi" ] || exit 9\ncat > "$(mktemp ${dir}/mail.XXXXXX)"\n`, { mode: 0o755 });
      const lines: string[] = [];
      const { Mailer } = await import('../src/controller/mail.js');
      const known = new Map<number, import('../src/store/events.js').JobRecord>();
      const mailer = new Mailer({ program }, (id) => known.get(id), (line) => lines.push(line));
      const startMs = Date.parse('2026-11-26T10:00:00Z');
      const record = (id: number, limit: number, types: string[]) => ({
        id, user: 'ada', name: `j${id}`, state: 'RUNNING', startTimeMs: startMs, submitTimeMs: startMs, endTimeMs: null, exitCode: null, reason: null, nodes: ['n1'], requeueCount: 0,
        request: { timeLimitSeconds: limit, mailType: types },
      }) as unknown as import('../src/store/events.js').JobRecord;
      const watched = record(1, 100, ['TIME_LIMIT_50', 'TIME_LIMIT_80', 'TIME_LIMIT_90']);
      const late = record(2, 100, ['TIME_LIMIT_50']);
      const quiet = record(5, 100, ['END']);
      for (const job of [watched, late, quiet]) known.set(job.id, job);
      mailer.checkTimeLimits(startMs + 60_000, true, [late, quiet]); // already past 50% when the controller started: not sent
      // The watched job starts now (its started event), the other was there at the start.
      mailer.onJobEvent({ jobId: 1 as never, seq: 2, timeMs: startMs, event: { type: 'started', nodes: ['n1'] } } as never, watched);
      for (const seconds of [40, 55, 56, 85, 95, 99]) mailer.checkTimeLimits(startMs + seconds * 1000, false);
      mailer.invalidDependency(record(3, 100, ['INVALID_DEPEND']));
      mailer.invalidDependency(record(4, 100, ['END']));
      const { readdirSync, readFileSync } = await import('node:fs');
      let subjects: string[] = [];
      for (let i = 0; i < 100 && subjects.length < 4; i++, await sleep(50)) {
        subjects = readdirSync(dir).filter((name) => name.startsWith('mail.')).map((name) => /^Subject: (.*)$/m.exec(readFileSync(join(dir, name), 'utf8'))?.[1] ?? '').filter(Boolean).sort();
      }
      await sleep(200);
      assert.deepEqual(subjects, [
        'Slurm Job_id=1 Name=j1 Reached 50% of time limit, Run time 00:00:55',
        'Slurm Job_id=1 Name=j1 Reached 80% of time limit, Run time 00:01:25',
        'Slurm Job_id=1 Name=j1 Reached 90% of time limit, Run time 00:01:35',
        'Slurm Job_id=3 Name=j3 Invalid Dependency',
      ]);
      assert.deepEqual(lines, []);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

interface Received {
  from: string;
  to: string[];
  headers: Record<string, string>;
  subject: string;
  body: string;
}

/** RFC 2047 base64 words back to text. */
const decodeWords = (text: string): string => text.replace(/=\?UTF-8\?B\?([^?]+)\?=\s*/gi, (_, b64: string) => Buffer.from(b64, 'base64').toString('utf8')).trim();

describe('mail from the controller through msmtp to a real SMTP listener', { skip: !existsSync(MSMTP) ? 'msmtp is not installed (scripts/test-deps.sh installs it as root)' : process.getuid?.() !== 0 ? 'not root' : false }, () => {
  const started: ChildProcess[] = [];
  const received: Received[] = [];
  let work = '';
  let url = '';
  let smtp: SMTPServer;
  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'taras-mail-'));
    smtp = new SMTPServer({
      authOptional: true, disabledCommands: ['STARTTLS'], logger: false,
      onData(stream, session, callback) {
        // Decoded whole: a chunk may end inside a character (é split in two showed as two replacement characters).
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const [head, ...rest] = text.replace(/\r\n/g, '\n').split('\n\n');
          const headers: Record<string, string> = {};
          for (const line of head.replace(/\n[ \t]+/g, ' ').split('\n')) {
            const colon = line.indexOf(':');
            if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
          }
          received.push({
            from: session.envelope.mailFrom === false ? '' : session.envelope.mailFrom.address, to: session.envelope.rcptTo.map((r) => r.address),
            headers, subject: decodeWords(headers.subject ?? ''), body: rest.join('\n\n'),
          });
          callback();
        });
      },
    });
    await new Promise<void>((resolveListen) => smtp.listen(0, '127.0.0.1', () => resolveListen()));
    const port = (smtp.server.address() as { port: number }).port;
    // msmtp as a site would wrap it: its configuration given by the wrapper (mail_program is run with -t -oi only).
    const rc = join(work, 'msmtprc');
    writeFileSync(rc, `account default\nhost 127.0.0.1\nport ${port}\nfrom taras@cluster.test\nauth off\ntls off\n`, { mode: 0o600 });
    const wrapper = join(work, 'sendmail');
    writeFileSync(wrapper, `#!/bin/sh\nexec ${MSMTP} -C ${rc} "$@"\n`, { mode: 0o755 });
    chmodSync(wrapper, 0o755);
    const config = join(work, 'cluster.toml');
    writeFileSync(config, `[cluster]\nname = "mail"\npolicy = "easy"\ndata_dir = "data"\nmail_program = "${wrapper}"\nmail_domain = "cluster.test"\n`
      + '[[nodes]]\nnames = "node[01-02]"\ncpus = 2\nmemory = "4G"\n[[partitions]]\nname = "batch"\nnodes = "ALL"\ndefault = true\n');
    url = (await startDaemon(taras, started, ['controller', '--config', config, '--port', '0'], /listening on (http:\/\/127\.0\.0\.1:\d+)/, work)).match[1];
    await startDaemon(taras, started, ['agent', '--controller', url, '--virtual', '2x2', '--data', join(work, 'data', 'agent'), '--key', join(work, 'data', 'cluster.key')], /registered 2 node/, work);
  });
  after(async () => {
    for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await new Promise<void>((resolveClose) => smtp.close(() => resolveClose()));
    await sleep(200);
    if (work !== '') rmSync(work, { recursive: true, force: true });
  });

  const submit = (...args: string[]): { code: number | null; stdout: string; stderr: string } => {
    const run = spawnSync(process.execPath, [taras, 'submit', '--controller', url, ...args], { cwd: work, encoding: 'utf8', timeout: 30_000 });
    return { code: run.status, stdout: run.stdout, stderr: run.stderr };
  };
  const idOf = (run: { stdout: string }): number => Number(/(\d+)\s*$/.exec(run.stdout)![1]);
  const mailFor = (pattern: RegExp, count = 1): Promise<Received[]> => eventually(
    () => `a mail with a subject like ${pattern} (received: ${received.map((m) => m.subject).join(' | ')})`,
    () => {
      const found = received.filter((mail) => pattern.test(mail.subject));
      return found.length >= count ? found : undefined;
    }, 20_000);

  it('BEGIN and END to --mail-user; FAIL to the user at mail_domain; subjects as Slurm\'s; a non-ASCII name is encoded', async () => {
    const ok = submit('--mail-type=BEGIN,END', '--mail-user=ada@example.org', '-J', 'résumé', '-t', '1', '--wrap', 'sleep 1');
    assert.equal(ok.code, 0, ok.stderr);
    const id = idOf(ok);
    const [began] = await mailFor(new RegExp(`^Slurm Job_id=${id} Name=résumé Began, Queued time 00:00:0\\d$`));
    assert.deepEqual(began.to, ['ada@example.org']);
    assert.equal(began.headers.to, 'ada@example.org');
    assert.match(began.headers.subject, /=\?UTF-8\?B\?/);
    const [ended] = await mailFor(new RegExp(`^Slurm Job_id=${id} Name=résumé Ended, Run time 00:00:0\\d, COMPLETED, ExitCode 0$`));
    assert.match(ended.body, new RegExp(`Job: +${id} \\(résumé\\)\nUser: +root\nState: +COMPLETED, exit code 0`));
    const failed = submit('--mail-type=FAIL', '-J', 'broken', '-t', '1', '--wrap', 'exit 3');
    assert.equal(failed.code, 0, failed.stderr);
    const fid = idOf(failed);
    const [fail] = await mailFor(new RegExp(`^Slurm Job_id=${fid} Name=broken Failed, Run time 00:00:0\\d, FAILED, ExitCode 3$`));
    assert.deepEqual(fail.to, ['root@cluster.test']);
    // FAIL only: a job that completes sends nothing.
    const quiet = idOf(submit('--mail-type=FAIL', '-J', 'quiet', '-t', '1', '--wrap', 'true'));
    await mailFor(new RegExp(`^Slurm Job_id=${fid} `));
    await sleep(1500);
    assert.equal(received.filter((mail) => mail.subject.includes(`Job_id=${quiet} `)).length, 0);
  });

  it('REQUEUE: a requeued job mails that it was requeued, with its run time', async () => {
    const id = idOf(submit('--mail-type=REQUEUE', '-J', 'again', '-t', '5', '--wrap', 'sleep 100'));
    for (let i = 0; i < 100; i++, await sleep(100)) {
      const show = spawnSync(process.execPath, [taras, 'show', String(id), '--json', '--controller', url], { encoding: 'utf8' });
      if ((JSON.parse(show.stdout) as { state: string }).state === 'RUNNING') break;
    }
    const requeue = spawnSync(process.execPath, [taras, 'requeue', String(id), '--controller', url], { encoding: 'utf8' });
    assert.equal(requeue.status, 0, requeue.stderr);
    await mailFor(new RegExp(`^Slurm Job_id=${id} Name=again Requeued, Run time 00:00:0\\d$`));
    spawnSync(process.execPath, [taras, 'cancel', String(id), '--controller', url], { encoding: 'utf8' });
  });

  it('an array mails once: its summary when the last task has ended', async () => {
    const run = submit('--array=0-2', '--mail-type=END', '-J', 'arr', '-t', '1', '--wrap', 'sleep 0.2');
    assert.equal(run.code, 0, run.stderr);
    const id = idOf(run);
    await mailFor(new RegExp(`^Slurm Array Summary Job_id=${id}_\\* \\(${id}\\) Name=arr Ended, COMPLETED, ExitCode 0$`));
    await sleep(1000);
    assert.equal(received.filter((mail) => mail.subject.includes(`Job_id=${id}_`)).length, 1);
  });

  it('refuses an address that is not one plain address, before anything is stored, from the CLI and the API', async () => {
    for (const bad of ['-oQ/tmp/evil', 'a@b.org,c@d.org', 'a@b.org -X/tmp/log']) {
      const run = submit(`--mail-user=${bad}`, '--mail-type=END', '-t', '1', '--wrap', 'true');
      assert.equal(run.code, 2, run.stderr);
      assert.match(run.stderr, /mail-user.*one mail address such as ada@example\.org/i);
    }
    const api = createApiClient({ socketPath: join(work, 'data', 'taras.sock') }, {});
    try {
      await assert.rejects(api.post('/jobs', {
        spec: {
          script: { path: join(work, 'x.sh'), text: '#!/bin/sh\ntrue\n', args: [] }, nodes: { min: 1 }, cpusPerTask: 1, timeLimitSeconds: 60, name: 'x', workingDir: work,
          output: 'x-%j.out', export: { all: false, variables: [] }, requeue: false, mailType: ['END'], mailUser: 'a@b.org\nBcc: victim@c.org',
        },
      }),
        (error: { status?: number; error?: string }) => error.status === 400 && /--mail-user got 'a@b\.org\nBcc: victim@c\.org'/.test(error.error ?? ''));
    } finally {
      api.close();
    }
  });
});
