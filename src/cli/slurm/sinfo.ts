// `sinfo`: Slurm's partition and node summary, from GET /partitions and
// GET /nodes, in Slurm's formats: by default one line per partition and node
// state ("PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST", the default
// partition marked `*`, the partition column as wide as the longest name),
// -N one line per node and partition, -l the long forms, -o the %-fields.

import type { Command } from 'commander';
import type { ApiNode, ApiPartition, NodeState } from '../../api/types.js';
import { compressHostlist } from '../../config/hostlist.js';
import { formatLine, parseFormat, slurmDuration, type ParsedFormat } from './format.js';
import { ctime } from './squeue.js';

const COMPACT: Record<NodeState, string> = { idle: 'idle', allocated: 'alloc', mixed: 'mix', down: 'down', drained: 'drain', draining: 'drng' };
const LONG: Record<NodeState, string> = { idle: 'idle', allocated: 'allocated', mixed: 'mixed', down: 'down', drained: 'drained', draining: 'draining' };

/** A node that stopped answering is "down*" (Slurm's not-responding star); one an administrator set down is "down". */
const star = (node: ApiNode) => (node.state === 'down' && /heartbeat|registered|respond/i.test(node.reason ?? '') ? '*' : '');
export const nodeStateCompact = (node: ApiNode): string => COMPACT[node.state] + star(node);
export const nodeStateLong = (node: ApiNode): string => LONG[node.state] + star(node);

export const SINFO_DEFAULT_FORMAT = '%#P %.5a %.10l %.6D %.6t %N';
export const SINFO_LONG_FORMAT = '%#P %.5a %.10l %.10s %.4r %.8h %.10g %.6D %.11T %.11i %N';
export const SINFO_NODE_FORMAT = '%#N %.6D %.#P %6t';
export const SINFO_NODE_LONG_FORMAT = '%#N %.6D %.#P %.11T %.4c %.8z %.6m %.8d %.6w %.8f %20E';

const HEADERS: Record<string, string> = {
  P: 'PARTITION', R: 'PARTITION', a: 'AVAIL', l: 'TIMELIMIT', L: 'DEFAULTTIME', D: 'NODES', t: 'STATE', T: 'STATE', N: 'NODELIST',
  c: 'CPUS', m: 'MEMORY', e: 'FREE_MEM', O: 'CPU_LOAD', E: 'REASON', C: 'CPUS(A/I/O/T)', f: 'AVAIL_FEATURES', s: 'JOB_SIZE',
  r: 'ROOT', h: 'OVERSUBSCRIBE', g: 'GROUPS', i: 'RESERVATION', z: 'S:C:T', d: 'TMP_DISK', w: 'WEIGHT', p: 'PRIO_TIER',
};
/** Shorter headers of the long default formats, as Slurm's own: "OVERSUBS", "JOB_SIZE"... come from the width cut. */
const UNCUT = new Set(['N', 'l', 'L']);

/** One output line's nodes: a partition with nodes in one state (or, with -N, one node). */
export interface SinfoGroup {
  partition: ApiPartition;
  nodes: ApiNode[];
}

/** Lines of the summary: per partition in configuration order, its nodes grouped by state (`-t` and `-p` applied). */
export function sinfoGroups(partitions: readonly ApiPartition[], nodes: readonly ApiNode[], options: { nodeOriented?: boolean; long?: boolean; states?: string[]; partitions?: string[] }): SinfoGroup[] {
  const byName = new Map(nodes.map((node) => [node.name, node]));
  const groups: SinfoGroup[] = [];
  for (const partition of partitions) {
    if (options.partitions !== undefined && !options.partitions.includes(partition.name)) continue;
    const members = partition.nodes.map((name) => byName.get(name)).filter((node): node is ApiNode => node !== undefined)
      .filter((node) => options.states === undefined || options.states.includes(COMPACT[node.state]) || options.states.includes(LONG[node.state]));
    if (options.nodeOriented) {
      for (const node of members) groups.push({ partition, nodes: [node] });
      continue;
    }
    const byState = new Map<string, ApiNode[]>();
    for (const node of members) {
      const key = options.long ? nodeStateLong(node) : nodeStateCompact(node);
      let group = byState.get(key);
      if (group === undefined) byState.set(key, (group = []));
      group.push(node);
    }
    if (byState.size === 0 && options.states === undefined) groups.push({ partition, nodes: [] });
    // Slurm's default sort "#P,-t": partitions as configured, then states in reverse order.
    for (const key of [...byState.keys()].sort().reverse()) groups.push({ partition, nodes: byState.get(key)! });
  }
  if (options.nodeOriented) groups.sort((a, b) => (a.nodes[0].name < b.nodes[0].name ? -1 : a.nodes[0].name > b.nodes[0].name ? 1 : 0));
  return groups;
}

const range = (values: number[]): string => {
  if (values.length === 0) return '0';
  // Folded, not spread into Math.min: a spread of 200,000 values overflows the stack.
  const min = values.reduce((a, b) => Math.min(a, b));
  return values.some((value) => value !== min) ? `${min}+` : String(min);
};

/** The text of one %-field of one line. */
export function sinfoField(group: SinfoGroup, letter: string): string {
  const { partition, nodes } = group;
  const allocated = nodes.reduce((sum, node) => sum + node.cpusAllocated, 0);
  const out = nodes.filter((node) => ['down', 'drained', 'draining'].includes(node.state)).reduce((sum, node) => sum + node.cpus, 0);
  const total = nodes.reduce((sum, node) => sum + node.cpus, 0);
  switch (letter) {
    case 'P': return partition.isDefault ? `${partition.name}*` : partition.name;
    case 'R': return partition.name;
    case 'a': return 'up';
    case 'l': return partition.maxTimeSeconds === null ? 'infinite' : slurmDuration(partition.maxTimeSeconds);
    case 'L': return partition.defaultTimeSeconds === null ? 'n/a' : slurmDuration(partition.defaultTimeSeconds);
    case 'D': return String(nodes.length);
    case 't': return nodes.length === 0 ? 'n/a' : nodeStateCompact(nodes[0]);
    case 'T': return nodes.length === 0 ? 'n/a' : nodeStateLong(nodes[0]);
    case 'N': return nodes.length === 0 ? '' : compressHostlist(nodes.map((node) => node.name));
    case 'c': return range(nodes.map((node) => node.cpus));
    case 'm': return range(nodes.map((node) => node.memoryMiB));
    case 'e': return range(nodes.map((node) => node.memoryMiB - node.memoryAllocatedMiB));
    case 'O': return 'N/A';
    case 'E': return [...new Set(nodes.map((node) => node.reason ?? 'none'))].join(',') || 'none';
    case 'C': return `${allocated}/${total - allocated - out}/${out}/${total}`;
    case 'f': return [...new Set(nodes.flatMap((node) => node.features))].join(',') || '(null)';
    case 's': return `1-${partition.maxNodes ?? 'infinite'}`;
    case 'r': return 'no';
    case 'h': return 'NO';
    case 'g': return 'all';
    case 'i': return '';
    case 'z': return range(nodes.map((node) => node.cpus)).replace(/^(\d+)\+?$/, '1:$1:1');
    case 'd': return '0';
    case 'w': return '1';
    case 'p': return String(partition.priority);
    default: return '';
  }
}

export interface SinfoOptions {
  format?: string;
  nodeOriented?: boolean;
  long?: boolean;
  noheader?: boolean;
  states?: string[];
  partitions?: string[];
  nowMs: number;
}

/** `%#P` / `%#N` (Slurm's "as wide as the widest value, at least 9"), resolved for these lines. */
function sized(format: string, groups: readonly SinfoGroup[]): ParsedFormat {
  const widest = (letter: string) => groups.reduce((width, group) => Math.max(width, sinfoField(group, letter).length), 9);
  const text = format.replace(/%(\.?)#([PN])/g, (_, dot: string, letter: string) => `%${dot}${widest(letter)}${letter}`);
  return parseFormat(text, new Set(Object.keys(HEADERS)), 'sinfo');
}

export function renderSinfo(partitions: readonly ApiPartition[], nodes: readonly ApiNode[], options: SinfoOptions): string {
  const groups = sinfoGroups(partitions, nodes, options);
  const chosen = options.format ?? (options.nodeOriented ? (options.long ? SINFO_NODE_LONG_FORMAT : SINFO_NODE_FORMAT) : options.long ? SINFO_LONG_FORMAT : SINFO_DEFAULT_FORMAT);
  const format = sized(chosen, groups);
  const lines: string[] = [];
  if (options.long) lines.push(ctime(options.nowMs));
  if (!options.noheader) lines.push(formatLine(format, (letter) => HEADERS[letter], UNCUT));
  for (const group of groups) lines.push(formatLine(format, (letter) => sinfoField(group, letter), UNCUT));
  return lines.map((line) => `${line}\n`).join('');
}

const list = (text: string) => text.split(',').map((word) => word.trim()).filter((word) => word !== '');
const STATE_WORDS = new Set([...Object.values(COMPACT), ...Object.values(LONG), 'alloc', 'drain']);

export function registerSinfo(program: Command): void {
  program
    .description('view partitions and nodes as Slurm\'s sinfo does (served by Taras)')
    .option('-N, --Node', 'one line per node (and partition)')
    .option('-l, --long', 'more columns; the current time first')
    .option('-o, --format <format>', 'fields to print, e.g. "%P %a %l %D %t %N"')
    .option('-p, --partition <partitions>', 'only these partitions (comma list)')
    .option('-t, --states <states>', 'only nodes in these states: idle, alloc, mix, down, drain, drng (comma list)')
    .option('-h, --noheader', 'no header line')
    .option('--json', 'print the partitions and nodes as JSON (Taras\'s vocabulary)')
    .option('--controller <address>', 'controller address (default $TARAS_CONTROLLER)')
    .helpOption('--help', 'show this help')
    .addHelpText('after', `
Formats follow Slurm: %[.]WIDTH LETTER ("." right-justifies). Fields: %P %R %a %l %L %D %t %T %N %c %m %e %O %E %C %f.
Examples:
  sinfo
  sinfo -N -l
  sinfo -h -o "%P %D %t"
`)
    .action(async (flags: { Node?: boolean; long?: boolean; format?: string; partition?: string; states?: string; noheader?: boolean; json?: boolean; controller?: string }) => {
      const states = flags.states === undefined ? undefined : list(flags.states.toLowerCase());
      for (const state of states ?? []) {
        if (!STATE_WORDS.has(state)) throw new Error(`sinfo: error: Invalid node state specified: ${state} (Taras has idle, alloc, mix, down, drain, drng)`);
      }
      if (flags.format !== undefined) parseFormat(flags.format.replace(/%(\.?)#/g, '%$1'), new Set(Object.keys(HEADERS)), 'sinfo');
      const { withClient, printJson } = await import('../controller-client.js');
      await withClient(flags.controller, async (api) => {
        const [partitions, nodes] = await Promise.all([api.get<ApiPartition[]>('/partitions'), api.get<ApiNode[]>('/nodes')]);
        if (flags.json) return printJson({ partitions, nodes });
        process.stdout.write(renderSinfo(partitions, nodes, {
          format: flags.format, nodeOriented: flags.Node === true, long: flags.long === true, noheader: flags.noheader === true,
          states: states === undefined ? undefined : states.map((state) => (state === 'allocated' ? 'alloc' : state)),
          partitions: flags.partition === undefined ? undefined : list(flags.partition), nowMs: Date.now(),
        }));
      });
    });
}
