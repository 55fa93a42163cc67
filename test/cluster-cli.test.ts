// The live-system CLI where no controller is needed or none is running:
// refusals before anything is sent, and clear answers when the controller is down.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const work = mkdtempSync(join(tmpdir(), 'taras-cluster-cli-'));
after(() => rmSync(work, { recursive: true, force: true }));
// A port nothing listens on: the controller is down.
const DOWN = 'http://127.0.0.1:9';

function taras(args: string[], env: Record<string, string> = {}) {
  const run = spawnSync(process.execPath, [join(root, 'bin/taras.js'), ...args], {
    cwd: work, encoding: 'utf8', input: '', env: { ...process.env, TARAS_JOB_ID: '', ...env },
  });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe('taras submit and friends without a controller', () => {
  it('without a terminal, a missing time limit is named with the flag that gives it, exit 2', () => {
    writeFileSync(join(work, 'a.sh'), '#!/bin/sh\necho hi\n');
    const run = taras(['submit', 'a.sh', '--controller', DOWN]);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /the job needs Time limit \(--time\)/);
  });

  it('a bad #TARAS line is refused with the file, the line and the option', () => {
    writeFileSync(join(work, 'b.sh'), '#!/bin/sh\n#TARAS --time 10\n#TARAS --cpu-per-task 2\necho hi\n');
    const run = taras(['submit', 'b.sh', '--controller', DOWN]);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /b\.sh:3: --cpu-per-task: .*did you mean --cpus-per-task/);
  });

  it('a valid job with the controller down: one line saying where it looked and how to start it', () => {
    writeFileSync(join(work, 'c.sh'), '#!/bin/sh\n#TARAS --time 10\necho hi\n');
    const run = taras(['submit', 'c.sh', '--controller', DOWN]);
    assert.equal(run.code, 1);
    assert.match(run.stderr, /controller not reachable at http:\/\/127\.0\.0\.1:9/);
    const status = taras(['status', '--controller', DOWN]);
    assert.equal(status.code, 1);
    assert.match(status.stdout, /down/i);
  });

  it('--file job.toml gives what the script lacks; a bad key is named with its line', () => {
    writeFileSync(join(work, 'd.sh'), '#!/bin/sh\necho hi\n');
    writeFileSync(join(work, 'job.toml'), 'time = 30\njob_name = "from-file"\n');
    const run = taras(['submit', '--file', 'job.toml', 'd.sh', '--controller', DOWN]);
    assert.equal(run.code, 1, run.stderr); // parsed and complete: it got as far as the (down) controller
    assert.match(run.stderr, /controller not reachable/);
    writeFileSync(join(work, 'bad.toml'), 'time = 30\ncpu_per_task = 2\n');
    const bad = taras(['submit', '--file', 'bad.toml', 'd.sh', '--controller', DOWN]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /bad\.toml:2: .*cpu_per_task/);
  });

  it('taras jobid prints the job id inside a job and refuses outside one', () => {
    assert.equal(taras(['jobid'], { TARAS_JOB_ID: '42' }).stdout, '42\n');
    const outside = taras(['jobid']);
    assert.equal(outside.code, 1);
    assert.match(outside.stderr, /not inside a Taras job/);
  });

  it('bad job ids and ports are refused before anything is sent', () => {
    assert.equal(taras(['show', 'x1', '--controller', DOWN]).code, 2);
    assert.match(taras(['controller', '--port', '99999']).stderr, /'--port' got '99999'/);
    assert.match(taras(['agent', '--virtual', '16by8']).stderr, /expected NODESxCPUS/);
  });
});
