// Who holds the other end of a TCP connection made on this machine, as
// SO_PEERCRED tells it for a Unix socket: TCP has no such call, but the
// kernel lists every socket of this network namespace with its owner's uid
// in /proc/net/tcp and tcp6, the accepted end of a connection (still in the
// listener's queue or taken by accept) under the listener's uid. Only
// node:fs and node:net: on `taras submit`'s path.

import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { isIPv4 } from 'node:net';

/** An address as 16 bytes in hex, IPv4 as IPv4-mapped IPv6 (a dual-stack listener's end is listed so). */
function addressKey(text: string): string | undefined {
  let address = text.replace(/^\[|\]$/g, '').toLowerCase();
  const zone = address.indexOf('%');
  if (zone >= 0) address = address.slice(0, zone);
  const v4 = (dotted: string): string | undefined => {
    if (!isIPv4(dotted)) return undefined;
    return dotted.split('.').map((part) => Number(part).toString(16).padStart(2, '0')).join('');
  };
  if (!address.includes(':')) {
    const bytes = v4(address);
    return bytes === undefined ? undefined : `${'0'.repeat(20)}ffff${bytes}`;
  }
  // A dotted tail (::ffff:127.0.0.1) is two groups.
  const tail = /:(\d+\.\d+\.\d+\.\d+)$/.exec(address);
  if (tail !== null) {
    const bytes = v4(tail[1]);
    if (bytes === undefined) return undefined;
    address = `${address.slice(0, tail.index)}:${bytes.slice(0, 4)}:${bytes.slice(4)}`;
  }
  const halves = address.split('::');
  if (halves.length > 2) return undefined;
  const groups = (half: string) => (half === '' ? [] : half.split(':'));
  const head = groups(halves[0]);
  const rest = halves.length === 2 ? groups(halves[1]) : [];
  const missing = 8 - head.length - rest.length;
  if (missing < 0 || (halves.length === 1 && missing !== 0)) return undefined;
  const all = [...head, ...Array<string>(missing).fill('0'), ...rest];
  if (!all.every((group) => /^[0-9a-f]{1,4}$/.test(group))) return undefined;
  return all.map((group) => group.padStart(4, '0')).join('');
}

/** /proc's form of an address: 32-bit words in the machine's order (little-endian here), so each word's bytes reversed. */
function procAddressKey(hex: string): string | undefined {
  if (!/^[0-9A-Fa-f]+$/.test(hex) || (hex.length !== 8 && hex.length !== 32)) return undefined;
  let bytes = '';
  for (let word = 0; word < hex.length; word += 8) {
    for (let byte = 6; byte >= 0; byte -= 2) bytes += hex.slice(word + byte, word + byte + 2);
  }
  bytes = bytes.toLowerCase();
  return hex.length === 8 ? `${'0'.repeat(20)}ffff${bytes}` : bytes;
}

/** One row of /proc/net/tcp(6): its local and remote ends, its state (0A listening, 01 established) and owner. */
interface SocketRow {
  readonly local: string;
  readonly remote: string;
  readonly state: string;
  readonly uid: number;
}

/** The kernel's tables of TCP sockets, IPv4 and IPv6. */
const TABLES = ['/proc/net/tcp', '/proc/net/tcp6'];

/** The text of /proc/net/tcp and tcp6 (a table that cannot be read: none). */
function readTables(): string[] {
  const texts: string[] = [];
  for (const table of TABLES) {
    try {
      texts.push(readFileSync(table, 'utf8'));
    } catch {
      // no IPv6 (or no /proc): that table lists nothing
    }
  }
  return texts;
}

function socketRows(tables: readonly string[]): SocketRow[] {
  const rows: SocketRow[] = [];
  for (const text of tables) {
    for (const line of text.split('\n').slice(1)) {
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid ...
      const fields = line.trim().split(/\s+/);
      if (fields.length < 8) continue;
      const end = (field: string): string | undefined => {
        const [hex, port] = field.split(':');
        const key = procAddressKey(hex ?? '');
        return key === undefined || port === undefined ? undefined : `${key}:${Number.parseInt(port, 16)}`;
      };
      const local = end(fields[1]);
      const remote = end(fields[2]);
      if (local !== undefined && remote !== undefined) rows.push({ local, remote, state: fields[3], uid: Number(fields[7]) });
    }
  }
  return rows;
}

export interface TcpEnds {
  readonly localAddress?: string;
  readonly localPort?: number;
  readonly remoteAddress?: string;
  readonly remotePort?: number;
}

/**
 * The uid owning the far end of a connected TCP socket, when that end is a socket of this machine's network
 * namespace: the listener's uid, whether or not it has accepted the connection yet (also on kernels that list
 * an end not accepted yet as uid 0). Undefined when neither it nor a listener on its address and port is
 * listed: another machine, another namespace (a port forwarded into a container), or an end gone to
 * TIME_WAIT (which reads nothing sent to it).
 */
export function tcpPeerUid(socket: TcpEnds): number | undefined {
  return peerUidIn(readTables(), socket);
}

/** The tables read without blocking (in libuv's threads); a table that cannot be read lists nothing. */
async function readTablesAsync(): Promise<string[]> {
  const texts = await Promise.all(TABLES.map((table) => readFile(table, 'utf8').catch(() => undefined)));
  return texts.filter((text): text is string => text !== undefined);
}

/** The read in flight, and the one that starts once it is done (every caller that came meanwhile shares it). */
let reading: Promise<string[]> | undefined;
let queued: Promise<string[]> | undefined;

/**
 * The tables as a read begun after this call finds them (one already under way may have passed a connection made
 * since): calls that come while a read is under way share the next one, so a burst of connections costs two reads,
 * not one each. A read takes milliseconds to tens of them on a busy machine (the kernel walks its whole table):
 * the controller checks each connection it opens to an agent, and must not stop for them.
 */
function freshTables(): Promise<string[]> {
  if (reading === undefined) {
    const started = readTablesAsync().finally(() => {
      if (reading === started) reading = undefined;
    });
    reading = started;
    return started;
  }
  queued ??= reading.then(() => {
    queued = undefined;
    return freshTables();
  }, () => {
    queued = undefined;
    return freshTables();
  });
  return queued;
}

/** tcpPeerUid without blocking: the tables are read asynchronously, by a read shared with the checks that come meanwhile. */
export async function tcpPeerUidAsync(socket: TcpEnds): Promise<number | undefined> {
  return peerUidIn(await freshTables(), socket);
}

/** tcpPeerUid with the tables' text given (/proc/net/tcp, tcp6). */
function peerUidIn(tables: readonly string[], socket: TcpEnds): number | undefined {
  const { localAddress, localPort, remoteAddress, remotePort } = socket;
  if (localAddress === undefined || localPort === undefined || remoteAddress === undefined || remotePort === undefined) return undefined;
  const ours = addressKey(localAddress);
  const theirs = addressKey(remoteAddress);
  if (ours === undefined || theirs === undefined) return undefined;
  const far = `${theirs}:${remotePort}`;
  const near = `${ours}:${localPort}`;
  const rows = socketRows(tables);
  // Any state but TIME_WAIT (06: no owner, listed as uid 0, and nothing there reads): an end shut for writing
  // (FIN_WAIT2) still reads what is sent to it.
  const end = rows.find((row) => row.state !== '06' && row.state !== '0A' && row.local === far && row.remote === near);
  if (end !== undefined && end.uid !== 0) return end.uid;
  // Uid 0 is no owner before Linux 6.17 (sock_i_uid: a socket no process holds), which an accepted end is
  // until its listener's process calls accept(): it can read it then, so that listener's owner is the far
  // end's. So is it when the end is not listed (a table read while it changed) on a connection within this
  // machine (its two ends on one address, as the kernel picks them): the listener on its address (or a
  // wildcard, 0.0.0.0 or a dual-stack ::) and port. Another machine's end is not this machine's listener's.
  if (end === undefined && theirs !== ours) return undefined;
  const wildcards = [addressKey('::'), ...(theirs.startsWith(`${'0'.repeat(20)}ffff`) ? [addressKey('0.0.0.0')] : [])].map((key) => `${key}:${remotePort}`);
  const listener = rows.find((row) => row.state === '0A' && (row.local === far || wildcards.includes(row.local)));
  return listener?.uid ?? end?.uid;
}

export const forTests = { addressKey, procAddressKey, peerUidIn };
