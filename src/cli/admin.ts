// `taras admin`: the operator's subcommands (drain, resume, motd,
// reconfigure, shutdown), each one request to the controller's admin API.

import type { Command } from 'commander';
import { controllerOption, print, withClient } from './controller-client.js';

export function registerAdminCommands(program: Command): void {
  const admin = program.command('admin').description('administration: drain, resume, motd, shutdown');
  const adminCall = (path: string, method: 'post' | 'put', body: (flags: Record<string, unknown>, nodes: string[]) => unknown) =>
    async (nodes: string[] | Record<string, unknown>, maybeFlags?: Record<string, unknown>) => {
      const flags = (Array.isArray(nodes) ? maybeFlags : nodes) ?? {};
      const names = Array.isArray(nodes) ? (await import('../config/hostlist.js')).expandHostlist(nodes.join(',')) : [];
      await withClient(flags.controller as string | undefined, async (api) => {
        const answer = method === 'post' ? await api.post(path, body(flags, names)) : await api.put(path, body(flags, names));
        print(JSON.stringify(answer, null, 2));
      });
    };
  admin.command('drain').argument('<nodes...>').requiredOption('--reason <text>', 'why (shown in taras nodes)').option(...controllerOption)
    .description('stop new jobs on nodes; running jobs finish')
    .action(adminCall('/admin/drain', 'post', (flags, nodes) => ({ nodes, reason: flags.reason })));
  admin.command('resume').argument('<nodes...>').option('--reason <text>').option(...controllerOption)
    .description('let drained nodes take jobs again')
    .action(adminCall('/admin/drain', 'post', (_flags, nodes) => ({ nodes, resume: true })));
  admin.command('motd').argument('[text]', 'the message; empty clears it').option(...controllerOption)
    .description('set the message of the day shown by taras status')
    .action(async (text: string | undefined, flags: { controller?: string }) => {
      await withClient(flags.controller, async (api) => print(JSON.stringify(await api.put('/admin/motd', { text: text ?? '' }))));
    });
  admin.command('reconfigure').option(...controllerOption)
    .description('reload cluster.toml without losing jobs; a bad file is refused and the old configuration stays')
    .action(async (flags: { controller?: string }) => {
      await withClient(flags.controller, async (api) => {
        const status = await api.post<{ policy: string; nodes: { total: number } }>('/admin/reconfigure', {});
        print(`reconfigured: policy ${status.policy}, ${status.nodes.total} nodes`);
      });
    });
  admin.command('shutdown').option(...controllerOption).description('stop the controller (jobs keep running on their agents)')
    .action(async (flags: { controller?: string }) => {
      await withClient(flags.controller, async (api) => print(JSON.stringify(await api.post('/admin/shutdown', {}))));
    });
}
