// Interactive jobs in the controller: `GET /jobs/:id/attach` (a WebSocket)
// joins the caller's terminal to the job's session on its first node. The
// caller is verified as for every request (the socket's peer, a token or
// MUNGE); only the job's owner and root may attach (a terminal carries what
// its user types: cluster.toml's other administrators may not). The stream to
// the agent is signed with the cluster key like the controller's other
// requests to agents. The controller reads none of the frames.

import type { WebSocket } from 'ws';
import type { JobId } from '../core/types.js';
import { HOW_TO_AUTHENTICATE, type Caller } from '../net/identity.js';
import { RouteError, type UpgradeRoute } from '../net/server.js';
import { relaySockets } from '../net/stream.js';
import type { JobRecord } from '../store/events.js';
import type { ControllerEngine } from './engine.js';

/** Who may attach to a job's terminal: its owner, and root. */
export const mayAttach = (caller: Caller, owner: string): boolean => caller.uid === 0 || caller.user === owner;

export interface AttachDeps {
  /** The controller's engine now (a reconfigure replaces it). */
  readonly engine: () => ControllerEngine;
  readonly findJob: (id: JobId) => JobRecord;
  readonly parseId: (raw: string) => JobId;
  /** A signed WebSocket to the job's stream at the agent of `node`. */
  readonly openStream: (node: string, id: JobId, run: number) => Promise<WebSocket>;
  /** interactive_grace: an ended job's session keeps its last output this long. */
  readonly graceSeconds: () => number;
}

export function attachRoute(deps: AttachDeps): UpgradeRoute {
  return {
    method: 'GET', path: '/jobs/:id/attach',
    handler: async (ctx, accept) => {
      const caller = ctx.caller;
      if (caller === null) throw new RouteError(401, 'no verified identity: attaching to a job needs to know who you are', HOW_TO_AUTHENTICATE);
      const id = deps.parseId(ctx.params.id);
      const record = deps.findJob(id);
      if (!mayAttach(caller, record.user)) throw new RouteError(403, `job ${id} belongs to ${record.user}: only its owner may attach to it`);
      if (deps.engine().specOf(record).interactive === undefined) {
        throw new RouteError(409, `job ${id} is a batch job: it has no terminal to attach to`, `its output is in its output file (taras show ${id})`);
      }
      if (record.state === 'PENDING') throw new RouteError(409, `job ${id} has not started yet (PENDING)`, `taras when ${id} says when it should`);
      const ended = `job ${id} has ended: ${record.state}${record.exitCode === null ? '' : ` (exit code ${record.exitCode})`}${record.reason ? `: ${record.reason}` : ''}`;
      // An ended job's session waits for a late client for the grace (its output and exit code); past it there is nothing to attach to.
      const lingering = record.state !== 'RUNNING' && record.endTimeMs !== null && Date.now() - record.endTimeMs < deps.graceSeconds() * 1000;
      if (record.state !== 'RUNNING' && !lingering) throw new RouteError(409, ended);
      if (record.nodes.length === 0) throw new RouteError(409, ended);
      let upstream: WebSocket;
      try {
        upstream = await deps.openStream(record.nodes[0], id, record.requeueCount);
      } catch (error) {
        if (record.state !== 'RUNNING') throw new RouteError(409, ended);
        throw new RouteError(502, `cannot reach job ${id}'s session on ${record.nodes[0]}: ${(error as Error).message}`, 'try taras attach again in a moment');
      }
      let client: WebSocket;
      try {
        client = await accept();
      } catch (error) {
        upstream.terminate(); // the client left during the handshake: nothing keeps the session's stream open
        throw error;
      }
      relaySockets(client, upstream);
    },
  };
}
