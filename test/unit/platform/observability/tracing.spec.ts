import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  tracingEndpoint,
  tracingSettingsFromEnvFile,
  tracingSettingsProblem,
} from '../../../../src/platform/observability/tracing.js';

describe('tracingEndpoint', () => {
  it('is off without an OTLP endpoint, whatever other OTEL_* say', () => {
    expect(tracingEndpoint({})).toBeNull();
    expect(tracingEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ', OTEL_SERVICE_NAME: 'petstore' })).toBeNull();
  });

  it('takes the traces endpoint over the general one', () => {
    expect(tracingEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe('http://collector:4318');
    expect(
      tracingEndpoint({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://traces:4318/v1/traces',
      }),
    ).toBe('http://traces:4318/v1/traces');
  });

  it('is off when OTEL_SDK_DISABLED is true, as the specification says', () => {
    expect(
      tracingEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'TRUE' }),
    ).toBeNull();
  });
});

describe('tracingSettingsProblem', () => {
  it('accepts the standard settings', () => {
    expect(
      tracingSettingsProblem({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'https://collector.example:4318',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0.25',
      }),
    ).toBeNull();
  });

  it.each([
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, /^OTEL_EXPORTER_OTLP_ENDPOINT must be an http/],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'not a url' }, /^OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must be an http/],
    [
      { OTEL_EXPORTER_OTLP_PROTOCOL: 'http' },
      /^OTEL_EXPORTER_OTLP_PROTOCOL must be one of http\/protobuf, http\/json, grpc/,
    ],
    [{ OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'json' }, /^OTEL_EXPORTER_OTLP_TRACES_PROTOCOL must be one of/],
    [{ OTEL_TRACES_SAMPLER: 'sometimes' }, /^OTEL_TRACES_SAMPLER must be one of always_on, /],
    [
      { OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '1.5' },
      /^OTEL_TRACES_SAMPLER_ARG must be a ratio/,
    ],
    [{ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: 'half' }, /^OTEL_TRACES_SAMPLER_ARG /],
  ])('names the variable at fault in %j', (env, message) => {
    expect(tracingSettingsProblem(env)).toMatch(message);
  });

  it('quotes what it got', () => {
    expect(tracingSettingsProblem({ OTEL_TRACES_SAMPLER: 'sometimes' })).toContain('(got "sometimes")');
  });
});

describe('tracingSettingsFromEnvFile', () => {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'petstore-env-')), '.env');
  writeFileSync(
    file,
    ['PORT=4000', 'OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318', "OTEL_SERVICE_NAME='from-file'", ''].join('\n'),
  );

  it('takes the OTEL_* settings of .env, and nothing else', () => {
    expect(tracingSettingsFromEnvFile(file, {})).toEqual({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      OTEL_SERVICE_NAME: 'from-file',
    });
  });

  it('leaves what the environment sets, as the service does with the rest of .env', () => {
    expect(tracingSettingsFromEnvFile(file, { OTEL_SERVICE_NAME: 'from-env' })).toEqual({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
    });
  });

  it('is empty without a .env', () => {
    expect(tracingSettingsFromEnvFile(path.join(path.dirname(file), 'none'), {})).toEqual({});
  });
});
