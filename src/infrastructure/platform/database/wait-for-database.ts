import { queryOnce } from './pg-probe.js';
import { isUnavailable } from './store-errors.js';
import { propertyOf } from '../property-of.js';

/** How long one try may take to connect and answer `SELECT 1`. */
const PROBE_TIMEOUT_MS = 3000;

/** A start that cannot go on: one line naming the cause and what to do. */
export class StartupError extends Error {
  override name = 'StartupError';
}

export type Clock = { now(): number; sleep(ms: number): Promise<void> };

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/**
 * Waits for a database that is not up yet (it may be starting beside the service), retrying with
 * back-off from 0.5 s to 5 s, for at most `seconds`; then gives up with a StartupError. A server
 * that answers but refuses (wrong password, missing database) is reported at once: waiting would
 * not help.
 */
export async function waitForDatabase(
  url: string,
  seconds: number,
  onRetry: (line: string) => void,
  clock: Clock = systemClock,
): Promise<void> {
  const deadline = clock.now() + seconds * 1000;
  for (let delay = 500; ; delay = Math.min(delay * 2, 5000)) {
    const failure = await probe(url);
    if (failure === null) return;
    const where = describe(url);
    if (!isUnavailable(failure) || codeOf(failure) === 'ENOTFOUND') throw new StartupError(refusal(failure, where));
    const left = deadline - clock.now();
    if (left <= 0) {
      throw new StartupError(
        `Database at ${where} did not answer within ${seconds} s (${reason(failure)}): start PostgreSQL, fix DATABASE_URL, or raise DATABASE_WAIT_SECONDS`,
      );
    }
    onRetry(
      `Database at ${where} does not answer yet (${reason(failure)}); retrying in ${Math.min(delay, left) / 1000} s`,
    );
    await clock.sleep(Math.min(delay, left));
  }
}

/** null when the database answered, else what went wrong. */
function probe(url: string): Promise<unknown> {
  return queryOnce(url, 'SELECT 1', PROBE_TIMEOUT_MS).then(
    () => null,
    (error: unknown) => error,
  );
}

/** host:port/database of a URL, never its user or password. */
function describe(url: string): string {
  const parsed = new URL(url);
  return `${parsed.hostname}:${parsed.port || 5432}${parsed.pathname}`;
}

function reason(error: unknown): string {
  if (typeof error !== 'object' || error === null) return String(error);
  const code = codeOf(error);
  const message = 'message' in error && typeof error.message === 'string' ? error.message : 'no answer';
  return code.startsWith('E') ? code : message;
}

function codeOf(error: unknown): string {
  const code = propertyOf(error, 'code');
  return typeof code === 'string' ? code : '';
}

function refusal(error: unknown, where: string): string {
  const code = codeOf(error);
  if (code === '3D000')
    return `Database at ${where} does not exist: create it (createdb) or fix the database name in DATABASE_URL`;
  if (code === '28P01' || code === '28000')
    return `PostgreSQL at ${where} refused the user or password of DATABASE_URL: fix them`;
  if (code === 'ENOTFOUND') return `The host of DATABASE_URL (${where}) cannot be resolved: fix DATABASE_URL`;
  return `PostgreSQL at ${where} refused the connection: ${reason(error)}`;
}
