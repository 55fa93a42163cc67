// `npm start` (= `taras up`): a controller with its SQLite file under a data
// directory and a virtual agent in one process, which prints the commands to
// submit a job and watch the queue, runs real jobs, and stops cleanly on
// Ctrl-C (SIGINT). Every process started here is stopped by its PID.

import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const work = mkdtempSync(join(tmpdir(), 'taras-up-'));
const started: ChildProcess[] = [];
after(() => {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
});

function taras(args: string[], controller: string) {
  const run = spawnSync(process.execPath, [join(root, 'bin/taras.js'), ...args], {
    cwd: work, encoding: 'utf8', input: '', timeout: 30_000, env: { ...process.env, TARAS_CONTROLLER: controller, TARAS_JOB_ID: '' },
  });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** Resolves with everything printed once `pattern` appears on stdout; rejects after `ms`. */
function waitForOutput(child: ChildProcess, pattern: RegExp, ms: number): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    let text = '';
    let errors = '';
    const timer = setTimeout(() => reject(new Error(`no ${pattern} within ${ms} ms; stdout:\n${text}\nstderr:\n${errors}`)), ms);
    child.stderr!.on('data', (chunk: Buffer) => (errors += chunk.toString()));
    child.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (pattern.test(text)) {
        clearTimeout(timer);
        resolvePromise(text);
      }
    });
    child.once('exit', (code) => reject(new Error(`taras up exited (${code}) before ${pattern}:\n${text}\n${errors}`)));
  });
}

/** Whether anything answers HTTP at `url`. */
function answers(url: string): Promise<boolean> {
  return new Promise((resolvePromise) => {
    const req = request(`${url}/status`, { method: 'GET', timeout: 2000 }, (res) => {
      res.resume();
      resolvePromise(true);
    });
    req.on('error', () => resolvePromise(false));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

describe('npm start (taras up)', () => {
  it('is what `npm start` runs', () => {
    const scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    assert.equal(scripts.start, 'node bin/taras.js up');
  });

  it('starts a controller and a virtual agent, prints how to submit and watch, runs a job, and stops on Ctrl-C', async () => {
    const data = join(work, 'data');
    const up = spawn(process.execPath, [join(root, 'bin/taras.js'), 'up', '--port', '0', '--virtual', '4x2', '--data', data], {
      cwd: work, stdio: ['ignore', 'pipe', 'pipe'],
    });
    started.push(up);
    const printed = await waitForOutput(up, /Ctrl-C stops/, 20_000);
    const url = /controller at (http:\/\/127\.0\.0\.1:\d+), 4 virtual nodes of 2 CPUs/.exec(printed)?.[1];
    assert.ok(url, printed);
    // The exact commands: where the controller is (not the default port here), a job, the queue.
    assert.match(printed, new RegExp(`export TARAS_CONTROLLER=${url.replace(/\./g, '\\.')}\n`));
    assert.match(printed, /npx taras submit -N 2 hello\.sh\n/);
    assert.match(printed, /npx taras queue\n/);
    assert.ok(existsSync(join(data, 'taras.db')), 'the SQLite file is under the data directory');

    writeFileSync(join(work, 'hello.sh'), '#!/bin/sh\n#TARAS --time 5\necho hello from $TARAS_NODELIST\n');
    const submitted = taras(['submit', '-N', '2', 'hello.sh'], url);
    assert.equal(submitted.code, 0, submitted.stderr);
    const id = /Submitted job (\d+)/.exec(submitted.stdout)?.[1];
    assert.ok(id, submitted.stdout);
    const waited = taras(['wait', id], url);
    assert.equal(waited.code, 0, waited.stdout + waited.stderr);
    assert.equal(readFileSync(join(work, `taras-${id}.out`), 'utf8'), 'hello from node[01-02]\n');
    const queue = taras(['queue', '--state', 'COMPLETED'], url);
    assert.match(queue.stdout, new RegExp(`\\b${id}\\s+\\S+\\s+COMPLETED\\s+batch\\s+node\\[01-02\\]`));

    const exited = new Promise<number | null>((resolvePromise) => up.once('exit', (code) => resolvePromise(code)));
    up.kill('SIGINT');
    const code = await Promise.race([exited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), 15_000))]);
    assert.equal(code, 0, 'Ctrl-C stops both and exits 0');
    assert.equal(await answers(url), false, 'nothing listens after the stop');
  });
});
