// cluster.toml's checkpoint settings: [[program_class]] tables (seed 000
// figure 3.5), the maxima, partitions' preempt_mode and grace_time; and the
// job options --checkpoint-interval, --checkpoint-duration, --program-class.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseClusterConfig } from '../src/config/cluster.js';
import { formatConfigError } from '../src/config/errors.js';
import { buildJobSpec, mergeJobSpec } from '../src/jobspec/merge.js';
import { parseDirectives } from '../src/jobspec/directives.js';
import { parseFlagValues } from '../src/jobspec/flags.js';
import { checkBody, JobSpecSchema } from '../src/api/schema.js';

const BASE = '[[nodes]]\nnames = "n[1-2]"\ncpus = 2\nmemory = "1G"\n';

function errorsOf(text: string): string[] {
  const parsed = parseClusterConfig(text, 'cluster.toml');
  assert.ok(!parsed.ok, 'expected errors');
  return parsed.errors.map(formatConfigError);
}

describe('checkpoint configuration', () => {
  it('reads program classes, maxima and partition preemption; defaults when left out', () => {
    const text = `[cluster]\nmax_checkpoint_interval = "2h"\nmax_checkpoint_duration = "5m"\n${BASE}`
      + '[[partitions]]\nname = "low"\nnodes = "ALL"\ndefault = true\npreempt_mode = "suspend"\ngrace_time = "30s"\n'
      + '[[partitions]]\nname = "high"\nnodes = "n1"\npriority = 5\n'
      + '[[program_class]]\nname = "SPMD"\nperiodic_signal = 10\npreempt_signal = "SIGUSR2"\nrestart = "env"\n'
      + '[[program_class]]\nname = "script"\n';
    const parsed = parseClusterConfig(text, 'cluster.toml');
    assert.ok(parsed.ok, JSON.stringify(!parsed.ok && parsed.errors));
    const { config } = parsed;
    assert.deepEqual(config.programClasses, [
      { name: 'SPMD', periodicSignal: 'SIGUSR1', preemptSignal: 'SIGUSR2', restart: 'env' },
      { name: 'script', periodicSignal: 'SIGUSR1', preemptSignal: 'SIGUSR2', restart: 'arg' },
    ]);
    assert.deepEqual([config.maxCheckpointIntervalSeconds, config.maxCheckpointDurationSeconds], [7200, 300]);
    assert.deepEqual(config.partitions.map((p) => [p.name, p.preemptMode, p.graceTimeSeconds]), [['low', 'suspend', 30], ['high', undefined, undefined]]);
    const plain = parseClusterConfig(`${BASE}[[partitions]]\nname = "b"\nnodes = "ALL"\n`, 'cluster.toml');
    assert.ok(plain.ok);
    assert.equal(plain.config.programClasses, undefined, 'the built-in classes apply (CHECKPOINT_DEFAULTS)');
  });

  it('names file, line, key and fix for each mistake', () => {
    const errors = errorsOf(`${BASE}[[partitions]]\nname = "b"\nnodes = "ALL"\npreempt_mode = "gang"\n`
      + '[[program_class]]\nname = "a"\npreempt_signal = "KILL"\n'
      + '[[program_class]]\nname = "a"\nperiodic_signal = "USR2"\nrestart = "flag"\n'
      + '[[program_class]]\nname = "c"\nperiodic_signal = "USR1"\npreempt_signal = "USR1"\n');
    assert.deepEqual(errors, [
      'cluster.toml:8: partitions[0].preempt_mode: "gang" is not a preemption mode (fix: write preempt_mode = "requeue" (one of off, requeue, cancel, suspend))',
      'cluster.toml:11: program_class[0].preempt_signal: "KILL" is not a signal this system can send to a job (fix: write preempt_signal = "USR2" (a name such as USR1 or a number; not KILL or STOP))',
      'cluster.toml:13: program_class[1].name: program class "a" is defined twice (fix: give each [[program_class]] its own name)',
      'cluster.toml:14: program_class[1].periodic_signal: the preemption signal and the periodic signal are both SIGUSR2: a job could not tell them apart (fix: give periodic_signal another signal, such as "USR1")',
      'cluster.toml:15: program_class[1].restart: "flag" is not a restart action (fix: write restart = "arg" (one of arg, env, both, none: -Restart added to the arguments, TARAS_RESTART=1, both, nothing))',
      'cluster.toml:19: program_class[2].preempt_signal: the preemption signal and the periodic signal are both SIGUSR1: a job could not tell them apart (fix: give preempt_signal another signal, such as "USR2")',
    ]);
  });

  it('takes the job options as flags and #TARAS lines into spec.checkpoint, which the API schema accepts', () => {
    const directives = parseDirectives('#!/bin/sh\n#TARAS --checkpoint-interval 10\n#TARAS --program-class spmd\n', 'job.sh');
    const flags = parseFlagValues({ checkpointDuration: '0:45', time: '60' }, { script: 'job.sh' });
    assert.ok(directives.ok && flags.ok);
    const built = buildJobSpec(mergeJobSpec(undefined, directives.value, flags.value), { scriptText: '#!/bin/sh\n', submitDir: '/tmp' });
    assert.ok(built.ok);
    assert.deepEqual(built.value.spec.checkpoint, { durationSeconds: 45, intervalSeconds: 600, programClass: 'spmd' });
    assert.ok(checkBody(JobSpecSchema, built.value.spec).ok);
    const noDuration = parseFlagValues({ checkpointInterval: '5', time: '60' }, { script: 'job.sh' });
    assert.ok(noDuration.ok);
    const refused = buildJobSpec(mergeJobSpec(undefined, undefined, noDuration.value), { scriptText: '#!/bin/sh\n', submitDir: '/tmp' });
    assert.ok(!refused.ok);
    assert.match(refused.errors[0].message, /--checkpoint-interval needs --checkpoint-duration TIME too/);
    const bad = parseFlagValues({ checkpointDuration: 'UNLIMITED' }, { script: 'job.sh' });
    assert.ok(!bad.ok);
    assert.match(bad.errors[0].message, /expected a duration of at least 1 s/);
    const schema = checkBody(JobSpecSchema, { ...built.value.spec, checkpoint: { intervalSeconds: 0, durationSeconds: 5, extra: 1 } });
    assert.ok(!schema.ok);
    assert.deepEqual(schema.problems.map((p) => p.path).sort(), ['checkpoint.extra', 'checkpoint.intervalSeconds']);
  });
});
