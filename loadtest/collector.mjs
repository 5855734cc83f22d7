// An OpenTelemetry collector for load runs that takes OTLP/HTTP exports and drops them: what the
// bench's tracing scenarios measure is what tracing costs the gateway, not a backend.
// Usage: node loadtest/collector.mjs [port]   GET /stats: {"exports":n,"bytes":n} so far.
import http from 'node:http';

const port = Number(process.argv[2] ?? 4318);
const stats = { exports: 0, bytes: 0 };
http
  .createServer((req, res) => {
    if (req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(stats));
      return;
    }
    req.on('data', (chunk) => (stats.bytes += chunk.length));
    req.on('end', () => {
      stats.exports++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  })
  .listen(port, '127.0.0.1', () => console.log(`listening ${port}`));
