// TARAS_CONTROLLER_UID: the uid a controller that does not run as root runs as. The CLI and the agents take
// a process of root's, their own user's or this uid's for the controller (and the CLI restricts its MUNGE
// credentials to it). No imports: the CLI loads it on every call.

/** The uid TARAS_CONTROLLER_UID gives (digits only), else undefined. */
export function givenControllerUid(): number | undefined {
  const given = process.env.TARAS_CONTROLLER_UID;
  return given !== undefined && /^\d+$/.test(given) ? Number(given) : undefined;
}
