// Relays an interactive job's frames (JSON text, one per WebSocket message or
// per line on the supervisor's Unix socket; src/agent/session.ts has the
// format) between two ends, closing each when the other closes. The controller
// relays CLI <-> agent, the agent relays controller <-> supervisor; neither
// reads the frames.

import type { Socket } from 'node:net';
import type { RawData, WebSocket } from 'ws';

const NEWLINE = 0x0a;

/** A message's bytes as one Buffer (ws hands a text message over as one). */
const asBuffer = (data: RawData): Buffer => (Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data));

/** Largest frame relayed; a longer line or message closes both ends. */
const MAX_FRAME_BYTES = 4 * 1024 * 1024;
/**
 * Backpressure: past this many bytes waiting to be sent to one end, reading
 * from the other stops until they are sent (a client that stops reading
 * stalls its job's output instead of filling the relay's memory).
 */
const HIGH_WATER_BYTES = 1024 * 1024;

/** Messages handed to ws and not yet to the system, per socket; and the close asked for once they are. */
const unsent = new WeakMap<WebSocket, number>();
const closeWhenDone = new WeakSet<WebSocket>();

/** Sends `data` on `to` as a text message, counted until ws has handed it to the system (closeWhenSent waits for it); then `done`. */
export function sendTracked(to: WebSocket, data: string | Buffer, done?: () => void): void {
  unsent.set(to, (unsent.get(to) ?? 0) + 1);
  to.send(data, { binary: false }, () => {
    const left = unsent.get(to)! - 1;
    unsent.set(to, left);
    done?.();
    if (left === 0 && closeWhenDone.has(to)) {
      closeWhenDone.delete(to);
      to.close();
    }
  });
}

/**
 * Closes `ws` once every message sent on it is with the system. ws's close() gives the far end 30 s to answer before
 * it destroys the socket, and a destroy drops what ws still holds: a reader that takes its output slowly (srun into
 * `less`, which reads no more than it can write) would lose the end of it. What the system holds still goes out.
 */
export function closeWhenSent(ws: WebSocket): void {
  if ((unsent.get(ws) ?? 0) === 0) ws.close();
  else closeWhenDone.add(ws);
}

/** Sends `data` on `to` as a text message; pauses `source` while `to` has more than HIGH_WATER_BYTES waiting, resuming once it has sent them. */
function sendPacing(to: WebSocket, data: Buffer, source: { pause(): void; resume(): void }): void {
  sendTracked(to, data, () => {
    if (to.bufferedAmount < HIGH_WATER_BYTES) source.resume();
  });
  if (to.bufferedAmount >= HIGH_WATER_BYTES) source.pause();
}

/** WebSocket <-> WebSocket (the controller). */
export function relaySockets(a: WebSocket, b: WebSocket): void {
  const forward = (from: WebSocket, to: WebSocket): void => {
    from.on('message', (data, isBinary) => {
      // As bytes: a frame is relayed, never read (most are a job's output, src/net/output-frame.ts).
      if (!isBinary && to.readyState === to.OPEN) sendPacing(to, asBuffer(data), from);
    });
    from.on('close', () => closeWhenSent(to));
    from.on('error', () => to.terminate());
  };
  forward(a, b);
  forward(b, a);
  a.resume();
  b.resume();
}

/** WebSocket <-> JSON lines on a Unix socket (the agent and the supervisor's stream.sock). */
export function relayLines(webSocket: WebSocket, socket: Socket): void {
  // Lines as bytes, never decoded: a line's pieces wait in `pending` until its newline comes.
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let waitingForDrain = false;
  socket.on('data', (chunk: Buffer) => {
    let from = 0;
    for (let newline = chunk.indexOf(NEWLINE); newline >= 0; newline = chunk.indexOf(NEWLINE, from)) {
      let line = chunk.subarray(from, newline);
      if (pendingBytes > 0) {
        line = Buffer.concat([...pending, line]);
        pending = [];
        pendingBytes = 0;
      }
      if (webSocket.readyState === webSocket.OPEN) sendPacing(webSocket, line, socket);
      from = newline + 1;
    }
    if (from < chunk.length) {
      pending.push(chunk.subarray(from));
      pendingBytes += chunk.length - from;
    }
    if (pendingBytes > MAX_FRAME_BYTES) socket.destroy();
  });
  socket.on('close', () => closeWhenSent(webSocket));
  socket.on('error', () => webSocket.terminate());
  webSocket.on('message', (data, isBinary) => {
    const text = data.toString();
    // One frame per message: a message holding a newline would be two frames.
    if (isBinary || text.includes('\n') || !socket.writable) return;
    // The other way too: a session that does not read its input stops this client's messages, not the relay's memory.
    if (!socket.write(`${text}\n`) && !waitingForDrain) {
      waitingForDrain = true;
      webSocket.pause();
      socket.once('drain', () => {
        waitingForDrain = false;
        webSocket.resume();
      });
    }
  });
  webSocket.on('close', () => socket.end());
  webSocket.on('error', () => socket.destroy());
  webSocket.resume();
}
