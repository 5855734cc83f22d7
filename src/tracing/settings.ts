/**
 * Whether tracing is on, read from the standard OpenTelemetry variables
 * (CONTRACT.md, Tracing): on when `OTEL_EXPORTER_OTLP_ENDPOINT` or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set, unless `OTEL_SDK_DISABLED=true`
 * or `OTEL_TRACES_EXPORTER=none`. Only what Switchyard decides itself is read
 * here (on or off, the protocol, content capture); the OpenTelemetry SDK
 * reads the rest of the `OTEL_*` variables itself when it starts (endpoint,
 * headers, timeout, compression, sampler, resource, batch sizes), so they
 * work as its documentation says. Nothing here loads OpenTelemetry.
 */
export type OtlpProtocol = 'http/protobuf' | 'http/json';

export interface TracingSettings {
  /** `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, else `OTEL_EXPORTER_OTLP_PROTOCOL`; default `http/protobuf`. */
  readonly protocol: OtlpProtocol;
  /** `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`: messages go on the spans. */
  readonly captureContent: boolean;
}

/** A tracing variable that cannot be honoured; the message names it. */
export class TracingSettingsError extends Error {
  override name = 'TracingSettingsError';
}

const PROTOCOLS: readonly string[] = ['http/protobuf', 'http/json'] satisfies OtlpProtocol[];

/** Null when tracing is off. */
export function tracingSettingsFromEnv(env: Record<string, string | undefined>): TracingSettings | null {
  const set = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  };
  if (set('OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return null;
  const exporter = set('OTEL_TRACES_EXPORTER');
  if (exporter === 'none') return null;
  if (exporter !== undefined && exporter !== 'otlp') throw new TracingSettingsError(`OTEL_TRACES_EXPORTER: "${exporter}" is not supported (otlp or none)`);
  const traces = set('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const endpoint = traces ?? set('OTEL_EXPORTER_OTLP_ENDPOINT');
  if (endpoint === undefined) return null;
  const variable = traces !== undefined ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT';
  if (!/^https?:\/\/[^/]/.test(endpoint) || !URL.canParse(endpoint)) throw new TracingSettingsError(`${variable}: "${endpoint}" is not an http:// or https:// URL`);
  const protocolVariable = set('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') !== undefined ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocol = set(protocolVariable) ?? 'http/protobuf';
  if (!PROTOCOLS.includes(protocol)) throw new TracingSettingsError(`${protocolVariable}: "${protocol}" is not supported (http/protobuf or http/json: Switchyard exports over OTLP/HTTP)`);
  return Object.freeze({ protocol: protocol as OtlpProtocol, captureContent: set('OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT')?.toLowerCase() === 'true' });
}
