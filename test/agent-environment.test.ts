// A job's environment, files and node file as the agent prepares them.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jobLaunch, type LaunchInput } from '../src/agent/environment.js';
import type { JobSpec } from '../src/jobspec/types.js';

const spec = (extra: Partial<JobSpec> = {}): JobSpec => ({
  script: { path: '/home/ann/run.sh', text: '#!/bin/sh\n', args: [] },
  nodes: { min: 3 }, cpusPerTask: 2, timeLimitSeconds: 600, name: 'sim', workingDir: '/home/ann/work', output: 'taras-%j.out',
  export: { all: true, variables: [] }, requeue: false, ...extra,
});
const input = (extra: Partial<JobSpec> = {}): LaunchInput => ({
  jobId: 42, user: 'ann', nodes: ['node01', 'node02', 'node03'], cpusOnNode: 2, spec: spec(extra),
  submitEnv: { PATH: '/usr/bin:/bin', HOME: '/home/ann', SECRET: 's', PROJECT: 'p' }, submitDir: '/home/ann', nodefilePath: '/var/taras/42/nodefile',
});

describe('job launch environment', () => {
  it('sets the TARAS_* variables and the node file', () => {
    const launch = jobLaunch(input());
    assert.equal(launch.env.TARAS_JOB_ID, '42');
    assert.equal(launch.env.TARAS_JOB_NAME, 'sim');
    assert.equal(launch.env.TARAS_NODELIST, 'node[01-03]');
    assert.equal(launch.env.TARAS_NNODES, '3');
    assert.equal(launch.env.TARAS_CPUS_ON_NODE, '2');
    assert.equal(launch.env.TARAS_SUBMIT_DIR, '/home/ann');
    assert.equal(launch.env.TARAS_NODEFILE, '/var/taras/42/nodefile');
    assert.equal(launch.nodefile, 'node01\nnode02\nnode03\n');
  });

  it('expands output patterns in the working directory; errors go with output unless given', () => {
    assert.equal(jobLaunch(input()).stdoutPath, '/home/ann/work/taras-42.out');
    assert.equal(jobLaunch(input()).stderrPath, '/home/ann/work/taras-42.out');
    const split = jobLaunch(input({ output: '/logs/%x-%j.out', error: '%u-%j.err' }));
    assert.equal(split.stdoutPath, '/logs/sim-42.out');
    assert.equal(split.stderrPath, '/home/ann/work/ann-42.err');
  });

  it('--export ALL passes the submitting environment; NONE keeps only the basics and named variables', () => {
    assert.equal(jobLaunch(input()).env.SECRET, 's');
    const none = jobLaunch(input({ export: { all: false, variables: [{ name: 'PROJECT' }, { name: 'MODE', value: 'fast' }] } })).env;
    assert.equal(none.SECRET, undefined);
    assert.equal(none.PATH, '/usr/bin:/bin');
    assert.equal(none.PROJECT, 'p');
    assert.equal(none.MODE, 'fast');
  });

  it('a job submitted from inside a restarted job does not inherit its restart and checkpoint variables', () => {
    const inherited = { TARAS_RESTART: '1', TARAS_RESTART_COUNT: '2', TARAS_CHECKPOINT_SIGNAL: 'SIGUSR1', TARAS_CHECKPOINT_DURATION: '30', TARAS_PREEMPT_SIGNAL: 'SIGUSR2' };
    const base = input();
    const env = jobLaunch({ ...base, submitEnv: { ...base.submitEnv, ...inherited } }).env;
    for (const name of Object.keys(inherited)) assert.equal(env[name], undefined, name);
    assert.equal(env.PROJECT, 'p', 'the rest of the environment is kept');
  });
});
