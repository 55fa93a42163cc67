// What every command that talks to the controller shares: where the
// controller is, an API client whose errors become one line and an exit
// code, output helpers, job-id parsing and the --controller option. Only
// type imports and ./flags.js at the top, so loading this costs nothing;
// the network modules load when a command runs.

import type { ApiClient } from '../net/client.js';
import { fail } from './flags.js';

export const DEFAULT_CONTROLLER = 'http://127.0.0.1:6817';
export const DEFAULT_DATA_DIR = 'taras-data';

export const controllerOption = ['--controller <address>', `controller URL or socket path (default $TARAS_CONTROLLER or ${DEFAULT_CONTROLLER})`] as const;

/** The controller's address: --controller, else $TARAS_CONTROLLER, else the local default. */
export function controllerAddress(flag: string | undefined): string {
  return flag ?? process.env.TARAS_CONTROLLER ?? DEFAULT_CONTROLLER;
}

export async function client(flag: string | undefined): Promise<ApiClient> {
  const [{ createApiClient }, { localIdentity }] = await Promise.all([import('../net/client.js'), import('../net/identity.js')]);
  const address = controllerAddress(flag);
  const target = address.startsWith('http') ? { baseUrl: address } : { socketPath: address };
  return createApiClient(target, { identity: localIdentity() });
}

/** Runs a client command: API errors become one line and exit 1 (2 for a refused request). */
export async function withClient<T>(flag: string | undefined, run: (api: ApiClient) => Promise<T>): Promise<T> {
  const api = await client(flag);
  try {
    return await run(api);
  } catch (error) {
    const { ApiRequestError, ControllerUnreachableError } = await import('../net/client.js');
    if (error instanceof ControllerUnreachableError) fail(`error: ${error.message}`, 1);
    if (error instanceof ApiRequestError) fail(`error: ${error.error}${error.fix ? ` (${error.fix})` : ''}`, error.status === 400 ? 2 : 1);
    throw error;
  } finally {
    api.close();
  }
}

/** How long a command keeps trying a controller that does not answer (a restart takes a second or two); TARAS_RETRY_SECONDS changes it. */
export const RETRY_FOR_MS = Number.isFinite(Number(process.env.TARAS_RETRY_SECONDS ?? 'x')) ? Number(process.env.TARAS_RETRY_SECONDS) * 1000 : 30_000;

/**
 * Runs `request` again while the controller cannot be reached (connection
 * refused or reset, no answer: a restart), with backoff from 100 ms to 2 s,
 * for at most RETRY_FOR_MS; says once on stderr that it is waiting. Only for
 * requests that are safe to repeat: reads, and submissions that carry an
 * idempotency key. An answer, even an error, is returned or thrown at once.
 */
export async function withRetries<T>(what: string, request: () => Promise<T>, retryForMs = RETRY_FOR_MS): Promise<T> {
  const { ControllerUnreachableError } = await import('../net/client.js');
  const deadline = Date.now() + retryForMs;
  let delayMs = 100;
  let told = false;
  for (;;) {
    try {
      return await request();
    } catch (error) {
      if (!(error instanceof ControllerUnreachableError) || Date.now() + delayMs > deadline) throw error;
      if (!told) process.stderr.write(`${what}: the controller at ${error.address} does not answer (${error.code}); retrying for up to ${Math.round(retryForMs / 1000)} s (Ctrl-C to stop)\n`);
      told = true;
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      delayMs = Math.min(delayMs * 2, 2000);
    }
  }
}

/**
 * Every job `GET /jobs` lists for `query` (user, state), page after page:
 * the controller answers at most 1,000 per request and a `next` cursor.
 */
export async function listAllJobs<T = import('../api/types.js').ApiJob>(api: ApiClient, query: URLSearchParams = new URLSearchParams()): Promise<T[]> {
  const jobs: T[] = [];
  for (let after: number | null = 0; after !== null;) {
    query.set('after', String(after));
    const page: { jobs: T[]; next: number | null } = await api.get(`/jobs?${query}`);
    jobs.push(...page.jobs);
    after = page.next;
  }
  return jobs;
}

export const print = (text: string) => process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
export const printJson = (value: unknown) => print(JSON.stringify(value, null, 2));

export function parseJobIds(raw: readonly string[]): number[] {
  return raw.map((text) => {
    const id = Number(text);
    if (!Number.isSafeInteger(id) || id <= 0) fail(`error: '${text}' is not a job id: job ids are positive integers, as \`taras queue\` shows them`);
    return id;
  });
}
