// STUB (IDENTITY branch): the MUNGE helper's src/net/munge.ts replaces this
// file at the merge. Same exports and signatures as agreed in the contract;
// this version refuses every credential and cannot encode, so nothing is ever
// trusted through it.

export const MUNGE_HEADER = 'x-taras-munge';

/** Hex sha256 of the request (method, path with query, body): the credential's payload binds it to this request. */
export function requestPayload(method: string, pathWithQuery: string, body: Uint8Array): string {
  return `stub:${method} ${pathWithQuery} ${body.length}`;
}

export async function mungeEncode(payload: string, opts: { socket?: string; restrictUid?: number; ttlSeconds?: number }): Promise<string> {
  void payload; void opts;
  throw new Error('MUNGE is not available in this build (src/net/munge.ts is a stub)');
}

export async function mungeVerify(credential: string, expectedPayload: string, opts: { socket?: string }):
Promise<{ ok: true; uid: number; gid: number } | { ok: false; reason: string; fix: string }> {
  void credential; void expectedPayload; void opts;
  return { ok: false, reason: 'MUNGE credentials are not supported by this build (stub)', fix: 'use the local socket or a token from `taras admin token`' };
}
