import { readFile } from 'node:fs/promises';
import openapiTS, { astToString } from 'openapi-typescript';
import { API_PREFIX } from '../../src/interface/http/platform/api-prefix.js';
import { useService } from '../support/server.js';

// The committed document's servers are the defaults: the relative API prefix.
const service = useService({ servers: { production: API_PREFIX, staging: API_PREFIX } });

describe('the committed OpenAPI snapshot (docs/openapi.json)', () => {
  it('is the document the service serves: run `npm run openapi` after changing the API', async () => {
    const served: unknown = await (await fetch(`${service.server.url}/openapi.json`)).json();

    expect(served).toEqual(JSON.parse(await readFile('docs/openapi.json', 'utf8')));
  });

  it('is what the types of the client package (packages/client/src/petstore-api.ts) were generated from: `npm run openapi` writes both', async () => {
    const generated = astToString(
      await openapiTS(new URL('../../docs/openapi.json', import.meta.url), { redocly: undefined }),
    );

    // The CLI adds a header comment before the generated code; the rest must match exactly.
    const committed = (await readFile('packages/client/src/petstore-api.ts', 'utf8')).replace(
      /^\/\*\*[\s\S]*?\*\/\n\n/,
      '',
    );
    expect(committed.trim()).toBe(generated.trim());
  });
});
