/**
 * `npm run bench -- --against <commit-ish>`: another commit of the service, checked out in a git
 * worktree under a temporary directory and built there as `npm run bench` builds this checkout,
 * so that the bench can start it exactly as it starts ours and measure it beside the others.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, symlink } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export type PreviousCommit = {
  /** The server's name in every table: "ours@<short sha>". */
  name: string;
  sha: string;
  dir: string;
  /** Removes the worktree (and the node_modules link in it, never what it points to). */
  remove(): Promise<void>;
};

/** `git worktree add --detach` of the commit under `parentDir`; nothing installed or built yet. */
export async function checkOut(root: string, commitish: string, parentDir: string): Promise<PreviousCommit> {
  const sha = (await git(root, 'rev-parse', '--verify', '--end-of-options', `${commitish}^{commit}`)).trim();
  const short = (await git(root, 'rev-parse', '--short', sha)).trim();
  const dir = path.join(parentDir, short);
  await git(root, 'worktree', 'add', '--detach', dir, sha);
  return {
    name: `ours@${short}`,
    sha,
    dir,
    // --force: the worktree holds what the build wrote. git removes a node_modules link, not its target.
    remove: async () => {
      await git(root, 'worktree', 'remove', '--force', dir);
    },
  };
}

/**
 * node_modules, then `npm run build`, in the worktree. An identical package-lock.json means the
 * same packages: this checkout's node_modules is linked instead of installed again (a minute or
 * more saved). Any difference in the lock file, and the commit gets its own `npm ci`. Returns
 * which, and why, for the output and the results.
 */
export async function install(root: string, commit: PreviousCommit, signal: AbortSignal): Promise<string> {
  const lockFile = async (dir: string): Promise<string | null> => {
    const file = path.join(dir, 'package-lock.json');
    return existsSync(file) ? readFile(file, 'utf8') : null;
  };
  const [ours, theirs] = await Promise.all([lockFile(root), lockFile(commit.dir)]);
  let nodeModules: string;
  if (ours !== null && ours === theirs) {
    await symlink(path.join(root, 'node_modules'), path.join(commit.dir, 'node_modules'), 'dir');
    nodeModules = `this checkout's node_modules, linked: ${commit.name}'s package-lock.json is identical to this checkout's`;
  } else {
    await npm(commit.dir, signal, 'ci', '--no-audit', '--no-fund');
    nodeModules = `npm ci in the worktree: ${commit.name}'s package-lock.json ${theirs === null ? 'is missing' : "differs from this checkout's"}`;
  }
  await npm(commit.dir, signal, 'run', 'build');
  return nodeModules;
}

/** The commit this checkout is at, and whether its tracked files differ from it, for the results. */
export async function describeCheckout(root: string): Promise<{ sha: string; modified: boolean } | null> {
  try {
    const sha = (await git(root, 'rev-parse', 'HEAD')).trim();
    const modified = (await git(root, 'status', '--porcelain', '--untracked-files=no')).trim() !== '';
    return { sha, modified };
  } catch {
    return null; // not a git checkout (an unpacked archive): the results say so with null
  }
}

async function git(cwd: string, ...args: string[]): Promise<string> {
  try {
    return (await run('git', args, { cwd })).stdout;
  } catch (error) {
    throw new Error(`git ${args.join(' ')} failed: ${error instanceof Error ? error.message : String(error)}`, {
      cause: error,
    });
  }
}

/** npm in the worktree, stopped by `signal`; its output is shown (the end of it) only if it fails. */
async function npm(cwd: string, signal: AbortSignal, ...args: string[]): Promise<void> {
  try {
    await run('npm', args, { cwd, signal, maxBuffer: 64 * 1024 * 1024 });
  } catch (error) {
    const output =
      typeof error === 'object' && error !== null && 'stdout' in error && 'stderr' in error
        ? `${String(error.stdout)}${String(error.stderr)}`
        : String(error);
    throw new Error(`npm ${args.join(' ')} in ${cwd} failed:\n${output.trim().split('\n').slice(-30).join('\n')}`, {
      cause: error,
    });
  }
}
