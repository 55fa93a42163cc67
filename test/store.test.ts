// The controller's store (src/store): ids, the event log and its replay,
// rebuild, migrations, the CLI's queries, and crash safety with a real writer
// process killed with SIGKILL. Run as a child with TARAS_STORE_CRASH_CHILD set,
// this file is that writer instead of a test.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { SeededRandom } from '../src/core/random.js';
import { jobId, type JobId } from '../src/core/types.js';
import { replay, TransitionError, type JobRecord, type NewJob, type TransitionEvent } from '../src/store/events.js';
import { migrate, MIGRATIONS, SCHEMA_VERSION } from '../src/store/schema.js';
import { openStore, StoreError, type Store } from '../src/store/store.js';
import { recordToRow } from '../src/store/rows.js';

const CHILD_ENV = 'TARAS_STORE_CRASH_CHILD';
const T0 = 1_767_225_600_000; // 2026-01-01T00:00:00Z, in ms

function newJob(name: string, user = 'ada'): NewJob {
  return {
    user,
    name,
    partition: 'batch',
    scriptPath: `/home/${user}/${name}.sh`,
    script: `#!/bin/sh\n#TARAS --nodes=2\nsrun ./${name}\n`,
    request: { nodes: 2, cpusPerTask: 4, memoryMiB: 2048, timeLimitMinutes: 30, output: 'out-%j.txt', features: ['ib'] },
  };
}

/** A jobs row as SQLite holds it, every column. */
function rawRow(store: Store, id: JobId): Record<string, unknown> {
  return (store as unknown as { db: { prepare(sql: string): { get(id: number): Record<string, unknown> } } }).db.prepare('SELECT * FROM jobs WHERE id = ?').get(id);
}

/** The row the store keeps must be exactly what its log replays to. */
function assertRowIsReplay(store: Store, id: JobId): JobRecord {
  const row = store.job(id);
  assert.ok(row, `job ${id} has a row`);
  assert.deepEqual(row, replay(store.events(id)), `job ${id}: row equals replay(events)`);
  return row;
}

/**
 * The crash test's writer: submits batches in a loop and prints "id name" for
 * each job only after submitMany returned (committed) and durable() resolved. Also starts and ends
 * some of its jobs, so kills land inside event appends too. Never returns.
 */
async function runCrashChild(path: string, seed: number): Promise<never> {
  const store = openStore(path);
  const random = new SeededRandom(seed);
  const submitted: JobId[] = [];
  const running: JobId[] = [];
  for (let n = 0; ; ) {
    const batch = Array.from({ length: random.int(1, 8) }, () => newJob(`crash-${seed}-${n++}`, `user${random.int(1, 3)}`));
    const ids = store.submitMany(batch, Date.now());
    await store.durable(); // as the controller does before it answers
    // fs.writeSync: the line is in the pipe before the next commit starts.
    writeSync(1, ids.map((id, i) => `${id} ${batch[i].name}\n`).join(''));
    submitted.push(...ids);
    if (random.chance(0.5) && submitted.length > 0) {
      const id = submitted.shift()!;
      store.append(id, { type: 'started', nodes: [`node${random.int(1, 16)}`] }, Date.now());
      running.push(id);
    }
    if (random.chance(0.4) && running.length > 0) {
      store.append(running.shift()!, { type: 'ended', state: 'COMPLETED', exitCode: 0 }, Date.now());
    }
  }
}

/** Spawns the writer on `path`, kills it with SIGKILL `killAfterMs` after its first acknowledgement (or after spawn). */
async function killWriter(path: string, seed: number, killAfterMs: number, fromSpawn: boolean): Promise<Array<[number, string]>> {
  const env: NodeJS.ProcessEnv = { ...process.env, [CHILD_ENV]: path, TARAS_STORE_CRASH_SEED: String(seed) };
  delete env.NODE_TEST_CONTEXT; // the child is a plain script, not a test-runner subprocess
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url)], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  let errors = '';
  let timer: NodeJS.Timeout | undefined;
  const arm = (): void => {
    timer ??= setTimeout(() => child.kill('SIGKILL'), killAfterMs);
  };
  if (fromSpawn) arm();
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
    arm();
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (errors += chunk));
  const signal = await new Promise<NodeJS.Signals | null>((resolve) => child.on('close', (_code, sig) => resolve(sig)));
  clearTimeout(timer);
  assert.equal(signal, 'SIGKILL', `the writer ended on its own: ${errors}`);
  // Only complete lines are acknowledgements; a half-written last line is not.
  return output.split('\n').slice(0, -1).map((line) => {
    const [id, name] = line.split(' ');
    return [Number(id), name];
  });
}

if (process.env[CHILD_ENV] !== undefined) {
  void runCrashChild(process.env[CHILD_ENV], Number(process.env.TARAS_STORE_CRASH_SEED));
} else {
  let dir = '';
  let files = 0;
  const freshPath = (): string => join(dir, `store-${++files}.db`);
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'taras-store-test-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  describe('store: ids and durability settings', () => {
    it('job ids are unique and increase across close and reopen', () => {
      const path = freshPath();
      let store = openStore(path);
      assert.deepEqual(store.submitMany([newJob('a'), newJob('b'), newJob('c')], T0), [1, 2, 3]);
      store.close();
      store = openStore(path);
      assert.deepEqual(store.submitMany([newJob('d'), newJob('e')], T0 + 1), [4, 5]);
      assert.equal(store.submit(newJob('f'), T0 + 2), 6);
      assert.deepEqual(store.jobs().map((job) => [job.id, job.name]), [[1, 'a'], [2, 'b'], [3, 'c'], [4, 'd'], [5, 'e'], [6, 'f']]);
      store.close();
    });

    it('submitRecords returns exactly the records a read back gives, event payload included', () => {
      const store = openStore(freshPath());
      const records = store.submitRecords([newJob('a'), newJob('b', 'bob')], T0);
      assert.deepEqual(records, records.map((record) => store.job(record.id)));
      for (const record of records) assert.deepEqual(replay(store.events(record.id)), record);
      store.close();
    });

    it('a batch is stored whole or not at all, and a failed batch uses up no ids', () => {
      const store = openStore(freshPath());
      assert.deepEqual(store.submitMany([newJob('a')], T0), [1]);
      const broken = { ...newJob('b'), user: null } as unknown as NewJob; // violates NOT NULL
      assert.throws(() => store.submitMany([newJob('ok'), broken], T0 + 1), /NOT NULL/);
      assert.deepEqual(store.jobs().map((job) => job.name), ['a']);
      assert.deepEqual(store.events(jobId(2)), []);
      assert.deepEqual(store.submitMany([newJob('c')], T0 + 2), [2]);
      store.close();
    });

    it('the file is in WAL mode; the barrier and process durabilities commit with synchronous NORMAL, full with FULL', () => {
      const path = freshPath();
      const store = openStore(path);
      assert.equal(store.durability, 'barrier');
      assert.equal(store.synchronous, 'NORMAL');
      store.close();
      const raw = new Database(path);
      assert.equal(raw.pragma('journal_mode', { simple: true }), 'wal');
      raw.close();
      const full = openStore(path, { durability: 'full' });
      assert.equal(full.synchronous, 'FULL');
      full.close();
      const processOnly = openStore(path, { durability: 'process' });
      assert.equal(processOnly.synchronous, 'NORMAL');
      processOnly.close();
    });

    it('durable() resolves once the commits before it are synced, one sync serving many commits', async () => {
      const store = openStore(freshPath());
      await store.durable(); // nothing to sync
      assert.equal(store.syncs, 0);
      const waits: Promise<void>[] = [];
      for (let i = 0; i < 100; i++) {
        store.submit(newJob(`j${i}`), T0 + i);
        waits.push(store.durable());
      }
      await Promise.all(waits);
      assert.ok(store.syncs >= 1 && store.syncs <= 3, `100 commits in one tick took ${store.syncs} syncs (expected 1 or 2: the first, then one for the rest)`);
      const before = store.syncs;
      await store.durable(); // everything is synced already
      assert.equal(store.syncs, before);
      store.submit(newJob('late'), T0 + 200);
      const late = store.durable();
      store.close();
      await assert.rejects(late, /closed before its last commits were synced/);
      // Asked after the close, with the same commit still unsynced: refused too, never left waiting.
      await assert.rejects(store.durable(), /closed before its last commits were synced/);
      await assert.rejects(store.durable({ now: true }), /closed before its last commits were synced/);
    });

    it('durable() asked inside a batch (an order sent by an action the batch stores) resolves once the batch\'s commit is synced', async () => {
      const store = openStore(freshPath());
      store.submit(newJob('before'), T0);
      await store.durable();
      const before = store.syncs;
      let waited: Promise<void> | undefined;
      let resolvedBeforeCommit = false;
      store.batch(() => {
        store.submit(newJob('in the batch'), T0 + 1);
        waited = store.durable();
        void waited.then(() => (resolvedBeforeCommit = store.syncs === before));
      });
      await waited;
      assert.equal(resolvedBeforeCommit, false, 'resolved before the batch\'s commit was synced');
      assert.ok(store.syncs > before);
      // A batch rolled back after its writes: nothing that follows from it is acknowledged.
      let rolledBack: Promise<void> | undefined;
      assert.throws(() => store.batch(() => {
        store.submit(newJob('rolled back'), T0 + 2);
        rolledBack = store.durable();
        throw new Error('after the writes');
      }), /after the writes/);
      await assert.rejects(rolledBack!, /after the writes/);
      await store.durable();
      store.close();
    });

    for (const [where, syncInPlaceBelowMs] of [['in place', undefined], ['on the thread pool', 0]] as const) it(`after one failed sync (${where}) nothing is acknowledged again, even if a later sync would succeed`, async () => {
      const store = openStore(freshPath(), { syncInPlaceBelowMs });
      store.submit(newJob('a'), T0);
      await store.durable();
      // Make the next fdatasync fail (EBADF) by closing the barrier's descriptor under it.
      const barrier = store as unknown as { walFd: number | null };
      closeSync(barrier.walFd!);
      store.submit(newJob('b'), T0 + 1);
      await assert.rejects(store.durable(), /the disk refused to sync the write-ahead log .*nothing more is acknowledged/);
      barrier.walFd = null; // a fresh descriptor would sync fine now
      store.submit(newJob('c'), T0 + 2);
      await assert.rejects(store.durable(), /nothing more is acknowledged/);
      store.close();
    });

    it('settings such as the message of the day survive a reopen; deleting one forgets it', () => {
      const path = freshPath();
      let store = openStore(path);
      assert.equal(store.setting('motd'), undefined);
      store.setSetting('motd', 'maintenance on Friday');
      store.setSetting('motd', 'maintenance on Saturday');
      store.setSetting('limits', { maxJobsPerUser: 500 });
      store.close();
      store = openStore(path);
      assert.equal(store.setting('motd'), 'maintenance on Saturday');
      assert.deepEqual(store.setting('limits'), { maxJobsPerUser: 500 });
      store.deleteSetting('motd');
      assert.equal(store.setting('motd'), undefined);
      store.close();
    });
  });

  describe('store: where the barrier syncs', () => {
    /** `count` commits in one turn of the event loop, each followed by durable(); resolves once all are synced. */
    const commitsOfOneTurn = (store: Store, count: number) => Promise.all(Array.from({ length: count }, (_, i) => {
      store.submit(newJob(`j${i}`), T0 + i);
      return store.durable();
    }));

    it('on a quick disk, every commit of one turn of the event loop shares one sync, on the calling thread', async () => {
      const store = openStore(freshPath());
      try {
        await commitsOfOneTurn(store, 5);
        assert.deepEqual([store.syncs, store.syncsInPlace], [1, 1]);
        store.submit(newJob('next'), T0 + 10);
        await store.durable();
        assert.deepEqual([store.syncs, store.syncsInPlace], [2, 2]);
      } finally {
        store.close();
      }
    });

    it('with syncInPlaceBelowMs 0 every sync runs on the thread pool, and one serves the commits made before it began', async () => {
      const store = openStore(freshPath(), { syncInPlaceBelowMs: 0 });
      try {
        await commitsOfOneTurn(store, 5);
        assert.equal(store.syncsInPlace, 0);
        assert.ok(store.syncs >= 1 && store.syncs <= 2, `5 commits in one turn took ${store.syncs} syncs (expected the first, then one for the rest)`);
      } finally {
        store.close();
      }
    });

    it('a disk slower than the bound on average moves the syncs to the pool; a quicker average brings them back', async () => {
      const store = openStore(freshPath(), { syncInPlaceBelowMs: 1e-9 }); // any real sync is slower than this
      try {
        store.submit(newJob('a'), T0);
        await store.durable();
        assert.deepEqual([store.syncs, store.syncsInPlace], [1, 1], 'the first sync runs in place (no average yet)');
        store.submit(newJob('b'), T0 + 1);
        await store.durable();
        assert.deepEqual([store.syncs, store.syncsInPlace], [2, 1], 'after a slow one, the next runs on the pool');
        (store as unknown as { syncInPlaceBelowMs: number }).syncInPlaceBelowMs = Infinity; // as if the disk's average fell below the bound
        store.submit(newJob('c'), T0 + 2);
        await store.durable();
        assert.deepEqual([store.syncs, store.syncsInPlace], [3, 2]);
        assert.deepEqual(store.jobs().map((job) => job.name), ['a', 'b', 'c']);
      } finally {
        store.close();
      }
    });

    it('a transaction that fails stores nothing and uses up no ids; the next one is stored and synced', async () => {
      const store = openStore(freshPath());
      try {
        const bad = { ...newJob('bad'), name: null } as unknown as NewJob; // jobs.job_name is NOT NULL
        assert.throws(() => store.submitRecords([newJob('a'), bad], T0), /NOT NULL constraint failed: jobs\.job_name/);
        assert.equal(store.jobs().length, 0);
        assert.deepEqual(store.submitRecords([newJob('b')], T0 + 1).map((record) => record.id), [1]);
        await store.durable(); // the failed transaction did not fail the store
        assert.equal(store.syncs, 1);
      } finally {
        store.close();
      }
    });
  });

  describe('store: the event log and its replay', () => {
    // Each step: the event, then what the job's row must say afterwards.
    type Step = [TransitionEvent, Partial<JobRecord>];
    const lives: Record<string, Step[]> = {
      'planned, held, released, started, signalled, completing, completed': [
        [{ type: 'planned', plannedStartMs: T0 + 60_000, nodes: ['node01', 'node02'] }, { state: 'PENDING', plannedStartMs: T0 + 60_000, reservedNodes: ['node01', 'node02'] }],
        [{ type: 'held', reason: 'user hold' }, { state: 'PENDING', held: true, reason: 'user hold' }],
        [{ type: 'released' }, { state: 'PENDING', held: false, reason: null }],
        [{ type: 'started', nodes: ['node01', 'node02'] }, { state: 'RUNNING', nodes: ['node01', 'node02'], plannedStartMs: T0 + 60_000 }],
        [{ type: 'signalled', signal: 'SIGUSR1', reason: 'time limit warning' }, { state: 'RUNNING' }],
        [{ type: 'completing' }, { state: 'COMPLETING' }],
        [{ type: 'ended', state: 'COMPLETED', exitCode: 0 }, { state: 'COMPLETED', exitCode: 0, nodes: ['node01', 'node02'] }],
      ],
      'node failure, requeue, second run times out': [
        [{ type: 'started', nodes: ['node03'] }, { state: 'RUNNING', nodes: ['node03'] }],
        [{ type: 'ended', state: 'NODE_FAIL', exitCode: null, reason: 'node03 silent for 60 s' }, { state: 'NODE_FAIL', reason: 'node03 silent for 60 s' }],
        [{ type: 'requeued', reason: 'node failure' }, { state: 'PENDING', requeueCount: 1, nodes: [], startTimeMs: null, endTimeMs: null, exitCode: null }],
        [{ type: 'started', nodes: ['node04'] }, { state: 'RUNNING', nodes: ['node04'], requeueCount: 1 }],
        [{ type: 'signalled', signal: 'SIGTERM', reason: 'time limit' }, { state: 'RUNNING' }],
        [{ type: 'ended', state: 'TIMEOUT', exitCode: null }, { state: 'TIMEOUT' }],
      ],
      'cancelled while pending': [[{ type: 'ended', state: 'CANCELLED', exitCode: null, reason: 'by ada' }, { state: 'CANCELLED', startTimeMs: null, nodes: [] }]],
      'fails with its exit code': [
        [{ type: 'started', nodes: ['node05'] }, { state: 'RUNNING' }],
        [{ type: 'ended', state: 'FAILED', exitCode: 3 }, { state: 'FAILED', exitCode: 3 }],
      ],
      'out of memory': [
        [{ type: 'started', nodes: ['node06'] }, { state: 'RUNNING' }],
        [{ type: 'ended', state: 'OUT_OF_MEMORY', exitCode: 137 }, { state: 'OUT_OF_MEMORY', exitCode: 137 }],
      ],
      'requeued while running, held, released': [
        [{ type: 'started', nodes: ['node07'] }, { state: 'RUNNING' }],
        [{ type: 'requeued' }, { state: 'PENDING', requeueCount: 1, reason: null }],
        [{ type: 'held' }, { held: true }],
        [{ type: 'released' }, { held: false }],
      ],
    };

    // `known`: each append is given the record the last one returned, as the controller gives its active
    // jobs' records (only the changed columns are written either way: the raw row is checked too).
    for (const [life, steps] of Object.entries(lives)) for (const known of [false, true]) {
      it(`a job's row equals the replay of its log after every event: ${life}${known ? ', the caller knowing the record' : ''}`, () => {
        const store = openStore(freshPath());
        const id = store.submit(newJob('life'), T0);
        const first = assertRowIsReplay(store, id);
        assert.equal(first.state, 'PENDING');
        assert.equal(first.submitTimeMs, T0);
        let last = first;
        for (const [index, [event, expected]] of steps.entries()) {
          const at = T0 + 1000 * (index + 1);
          const returned = store.append(id, event, at, known ? last : undefined);
          last = returned;
          const row = assertRowIsReplay(store, id);
          assert.deepEqual(rawRow(store, id), { ...recordToRow(replay(store.events(id))), purged_ms: null }, `after '${event.type}': every column as the replay makes it`);
          assert.deepEqual(returned, row, 'append returns the committed record');
          assert.deepEqual({ ...row, ...expected }, row, `after '${event.type}'`);
          assert.equal(row.lastSeq, index + 2);
          if (event.type === 'started') assert.equal(row.startTimeMs, at);
          if (event.type === 'ended') assert.equal(row.endTimeMs, at);
        }
        assert.equal(store.job(id)!.submitTimeMs, T0, 'submit time never changes, requeue included');
        assert.deepEqual(store.events(id).map((stored) => stored.seq), [1, ...steps.map((_, i) => i + 2)]);
        store.close();
      });
    }

    it('an event that does not fit the state is refused, and nothing of its batch is stored', () => {
      const store = openStore(freshPath());
      const [done, waiting] = store.submitMany([newJob('done'), newJob('waiting')], T0);
      store.append(done, { type: 'started', nodes: ['node01'] }, T0 + 1);
      store.append(done, { type: 'ended', state: 'COMPLETED', exitCode: 0 }, T0 + 2);
      const before = { done: store.jobWithEvents(done), waiting: store.jobWithEvents(waiting) };
      assert.throws(
        () => store.appendMany([{ jobId: waiting, event: { type: 'started', nodes: ['node02'] } }, { jobId: done, event: { type: 'started', nodes: ['node02'] } }], T0 + 3),
        (error: unknown) => error instanceof TransitionError && /job 1: cannot apply 'started' to a COMPLETED job: only pending jobs start/.test(error.message),
      );
      assert.deepEqual({ done: store.jobWithEvents(done), waiting: store.jobWithEvents(waiting) }, before);
      assert.throws(() => store.append(waiting, { type: 'ended', state: 'TIMEOUT', exitCode: null }, T0 + 4), /never started can only end CANCELLED or FAILED/);
      assert.throws(() => store.append(waiting, { type: 'released' }, T0 + 4), /only held pending jobs/);
      store.append(waiting, { type: 'held' }, T0 + 5);
      assert.throws(() => store.append(waiting, { type: 'started', nodes: ['node02'] }, T0 + 6), /release the job before starting it/);
      assert.throws(() => store.append(jobId(99), { type: 'held' }, T0 + 7), (error: unknown) => error instanceof StoreError && /job 99 does not exist/.test(error.message));
      store.close();
    });

    it('lists of ids, users or states of any length share one statement each: no request grows the kept statements (red team, issue 9)', () => {
      const store = openStore(freshPath());
      const ids = store.submitMany([newJob('a'), newJob('b', 'bob'), newJob('c')], T0);
      const kept = () => (store as unknown as { filterStatements: Map<string, unknown> }).filterStatements.size;
      for (let length = 1; length <= 300; length++) {
        const asked = Array.from({ length }, (_, i) => ids[i % 3]);
        const found = store.accounting({ fromMs: T0, toMs: T0 + 1000, jobIds: asked, users: ['ada', 'bob', 'ada'], states: ['PENDING', 'PENDING'] });
        assert.deepEqual(found.map((row) => row.id), ids.slice(0, Math.min(3, length)), `${length} ids, duplicates among them`);
        assert.equal(store.jobs({ states: Array.from({ length }, () => 'PENDING' as const) }).length, 3);
      }
      assert.ok(kept() <= 4, `${kept()} statements kept`);
      store.close();
    });

    it("a caller's record is used only while the job's row is still at its sequence number", () => {
      const store = openStore(freshPath());
      const [id, other] = store.submitMany([newJob('kept'), newJob('other')], T0);
      const before = store.job(id)!;
      store.append(id, { type: 'held', reason: 'user hold' }, T0 + 1);
      // The caller's copy is behind the log (changed since it was read): the row is read, so the release fits.
      const released = store.append(id, { type: 'released' }, T0 + 2, before);
      assert.deepEqual([released.held, released.lastSeq], [false, 3]);
      assertRowIsReplay(store, id);
      // Another job's record under this id is not taken for it.
      const held = store.append(id, { type: 'held' }, T0 + 3, store.job(other)!);
      assert.deepEqual([held.id, held.held, held.lastSeq, held.name], [id, true, 4, 'kept']);
      // Up to date: used as it is (its fields, not the row's, make the next record).
      const marked = { ...held, name: 'as the caller holds it' };
      assert.equal(store.append(id, { type: 'released' }, T0 + 4, marked).name, 'as the caller holds it');
      store.close();
    });

    it('several events for one job in one batch apply in order', () => {
      const store = openStore(freshPath());
      const id = store.submit(newJob('quick'), T0);
      const records = store.appendMany([
        { jobId: id, event: { type: 'started', nodes: ['node01'] } },
        { jobId: id, event: { type: 'completing' } },
        { jobId: id, event: { type: 'ended', state: 'COMPLETED', exitCode: 0 } },
      ], T0 + 5);
      assert.deepEqual(records.map((record) => [record.state, record.lastSeq]), [['RUNNING', 2], ['COMPLETING', 3], ['COMPLETED', 4]]);
      assertRowIsReplay(store, id);
      store.close();
    });

    it('replay refuses a log that does not begin with the submission', () => {
      assert.throws(
        () => replay([{ jobId: jobId(7), seq: 1, timeMs: T0, event: { type: 'started', nodes: ['node01'] } }]),
        /job 7: cannot apply 'started' to a job with no events: a job's log starts with 'submitted'/,
      );
    });

    it('rebuild() restores every row from the log after the jobs table is wiped; ids are not reused', () => {
      const path = freshPath();
      const store = openStore(path);
      const [a, b, c, d] = store.submitMany([newJob('a'), newJob('b', 'bob'), newJob('c'), newJob('d', 'bob')], T0);
      store.append(a, { type: 'started', nodes: ['node01'] }, T0 + 1);
      store.append(b, { type: 'held', reason: 'admin' }, T0 + 2);
      store.append(c, { type: 'planned', plannedStartMs: T0 + 500, nodes: ['node02'] }, T0 + 3);
      store.append(d, { type: 'started', nodes: ['node03', 'node04'] }, T0 + 4);
      store.append(d, { type: 'ended', state: 'FAILED', exitCode: 1 }, T0 + 5);
      store.append(d, { type: 'requeued' }, T0 + 6);
      const rows = store.jobs();
      const raw = new Database(path);
      raw.exec('DELETE FROM jobs');
      assert.throws(() => raw.exec('DELETE FROM job_events'), /job_events is append-only/);
      assert.throws(() => raw.exec("UPDATE job_events SET type = 'ended'"), /job_events is append-only/);
      raw.close();
      assert.deepEqual(store.jobs(), []);
      assert.equal(store.rebuild(), 4);
      assert.deepEqual(store.jobs(), rows);
      for (const id of [a, b, c, d]) assertRowIsReplay(store, id);
      assert.equal(store.submit(newJob('e'), T0 + 7), 5);
      store.close();
    });
  });

  describe('store: schema versions', () => {
    it(`opening a version 1 file migrates it to ${SCHEMA_VERSION} and derives the new columns from the log`, () => {
      const path = freshPath();
      const old = new Database(path);
      old.pragma('journal_mode = WAL');
      old.transaction(() => migrate(old, MIGRATIONS.slice(0, 1)))();
      assert.equal(old.pragma('user_version', { simple: true }), 1);
      // Two jobs as the version-1 code wrote them: a held one and a requeued one.
      const submitted = (name: string): string => JSON.stringify(newJob(name)); // payload: the event without its type
      const insertEvent = old.prepare('INSERT INTO job_events (job_id, seq, time_ms, type, payload) VALUES (?, ?, ?, ?, ?)');
      const insertRow = old.prepare(`INSERT INTO jobs (id, user_name, job_name, partition_name, script_path, script, request, state,
        submit_time_ms, nodes, reserved_nodes, last_seq) VALUES (?, 'ada', ?, 'batch', NULL, '', '{}', 'PENDING', ?, '[]', '[]', ?)`);
      insertEvent.run(1, 1, T0, 'submitted', submitted('held-one'));
      insertEvent.run(1, 2, T0 + 1, 'held', JSON.stringify({ reason: 'maintenance' }));
      insertRow.run(1, 'held-one', T0, 2);
      insertEvent.run(2, 1, T0, 'submitted', submitted('requeued-one'));
      insertEvent.run(2, 2, T0 + 2, 'started', JSON.stringify({ nodes: ['node01'] }));
      insertEvent.run(2, 3, T0 + 3, 'requeued', JSON.stringify({ reason: 'node failure' }));
      insertRow.run(2, 'requeued-one', T0, 3);
      old.close();

      const store = openStore(path);
      assert.equal(store.schemaVersion, SCHEMA_VERSION);
      const held = assertRowIsReplay(store, jobId(1));
      assert.deepEqual([held.held, held.reason, held.script], [true, 'maintenance', newJob('held-one').script]);
      const requeued = assertRowIsReplay(store, jobId(2));
      assert.deepEqual([requeued.state, requeued.requeueCount, requeued.reason], ['PENDING', 1, 'node failure']);
      assert.equal(store.submit(newJob('next'), T0 + 4), 3);
      store.close();
      const reopened = openStore(path);
      assert.equal(reopened.schemaVersion, SCHEMA_VERSION);
      assert.equal(reopened.jobs().length, 3);
      reopened.close();
    });

    it('version 10 puts an array task\'s array id and task id on its row for sacct; a version 9 file\'s rows get them from the submitted event', () => {
      const path = freshPath();
      const store = openStore(path);
      const task = (taskId: number, index: number): NewJob => ({ ...newJob(`task-${taskId}`), request: { ...newJob('t').request, array: { text: '4-5', taskId, index } } });
      assert.deepEqual(store.submitMany([task(4, 0), task(5, 1), newJob('plain')], T0), [1, 2, 3]);
      const places = (rows: readonly { id: number; arrayJobId: number | null; arrayTaskId: number | null }[]) => rows.map((row) => [row.id, row.arrayJobId, row.arrayTaskId]);
      assert.deepEqual(places(store.accounting({ fromMs: 0, toMs: T0 + 1 })), [[1, 1, 4], [2, 1, 5], [3, null, null]]);
      // sacct -j: an array's id is every task, ARRAYID_TASK one, a task's own id itself.
      assert.deepEqual(store.accounting({ fromMs: 0, toMs: T0 + 1, jobIds: [1] }).map((row) => row.id), [1, 2]);
      assert.deepEqual(store.accounting({ fromMs: 0, toMs: T0 + 1, jobIds: [3], arrayTasks: ['1_5'] }).map((row) => row.id), [2, 3]);
      assert.deepEqual(store.accounting({ fromMs: 0, toMs: T0 + 1, jobIds: [2] }).map((row) => row.id), [2]);
      store.close();
      // As version 9 left the file: no such columns.
      const raw = new Database(path);
      raw.exec('DROP INDEX jobs_by_array; ALTER TABLE jobs DROP COLUMN array_index; ALTER TABLE jobs DROP COLUMN array_task_id');
      raw.pragma('user_version = 9');
      raw.close();
      const migrated = openStore(path);
      assert.equal(migrated.schemaVersion, SCHEMA_VERSION);
      assert.deepEqual(places(migrated.accounting({ fromMs: 0, toMs: T0 + 1 })), [[1, 1, 4], [2, 1, 5], [3, null, null]]);
      for (const id of [1, 2, 3]) assertRowIsReplay(migrated, jobId(id));
      migrated.close();
    });

    it('a version 9 file whose submitted event is damaged (no JSON) still opens at version 10: that job\'s row gets no array place', () => {
      const path = freshPath();
      const store = openStore(path);
      const task = { ...newJob('task'), request: { ...newJob('t').request, array: { text: '4-5', taskId: 4, index: 0 } } };
      assert.deepEqual(store.submitMany([task, newJob('damaged')], T0), [1, 2]);
      store.close();
      const raw = new Database(path);
      raw.exec('DROP INDEX jobs_by_array; ALTER TABLE jobs DROP COLUMN array_index; ALTER TABLE jobs DROP COLUMN array_task_id');
      // job_events is append-only (triggers): the damage goes round them, as a disk would.
      raw.exec('DROP TRIGGER job_events_no_update');
      raw.prepare('UPDATE job_events SET payload = substr(payload, 1, 40) WHERE job_id = 2 AND seq = 1').run();
      raw.pragma('user_version = 9');
      raw.close();
      const migrated = openStore(path);
      assert.equal(migrated.schemaVersion, SCHEMA_VERSION);
      const places = migrated.accounting({ fromMs: 0, toMs: T0 + 1 }).map((row) => [row.id, row.arrayJobId, row.arrayTaskId]);
      assert.deepEqual(places, [[1, 1, 4], [2, null, null]]);
      migrated.close();
    });

    it('version 3 keeps script and request only in the submitted event; a version 2 file loses the copies, not the data', () => {
      const path = freshPath();
      const old = new Database(path);
      old.pragma('journal_mode = WAL');
      old.transaction(() => migrate(old, MIGRATIONS.slice(0, 2)))();
      const job = newJob('from-v2');
      old.prepare('INSERT INTO job_events (job_id, seq, time_ms, type, payload) VALUES (1, 1, ?, \'submitted\', ?)').run(T0, JSON.stringify(job));
      old.prepare(`INSERT INTO jobs (id, user_name, job_name, partition_name, script_path, script, request, state,
        submit_time_ms, nodes, reserved_nodes, last_seq) VALUES (1, ?, 'from-v2', ?, ?, ?, ?, 'PENDING', ?, '[]', '[]', 1)`)
        .run(job.user, job.partition, job.scriptPath, job.script, JSON.stringify(job.request), T0);
      old.close();
      const store = openStore(path);
      const record = assertRowIsReplay(store, jobId(1));
      assert.deepEqual([record.script, record.request], [job.script, job.request]);
      store.close();
      const raw = new Database(path);
      const columns = (raw.prepare('PRAGMA table_info(jobs)').all() as { name: string }[]).map((c) => c.name);
      raw.close();
      assert.ok(!columns.includes('script') && !columns.includes('request'), `jobs columns: ${columns.join(', ')}`);
    });

    it('version 5 adds the accounting columns: a version 4 file with ended jobs (no usage in their events) loads, and acct reads its window', () => {
      const path = freshPath();
      const old = new Database(path);
      old.pragma('journal_mode = WAL');
      old.transaction(() => migrate(old, MIGRATIONS.slice(0, 4)))();
      const job = { ...newJob('old-run'), request: { cpusPerTask: 2, ntasks: 3, timeLimitSeconds: 600 } };
      const insertEvent = old.prepare('INSERT INTO job_events (job_id, seq, time_ms, type, payload) VALUES (?, ?, ?, ?, ?)');
      insertEvent.run(1, 1, T0, 'submitted', JSON.stringify(job));
      insertEvent.run(1, 2, T0 + 1000, 'held', '{}');
      insertEvent.run(1, 3, T0 + 2000, 'released', '{}');
      insertEvent.run(1, 4, T0 + 3000, 'started', JSON.stringify({ nodes: ['node01'] }));
      insertEvent.run(1, 5, T0 + 9000, 'ended', JSON.stringify({ state: 'COMPLETED', exitCode: 0 }));
      old.prepare(`INSERT INTO jobs (id, user_name, job_name, partition_name, script_path, state, submit_time_ms, nodes, reserved_nodes, last_seq)
        VALUES (1, ?, 'old-run', ?, NULL, 'COMPLETED', ?, '[]', '[]', 5)`).run(job.user, job.partition, T0);
      old.close();

      const store = openStore(path);
      const record = assertRowIsReplay(store, jobId(1));
      assert.deepEqual([record.usage, record.exitSignal, record.eligibleTimeMs], [null, null, T0 + 2000]);
      const [row] = store.accounting({ fromMs: T0 + 8000, toMs: T0 + 20_000 });
      assert.deepEqual([row.id, row.allocCpus, row.timeLimitSeconds, row.eligibleMs, row.startMs, row.endMs, row.cpuSeconds, row.nodes],
        [1, 6, 600, T0 + 2000, T0 + 3000, T0 + 9000, null, ['node01']]);
      assert.deepEqual(store.accounting({ fromMs: T0 + 9001, toMs: T0 + 20_000 }), [], 'ended before the window');
      assert.deepEqual(store.accounting({ fromMs: 0, toMs: T0 - 1 }), [], 'submitted after the window');
      // A new end carries its usage and signal into the row.
      const next = store.submit(newJob('new-run'), T0 + 10_000);
      store.append(next, { type: 'started', nodes: ['node02'] }, T0 + 11_000);
      const usage = { cpuSeconds: 1.5, userCpuSeconds: 1.25, systemCpuSeconds: 0.25, maxRssKiB: 2048 };
      store.append(next, { type: 'ended', state: 'FAILED', exitCode: null, usage, signal: 'SIGKILL' }, T0 + 12_000);
      assert.deepEqual([assertRowIsReplay(store, next).usage, store.job(next)?.exitSignal], [usage, 'SIGKILL']);
      const rows = store.accounting({ fromMs: 0, toMs: T0 + 20_000, users: [job.user], states: ['FAILED'] });
      assert.deepEqual(rows.map((r) => [r.id, r.cpuSeconds, r.userCpuSeconds, r.systemCpuSeconds, r.maxRssKiB, r.exitSignal]), [[next, 1.5, 1.25, 0.25, 2048, 'SIGKILL']]);
      store.close();
    });

    it('a file from a newer Taras is refused with both versions and the fix', () => {
      const path = freshPath();
      openStore(path).close();
      const raw = new Database(path);
      raw.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
      raw.close();
      assert.throws(() => openStore(path), (error: unknown) =>
        error instanceof StoreError &&
        error.message === `${path}: schema version ${SCHEMA_VERSION + 1} is newer than this Taras understands (${SCHEMA_VERSION}); run a newer Taras or restore a backup`);
    });

    it('a file that is not a database, or a missing folder, is refused naming the path', () => {
      const path = join(dir, 'notes.txt');
      writeFileSync(path, 'this is not sqlite\n'.repeat(100));
      assert.throws(() => openStore(path), (error: unknown) => error instanceof StoreError && error.message.startsWith(`${path}: the database is damaged or is not a Taras database (file is not a database); restore it from a backup, or move it aside`));
      const missing = join(dir, 'no-such-folder', 'taras.db');
      assert.throws(() => openStore(missing), (error: unknown) => error instanceof StoreError && /check that the directory exists/.test(error.message));
    });
  });

  describe('store: retention of scripts and environments', () => {
    /** A request as the CLI sends it: the script with its text and arguments, exported values, the submitting shell's environment. */
    const privateJob = (name: string, extra: Record<string, unknown> = {}): NewJob => ({
      ...newJob(name),
      script: `#!/bin/sh\necho ${name}\n`,
      request: {
        script: { path: `${name}.sh`, text: `#!/bin/sh\necho ${name}\n`, args: ['--secret-arg'] }, nodes: { min: 1, max: 1 }, cpusPerTask: 1,
        timeLimitSeconds: 60, workingDir: '/home/ada', output: 'slurm-%j.out', requeue: false,
        export: { all: true, variables: [{ name: 'TOKEN', value: 's3cret' }, { name: 'HOME' }] }, submitEnv: { PATH: '/usr/bin', API_KEY: 'k' }, ...extra,
      },
    });
    /** Task counts of the arrays these tests store ("0-N"). */
    const arrays = (text: string): number | undefined => (/^0-\d+$/.test(text) ? Number(text.slice(2)) + 1 : undefined);
    const purge = (store: Store, ranBy: number, pendingBy: number, nowMs: number, more: { limit?: number; budgetMs?: number } = {}): number =>
      // A time budget no loaded machine reaches unless a test sets one: the default 20 ms once stopped a call of 100 at 80.
      store.purgeFinished({ ranEndedByMs: ranBy, pendingEndedByMs: pendingBy, nowMs, arrayTasks: arrays, budgetMs: 60_000, ...more });

    it('purges a finished job\'s script, arguments, environment and exported values, keeping the rest; never an unfinished job', () => {
      const path = freshPath();
      const store = openStore(path);
      const [cancelled, ran, running, pending] = store.submitMany([privateJob('cancelled'), privateJob('ran'), privateJob('running'), privateJob('pending')], T0);
      store.append(cancelled, { type: 'ended', state: 'CANCELLED', exitCode: null, reason: 'cancelled by ada' }, T0 + 1000);
      store.append(ran, { type: 'started', nodes: ['node01'] }, T0 + 1000);
      store.append(ran, { type: 'ended', state: 'COMPLETED', exitCode: 0 }, T0 + 2000);
      store.append(running, { type: 'started', nodes: ['node02'] }, T0 + 1000);
      const before = store.job(ran)!;

      // Pending-ended jobs by their cutoff, jobs that ran by theirs: here only the cancelled one is due.
      assert.equal(purge(store, T0 + 1999, T0 + 1000, T0 + 5000), 1);
      const purged = assertRowIsReplay(store, cancelled);
      assert.equal(purged.script, '');
      assert.deepEqual(purged.request.script, { path: 'cancelled.sh', text: '', args: [] });
      assert.equal(purged.request.submitEnv, undefined);
      assert.deepEqual(purged.request.export, { all: true, variables: [] });
      assert.deepEqual([purged.state, purged.reason, purged.endTimeMs, purged.request.workingDir, purged.request.cpusPerTask], ['CANCELLED', 'cancelled by ada', T0 + 1000, '/home/ada', 1]);
      assert.equal((store.events(cancelled)[0].event as unknown as { purgedMs: number }).purgedMs, T0 + 5000);
      assert.deepEqual(store.job(ran), before, 'ran and ended after its cutoff: kept');

      assert.equal(purge(store, T0 + 2000, T0 + 9000, T0 + 9000), 1);
      const ranPurged = assertRowIsReplay(store, ran);
      assert.deepEqual([ranPurged.script, ranPurged.request.submitEnv, ranPurged.state, ranPurged.exitCode, ranPurged.nodes], ['', undefined, 'COMPLETED', 0, ['node01']]);
      for (const id of [running, pending]) assert.equal(store.job(id)!.request.submitEnv !== undefined && store.job(id)!.script !== '', true, `job ${id} has not ended: kept`);
      assert.equal(purge(store, T0 + 99_000, T0 + 99_000, T0 + 99_000), 0, 'nothing more to purge; a purged job is not purged again');
      // A request without the private fields gains none.
      const plain = store.submit(newJob('plain'), T0 + 99_000);
      store.append(plain, { type: 'ended', state: 'CANCELLED', exitCode: null }, T0 + 99_001);
      assert.equal(purge(store, T0, T0 + 99_001, T0 + 99_002), 1);
      assert.deepEqual(assertRowIsReplay(store, plain).request, newJob('plain').request);
      const raw = new Database(path);
      assert.deepEqual(raw.prepare('SELECT id, purged_ms FROM jobs ORDER BY id').all(),
        [{ id: cancelled, purged_ms: T0 + 5000 }, { id: ran, purged_ms: T0 + 9000 }, { id: running, purged_ms: null }, { id: pending, purged_ms: null }, { id: plain, purged_ms: T0 + 99_002 }]);
      const text = raw.prepare("SELECT group_concat(payload) AS text FROM job_events WHERE job_id IN (?, ?)").get(cancelled, ran) as { text: string };
      for (const secret of ['s3cret', 'API_KEY', '--secret-arg', 'echo ']) assert.ok(!text.text.includes(secret), `${secret} is gone from the log`);
      raw.close();
      store.close();
    });

    it('the log stays append-only but for the purge: other rewrites, a second purge and deletes are refused; rebuild keeps the purge', () => {
      const path = freshPath();
      const store = openStore(path);
      const [a, b] = store.submitMany([privateJob('a'), privateJob('b')], T0);
      store.append(a, { type: 'ended', state: 'CANCELLED', exitCode: null }, T0 + 1);
      assert.equal(purge(store, T0, T0 + 1, T0 + 2), 1);
      const raw = new Database(path);
      const refused = /job_events is append-only/;
      assert.throws(() => raw.prepare("UPDATE job_events SET payload = json_set(payload, '$.purgedMs', 1) WHERE job_id = ? AND seq = 1").run(a), refused, 'a second purge');
      assert.throws(() => raw.prepare("UPDATE job_events SET payload = json_set(payload, '$.name', 'x') WHERE job_id = ? AND seq = 1").run(b), refused, 'a rewrite without purgedMs');
      assert.throws(() => raw.prepare("UPDATE job_events SET payload = json_set(payload, '$.purgedMs', 1), time_ms = 0 WHERE job_id = ? AND seq = 1").run(b), refused, 'a purge that changes the time');
      assert.throws(() => raw.prepare("UPDATE job_events SET payload = json_set(payload, '$.purgedMs', 1) WHERE job_id = ? AND seq = 2").run(a), refused, 'an event other than submitted');
      assert.throws(() => raw.prepare("UPDATE job_events SET payload = json_set(payload, '$.purgedMs', 1, '$.user', 'mallory') WHERE job_id = ? AND seq = 1").run(b), refused, 'a job that has not ended');
      assert.throws(() => raw.exec('DELETE FROM job_events'), refused);
      raw.exec('UPDATE jobs SET purged_ms = NULL');
      raw.close();
      const purgedRecord = store.job(a);
      assert.equal(store.rebuild(), 2);
      assert.deepEqual(store.job(a), purgedRecord);
      assert.equal(purge(store, T0 + 10, T0 + 10, T0 + 10), 0, 'rebuild took purged_ms from the log: not purged again');
      store.close();
    });

    it("an array's first task keeps its script and environment until its other tasks have ended, those that ran keep_finished ago", () => {
      const store = openStore(freshPath());
      const tasks = [0, 1, 2].map((index) => {
        const job = privateJob(`task${index}`, { array: { text: '0-2', taskId: index, index } });
        if (index > 0) delete (job.request as { submitEnv?: unknown }).submitEnv;
        return job;
      });
      const [first, second, third] = store.submitMany(tasks, T0);
      store.append(first, { type: 'ended', state: 'CANCELLED', exitCode: null }, T0 + 1);
      store.append(second, { type: 'ended', state: 'CANCELLED', exitCode: null }, T0 + 1);
      assert.equal(purge(store, T0 + 5, T0 + 5, T0 + 5), 1, 'the second task only');
      assert.deepEqual(store.job(first)!.request.submitEnv, { PATH: '/usr/bin', API_KEY: 'k' });
      assert.equal(store.job(second)!.script, '');
      store.append(third, { type: 'started', nodes: ['node01'] }, T0 + 6);
      store.append(third, { type: 'ended', state: 'COMPLETED', exitCode: 0 }, T0 + 7);
      assert.equal(purge(store, T0 + 6, T0 + 8, T0 + 8), 0, 'every task has ended, but the third (it ran) keeps its own until keep_finished: so does the first');
      assert.notEqual(store.job(first)!.script, '');
      assert.equal(purge(store, T0 + 7, T0 + 8, T0 + 9), 2, 'the third and the first');
      assert.equal(store.job(third)!.script, '');
      assert.equal(store.job(first)!.request.submitEnv, undefined);
      assert.equal(store.job(first)!.script, '');
      store.close();
    });

    it("a task that ran, was requeued and was cancelled while pending keeps its array's first task for keep_finished", () => {
      const store = openStore(freshPath());
      const tasks = [0, 1].map((index) => privateJob(`rq${index}`, { array: { text: '0-1', taskId: index, index } }));
      const [first, second] = store.submitMany(tasks, T0);
      store.append(first, { type: 'ended', state: 'CANCELLED', exitCode: null }, T0 + 1);
      store.append(second, { type: 'started', nodes: ['node01'] }, T0 + 2);
      store.append(second, { type: 'requeued', reason: 'node failure' }, T0 + 3);
      store.append(second, { type: 'ended', state: 'CANCELLED', exitCode: null }, T0 + 4);
      assert.equal(store.job(second)!.startTimeMs, null, 'a requeue clears the start: it counts as one that ran by its requeue');
      assert.equal(purge(store, T0 + 3, T0 + 10, T0 + 10), 0, 'the second ran: kept until T0 + 4 + keep_finished, and the first with it');
      assert.equal(purge(store, T0 + 4, T0 + 10, T0 + 11), 2);
      store.close();
    });

    it("a task that cannot be purged (a damaged payload) does not keep its array's first task for good", () => {
      const path = freshPath();
      const store = openStore(path);
      const [first] = store.submitMany([privateJob('task0', { array: { text: '0-1', taskId: 0, index: 0 } })], T0);
      store.append(first, { type: 'ended', state: 'CANCELLED', exitCode: null }, T0 + 1);
      // Its second task, stored damaged, ran and ended at T0 + 2.
      const raw = new Database(path);
      raw.prepare("INSERT INTO job_events (job_id, seq, time_ms, type, payload) VALUES (?, 1, ?, 'submitted', '{not json')").run(first + 1, T0);
      raw.prepare(`INSERT INTO jobs (id, user_name, job_name, partition_name, state, submit_time_ms, start_time_ms, end_time_ms, nodes, reserved_nodes, last_seq)
        VALUES (?, 'ada', 'task1', 'batch', 'COMPLETED', ?, ?, ?, '[]', '[]', 1)`).run(first + 1, T0, T0 + 1, T0 + 2);
      raw.close();
      assert.equal(purge(store, T0 + 1, T0 + 10, T0 + 10), 0, 'the second task ran and ended at T0 + 2: within keep_finished');
      assert.notEqual(store.job(first)!.script, '');
      assert.equal(purge(store, T0 + 2, T0 + 10, T0 + 11), 1, 'the first task; the damaged second is passed over');
      assert.equal(store.job(first)!.script, '');
      store.close();
    });

    it('arrays whose first task must wait never stall the purge: each call goes on where the last one stopped', () => {
      const store = openStore(freshPath());
      const blocked: JobId[] = [];
      for (let n = 0; n < 40; n++) {
        const tasks = [0, 1].map((index) => privateJob(`a${n}-${index}`, { array: { text: '0-1', taskId: index, index } }));
        const [first] = store.submitMany(tasks, T0);
        store.append(first, { type: 'ended', state: 'CANCELLED', exitCode: null }, T0 + n);
        blocked.push(first);
      }
      const plain = store.submitMany(Array.from({ length: 5 }, (_, n) => privateJob(`p${n}`)), T0);
      for (const id of plain) store.append(id, { type: 'ended', state: 'CANCELLED', exitCode: null }, T0 + 100);
      // No time at all: one job looked at a call. Starting over each call, the plain jobs behind the 40 would never be reached.
      let purged = 0;
      for (let call = 0; call < 50; call++) purged += purge(store, T0 + 200, T0 + 200, T0 + 300, { budgetMs: 0 });
      assert.equal(purged, 5);
      assert.ok(plain.every((id) => store.job(id)!.script === ''), 'every plain job purged');
      assert.ok(blocked.every((id) => store.job(id)!.request.submitEnv !== undefined), 'every first task keeps its environment');
      store.close();
    });

    it('a submitted event stores the script once (the request holds it); reading gives it back', () => {
      const path = freshPath();
      const store = openStore(path);
      const [id, other] = store.submitMany([privateJob('once'), newJob('different')], T0);
      const raw = new Database(path);
      const payloads = raw.prepare('SELECT job_id AS id, payload FROM job_events WHERE seq = 1 ORDER BY job_id').all() as { id: number; payload: string }[];
      raw.close();
      const text = privateJob('once').script;
      assert.equal(payloads[0].payload.split(JSON.stringify(text)).length - 1, 1, 'the text once, in the request');
      assert.equal('script' in (JSON.parse(payloads[0].payload) as object), false);
      assert.equal((JSON.parse(payloads[1].payload) as { script: string }).script, newJob('different').script, 'a request without it: the script is stored');
      assert.equal(assertRowIsReplay(store, id).script, text);
      assert.equal(assertRowIsReplay(store, other).script, newJob('different').script);
      store.close();
    });

    it('a job whose event cannot be rewritten (a damaged payload) is passed over; the others are purged', () => {
      const path = freshPath();
      const store = openStore(path);
      const [before, after] = store.submitMany([privateJob('before'), privateJob('after')], T0);
      store.append(before, { type: 'ended', state: 'CANCELLED', exitCode: null }, T0 + 1);
      const raw = new Database(path);
      raw.prepare("INSERT INTO job_events (job_id, seq, time_ms, type, payload) VALUES (900, 1, ?, 'submitted', '{not json')").run(T0);
      raw.prepare(`INSERT INTO jobs (id, user_name, job_name, partition_name, state, submit_time_ms, end_time_ms, nodes, reserved_nodes, last_seq)
        VALUES (900, 'ada', 'damaged', 'batch', 'CANCELLED', ?, ?, '[]', '[]', 1)`).run(T0, T0 + 2);
      raw.close();
      store.append(after, { type: 'ended', state: 'CANCELLED', exitCode: null }, T0 + 3);
      assert.equal(purge(store, T0, T0 + 10, T0 + 10), 2);
      assert.deepEqual([store.job(before)!.script, store.job(after)!.script], ['', '']);
      assert.equal(purge(store, T0, T0 + 10, T0 + 11), 0, 'the damaged one is tried again and passed over again');
      store.close();
    });

    it('a job that ran, was requeued and was cancelled while pending again is kept as one that ran', () => {
      const store = openStore(freshPath());
      const id = store.submit(privateJob('requeued'), T0);
      store.append(id, { type: 'started', nodes: ['node01'] }, T0 + 1);
      store.append(id, { type: 'requeued', reason: 'node failure' }, T0 + 2);
      store.append(id, { type: 'ended', state: 'CANCELLED', exitCode: null }, T0 + 3);
      assert.equal(purge(store, T0 + 2, T0 + 10, T0 + 10), 0, 'not at once: it ran');
      assert.equal(purge(store, T0 + 3, T0 + 10, T0 + 11), 1, 'keep_finished after its end');
      store.close();
    });

    it('purges in bounded slices: at most `limit` jobs a call, oldest end first', () => {
      const store = openStore(freshPath());
      const ids = store.submitMany(Array.from({ length: 150 }, (_, n) => privateJob(`j${n}`)), T0);
      ids.forEach((id, n) => store.append(id, { type: 'ended', state: 'CANCELLED', exitCode: null }, T0 + 1000 - n));
      assert.equal(purge(store, T0, T0 + 1000, T0 + 2000, { limit: 100 }), 100);
      const left = ids.filter((id) => store.job(id)!.script !== '');
      assert.deepEqual(left, ids.slice(0, 50), 'the 50 that ended last are left');
      assert.equal(purge(store, T0, T0 + 1000, T0 + 2000, { limit: 100 }), 50);
      store.close();
    });

    for (const from of [6, 7]) it(`a version ${from} file migrates: its finished jobs are purged, other rewrites are refused`, () => {
      const path = freshPath();
      const old = new Database(path);
      old.pragma('journal_mode = WAL');
      old.transaction(() => migrate(old, MIGRATIONS.slice(0, from)))();
      const job = privateJob('from-v6');
      const insertEvent = old.prepare('INSERT INTO job_events (job_id, seq, time_ms, type, payload) VALUES (?, ?, ?, ?, ?)');
      insertEvent.run(1, 1, T0, 'submitted', JSON.stringify(job));
      insertEvent.run(1, 2, T0 + 1000, 'started', JSON.stringify({ nodes: ['node01'] }));
      insertEvent.run(1, 3, T0 + 9000, 'ended', JSON.stringify({ state: 'COMPLETED', exitCode: 0 }));
      old.prepare(`INSERT INTO jobs (id, user_name, job_name, partition_name, script_path, state, submit_time_ms, start_time_ms, end_time_ms, exit_code, nodes, reserved_nodes, last_seq)
        VALUES (1, ?, 'from-v6', ?, ?, 'COMPLETED', ?, ?, ?, 0, '["node01"]', '[]', 3)`).run(job.user, job.partition, job.scriptPath, T0, T0 + 1000, T0 + 9000);
      if (from === 6) assert.throws(() => old.prepare("UPDATE job_events SET payload = json_set(payload, '$.purgedMs', 1) WHERE job_id = 1 AND seq = 1").run(), /append-only/, 'version 6 allows no rewrite');
      old.close();
      const store = openStore(path);
      assert.equal(store.schemaVersion, SCHEMA_VERSION);
      assert.equal(purge(store, T0 + 9000, T0 + 9000, T0 + 10_000), 1);
      const record = assertRowIsReplay(store, jobId(1));
      assert.deepEqual([record.script, record.request.submitEnv, record.state, record.endTimeMs], ['', undefined, 'COMPLETED', T0 + 9000]);
      // A job requeued and then cancelled while pending counts as one that ran (schema 8's index).
      const requeued = store.submit(privateJob('requeued'), T0 + 10_000);
      store.append(requeued, { type: 'started', nodes: ['node01'] }, T0 + 10_001);
      store.append(requeued, { type: 'requeued' }, T0 + 10_002);
      store.append(requeued, { type: 'ended', state: 'CANCELLED', exitCode: null }, T0 + 10_003);
      assert.equal(purge(store, T0 + 10_002, T0 + 20_000, T0 + 20_000), 0);
      assert.equal(purge(store, T0 + 10_003, T0 + 20_000, T0 + 20_001), 1);
      store.close();
    });
  });

  describe('store: queries for the CLI', () => {
    let store: Store;
    const ids: Record<string, JobId> = {};
    before(() => {
      store = openStore(freshPath());
      const names = ['first', 'second', 'third', 'fourth', 'old-done', 'new-done', 'bob-runs', 'bob-waits'];
      const jobs = names.map((name) => newJob(name, name.startsWith('bob') ? 'bob' : 'ada'));
      store.submitMany(jobs.slice(0, 4), T0).forEach((id, i) => (ids[names[i]] = id));
      store.submitMany(jobs.slice(4), T0 + 10).forEach((id, i) => (ids[names[i + 4]] = id));
      const start = (name: string, at: number): void => void store.append(ids[name], { type: 'started', nodes: [`node-${name}`] }, at);
      start('first', T0 + 20);
      start('bob-runs', T0 + 30);
      start('old-done', T0 + 40);
      start('new-done', T0 + 41);
      start('fourth', T0 + 50);
      store.append(ids['fourth'], { type: 'completing' }, T0 + 60);
      store.append(ids['old-done'], { type: 'ended', state: 'COMPLETED', exitCode: 0 }, T0 + 100);
      store.append(ids['new-done'], { type: 'ended', state: 'FAILED', exitCode: 2 }, T0 + 5000);
      store.append(ids['first'], { type: 'requeued' }, T0 + 70); // back in the queue with its original submit time
      store.append(ids['second'], { type: 'held', reason: 'user hold' }, T0 + 80);
    });
    after(() => store.close());
    const names = (jobs: readonly JobRecord[]): string[] => jobs.map((job) => job.name);

    it('pending jobs come in queue order (submit time, then id), held ones included and flagged', () => {
      const pending = store.pendingJobs();
      assert.deepEqual(names(pending), ['first', 'second', 'third', 'bob-waits']);
      assert.deepEqual(pending.map((job) => job.held), [false, true, false, false]);
    });

    it('running jobs are RUNNING and COMPLETING ones, by start time', () => {
      assert.deepEqual(store.runningJobs().map((job) => [job.name, job.state]), [['bob-runs', 'RUNNING'], ['fourth', 'COMPLETING']]);
    });

    it('a job comes with its whole event history', () => {
      const shown = store.jobWithEvents(ids['first'])!;
      assert.equal(shown.job.state, 'PENDING');
      assert.deepEqual(shown.events.map((stored) => [stored.seq, stored.event.type, stored.timeMs]), [[1, 'submitted', T0], [2, 'started', T0 + 20], [3, 'requeued', T0 + 70]]);
      assert.equal(store.jobWithEvents(jobId(999)), undefined);
    });

    it('jobs filter by user and by states, in id order', () => {
      assert.deepEqual(names(store.jobs({ user: 'bob' })), ['bob-runs', 'bob-waits']);
      assert.deepEqual(names(store.jobs({ states: ['COMPLETED', 'FAILED'] })), ['old-done', 'new-done']);
      assert.deepEqual(names(store.jobs({ user: 'ada', states: ['PENDING'] })), ['first', 'second', 'third']);
      assert.deepEqual(names(store.jobs({ states: [] })), []);
    });

    it('finished jobs past retention leave the visible list but stay in the database', () => {
      const retentionMs = 1000;
      const now = T0 + 2000;
      assert.deepEqual(names(store.finishedBefore(now - retentionMs)), ['old-done']);
      const visible = names(store.jobs({ endedSinceMs: now - retentionMs }));
      assert.ok(!visible.includes('old-done'));
      assert.deepEqual(visible, ['first', 'second', 'third', 'fourth', 'new-done', 'bob-runs', 'bob-waits']);
      assert.equal(store.job(ids['old-done'])!.state, 'COMPLETED');
    });
  });

  describe('store: crash safety', () => {
    it('a kill -9 while a new database is being created leaves none or a whole one, never an empty file', async () => {
      const storeModule = new URL('../src/store/store.js', import.meta.url).href;
      const random = new SeededRandom(77);
      // The child announces each creation, then creates databases one after another until it is killed.
      const script = `const { openStore } = await import(${JSON.stringify(storeModule)});
        const base = process.argv[1];
        for (let i = 0; ; i++) { process.stdout.write(i + '\\n'); openStore(base + '-' + i + '.db').close(); }`;
      for (let round = 0; round < 12; round++) {
        const base = join(dir, `create-${round}`);
        const child = spawn(process.execPath, ['--input-type=module', '-e', script, base], { stdio: ['ignore', 'pipe', 'pipe'] });
        let errors = '';
        child.stderr.setEncoding('utf8').on('data', (chunk: string) => (errors += chunk));
        const killAfterMs = random.int(0, 15);
        child.stdout.once('data', () => setTimeout(() => child.kill('SIGKILL'), killAfterMs));
        const signal = await new Promise<NodeJS.Signals | null>((resolve) => child.on('close', (_code, sig) => resolve(sig)));
        assert.equal(signal, 'SIGKILL', `the child ended on its own: ${errors}`);
        for (let i = 0; ; i++) {
          const path = `${base}-${i}.db`;
          if (!existsSync(path)) {
            // The one being created when the kill came, if any: absent, and the next start creates it.
            assert.ok(!existsSync(`${base}-${i + 1}.db`), `round ${round}: a database after a missing one`);
            break;
          }
          assert.ok(statSync(path).size > 0, `round ${round}: ${path} is empty`);
          const store = openStore(path); // a whole database: opens, with the current schema
          assert.equal(store.schemaVersion, SCHEMA_VERSION);
          store.close();
        }
        const next = openStore(`${base}-again.db`);
        next.close();
      }
      // What a killed creator left (its PID gone) is removed when that database is next created; a live
      // creator's file is left alone.
      const leftovers = () => readdirSync(dir).filter((name) => name.startsWith('again.db.new-')).sort();
      for (const name of ['again.db.new-999999999', 'again.db.new-999999999-journal', `again.db.new-${process.ppid}`]) writeFileSync(join(dir, name), 'x');
      openStore(join(dir, 'again.db')).close();
      assert.deepEqual(leftovers(), [`again.db.new-${process.ppid}`]);
    });

    it('every acknowledged submission survives kill -9 of the writer, exactly once, and ids never repeat', async () => {
      const path = freshPath();
      const random = new SeededRandom(2026);
      const acknowledged = new Map<number, string>();
      let highestBefore = 0;
      const rounds = 8;
      for (let round = 0; round < rounds; round++) {
        // The first rounds are killed counting from spawn (the first commit comes about 150 ms
        // after it here), so kills also land in start-up, file creation and migration.
        const fromSpawn = round < 3;
        const lines = await killWriter(path, round, fromSpawn ? random.int(80, 400) : random.int(0, 250), fromSpawn);
        for (const [id, name] of lines) {
          assert.ok(!acknowledged.has(id), `id ${id} acknowledged twice`);
          assert.ok(id > highestBefore, `round ${round}: id ${id} reuses an id from before the kill (highest was ${highestBefore})`);
          acknowledged.set(id, name);
        }
        const store = openStore(path);
        const all = store.jobs();
        const perName = new Map<string, number>();
        for (const job of all) perName.set(job.name, (perName.get(job.name) ?? 0) + 1);
        for (const [id, name] of acknowledged) {
          assert.equal(store.job(jobId(id))?.name, name, `round ${round}: acknowledged job ${id} (${name}) is stored`);
          assert.equal(perName.get(name), 1, `round ${round}: ${name} is stored once`);
        }
        for (const job of all) assert.deepEqual(job, replay(store.events(job.id)), `round ${round}: job ${job.id} row equals replay`);
        highestBefore = Math.max(highestBefore, ...all.map((job) => job.id));
        store.close();
      }
      assert.ok(acknowledged.size >= 50, `only ${acknowledged.size} submissions were acknowledged before the kills`);
    });
  });

  describe('Store.batch', () => {
    it('commits every write of its body together (listeners told once it is in), or none when the body throws', () => {
      const folder = mkdtempSync(join(tmpdir(), 'taras-store-batch-'));
      const store = openStore(join(folder, 'jobs.db'));
      try {
        const [a, b] = store.submitMany([newJob('a'), newJob('b')], T0);
        const told: number[] = [];
        store.committedListeners.push((stored) => told.push(stored.jobId));
        assert.throws(() => store.batch(() => {
          store.append(a, { type: 'held' }, T0 + 1);
          store.append(b, { type: 'held' }, T0 + 1);
          throw new Error('the disk is full');
        }), /the disk is full/);
        assert.deepEqual([store.job(a)!.held, store.job(b)!.held, told], [false, false, []], 'rolled back whole; no listener told');
        store.batch(() => {
          store.append(a, { type: 'held' }, T0 + 2);
          assert.deepEqual(told, [], 'not yet committed');
          store.batch(() => store.append(b, { type: 'held' }, T0 + 2));
          // A write that fails inside the batch takes back its own part only (here: the first of its two events).
          assert.throws(() => store.appendMany([{ jobId: a, event: { type: 'released' } }, { jobId: b, event: { type: 'started', nodes: ['n1'] } }], T0 + 2), /release the job before starting it/);
        });
        assert.deepEqual([store.job(a)!.held, store.job(b)!.held, told], [true, true, [a, b]], 'a stays held: the failed write left nothing');
      } finally {
        store.close();
        rmSync(folder, { recursive: true, force: true });
      }
    });

    it('takes itself back whole when a write fails after its checks passed, even if its body goes on', () => {
      const folder = mkdtempSync(join(tmpdir(), 'taras-store-batch-'));
      const path = join(folder, 'jobs.db');
      const store = openStore(path);
      try {
        const [a, b] = store.submitMany([newJob('a'), newJob('b')], T0);
        // Another writer's event where b's next one goes: b's append passes its checks, then SQLite refuses the insert.
        const other = new Database(path);
        other.prepare("INSERT INTO job_events (job_id, seq, time_ms, type, payload) VALUES (?, 2, ?, 'held', '{}')").run(b, T0);
        other.close();
        const told: number[] = [];
        const aborted: string[] = [];
        store.committedListeners.push((stored) => told.push(stored.jobId));
        store.batchAbortedListeners.push((error) => aborted.push((error as Error).message));
        assert.throws(() => store.batch(() => {
          store.append(a, { type: 'held' }, T0 + 1);
          // Inside a batch an append has no savepoint of its own: what it wrote before failing cannot be taken back alone.
          assert.throws(() => store.append(b, { type: 'held' }, T0 + 1), /UNIQUE constraint failed/);
          return 'carried on';
        }), /UNIQUE constraint failed/);
        assert.deepEqual([store.job(a)!.held, store.job(a)!.lastSeq, store.job(b)!.lastSeq, told], [false, 1, 1, []], 'none of the batch stayed; no listener told');
        assert.equal(aborted.length, 1, 'the abort listeners are told: the caller acted on a\'s hold in memory');
        store.batch(() => store.append(a, { type: 'held' }, T0 + 2));
        assert.deepEqual([store.job(a)!.held, told], [true, [a]], 'the next batch is not taken for a broken one');
      } finally {
        store.close();
        rmSync(folder, { recursive: true, force: true });
      }
    });

    it('tells its abort listeners when it is rolled back after writes went in, not when it failed before any', () => {
      const folder = mkdtempSync(join(tmpdir(), 'taras-store-batch-'));
      const store = openStore(join(folder, 'jobs.db'));
      try {
        const [a] = store.submitMany([newJob('a')], T0);
        const aborted: string[] = [];
        store.batchAbortedListeners.push((error) => aborted.push((error as Error).message));
        assert.throws(() => store.batch(() => {
          throw new Error('no such job');
        }), /no such job/);
        assert.throws(() => store.batch(() => {
          assert.throws(() => store.append(a, { type: 'released' }, T0 + 1)); // refused: its own part only
          throw new Error('a bad id');
        }), /a bad id/);
        assert.deepEqual(aborted, [], 'nothing went in: nothing to be ahead of');
        assert.throws(() => store.batch(() => {
          store.append(a, { type: 'held' }, T0 + 1);
          throw new Error('disk I/O error');
        }), /disk I\/O error/);
        assert.deepEqual([aborted, store.job(a)!.held], [['disk I/O error'], false]);
        store.batch(() => store.append(a, { type: 'held' }, T0 + 2));
        assert.deepEqual([aborted.length, store.job(a)!.held], [1, true], 'a batch that commits tells no one');
      } finally {
        store.close();
        rmSync(folder, { recursive: true, force: true });
      }
    });
  });
}
