import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { TEST_API_KEY, useService } from '../support/server.js';

// What a user of the published package gets: `npm pack` (which builds dist/ first), installed
// into an empty project, imported by plain Node and type-checked as a TypeScript consumer would.
const run = promisify(execFile);
const service = useService();

let project: string;
afterAll(async () => {
  if (project) await rm(project, { recursive: true, force: true });
});

const CONSUMER = `import { PetstoreClient, PetstoreError } from '@petstore/client';
const [baseUrl, apiKey] = process.argv.slice(2);
const petstore = new PetstoreClient({ baseUrl, apiKey });
const pet = await petstore.pets.create({ name: 'Packed', categoryId: 3 });
const listed = [];
for await (const each of petstore.pets.list({ status: 'available' })) listed.push(each.id);
const error = await petstore.pets.create({ name: '', categoryId: 1 }).catch((e) => e);
console.log(JSON.stringify({ pet, listed, typed: error instanceof PetstoreError, code: error.code }));
`;

const TYPED_CONSUMER = `import { PetstoreClient, type Pet } from '@petstore/client';
const petstore = new PetstoreClient({ baseUrl: 'http://localhost:3000/v1', apiKey: 'psk_x', timeoutMs: 5000 });
export const first: Promise<Pet> = petstore.pets.create({ name: 'Rex', categoryId: 1, status: 'sold' });
`;

describe('the packed client package', () => {
  it('installs from its tarball into an empty project, and calls the service from Node', async () => {
    project = await mkdtemp(join(tmpdir(), 'petstore-client-consumer-'));
    await run('npm', ['pack', '--workspace', '@petstore/client', '--pack-destination', project, '--silent']);
    const tarball = (await readdir(project)).find((name) => name.endsWith('.tgz'));
    expect(tarball).toMatch(/^petstore-client-\d+\.\d+\.\d+\.tgz$/);
    const listing = (await run('tar', ['-tzf', join(project, tarball ?? '')])).stdout.split('\n').filter(Boolean);
    expect(listing).toContain('package/dist/index.js');
    expect(listing).toContain('package/dist/index.d.ts');
    expect(listing.filter((path) => !/^package\/(dist\/.*|package\.json|README\.md)$/.test(path))).toEqual([]);

    await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    // Its one dependency, openapi-fetch, is in the npm cache already (npm ci put it there).
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', `./${tarball}`], { cwd: project });
    await writeFile(join(project, 'consumer.mjs'), CONSUMER);
    await writeFile(join(project, 'consumer.ts'), TYPED_CONSUMER);

    const { stdout } = await run(process.execPath, ['consumer.mjs', `${service.server.url}/v1`, TEST_API_KEY], {
      cwd: project,
    });
    const tsc = join(process.cwd(), 'node_modules/typescript/bin/tsc');
    const typeCheck = run(process.execPath, [tsc, '--noEmit', '--strict', '--module', 'nodenext', 'consumer.ts'], {
      cwd: project,
    });

    expect(JSON.parse(stdout)).toEqual({
      pet: { id: expect.any(Number), name: 'Packed', categoryId: 3, status: 'available' },
      listed: [expect.any(Number)],
      typed: true,
      code: 'invalid_request',
    });
    await expect(typeCheck).resolves.toBeDefined();
  }, 180_000);
});
