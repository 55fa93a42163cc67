// `taras nodes`: one row per node (state, CPUs and memory in use of the total,
// partitions, features, the jobs on it with their users, why it is down), and
// with --free the counts per partition: nodes, idle nodes, nodes out of
// service, free CPUs on nodes that take work.

import type { ApiNode, NodeState } from '../../api/types.js';
import { compareHostnames } from '../../config/hostlist.js';
import { alignColumns, counted, printable } from './text.js';

export interface NodesOptions {
  /** --free: the per-partition counts instead of the node table. */
  readonly free?: boolean;
}

/** Nodes that take no new work: their CPUs are not free even when unused. */
const OUT_OF_SERVICE: ReadonlySet<NodeState> = new Set(['down', 'drained', 'draining']);

const STATE_ORDER: readonly NodeState[] = ['idle', 'allocated', 'mixed', 'down', 'drained', 'draining'];

/** "8/32 GiB": both in GiB from one GiB of total, else MiB. */
export function memoryInUse(allocatedMiB: number, totalMiB: number): string {
  if (totalMiB < 1024) return `${allocatedMiB}/${totalMiB} MiB`;
  const gib = (mib: number) => String(Number((mib / 1024).toFixed(1)));
  return `${gib(allocatedMiB)}/${gib(totalMiB)} GiB`;
}

const freeCpus = (node: ApiNode): number => (OUT_OF_SERVICE.has(node.state) ? 0 : Math.max(0, node.cpus - node.cpusAllocated));

/** "16 nodes: 4 idle, 8 allocated, 2 mixed, 1 down, 1 drained", in the order `taras status` uses. */
export function nodeStatesText(nodes: readonly ApiNode[]): string {
  const counts = new Map<NodeState, number>();
  for (const node of nodes) counts.set(node.state, (counts.get(node.state) ?? 0) + 1);
  const parts = STATE_ORDER.filter((state) => state === 'idle' || (counts.get(state) ?? 0) > 0).map(
    (state) => `${counts.get(state) ?? 0} ${state}`,
  );
  return `${counted(nodes.length, 'node')}: ${parts.join(', ')}`;
}

function jobsCell(node: ApiNode): string {
  if (node.jobs.length === 0) return '-';
  return [...node.jobs].sort((a, b) => a.id - b.id).map((job) => `${job.id} ${printable(job.user)}`).join(', ');
}

function nodeTable(nodes: readonly ApiNode[]): string[] {
  const withReason = nodes.some((node) => node.reason !== null && node.reason !== '');
  const head = ['NODE', 'STATE', 'CPUS', 'MEMORY', 'PARTITIONS', 'FEATURES', 'JOBS'];
  if (withReason) head.push('REASON');
  const rows = nodes.map((node) => {
    const cells = [
      printable(node.name),
      node.state,
      `${node.cpusAllocated}/${node.cpus}`,
      memoryInUse(node.memoryAllocatedMiB, node.memoryMiB),
      node.partitions.length === 0 ? '-' : printable(node.partitions.join(',')),
      node.features.length === 0 ? '-' : printable(node.features.join(',')),
      jobsCell(node),
    ];
    if (withReason) cells.push(node.reason === null ? '' : printable(node.reason));
    return cells;
  });
  return alignColumns(head, rows, { right: new Set([2, 3]) });
}

interface FreeCounts {
  nodes: number;
  idle: number;
  outOfService: number;
  freeCpus: number;
  cpus: number;
}

function freeTable(nodes: readonly ApiNode[]): string[] {
  const byPartition = new Map<string, FreeCounts>();
  const total: FreeCounts = { nodes: 0, idle: 0, outOfService: 0, freeCpus: 0, cpus: 0 };
  const add = (counts: FreeCounts, node: ApiNode) => {
    counts.nodes += 1;
    if (node.state === 'idle') counts.idle += 1;
    if (OUT_OF_SERVICE.has(node.state)) counts.outOfService += 1;
    counts.freeCpus += freeCpus(node);
    counts.cpus += node.cpus;
  };
  for (const node of nodes) {
    add(total, node);
    for (const partition of node.partitions) {
      let counts = byPartition.get(partition);
      if (counts === undefined) {
        counts = { nodes: 0, idle: 0, outOfService: 0, freeCpus: 0, cpus: 0 };
        byPartition.set(partition, counts);
      }
      add(counts, node);
    }
  }
  const row = (name: string, c: FreeCounts) => [name, String(c.nodes), String(c.idle), String(c.outOfService), String(c.freeCpus), String(c.cpus)];
  const rows = [...byPartition.keys()].sort().map((name) => row(printable(name), byPartition.get(name) as FreeCounts));
  // A node may be in several partitions: the total counts it once.
  rows.push(row('(all)', total));
  return [
    `${counted(total.idle, 'idle node')} of ${total.nodes}, ${counted(total.freeCpus, 'free CPU')} of ${total.cpus}.`,
    '',
    ...alignColumns(['PARTITION', 'NODES', 'IDLE', 'DOWN/DRAINED', 'FREE CPUS', 'CPUS'], rows, { right: new Set([1, 2, 3, 4, 5]) }),
  ];
}

/** The whole `taras nodes` output, ending with a newline. */
export function renderNodes(nodes: readonly ApiNode[], options: NodesOptions = {}): string {
  if (nodes.length === 0) return 'No nodes have registered with the controller yet.\n';
  const sorted = [...nodes].sort((a, b) => compareHostnames(a.name, b.name));
  const lines = options.free === true ? freeTable(sorted) : [nodeStatesText(sorted), '', ...nodeTable(sorted)];
  return `${lines.join('\n')}\n`;
}
