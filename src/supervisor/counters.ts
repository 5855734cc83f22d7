/** The gateway counters of GET /status (spec 000, Gateway status), kept on the front thread. */
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
    if (status < 400) this.success++;
    else if (status < 500) this.clientErrors++;
    else this.serverErrors++;
  }
}
