// Day and night queues (seed 004, Argonne's Scheduler.config and
// Queue_Supervisor): the pure windows (src/config/day-night.ts), the
// [day_night] table of cluster.toml, and the controller engine (real store,
// real core, agents answered in-process): night jobs planned and started only
// within a night long enough, renewed to the next night when this one has
// become too short, the holiday switch (stored), the per-queue limits, and the
// per-user queued-work limit that holds further jobs back until earlier ones
// start, across a restart.

process.env.TZ = 'UTC'; // before any Date: the windows are local time, this file's local time is UTC

import assert from 'node:assert/strict';
import { spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { killHard, startDaemon, withController } from './daemon-process.js';
import { defaultClusterConfig, parseClusterConfig, type ClusterConfig } from '../src/config/cluster.js';
import { formatConfigError } from '../src/config/errors.js';
import { DAY_NIGHT_DEFAULTS, isDay, jobClass, nightPeriods, nightWindow, parseDayWindow, type DayNightConfig } from '../src/config/day-night.js';
import { ControllerEngine, SubmitRefused, type AgentLink, type JobReport } from '../src/controller/engine.js';
import { apiJob, apiStatus } from '../src/controller/views.js';
import type { JobId } from '../src/core/types.js';
import type { JobSpec } from '../src/jobspec/types.js';
import { openStore } from '../src/store/store.js';

const work = mkdtempSync(join(tmpdir(), 'taras-day-night-'));
const started: ChildProcess[] = [];
after(async () => {
  for (const child of started) await killHard(child);
  rmSync(work, { recursive: true, force: true });
});
let files = 0;

const at = (day: number, hour: number, minute = 0) => Date.UTC(2026, 10, day, hour, minute); // November 2026: the 25th is a Wednesday
const WEDNESDAY_NOON = at(25, 12);
const H = 3600;

const CONFIG: DayNightConfig = {
  days: [1, 2, 3, 4, 5], dayStartMinute: 9 * 60, dayEndMinute: 18 * 60, dayText: DAY_NIGHT_DEFAULTS.day,
  dayMaxNodeMinutes: 1920, dayMaxTimeSeconds: 9 * H, nightMaxNodeMinutes: 15360, queuedLimitNodeMinutes: 0,
};

describe('day and night windows (pure)', () => {
  it('parses the day window and names what is wrong', () => {
    assert.deepEqual(parseDayWindow('Mon-Fri 09:00-18:00'), { days: [1, 2, 3, 4, 5], startMinute: 540, endMinute: 1080 });
    assert.deepEqual(parseDayWindow('sat,Sun 8:30-12:00'), { days: [0, 6], startMinute: 510, endMinute: 720 });
    assert.deepEqual(parseDayWindow('Fri-Mon 10:00-24:00'), { days: [0, 1, 5, 6], startMinute: 600, endMinute: 1440 });
    assert.match(parseDayWindow('weekdays 9-18') as string, /is not DAYS HH:MM-HH:MM/);
    assert.match(parseDayWindow('Mon-Fry 09:00-18:00') as string, /"mon-fry" is not a weekday/);
    assert.match(parseDayWindow('Mon 18:00-09:00') as string, /must end after it starts/);
    assert.match(parseDayWindow('Mon-Sun 00:00-24:00') as string, /leaves no night/);
  });

  it('a job is a day job up to the node-minutes and hours of the day queue, else a night job, else refused', () => {
    assert.equal(jobClass(CONFIG, 4, 8 * H), 'day'); // 1920 node-minutes, 8 h
    assert.equal(jobClass(CONFIG, 1, 10 * H), 'night'); // 600 node-minutes but over 9 h
    assert.equal(jobClass(CONFIG, 5, 8 * H), 'night'); // 2400 node-minutes
    assert.match(jobClass(CONFIG, 64, 5 * H) as string, /19200 node-minutes \(64 nodes x 300 min\), more than the night queue's limit of 15360 \(night_max_node_minutes\)/);
    assert.match(jobClass(CONFIG, 1, 70 * H) as string, /longer than the longest night \(3780 min; the day is Mon-Fri 09:00-18:00\)/);
  });

  it('nights are what the day windows leave; a night job gets the first night long enough; on a holiday it is night now', () => {
    const nights = nightPeriods(CONFIG, WEDNESDAY_NOON, 7);
    assert.deepEqual(nights.slice(0, 3), [[at(25, 18), at(26, 9)], [at(26, 18), at(27, 9)], [at(27, 18), at(30, 9)]]);
    assert.deepEqual(nightWindow(CONFIG, WEDNESDAY_NOON, 10 * H, false), { startMs: at(25, 18), endMs: at(26, 9) });
    assert.deepEqual(nightWindow(CONFIG, WEDNESDAY_NOON, 20 * H, false), { startMs: at(27, 18), endMs: at(30, 9) }, 'a weekend job waits for Friday night');
    assert.deepEqual(nightWindow(CONFIG, at(25, 20), 10 * H, false), { startMs: at(25, 20), endMs: at(26, 9) }, 'at night: the rest of this night if it is long enough');
    assert.deepEqual(nightWindow(CONFIG, at(26, 1), 10 * H, false), { startMs: at(26, 18), endMs: at(27, 9) }, 'too little of this night left: the next');
    assert.deepEqual(nightWindow(CONFIG, WEDNESDAY_NOON, 10 * H, true), { startMs: WEDNESDAY_NOON, endMs: Infinity });
    assert.equal(isDay(CONFIG, WEDNESDAY_NOON, false), true);
    assert.equal(isDay(CONFIG, WEDNESDAY_NOON, true), false);
    assert.equal(isDay(CONFIG, at(28, 12), false), false, 'Saturday is night');
  });
});

describe('[day_night] in cluster.toml', () => {
  const base = '[cluster]\nname = "t"\n[[nodes]]\nnames = "n[1-2]"\ncpus = 8\nmemory = "16G"\n[[partitions]]\nname = "batch"\nnodes = "n[1-2]"\ndefault = true\n';
  it('is read with its defaults; a bad day names the key and the fix', () => {
    const parsed = parseClusterConfig(`${base}[day_night]\nqueued_limit_node_minutes = 100\n`, '/etc/taras/cluster.toml');
    assert.ok(parsed.ok, parsed.ok ? '' : JSON.stringify(parsed.errors));
    assert.deepEqual(parsed.config.dayNight, { ...CONFIG, queuedLimitNodeMinutes: 100 });
    const without = parseClusterConfig(base, '/etc/taras/cluster.toml');
    assert.ok(without.ok);
    assert.equal(without.config.dayNight, undefined, 'no [day_night] table: no day and night queues');
    const bad = parseClusterConfig(`${base}[day_night]\nday = "9-18"\nnight = 1\n`, '/etc/taras/cluster.toml');
    assert.equal(bad.ok, false);
    const text = bad.ok ? '' : bad.errors.map(formatConfigError).join('\n');
    assert.match(text, /day_night\.day.*"9-18" is not DAYS HH:MM-HH:MM.*day = "Mon-Fri 09:00-18:00"/s);
    assert.match(text, /day_night.*night.*unknown|unknown.*night/is);
  });
});

const agents: AgentLink = { start: async () => {}, signal: async () => {} };
/** Whole 8-CPU nodes for `hours`. */
const spec = (nodes: number, hours: number): JobSpec => ({
  script: { path: '/tmp/job.sh', text: '#!/bin/sh\necho hi\n', args: [] },
  nodes: { min: nodes, max: nodes }, cpusPerTask: 8, timeLimitSeconds: hours * H, name: 'job', workingDir: '/tmp', output: 'taras-%j.out',
  export: { all: true, variables: [] }, requeue: false,
});

function setup(dayNight: Partial<DayNightConfig> = {}, path = join(work, `store-${++files}.db`), startMs = WEDNESDAY_NOON, running: JobReport[] = []) {
  const config: ClusterConfig = { ...defaultClusterConfig(work, { count: 2, cpus: 8 }), policy: 'conservative', dayNight: { ...CONFIG, ...dayNight } };
  const store = openStore(path);
  const clock = { ms: startMs };
  const engine = new ControllerEngine(config, store, agents, () => clock.ms, () => {});
  const nodes = [...engine.nodes.keys()];
  engine.agentRegistered(nodes, running);
  /** Time moves on (the nodes stay up); the once-a-second work, then a pass. */
  const advance = (ms: number): JobId[] => {
    clock.ms = ms;
    engine.heartbeat(nodes);
    engine.refreshNightWindows();
    engine.touch();
    return engine.schedule();
  };
  return { path, store, clock, engine, advance };
}

describe('day and night queues in the controller engine', () => {
  it('a night job waits for the night (planned at 18:00, reason says why) and starts then; a day job starts at once', () => {
    const { store, engine, advance } = setup();
    const [day] = engine.submit([{ user: 'alice', spec: spec(1, 2) }]);
    const [night] = engine.submit([{ user: 'alice', spec: spec(1, 10) }]);
    assert.deepEqual(engine.schedule(), [day]);
    assert.equal(engine.plannedStartMs(night), at(25, 18));
    assert.match(apiJob(engine, store.job(night)!).reason ?? '', /^night job: over 1920 node-minutes or 9 h, it starts only at night and ends before the day \(Mon-Fri 09:00-18:00\)/);
    engine.jobReport({ jobId: day, run: 0, state: 'COMPLETED', exitCode: 0, endTimeMs: at(25, 14) });
    assert.deepEqual(advance(at(25, 17, 59)), []);
    assert.deepEqual(advance(at(25, 18)), [night]);
    assert.equal(apiStatus(engine, at(25, 18), null).dayNight?.now, 'night');
  });

  it('refuses a job over the night queue\'s limit or longer than the longest night, storing nothing', () => {
    const { store, engine } = setup({ nightMaxNodeMinutes: 1000 });
    assert.throws(() => engine.submit([{ user: 'alice', spec: spec(2, 10) }]), (e: unknown) => e instanceof SubmitRefused && /1200 node-minutes .* more than the night queue's limit of 1000/.test(e.message));
    assert.equal(store.jobs().length, 0);
  });

  it('a night job that can no longer end before the day gets the next night; a weekend-long job waits for Friday', () => {
    const { engine, advance } = setup();
    // Both nodes are busy until 20:00 with a day job (2 nodes x 8 h = 960 node-minutes).
    const [busy] = engine.submit([{ user: 'bob', spec: spec(2, 8) }]);
    const [night] = engine.submit([{ user: 'alice', spec: spec(1, 14) }]);
    const [weekend] = engine.submit([{ user: 'alice', spec: spec(1, 30) }]);
    assert.deepEqual(engine.schedule(), [busy]);
    assert.equal(engine.plannedStartMs(night), null, 'no start within tonight\'s window: 20:00 + 14 h is past 09:00');
    assert.equal(engine.plannedStartMs(weekend), at(27, 18), 'Friday 18:00');
    advance(at(25, 19, 0) + 1000); // past tonight's latest start (19:00)
    assert.equal(engine.plannedStartMs(night), at(26, 18), 'Thursday night');
  });

  it('the holiday switch makes every period night (night jobs start at once) and is kept across a restart', () => {
    const first = setup();
    const [night] = first.engine.submit([{ user: 'alice', spec: spec(1, 10) }]);
    assert.deepEqual(first.engine.schedule(), []);
    first.engine.setHoliday(true);
    assert.deepEqual(first.engine.schedule(), [night]);
    assert.equal(apiStatus(first.engine, WEDNESDAY_NOON, null).dayNight?.holiday, true);
    first.store.close();
    const second = setup({}, first.path);
    assert.equal(second.engine.holiday, true);
    assert.equal(second.engine.isDayNow(), false);
    second.engine.setHoliday(false);
    assert.equal(second.engine.isDayNow(), true);
    second.store.close();
  });

  it('a user\'s queued work past queued_limit_node_minutes is held back in submission order, joins the queue as earlier jobs start, also after a restart', () => {
    const first = setup({ queuedLimitNodeMinutes: 100 });
    const [bobs] = first.engine.submit([{ user: 'bob', spec: spec(2, 1) }]); // both nodes for an hour
    assert.deepEqual(first.engine.schedule(), [bobs]);
    const ids = first.engine.submit([1, 2, 3].map(() => ({ user: 'alice', spec: spec(1, 1) }))); // 60 node-minutes each
    const [carols] = first.engine.submit([{ user: 'carol', spec: spec(1, 1) }]);
    first.engine.touch();
    first.engine.schedule();
    assert.equal(first.engine.plannedStartMs(ids[0]!), WEDNESDAY_NOON + H * 1000);
    assert.equal(first.engine.plannedStartMs(ids[1]!), WEDNESDAY_NOON + H * 1000, 'queued: alice had 60 < 100 node-minutes queued');
    assert.equal(first.engine.plannedStartMs(ids[2]!), null, 'held back: 120 >= 100');
    assert.match(apiJob(first.engine, first.store.job(ids[2]!)!).reason ?? '', /^QueuedWorkLimit: alice has 120 node-minutes queued in the day queue, at the limit of 100/);
    assert.notEqual(first.engine.plannedStartMs(carols), null, 'another user is not held back');
    first.store.close();

    // A restart keeps the rule: the third is still held back.
    const second = setup({ queuedLimitNodeMinutes: 100 }, first.path, WEDNESDAY_NOON, [{ jobId: bobs, run: 0, state: 'RUNNING', exitCode: null, endTimeMs: null }]);
    second.engine.schedule();
    assert.equal(second.engine.plannedStartMs(ids[2]!), null);
    // Bob's job ends: alice's first two start, and the third joins the queue.
    second.engine.jobReport({ jobId: bobs, run: 0, state: 'COMPLETED', exitCode: 0, endTimeMs: WEDNESDAY_NOON + H * 1000 });
    const started = second.advance(WEDNESDAY_NOON + H * 1000);
    assert.ok(started.includes(ids[0]!) && started.includes(ids[1]!), `started: ${started.join(', ')}`);
    second.advance(WEDNESDAY_NOON + H * 1000 + 1000);
    assert.notEqual(second.engine.plannedStartMs(ids[2]!), null, 'the third is planned once the first two left the queue');
    assert.equal(apiJob(second.engine, second.store.job(ids[2]!)!).reason?.startsWith('QueuedWorkLimit') ?? false, false);
    second.store.close();
  });
});

describe('day and night queues with the real controller, agent and CLI', () => {
  it('taras status shows the period; a night job waits with the reason and the next night; taras admin holiday on starts it', { timeout: 60_000 }, async () => {
    const taras = join(resolve(dirname(fileURLToPath(import.meta.url)), '../..'), 'bin/taras.js');
    const dir = join(work, 'e2e');
    mkdirSync(dir);
    // Day is the half of the (UTC) day we are in, night the other half: the test is in the day whenever it runs.
    const morning = new Date().getUTCHours() < 12;
    const day = morning ? 'Mon-Sun 00:00-12:00' : 'Mon-Sun 12:00-24:00';
    writeFileSync(join(dir, 'cluster.toml'), `[cluster]\nname = "dn"\ndata_dir = "data"\n[[nodes]]\nnames = "node[01-02]"\ncpus = 2\nmemory = "1G"\n`
      + `[[partitions]]\nname = "batch"\nnodes = "ALL"\n[day_night]\nday = "${day}"\nday_max_time = "1h"\n`);
    writeFileSync(join(dir, 'job.sh'), '#!/bin/sh\necho night work\n');
    const controller = await startDaemon(taras, started, ['controller', '--config', join(dir, 'cluster.toml'), '--port', '0'], /listening on (http:\/\/127\.0\.0\.1:\d+)/, dir);
    const url = controller.match[1]!;
    await startDaemon(taras, started, ['agent', '--controller', url, '--virtual', '2x2', '--data', join(dir, 'data', 'agent'), '--key', join(dir, 'data', 'cluster.key')], /registered 2 node/, dir);
    const cli = (...args: string[]) => spawnSync(process.execPath, [taras, ...withController(args, url)], { cwd: dir, encoding: 'utf8', timeout: 30_000 });

    const status = cli('status');
    assert.match(status.stdout, new RegExp(`Queues: +day now; day is ${day}; day jobs up to 1920 node-min and 1 h, night jobs up to 15360 node-min`));
    const submitted = cli('submit', '-t', '120', '--json', 'job.sh');
    assert.equal(submitted.status, 0, submitted.stderr);
    const { id } = JSON.parse(submitted.stdout) as { id: number };
    const nightStart = new Date();
    nightStart.setUTCHours(morning ? 12 : 24, 0, 0, 0);
    let shown = JSON.parse(cli('show', String(id), '--json').stdout) as { state: string; reason: string | null; plannedStart: string | null };
    for (let i = 0; i < 50 && shown.plannedStart === null; i++) {
      await new Promise((r) => setTimeout(r, 100));
      shown = JSON.parse(cli('show', String(id), '--json').stdout) as typeof shown;
    }
    assert.equal(shown.state, 'PENDING');
    assert.equal(shown.plannedStart, nightStart.toISOString(), 'planned at the start of the night');
    assert.match(shown.reason ?? '', /^night job: .* it starts only at night and ends before the day/);

    const holiday = cli('admin', 'holiday', 'on');
    assert.equal(holiday.status, 0, holiday.stderr);
    assert.match(holiday.stdout, /^Holiday on: every period is night; night jobs may start at any time\.$/m);
    const waited = cli('wait', String(id));
    assert.match(waited.stdout, /COMPLETED \(exit code 0\)/);
    assert.match(cli('status').stdout, /Queues: +holiday \(night all the time\)/);
    const bad = cli('admin', 'holiday', 'maybe');
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /'maybe' is neither on nor off \(taras admin holiday on\|off\)/);
  });
});
