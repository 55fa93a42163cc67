// The test-user helper's sweep: users left by a test process killed from
// outside are removed by the next run; those of runs still going, and users
// it did not make, are left alone. Real users (root only).

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { notRootReason, removeOrphanedTestUsers, startTicks } from './unix-users.js';

const made: string[] = [];
after(() => {
  for (const name of made) spawnSync('/usr/sbin/userdel', ['--remove', '--force', name]);
});

function userWithComment(comment: string | undefined): string {
  const name = `ttsweep${randomBytes(4).toString('hex')}`;
  const result = spawnSync('/usr/sbin/useradd', ['--create-home', '--user-group', ...(comment === undefined ? [] : ['--comment', comment]), name], { encoding: 'utf8' });
  assert.equal(result.status, 0, result.stderr);
  made.push(name);
  return name;
}

const exists = (name: string) => readFileSync('/etc/passwd', 'utf8').split('\n').some((line) => line.startsWith(`${name}:`));

describe('test users of a killed run', { skip: notRootReason }, () => {
  it('are removed with their homes; those of a live run, a reused PID, and users without the comment stay', () => {
    const gone = spawnSync('true');
    const orphan = userWithComment(`taras test user of pid ${gone.pid} started at 12345`);
    // This process's PID with another start time: the PID was reused, the user's run is gone.
    const reused = userWithComment(`taras test user of pid ${process.pid} started at ${Number(startTicks('self')) + 1}`);
    const live = userWithComment(`taras test user of pid ${process.pid} started at ${startTicks('self')}`);
    const foreign = userWithComment(undefined);
    const removed = removeOrphanedTestUsers();
    assert.deepEqual([orphan, reused].filter((name) => removed.includes(name)).sort(), [orphan, reused].sort());
    assert.ok(!removed.includes(live) && !removed.includes(foreign), `removed ${removed.join(', ')}`);
    assert.deepEqual([exists(orphan), exists(reused), exists(live), exists(foreign)], [false, false, true, true]);
    assert.equal(spawnSync('test', ['-e', `/home/${orphan}`]).status, 1, 'its home went with it');
  });
});
