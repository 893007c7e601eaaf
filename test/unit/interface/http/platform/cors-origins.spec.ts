import { ConfigError, loadConfig } from '../../../../../src/infrastructure/platform/config.js';

describe('CORS_ORIGINS', () => {
  it('is off when unset or blank', () => {
    expect(loadConfig({}).corsOrigins).toEqual([]);
    expect(loadConfig({ CORS_ORIGINS: ' ' }).corsOrigins).toEqual([]);
  });

  it('lists exact origins, comma-separated, spaces around them ignored', () => {
    expect(
      loadConfig({ CORS_ORIGINS: 'https://shelter.example, http://localhost:8080,http://[::1]:3001' }).corsOrigins,
    ).toEqual(['https://shelter.example', 'http://localhost:8080', 'http://[::1]:3001']);
  });

  it.each([
    ['a path or trailing slash', 'https://shelter.example/'],
    ['a path', 'https://shelter.example/app'],
    ['no scheme', 'shelter.example'],
    ['another scheme', 'ftp://shelter.example'],
    ['a wildcard', '*'],
    ['the default port spelt out (browsers never send it)', 'https://shelter.example:443'],
    ['upper case (browsers send the host in lower case)', 'https://Shelter.example'],
    ['credentials', 'https://user@shelter.example'],
  ])('refuses %s with one line naming the variable and the value', (_, value) => {
    const read = () => loadConfig({ CORS_ORIGINS: `https://ok.example,${value}` });

    expect(read).toThrow(ConfigError);
    expect(read).toThrow(
      `CORS_ORIGINS must list origins such as https://app.example or http://localhost:8080 (scheme, host and port only), got "${value}"`,
    );
  });
});
