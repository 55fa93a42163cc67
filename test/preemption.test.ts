// Choosing victims for preemption (src/core/preemption.ts): which running jobs
// are checkpointed and removed so a job can start now, under the Artaras rule
// (longest relative to its limit since its last restart) and Slurm's (as few
// and as recently started as possible); never a victim the fit does not need.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chooseVictims, type PreemptionCandidate, type PreemptionNode } from '../src/core/preemption.js';
import { jobId, type ResourceRequest } from '../src/core/types.js';

const node = (name: string, freeCpus: number, extra: Partial<PreemptionNode> = {}): PreemptionNode =>
  ({ name, freeCpus, freeMemoryMiB: 16384, features: [], accepting: true, ...extra });
const job = (id: number, nodes: string[], startedAt: number, limit: number, extra: Partial<PreemptionCandidate> = {}): PreemptionCandidate =>
  ({ id: jobId(id), nodes, cpusPerNode: 8, memoryMiBPerNode: 0, startedAt, limit, waitSeconds: 30, ...extra });
const need = (nodes: number, cpusPerNode = 8, extra: Partial<ResourceRequest> = {}): ResourceRequest =>
  ({ nodes, cpusPerNode, memoryMiBPerNode: 0, features: [], ...extra });

describe('chooseVictims', () => {
  it('preempts nothing when the job fits already', () => {
    const choice = chooseVictims(need(1), [node('n1', 0), node('n2', 8)], [job(1, ['n1'], 0, 100)], 'longest-relative', 50);
    assert.deepEqual(choice, { victims: [], nodes: ['n2'], waitSeconds: 0 });
  });

  it('longest-relative takes the job furthest into its limit since its last (re)start', () => {
    // Job 1: 50 of 1000 s (5 %); job 2: 60 of 100 s (60 %); job 3 restarted at 90: 10 of 20 s (50 %).
    const nodes = [node('n1', 0), node('n2', 0), node('n3', 0)];
    const running = [job(1, ['n1'], 50, 1000), job(2, ['n2'], 40, 100, { waitSeconds: 12 }), job(3, ['n3'], 90, 20)];
    assert.deepEqual(chooseVictims(need(1), nodes, running, 'longest-relative', 100), { victims: [jobId(2)], nodes: ['n2'], waitSeconds: 12 });
  });

  it('fewest-recent prefers one victim to two, and the most recently started of those that suffice', () => {
    // Jobs 1 and 2 hold half a node each; job 3 (older) and job 4 (newer) hold a whole node each.
    const nodes = [node('n1', 0), node('n2', 0), node('n3', 0)];
    const running = [
      job(1, ['n1'], 95, 100, { cpusPerNode: 4 }), job(2, ['n1'], 96, 100, { cpusPerNode: 4 }),
      job(3, ['n2'], 10, 100), job(4, ['n3'], 20, 100),
    ];
    assert.deepEqual(chooseVictims(need(1), nodes, running, 'fewest-recent', 100)?.victims, [jobId(4)]);
  });

  it('gives back every victim the fit does not need', () => {
    // Ordered by relative run, job 1 (n1) comes first but the request needs a node with the gpu feature.
    const nodes = [node('n1', 0), node('n2', 0, { features: ['gpu'] })];
    const running = [job(1, ['n1'], 0, 100), job(2, ['n2'], 90, 100)];
    const choice = chooseVictims(need(1, 8, { features: ['gpu'] }), nodes, running, 'longest-relative', 100);
    assert.deepEqual(choice, { victims: [jobId(2)], nodes: ['n2'], waitSeconds: 30 });
  });

  it('frees several nodes for a multi-node job, and waits for the slowest checkpoint', () => {
    const nodes = [node('n1', 0), node('n2', 0), node('n3', 8)];
    const running = [job(1, ['n1'], 0, 100, { waitSeconds: 5 }), job(2, ['n2'], 0, 200, { waitSeconds: 40 })];
    const choice = chooseVictims(need(3), nodes, running, 'longest-relative', 50);
    assert.deepEqual(choice, { victims: [jobId(1), jobId(2)], nodes: ['n1', 'n2', 'n3'], waitSeconds: 40 });
  });

  it('answers null when removing every candidate is not enough (a drained node or a job that may not be preempted)', () => {
    const nodes = [node('n1', 0, { accepting: false }), node('n2', 0)];
    // Job 2 on n2 is not a candidate (another interactive job, say): only n1 could be freed, and it takes no jobs.
    assert.equal(chooseVictims(need(1), nodes, [job(1, ['n1'], 0, 100)], 'fewest-recent', 50), null);
  });

  it('respects the partition: only eligible nodes count', () => {
    const nodes = [node('a1', 0), node('b1', 0)];
    const running = [job(1, ['a1'], 0, 100), job(2, ['b1'], 10, 100)];
    const choice = chooseVictims(need(1, 8, { eligibleNodes: new Set(['a1']) }), nodes, running, 'fewest-recent', 50);
    assert.deepEqual(choice?.victims, [jobId(1)]);
  });
});
