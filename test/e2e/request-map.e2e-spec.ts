import { readFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import { FlexibleRateLimits } from '../../src/infrastructure/platform/rate-limits/flexible-rate-limits.js';
import { json, useService } from '../support/server.js';

// docs/contributing.md lists the files of src/ a keyed POST runs through. They are measured here:
// V8's precise coverage, reset just before one request through the real HTTP stack and read just
// after its answer, names every file with a function that ran for it. The service runs as it does
// in production: its request log on, rate limits counted (in memory).

const DOC = 'docs/contributing.md';
const START = '<!-- request-map: the files a keyed POST runs through, measured by test/e2e/request-map.e2e-spec.ts -->';
const END = '<!-- request-map end -->';
const GROUPS = [
  { name: 'edge', what: 'the platform every request passes', holds: /^src\/(app\.ts|interface\/http\/platform\/)/ },
  { name: 'access', what: 'who may call', holds: /^src\/(interface|application|domain)\/.*access\// },
  // With pets.module.ts, whose factories make a keyed create's adapters on its transaction.
  { name: 'pets', what: 'the product', holds: /^src\/((interface|application|domain)\/.*pets\/|pets\.module\.ts$)/ },
  { name: 'store', what: 'what the request drives: PostgreSQL, the rate limits', holds: /^src\/infrastructure\// },
];

const sink = new Writable({ write: (_chunk, _encoding, done) => done() });
const service = useService({
  rateLimits: new FlexibleRateLimits({ perKeyPerMinute: 1200, failedAuthenticationsPerMinute: 20 }, null),
  log: sink,
});

function keyedCreate(idempotencyKey: string): Promise<Response> {
  return fetch(`${service.server.url}/v1/pets`, {
    method: 'POST',
    headers: { ...json, 'Idempotency-Key': idempotencyKey },
    body: JSON.stringify({ name: 'Rex', categoryId: 1 }),
  });
}

/** The files of src/ with code that ran during `request`, relative to the checkout. */
async function filesRunBy(request: () => Promise<void>): Promise<string[]> {
  const session = new Session();
  session.connect();
  try {
    await session.post('Profiler.enable');
    await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
    await session.post('Profiler.takePreciseCoverage');
    await request();
    const { result } = await session.post('Profiler.takePreciseCoverage');
    await session.post('Profiler.stopPreciseCoverage');
    const src = `${path.resolve('src')}/`;
    const ran = result
      .filter((script) => script.functions.some((fn) => fn.ranges.some((range) => range.count > 0)))
      .map((script) => script.url.replace(/^file:\/\//, ''))
      .filter((file) => file.startsWith(src))
      .map((file) => path.relative(process.cwd(), file));
    return [...new Set(ran)].sort();
  } finally {
    session.disconnect();
  }
}

/** The block docs/contributing.md shows: each group with its count and files. */
function render(files: string[]): string {
  const lines = GROUPS.map(({ name, what, holds }) => {
    const mine = files.filter((file) => holds.test(file));
    return [`- **${name}** (${what}), ${mine.length}:`, ...mine.map((file) => `  - \`${file}\``)].join('\n');
  });
  const unplaced = files.filter((file) => !GROUPS.some(({ holds }) => holds.test(file)));
  if (unplaced.length > 0) lines.push(`- **in no group**, ${unplaced.length}: ${unplaced.join(', ')}`);
  return [`${files.length} files of \`src/\`:`, '', ...lines].join('\n');
}

describe('the request map in docs/contributing.md', () => {
  it('lists exactly the files of src/ a keyed POST runs through', async () => {
    // Warmed up, as a running service is: lazy set-up (a first prepared statement, a first key
    // lookup) is not a request's own path.
    for (const key of ['warm-1', 'warm-2', 'warm-3']) await (await keyedCreate(key)).text();

    // Three requests, each measured alone; a file counts when it ran for all three, so that a
    // timer that happens to fire in one window (the replica checks, a log flush) is not the request's.
    const measured: string[][] = [];
    for (const key of ['measured-1', 'measured-2', 'measured-3']) {
      measured.push(
        await filesRunBy(async () => {
          const response = await keyedCreate(key);
          await response.text();
          expect(response.status).toBe(201);
          // What the answer's 'close' sets off (the request log, the metrics) runs before the next turn.
          await new Promise((resolve) => setImmediate(resolve));
        }),
      );
    }
    const files = measured.reduce((common, run) => common.filter((file) => run.includes(file)));

    const doc = await readFile(DOC, 'utf8');
    const shown = doc.slice(doc.indexOf(START) + START.length, doc.indexOf(END)).trim();
    expect(doc.includes(START) && doc.includes(END)).toBe(true);
    expect(shown).toBe(render(files));
  });
});
