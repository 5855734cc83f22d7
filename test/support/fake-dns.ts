/**
 * A DNS server on loopback (UDP, dns2's server) that answers A and AAAA
 * questions from a table the test changes: what a headless Service's
 * records do as its pods come and go. Ask it through `dns_servers`
 * (`fake.server`). A name may be made to fail (SERVFAIL); a name not in
 * the table is NXDOMAIN. Every question is counted, so a test can wait for
 * the gateway's next resolutions instead of sleeping.
 *
 * @example
 * const dns = await startFakeDns();
 * dns.answer('replicas.test', ['127.0.0.1', '127.0.0.2']);
 * // params: { api_base: http://replicas.test:PORT/v1, replicas: dns, dns_servers: [dns.server] }
 */
import { isIP } from 'node:net';
import dns2 from 'dns2';
import { until } from './waits.js';

const { Packet } = dns2;

export interface FakeDns {
  /** `127.0.0.1:PORT`, for `dns_servers`. */
  readonly server: string;
  /** From now on `name` resolves to `addresses` (IPv4 as A, IPv6 as AAAA), or fails with SERVFAIL. */
  answer(name: string, addresses: readonly string[] | 'servfail'): void;
  /** Questions asked about `name` so far. */
  questions(name: string): number;
  /** Resolves once `n` more questions about `name` than now have been asked. */
  moreQuestions(name: string, n: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startFakeDns(): Promise<FakeDns> {
  const table = new Map<string, readonly string[] | 'servfail'>();
  const asked = new Map<string, number>();
  const server = dns2.createUDPServer((request, send) => {
    const response = Packet.createResponseFromRequest(request);
    for (const question of request.questions) {
      const name = question.name.toLowerCase();
      asked.set(name, (asked.get(name) ?? 0) + 1);
      const entry = table.get(name);
      if (entry === undefined) response.header.rcode = 3; // NXDOMAIN
      else if (entry === 'servfail') response.header.rcode = 2;
      else {
        const family = question.type === Packet.TYPE.A ? 4 : question.type === Packet.TYPE.AAAA ? 6 : 0;
        for (const address of entry) {
          if (isIP(address) === family) response.answers.push(Packet.createResourceFromQuestion(question, { ttl: 1, address }));
        }
      }
    }
    void send(response);
  });
  await server.listen(0, '127.0.0.1');
  const { port } = server.address();
  const count = (name: string) => asked.get(name.toLowerCase()) ?? 0;
  return {
    server: `127.0.0.1:${port}`,
    answer: (name, addresses) => void table.set(name.toLowerCase(), addresses),
    questions: count,
    async moreQuestions(name, n, timeoutMs = 3000) {
      const target = count(name) + n;
      await until(() => count(name) >= target, `${n} more DNS questions about ${name}`, timeoutMs);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
