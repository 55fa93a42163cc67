// A command on a real terminal (node-pty), for the tests about terminals: its
// output so far, a wait for a pattern in it, and its exit code.

import { createRequire } from 'node:module';
import type { IPty } from 'node-pty';
import { eventually } from './poll.js';

const pty = createRequire(import.meta.url)('node-pty') as typeof import('node-pty');

export interface OnTerminal {
  readonly terminal: IPty;
  output(): string;
  /** The exit code. */
  readonly exited: Promise<number>;
  /** Resolves once the output (from `from` on) matches; fails after `ms`. */
  waitFor(pattern: RegExp, ms?: number, from?: number): Promise<void>;
}

/**
 * Starts `command` on a terminal of `cols` x `rows` with exactly `env`; the
 * terminal is added to `terminals`, which the caller kills when it is done.
 */
export function onTerminal(command: string, args: readonly string[], options: { cwd: string; env: Record<string, string>; cols?: number; rows?: number }, terminals: IPty[]): OnTerminal {
  const terminal = pty.spawn(command, [...args], { cols: options.cols ?? 100, rows: options.rows ?? 30, cwd: options.cwd, env: options.env });
  terminals.push(terminal);
  let output = '';
  terminal.onData((data) => (output += data));
  const exited = new Promise<number>((resolveExit) => terminal.onExit(({ exitCode }) => resolveExit(exitCode)));
  return {
    terminal,
    output: () => output,
    exited,
    async waitFor(pattern: RegExp, ms = 10_000, from = 0): Promise<void> {
      await eventually(() => `${pattern}; the terminal shows:\n${JSON.stringify(output)}`, () => pattern.test(output.slice(from)), ms, 25);
    },
  };
}

/** SIGKILLs each terminal's process that is still there. */
export function killTerminals(terminals: readonly IPty[]): void {
  for (const terminal of terminals) {
    try {
      process.kill(terminal.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}
