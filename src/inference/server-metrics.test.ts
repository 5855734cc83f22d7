import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseServerMetrics, SERVER_METRIC_NAMES, type ServerMetricsKind } from './server-metrics.js';

/** Exposition text written from the servers' docs; each file's header cites its source. */
const fixture = (name: string): string => readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');

describe('server metrics: the servers\' own text', () => {
  it('vLLM V1 (both KV-cache names shown): the new name is read', () => {
    expect(parseServerMetrics(fixture('vllm.prom'), 'vllm')).toEqual({ waiting: 3, running: 8, kvCache: 0.4375 });
  });

  it('an older vLLM with only vllm:gpu_cache_usage_perc', () => {
    expect(parseServerMetrics(fixture('vllm-old.prom'), 'vllm')).toEqual({ waiting: 12, running: 5, kvCache: 0.9123 });
  });

  it('the new KV-cache name wins over the old one, whichever comes first', () => {
    const text = 'vllm:gpu_cache_usage_perc{engine="0"} 0.2\nvllm:kv_cache_usage_perc{engine="0"} 0.7\n';
    expect(parseServerMetrics(text, 'vllm').kvCache).toBe(0.7);
    expect(parseServerMetrics(text.split('\n').reverse().join('\n') + '\n', 'vllm').kvCache).toBe(0.7);
  });

  it('vLLM data-parallel engines: counts summed, KV-cache use averaged', () => {
    expect(parseServerMetrics(fixture('vllm-data-parallel.prom'), 'vllm')).toEqual({ waiting: 4, running: 25, kvCache: 0.6 });
  });

  it('SGLang', () => {
    expect(parseServerMetrics(fixture('sglang.prom'), 'sglang')).toEqual({ waiting: 2826, running: 28, kvCache: 0.28 });
  });

  it('each kind reads only its own names', () => {
    expect(parseServerMetrics(fixture('sglang.prom'), 'vllm')).toEqual({ waiting: null, running: null, kvCache: null });
    expect(parseServerMetrics(fixture('vllm.prom'), 'sglang')).toEqual({ waiting: null, running: null, kvCache: null });
    expect(SERVER_METRIC_NAMES.vllm.kvCacheOld).toBe('vllm:gpu_cache_usage_perc');
  });
});

describe('server metrics: what the text may hold', () => {
  const vllm = (text: string) => parseServerMetrics(text, 'vllm');

  it('no labels, timestamps, blanks and tabs, CRLF, exponents', () => {
    expect(vllm('vllm:num_requests_waiting 2\r\n  vllm:num_requests_running\t1e1 1700000000000\r\nvllm:kv_cache_usage_perc{} 5e-1\n')).toEqual({ waiting: 2, running: 10, kvCache: 0.5 });
  });

  it('label values with braces, quotes, escapes and blanks', () => {
    expect(vllm('vllm:num_requests_waiting{model_name="a} \\"b\\" {c\\\\",engine="0"} 7.0\n').waiting).toBe(7);
  });

  it('a longer name that starts with a wanted one is another metric', () => {
    expect(vllm('vllm:num_requests_waiting_by_reason{reason="capacity"} 9\nvllm:num_requests_waiting_total 4\n').waiting).toBeNull();
  });

  it('comments and # TYPE lines naming the metric are not samples', () => {
    expect(vllm('# vllm:num_requests_waiting 5\n#vllm:num_requests_waiting 6\n  # HELP vllm:num_requests_waiting 7\n').waiting).toBeNull();
  });

  it('NaN and ±Inf samples are left out; a figure with no finite sample is absent', () => {
    expect(vllm('vllm:num_requests_waiting NaN\nvllm:num_requests_running +Inf\nvllm:kv_cache_usage_perc -Inf\n')).toEqual({ waiting: null, running: null, kvCache: null });
    expect(vllm('vllm:num_requests_waiting{engine="0"} NaN\nvllm:num_requests_waiting{engine="1"} 3\n').waiting).toBe(3);
  });

  it('negative counts read 0, a KV fraction is clamped to [0, 1]', () => {
    expect(vllm('vllm:num_requests_waiting -2\nvllm:kv_cache_usage_perc 1.7\n')).toEqual({ waiting: 0, running: null, kvCache: 1 });
    expect(vllm('vllm:kv_cache_usage_perc -0.1\n').kvCache).toBe(0);
  });

  it('a body cut off mid-line: the last line, with no newline, is not read', () => {
    const whole = 'vllm:num_requests_running 3\nvllm:num_requests_waiting 12\n';
    expect(vllm(whole).waiting).toBe(12);
    expect(vllm(whole.slice(0, -2))).toEqual({ waiting: null, running: 3, kvCache: null });
    const cut = fixture('vllm.prom');
    for (let at = 0; at <= cut.length; at += 97) expect(() => vllm(cut.slice(0, at))).not.toThrow();
  });

  it('nothing past the size cap is read', () => {
    const text = 'x'.repeat(100) + '\nvllm:num_requests_waiting 4\n';
    expect(parseServerMetrics(text, 'vllm', 100).waiting).toBeNull();
    expect(parseServerMetrics(text, 'vllm', 200).waiting).toBe(4);
  });

  it('garbage, binary, HTML error pages, JSON, empty values and odd numbers are no figures', () => {
    for (const text of ['', '\n\n', '<html><body>502 Bad Gateway</body></html>\n', '{"detail":"Not Found"}\n', '\u0000\u0001\uffff\n', 'vllm:num_requests_waiting\n', 'vllm:num_requests_waiting{engine="0"\n', 'vllm:num_requests_waiting{engine="0} 3\n', 'vllm:num_requests_waiting abc\n', 'vllm:num_requests_waiting 0x1f\n', 'vllm:num_requests_waiting {} \n']) {
      expect(vllm(text)).toEqual({ waiting: null, running: null, kvCache: null });
    }
    expect(parseServerMetrics(undefined as unknown as string, 'vllm')).toEqual({ waiting: null, running: null, kvCache: null });
  });
});

describe('server metrics: properties', () => {
  const kinds = fc.constantFrom<ServerMetricsKind>('vllm', 'sglang');
  const names = fc.constantFrom(...Object.values(SERVER_METRIC_NAMES).flatMap((n) => [n.waiting, n.running, n.kvCache, n.kvCacheOld]).filter((n): n is string => n !== null));
  const values = fc.oneof(fc.double().map(String), fc.constantFrom('NaN', '+Inf', '-Inf', 'Inf', '', '1e309', '-0', '.5', '+3', '1_0'), fc.string({ maxLength: 6 }));
  const labels = fc.oneof(fc.constant(''), fc.string({ maxLength: 20 }).map((s) => `{${s}}`), fc.string({ maxLength: 10 }).map((s) => `{model_name=${JSON.stringify(s)},engine="0"}`));
  const line = fc.oneof(
    fc.tuple(names, labels, fc.constantFrom(' ', '\t', '  '), values, fc.constantFrom('', ' 1700000000')).map(([n, l, sp, v, ts]) => `${n}${l}${sp}${v}${ts}`),
    fc.string({ maxLength: 40 }),
    names.map((n) => `# HELP ${n} something`),
  );
  const body = fc.tuple(fc.array(line, { maxLength: 30 }), fc.constantFrom('\n', '\r\n'), fc.boolean()).map(([lines, eol, cut]) => lines.join(eol) + (cut ? '' : eol));

  it('never throws, and a present figure is finite: counts ≥ 0, KV use in [0, 1]', () => {
    fc.assert(
      fc.property(body, kinds, fc.integer({ min: 0, max: 2000 }), (text, kind, cap) => {
        const f = parseServerMetrics(text, kind, cap);
        for (const v of [f.waiting, f.running]) if (v !== null) expect(Number.isFinite(v) && v >= 0).toBe(true);
        if (f.kvCache !== null) expect(Number.isFinite(f.kvCache) && f.kvCache >= 0 && f.kvCache <= 1).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('never throws on any text at all', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 300 }), kinds, (text, kind) => {
        const f = parseServerMetrics(text, kind);
        for (const v of [f.waiting, f.running, f.kvCache]) expect(v === null || Number.isFinite(v)).toBe(true);
      }),
    );
  });

  it('a well-formed gauge is read whatever surrounds it', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ maxLength: 30 }).filter((s) => !s.includes('vllm:num_requests_waiting')), { maxLength: 10 }), fc.nat(1000), (junk, n) => {
        const text = [...junk, `vllm:num_requests_waiting{model_name="m",engine="0"} ${n}.0`, ...junk].join('\n') + '\n';
        expect(parseServerMetrics(text, 'vllm').waiting).toBe(n);
      }),
    );
  });
});
