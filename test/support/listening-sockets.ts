/**
 * Which sockets listen on a loopback port, by inode, from /proc/net/tcp{,6}.
 *
 * "The port refuses" is a race once the tests run in parallel: another test's listen(0) may take a
 * port the moment it is freed. A socket's inode is unique for its life, so "the socket that server
 * listened on is closed" is the check that cannot be fooled by whoever listens next.
 */
import { readFileSync } from 'node:fs';

const LISTEN = '0A';

/** The inodes of the sockets listening on `port` now (IPv4 and IPv6, any address). */
export function listeningSockets(port: number): string[] {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const inodes: string[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue; // no IPv6 on this host
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
      if (fields.length < 10 || fields[3] !== LISTEN) continue;
      if (fields[1]!.split(':')[1] === hexPort) inodes.push(fields[9]!);
    }
  }
  return inodes;
}
