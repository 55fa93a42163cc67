// cluster.toml: a valid file gives exact values, and every kind of mistake is
// refused with the file, the line, the key path, what is wrong and the fix,
// all mistakes of a file at once, never a throw.

import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { type ClusterConfig, defaultClusterConfig, INTERACTIVE_DEFAULTS, parseClusterConfig, withDataDir } from '../src/config/cluster.js';
import { type ConfigError, formatConfigError } from '../src/config/errors.js';
import { expandHostlist } from '../src/config/hostlist.js';
import { readClusterConfig } from '../src/config/load.js';
import { closestWord } from '../src/config/suggest.js';

const FILE = '/etc/taras/cluster.toml';
const toml = (...lines: string[]): string => `${lines.join('\n')}\n`;

function configOf(text: string): ClusterConfig {
  const result = parseClusterConfig(text, FILE);
  if (!result.ok) assert.fail(`expected a valid file, got:\n${result.errors.map(formatConfigError).join('\n')}`);
  assert.deepEqual(result.ignored, [], 'nothing ignored');
  return result.config;
}

function errorsOf(text: string): readonly ConfigError[] {
  const result = parseClusterConfig(text, FILE);
  if (result.ok) assert.fail('expected the file to be refused');
  for (const error of result.errors) {
    assert.equal(error.file, FILE);
    assert.ok(error.fix.length > 0, `a fix for ${error.key}`);
  }
  return result.errors;
}

/** The file's single error, as { line, key, message } (file and fix checked by errorsOf). */
function onlyError(text: string): { line: number; key: string; message: string } {
  const errors = errorsOf(text);
  assert.equal(errors.length, 1, errors.map(formatConfigError).join('\n'));
  const [{ line, key, message }] = errors;
  return { line, key, message };
}

/** Lines 1-8: one node group and one partition; tests append or prepend. */
const NODES = ['[[nodes]]', 'names = "node[01-04]"', 'cpus = 8', 'memory = "16G"'];
const PARTITION = ['[[partitions]]', 'name = "batch"', 'nodes = "node[01-04]"'];
const MINIMAL = [...NODES, '', ...PARTITION];

describe('cluster.toml: valid files', () => {
  it('a full file gives exact values', () => {
    const config = configOf(toml(
      '[cluster]',
      'name = "demo"',
      'policy = "conservative"',
      'placement = "best-fit"',
      'listen = "127.0.0.2:7000"',
      'socket = "ctl.sock"',
      'data_dir = "state"',
      'node_timeout = "2m"',
      'keep_finished = "1d"',
      'warn_before_limit = "0s"',
      'warn_signal = "b:sigusr2"',
      'kill_grace = "1:30"',
      'max_pending_per_user = 500',
      'max_pending_script_size = "16M"',
      'max_submit_rate = 0',
      'max_connections = 2000',
      'message_timeout = "30s"',
      'max_streams_per_user = 32',
      'admins = ["alice", "@wheel", "alice"]',
      'allow_root_jobs = false',
      'munge_socket = "/run/munge/other.socket"',
      'jwt_key = "keys/jwt.key"',
      '',
      '[[nodes]]',
      'names = "node[01-02]"',
      'cpus = 8',
      'memory = "16G"',
      'features = ["ib", "ssd", "ib"]',
      '[[nodes]]',
      'names = "gpu1"',
      'cpus = 32',
      'memory = 262144',
      '',
      '[[partitions]]',
      'name = "debug"',
      'nodes = "node[01-02]"',
      'default = true',
      'max_time = "30:00"',
      'max_nodes = 2',
      'priority = 10',
      '[[partitions]]',
      'name = "all"',
      'nodes = "ALL"',
      'max_time = 120',
      'max_nodes = "UNLIMITED"',
    ));
    const expected: ClusterConfig = {
      name: 'demo',
      policy: 'conservative',
      placement: 'best-fit',
      listen: { host: '127.0.0.2', port: 7000 },
      dataDir: '/etc/taras/state',
      socketPath: '/etc/taras/state/ctl.sock',
      nodeTimeoutSeconds: 120,
      keepFinishedSeconds: 86400,
      warnSignal: { signal: 'USR2', beforeSeconds: 0, batchOnly: true },
      warnBeforeLimitSeconds: 0,
      killGraceSeconds: 90,
      maxPendingPerUser: 500,
      maxPendingScriptMiB: 16,
      maxSubmitRate: 0,
      maxConnections: 2000,
      messageTimeoutSeconds: 30,
      maxStreamsPerUser: 32,
      nodes: [
        { name: 'node01', cpus: 8, memoryMiB: 16384, features: ['ib', 'ssd'] },
        { name: 'node02', cpus: 8, memoryMiB: 16384, features: ['ib', 'ssd'] },
        { name: 'gpu1', cpus: 32, memoryMiB: 262144, features: [] },
      ],
      partitions: [
        { name: 'debug', nodes: ['node01', 'node02'], isDefault: true, maxTimeSeconds: 1800, maxNodes: 2, priority: 10 },
        { name: 'all', nodes: ['node01', 'node02', 'gpu1'], isDefault: false, maxTimeSeconds: 7200, maxNodes: null, priority: 1 },
      ],
      defaultPartition: 'debug',
      admins: ['alice', '@wheel'],
      allowRootJobs: false,
      mungeSocket: '/run/munge/other.socket',
      jwtKeyPath: '/etc/taras/state/keys/jwt.key',
      interactive: INTERACTIVE_DEFAULTS,
    };
    assert.deepEqual(config, expected);
  });

  it('left-out [cluster] keys take the defaults, and a single partition is the default', () => {
    const config = configOf(toml(...MINIMAL));
    assert.deepEqual({ ...config, nodes: config.nodes.length }, {
      name: 'taras',
      policy: 'easy',
      placement: 'first-fit',
      listen: { host: '127.0.0.1', port: 6817 },
      dataDir: '/etc/taras/taras-data',
      socketPath: '/etc/taras/taras-data/taras.sock',
      nodeTimeoutSeconds: 60,
      keepFinishedSeconds: 3600,
      warnSignal: null,
      warnBeforeLimitSeconds: 60,
      killGraceSeconds: 30,
      maxPendingPerUser: 10000,
      maxPendingScriptMiB: 128,
      maxSubmitRate: 100,
      maxConnections: 0,
      messageTimeoutSeconds: 10,
      maxStreamsPerUser: 0,
      nodes: 4,
      partitions: [{ name: 'batch', nodes: ['node01', 'node02', 'node03', 'node04'], isDefault: true, maxTimeSeconds: null, maxNodes: null, priority: 1 }],
      defaultPartition: 'batch',
      admins: [],
      allowRootJobs: true,
      jwtKeyPath: '/etc/taras/taras-data/jwt.key',
      interactive: INTERACTIVE_DEFAULTS,
    });
  });

  it('a single partition marked default = false is still the default', () => {
    const config = configOf(toml(...MINIMAL, 'default = false'));
    assert.equal(config.partitions[0].isDefault, true);
    assert.equal(config.defaultPartition, 'batch');
  });

  it('interactive jobs: policy, grace, idle, longest time and warning (interactive*)', () => {
    const config = configOf(toml('[cluster]', 'interactive = "queued"', 'interactive_grace = "90s"', 'interactive_idle = "1h"', 'interactive_max_time = "8h"',
      'interactive_warn = "5m"', ...MINIMAL));
    assert.deepEqual(config.interactive, { policy: 'queued', graceSeconds: 90, idleSeconds: 3600, maxTimeSeconds: 8 * 3600, warnSeconds: 300 });
    const error = onlyError(toml('[cluster]', 'interactive = "now"', ...MINIMAL));
    assert.equal(error.key, 'cluster.interactive');
    assert.match(error.message, /unknown interactive "now"/);
  });

  it('accepts an IPv6 listen address and an absolute socket path', () => {
    const config = configOf(toml('[cluster]', 'listen = "[::1]:0"', 'socket = "/run/taras.sock"', ...MINIMAL));
    assert.deepEqual(config.listen, { host: '::1', port: 0 });
    assert.equal(config.socketPath, '/run/taras.sock');
  });

  it('the documented example (docs/cluster.example.toml) is valid: 20 nodes, three partitions, debug the default', async () => {
    const text = await readFile(new URL('../../docs/cluster.example.toml', import.meta.url), 'utf8');
    const config = configOf(text);
    assert.equal(config.nodes.length, 20);
    assert.deepEqual(config.nodes.find((node) => node.name === 'gpu3'), { name: 'gpu3', cpus: 32, memoryMiB: 262144, features: ['gpu'] });
    assert.deepEqual(config.partitions.map((p) => [p.name, p.nodes.length, p.isDefault, p.maxTimeSeconds, p.maxNodes, p.priority]), [
      ['debug', 4, true, 1800, 2, 10],
      ['batch', 12, false, 172800, null, 1],
      ['gpu', 4, false, 43200, 4, 1],
    ]);
    assert.equal(config.defaultPartition, 'debug');
  });

  it('defaultClusterConfig: one default partition over 16 nodes of 8 CPUs and 16 GiB, easy, first-fit, loopback', () => {
    const config = defaultClusterConfig('/tmp/taras-test');
    assert.deepEqual(config.nodes.map((node) => node.name), expandHostlist('node[01-16]'));
    assert.ok(config.nodes.every((node) => node.cpus === 8 && node.memoryMiB === 16384 && node.features.length === 0));
    assert.deepEqual(config.partitions, [{ name: 'batch', nodes: expandHostlist('node[01-16]'), isDefault: true, maxTimeSeconds: null, maxNodes: null, priority: 1 }]);
    assert.deepEqual(
      [config.policy, config.placement, config.listen, config.dataDir, config.socketPath, config.defaultPartition],
      ['easy', 'first-fit', { host: '127.0.0.1', port: 6817 }, '/tmp/taras-test', '/tmp/taras-test/taras.sock', 'batch'],
    );
  });
  it('withDataDir (--data over data_dir): the socket, JWT key and event log kept in data_dir move with it, paths elsewhere stay', () => {
    const inside = withDataDir(configOf(toml('[cluster]', 'data_dir = "state"', 'socket = "run/ctl.sock"', 'event_log = "events.log"', ...MINIMAL)), '/tmp/other');
    assert.deepEqual([inside.dataDir, inside.socketPath, inside.jwtKeyPath, inside.eventLog?.path], ['/tmp/other', '/tmp/other/run/ctl.sock', '/tmp/other/jwt.key', '/tmp/other/events.log']);
    const outside = withDataDir(configOf(toml('[cluster]', 'socket = "/run/taras.sock"', 'jwt_key = "../keys/jwt.key"', ...MINIMAL)), 'rel');
    assert.deepEqual([outside.dataDir, outside.socketPath, outside.jwtKeyPath], [resolve('rel'), '/run/taras.sock', '/etc/taras/keys/jwt.key']);
  });
});

describe('cluster.toml: each mistake names file, line, key and fix', () => {
  it('TOML syntax: the parser\'s line and column, and the key written on that line', () => {
    assert.deepEqual(onlyError(toml('[cluster]', 'policy = easy', ...MINIMAL)), {
      line: 2,
      key: 'cluster.policy',
      message: 'TOML syntax: invalid value (column 10)',
    });
    const unclosed = errorsOf(toml('[cluster]', 'name = "demo', ...MINIMAL))[0];
    assert.deepEqual([unclosed.line, unclosed.key, unclosed.fix], [2, 'cluster.name', 'close the string, array or table that starts here']);
    const repeated = errorsOf(toml(...MINIMAL, 'name = "again"'))[0];
    assert.equal(repeated.line, 9);
    assert.equal(repeated.key, 'partitions[0].name');
    assert.match(repeated.fix, /may appear once/);
  });

  it('unknown keys, with a "did you mean" for typos and for slurm.conf names', () => {
    const errors = errorsOf(toml('[cluster]', 'polcy = "easy"', '[[nodes]]', 'names = "n1"', 'cpus = 1', 'RealMemory = 100', 'memory = 100', '[[partition]]', 'name = "p"'));
    assert.deepEqual(errors.map(({ line, key, message }) => ({ line, key, message })), [
      // The misspelt [[partition]] leaves the file without partitions:
      { line: 1, key: 'partitions', message: 'the file defines no partitions, so no job could run' },
      { line: 2, key: 'cluster.polcy', message: 'unknown key "polcy" in [cluster] (did you mean "policy"?)' },
      { line: 6, key: 'nodes[0].RealMemory', message: 'unknown key "RealMemory" in this [[nodes]] table (did you mean "memory"?)' },
      { line: 8, key: 'partition', message: 'unknown key "partition" at the top level (did you mean "partitions"?)' },
    ]);
    assert.equal(errors[1].fix, 'use one of: name, policy, placement, listen, socket, data_dir, node_timeout, keep_finished, warn_signal, warn_before_limit, kill_grace, max_pending_per_user, max_pending_script_size, max_submit_rate, max_connections, message_timeout, max_streams_per_user, admins, allow_root_jobs, munge_socket, jwt_key, mail_program, mail_domain, max_checkpoint_interval, max_checkpoint_duration, interactive, interactive_grace, interactive_idle, interactive_max_time, interactive_warn, kill_invalid_depend, max_array_size, event_log, event_log_kinds, event_log_max_size, event_log_keep');
  });

  it('unknown key far from any known one gets no suggestion', () => {
    assert.deepEqual(onlyError(toml(...MINIMAL, 'colour = "blue"')), {
      line: 9,
      key: 'partitions[0].colour',
      message: 'unknown key "colour" in this [[partitions]] table',
    });
  });

  it('wrong types: the key, what was expected and what was found', () => {
    const errors = errorsOf(toml('[cluster]', 'policy = 3', 'name = true', '[[nodes]]', 'names = "n1"', 'cpus = "8"', 'memory = [1]', 'features = "ib"', '[[partitions]]', 'name = "p"', 'nodes = "n1"', 'default = "yes"', 'priority = 1.5'));
    assert.deepEqual(errors.map(({ line, key, message }) => ({ line, key, message })), [
      { line: 2, key: 'cluster.policy', message: 'expected a string, got the integer 3' },
      { line: 3, key: 'cluster.name', message: 'expected a string, got true' },
      { line: 6, key: 'nodes[0].cpus', message: 'expected a whole number, got the string "8"' },
      { line: 7, key: 'nodes[0].memory', message: 'expected a memory size, got an array' },
      { line: 8, key: 'nodes[0].features', message: 'expected an array of strings, got the string "ib"' },
      { line: 12, key: 'partitions[0].default', message: 'expected true or false, got the string "yes"' },
      { line: 13, key: 'partitions[0].priority', message: 'expected a whole number, got the number 1.5' },
    ]);
    assert.equal(errors[2].fix, 'write cpus = 8');
  });

  it('[nodes] written as a single table, and [cluster] written as a value', () => {
    const errors = errorsOf(toml('cluster = "demo"', '[nodes]', 'names = "n1"', ...PARTITION));
    assert.deepEqual(errors.map(({ line, key, message, fix }) => ({ line, key, message, fix })), [
      { line: 1, key: 'cluster', message: 'expected a [cluster] table, got the string "demo"', fix: 'replace it with a [cluster] section' },
      { line: 2, key: 'nodes', message: '[nodes] is a single table, but there may be several', fix: 'write [[nodes]] (double brackets) for each entry' },
    ]);
  });

  it('keys inside inline tables, dotted keys and multi-line arrays are found on their own lines', () => {
    const errors = errorsOf(toml(
      'cluster.policy = "fifo"',
      'nodes = [',
      '  { names = "n[1-2]", cpus = 2, memory = "1G" },  # a comment',
      '  # another',
      '  { names = "m1", cpus = "x", memory = 1 },',
      ']',
      'partitions = [{ name = "p", nodes = "ALL", max_time = "x" }]',
    ));
    assert.deepEqual(errors.map(({ line, key }) => ({ line, key })), [
      { line: 1, key: 'cluster.policy' },
      { line: 5, key: 'nodes[1].cpus' },
      { line: 7, key: 'partitions[0].max_time' },
    ]);
  });

  it('a missing required key points at its table\'s header', () => {
    assert.deepEqual(onlyError(toml(...PARTITION, '', '[[nodes]]', 'names = "node[01-04]"', 'memory = "16G"')), {
      line: 5,
      key: 'nodes[0].cpus',
      message: 'this [[nodes]] table has no "cpus"',
    });
    assert.equal(errorsOf(toml(...PARTITION, '', '[[nodes]]', 'names = "node[01-04]"', 'memory = "16G"'))[0].fix, 'add cpus = 8');
  });

  it('a node defined by two [[nodes]] tables, or twice in one', () => {
    const errors = errorsOf(toml(...MINIMAL, '[[nodes]]', 'names = "node[03-06]"', 'cpus = 4', 'memory = 1024', '[[nodes]]', 'names = "x1,x2,x1"', 'cpus = 1', 'memory = 1'));
    assert.deepEqual(errors.map(({ line, key, message }) => ({ line, key, message })), [
      { line: 10, key: 'nodes[1].names', message: 'node[03-04] are already defined by nodes[0] (line 2)' },
      { line: 14, key: 'nodes[2].names', message: 'x1 is listed more than once in this hostlist' },
      // node05, node06 and x1, x2 are in no partition either:
      { line: 10, key: 'nodes[1].names', message: 'node[05-06] are in no partition, so no job could run there' },
      { line: 14, key: 'nodes[2].names', message: 'x[1-2] are in no partition, so no job could run there' },
    ].sort((a, b) => a.line - b.line));
  });

  it('a partition naming nodes no [[nodes]] table defines', () => {
    const error = errorsOf(toml(...NODES, '', '[[partitions]]', 'name = "batch"', 'nodes = "node[01-06],gpu1"'))[0];
    assert.deepEqual(error, {
      file: FILE,
      line: 8,
      key: 'partitions[0].nodes',
      message: 'gpu1,node[05-06] are not defined by any [[nodes]] table',
      fix: 'define them in [[nodes]], or correct the hostlist (defined: node[01-04])',
    });
  });

  it('a node in no partition', () => {
    assert.deepEqual(onlyError(toml(...NODES, '', '[[partitions]]', 'name = "batch"', 'nodes = "node[01-03]"')), {
      line: 2,
      key: 'nodes[0].names',
      message: 'node04 is in no partition, so no job could run there',
    });
  });

  it('several partitions and none marked default: the line of the first [[partitions]]', () => {
    const error = errorsOf(toml(...MINIMAL, '', '[[partitions]]', 'name = "debug"', 'nodes = "node01"'))[0];
    assert.deepEqual(error, {
      file: FILE,
      line: 6,
      key: 'partitions',
      message: 'none of the 2 partitions is marked default',
      fix: 'add default = true to the partition that jobs without --partition go to',
    });
  });

  it('two partitions marked default: the second one is at fault', () => {
    assert.deepEqual(onlyError(toml(...MINIMAL, 'default = true', '', '[[partitions]]', 'name = "debug"', 'nodes = "node01"', 'default = true')), {
      line: 14,
      key: 'partitions[1].default',
      message: '"debug" and "batch" (line 6) are both marked default',
    });
  });

  it('two partitions with one name', () => {
    assert.deepEqual(onlyError(toml(...MINIMAL, 'default = true', '[[partitions]]', 'name = "batch"', 'nodes = "node01"')), {
      line: 11,
      key: 'partitions[1].name',
      message: 'partition "batch" is already defined by partitions[0] (line 7)',
    });
  });

  it('unknown policy and placement, with the closest name', () => {
    const errors = errorsOf(toml('[cluster]', 'policy = "esay"', 'placement = "worst-fit"', ...MINIMAL));
    assert.deepEqual(errors.map(({ line, key, message, fix }) => ({ line, key, message, fix })), [
      { line: 2, key: 'cluster.policy', message: 'unknown policy "esay" (did you mean "easy"?)', fix: 'use one of: fcfs, easy, conservative' },
      { line: 3, key: 'cluster.placement', message: 'unknown placement "worst-fit" (did you mean "first-fit"?)', fix: 'use one of: first-fit, best-fit, least-loaded' },
    ]);
  });

  it('bad durations: unreadable, a timer without a unit, no limit where one is needed, too short', () => {
    const errors = errorsOf(toml(
      '[cluster]',
      'node_timeout = "60"',
      'keep_finished = "UNLIMITED"',
      'kill_grace = "soon"',
      'warn_before_limit = 30',
      'warn_signal = "R:USR1@10"',
      ...MINIMAL,
      'max_time = "3x"',
    ));
    assert.deepEqual(errors.map(({ line, key, message }) => ({ line, key, message })), [
      { line: 2, key: 'cluster.node_timeout', message: '"60" has no unit' },
      { line: 3, key: 'cluster.keep_finished', message: '"UNLIMITED" means no limit, which keep_finished cannot be' },
      { line: 4, key: 'cluster.kill_grace', message: '"soon" is not a duration: unrecognised form' },
      { line: 5, key: 'cluster.warn_before_limit', message: '30 has no unit' },
      { line: 6, key: 'cluster.warn_signal', message: '"R:USR1@10" is not a signal request: \'R:\' is not supported (only B:)' },
      { line: 15, key: 'partitions[0].max_time', message: '"3x" is not a duration: the unit must be d, h, m or s, in that order, with whole numbers' },
    ]);
    assert.equal(errors[0].fix, 'say which unit: node_timeout = "60s" or "60m"');
    assert.match(errors[5].fix, /^write max_time = "1-00:00:00" \(forms: minutes, MM:SS, HH:MM:SS, D-HH/);
    assert.match(errors[4].fix, /^write \[B:\]SIG\[@TIME\]: a signal name or a number from 1 to 31/);
    assert.deepEqual(onlyError(toml('[cluster]', 'node_timeout = "0s"', ...MINIMAL)), {
      line: 2,
      key: 'cluster.node_timeout',
      message: '"0s" is too short: must be at least 1 s',
    });
  });

  it('a real-time warn_signal (32 to 64, which no agent can send) is set aside with the fix: a start goes on without it; with another mistake it is listed as one', () => {
    const result = parseClusterConfig(toml('[cluster]', 'warn_signal = "B:40@30"', ...MINIMAL), FILE);
    assert.ok(result.ok);
    // Before, it was taken, and every job that did not give its own --signal FAILED at its start.
    assert.equal(result.config.warnSignal, null);
    assert.deepEqual(result.ignored.map(formatConfigError), [
      `${FILE}:2: cluster.warn_signal: "B:40@30" is not a signal request: '40' is a real-time signal (32 to 64), which Taras cannot send to a job `
        + '(fix: write [B:]SIG[@TIME]: a signal name or a number from 1 to 31 (USR1, SIGUSR1, 10), B: for the batch shell only, '
        + 'TIME seconds before the time limit (0 to 65535, default 60), e.g. B:USR1@120)',
    ]);
    const errors = errorsOf(toml('[cluster]', 'warn_signal = "64"', 'node_timeout = "60"', ...MINIMAL));
    assert.deepEqual(errors.map(({ line, key }) => [line, key]), [[2, 'cluster.warn_signal'], [3, 'cluster.node_timeout']]);
    // Past 64 it is no signal at all: an error as before.
    assert.deepEqual(onlyError(toml('[cluster]', 'warn_signal = "65"', ...MINIMAL)), {
      line: 2, key: 'cluster.warn_signal', message: '"65" is not a signal request: \'65\': signal numbers go from 1 to 31',
    });
    assert.deepEqual(configOf(toml('[cluster]', 'warn_signal = "31@10"', ...MINIMAL)).warnSignal, { signal: '31', beforeSeconds: 10, batchOnly: false });
  });

  it('bad sizes and counts: memory form, no memory, CPUs and max_nodes out of range', () => {
    const errors = errorsOf(toml('[[nodes]]', 'names = "n[1-2]"', 'cpus = 0', 'memory = "1.5G"', '[[nodes]]', 'names = "m1"', 'cpus = 1', 'memory = "0M"', '[[partitions]]', 'name = "p"', 'nodes = "ALL"', 'max_nodes = 0'));
    assert.deepEqual(errors.map(({ line, key, message }) => ({ line, key, message })), [
      { line: 3, key: 'nodes[0].cpus', message: '0 is out of range: must be between 1 and 1000000' },
      { line: 4, key: 'nodes[0].memory', message: '"1.5G" is not a memory size: use a whole number with a smaller unit (1536M, not 1.5G)' },
      { line: 8, key: 'nodes[1].memory', message: '"0M" is no memory at all' },
      { line: 12, key: 'partitions[0].max_nodes', message: '0 is out of range: must be at least 1' },
    ]);
  });

  it('a bad hostlist: the expression, the character at fault and the fix', () => {
    const error = errorsOf(toml('[[nodes]]', 'names = "node[01-16"', 'cpus = 8', 'memory = 1024', ...PARTITION))[0];
    assert.deepEqual(error, {
      file: FILE,
      line: 2,
      key: 'nodes[0].names',
      message: 'bad hostlist "node[01-16": "[" at character 5 is never closed',
      fix: 'add "]" after the last number of the range',
    });
  });

  it('no [[nodes]] at all', () => {
    const error = errorsOf(toml('[cluster]', 'name = "empty"', ...PARTITION))[0];
    assert.deepEqual([error.line, error.key, error.message], [1, 'nodes', 'the file defines no nodes']);
  });

  it('bad names and addresses', () => {
    const errors = errorsOf(toml('[cluster]', 'name = "my cluster"', 'listen = "localhost"', ...NODES, '[[partitions]]', 'name = "a/b"', 'nodes = "ALL"'));
    assert.deepEqual(errors.map(({ line, key, message }) => ({ line, key, message })), [
      { line: 2, key: 'cluster.name', message: '"my cluster" is not allowed here: use letters, digits, ".", "_" and "-"' },
      { line: 3, key: 'cluster.listen', message: '"localhost" is not HOST:PORT with a port from 0 to 65535' },
      { line: 9, key: 'partitions[0].name', message: '"a/b" is not allowed here: use letters, digits, ".", "_" and "-"' },
    ]);
    assert.equal(onlyError(toml('[cluster]', 'listen = "127.0.0.1:70000"', ...MINIMAL)).key, 'cluster.listen');
  });

  it('a socket path longer than a Unix socket allows', () => {
    assert.deepEqual(onlyError(toml('[cluster]', `data_dir = "/${'d'.repeat(100)}"`, ...MINIMAL)), {
      line: 2,
      key: 'cluster.data_dir',
      message: `the socket path /${'d'.repeat(100)}/taras.sock is longer than the 107 bytes a Unix socket allows`,
    });
  });

  it('every mistake of a file comes back at once, sorted by line, and the parse never throws', () => {
    const errors = errorsOf(toml('[[partitions]]', 'name = "p"', 'nodes = "n[1-3]"', 'max_time = "x"', '[cluster]', 'policy = "lifo"', '[[nodes]]', 'names = "n[1-2]"', 'cpus = -1', 'memory = 1'));
    assert.deepEqual(errors.map((error) => error.line), [3, 4, 6, 9]);
    for (const garbage of ['', '\u0000', '[[[', 'nodes = 1', 'partitions = [1, 2]', '[cluster]\n[cluster]']) {
      assert.equal(parseClusterConfig(garbage, FILE).ok, false, JSON.stringify(garbage));
    }
  });

  it('formatConfigError gives one line: file:line: key: message (fix: ...)', () => {
    const [error] = errorsOf(toml('[cluster]', 'policy = "esay"', ...MINIMAL));
    assert.equal(
      formatConfigError(error),
      '/etc/taras/cluster.toml:2: cluster.policy: unknown policy "esay" (did you mean "easy"?) (fix: use one of: fcfs, easy, conservative)',
    );
  });

  it('readClusterConfig: reads a file, and a missing file is an error value at line 0', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'taras-config-'));
    try {
      const file = join(folder, 'cluster.toml');
      await writeFile(file, toml(...MINIMAL));
      const read = await readClusterConfig(file);
      assert.equal(read.ok && read.config.dataDir, join(folder, 'taras-data'));
      const missing = await readClusterConfig(join(folder, 'nope.toml'));
      assert.deepEqual(missing.ok ? undefined : missing.errors.map(({ line, key, message }) => ({ line, key, message })), [
        { line: 0, key: '', message: 'no such file' },
      ]);
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });
});

describe('did-you-mean suggestions', () => {
  it('suggest the closest word within a few edits, ignoring case and - versus _, and nothing when none is close', () => {
    assert.equal(closestWord('polcy', ['name', 'policy']), 'policy');
    assert.equal(closestWord('job_nmae', ['job_name', 'time']), 'job_name');
    assert.equal(closestWord('CPUS-per-task', ['cpus_per_task']), 'cpus_per_task');
    assert.equal(closestWord('colour', ['name', 'nodes']), undefined);
  });

  it('take an abbreviation of three letters or more as one edit only when asked (getopt-style option names)', () => {
    assert.equal(closestWord('part', ['partition', 'time']), undefined);
    assert.equal(closestWord('part', ['partition', 'time'], { acceptPrefix: true }), 'partition');
    assert.equal(closestWord('pa', ['partition'], { acceptPrefix: true }), undefined);
  });
});
