import { execFile } from 'node:child_process';

// A cluster test whose set-up fails must end what it started (loads, watches: their loops, timers
// and sockets), or Jest never exits ("did not exit one second after the test run") and CI waits out
// its step limit. setup-failure.fixture.ts fails its beforeAll on purpose once its load and watch
// run, against a stand-in server: no cluster needed. Its own Jest must end with the failure.

// Far more than a Jest start and the fixture need; a Jest kept alive by a loop runs into it.
const LIMIT_MS = 60_000;

const fixtureConfig = {
  rootDir: process.cwd(),
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }] },
  testMatch: ['<rootDir>/test/cluster/setup-failure.fixture.ts'],
};

it(
  'a beforeAll that fails once its load and watch run: they are ended, and Jest exits with the failure at once',
  async () => {
    const started = performance.now();
    const { code, signal, output } = await new Promise<{
      code: number | string | null | undefined;
      signal: string | null | undefined;
      output: string;
    }>((resolve) => {
      execFile(
        process.execPath,
        ['node_modules/jest/bin/jest.js', '--config', JSON.stringify(fixtureConfig), '--ci', '--runInBand'],
        {
          env: { ...process.env, NODE_OPTIONS: '--experimental-vm-modules' },
          timeout: LIMIT_MS,
          killSignal: 'SIGKILL',
        },
        (error, stdout, stderr) => resolve({ code: error?.code ?? 0, signal: error?.signal, output: stdout + stderr }),
      );
    });
    const tookMs = performance.now() - started;
    process.stdout.write(`setup-failure: the fixture's Jest exited with ${code} after ${Math.round(tookMs)} ms\n`);

    expect({ signal, output }).toEqual({
      signal: null,
      output: expect.stringContaining('on purpose: not within 500 ms'),
    });
    expect(code).toBe(1);
    expect(output).not.toContain('did not exit');
  },
  2 * LIMIT_MS,
);
