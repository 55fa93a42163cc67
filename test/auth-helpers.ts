// Credentials for tests that talk to a real controller: a bearer token signed
// with the controller's own key file (as `taras admin token` would issue), API
// clients that carry one, and commands run as another real user. Root reaches
// the controller through its socket.

import { spawn } from 'node:child_process';
import type { ClusterConfig } from '../src/config/cluster.js';
import { bearer, createApiClient, type ApiClient } from '../src/net/client.js';
import { issueToken, loadOrCreateJwtKey } from '../src/net/identity.js';

/** A token for `user` from the controller's key (`config.jwtKeyPath`), valid for `lifespanSeconds`. */
export async function tokenFor(config: Pick<ClusterConfig, 'jwtKeyPath'>, user: string, lifespanSeconds = 3600): Promise<string> {
  return (await issueToken(loadOrCreateJwtKey(config.jwtKeyPath), user, lifespanSeconds, Date.now())).token;
}

/** An API client over TCP that proves it is `user` with a token. */
export async function clientAs(url: string, config: Pick<ClusterConfig, 'jwtKeyPath'>, user: string): Promise<ApiClient> {
  return createApiClient({ baseUrl: url }, { credentials: bearer(await tokenFor(config, user)) });
}

/**
 * Runs `node ARGS` as another Unix user (setpriv: their uid, gid and groups),
 * asynchronously, so a controller in this process keeps answering meanwhile.
 */
export function runAs(user: { name: string; home: string }, args: string[], options: { cwd?: string; env?: Record<string, string>; timeoutMs?: number } = {}):
Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('setpriv', ['--reuid', user.name, '--regid', user.name, '--init-groups', process.execPath, ...args], {
      cwd: options.cwd ?? user.home, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: user.home, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 20_000);
    child.on('error', reject);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}
