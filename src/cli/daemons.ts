// The daemons: `controller`, `agent`, and `up` (both in one process for a
// whole cluster on this machine). Each loads its daemon module only when it
// runs.

import type { Command } from 'commander';
import { fail } from './flags.js';
import { controllerAddress, controllerOption, DEFAULT_DATA_DIR, parseAddress, print } from './controller-client.js';

export function registerDaemonCommands(program: Command): void {
  program
    .command('controller')
    .description('run the controller: queue, scheduler and JSON API (loopback by default)')
    .option('--config <file>', 'cluster.toml (default: embedded defaults, 16 nodes of 8 CPUs)')
    .option('--data <dir>', 'data directory for the embedded defaults', DEFAULT_DATA_DIR)
    .option('--key <file>', 'cluster key file shared with the agents (default DATA/cluster.key, created if missing)')
    .option('--port <n>', 'TCP port on the listen address (0: any free port; default from the config, 6817)')
    .addHelpText('after', '\nExamples:\n  taras controller\n  taras controller --config cluster.toml\n  taras controller --data /tmp/test-cluster --port 7000\n')
    .action(async (flags: { config?: string; data: string; key?: string; port?: string }) => {
      const port = flags.port === undefined ? undefined : portNumber(flags.port);
      const { defaultClusterConfig } = await import('../config/cluster.js');
      let config = defaultClusterConfig(flags.data);
      if (flags.config) {
        const { readClusterConfig } = await import('../config/load.js');
        const { formatConfigError } = await import('../config/errors.js');
        const parsed = await readClusterConfig(flags.config);
        if (!parsed.ok) fail(parsed.errors.map(formatConfigError).join('\n'));
        config = parsed.config;
      }
      const key = await clusterKey(flags.key ?? `${config.dataDir}/cluster.key`, true);
      const running = await startOrExplain({ config, configPath: flags.config ?? null, clusterKey: key, port, log: (line) => console.error(`${new Date().toISOString()} ${line}`) });
      const stop = () => void running.close().then(() => process.exit(0));
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
    });

  program
    .command('up')
    .description('a whole cluster on this machine: controller plus a virtual agent (Ctrl-C stops both); what `npm start` runs')
    .option('--data <dir>', 'data directory (database, cluster key, job directories)', DEFAULT_DATA_DIR)
    .option('--virtual <NxC>', 'N virtual nodes of C CPUs each (node01..), every job still a real process', '16x8')
    .option('--port <n>', 'TCP port on 127.0.0.1 (0: any free port)', '6817')
    .addHelpText('after', '\nExamples:\n  npm start                     (the same as: taras up)\n  taras up --virtual 4x2 --data /tmp/small --port 0\n')
    .action(async (flags: { data: string; virtual: string; port: string }) => {
      const { count, cpus } = virtualShape(flags.virtual);
      const port = portNumber(flags.port);
      const { defaultClusterConfig, DEFAULT_LISTEN } = await import('../config/cluster.js');
      const { startAgent } = await import('../agent/agent.js');
      const config = defaultClusterConfig(flags.data, { count, cpus });
      const key = await clusterKey(`${config.dataDir}/cluster.key`, true);
      const log = (line: string) => console.error(`${new Date().toISOString()} ${line}`);
      const controller = await startOrExplain({ config, clusterKey: key, log, port });
      const agent = await startAgent({
        controller: { baseUrl: controller.url }, nodes: config.nodes.map((n) => n.name), dataDir: `${config.dataDir}/agent`, clusterKey: key,
        log: (line) => log(`agent: ${line}`),
      });
      const isDefault = controller.url === `http://${DEFAULT_LISTEN.host}:${DEFAULT_LISTEN.port}`;
      print(`
Taras is up: controller at ${controller.url}, ${count} virtual nodes of ${cpus} CPUs, data in ${config.dataDir}.
Submit a job and watch the queue from another terminal in this folder:
${isDefault ? '' : `  export TARAS_CONTROLLER=${controller.url}\n`}  printf '#!/bin/sh\\n#TARAS --time 5\\necho hello from $TARAS_NODELIST\\nsleep 20\\n' > hello.sh
  npx taras submit -N 2 hello.sh
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
    .addHelpText('after', '\nExamples:\n  taras agent --virtual 16x8\n  taras agent --controller http://127.0.0.1:6817 --nodes node[01-04]\n')
    .action(async (flags: { controller?: string; virtual?: string; nodes?: string; data: string; key: string }) => {
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
      const key = await clusterKey(flags.key, false);
      const address = controllerAddress(flags.controller);
      const { startAgent } = await import('../agent/agent.js');
      const agent = await startAgent({
        controller: parseAddress(address),
        nodes, dataDir: flags.data, clusterKey: key, log: (line) => console.error(`${new Date().toISOString()} agent: ${line}`),
      });
      const stop = () => void agent.close().then(() => process.exit(0));
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
    });
}

/**
 * Starts the controller; what stops it from starting (another controller on
 * the data directory, a port in use, an empty or damaged database) is one
 * line and exit 1, never a stack trace.
 */
async function startOrExplain(options: import('../controller/daemon.js').ControllerOptions) {
  const [{ startController }, { ListenError }, { StoreError }, { DataDirInUse }] = await Promise.all([
    import('../controller/daemon.js'), import('../net/listen.js'), import('../store/store.js'), import('../controller/lock.js'),
  ]);
  try {
    return await startController(options);
  } catch (error) {
    if (error instanceof ListenError) fail(`error: ${error.message}: ${error.fix}`, 1);
    if (error instanceof StoreError || error instanceof DataDirInUse) fail(`error: ${error.message}`, 1);
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
  const { existsSync, mkdirSync } = await import('node:fs');
  const { dirname } = await import('node:path');
  const { loadClusterKey, generateClusterKey, ClusterKeyError } = await import('../net/hmac.js');
  try {
    if (!existsSync(path) && create) {
      // 0700: the controller opens the folder up to 0711 when its socket is in it; it never has to tighten a new one.
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      return generateClusterKey(path);
    }
    return loadClusterKey(path);
  } catch (error) {
    if (error instanceof ClusterKeyError) fail(`error: ${error.message}`);
    throw error;
  }
}
