// Which running jobs to checkpoint and remove so that a job can start now
// (an immediate interactive job, a guaranteed deadline at its latest start,
// a job of a higher-priority partition). Pure: the shell hands in the nodes'
// free capacity and the running jobs it may preempt, and carries out the
// choice (preemption signal, requeue) itself.

import type { JobId, ResourceRequest, Seconds } from './types.js';

/** A node as preemption sees it: what is free on it now and whether it takes jobs. */
export interface PreemptionNode {
  readonly name: string;
  readonly freeCpus: number;
  readonly freeMemoryMiB: number;
  readonly features: readonly string[];
  /** Down and drained nodes take no new job, whatever is freed on them. */
  readonly accepting: boolean;
}

/** A running job that may be preempted. */
export interface PreemptionCandidate {
  readonly id: JobId;
  readonly nodes: readonly string[];
  readonly cpusPerNode: number;
  readonly memoryMiBPerNode: number;
  /** Its last (re)start: seed 000 counts a restarted job's run from its restart. */
  readonly startedAt: Seconds;
  /** Its time limit (seconds). */
  readonly limit: Seconds;
  /** How long until its nodes are free once asked (its checkpoint duration, or the grace time). */
  readonly waitSeconds: Seconds;
}

/**
 * `longest-relative`: seed 000 2.2.2, the job that has run longest relative to
 * its limit since its last (re)start goes first, so the same job does not
 * suffer every time. `fewest-recent`: Slurm's preemption, as few jobs as
 * possible and, among those, the most recently started (least work lost).
 */
export type VictimRule = 'longest-relative' | 'fewest-recent';

export interface VictimChoice {
  /** The jobs to preempt, in the order chosen. */
  readonly victims: readonly JobId[];
  /** The nodes the job gets once they are free. */
  readonly nodes: readonly string[];
  /** Until when the job waits: the longest wait of its victims. */
  readonly waitSeconds: Seconds;
}

/**
 * The running jobs to remove so that `request` fits now, or null when even
 * removing every candidate would not make room. Candidates are tried in the
 * rule's order and added until the job fits; then every victim the fit does
 * not need is given back (last added first), so no job is preempted in vain.
 * Under `fewest-recent` a single victim that frees enough is preferred to any
 * set of two or more.
 */
export function chooseVictims(
  request: ResourceRequest,
  nodes: readonly PreemptionNode[],
  candidates: readonly PreemptionCandidate[],
  rule: VictimRule,
  now: Seconds,
): VictimChoice | null {
  const fit = (victims: readonly PreemptionCandidate[]) => nodesFor(request, nodes, victims);
  if (fit([]) !== null) return { victims: [], nodes: fit([])!, waitSeconds: 0 };
  const ordered = [...candidates].sort(rule === 'longest-relative'
    ? (a, b) => relativeRun(b, now) - relativeRun(a, now) || a.id - b.id
    : (a, b) => b.startedAt - a.startedAt || b.id - a.id);
  if (rule === 'fewest-recent') {
    for (const one of ordered) {
      const placed = fit([one]);
      if (placed !== null) return { victims: [one.id], nodes: placed, waitSeconds: one.waitSeconds };
    }
  }
  const chosen: PreemptionCandidate[] = [];
  for (const candidate of ordered) {
    chosen.push(candidate);
    if (fit(chosen) !== null) break;
  }
  if (fit(chosen) === null) return null;
  for (let i = chosen.length - 1; i >= 0; i--) {
    const without = chosen.filter((_, index) => index !== i);
    if (fit(without) !== null) chosen.splice(i, 1);
  }
  return {
    victims: chosen.map((victim) => victim.id),
    nodes: fit(chosen)!,
    waitSeconds: Math.max(0, ...chosen.map((victim) => victim.waitSeconds)),
  };
}

/** How far into its limit a job is since its last (re)start. */
function relativeRun(candidate: PreemptionCandidate, now: Seconds): number {
  return (now - candidate.startedAt) / Math.max(1, candidate.limit);
}

/** The first nodes (in the given order) that suit the request once the victims are gone, or null. */
function nodesFor(request: ResourceRequest, nodes: readonly PreemptionNode[], victims: readonly PreemptionCandidate[]): string[] | null {
  const freed = new Map<string, { cpus: number; memoryMiB: number }>();
  for (const victim of victims) {
    for (const name of victim.nodes) {
      const before = freed.get(name) ?? { cpus: 0, memoryMiB: 0 };
      freed.set(name, { cpus: before.cpus + victim.cpusPerNode, memoryMiB: before.memoryMiB + victim.memoryMiBPerNode });
    }
  }
  const chosen: string[] = [];
  for (const node of nodes) {
    if (!node.accepting || (request.eligibleNodes && !request.eligibleNodes.has(node.name))) continue;
    if (!request.features.every((feature) => node.features.includes(feature))) continue;
    const extra = freed.get(node.name);
    const cpus = node.freeCpus + (extra?.cpus ?? 0);
    const memoryMiB = node.freeMemoryMiB + (extra?.memoryMiB ?? 0);
    if (cpus < request.cpusPerNode || memoryMiB < request.memoryMiBPerNode) continue;
    chosen.push(node.name);
    if (chosen.length === request.nodes) return chosen;
  }
  return null;
}
