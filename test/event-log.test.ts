// The controller's event log (cluster.toml's event_log keys): structured JSON
// lines through pino for the configured kinds, from a real controller and the
// real CLI; size rotation of the file with a real EventLog.

import { withController } from './daemon-process.js';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { readClusterConfig } from '../src/config/load.js';
import { startController } from '../src/controller/daemon.js';
import { EventLog } from '../src/controller/event-log.js';
import { jobId } from '../src/core/types.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const work = mkdtempSync(join(tmpdir(), 'taras-eventlog-'));
after(() => rmSync(work, { recursive: true, force: true }));

const lines = (path: string) => readFileSync(path, 'utf8').trimEnd().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);

describe('event log', () => {
  it('is readable by its owner only (0600), whatever the umask; a file left 0644 is narrowed', () => {
    const path = join(work, 'private', 'events.log');
    const umask = process.umask(0o022);
    try {
      const log = new EventLog({ path, kinds: ['submit'], maxBytes: 1024 * 1024, keep: 2 });
      log.close();
      assert.equal(statSync(path).mode & 0o777, 0o600);
      chmodSync(path, 0o644); // as an older Taras left it
      new EventLog({ path, kinds: ['submit'], maxBytes: 1024 * 1024, keep: 2 }).close();
      assert.equal(statSync(path).mode & 0o777, 0o600);
    } finally {
      process.umask(umask);
    }
  });

  it('is never opened through a link, in a folder others may write, or in a file not its own (red team: root appended to a file a user linked)', () => {
    const settings = (path: string) => ({ path, kinds: ['submit' as const], maxBytes: 1024 * 1024, keep: 2 });
    const shared = join(work, 'shared');
    mkdirSync(shared, { mode: 0o777 });
    chmodSync(shared, 0o1777); // as /tmp
    assert.throws(() => new EventLog(settings(join(shared, 'events.log'))),
      /^Error: event log .*shared\/events\.log: its folder .*shared may be written by other users \(owner uid \d+, mode 1777\), who could put a link there to another file: set event_log in cluster\.toml/);
    const own = join(work, 'own');
    mkdirSync(own, { mode: 0o755 });
    const victim = join(work, 'victim');
    writeFileSync(victim, 'untouched\n', { mode: 0o644 });
    symlinkSync(victim, join(own, 'events.log'));
    assert.throws(() => new EventLog(settings(join(own, 'events.log'))), /events\.log is a symbolic link: the log is written, rotated and removed by name only as a file of its own/);
    assert.equal(readFileSync(victim, 'utf8'), 'untouched\n');
    assert.equal(statSync(victim).mode & 0o777, 0o644, 'not made 0600 either');
  });

  it('is never a file that is not an event log, nor are its rotated copies: the database, or anyone\'s file, is refused in one line and left as it was (it was appended to, made 0600 and rotated away)', async () => {
    const dir = join(work, 'foreign');
    mkdirSync(dir, { mode: 0o700 });
    const file = join(dir, 'cluster.toml');
    const config = (eventLog: string) => `[cluster]\nname = "fl"\ndata_dir = "data"\nevent_log = "${eventLog}"\nevent_log_max_size = "1M"\nevent_log_keep = 2\n`
      + '[[nodes]]\nnames = "n[1-2]"\ncpus = 2\nmemory = "1G"\n[[partitions]]\nname = "batch"\nnodes = "ALL"\n';
    // A cluster with jobs in its database, then the database named as the event log.
    writeFileSync(file, config('events.log'));
    const first = await readClusterConfig(file);
    assert.ok(first.ok, JSON.stringify(first));
    const controller = await startController({ config: first.config, configPath: file, clusterKey: null, port: 0, log: () => {} });
    await promisify(execFile)(process.execPath, [join(root, 'bin/taras.js'), ...withController(['submit', '-t', '5', '--wrap', 'true'], `unix:${controller.socketPath}`)], { cwd: dir });
    await controller.close();
    const database = join(dir, 'data', 'taras.db');
    const before = readFileSync(database);
    const notes = join(dir, 'data', 'notes.txt');
    writeFileSync(notes, 'keep me\n', { mode: 0o644 });
    const refused = async (eventLog: string, named: string, problem: RegExp): Promise<void> => {
      writeFileSync(file, config(eventLog));
      const run = await promisify(execFile)(process.execPath, [join(root, 'bin/taras.js'), 'controller', '--config', file, '--port', '0'], { cwd: dir, timeout: 20_000 })
        .then(() => ({ code: 0, stderr: '' }), (error: { code: number; stderr: string }) => error);
      assert.equal(run.code, 1, run.stderr);
      const lines = run.stderr.trimEnd().split('\n');
      assert.equal(lines.length, 1, run.stderr);
      assert.match(lines[0], new RegExp(`^error: event log ${named.replace(/[.]/g, '\\.')} is `));
      assert.match(lines[0], problem);
      assert.match(lines[0], /set event_log in cluster\.toml to a new file name, or move this file aside$/);
    };
    await refused('taras.db', database, /is not an event log \(it does not begin with one of the log's entries\)/);
    assert.deepEqual(readFileSync(database), before, 'the database untouched');
    await refused('notes.txt', notes, /is not an event log/);
    assert.equal(readFileSync(notes, 'utf8'), 'keep me\n');
    assert.equal(statSync(notes).mode & 0o777, 0o644, 'not made 0600 either');
    // A rotated copy the log would overwrite: refused too. A log of its own (the one written above) is taken.
    writeFileSync(join(dir, 'data', 'events.log.2'), 'precious\n');
    await refused('events.log', join(dir, 'data', 'events.log.2'), /is not an event log/);
    assert.equal(readFileSync(join(dir, 'data', 'events.log.2'), 'utf8'), 'precious\n');
    rmSync(join(dir, 'data', 'events.log.2'));
    assert.ok(lines(join(dir, 'data', 'events.log')).length >= 2);
    new EventLog({ path: join(dir, 'data', 'events.log'), kinds: ['submit'], maxBytes: 1024 * 1024, keep: 2 }).close();
    // Its own log whose first entry is longer than what is read of it (a startup listing 20,000 jobs), or cut short by
    // a crash, or after zeroed bytes from a power loss: taken (the first was refused).
    const own = join(dir, 'data', 'events.log');
    writeFileSync(own, `{"level":30,"time":"2026-11-29T07:00:00.000Z","kind":"startup","jobs":[${Array.from({ length: 20_000 }, (_, i) => i + 1).join(',')}],"message":"startup"}\n`);
    new EventLog({ path: own, kinds: ['submit'], maxBytes: 1024 * 1024, keep: 2 }).close();
    writeFileSync(own, '{"level":30,"time":"2026-11-29T07:00:00.000Z","kind":"sta');
    new EventLog({ path: own, kinds: ['submit'], maxBytes: 1024 * 1024, keep: 2 }).close();
    writeFileSync(own, Buffer.concat([Buffer.alloc(4096), Buffer.from('{"level":30,"time":"2026-11-29T07:00:00.000Z","kind":"startup"}\n')]));
    new EventLog({ path: own, kinds: ['submit'], maxBytes: 1024 * 1024, keep: 2 }).close();
    // A folder, or a place no file can be made: one line, not a stack trace.
    await refused('.', join(dir, 'data'), /is not a regular file/);
  });

  it('writes startup, submit, remove and shutdown as JSON lines, and only the kinds asked for', async () => {
    const file = join(work, 'cluster.toml');
    writeFileSync(file, `[cluster]\nname = "ev"\ndata_dir = "data"\nevent_log = "events.log"\nevent_log_kinds = ["startup", "submit", "remove", "shutdown"]\n`
      + '[[nodes]]\nnames = "n[1-2]"\ncpus = 2\nmemory = "1G"\n[[partitions]]\nname = "batch"\nnodes = "ALL"\n');
    const parsed = await readClusterConfig(file);
    assert.ok(parsed.ok, JSON.stringify(parsed));
    assert.deepEqual(parsed.config.eventLog, { path: join(work, 'data', 'events.log'), kinds: ['startup', 'submit', 'remove', 'shutdown'], maxBytes: 100 * 1024 * 1024, keep: 5 });
    const controller = await startController({ config: parsed.config, configPath: file, clusterKey: null, port: 0, log: () => {} });
    const taras = (...args: string[]) => promisify(execFile)(process.execPath, [join(root, 'bin/taras.js'), ...withController(args, `unix:${controller.socketPath}`)], { cwd: work });
    writeFileSync(join(work, 'job.sh'), '#!/bin/sh\n#TARAS -t 5 -J logged\ntrue\n');
    const { id } = JSON.parse((await taras('submit', '--json', 'job.sh')).stdout) as { id: number };
    await taras('cancel', String(id));
    await controller.close();

    const entries = lines(parsed.config.eventLog!.path);
    assert.deepEqual(entries.map((e) => e.kind), ['startup', 'submit', 'remove', 'shutdown']);
    const [startup, submit, remove, shutdown] = entries;
    assert.deepEqual(startup.jobs, []);
    assert.deepEqual([submit.jobId, submit.user, submit.name, submit.partition, submit.timeLimitSeconds], [id, 'root', 'logged', 'batch', 300]);
    assert.deepEqual([remove.jobId, remove.state, remove.reason], [id, 'CANCELLED', 'cancelled by root']);
    assert.deepEqual([shutdown.phase, shutdown.jobsLeftRunning], ['finished', []]);
    for (const entry of entries) {
      assert.equal(entry.level, 30);
      assert.match(String(entry.time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
  });

  it('rotates the file by size, keeping event_log_keep old files', () => {
    const path = join(work, 'rotating.log');
    const log = new EventLog({ path, kinds: ['submit', 'error'], maxBytes: 1000, keep: 2 });
    const job = { user: 'ada', name: 'x', partition: 'batch', scriptPath: null, script: '', request: { timeLimitSeconds: 60 } } as const;
    for (let i = 1; i <= 40; i++) {
      const record = { ...job, id: jobId(i), state: 'PENDING', held: false, reason: null, submitTimeMs: i, eligibleTimeMs: i, startTimeMs: null, endTimeMs: null,
        exitCode: null, nodes: [], plannedStartMs: null, reservedNodes: [], requeueCount: 0, usage: null, exitSignal: null, queuePlace: null, amended: null, lastSeq: 1 } as const;
      log.onJobEvent({ jobId: jobId(i), seq: 1, timeMs: i, event: { type: 'submitted', ...job } }, record);
    }
    log.record('error', { error: 'boom' });
    log.record('start', { jobId: 1 }); // not a kind asked for
    log.close();
    assert.ok(existsSync(`${path}.1`) && existsSync(`${path}.2`) && !existsSync(`${path}.3`), 'two old files kept');
    const all = [...lines(`${path}.2`), ...lines(`${path}.1`), ...(readFileSync(path, 'utf8') === '' ? [] : lines(path))];
    for (const file of [path, `${path}.1`, `${path}.2`]) assert.ok(readFileSync(file).length < 1300, `${file} stays near the size`);
    const ids = all.filter((e) => e.kind === 'submit').map((e) => e.jobId as number);
    assert.deepEqual(ids, ids.slice().sort((a, b) => a - b), 'in order across the files');
    assert.equal(ids.at(-1), 40);
    assert.equal(all.at(-1)?.kind, 'error');
    assert.ok(!all.some((e) => e.kind === 'start'));
  });
});
