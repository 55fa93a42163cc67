// Per-job control groups for the job supervisor: which mode this machine
// allows (a delegated cgroup v2 subtree, the v1 memory and cpuacct
// hierarchies, or plain rlimits, with the reason), and one job's cgroup:
// moving the job in, memory limit, CPU time, peak memory, OOM kills, kill-all
// and removal.

import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export type CgroupMode = 'v2' | 'v1' | 'rlimit';

/** Where the kernel's view of cgroups is read; tests point these at a fake tree. */
export interface CgroupSystem {
  readonly mountinfoPath: string;
  readonly selfCgroupPath: string;
}

export const LIVE_SYSTEM: CgroupSystem = { mountinfoPath: '/proc/self/mountinfo', selfCgroupPath: '/proc/self/cgroup' };

/** The directories under which job cgroups are created, one per hierarchy used. */
export type CgroupLayout =
  | { readonly mode: 'v2'; readonly jobsDir: string; readonly controllers: readonly string[] }
  | { readonly mode: 'v1'; readonly memoryDir: string; readonly cpuacctDir: string };

export type CgroupProbe =
  | { readonly ok: true; readonly layout: CgroupLayout; readonly reason: string }
  | { readonly ok: false; readonly reason: string };

export interface ModeDetection {
  readonly mode: CgroupMode;
  /** One line an administrator can act on: where job cgroups go, or why none can be used. */
  readonly reason: string;
  readonly layout: CgroupLayout | null;
}

interface CgroupMount {
  readonly fsType: string;
  /** The cgroup path this mount shows (not "/" for a bind-mounted subtree). */
  readonly root: string;
  readonly mountPoint: string;
  readonly superOptions: readonly string[];
}

/** mountinfo escapes space, tab, newline and backslash as \ooo. */
const unescapeMountPath = (path: string): string => path.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));

function cgroupMounts(system: CgroupSystem): CgroupMount[] {
  const mounts: CgroupMount[] = [];
  for (const line of readFileSync(system.mountinfoPath, 'utf8').split('\n')) {
    const separator = line.indexOf(' - ');
    if (separator < 0) continue;
    const fields = line.slice(0, separator).split(' ');
    const [fsType = '', , superOptions = ''] = line.slice(separator + 3).split(' ');
    if (fsType !== 'cgroup' && fsType !== 'cgroup2') continue;
    mounts.push({ fsType, root: unescapeMountPath(fields[3] ?? '/'), mountPoint: unescapeMountPath(fields[4] ?? ''), superOptions: superOptions.split(',') });
  }
  return mounts;
}

/** This process's cgroup path per v1 controller, and under '' its v2 path. */
function ownCgroupPaths(system: CgroupSystem): Map<string, string> {
  const paths = new Map<string, string>();
  for (const line of readFileSync(system.selfCgroupPath, 'utf8').split('\n')) {
    const match = /^\d+:([^:]*):(.*)$/.exec(line);
    if (!match) continue;
    for (const controller of match[1]!.split(',')) paths.set(controller, match[2]!);
  }
  return paths;
}

/** The directory of cgroup `path` in `mount`, or null when the mount does not show it. */
function directoryOf(mount: CgroupMount, path: string): string | null {
  const within = mount.root === '/' ? path : path === mount.root || path.startsWith(`${mount.root}/`) ? path.slice(mount.root.length) : null;
  return within === null ? null : join(mount.mountPoint, within).replace(/(?<=.)\/$/, '');
}

const readWords = (file: string): string[] => (existsSync(file) ? readFileSync(file, 'utf8').trim().split(/\s+/).filter((w) => w !== '') : []);

/** Creates and removes a probe cgroup under `dir`; returns why it failed, or null. */
function cannotCreateUnder(dir: string, expectedFile: string): string | null {
  const probe = join(dir, `taras-probe-${process.pid}`);
  try {
    mkdirSync(probe);
  } catch (error) {
    return `cannot create a cgroup under ${dir}: ${(error as Error).message}`;
  }
  try {
    return existsSync(join(probe, expectedFile)) ? null : `${dir} is not a cgroup directory (a new group there has no ${expectedFile})`;
  } finally {
    rmdirSync(probe);
  }
}

/**
 * cgroup v2 is usable when the jobs' parent (cgroupParent, else this process's
 * own cgroup) has the memory controller in cgroup.subtree_control and we can
 * create groups there. cpu.stat's usage_usec exists without the cpu controller.
 */
export function probeCgroupV2(cgroupParent: string | null, system: CgroupSystem = LIVE_SYSTEM): CgroupProbe {
  const mount = cgroupMounts(system).find((m) => m.fsType === 'cgroup2');
  if (!mount) return { ok: false, reason: 'no cgroup v2 hierarchy is mounted' };
  const path = cgroupParent ?? ownCgroupPaths(system).get('');
  if (path === undefined) return { ok: false, reason: `this process has no cgroup v2 path in ${system.selfCgroupPath}` };
  const dir = directoryOf(mount, path);
  if (dir === null || !existsSync(dir)) return { ok: false, reason: `cgroup ${path} is not visible under the v2 mount ${mount.mountPoint}` };
  const available = readWords(join(dir, 'cgroup.controllers'));
  if (!available.includes('memory')) {
    return { ok: false, reason: `the memory controller is not available in ${dir} (cgroup.controllers: ${available.join(' ') || 'none'}; on a hybrid system it belongs to v1)` };
  }
  const enabled = readWords(join(dir, 'cgroup.subtree_control'));
  if (!enabled.includes('memory')) {
    return { ok: false, reason: `memory is not enabled in ${join(dir, 'cgroup.subtree_control')}: delegate a cgroup with no processes of its own (systemd Delegate=yes), write "+memory +cpu" there and set cgroup_parent to it` };
  }
  const failure = cannotCreateUnder(dir, 'memory.max');
  if (failure !== null) return { ok: false, reason: failure };
  return { ok: true, layout: { mode: 'v2', jobsDir: dir, controllers: enabled }, reason: `cgroup v2: job cgroups under ${dir} (controllers ${enabled.join(', ')})` };
}

/** cgroup v1 is usable when both the memory and the cpuacct hierarchies are mounted and writable. */
export function probeCgroupV1(cgroupParent: string | null, system: CgroupSystem = LIVE_SYSTEM): CgroupProbe {
  const mounts = cgroupMounts(system).filter((m) => m.fsType === 'cgroup');
  const own = ownCgroupPaths(system);
  const dirs: string[] = [];
  for (const [controller, expectedFile] of [['memory', 'memory.limit_in_bytes'], ['cpuacct', 'cpuacct.usage']] as const) {
    const mount = mounts.find((m) => m.superOptions.includes(controller));
    if (!mount) return { ok: false, reason: `no cgroup v1 ${controller} hierarchy is mounted` };
    const path = cgroupParent ?? own.get(controller) ?? '/';
    const dir = directoryOf(mount, path);
    if (dir === null || !existsSync(dir)) return { ok: false, reason: `cgroup ${path} is not visible under the v1 ${controller} mount ${mount.mountPoint}` };
    const failure = cannotCreateUnder(dir, expectedFile);
    if (failure !== null) return { ok: false, reason: failure };
    dirs.push(dir);
  }
  const [memoryDir, cpuacctDir] = dirs as [string, string];
  return { ok: true, layout: { mode: 'v1', memoryDir, cpuacctDir }, reason: `cgroup v1: memory under ${memoryDir}, cpuacct under ${cpuacctDir}` };
}

/** v2 if delegated, else v1, else rlimits; the reason says what was found. */
export function detectCgroupMode(cgroupParent: string | null = null, system: CgroupSystem = LIVE_SYSTEM): ModeDetection {
  const v2 = probeCgroupV2(cgroupParent, system);
  if (v2.ok) return { mode: 'v2', reason: v2.reason, layout: v2.layout };
  const v1 = probeCgroupV1(cgroupParent, system);
  if (v1.ok) return { mode: 'v1', reason: v1.reason, layout: v1.layout };
  return { mode: 'rlimit', reason: `no writable cgroup (v2: ${v2.reason}; v1: ${v1.reason}); memory is limited with ulimit -v`, layout: null };
}

export interface CgroupUsage {
  readonly cpuSeconds: number | null;
  /** The CPU time split into user and system (cpu.stat user_usec/system_usec, cpuacct.stat); null when not known. */
  readonly userSeconds?: number | null;
  readonly systemSeconds?: number | null;
  readonly peakMemoryKiB: number | null;
  /** Processes the kernel's OOM killer killed in the group; null when the kernel does not count them. */
  readonly oomKills: number | null;
}

/** The value of `key` in a flat-keyed file such as memory.events, cpu.stat or memory.oom_control. */
function keyedValue(file: string, key: string): number | null {
  if (!existsSync(file)) return null;
  const match = new RegExp(`^${key} (\\d+)$`, 'm').exec(readFileSync(file, 'utf8'));
  return match ? Number(match[1]) : null;
}

function numberIn(file: string): number | null {
  if (!existsSync(file)) return null;
  const value = Number(readFileSync(file, 'utf8').trim());
  return Number.isFinite(value) ? value : null;
}

/** Best effort: a missing or refused optional knob (swap limits) must not stop the job. */
function tryWrite(file: string, value: string): void {
  try {
    if (existsSync(file)) writeFileSync(file, value);
  } catch {
    // the limit still holds through memory.max / memory.limit_in_bytes
  }
}

export type CgroupResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: string };

/** One job's cgroup: a directory per hierarchy (one in v2, memory and cpuacct in v1). */
export class JobCgroup {
  private constructor(readonly mode: 'v2' | 'v1', readonly dirs: readonly string[]) {}

  /** Creates the group (replacing an empty leftover of the same name) and sets the memory limit. */
  static create(layout: CgroupLayout, name: string, memoryMiB: number | null): CgroupResult<JobCgroup> {
    const dirs = layout.mode === 'v2' ? [join(layout.jobsDir, name)] : [...new Set([join(layout.memoryDir, name), join(layout.cpuacctDir, name)])];
    try {
      for (const dir of dirs) {
        if (existsSync(dir)) rmdirSync(dir);
        mkdirSync(dir);
      }
      const group = new JobCgroup(layout.mode, dirs);
      if (memoryMiB !== null) group.limitMemory(memoryMiB * 1024 * 1024);
      return { ok: true, value: group };
    } catch (error) {
      for (const dir of dirs) {
        try {
          rmdirSync(dir);
        } catch {
          // never created, or the error above came from it
        }
      }
      return { ok: false, error: `cannot set up the job's cgroup ${dirs.join(', ')}: ${(error as Error).message}` };
    }
  }

  private limitMemory(bytes: number): void {
    const dir = this.dirs[0]!;
    if (this.mode === 'v2') {
      writeFileSync(join(dir, 'memory.max'), String(bytes));
      tryWrite(join(dir, 'memory.swap.max'), '0'); // over the limit means OOM, not swapping
    } else {
      writeFileSync(join(dir, 'memory.limit_in_bytes'), String(bytes));
      tryWrite(join(dir, 'memory.memsw.limit_in_bytes'), String(bytes));
    }
  }

  /** The files a process writes its pid into to join the group (every hierarchy). */
  get procsFiles(): string[] {
    return this.dirs.map((dir) => join(dir, 'cgroup.procs'));
  }

  /** Moves a process into the group in every hierarchy; the error names the file that refused it. */
  addProcess(pid: number): CgroupResult<void> {
    for (const file of this.procsFiles) {
      try {
        writeFileSync(file, String(pid));
      } catch (error) {
        return { ok: false, error: `cannot move the job (pid ${pid}) into its cgroup (${file}): ${(error as Error).message}` };
      }
    }
    return { ok: true, value: undefined };
  }

  pids(): number[] {
    const pids = new Set<number>();
    for (const file of this.procsFiles) for (const word of readWords(file)) pids.add(Number(word));
    return [...pids];
  }

  /** cgroup v2's freezer (cgroup.freeze): true when it did it; false where there is none (v1 here: the caller signals instead). */
  freeze(frozen: boolean): boolean {
    const file = join(this.dirs[0]!, 'cgroup.freeze');
    if (this.mode !== 'v2' || !existsSync(file)) return false;
    writeFileSync(file, frozen ? '1' : '0');
    return true;
  }

  /** SIGKILLs every process in the group, including any that left the job's process group or session. */
  killAll(): void {
    const killFile = join(this.dirs[0]!, 'cgroup.kill');
    if (this.mode === 'v2' && existsSync(killFile)) {
      writeFileSync(killFile, '1');
      return;
    }
    for (const pid of this.pids()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }

  /** Kills what is left and waits (bounded) until the group is empty. */
  async drain(timeoutMs = 2000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (this.pids().length === 0) return true;
      if (Date.now() > deadline) return false;
      this.killAll();
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  usage(): CgroupUsage {
    if (this.mode === 'v2') {
      const dir = this.dirs[0]!;
      const usageMicroseconds = keyedValue(join(dir, 'cpu.stat'), 'usage_usec');
      const userMicroseconds = keyedValue(join(dir, 'cpu.stat'), 'user_usec');
      const systemMicroseconds = keyedValue(join(dir, 'cpu.stat'), 'system_usec');
      const peakBytes = numberIn(join(dir, 'memory.peak'));
      return {
        cpuSeconds: usageMicroseconds === null ? null : usageMicroseconds / 1e6,
        userSeconds: userMicroseconds === null ? null : userMicroseconds / 1e6,
        systemSeconds: systemMicroseconds === null ? null : systemMicroseconds / 1e6,
        peakMemoryKiB: peakBytes === null ? null : Math.round(peakBytes / 1024),
        oomKills: keyedValue(join(dir, 'memory.events'), 'oom_kill'),
      };
    }
    const [memoryDir, cpuacctDir = memoryDir] = this.dirs as [string, string?];
    const usageNanoseconds = numberIn(join(cpuacctDir, 'cpuacct.usage'));
    const peakBytes = numberIn(join(memoryDir, 'memory.max_usage_in_bytes'));
    // cpuacct.stat counts in USER_HZ (100 per second on every Linux Node runs on).
    const userTicks = keyedValue(join(cpuacctDir, 'cpuacct.stat'), 'user');
    const systemTicks = keyedValue(join(cpuacctDir, 'cpuacct.stat'), 'system');
    return {
      cpuSeconds: usageNanoseconds === null ? null : usageNanoseconds / 1e9,
      userSeconds: userTicks === null ? null : userTicks / 100,
      systemSeconds: systemTicks === null ? null : systemTicks / 100,
      peakMemoryKiB: peakBytes === null ? null : Math.round(peakBytes / 1024),
      oomKills: keyedValue(join(memoryDir, 'memory.oom_control'), 'oom_kill'),
    };
  }

  /** Removes the group; processes that just died may keep it busy for a moment, hence the retries. */
  async remove(timeoutMs = 2000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    let remaining = this.dirs.filter((dir) => existsSync(dir));
    while (remaining.length > 0) {
      remaining = remaining.filter((dir) => {
        try {
          rmdirSync(dir);
          return false;
        } catch {
          return true;
        }
      });
      if (remaining.length === 0) return true;
      if (Date.now() > deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return true;
  }
}
