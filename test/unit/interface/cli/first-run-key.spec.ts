import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { announceFirstRunKey } from '../../../../src/interface/cli/first-run-key.js';
import { InMemoryApiKeys } from '../../../support/in-memory-api-keys.js';
import { tempDir } from '../../../support/temp-dirs.js';

async function announce(keys: InMemoryApiKeys, embedded: boolean) {
  const dataDir = tempDir('first-run-key-');
  const printed: string[] = [];
  const logged: string[] = [];
  await announceFirstRunKey(keys, {
    embedded,
    dataDir,
    log: (line) => logged.push(line),
    print: (text) => printed.push(text),
  });
  return { dataDir, printed: printed.join(''), logged };
}

describe('announceFirstRunKey', () => {
  it('on the embedded database issues, stores and prints one key when none exists', async () => {
    const keys = new InMemoryApiKeys();

    const { printed, logged, dataDir } = await announce(keys, true);

    expect(printed).toContain('API key: key-1');
    expect(logged).toEqual([]);
    expect(await readdir(dataDir)).toEqual([]);
    expect(await keys.identify('key-1')).not.toBeNull();
    expect(await keys.list()).toEqual([expect.objectContaining({ label: 'first run' })]);
  });

  it('on a server database writes the key to a file only its owner can read, and logs where, never the key', async () => {
    const keys = new InMemoryApiKeys();

    const { printed, logged, dataDir } = await announce(keys, false);

    const file = path.join(dataDir, 'first-run-api-key-1');
    expect(printed).toBe('');
    expect(await readFile(file, 'utf8')).toBe('key-1\n');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    // The whole line: where the key is, never the key itself.
    expect(logged).toEqual([
      `No API key existed, so key 1 was issued; it is in ${file} (mode 0600): read it, then delete the file`,
    ]);
    expect(await keys.identify('key-1')).not.toBeNull();
  });

  it('does nothing when a usable key exists', async () => {
    const keys = new InMemoryApiKeys();
    await keys.issue('ci');

    const { printed, logged } = await announce(keys, true);

    expect([printed, logged]).toEqual(['', []]);
    expect(await keys.list()).toHaveLength(1);
  });

  it('issues a new one when every stored key was revoked', async () => {
    const keys = new InMemoryApiKeys();
    await keys.issue('old');
    await keys.revoke(1);

    await announce(keys, true);

    expect(await keys.identify('key-2')).not.toBeNull();
  });
});
