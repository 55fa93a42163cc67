// Processes as the kernel reports them (/proc and kill(pid, 0)): shared by
// the agent (its supervisors) and the store (a creator killed mid-way).

import { readFileSync } from 'node:fs';

/** /proc/PID/stat fields from the 3rd (state) on: the command name may hold spaces and parentheses. */
export function procStat(pid: number | 'self'): string[] | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return text.slice(text.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/** Start time of a process in clock ticks since boot (stat field 22); null when it is gone. */
export function processStartTicks(pid: number): number | null {
  const fields = procStat(pid);
  return fields ? Number(fields[19]) : null;
}

/** True when pid runs (not a zombie) and, given startTicks, is the same process and not a reuse of its pid. */
export function isAlive(pid: number, startTicks: number | null = null): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const fields = procStat(pid);
  if (fields === null) return startTicks === null; // no /proc: trust kill(0)
  return fields[0] !== 'Z' && (startTicks === null || Number(fields[19]) === startTicks);
}
