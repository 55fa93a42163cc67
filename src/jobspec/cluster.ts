// Submission-time acceptance (seed 000, 2.2.1): the reasons a cluster could
// never run a job, whatever else is queued. Every reason found is returned, so
// a user fixes them together. Takes only the parts of src/config's cluster
// description that it reads.

import type { NodeSpec, PartitionSpec } from '../config/cluster.js';
import { compressHostlist } from '../config/hostlist.js';
import { closestWord } from '../config/suggest.js';
import type { JobSpec, TimeLimit } from './types.js';
import { formatHumanTime, formatMemory, formatSbatchTime } from './values.js';

/** A partition as src/config describes it; the limits may also be absent (no limit). */
export type ClusterPartitionShape = Pick<PartitionSpec, 'name' | 'nodes' | 'isDefault'> & Partial<Pick<PartitionSpec, 'maxTimeSeconds' | 'maxNodes'>>;

export type ClusterNodeShape = NodeSpec;

export interface ClusterShape {
  readonly partitions: readonly ClusterPartitionShape[];
  readonly nodes: readonly ClusterNodeShape[];
}

/** Why a job is refused. `partition` is absent when the reason holds for the whole cluster. */
export type Rejection = { readonly message: string } & (
  | { readonly kind: 'no-such-partition'; readonly partition: string; readonly suggestion?: string }
  | { readonly kind: 'no-default-partition' }
  | { readonly kind: 'larger-than-any-partition'; readonly requestedNodes: number; readonly largestNodes: number }
  | { readonly kind: 'larger-than-partition'; readonly partition: string; readonly requestedNodes: number; readonly partitionNodes: number; readonly fitsIn?: string }
  | { readonly kind: 'over-time-limit'; readonly partition: string; readonly requested: TimeLimit; readonly maxTimeSeconds: number }
  | { readonly kind: 'no-node-has-feature'; readonly features: readonly string[]; readonly partition?: string }
  | { readonly kind: 'memory-per-node'; readonly requestedMiB: number; readonly largestMiB: number; readonly partition?: string }
  | { readonly kind: 'cpus-per-node'; readonly requested: number; readonly largest: number; readonly partition?: string }
  | { readonly kind: 'too-few-suitable-nodes'; readonly partition: string; readonly requestedNodes: number; readonly suitableNodes: number }
  | { readonly kind: 'excluded-too-many'; readonly partition: string; readonly requestedNodes: number; readonly suitableNodes: number }
  | { readonly kind: 'too-many-tasks'; readonly partition: string; readonly requestedTasks: number; readonly maxTasks: number }
  | { readonly kind: 'no-such-node'; readonly option: '--nodelist' | '--exclude'; readonly nodes: readonly string[] }
);

/** What the checks read of a set of nodes (the cluster's, or a partition's), gathered once. */
interface NodeSetFacts {
  readonly nodes: readonly ClusterNodeShape[];
  readonly features: ReadonlySet<string>;
  readonly largestMiB: number;
  readonly largestCpus: number;
}

/** A partition's nodes (those that exist) and how many it gives one job: its nodes, capped by its MaxNodes. */
interface PartitionFacts extends NodeSetFacts {
  readonly capacity: number;
}

interface ClusterFacts {
  readonly nodeNames: ReadonlySet<string>;
  readonly all: NodeSetFacts;
  readonly partitions: ReadonlyMap<ClusterPartitionShape, PartitionFacts>;
  /** Suitable nodes by partition and the job's shape (suitableKey): jobs alike share one pass over the nodes. */
  readonly suitable: Map<string, readonly ClusterNodeShape[]>;
}

/** At most this many shapes' suitable nodes are kept per configuration (then they are forgotten and made again). */
const MAX_SUITABLE_KEPT = 1000;

/**
 * Facts of each configuration, gathered at its first check: a check then reads
 * them in time independent of the number of nodes (with 100,000 nodes each
 * submission spent about 280 ms gathering them again). A configuration is
 * never changed once made (a reconfigure makes a new one).
 */
const factsByCluster = new WeakMap<ClusterShape, ClusterFacts>();

function nodeSetFacts(nodes: readonly ClusterNodeShape[]): NodeSetFacts {
  const features = new Set<string>();
  let largestMiB = 0;
  let largestCpus = 0;
  for (const node of nodes) {
    for (const feature of node.features) features.add(feature);
    if (node.memoryMiB > largestMiB) largestMiB = node.memoryMiB;
    if (node.cpus > largestCpus) largestCpus = node.cpus;
  }
  return { nodes, features, largestMiB, largestCpus };
}

function factsOf(cluster: ClusterShape): ClusterFacts {
  let facts = factsByCluster.get(cluster);
  if (facts === undefined) {
    const byName = new Map(cluster.nodes.map((node) => [node.name, node]));
    const partitions = new Map<ClusterPartitionShape, PartitionFacts>();
    for (const partition of cluster.partitions) {
      const members = new Set(partition.nodes);
      // In the cluster's order, each node once.
      const nodes = members.size === 0 ? [] : cluster.nodes.filter((node) => members.has(node.name));
      const count = partition.nodes.reduce((sum, name) => sum + (byName.has(name) ? 1 : 0), 0);
      partitions.set(partition, { ...nodeSetFacts(nodes), capacity: Math.min(count, partition.maxNodes ?? Infinity) });
    }
    facts = { nodeNames: new Set(byName.keys()), all: nodeSetFacts(cluster.nodes), partitions, suitable: new Map() };
    factsByCluster.set(cluster, facts);
  }
  return facts;
}

/** The features of the constraint that none of the nodes has, when no alternative can be met for that reason. */
function missingFeatures(spec: JobSpec, present: ReadonlySet<string>): string[] {
  if (spec.constraint === undefined) return [];
  const missingPerAlternative = spec.constraint.anyOf.map((features) => features.filter((f) => !present.has(f)));
  if (missingPerAlternative.some((missing) => missing.length === 0)) return [];
  return [...new Set(missingPerAlternative.flat())];
}

const hasFeatures = (spec: JobSpec, node: ClusterNodeShape) =>
  spec.constraint === undefined || spec.constraint.anyOf.some((features) => features.every((f) => node.features.includes(f)));

const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? '' : 's'}`;
const featureWords = (features: readonly string[]) => `the feature${features.length === 1 ? '' : 's'} ${features.join(', ')}`;
const timeText = (limit: TimeLimit) => `${formatHumanTime(limit)} (${formatSbatchTime(limit)})`;

/** Per-node reasons (features, memory, CPUs) against a set of nodes; `partition` absent means the whole cluster. */
function perNodeRejections(spec: JobSpec, nodes: NodeSetFacts, partition?: string): Rejection[] {
  const rejections: Rejection[] = [];
  const scope = partition === undefined ? 'any node' : `any node of partition ${partition}`;
  const features = missingFeatures(spec, nodes.features);
  if (features.length > 0) {
    const where = partition === undefined ? 'no node' : `no node of partition ${partition}`;
    rejections.push({ kind: 'no-node-has-feature', features, partition, message: `${where} has ${featureWords(features)}` });
  }
  const { largestMiB, largestCpus } = nodes;
  if (spec.memoryMiB !== undefined && spec.memoryMiB > largestMiB) {
    rejections.push({
      kind: 'memory-per-node', requestedMiB: spec.memoryMiB, largestMiB, partition,
      message: `more memory per node than ${scope} has: the job asks for ${formatMemory(spec.memoryMiB)}, the largest has ${formatMemory(largestMiB)}`,
    });
  }
  if (spec.cpusPerTask > largestCpus) {
    rejections.push({
      kind: 'cpus-per-node', requested: spec.cpusPerTask, largest: largestCpus, partition,
      message: `more CPUs per node than ${scope} has: the job asks for ${spec.cpusPerTask} per task, the largest has ${largestCpus}`,
    });
  }
  return rejections;
}

/** Reasons the partition the job would run in can never run it (the job fits the cluster's nodes). */
function partitionRejections(spec: JobSpec, cluster: ClusterShape, partition: ClusterPartitionShape, reported: readonly Rejection[]): Rejection[] {
  const rejections: Rejection[] = [];
  const facts = factsOf(cluster);
  const inPartition = facts.partitions.get(partition)!;
  const { nodes, capacity } = inPartition;

  const maxTimeSeconds = partition.maxTimeSeconds ?? undefined;
  if (maxTimeSeconds !== undefined && (spec.timeLimitSeconds === 'UNLIMITED' || spec.timeLimitSeconds > maxTimeSeconds)) {
    rejections.push({
      kind: 'over-time-limit', partition: partition.name, requested: spec.timeLimitSeconds, maxTimeSeconds,
      message: `over the time limit of partition ${partition.name}: the job asks for ${timeText(spec.timeLimitSeconds)}, ${partition.name} allows ${timeText(maxTimeSeconds)}`,
    });
  }
  if (spec.nodes.min > capacity && !reported.some((r) => r.kind === 'larger-than-any-partition')) {
    const fitsIn = cluster.partitions.find((p) => facts.partitions.get(p)!.capacity >= spec.nodes.min)?.name;
    const limit = capacity < nodes.length ? `takes at most ${capacity} per job` : `has ${plural(capacity, 'node')}`;
    rejections.push({
      kind: 'larger-than-partition', partition: partition.name, requestedNodes: spec.nodes.min, partitionNodes: capacity, fitsIn,
      message: `larger than partition ${partition.name}: the job needs at least ${plural(spec.nodes.min, 'node')}, ${partition.name} ${limit}`
        + (fitsIn === undefined ? '' : `; partition ${fitsIn} is large enough (--partition ${fitsIn})`),
    });
  }
  const clusterWide = new Set(reported.map((r) => r.kind));
  rejections.push(...perNodeRejections(spec, inPartition, partition.name).filter((r) => !clusterWide.has(r.kind)));
  if (rejections.length > 0 || reported.length > 0) return rejections;

  // Each reason alone passed; together they may still leave too few nodes.
  const key = `${partition.name}\n${suitableKey(spec)}`;
  let suitable = facts.suitable.get(key);
  if (suitable === undefined) {
    suitable = suitableNodes(spec, nodes);
    if (facts.suitable.size >= MAX_SUITABLE_KEPT) facts.suitable.clear();
    facts.suitable.set(key, suitable);
  }
  // --exclude at fault: without it enough nodes of the partition could run the job (a pass over the nodes, on a refusal only).
  if (suitable.length < spec.nodes.min && spec.exclude !== undefined && suitableNodes({ ...spec, exclude: undefined }, nodes).length >= spec.nodes.min) {
    const left = suitable.length === 0 ? 'no node' : `only ${plural(suitable.length, 'node')} (${nodeNames(suitable)})`;
    rejections.push({
      kind: 'excluded-too-many', partition: partition.name, requestedNodes: spec.nodes.min, suitableNodes: suitable.length,
      message: `--exclude ${nodeNames(spec.exclude)} leaves ${left} of partition ${partition.name} that could run the job, and it needs ${plural(spec.nodes.min, 'node')}: `
        + `the cluster could never run it; exclude fewer nodes${suitable.length === 0 ? '' : ', ask for fewer (--nodes)'} or choose another partition (--partition)`,
    });
  } else if (suitable.length < spec.nodes.min) {
    const memory = spec.memoryMiB ? `, ${formatMemory(spec.memoryMiB)} of memory` : '';
    const features = spec.constraint ? ` and ${spec.constraint.text}` : '';
    rejections.push({
      kind: 'too-few-suitable-nodes', partition: partition.name, requestedNodes: spec.nodes.min, suitableNodes: suitable.length,
      message: `partition ${partition.name} has ${plural(suitable.length, 'node')} with ${plural(spec.cpusPerTask, 'CPU')}${memory}${features}; the job needs ${spec.nodes.min}`,
    });
  } else if (spec.ntasks !== undefined && taskLayout(spec, suitable, capacity) === undefined) {
    const usable = Math.min(spec.nodes.max ?? spec.nodes.min, capacity, suitable.length);
    const maxTasks = maxEvenTasks(spec.cpusPerTask, suitable, spec.nodes.min, usable);
    const range = usable === spec.nodes.min ? plural(usable, 'node') : `${spec.nodes.min} to ${usable} nodes`;
    rejections.push({
      kind: 'too-many-tasks', partition: partition.name, requestedTasks: spec.ntasks, maxTasks,
      message: `more tasks than partition ${partition.name} can hold: ${plural(spec.ntasks, 'task')} of ${plural(spec.cpusPerTask, 'CPU')} on ${range}, `
        + `each node running the same number of tasks, hold at most ${maxTasks}`
        + (spec.nodes.max === undefined && usable < suitable.length ? '; allow more nodes (--nodes N-M) or ask for fewer tasks' : '; ask for fewer tasks or CPUs per task'),
    });
  }
  return rejections;
}

/** Node names as a hostlist (node[01-04]), or joined by commas where a hostlist cannot hold them. */
function nodeNames(nodes: readonly (string | ClusterNodeShape)[]): string {
  const names = nodes.map((node) => (typeof node === 'string' ? node : node.name));
  try {
    return compressHostlist(names);
  } catch {
    return names.join(',');
  }
}

/** How a job's tasks lie on its nodes: how many nodes, and CPUs (and memory) on each. */
export interface TaskLayout {
  readonly nodes: number;
  readonly cpusPerNode: number;
}

/**
 * sbatch's -n: the tasks spread over as few nodes as can hold them, within
 * --nodes (min to max; without a max, exactly min). Each node runs the same
 * number of tasks, ceil(ntasks / nodes), because the core allocates the same
 * CPUs on every node of a job. Without --ntasks one task runs per node.
 * `suitable` are the nodes that can take the job (partition, features,
 * memory); `capacity` the most nodes the partition gives one job. Undefined:
 * no node count can ever hold it. The CLI's summary, the cluster check and
 * the controller's engine all use this one rule.
 */
export function taskLayout(spec: Pick<JobSpec, 'nodes' | 'ntasks' | 'cpusPerTask'>, suitable: readonly Pick<ClusterNodeShape, 'cpus'>[], capacity = Infinity): TaskLayout | undefined {
  const last = Math.min(spec.nodes.max ?? spec.nodes.min, spec.ntasks ?? spec.nodes.min, capacity, suitable.length);
  for (let nodes = spec.nodes.min; nodes <= last; nodes++) {
    const cpusPerNode = Math.ceil((spec.ntasks ?? nodes) / nodes) * spec.cpusPerTask;
    let holding = 0;
    for (const node of suitable) if (node.cpus >= cpusPerNode && ++holding >= nodes) return { nodes, cpusPerNode };
  }
  return undefined;
}

/** The most tasks `first..last` nodes of `suitable` hold when each runs the same number (for the refusal's figure). */
function maxEvenTasks(cpusPerTask: number, suitable: readonly ClusterNodeShape[], first: number, last: number): number {
  const perNode = suitable.map((node) => Math.floor(node.cpus / cpusPerTask)).sort((a, b) => b - a);
  let best = 0;
  for (let nodes = Math.max(1, first); nodes <= last; nodes++) best = Math.max(best, nodes * perNode[nodes - 1]);
  return best;
}

/** What suitableNodes reads of a job. */
const suitableKey = (spec: JobSpec): string =>
  `${spec.constraint?.text ?? ''}\n${spec.cpusPerTask}\n${spec.memoryMiB ?? ''}\n${spec.nodelist?.join(',') ?? ''}\n${spec.exclude?.join(',') ?? ''}`;

/** The nodes of a partition that could take the job, whatever else runs: features, CPUs per task, memory. */
export function suitableNodes(spec: JobSpec, nodes: readonly ClusterNodeShape[]): ClusterNodeShape[] {
  return nodes.filter((node) => hasFeatures(spec, node) && node.cpus >= spec.cpusPerTask && node.memoryMiB >= (spec.memoryMiB ?? 0)
    && nodeAllowed(spec, node.name));
}

/** --nodelist (only these) and --exclude (never these). */
export function nodeAllowed(spec: Pick<JobSpec, 'nodelist' | 'exclude'>, name: string): boolean {
  return (spec.nodelist === undefined || spec.nodelist.includes(name)) && !(spec.exclude?.includes(name) ?? false);
}

/** Every reason the cluster could never run the job; empty when it is acceptable. */
export function validateAgainstCluster(spec: JobSpec, cluster: ClusterShape): Rejection[] {
  const rejections: Rejection[] = [];
  const names = cluster.partitions.map((p) => p.name);
  let partition: ClusterPartitionShape | undefined;
  if (spec.partition !== undefined) {
    partition = cluster.partitions.find((p) => p.name === spec.partition);
    if (partition === undefined) {
      const suggestion = closestWord(spec.partition, names, { acceptPrefix: true });
      rejections.push({
        kind: 'no-such-partition', partition: spec.partition, suggestion,
        message: `no such partition ${spec.partition}${suggestion === undefined ? '' : `; did you mean ${suggestion}?`} (partitions: ${names.join(', ') || 'none'})`,
      });
    }
  } else {
    partition = cluster.partitions.find((p) => p.isDefault);
    if (partition === undefined) {
      rejections.push({
        kind: 'no-default-partition',
        message: `no partition given and the cluster has no default partition: choose one with --partition (${names.join(', ') || 'none configured'})`,
      });
    }
  }

  const facts = factsOf(cluster);
  const { nodeNames } = facts;
  let largestNodes = 0;
  for (const p of cluster.partitions) largestNodes = Math.max(largestNodes, facts.partitions.get(p)!.capacity);
  if (spec.nodes.min > largestNodes) {
    const largest = cluster.partitions.find((p) => facts.partitions.get(p)!.capacity === largestNodes)?.name;
    rejections.push({
      kind: 'larger-than-any-partition', requestedNodes: spec.nodes.min, largestNodes,
      message: `larger than any partition: the job needs at least ${plural(spec.nodes.min, 'node')}, the largest partition${largest === undefined ? '' : ` (${largest})`} takes ${largestNodes}`,
    });
  }
  for (const option of ['--nodelist', '--exclude'] as const) {
    const unknown = (option === '--nodelist' ? spec.nodelist : spec.exclude)?.filter((name) => !nodeNames.has(name)) ?? [];
    if (unknown.length > 0) {
      rejections.push({ kind: 'no-such-node', option, nodes: unknown, message: `${option}: no node named ${unknown.join(', ')} in this cluster (name nodes as \`taras nodes\` lists them)` });
    }
  }
  rejections.push(...perNodeRejections(spec, facts.all));
  if (partition !== undefined) rejections.push(...partitionRejections(spec, cluster, partition, rejections));
  return rejections;
}
