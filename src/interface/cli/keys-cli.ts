import { parseArgs } from 'node:util';
import type { ApiKeys } from '../../application/access/api-keys.js';

export const KEYS_USAGE = `Usage:
  npm run keys -- issue --label NAME   issue a new key (printed once) with a label of 1-100 characters
  npm run keys -- list                 list keys: id, label, created, revoked (never the key)
  npm run keys -- revoke ID            revoke a key; it stops working within the key cache time (5 s by default)`;

/**
 * `npm run keys`: the arguments read by Node's own parser (util.parseArgs: `--label NAME` or
 * `--label=NAME`, unknown options refused), then ApiKeys. Returns the exit code.
 */
export async function runKeysCommand(args: string[], apiKeys: ApiKeys, print: (line: string) => void): Promise<number> {
  const parsed = parsedArgs(args);
  if (typeof parsed === 'string') return usage(print, parsed);
  const [command, ...rest] = parsed.positionals;
  const label = parsed.values.label;
  if (command === 'issue' && rest.length === 0) {
    const name = label?.trim() ?? '';
    if (name.length === 0 || name.length > 100 || /\p{Cc}/u.test(name)) {
      return usage(print, 'issue needs --label NAME (1-100 printable characters)');
    }
    const issued = await apiKeys.issue(name);
    print(`Issued key ${issued.id} (${issued.label}). It is shown this once; only its hash is stored:`);
    print(issued.key);
    return 0;
  }
  if (label !== undefined && command !== 'issue') return usage(print, `--label is for issue only: ${args.join(' ')}`);
  if (command === 'list' && rest.length === 0) {
    const keys = await apiKeys.list();
    print(['id', 'label', 'created', 'revoked'].join('\t'));
    for (const key of keys)
      print([key.id, key.label, key.createdAt.toISOString(), key.revokedAt?.toISOString() ?? '-'].join('\t'));
    return 0;
  }
  if (command === 'revoke') {
    const id = rest.length === 1 && /^[1-9]\d{0,15}$/.test(rest[0] ?? '') ? Number(rest[0]) : null;
    if (id === null) return usage(print, 'revoke needs one key id (a positive integer, see list)');
    const result = await apiKeys.revoke(id);
    if (result === 'not_found') {
      print(`No key has id ${id}.`);
      return 1;
    }
    print(result === 'revoked' ? `Revoked key ${id}.` : `Key ${id} was already revoked.`);
    return 0;
  }
  return usage(print, command === undefined ? 'no command given' : `unknown command or arguments: ${args.join(' ')}`);
}

/** The command and its arguments, or what is wrong with them (parseArgs' own words). */
function parsedArgs(args: string[]): { positionals: string[]; values: { label?: string } } | string {
  try {
    return parseArgs({ args, options: { label: { type: 'string' } }, allowPositionals: true, strict: true });
  } catch (error) {
    if (isParseArgsError(error)) return error.message;
    throw error;
  }
}

/** Node's own TypeError of parseArgs, told by its code (under Jest it is not this realm's TypeError). */
function isParseArgsError(error: unknown): error is { message: string } {
  return (
    typeof error === 'object' &&
    error !== null &&
    'code' in error &&
    typeof error.code === 'string' &&
    error.code.startsWith('ERR_PARSE_ARGS_') &&
    'message' in error &&
    typeof error.message === 'string'
  );
}

function usage(print: (line: string) => void, problem: string): number {
  print(`Error: ${problem}`);
  print(KEYS_USAGE);
  return 2;
}
