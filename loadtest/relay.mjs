// The first calibration point, run beside the gateway in `npm run bench`: a bare
// single-thread relay, uWebSockets.js in front and undici's Pool.request behind, the body passed
// through both ways. No auth, no validation, no metrics, no logs, no limits, no deadlines. It is the
// floor a Node gateway on this stack stands on, measured in the same run and pinning as Switchyard,
// so a missed target can be read against what a relay with no features at all does here today.
// Not a server to run anywhere else: it trusts its client and its upstream completely.
//
// Usage: node loadtest/relay.mjs <port> <upstream base URL>   (port 0: any free one; prints "listening <port>",
// and GET /ready answers 200, once listening; SIGTERM exits cleanly, so `node --cpu-prof` writes its profile)
import uws from 'uWebSockets.js';
import { Pool } from 'undici';

const port = Number(process.argv[2]);
const pool = new Pool(process.argv[3], { connections: 256 });
const UPSTREAM_HEADERS = { 'content-type': 'application/json', authorization: 'Bearer upstream-key' };

function relay(res, path, body) {
  pool.request({ path, method: 'POST', headers: UPSTREAM_HEADERS, body }).then(({ statusCode, headers, body: answer }) => {
    if (res.aborted) return void answer.dump().catch(() => {});
    res.answer = answer; // destroyed by the one onAborted handler if the client leaves
    // An answer cut off (the upstream failed, or the client left and it was destroyed) ends the response.
    answer.on('error', () => { if (!res.aborted) res.close(); });
    const status = String(statusCode);
    const type = String(headers['content-type'] ?? 'application/json');
    if (!type.startsWith('text/event-stream')) {
      const parts = [];
      answer.on('data', (d) => parts.push(d));
      answer.on('end', () => {
        if (!res.aborted) res.cork(() => res.writeStatus(status).writeHeader('content-type', type).end(Buffer.concat(parts)));
      });
      return;
    }
    // A stream goes out chunk by chunk as it arrives (chunked transfer encoding), as a gateway must.
    res.cork(() => res.writeStatus(status).writeHeader('content-type', type));
    answer.on('data', (d) => { if (!res.aborted) res.cork(() => res.write(d)); });
    answer.on('end', () => { if (!res.aborted) res.cork(() => res.end()); });
  }, () => {
    if (!res.aborted) res.cork(() => res.writeStatus('502').end());
  });
}

uws.App()
  .get('/ready', (res) => res.end('ok'))
  .post('/*', (res, req) => {
    const path = req.getUrl();
    const parts = [];
    res.onAborted(() => {
      res.aborted = true;
      res.answer?.destroy();
    });
    res.onData((chunk, last) => {
      parts.push(Buffer.from(chunk.slice(0)));
      if (last) relay(res, path, parts.length === 1 ? parts[0] : Buffer.concat(parts));
    });
  })
  .listen('127.0.0.1', port, (socket) => {
    if (!socket) {
      console.error(`relay: cannot listen on ${port}`);
      process.exit(1);
    }
    console.log(`listening ${uws.us_socket_local_port(socket)}`);
  });

process.on('SIGTERM', () => process.exit(0));
