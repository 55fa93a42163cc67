// The logger the transport writes to: refused signatures, handler failures,
// replaced socket files. The controller and agents pass their own; tests pass
// a recorder. No imports, so it costs nothing on the CLI's start-up path.

export interface NetLog {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** For callers that do not care (one-shot CLI commands). */
export const silentLog: NetLog = { info() {}, warn() {}, error() {} };

/** Every level to one line writer (the daemons' log). */
export const lineLog = (write: (line: string) => void): NetLog => ({ info: write, warn: write, error: write });
