/**
 * The gateway counters of GET /status (spec 000, Gateway status), kept on the front thread.
 *
 * They count what `/metrics` counts, by the same rule (docs/METRICS.md,
 * "/status and /metrics"): `total` is every answered request on the
 * provider routes (chat, embeddings), including 401s and requests the
 * client left (499); `success`, `client_errors` and `server_errors` are its
 * 2xx, 4xx and 5xx status classes.
 */
import { statusClass } from '../metrics/status-class.js';

export class Counters {
  readonly startedAt = Date.now();
  total = 0;
  inFlight = 0;
  streamsOpen = 0;
  success = 0;
  clientErrors = 0;
  serverErrors = 0;
  upstreamErrors = 0;

  record(status: number): void {
    this.total++;
    switch (statusClass(status)) {
      case '2xx':
        this.success++;
        break;
      case '4xx':
        this.clientErrors++;
        break;
      case '5xx':
        this.serverErrors++;
        break;
      default:
        // 1xx/3xx: the provider routes never answer them (an upstream 3xx becomes a 502).
        break;
    }
  }
}
