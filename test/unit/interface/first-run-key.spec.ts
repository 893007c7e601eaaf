import { issueFirstRunKey } from '../../../src/interface/cli/first-run-key.js';
import { InMemoryApiKeys } from '../../support/in-memory-api-keys.js';

describe('issueFirstRunKey', () => {
  it('issues, stores and prints one key when none exists', async () => {
    const keys = new InMemoryApiKeys();
    const printed: string[] = [];

    await issueFirstRunKey(keys, (text) => printed.push(text));

    expect(printed.join('')).toContain('API key: key-1');
    expect(await keys.identify('key-1')).not.toBeNull();
    expect(await keys.list()).toEqual([expect.objectContaining({ label: 'first run' })]);
  });

  it('does nothing when a usable key exists', async () => {
    const keys = new InMemoryApiKeys();
    await keys.issue('ci');
    const printed: string[] = [];

    await issueFirstRunKey(keys, (text) => printed.push(text));

    expect(printed).toEqual([]);
    expect(await keys.list()).toHaveLength(1);
  });

  it('issues a new one when every stored key was revoked', async () => {
    const keys = new InMemoryApiKeys();
    await keys.issue('old');
    await keys.revoke(1);

    await issueFirstRunKey(keys, () => undefined);

    expect(await keys.identify('key-2')).not.toBeNull();
  });
});
