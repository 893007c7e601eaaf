import type { ApiKeys } from '../../application/api-keys.js';

/**
 * No key anywhere (no API_KEYS, none stored): issue one so that a first run works, and show it
 * once. `print` is stdout, never the logger; only the key's hash is stored.
 */
export async function issueFirstRunKey(apiKeys: ApiKeys, print: (text: string) => void): Promise<void> {
  if (await apiKeys.hasUsableKey()) return;
  const { id, key } = await apiKeys.issue('first run');
  print(
    `No API key existed, so key ${id} was issued and stored (as a hash). It is shown this once:\n  API key: ${key}\n` +
      'Manage keys with: npm run keys -- issue --label NAME | list | revoke ID\n',
  );
}
