// Trace replay on a cluster of nodes (`taras simulate TRACE --cluster FILE`):
// the shape rule on chosen jobs, every job that could run completing on
// nodes never over-committed, conservative's promises kept, a 1-node cluster
// replaying exactly as P processors, and the CLI's output.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseClusterConfig } from '../src/config/cluster.js';
import { simCluster } from '../src/cli/simulate.js';
import type { PoolNode } from '../src/core/placement.js';
import type { PolicyName } from '../src/core/scheduler.js';
import { nodeShape, normaliseOnCluster, shapeUnit, type SimCluster } from '../src/sim/cluster.js';
import { summarise } from '../src/sim/metrics.js';
import { simulate, type SimulationResult } from '../src/sim/simulator.js';
import { normalise, parseSwf } from '../src/sim/swf.js';
import { generateWorkload } from '../src/sim/workload.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const work = mkdtempSync(join(tmpdir(), 'taras-simcluster-'));
after(() => rmSync(work, { recursive: true, force: true }));

/** 4 nodes x 8 CPUs, one partition (arrays of inline tables: the same file as [[nodes]] and [[partitions]] blocks). */
const CLUSTER_TOML = `nodes = [{ names = "n[1-4]", cpus = 8, memory = "16G" }]
partitions = [{ name = "batch", nodes = "ALL", default = true }]

[cluster]
name = "four"
placement = "best-fit"
`;

/** The 4 x 8 CPU cluster, read as the CLI reads it (the controller's parser). */
function fourNodes(): SimCluster {
  const parsed = parseClusterConfig(CLUSTER_TOML, join(work, 'cluster.toml'));
  assert.ok(parsed.ok);
  return simCluster(parsed.config);
}

const line = (id: number, submit: number, run: number, size: number, estimate: number) =>
  `${id} ${submit} -1 ${run} ${size} -1 -1 ${size} ${estimate} -1 1 1 1 -1 1 1 -1 -1`;

/** Jobs chosen for the shape rule on 4 x 8 CPUs. */
const SMALL_TRACE = [
  '; MaxProcs: 64',
  line(1, 0, 100, 1, 200), // 1 node x 1
  line(2, 0, 100, 8, 200), // 1 node x 8
  line(3, 0, 100, 9, 200), // 2 nodes x 8 (16 CPUs for 9)
  line(4, 10, 50, 16, 100), // 2 nodes x 8
  line(5, 10, 50, 17, 100), // 3 nodes x 8
  line(6, 20, 300, 32, 300), // 4 nodes x 8: the whole cluster
  line(7, 20, 300, 33, 300), // 5 nodes x 8: no set of nodes holds it: skipped
  line(8, 30, 0, 4, 100), // runtime 0: skipped by the spec's rule
  line(9, 30, 500, 3, 100), // killed at its estimate: runs 100
  line(10, 40, 60, 7, 60), // 1 node x 7
].join('\n');

const generated = (jobs: number, procs: number, seed: number) =>
  parseSwf([...generateWorkload({ jobs, procs, load: 0.9, seed })].join('\n'), `generated-${seed}`);

/** Every job of the workload that could run started, at or after its submission. */
function assertAllRan(result: SimulationResult): void {
  for (const { job, start } of result.outcomes) {
    assert.ok(Number.isFinite(start), `job ${job.request.id} never started`);
    assert.ok(start >= job.request.submitTime, `job ${job.request.id} started before its submission`);
  }
}

/** Each job on exactly its nodes (distinct, in the partition), and no node ever holding more CPUs than it has. */
function assertNeverOverCommitted(result: SimulationResult, cluster: SimCluster): void {
  const cpus = new Map(cluster.nodes.map((node) => [node.name, node.cpus]));
  const partition = new Set(cluster.partitionNodes);
  const changes = new Map<string, [number, number][]>();
  for (const { job, start, nodes } of result.outcomes) {
    const resources = job.request.resources!;
    assert.ok(nodes, `job ${job.request.id} has no nodes`);
    assert.equal(new Set(nodes).size, resources.nodes, `job ${job.request.id} on ${nodes.join(',')}`);
    for (const name of nodes) {
      assert.ok(partition.has(name), `job ${job.request.id} on ${name}, outside the default partition`);
      const list = changes.get(name) ?? [];
      list.push([start, resources.cpusPerNode], [start + job.runtime, -resources.cpusPerNode]);
      changes.set(name, list);
    }
  }
  for (const [name, list] of changes) {
    list.sort((a, b) => a[0] - b[0] || a[1] - b[1]); // ends before starts at the same instant
    let used = 0;
    for (const [at, delta] of list) {
      used += delta;
      assert.ok(used <= cpus.get(name)!, `node ${name} holds ${used} CPUs at ${at}, it has ${cpus.get(name)}`);
    }
  }
}

describe('simulate on a cluster: the shape rule', () => {
  it('C is the CPU count most nodes of the default partition have (the smaller on a tie)', () => {
    const nodes: PoolNode[] = [
      { name: 'a1', cpus: 8, memoryMiB: 1, features: [] },
      { name: 'a2', cpus: 8, memoryMiB: 1, features: [] },
      { name: 'b1', cpus: 32, memoryMiB: 1, features: [] },
      { name: 'b2', cpus: 32, memoryMiB: 1, features: [] },
      { name: 'b3', cpus: 32, memoryMiB: 1, features: [] },
    ];
    const all = nodes.map((node) => node.name);
    assert.equal(shapeUnit({ nodes, placement: 'first-fit', partition: 'p', partitionNodes: all }), 32);
    assert.equal(shapeUnit({ nodes, placement: 'first-fit', partition: 'p', partitionNodes: ['a1', 'a2', 'b1'] }), 8);
    assert.equal(shapeUnit({ nodes, placement: 'first-fit', partition: 'p', partitionNodes: ['a1', 'b1'] }), 8);
    assert.deepEqual(nodeShape(1, 8), { nodes: 1, cpusPerNode: 1 });
    assert.deepEqual(nodeShape(8, 8), { nodes: 1, cpusPerNode: 8 });
    assert.deepEqual(nodeShape(9, 8), { nodes: 2, cpusPerNode: 8 });
    assert.deepEqual(nodeShape(24, 8), { nodes: 3, cpusPerNode: 8 });
    assert.deepEqual(nodeShape(25, 8), { nodes: 4, cpusPerNode: 8 });
  });

  it('turns each job into nodes x CPUs of the default partition, skips and counts what no set of nodes holds', () => {
    const cluster = fourNodes();
    assert.equal(cluster.placement, 'best-fit');
    const workload = normaliseOnCluster(parseSwf(SMALL_TRACE, 'small.swf'), cluster);
    const shapes = new Map(workload.jobs.map((job) => [job.request.id as number, job.request]));
    const shape = (id: number) => {
      const request = shapes.get(id)!;
      const r = request.resources!;
      assert.equal(request.size, r.nodes * r.cpusPerNode, `job ${id}: size = nodes x CPUs per node`);
      return `${r.nodes}x${r.cpusPerNode}`;
    };
    assert.deepEqual([1, 2, 3, 4, 5, 6, 9, 10].map(shape), ['1x1', '1x8', '2x8', '2x8', '3x8', '4x8', '1x3', '1x7']);
    assert.equal(shapes.has(7), false);
    assert.equal(shapes.has(8), false);
    assert.equal(workload.skipped, 2, 'job 7 (5 nodes) and job 8 (runtime 0)');
    assert.equal(workload.unfit, 1);
    assert.equal(workload.rounded, 2, 'jobs 3 and 5 are given more CPUs than they asked for');
    assert.equal(workload.cpusPerNode, 8);
    assert.equal(workload.processors, 32);
    assert.equal(workload.jobs.find((job) => job.request.id === 9)!.runtime, 100, 'killed at its estimate, as in plain replay');
    for (const { request } of workload.jobs) {
      assert.deepEqual([...request.resources!.eligibleNodes!], ['n1', 'n2', 'n3', 'n4']);
      assert.equal(request.resources!.memoryMiBPerNode, 0);
      assert.deepEqual(request.resources!.features, []);
    }
  });

  it('only the default partition counts: a job the whole cluster could hold but the partition cannot is skipped', () => {
    const twoPartitions = CLUSTER_TOML.replace('{ name = "batch", nodes = "ALL", default = true }',
      '{ name = "batch", nodes = "n[1-2]", default = true }, { name = "rest", nodes = "n[3-4]" }');
    const parsed = parseClusterConfig(twoPartitions, join(work, 'two.toml'));
    assert.ok(parsed.ok, JSON.stringify(parsed));
    const cluster = simCluster(parsed.config);
    const workload = normaliseOnCluster(parseSwf(SMALL_TRACE, 'small.swf'), cluster);
    assert.equal(workload.processors, 16, 'the partition\'s CPUs');
    assert.equal(workload.unfit, 3, 'jobs 5 (3 nodes), 6 (4 nodes) and 7 (5 nodes)');
    const result = simulate(workload, 'easy');
    assertAllRan(result);
    for (const { nodes } of result.outcomes) for (const name of nodes!) assert.ok(name === 'n1' || name === 'n2');
  });
});

describe('simulate on a cluster: the replay', () => {
  const policies: PolicyName[] = ['fcfs', 'easy', 'conservative'];

  it('the small trace: every job runs, the whole-cluster job alone, nodes never over-committed', () => {
    const cluster = fourNodes();
    for (const policy of policies) {
      const result = simulate(normaliseOnCluster(parseSwf(SMALL_TRACE, 'small.swf'), cluster), policy);
      assert.equal(result.outcomes.length, 8);
      assertAllRan(result);
      assertNeverOverCommitted(result, cluster);
      const whole = result.outcomes.find((o) => o.job.request.id === 6)!;
      assert.deepEqual([...whole.nodes!].sort(), ['n1', 'n2', 'n3', 'n4']);
      for (const other of result.outcomes) {
        if (other === whole) continue;
        const overlaps = other.start < whole.start + whole.job.runtime && whole.start < other.start + other.job.runtime;
        assert.ok(!overlaps, `${policy}: job ${other.job.request.id} runs beside the whole-cluster job`);
      }
    }
  });

  it('generated workloads: every job that could run completes, on nodes never over-committed', () => {
    const cluster = fourNodes();
    for (const seed of [1, 2, 3]) {
      // Sizes up to 40 processors: those above 32 need 5 nodes and are skipped.
      const workload = normaliseOnCluster(generated(400, 40, seed), cluster);
      assert.ok(workload.unfit > 0 && workload.jobs.length > 300, `seed ${seed}: ${workload.unfit} unfit of ${workload.jobs.length}`);
      for (const policy of policies) {
        const result = simulate(workload, policy);
        assert.equal(result.outcomes.length, workload.jobs.length);
        assertAllRan(result);
        assertNeverOverCommitted(result, cluster);
        const summary = summarise(result);
        assert.ok(summary.utilization > 0 && summary.utilization <= 1, `${policy}: utilisation ${summary.utilization}`);
      }
    }
  });

  it('conservative on nodes never starts a job later than its prediction at submission', () => {
    const cluster = fourNodes();
    for (const seed of [4, 5, 6, 7]) {
      const result = simulate(normaliseOnCluster(generated(500, 32, seed), cluster), 'conservative');
      assertAllRan(result);
      for (const { job, start, predictedStart } of result.outcomes) {
        assert.ok(Number.isFinite(predictedStart), `job ${job.request.id} had no prediction`);
        assert.ok(start <= predictedStart, `seed ${seed}: job ${job.request.id} started at ${start}, promised ${predictedStart}`);
      }
      assert.equal(summarise(result).predictionLate, 0);
    }
  });

  it('one node of P CPUs replays exactly as P processors (starts and predictions), under easy and the others', () => {
    // With one node every job is 1 node x s CPUs (s <= C = P), nothing is rounded, and the node's timeline is
    // the processor profile: EASY's reservation of the head on the node plan is the spec's shadow time, and a
    // job fits beside it exactly when it ends by then or fits in the extra processors. So the equivalence holds
    // for any sizes up to P, not only 1-CPU jobs. (On several nodes it does not: a job that fits the free CPUs
    // may fit on no node.)
    const P = 64;
    const cluster: SimCluster = { nodes: [{ name: 'big', cpus: P, memoryMiB: 1024, features: [] }], placement: 'first-fit', partition: 'all', partitionNodes: ['big'] };
    for (const seed of [8, 9]) {
      const trace = generated(600, P, seed);
      for (const policy of policies) {
        const plain = simulate(normalise(trace, P), policy);
        const onNode = simulate(normaliseOnCluster(trace, cluster), policy);
        assert.equal(onNode.outcomes.length, plain.outcomes.length);
        for (let i = 0; i < plain.outcomes.length; i++) {
          const a = plain.outcomes[i];
          const b = onNode.outcomes[i];
          assert.equal(b.job.request.id, a.job.request.id);
          assert.equal(b.start, a.start, `${policy} seed ${seed}: job ${a.job.request.id}`);
          assert.equal(b.predictedStart, a.predictedStart, `${policy} seed ${seed}: prediction of job ${a.job.request.id}`);
        }
        assert.deepEqual(summarise(onNode), summarise(plain));
      }
    }
  });
});

describe('taras simulate --cluster', () => {
  const taras = (...args: string[]) => {
    const run = spawnSync(process.execPath, [join(root, 'bin/taras.js'), ...args], { encoding: 'utf8', cwd: work });
    return { code: run.status, stdout: run.stdout, stderr: run.stderr };
  };
  const clusterFile = join(work, 'cluster.toml');
  const traceFile = join(work, 'small.swf');
  writeFileSync(clusterFile, CLUSTER_TOML);
  writeFileSync(traceFile, SMALL_TRACE);

  it('--json: the figures of plain replay plus what it ran on', () => {
    const run = taras('simulate', traceFile, '--cluster', clusterFile, '--policy', 'conservative', '--json');
    assert.equal(run.code, 0, run.stderr);
    const report = JSON.parse(run.stdout);
    const plain = JSON.parse(taras('simulate', traceFile, '--policy', 'conservative', '--json').stdout);
    assert.deepEqual(Object.keys(report), [...Object.keys(plain), 'cluster'], 'every figure of plain replay, then the cluster');
    assert.ok('predictionEV' in report && 'predictionExactShare' in report);
    assert.equal(report.policy, 'conservative');
    assert.equal(report.procs, 32);
    assert.equal(report.jobs, 8);
    assert.equal(report.skipped, 2);
    assert.equal(report.predictionLate, 0);
    assert.deepEqual(Object.keys(report.cluster).sort(), ['cpus', 'cpusPerNode', 'file', 'multiNode', 'nodes', 'partition', 'partitionNodes',
      'placement', 'requestedUtilization', 'rounded', 'shapeRule', 'skippedShape'].sort());
    assert.equal(report.cluster.nodes, 4);
    assert.equal(report.cluster.cpus, 32);
    assert.equal(report.cluster.partition, 'batch');
    assert.equal(report.cluster.placement, 'best-fit');
    assert.equal(report.cluster.cpusPerNode, 8);
    assert.equal(report.cluster.skippedShape, 1);
    assert.equal(report.cluster.rounded, 2);
    assert.equal(report.cluster.multiNode, 4);
    assert.match(report.cluster.shapeRule, /ceil\(s\/C\) nodes x C CPUs/);
    assert.ok(report.cluster.requestedUtilization < report.utilization);
    const many = JSON.parse(taras('simulate', traceFile, '--cluster', clusterFile, '--policy', 'fcfs,easy', '--json').stdout);
    assert.deepEqual(many.map((r: { policy: string; cluster: { nodes: number } }) => [r.policy, r.cluster.nodes]), [['fcfs', 4], ['easy', 4]]);
  });

  it('the table says it ran on nodes, with the rule and the skipped count; plain replay has no cluster', () => {
    const run = taras('simulate', traceFile, '--cluster', clusterFile, '--policy', 'easy');
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^small\.swf on 4 nodes of .*cluster\.toml \(32 CPUs; jobs in partition batch: 4 nodes, 32 CPUs; best-fit\), 10 jobs in the trace/);
    assert.match(run.stdout, /shape rule, C = 8: s <= C: 1 node x s CPUs; s > C: ceil\(s\/C\) nodes x C CPUs/);
    assert.match(run.stdout, /1 jobs skipped as no set of nodes holds their shape, 2 given more CPUs than asked, 4 on several nodes/);
    assert.match(run.stdout, /\n\s*policy .* util\s+asked /);
    const plain = JSON.parse(taras('simulate', traceFile, '--policy', 'easy', '--json').stdout);
    assert.equal('cluster' in plain, false);
    assert.equal(plain.procs, 64);
  });

  it('refuses --procs with --cluster, and a bad cluster.toml names file, line and fix (exit 2)', () => {
    const both = taras('simulate', traceFile, '--cluster', clusterFile, '--procs', '16');
    assert.equal(both.code, 2);
    assert.match(both.stderr, /--procs or --cluster, not both/);
    const bad = join(work, 'bad.toml');
    writeFileSync(bad, CLUSTER_TOML.replace('cpus = 8', 'cpus = "eight"'));
    const run = taras('simulate', traceFile, '--cluster', bad);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /bad\.toml:\d+: nodes\[0\]\.cpus: .*\(fix: /);
    const missing = taras('simulate', traceFile, '--cluster', join(work, 'nope.toml'));
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /nope\.toml: no such file/);
  });

  it('--help gives the shape rule', () => {
    const help = taras('simulate', '--help').stdout;
    assert.match(help, /--cluster <file>/);
    assert.match(help, /s <= C: 1 node x s CPUs;\s+s > C: ceil\(s\/C\) nodes x C CPUs/);
  });
});
