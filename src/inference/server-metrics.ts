/**
 * The load figures of a self-hosted model server, read from its Prometheus
 * text (CONTRACT.md, "Inference-aware routing", Signals): waiting and
 * running requests and KV-cache use. The front thread's scraper (not written
 * yet) calls it on each replica's `/metrics` body; it is pure and never throws.
 *
 * Names, per `server_metrics`:
 *
 * | figure   | vllm                                                          | sglang                  |
 * |----------|---------------------------------------------------------------|-------------------------|
 * | waiting  | vllm:num_requests_waiting                                     | sglang:num_queue_reqs   |
 * | running  | vllm:num_requests_running                                     | sglang:num_running_reqs |
 * | kvCache  | vllm:kv_cache_usage_perc, else vllm:gpu_cache_usage_perc (the | sglang:token_usage      |
 * |          | name before vLLM 0.9, which later versions still show hidden) |                         |
 *
 * Several series of one name (vLLM labels each engine of a data-parallel
 * server `engine="0"`, `"1"`, …; SGLang its data-parallel ranks): the counts
 * are summed (each engine has its own queue and batch, and the replica's
 * load is all of them) and the KV-cache fraction is their mean (each engine
 * has a cache of the same size, so the mean is the share of the replica's
 * cache in use). Labels are not matched against the model: one server
 * process serves one model, and these gauges have no per-adapter series.
 *
 * Robustness: only lines that end in a newline are read (a body cut off
 * mid-line cannot turn "12" into "1"); past `maxChars` nothing is read;
 * comments, other metrics, malformed lines and bad label syntax are skipped;
 * a sample that is NaN or ±Inf is ignored (a figure with no finite sample is
 * absent, `null`); counts below 0 read as 0, a KV fraction is clamped to
 * [0, 1]. So a present figure is always a finite number.
 */

import type { ServerMetricsKind } from '../../protocol/config.js';

export type { ServerMetricsKind };

/** One scrape's figures; `null` where the text had no usable sample. */
export interface ServerFigures {
  waiting: number | null;
  running: number | null;
  /** KV-cache use, 0..1. */
  kvCache: number | null;
}

/** The most of a body that is read: vLLM's /metrics, histograms and all, is ~100-300 KB per engine. */
export const DEFAULT_MAX_METRICS_CHARS = 4 * 1024 * 1024;

interface Names {
  readonly waiting: string;
  readonly running: string;
  readonly kvCache: string;
  /** Read only when `kvCache` has no sample. */
  readonly kvCacheOld: string | null;
}

/** The metric names each server kind publishes (vLLM: docs/design/metrics.md and vllm/v1/metrics/loggers.py; SGLang: docs/references/production_metrics.md and its metrics collector). */
export const SERVER_METRIC_NAMES: Readonly<Record<ServerMetricsKind, Names>> = {
  vllm: { waiting: 'vllm:num_requests_waiting', running: 'vllm:num_requests_running', kvCache: 'vllm:kv_cache_usage_perc', kvCacheOld: 'vllm:gpu_cache_usage_perc' },
  sglang: { waiting: 'sglang:num_queue_reqs', running: 'sglang:num_running_reqs', kvCache: 'sglang:token_usage', kvCacheOld: null },
};

const WAITING = 0;
const RUNNING = 1;
const KV = 2;
const KV_OLD = 3;

/**
 * Reads the figures of a `kind` server from its exposition text.
 *
 * @example
 *   parseServerMetrics('vllm:num_requests_waiting{model_name="m",engine="0"} 3.0\n', 'vllm')
 *   // → { waiting: 3, running: null, kvCache: null }
 */
export function parseServerMetrics(text: string, kind: ServerMetricsKind, maxChars: number = DEFAULT_MAX_METRICS_CHARS): ServerFigures {
  const names = SERVER_METRIC_NAMES[kind];
  const wanted = [names.waiting, names.running, names.kvCache, names.kvCacheOld];
  const sums = [0, 0, 0, 0];
  const counts = [0, 0, 0, 0];
  const end = typeof text === 'string' ? Math.min(text.length, Math.max(0, maxChars)) : 0;
  let pos = 0;
  while (pos < end) {
    const nl = text.indexOf('\n', pos);
    // A last line with no newline may have been cut off: it is not read.
    if (nl < 0 || nl >= end) break;
    const lineEnd = nl > pos && text.charCodeAt(nl - 1) === 13 ? nl - 1 : nl;
    let at = pos;
    while (at < lineEnd && isBlank(text.charCodeAt(at))) at++;
    if (at < lineEnd && text.charCodeAt(at) !== 35 /* # */) {
      for (let w = 0; w < wanted.length; w++) {
        const name = wanted[w];
        if (name === null || name === undefined || !text.startsWith(name, at)) continue;
        const value = sampleValue(text, at + name.length, lineEnd);
        if (Number.isFinite(value)) {
          sums[w] = (sums[w] as number) + value;
          counts[w] = (counts[w] as number) + 1;
        }
        break;
      }
    }
    pos = nl + 1;
  }
  const kv = counts[KV] !== 0 ? KV : counts[KV_OLD] !== 0 ? KV_OLD : -1;
  return {
    waiting: counts[WAITING] === 0 ? null : Math.max(0, sums[WAITING] as number),
    running: counts[RUNNING] === 0 ? null : Math.max(0, sums[RUNNING] as number),
    kvCache: kv < 0 ? null : Math.min(1, Math.max(0, (sums[kv] as number) / (counts[kv] as number))),
  };
}

function isBlank(c: number): boolean {
  return c === 32 || c === 9;
}

/**
 * The value of a sample line whose metric name ended at `at`: after optional
 * `{labels}` and blanks, up to the next blank (a timestamp may follow). NaN when
 * the line is not a sample of exactly this name, or its value is not a number.
 */
function sampleValue(text: string, at: number, end: number): number {
  if (at >= end) return NaN;
  const c = text.charCodeAt(at);
  if (c === 123 /* { */) {
    at = skipLabels(text, at + 1, end);
    if (at < 0) return NaN;
  } else if (!isBlank(c)) return NaN; // a longer name (vllm:num_requests_waiting_by_reason, …)
  while (at < end && isBlank(text.charCodeAt(at))) at++;
  const start = at;
  while (at < end && !isBlank(text.charCodeAt(at))) at++;
  if (at === start) return NaN;
  return floatValue(text.slice(start, at));
}

/** A decimal float as Prometheus clients write one (Number() alone would take '', '0x1f', '0b1' and ' 1 '). */
const DECIMAL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/** Past the closing `}` of a label set that started at `at` (just after `{`), or -1 when it is not well formed. */
function skipLabels(text: string, at: number, end: number): number {
  let quoted = false;
  while (at < end) {
    const c = text.charCodeAt(at);
    if (quoted) {
      if (c === 92 /* \ */) at++;
      else if (c === 34 /* " */) quoted = false;
    } else if (c === 34) quoted = true;
    else if (c === 125 /* } */) return at + 1;
    at++;
  }
  return -1;
}

/** Prometheus' float syntax: Go's ParseFloat, with NaN, +Inf and -Inf (which Number() does not know). */
function floatValue(token: string): number {
  switch (token) {
    case '+Inf':
    case 'Inf':
      return Infinity;
    case '-Inf':
      return -Infinity;
    case 'NaN':
      return NaN;
    default:
      return DECIMAL.test(token) ? Number(token) : NaN;
  }
}
