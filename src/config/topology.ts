// [[nodes]] and [[partitions]] of cluster.toml: node groups expanded from
// hostlists, partitions over them, and the checks between the two: every node
// defined once, every partition node defined, every node in some partition,
// exactly one default partition.

import type { NodeSpec, PartitionSpec } from './cluster.js';
import type { ErrorList } from './errors.js';
import { readPreemption } from './checkpoint.js';
import { NAME_HINT, NAME_PATTERN, TableReader } from './fields.js';
import { compressHostlist, parseHostlist } from './hostlist.js';
import type { SourceIndex } from './locate.js';

const NODE_KEYS = {
  known: ['names', 'cpus', 'memory', 'features'],
  aliases: { nodename: 'names', procs: 'cpus', cores: 'cpus', realmemory: 'memory', mem: 'memory' },
};

const PARTITION_KEYS = {
  known: ['name', 'nodes', 'default', 'max_time', 'default_time', 'max_nodes', 'priority', 'preempt_mode', 'grace_time'],
  aliases: { partitionname: 'name', preemptmode: 'preempt_mode', gracetime: 'grace_time', timelimit: 'max_time', time_limit: 'max_time', defaulttime: 'default_time', prioritytier: 'priority', isdefault: 'default' },
};

export interface NodesRead {
  /** One per node, in file order. */
  readonly specs: NodeSpec[];
  /** Every node name, or undefined when some group's names could not be read (checks against it would only echo that error). */
  readonly names: ReadonlySet<string> | undefined;
  /** The [[nodes]] table (index) that defined each node. */
  readonly groupOf: ReadonlyMap<string, number>;
}

export interface PartitionsRead {
  readonly specs: PartitionSpec[];
  /** Undefined when there is no single default (an error says why). */
  readonly defaultName: string | undefined;
}

/** "node05 is" / "node[05-08] are": the subject of a message about some nodes. */
function nodesAre(names: readonly string[]): string {
  return `${compressHostlist(names)} ${names.length === 1 ? 'is' : 'are'}`;
}

function readHostlist(reader: TableReader, key: string, example: string): string[] | undefined {
  const text = reader.string(key, { example, required: true });
  if (text === undefined) return undefined;
  const parsed = parseHostlist(text);
  if (!parsed.ok) {
    reader.error(key, `bad hostlist ${JSON.stringify(text)}: ${parsed.problem.message}`, parsed.problem.fix);
    return undefined;
  }
  return parsed.names;
}

export function readNodes(root: TableReader, errors: ErrorList, index: SourceIndex): NodesRead {
  const groupOf = new Map<string, number>();
  const tables = root.arrayOfTables('nodes');
  if (tables === undefined) return { specs: [], names: undefined, groupOf };
  if (tables.length === 0) {
    errors.add('nodes', 'the file defines no nodes', 'add a [[nodes]] table with names, cpus and memory (see docs/cluster.example.toml)');
    return { specs: [], names: undefined, groupOf };
  }
  const specs: NodeSpec[] = [];
  let complete = true;
  tables.forEach((table, group) => {
    const reader = new TableReader(`nodes[${group}]`, table, errors);
    reader.rejectUnknownKeys(NODE_KEYS);
    const names = readHostlist(reader, 'names', '"node[01-04]"');
    const cpus = reader.integer('cpus', { example: '8', min: 1, max: 1_000_000, required: true });
    const memoryMiB = reader.memoryMiB('memory', { example: '"16G"', required: true });
    const features = reader.stringArray('features', { example: '["ib", "ssd"]', pattern: NAME_PATTERN, patternHint: NAME_HINT }) ?? [];
    if (names === undefined) {
      complete = false;
      return;
    }
    const repeatedByGroup = new Map<number, string[]>();
    const mine: string[] = [];
    for (const name of names) {
      const earlier = groupOf.get(name);
      if (earlier === undefined) {
        groupOf.set(name, group);
        mine.push(name);
      } else {
        const repeated = repeatedByGroup.get(earlier) ?? [];
        repeated.push(name);
        repeatedByGroup.set(earlier, repeated);
      }
    }
    for (const [earlier, repeated] of repeatedByGroup) {
      const where = earlier === group ? 'listed more than once in this hostlist' : `already defined by nodes[${earlier}] (line ${index.lineOf(`nodes[${earlier}].names`)})`;
      reader.error('names', `${nodesAre(repeated)} ${where}`, 'define each node in one [[nodes]] table, once');
    }
    if (cpus !== undefined && memoryMiB !== undefined) {
      for (const name of mine) specs.push({ name, cpus, memoryMiB, features });
    }
  });
  return { specs, names: complete ? new Set(groupOf.keys()) : undefined, groupOf };
}

export function readPartitions(root: TableReader, nodes: NodesRead, errors: ErrorList, index: SourceIndex): PartitionsRead {
  const tables = root.arrayOfTables('partitions');
  if (tables === undefined) return { specs: [], defaultName: undefined };
  if (tables.length === 0) {
    errors.add('partitions', 'the file defines no partitions, so no job could run', 'add a [[partitions]] table with name and nodes (nodes = "ALL" takes every node)');
    return { specs: [], defaultName: undefined };
  }
  const specs: PartitionSpec[] = [];
  const groupByName = new Map<string, number>();
  const nameOf = (group: number): string => (typeof tables[group].name === 'string' ? `"${tables[group].name as string}"` : `partitions[${group}]`);
  const markedDefault: number[] = [];
  const used = new Set<string>();
  let complete = true;
  tables.forEach((table, group) => {
    const reader = new TableReader(`partitions[${group}]`, table, errors);
    reader.rejectUnknownKeys(PARTITION_KEYS);
    const name = reader.string('name', { example: '"batch"', required: true, pattern: NAME_PATTERN, patternHint: NAME_HINT });
    const earlier = name === undefined ? undefined : groupByName.get(name);
    if (earlier !== undefined) {
      reader.error('name', `partition "${name}" is already defined by partitions[${earlier}] (line ${index.lineOf(`partitions[${earlier}].name`)})`, 'give each partition its own name');
    } else if (name !== undefined) {
      groupByName.set(name, group);
    }
    const members = readMembers(reader, nodes);
    if (members === undefined) complete = false;
    else for (const member of members) used.add(member);
    const isDefault = reader.boolean('default') ?? false;
    if (isDefault) markedDefault.push(group);
    const maxTimeSeconds = reader.duration('max_time', { example: '"1-00:00:00"', minutesIfBare: true, unlimited: true, min: 1 }) ?? null;
    const defaultTimeSeconds = reader.duration('default_time', { example: '"1:00:00"', minutesIfBare: true, unlimited: false, min: 1 }) ?? null;
    if (defaultTimeSeconds !== null && maxTimeSeconds !== null && defaultTimeSeconds > maxTimeSeconds) {
      reader.error('default_time', `default_time is longer than max_time (${maxTimeSeconds} s)`, 'make default_time at most max_time');
    }
    const maxNodes = isUnlimited(reader.raw('max_nodes')) ? null : reader.integer('max_nodes', { example: '2', min: 1 }) ?? null;
    const priority = reader.integer('priority', { example: '10', min: 0, max: 65535 }) ?? 1;
    const preemption = readPreemption(reader);
    if (name !== undefined && members !== undefined) specs.push({ name, nodes: members, isDefault, maxTimeSeconds, ...(defaultTimeSeconds === null ? {} : { defaultTimeSeconds }), maxNodes, priority, ...preemption });
  });

  if (nodes.names !== undefined && complete) reportNodesInNoPartition(nodes, used, errors);

  if (tables.length === 1) {
    // A single partition is the default whether or not it says so.
    return { specs: specs.map((spec) => ({ ...spec, isDefault: true })), defaultName: specs[0]?.name };
  }
  if (markedDefault.length === 0) {
    errors.add(
      'partitions',
      `none of the ${tables.length} partitions is marked default`,
      'add default = true to the partition that jobs without --partition go to',
      index.lineOf('partitions[0]'),
    );
    return { specs, defaultName: undefined };
  }
  const [first, ...others] = markedDefault;
  for (const other of others) {
    errors.add(
      `partitions[${other}].default`,
      `${nameOf(other)} and ${nameOf(first)} (line ${index.lineOf(`partitions[${first}]`)}) are both marked default`,
      'keep default = true on one partition only',
    );
  }
  return { specs, defaultName: others.length === 0 ? specs.find((spec) => spec.isDefault)?.name : undefined };
}

function isUnlimited(value: unknown): boolean {
  return typeof value === 'string' && /^\s*(unlimited|infinite)\s*$/i.test(value);
}

/** A partition's `nodes`: a hostlist of defined nodes, or "ALL". */
function readMembers(reader: TableReader, nodes: NodesRead): string[] | undefined {
  const raw = reader.raw('nodes');
  if (typeof raw === 'string' && raw.trim().toUpperCase() === 'ALL') return nodes.names === undefined ? undefined : [...nodes.names];
  const names = readHostlist(reader, 'nodes', '"node[01-04]"');
  if (names === undefined) return undefined;
  const unique = [...new Set(names)];
  if (nodes.names === undefined) return unique;
  const defined = nodes.names;
  const missing = unique.filter((name) => !defined.has(name));
  if (missing.length > 0) {
    reader.error(
      'nodes',
      `${nodesAre(missing)} not defined by any [[nodes]] table`,
      `define ${missing.length === 1 ? 'it' : 'them'} in [[nodes]], or correct the hostlist (defined: ${compressHostlist(defined)})`,
    );
    return undefined;
  }
  return unique;
}

function reportNodesInNoPartition(nodes: NodesRead, used: ReadonlySet<string>, errors: ErrorList): void {
  const unusedByGroup = new Map<number, string[]>();
  for (const [name, group] of nodes.groupOf) {
    if (used.has(name)) continue;
    const unused = unusedByGroup.get(group) ?? [];
    unused.push(name);
    unusedByGroup.set(group, unused);
  }
  for (const [group, unused] of unusedByGroup) {
    errors.add(
      `nodes[${group}].names`,
      `${nodesAre(unused)} in no partition, so no job could run there`,
      'add them to a partition\'s nodes (nodes = "ALL" takes every node), or remove them',
    );
  }
}
