// Relays an interactive job's frames (JSON text, one per WebSocket message or
// per line on the supervisor's Unix socket; src/agent/session.ts has the
// format) between two ends, closing each when the other closes. The controller
// relays CLI <-> agent, the agent relays controller <-> supervisor; neither
// reads the frames.

import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';

/** Largest frame relayed; a longer line or message closes both ends. */
const MAX_FRAME_BYTES = 4 * 1024 * 1024;

/** WebSocket <-> WebSocket (the controller). */
export function relaySockets(a: WebSocket, b: WebSocket): void {
  const forward = (from: WebSocket, to: WebSocket): void => {
    from.on('message', (data, isBinary) => {
      if (!isBinary && to.readyState === to.OPEN) to.send(data.toString());
    });
    from.on('close', () => to.close());
    from.on('error', () => to.terminate());
  };
  forward(a, b);
  forward(b, a);
  a.resume();
  b.resume();
}

/** WebSocket <-> JSON lines on a Unix socket (the agent and the supervisor's stream.sock). */
export function relayLines(webSocket: WebSocket, socket: Socket): void {
  let buffer = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buffer += chunk;
    for (let newline = buffer.indexOf('\n'); newline >= 0; newline = buffer.indexOf('\n')) {
      if (webSocket.readyState === webSocket.OPEN) webSocket.send(buffer.slice(0, newline));
      buffer = buffer.slice(newline + 1);
    }
    if (buffer.length > MAX_FRAME_BYTES) socket.destroy();
  });
  socket.on('close', () => webSocket.close());
  socket.on('error', () => webSocket.terminate());
  webSocket.on('message', (data, isBinary) => {
    const text = data.toString();
    // One frame per message: a message holding a newline would be two frames.
    if (!isBinary && !text.includes('\n') && socket.writable) socket.write(`${text}\n`);
  });
  webSocket.on('close', () => socket.end());
  webSocket.on('error', () => socket.destroy());
  webSocket.resume();
}
