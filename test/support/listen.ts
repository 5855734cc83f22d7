/** The listening part every fake upstream shares. */
import type { Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * Listens on an ephemeral loopback port and keeps the open sockets, so a fake
 * can close or reset its connections at will (a reset mid-body, a quick close).
 */
export async function listenOnLoopback(server: Server): Promise<{ port: number; sockets: Set<Socket> }> {
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return { port: (server.address() as AddressInfo).port, sockets };
}
