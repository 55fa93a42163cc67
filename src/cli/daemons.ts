// The daemons: `controller`, `agent`, and `up` (both in one process for a
// whole cluster on this machine). Each loads its daemon module only when it
// runs.

import type { Command } from 'commander';
import type { ClusterConfig } from '../config/cluster.js';
import { fail } from './flags.js';

/**
 * One entry of a daemon's log on stderr, stamped. Text from users (a job's name, an srun command) is in
 * many lines: its control characters are shown escaped and its later lines indented, so no one can write a
 * line that reads as an entry of its own (red team: an srun command forged "token issued to root").
 */
export function logLine(prefix: string, line: string): string {
  const text = `${new Date().toISOString()} ${prefix}${line.replace(/\r?\n/g, '\n    ').replace(/[\x00-\x08\x0b-\x1f\x7f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`)}`;
  console.error(text);
  return text;
}
import { controllerAddress, controllerOption, DEFAULT_DATA_DIR, parseAddress, print } from './controller-client.js';

export function registerDaemonCommands(program: Command): void {
  program
    .command('controller')
    .description('run the controller: queue, scheduler and JSON API (loopback by default)')
    .option('--config <file>', 'cluster.toml (default: embedded defaults, 16 nodes of 8 CPUs)')
    .option('--data <dir>', `data directory (default ./${DEFAULT_DATA_DIR}, or data_dir of --config)`)
    .option('--key <file>', 'the cluster key file shared with the agents (default DATA/cluster.key, created if missing)')
    .option('--port <n>', 'TCP port on the listen address (0: any free port; default the port of listen in --config, else 6817)')
    .addHelpText('after', `\n${FLAGS_OVER_FILE}\n\nExamples:\n  taras controller\n  taras controller --config cluster.toml\n  taras controller --data /tmp/test-cluster --port 7000\n`)
    .action(async (flags: { config?: string; data?: string; key?: string; port?: string }) => {
      const port = flags.port === undefined ? undefined : portNumber(flags.port);
      const config = await daemonConfig(flags);
      const key = await clusterKey(flags.key ?? `${config.dataDir}/cluster.key`, true);
      const running = await startOrExplain({ config, configPath: flags.config ?? null, clusterKey: key, port, log: (line) => logLine('', line) });
      const stop = () => void running.close().then(() => process.exit(0));
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
    });

  program
    .command('up')
    .description('a whole cluster on this machine: controller plus a virtual agent (Ctrl-C stops both); what `npm start` runs')
    .option('--config <file>', 'cluster.toml: its nodes, partitions and features, all served by the one virtual agent (not with --virtual)')
    .option('--data <dir>', `data directory: database, cluster key, job directories (default ./${DEFAULT_DATA_DIR}, or data_dir of --config)`)
    .option('--virtual <NxC>', `without --config: N virtual nodes of C CPUs each (node01..), every job still a real process (default ${DEFAULT_VIRTUAL})`)
    .option('--port <n>', 'TCP port (0: any free port; default the port of listen in --config, else 6817 on 127.0.0.1)')
    .addHelpText('after', `\n${FLAGS_OVER_FILE}
With --config the one virtual agent serves the file's nodes as they are at
the start (restart \`taras up\` after adding nodes); every job is a real process.

Examples:
  npm start                     (the same as: taras up)
  taras up --virtual 4x2 --data /tmp/small --port 0
  taras up --config cluster.toml
  taras up --config cluster.toml --data /tmp/try --port 0
`)
    .action(async (flags: { config?: string; data?: string; virtual?: string; port?: string }) => {
      if (flags.config !== undefined && flags.virtual !== undefined) {
        fail(`error: --virtual and --config both say which nodes to run: with --config they are the [[nodes]] of ${flags.config}; drop --virtual (or --config)`);
      }
      const shape = flags.config === undefined ? virtualShape(flags.virtual ?? DEFAULT_VIRTUAL) : undefined;
      const port = flags.port === undefined ? undefined : portNumber(flags.port);
      const config = await daemonConfig(flags, shape);
      const { DEFAULT_LISTEN } = await import('../config/cluster.js');
      const { startAgent } = await import('../agent/agent.js');
      await checkDataFolder(`${config.dataDir}/agent`);
      const key = await clusterKey(`${config.dataDir}/cluster.key`, true);
      const log = (line: string) => logLine('', line);
      const controller = await startOrExplain({ config, configPath: flags.config ?? null, clusterKey: key, log, port });
      const agent = await startAgent({
        controller: { baseUrl: controller.url }, nodes: config.nodes.map((n) => n.name), dataDir: `${config.dataDir}/agent`, clusterKey: key,
        log: (line) => log(`agent: ${line}`),
      });
      const isDefault = controller.url === `http://${DEFAULT_LISTEN.host}:${DEFAULT_LISTEN.port}`;
      const defaultPartition = config.partitions.find((p) => p.isDefault) ?? config.partitions[0];
      const what = shape === undefined ? await describeCluster(config, flags.config!) : `${shape.count} virtual nodes of ${shape.cpus} CPUs`;
      print(`
Taras is up: controller at ${controller.url}, ${what}, data in ${config.dataDir}.
Submit a job and watch the queue from another terminal in this folder:
${isDefault ? '' : `  export TARAS_CONTROLLER=${controller.url}\n`}  printf '#!/bin/sh\\n#TARAS --time 5\\necho hello from $TARAS_NODELIST\\nsleep 20\\n' > hello.sh
  npx taras submit -N ${Math.min(2, defaultPartition.nodes.length)} hello.sh
  npx taras queue
  npx taras when 1
  npx taras wait 1 && cat taras-1.out
Ctrl-C stops the controller and the agent (running jobs keep running; they are re-adopted at the next start).`);
      let stopping = false;
      const stop = () => {
        if (stopping) return;
        stopping = true;
        log('stopping the agent and the controller');
        void agent.close().then(() => controller.close()).then(() => process.exit(0), (error: unknown) => {
          log(`could not stop cleanly: ${(error as Error).message}`);
          process.exit(1);
        });
      };
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
    });

  program
    .command('agent')
    .description('run a node agent: starts jobs as real processes on its nodes')
    .option(...controllerOption)
    .option('--virtual <NxC>', 'serve N virtual nodes of C CPUs in this process (names node01..), e.g. 16x8')
    .option('--nodes <hostlist>', 'serve these nodes, e.g. node[01-04]')
    .option('--data <dir>', 'where job directories live', `${DEFAULT_DATA_DIR}/agent`)
    .option('--key <file>', 'the cluster key file', `${DEFAULT_DATA_DIR}/cluster.key`)
    .option('--keep-job-dirs <seconds>', 'how long a job\'s directory (script, status, supervisor log) stays after the controller has its end', '60')
    .addHelpText('after', '\nExamples:\n  taras agent --virtual 16x8\n  taras agent --controller http://127.0.0.1:6817 --nodes node[01-04]\n')
    .action(async (flags: { controller?: string; virtual?: string; nodes?: string; data: string; key: string; keepJobDirs: string }) => {
      const keepJobDirsSeconds = Number(flags.keepJobDirs);
      if (!/^\d+(\.\d+)?$/.test(flags.keepJobDirs)) fail(`error: --keep-job-dirs '${flags.keepJobDirs}' is not a number of seconds; e.g. --keep-job-dirs 60 (0: at once)`);
      const { expandHostlist } = await import('../config/hostlist.js');
      let nodes: string[];
      if (flags.virtual) {
        const { virtualNodeNames } = await import('../config/cluster.js');
        nodes = virtualNodeNames(virtualShape(flags.virtual).count);
      } else if (flags.nodes) {
        nodes = expandHostlist(flags.nodes);
      } else {
        fail('error: say which nodes this agent serves: --virtual 16x8 or --nodes node[01-04]');
      }
      await checkDataFolder(flags.data);
      const key = await clusterKey(flags.key, false);
      const address = controllerAddress(flags.controller);
      const { startAgent } = await import('../agent/agent.js');
      const agent = await startAgent({
        controller: parseAddress(address),
        nodes, dataDir: flags.data, clusterKey: key, keepJobDirsMs: keepJobDirsSeconds * 1000, log: (line) => logLine('agent: ', line),
      });
      const stop = () => void agent.close().then(() => process.exit(0));
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
    });
}

/** How a daemon's flags and its cluster.toml share the say. */
const FLAGS_OVER_FILE = 'Flags win over the file: --port replaces the port of its listen (its host\nstays), --data its data_dir (the socket and jwt_key kept there move with it).';

const DEFAULT_VIRTUAL = '16x8';

/**
 * The configuration a daemon runs: the --config file, checked by the loader
 * `admin reconfigure` uses (each problem one line naming file, line, key and
 * fix; exit 2), else the embedded defaults (`shape`). An explicit --data wins
 * over the file's data_dir.
 */
async function daemonConfig(flags: { config?: string; data?: string }, shape?: { count: number; cpus: number }): Promise<ClusterConfig> {
  const { defaultClusterConfig, socketPathProblem, withDataDir } = await import('../config/cluster.js');
  let config: ClusterConfig;
  if (flags.config === undefined) {
    config = defaultClusterConfig(flags.data ?? DEFAULT_DATA_DIR, shape);
  } else {
    const [{ readClusterConfig }, { formatConfigError }] = await Promise.all([import('../config/load.js'), import('../config/errors.js')]);
    const parsed = await readClusterConfig(flags.config);
    if (!parsed.ok) fail(parsed.errors.map(formatConfigError).join('\n'));
    // What an older version took and this one cannot honour: said, and the daemon starts without it (reconfigure refuses it).
    for (const ignored of parsed.ignored) logLine('', `warning: ${formatConfigError(ignored)}; this start goes on without it (taras admin reconfigure refuses the file until it is fixed)`);
    config = flags.data === undefined ? parsed.config : withDataDir(parsed.config, flags.data);
  }
  const problem = socketPathProblem(config.socketPath);
  if (problem !== undefined) fail(`error: ${problem}: use a shorter --data`);
  await checkDataFolder(flags.data === undefined ? config.dataDir : flags.data);
  return config;
}

/** A daemon's data folder must be one (an empty --data, a script's unset variable, would fill the current folder), and one it may take as its own. */
async function checkDataFolder(path: string): Promise<void> {
  if (path.trim() === '') fail(`error: --data is empty: give the daemon's data folder (default ./${DEFAULT_DATA_DIR})`);
  const { statSync } = await import('node:fs');
  const stats = statSync(path, { throwIfNoEntry: false });
  if (stats !== undefined && !stats.isDirectory()) fail(`error: the data folder ${path} exists and is not a folder: give another --data (or data_dir in cluster.toml)`);
  // One the daemon may not take as its own (shared, another user's): said before anything is made in it.
  const { checkOwnFolder, FolderError } = await import('../net/private-files.js');
  try {
    checkOwnFolder(path, 'data folder');
  } catch (error) {
    if (error instanceof FolderError) fail(`error: ${error.message}`);
    throw error;
  }
}

/** "4 nodes in 2 partitions from cluster.toml (a: n[1-2], 16 CPUs, the default; b: n[3-4], 8 CPUs)". */
async function describeCluster(config: ClusterConfig, file: string): Promise<string> {
  const { compressHostlist } = await import('../config/hostlist.js');
  const cpus = new Map(config.nodes.map((node) => [node.name, node.cpus]));
  const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;
  const partitions = config.partitions.map((p) => {
    const total = p.nodes.reduce((sum, name) => sum + (cpus.get(name) ?? 0), 0);
    return `${p.name}: ${compressHostlist(p.nodes)}, ${count(total, 'CPU')}${p.isDefault ? ', the default' : ''}`;
  });
  return `${count(config.nodes.length, 'node')} in ${count(config.partitions.length, 'partition')} from ${file} (${partitions.join('; ')})`;
}

/**
 * Starts the controller; what stops it from starting (another controller on
 * the data directory, a port in use, an empty or damaged database, a jwt_key
 * it cannot use) is one line and exit 1, never a stack trace.
 */
async function startOrExplain(options: import('../controller/daemon.js').ControllerOptions) {
  const [{ startController }, { ListenError }, { StoreError }, { DataDirInUse }, { EventLogError }, { FolderError }, { JwtKeyError }] = await Promise.all([
    import('../controller/daemon.js'), import('../net/listen.js'), import('../store/store.js'), import('../controller/lock.js'), import('../controller/event-log.js'),
    import('../net/private-files.js'), import('../net/identity.js'),
  ]);
  try {
    return await startController(options);
  } catch (error) {
    if (error instanceof ListenError) fail(`error: ${error.message}: ${error.fix}`, 1);
    if (error instanceof StoreError || error instanceof DataDirInUse || error instanceof EventLogError || error instanceof FolderError || error instanceof JwtKeyError) {
      fail(`error: ${error.message}`, 1);
    }
    throw error;
  }
}

/** `--virtual NxC`: N nodes of C CPUs. */
function virtualShape(text: string): { count: number; cpus: number } {
  const match = /^(\d+)x(\d+)$/.exec(text);
  const count = Number(match?.[1]);
  const cpus = Number(match?.[2]);
  if (!match || count < 1 || cpus < 1 || count > 9999) fail(`error: option '--virtual' got '${text}': expected NODESxCPUS with 1 to 9999 nodes, e.g. 16x8`);
  return { count, cpus };
}

function portNumber(text: string): number {
  const port = Number(text);
  if (!(/^\d+$/.test(text) && port < 65536)) fail(`error: option '--port' got '${text}': expected a TCP port number, 0 to 65535`);
  return port;
}

/** Loads the cluster key, creating it when asked to and missing. */
async function clusterKey(path: string, create: boolean) {
  const { existsSync } = await import('node:fs');
  const { dirname } = await import('node:path');
  const { loadClusterKey, generateClusterKey, ClusterKeyError } = await import('../net/hmac.js');
  const { makeFolders } = await import('../net/private-files.js');
  try {
    if (!existsSync(path) && create) {
      // 0700: the controller opens the folder up to 0711 when its socket is in it; it never has to tighten a new one.
      makeFolders(dirname(path), 0o700);
      return generateClusterKey(path);
    }
    return loadClusterKey(path);
  } catch (error) {
    if (error instanceof ClusterKeyError) fail(`error: ${error.message}`);
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== undefined) fail(`error: cannot ${create ? 'create or read' : 'read'} the cluster key ${path} (${(error as Error).message}); give another --key or --data`);
    throw error;
  }
}
