import { KEYS_USAGE, runKeysCommand } from '../../../../src/interface/cli/keys-cli.js';
import { InMemoryApiKeys } from '../../../support/in-memory-api-keys.js';

async function run(args: string[], keys = new InMemoryApiKeys()): Promise<{ code: number; output: string[] }> {
  const output: string[] = [];
  const code = await runKeysCommand(args, keys, (line) => output.push(line));
  return { code, output };
}

describe('npm run keys', () => {
  it('issue prints the new key once and stores it', async () => {
    const keys = new InMemoryApiKeys();

    const { code, output } = await run(['issue', '--label', 'ci'], keys);

    expect(code).toBe(0);
    expect(output).toEqual(['Issued key 1 (ci). It is shown this once; only its hash is stored:', 'key-1']);
    expect(await keys.identify('key-1')).not.toBeNull();
  });

  it("issue takes the label as --label=NAME too, as Node's parser reads options", async () => {
    const { code, output } = await run(['issue', '--label=laptop']);

    expect(code).toBe(0);
    expect(output[0]).toBe('Issued key 1 (laptop). It is shown this once; only its hash is stored:');
  });

  it('list shows id, label, created and revoked, never a key', async () => {
    const keys = new InMemoryApiKeys();
    await keys.issue('ci');
    await keys.issue('laptop');
    await keys.revoke(2);

    const { code, output } = await run(['list'], keys);

    expect(code).toBe(0);
    expect(output).toEqual([
      'id\tlabel\tcreated\trevoked',
      '1\tci\t2026-11-21T00:00:00.000Z\t-',
      '2\tlaptop\t2026-11-21T00:00:00.000Z\t2026-11-22T00:00:00.000Z',
    ]);
    expect(output.join('\n')).not.toContain('key-');
  });

  it('revoke stops the key, says so, and tells an unknown or already revoked id apart', async () => {
    const keys = new InMemoryApiKeys();
    await keys.issue('ci');

    expect(await run(['revoke', '1'], keys)).toEqual({ code: 0, output: ['Revoked key 1.'] });
    expect(await keys.identify('key-1')).toBeNull();
    expect(await run(['revoke', '1'], keys)).toEqual({ code: 0, output: ['Key 1 was already revoked.'] });
    expect(await run(['revoke', '9'], keys)).toEqual({ code: 1, output: ['No key has id 9.'] });
  });

  const LABEL = 'Error: issue needs --label NAME (1-100 printable characters)';
  const REVOKE = 'Error: revoke needs one key id (a positive integer, see list)';
  it.each([
    [[], 'Error: no command given'],
    [['issue'], LABEL],
    [['issue', '--label'], "Error: Option '--label <value>' argument missing"],
    [['issue', '--label', '   '], LABEL],
    [['issue', '--label', 'x'.repeat(101)], LABEL],
    [['issue', '--label', 'tab\there'], LABEL],
    [['issue', '--name', 'ci'], expect.stringMatching(/^Error: Unknown option '--name'/)],
    [['revoke'], REVOKE],
    [['revoke', 'abc'], REVOKE],
    [['revoke', '0'], REVOKE],
    [['revoke', 'x1'], REVOKE],
    [['revoke', '1x'], REVOKE],
    [['revoke', '1a2'], REVOKE],
    [['revoke', '1', '2'], REVOKE],
    [['list', 'extra'], 'Error: unknown command or arguments: list extra'],
    [['list', '--label', 'ci'], 'Error: --label is for issue only: list --label ci'],
    [['revoke', '1', '--label', 'ci'], 'Error: --label is for issue only: revoke 1 --label ci'],
    [['issue', 'extra', '--label', 'ci'], 'Error: unknown command or arguments: issue extra --label ci'],
    [['delete', '1'], 'Error: unknown command or arguments: delete 1'],
  ])('answers %j with the error, the usage and exit code 2', async (args, problem) => {
    const keys = new InMemoryApiKeys();

    const { code, output } = await run(args, keys);

    expect(code).toBe(2);
    expect(output).toEqual([problem, KEYS_USAGE]);
    expect(await keys.list()).toEqual([]);
  });

  it('takes a label of 100 characters, the most', async () => {
    expect((await run(['issue', '--label', 'x'.repeat(100)])).code).toBe(0);
  });

  it('lets a failure that is not about the arguments through', async () => {
    const keys = new InMemoryApiKeys();
    const failure = new Error('store down');
    keys.list = () => Promise.reject(failure);

    await expect(run(['list'], keys)).rejects.toBe(failure);
  });
});
