// Reading the answer's headers: where the next page is, and how long the service asks a client to wait.

/** The `cursor` of the `Link: <...>; rel="next"` target (RFC 8288), or null on the last page. */
export function nextPageCursor(link: string | null): string | null {
  if (link === null) return null;
  for (const [, target, parameters] of link.matchAll(/<([^>]*)>([^,]*)/g)) {
    if (target !== undefined && /;\s*rel="?next"?(\s|;|$)/i.test(parameters ?? '')) {
      // A path-absolute reference: any base resolves it, and only its query is read.
      return new URL(target, 'http://link.invalid').searchParams.get('cursor');
    }
  }
  return null;
}

/**
 * Milliseconds until a policy of the `RateLimit` header (`"per-key";r=0;t=42`) whose quota is
 * used up starts afresh; 0 when none is used up or the header is absent.
 */
export function rateLimitResetMs(rateLimit: string | null): number {
  let longest = 0;
  for (const item of (rateLimit ?? '').split(',')) {
    const remaining = /;\s*r=(\d+)/.exec(item)?.[1];
    const reset = /;\s*t=(\d+)/.exec(item)?.[1];
    if (remaining === '0' && reset !== undefined) longest = Math.max(longest, Number(reset) * 1000);
  }
  return longest;
}

/**
 * How long the answer asks to wait before a retry: `Retry-After` (seconds or an HTTP date) or
 * the reset of a used-up `RateLimit` policy, whichever is later; null when it names neither.
 */
export function askedDelayMs(headers: Headers, now: number): number | null {
  const retryAfter = headers.get('retry-after')?.trim();
  let delay: number | null = null;
  if (retryAfter !== undefined && /^\d+$/.test(retryAfter)) delay = Number(retryAfter) * 1000;
  else if (retryAfter !== undefined && !Number.isNaN(Date.parse(retryAfter)))
    delay = Math.max(0, Date.parse(retryAfter) - now);
  const reset = rateLimitResetMs(headers.get('ratelimit'));
  if (reset > 0) delay = Math.max(delay ?? 0, reset);
  return delay;
}
