import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../config/load.js';
import { tracingSettingsFromEnv } from './settings.js';

const YAML = 'model_list:\n  - model_name: m\n    params: { model: mock/x }\n';

describe('tracing settings from the OTEL_* variables (CONTRACT.md, Tracing)', () => {
  it('is off unless an OTLP endpoint is set', () => {
    expect(tracingSettingsFromEnv({})).toBeNull();
    expect(tracingSettingsFromEnv({ OTEL_SERVICE_NAME: 'x', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })).toBeNull();
    expect(tracingSettingsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' })).toBeNull();
  });

  it('is on with either endpoint variable; protobuf by default, JSON when asked, the traces variable winning', () => {
    expect(tracingSettingsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toEqual({ protocol: 'http/protobuf', captureContent: false });
    expect(tracingSettingsFromEnv({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://otlp.example.com/v1/traces', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })).toEqual({ protocol: 'http/json', captureContent: false });
    expect(tracingSettingsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' })?.protocol).toBe('http/json');
  });

  it('captures content only when OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT is true', () => {
    const on = (value: string) => tracingSettingsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: value })?.captureContent;
    expect(on('true')).toBe(true);
    expect(on('TRUE')).toBe(true);
    expect(on('1')).toBe(false);
    expect(on('false')).toBe(false);
  });

  it('OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none turn it off whatever else is set', () => {
    expect(tracingSettingsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' })).toBeNull();
    expect(tracingSettingsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' })).toBeNull();
  });

  it('refuses what it cannot honour, naming the variable; the config load says it is the environment', () => {
    expect(() => tracingSettingsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(/^OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" is not supported/);
    expect(() => tracingSettingsFromEnv({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'collector:4318' })).toThrow(/^OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "collector:4318" is not an http/);
    expect(() => tracingSettingsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'zipkin' })).toThrow(/^OTEL_TRACES_EXPORTER: "zipkin"/);
    expect(() => parseConfig(YAML, 'test.yaml', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(ConfigError);
    expect(() => parseConfig(YAML, 'test.yaml', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(/^environment: OTEL_EXPORTER_OTLP_PROTOCOL/);
    expect(parseConfig(YAML, 'test.yaml', {}).tracing).toBeNull();
    expect(parseConfig(YAML, 'test.yaml', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }).tracing).toEqual({ protocol: 'http/protobuf', captureContent: false });
  });
});
