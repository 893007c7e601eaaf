import { authorized, useService } from '../support/server.js';

const service = useService({
  servers: { production: 'https://petstore.example.com/v1', staging: '/v1' },
});

/** The headers helmet sets, as NestJS's security guide has it. */
const HELMET_HEADERS = {
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'origin-agent-cluster': '?1',
  'x-dns-prefetch-control': 'off',
  'x-download-options': 'noopen',
  'x-permitted-cross-domain-policies': 'none',
  'x-xss-protection': '0',
};

function directives(response: Response): Map<string, string> {
  const policy = response.headers.get('content-security-policy') ?? '';
  return new Map(
    policy
      .split(';')
      .map((directive) => directive.trim().split(/\s+/))
      .filter(([name]) => name !== '')
      .map(([name = '', ...values]) => [name, values.join(' ')]),
  );
}

describe('security headers (helmet)', () => {
  it('are on every answer: API, errors, health, the document and Swagger UI', async () => {
    const { url } = service.server;
    const answers = await Promise.all([
      fetch(`${url}/v1/pets`, { headers: authorized }),
      fetch(`${url}/v1/pets`),
      fetch(`${url}/v1/nope`, { headers: authorized }),
      fetch(`${url}/nope`),
      fetch(`${url}/healthz`),
      fetch(`${url}/openapi.json`),
      fetch(`${url}/docs`),
    ]);

    expect(answers.map((response) => response.status)).toEqual([200, 401, 404, 404, 200, 200, 200]);
    for (const response of answers) {
      for (const [name, value] of Object.entries(HELMET_HEADERS)) expect(response.headers.get(name)).toBe(value);
      expect(response.headers.get('strict-transport-security')).toMatch(/^max-age=\d+; includeSubDomains$/);
      expect(response.headers.get('content-security-policy')).not.toBeNull();
      expect(response.headers.get('x-powered-by')).toBeNull();
    }
  });

  it('let a JSON answer load, run and be framed by nothing', async () => {
    const response = await fetch(`${service.server.url}/v1/pets`, { headers: authorized });

    expect(response.headers.get('content-security-policy')).toBe("default-src 'none';frame-ancestors 'none'");
  });

  it("give Swagger UI a policy it works under: its own scripts only, inline styles, calls to the document's servers", async () => {
    const csp = directives(await fetch(`${service.server.url}/docs`));

    expect(csp.get('script-src')).toBe("'self'");
    expect(csp.get('script-src-attr')).toBe("'none'");
    expect(csp.get('default-src')).toBe("'self'");
    expect(csp.get('style-src')).toBe("'self' 'unsafe-inline'");
    expect(csp.get('connect-src')).toBe("'self' https://petstore.example.com");
    expect(csp.get('object-src')).toBe("'none'");
    expect(csp.get('frame-ancestors')).toBe("'none'");
    expect(csp.has('upgrade-insecure-requests')).toBe(false);
  });
});
