import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { envFileSettings, loadConfig } from '../../../../src/infrastructure/platform/config.js';
import { refusal } from '../../../support/config.js';
import { tempDir } from '../../../support/temp-dirs.js';

const ENDPOINT = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };

describe('loadConfig: tracingEndpoint', () => {
  it('is off without an OTLP endpoint, whatever other OTEL_* say', () => {
    expect(loadConfig({}).tracingEndpoint).toBeNull();
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ', OTEL_SERVICE_NAME: 'petstore' }).tracingEndpoint).toBeNull();
  });

  it('takes the traces endpoint over the general one', () => {
    expect(loadConfig(ENDPOINT).tracingEndpoint).toBe('http://collector:4318');
    expect(
      loadConfig({ ...ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://traces:4318/v1/traces' }).tracingEndpoint,
    ).toBe('http://traces:4318/v1/traces');
  });

  it('is off when OTEL_SDK_DISABLED is true, as the specification says', () => {
    expect(loadConfig({ ...ENDPOINT, OTEL_SDK_DISABLED: 'TRUE' }).tracingEndpoint).toBeNull();
  });

  it('accepts the standard settings', () => {
    expect(
      loadConfig({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'https://collector.example:4318',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0.25',
      }).tracingEndpoint,
    ).toBe('https://collector.example:4318');
  });

  it.each([
    'always_on',
    'always_off',
    'traceidratio',
    'parentbased_always_on',
    'parentbased_always_off',
    'parentbased_traceidratio',
  ])('accepts the sampler %s', (sampler) => {
    expect(loadConfig({ ...ENDPOINT, OTEL_TRACES_SAMPLER: sampler }).tracingEndpoint).toBe('http://collector:4318');
  });

  it('names the sampler a wrong ratio was given for', () => {
    expect(refusal({ ...ENDPOINT, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '2' })).toBe(
      'OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1 for traceidratio (got "2")',
    );
  });

  it.each([
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, /^OTEL_EXPORTER_OTLP_ENDPOINT must be an http/],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'not a url' }, /^OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must be an http/],
    [
      { ...ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'http' },
      /^OTEL_EXPORTER_OTLP_PROTOCOL must be one of http\/protobuf, http\/json, grpc/,
    ],
    [{ ...ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'json' }, /^OTEL_EXPORTER_OTLP_TRACES_PROTOCOL must be one of/],
    [
      { ...ENDPOINT, OTEL_TRACES_SAMPLER: 'sometimes' },
      /^OTEL_TRACES_SAMPLER must be one of always_on, .*\(got "sometimes"\)/,
    ],
    [
      { ...ENDPOINT, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '1.5' },
      /^OTEL_TRACES_SAMPLER_ARG must be a ratio/,
    ],
    [
      { ...ENDPOINT, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: 'half' },
      /^OTEL_TRACES_SAMPLER_ARG /,
    ],
  ])('refuses to start, naming the variable at fault, in %j', (env, message) => {
    expect(refusal(env)).toMatch(message);
  });

  it('leaves the OTEL_* settings alone while tracing is off', () => {
    expect(loadConfig({ OTEL_TRACES_SAMPLER: 'sometimes' }).tracingEndpoint).toBeNull();
  });
});

describe('envFileSettings', () => {
  const file = path.join(tempDir('petstore-env-'), '.env');
  writeFileSync(
    file,
    ['PORT=4000', 'OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318', "LOG_LEVEL='warn'", ''].join('\n'),
  );

  it('takes every setting of the file', () => {
    expect(envFileSettings(file, {})).toEqual({
      PORT: '4000',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      LOG_LEVEL: 'warn',
    });
  });

  it('leaves what the environment sets: real environment variables win', () => {
    expect(envFileSettings(file, { LOG_LEVEL: 'debug', PORT: '' })).toEqual({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
    });
  });

  it('is empty without a file', () => {
    expect(envFileSettings(path.join(path.dirname(file), 'none'), {})).toEqual({});
  });
});
