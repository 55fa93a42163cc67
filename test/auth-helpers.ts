// Credentials for tests that talk to a real controller: a bearer token signed
// with the controller's own key file (as `taras admin token` would issue), and
// API clients that carry one. Root reaches the controller through its socket.

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
