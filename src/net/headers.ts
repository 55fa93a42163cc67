// The x-taras-* header names of the signature scheme, apart from hmac.ts so the
// CLI's client can name them without loading node:crypto.

export const TIMESTAMP_HEADER = 'x-taras-timestamp';
export const NONCE_HEADER = 'x-taras-nonce';
export const SIGNATURE_HEADER = 'x-taras-signature';
/** Whom a signed request is for: `controller`, or an agent's nodes, address and boot id (see hmac.ts). */
export const DESTINATION_HEADER = 'x-taras-destination';
/** The SHA-256 of the body a signed request carries, signed with it: the signature can be checked before the body is read. */
export const BODY_DIGEST_HEADER = 'x-taras-body-sha256';
/** The destination of requests to the controller. */
export const CONTROLLER_DESTINATION = 'controller';
/** A MUNGE credential made for the request (munge.ts); here so the server can look for it without loading munge.ts. */
export const MUNGE_HEADER = 'x-taras-munge';
/** On a 401 for a failed key check: the RefusalCode, so a client can tell it from other 401s. */
export const REFUSED_HEADER = 'x-taras-refused';
