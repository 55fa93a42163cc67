// Trace replay on a cluster of nodes (`taras simulate TRACE --cluster FILE`):
// the shape rule that turns an SWF job's processor count into nodes x CPUs,
// and the normalisation that applies it. The replay itself is simulate()'s,
// with a NodePool of the cluster's nodes; without a cluster nothing here runs.
//
// The shape rule. C = the CPU count most nodes of the default partition have
// (on a tie, the smaller). A job of s processors asks for
// - s <= C: 1 node x s CPUs (it may share the node with others);
// - s > C: ceil(s / C) nodes x C CPUs: whole nodes, rounded up, so it is
//   given ceil(s / C) x C CPUs, maybe more than s.
// Every job goes to the default partition (eligible nodes: its nodes), asks
// for no memory in particular (0) and no features. A job whose shape no set
// of those nodes could hold even when all are idle is skipped and counted, as
// plain replay skips a job larger than the machine. The partition's limits
// (max_time, max_nodes) are not applied: the trace's jobs were not written
// for them.

import { NodePool, type PlacementStrategy, type PoolNode } from '../core/placement.js';
import type { ResourceRequest } from '../core/types.js';
import type { Summary } from './metrics.js';
import type { SimulationResult } from './simulator.js';
import { normaliseWith, swfSize, type SwfTrace, type Workload } from './swf.js';

/** The rule in one line, for --help, the table and --json. */
export const SHAPE_RULE = 's <= C: 1 node x s CPUs; s > C: ceil(s/C) nodes x C CPUs (C: CPUs of the most common node in the default partition)';

/** The nodes a trace is replayed on: what the CLI takes from a cluster.toml. */
export interface SimCluster {
  /** Every node of the cluster, in file order. */
  readonly nodes: readonly PoolNode[];
  readonly placement: PlacementStrategy;
  /** The default partition, where every job goes. */
  readonly partition: string;
  readonly partitionNodes: readonly string[];
}

export interface ClusterWorkload extends Workload {
  readonly cluster: SimCluster;
  /** C of the shape rule. */
  readonly cpusPerNode: number;
  /** Of the skipped jobs, those whose shape no set of the partition's nodes could ever hold. */
  readonly unfit: number;
  /** Jobs given more CPUs than they asked for (rounded up to whole nodes). */
  readonly rounded: number;
}

/** C: the CPU count most of the partition's nodes have; on a tie, the smaller. */
export function shapeUnit(cluster: SimCluster): number {
  const byName = new Map(cluster.nodes.map((node) => [node.name, node]));
  const counts = new Map<number, number>();
  for (const name of cluster.partitionNodes) {
    const cpus = byName.get(name)!.cpus;
    counts.set(cpus, (counts.get(cpus) ?? 0) + 1);
  }
  let unit = 0;
  let most = 0;
  for (const [cpus, count] of counts) {
    if (count > most || (count === most && cpus < unit)) {
      unit = cpus;
      most = count;
    }
  }
  return unit;
}

/** The shape rule: nodes x CPUs per node for a job of `size` processors, given C. */
export function nodeShape(size: number, unit: number): { nodes: number; cpusPerNode: number } {
  return size <= unit ? { nodes: 1, cpusPerNode: size } : { nodes: Math.ceil(size / unit), cpusPerNode: unit };
}

/** The spec's normalisation with the shape rule in place of "size > P": every job a request on the cluster's nodes. */
export function normaliseOnCluster(trace: SwfTrace, cluster: SimCluster): ClusterWorkload {
  const unit = shapeUnit(cluster);
  const eligibleNodes: ReadonlySet<string> = new Set(cluster.partitionNodes);
  const check = new NodePool(cluster.nodes);
  // One request per size: jobs of a size share it (and the pool's answers about it).
  const shapes = new Map<number, { size: number; resources: ResourceRequest } | undefined>();
  let unfit = 0;
  let rounded = 0;
  const { jobs, skipped } = normaliseWith(trace, (size) => {
    let shaped = shapes.get(size);
    if (!shapes.has(size)) {
      const { nodes, cpusPerNode } = nodeShape(size, unit);
      const resources: ResourceRequest = { nodes, cpusPerNode, memoryMiBPerNode: 0, features: [], eligibleNodes };
      shaped = check.couldEverPlace(resources) ? { size: nodes * cpusPerNode, resources } : undefined;
      shapes.set(size, shaped);
    }
    if (shaped === undefined) unfit++;
    else if (shaped.size > size) rounded++;
    return shaped;
  });
  const byName = new Map(cluster.nodes.map((node) => [node.name, node.cpus]));
  const processors = cluster.partitionNodes.reduce((sum, name) => sum + byName.get(name)!, 0);
  return { processors, jobs, skipped, cluster, cpusPerNode: unit, unfit, rounded };
}

/** What a replay on nodes adds to the summary (the summary's utilisation counts the CPUs jobs were given). */
export interface ClusterFigures {
  /** Every node of the cluster and their CPUs. */
  nodes: number;
  cpus: number;
  /** The default partition, where the jobs ran, and its nodes (its CPUs are the summary's `procs`). */
  partition: string;
  partitionNodes: number;
  placement: PlacementStrategy;
  shapeRule: string;
  /** C of the shape rule. */
  cpusPerNode: number;
  /** Jobs skipped because no set of the partition's nodes could hold their shape (also in `skipped`). */
  skippedShape: number;
  /** Jobs given more CPUs than the trace asked for. */
  rounded: number;
  /** Jobs on more than one node. */
  multiNode: number;
  /** Share of the partition's CPU time the trace's own processor counts would have used (<= utilization). */
  requestedUtilization: number;
}

export function clusterFigures(workload: ClusterWorkload, result: SimulationResult, summary: Summary): ClusterFigures {
  let given = 0;
  let asked = 0;
  let multiNode = 0;
  for (const { job } of result.outcomes) {
    given += job.request.size * job.runtime;
    asked += swfSize(job.record) * job.runtime;
    if (job.request.resources!.nodes > 1) multiNode++;
  }
  const { cluster } = workload;
  return {
    nodes: cluster.nodes.length,
    cpus: cluster.nodes.reduce((sum, node) => sum + node.cpus, 0),
    partition: cluster.partition,
    partitionNodes: cluster.partitionNodes.length,
    placement: cluster.placement,
    shapeRule: SHAPE_RULE,
    cpusPerNode: workload.cpusPerNode,
    skippedShape: workload.unfit,
    rounded: workload.rounded,
    multiNode,
    requestedUtilization: given > 0 ? (summary.utilization * asked) / given : 0,
  };
}
