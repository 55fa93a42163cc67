// Who runs this process, for the CLI's display and defaults (`taras cancel
// --all` lists your jobs, the submit summary names you). Never sent as a
// claim: the controller verifies callers itself (identity.ts). Apart from
// identity.ts so the CLI bundle does not carry the server's verification.

import { userInfo } from 'node:os';

export interface Identity {
  readonly user: string;
  readonly uid: number;
}

let cached: Identity | undefined;

/** The user running this process. */
export function localIdentity(): Identity {
  if (cached === undefined) {
    const info = userInfo();
    cached = { user: info.username, uid: info.uid };
  }
  return cached;
}
