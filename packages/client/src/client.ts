import createClient from 'openapi-fetch';
import { PetstoreError } from './errors.js';
import { askedDelayMs, nextPageCursor, rateLimitResetMs } from './headers.js';
import type { components, paths } from './petstore-api.js';

export type Pet = components['schemas']['Pet'];
export type NewPet = components['schemas']['NewPet'];
export type PetStatus = components['schemas']['PetStatus'];

export type RetryOptions = {
  /** Attempts per call, the first included. */
  maxAttempts: number;
  /** The wait after a network error or an answer that names no delay; doubled at each attempt. */
  baseDelayMs: number;
  /** The longest wait; an answer asking for longer ends the call with its error. */
  maxDelayMs: number;
  /** Up to this fraction of each wait is added at random, so clients told the same delay do not return together. */
  jitter: number;
};

export type DeprecationNotice = { operation: 'getPet'; deprecation: string | null; sunset: string | null };

export type PetstoreClientOptions = {
  /** The server URL from the OpenAPI document, ending in `/v1`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>`. */
  apiKey: string;
  /** Each request's time limit, reading its body included; a request over it counts as a network error. */
  timeoutMs?: number;
  retry?: Partial<RetryOptions>;
  /** `limit` of each page that `pets.list` asks for (1 to 100). */
  pageSize?: number;
  /** Told once per client when `getPet` answers with `Deprecation` or `Sunset`; default: console.warn. */
  onDeprecation?: (notice: DeprecationNotice) => void;
  /** Default: the global fetch, looked up at each request. */
  fetch?: (request: Request) => Promise<Response>;
  /** For tests: how to wait, what time it is, the source of jitter, and of Idempotency-Keys. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  now?: () => number;
  random?: () => number;
  newIdempotencyKey?: () => string;
};

export type CallOptions = { signal?: AbortSignal };
export type ListOptions = CallOptions & { status?: PetStatus; pageSize?: number };
export type CreateOptions = CallOptions & {
  /** Default: a new random key for this call. Pass your own to keep one logical create across restarts. */
  idempotencyKey?: string;
};

/**
 * Eight attempts: told `Retry-After: 5` while the database tier elects a new primary, a call waits
 * out a gap of about half a minute, longer than a failover takes (docs/scaling.md).
 */
export const DEFAULT_RETRY: RetryOptions = { maxAttempts: 8, baseDelayMs: 250, maxDelayMs: 30_000, jitter: 0.2 };
const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_PAGE_SIZE = 100;
/**
 * 409: the same Idempotency-Key still in flight; 429: rate limited; 503: the database (or every
 * instance) does not answer; 502 and 504: a gateway lost the instance, as a network error would.
 */
const RETRIED_STATUSES = new Set([409, 429, 502, 503, 504]);

type Answer<T> = { data?: T; error?: unknown; response: Response };

export class PetstoreClient {
  readonly pets = {
    /** Every pet (of `status`, if given), page after page as `Link: rel="next"` leads. */
    list: (options: ListOptions = {}): AsyncIterable<Pet> => this.listPets(options),
    /** Adds a pet; retries reuse one Idempotency-Key, so it is stored once. */
    create: (pet: NewPet, options: CreateOptions = {}): Promise<Pet> => this.createPet(pet, options),
    /** @deprecated getPet is removed on its Sunset date: list with a status filter instead. */
    get: (id: number, options: CallOptions = {}): Promise<Pet> => this.getPet(id, options),
  };

  private readonly api;
  private readonly retry: RetryOptions;
  private readonly timeoutMs: number;
  private readonly pageSize: number;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  private readonly now: () => number;
  private readonly random: () => number;
  private readonly newIdempotencyKey: () => string;
  private readonly onDeprecation: (notice: DeprecationNotice) => void;
  private deprecationTold = false;
  /** When the last answer said a rate-limit quota is used up: no request before this time. */
  private notBefore = 0;

  constructor(options: PetstoreClientOptions) {
    const fetchOption = options.fetch;
    this.api = createClient<paths>({
      baseUrl: options.baseUrl,
      headers: { Authorization: `Bearer ${options.apiKey}` },
      fetch: (request) => (fetchOption ?? globalThis.fetch)(request),
    });
    this.retry = { ...DEFAULT_RETRY, ...options.retry };
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.pageSize = options.pageSize ?? DEFAULT_PAGE_SIZE;
    this.sleep = options.sleep ?? abortableSleep;
    this.now = options.now ?? Date.now;
    this.random = options.random ?? Math.random;
    this.newIdempotencyKey = options.newIdempotencyKey ?? randomKey;
    this.onDeprecation =
      options.onDeprecation ??
      ((notice) =>
        console.warn(
          `Pet Store: ${notice.operation} is deprecated (Deprecation: ${notice.deprecation ?? '-'}) and will be removed (Sunset: ${notice.sunset ?? '-'}); list pets with a status filter instead`,
        ));
  }

  private listPets(options: ListOptions): AsyncIterableIterator<Pet> {
    const limit = options.pageSize ?? this.pageSize;
    const status = options.status;
    return new PageWalk(async (cursor) => {
      const query = { limit, ...(status ? { status } : {}), ...(cursor !== null ? { cursor } : {}) };
      const { data, response } = await this.call(
        (signal) => this.api.GET('/pets', { params: { query }, signal }),
        options.signal,
      );
      // The link repeats limit and status (docs/api.md, Paging); its cursor is what moves on.
      return { items: data, next: nextPageCursor(response.headers.get('link')) };
    });
  }

  private async createPet(pet: NewPet, options: CreateOptions): Promise<Pet> {
    const key = options.idempotencyKey ?? this.newIdempotencyKey();
    const { data } = await this.call(
      (signal) => this.api.POST('/pets', { body: pet, params: { header: { 'Idempotency-Key': key } }, signal }),
      options.signal,
    );
    return data;
  }

  private async getPet(id: number, options: CallOptions): Promise<Pet> {
    const { data } = await this.call(async (signal) => {
      const answer = await this.api.GET('/pets/{petId}', { params: { path: { petId: id } }, signal });
      this.noticeDeprecation(answer.response);
      return answer;
    }, options.signal);
    return data;
  }

  /**
   * One call: attempts until a 2xx, an answer not worth retrying, or the last attempt. Network
   * errors, timeouts and RETRIED_STATUSES are retried after the delay the answer asks for (else a
   * doubling backoff), plus jitter. The caller's own abort is never retried.
   */
  private async call<T>(
    send: (signal: AbortSignal) => Promise<Answer<T>>,
    signal: AbortSignal | undefined,
  ): Promise<{ data: T; response: Response }> {
    for (let attempt = 1; ; attempt++) {
      const wait = this.notBefore - this.now();
      if (wait > 0 && wait <= this.retry.maxDelayMs) await this.sleep(wait, signal);
      signal?.throwIfAborted();
      let answer: Answer<T>;
      try {
        answer = await this.attempt(send, signal);
      } catch (error) {
        signal?.throwIfAborted();
        if (attempt >= this.retry.maxAttempts) throw error;
        await this.sleep(this.withJitter(this.backoffMs(attempt)), signal);
        continue;
      }
      const { response } = answer;
      const reset = rateLimitResetMs(response.headers.get('ratelimit'));
      if (reset > 0) this.notBefore = this.now() + reset;
      if (response.ok) {
        if (answer.data === undefined) throw PetstoreError.fromAnswer(response, 'no body');
        return { data: answer.data, response };
      }
      const error = PetstoreError.fromAnswer(response, answer.error);
      const delay = askedDelayMs(response.headers, this.now()) ?? this.backoffMs(attempt);
      if (!RETRIED_STATUSES.has(response.status) || attempt >= this.retry.maxAttempts || delay > this.retry.maxDelayMs)
        throw error;
      await this.sleep(this.withJitter(delay), signal);
    }
  }

  /**
   * One request, aborted after timeoutMs or when the caller's signal aborts. `send` resolves once
   * the body is read, so the timer bounds the whole exchange; it is cleared then, and the caller's
   * signal let go, instead of a timer per request left running until it expires.
   */
  private async attempt<T>(
    send: (signal: AbortSignal) => Promise<Answer<T>>,
    signal: AbortSignal | undefined,
  ): Promise<Answer<T>> {
    const controller = new AbortController();
    const timeoutMs = this.timeoutMs;
    const timer = setTimeout(
      () => controller.abort(new DOMException(`The request took longer than ${timeoutMs} ms`, 'TimeoutError')),
      timeoutMs,
    );
    const onAbort = () => controller.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      return await send(controller.signal);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  private backoffMs(attempt: number): number {
    return Math.min(this.retry.maxDelayMs, this.retry.baseDelayMs * 2 ** (attempt - 1));
  }

  private withJitter(ms: number): number {
    return ms + ms * this.retry.jitter * this.random();
  }

  private noticeDeprecation(response: Response): void {
    const deprecation = response.headers.get('deprecation');
    const sunset = response.headers.get('sunset');
    if (this.deprecationTold || (deprecation === null && sunset === null)) return;
    this.deprecationTold = true;
    this.onDeprecation({ operation: 'getPet', deprecation, sunset });
  }
}

type Page<T> = { items: T[]; next: string | null };
const DONE: IteratorReturnResult<undefined> = Object.freeze({ value: undefined, done: true });

/**
 * The items of one page after another, asking for the next page (by its cursor) once the last is
 * handed out. An async generator would do, but it awaits at every item it yields; this hands out
 * a page's items from the array. As a generator: one page asked for at a time, calls of next()
 * answered in order, done for good after an error or return().
 */
class PageWalk<T> implements AsyncIterableIterator<T> {
  private items: T[] = [];
  private index = 0;
  private cursor: string | null = null;
  private finished = false;
  private loading: Promise<unknown> | null = null;

  constructor(private readonly fetchPage: (cursor: string | null) => Promise<Page<T>>) {}

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<T, undefined>> {
    if (this.loading !== null) {
      const next = () => this.next();
      return this.loading.then(next, next);
    }
    if (this.index < this.items.length) return Promise.resolve({ value: this.items[this.index++] as T, done: false });
    if (this.finished) return Promise.resolve(DONE);
    const loaded = this.load();
    this.loading = loaded;
    return loaded;
  }

  return(): Promise<IteratorResult<T, undefined>> {
    this.finish();
    return Promise.resolve(DONE);
  }

  private async load(): Promise<IteratorResult<T, undefined>> {
    try {
      // A page may be empty and still link to the next.
      while (this.index >= this.items.length && !this.finished) {
        const page = await this.fetchPage(this.cursor);
        if (this.finished) break;
        this.items = page.items;
        this.index = 0;
        this.cursor = page.next;
        if (page.next === null) this.finished = true;
      }
    } catch (error) {
      this.finish();
      throw error;
    } finally {
      this.loading = null;
    }
    return this.index < this.items.length ? { value: this.items[this.index++] as T, done: false } : DONE;
  }

  private finish(): void {
    this.finished = true;
    this.items = [];
    this.index = 0;
  }
}

function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason as Error);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** A random UUID (version 4). crypto.randomUUID() exists only in secure contexts; getRandomValues everywhere. */
function randomKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x40;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
