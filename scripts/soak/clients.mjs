// The steady mixed load, through the balancer, as the clients' own records: every answer (or its
// absence), every acknowledged create, every pet each pager saw.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';

const REQUEST_TIMEOUT_MS = 10_000;
/** A client retrying an Idempotency-Key create gives up after this long. */
const RETRY_FOR_MS = 120_000;
const DRAIN_FOR_MS = 120_000;
const STATUSES = ['available', 'pending', 'sold'];
const ERROR_CODES = {
  400: 'invalid_request',
  401: 'unauthorized',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'idempotency_conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'idempotency_key_reused',
  429: 'rate_limited',
  431: 'invalid_request',
  500: 'internal_error',
  503: 'unavailable',
};

/** What is wrong with an answer's Error body, or null: `{code, message, status}`, JSON, status repeated. */
export function errorBodyFault(status, contentType, text) {
  if (!/^application\/json/.test(contentType ?? '')) return `content-type ${contentType}`;
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    return 'not JSON';
  }
  if (typeof body !== 'object' || body === null) return 'not an object';
  if (body.status !== status) return `status field ${body.status}`;
  if (typeof body.message !== 'string' || body.message === '') return 'no message';
  if (body.code !== ERROR_CODES[status]) return `code ${body.code}`;
  return null;
}

/** The statuses docs/openapi.json declares per operation (listPets, createPet, getPet). */
export function declaredStatuses(openapi) {
  const declared = {};
  for (const operations of Object.values(openapi.paths))
    for (const operation of Object.values(operations))
      if (operation?.operationId)
        declared[operation.operationId] = new Set(Object.keys(operation.responses).map(Number));
  return declared;
}

/**
 * Starts the load; `stop()` ends it and resolves once every client has finished (an
 * Idempotency-Key create in progress finishes its retries first).
 */
export function startLoad({ baseUrl, keys, declared, runId, started, rate, random }) {
  const records = [];
  const creates = []; // { name, keyed, categoryId, status (sent), acknowledged: Pet | null, attempts }
  const acknowledged = []; // Pets answered 201 (or 200 replay)
  const pagers = [];
  let stopping = false;
  /** Set once every create has its answer: the pagers then read to the last page and stop. */
  let drainDeadline = null;
  const now = () => performance.now() - started;
  const interval = 1000 / rate;
  let nextAt = 0;
  const pace = async () => {
    const at = Math.max(now(), nextAt);
    nextAt = at + interval;
    await sleep(Math.max(0, at - now()));
  };

  /** One request; the answer recorded and checked against the contract. */
  async function send(operation, label, url, init, key) {
    const sentAt = now();
    try {
      const response = await fetch(url, {
        ...init,
        headers: { Authorization: `Bearer ${key}`, ...init.headers },
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      const text = await response.text();
      const status = response.status;
      let fault = declared[operation].has(status) ? null : 'status not declared';
      if (fault === null && status >= 400) fault = errorBodyFault(status, response.headers.get('content-type'), text);
      const record = { label, sentAt, ms: now() - sentAt, status, fault };
      records.push(record);
      return { status, text, link: response.headers.get('link'), record };
    } catch (error) {
      const timeout = error?.name === 'TimeoutError';
      records.push({
        label,
        sentAt,
        ms: now() - sentAt,
        status: 0,
        fault: null,
        error: timeout ? 'timeout' : 'network',
      });
      return null;
    }
  }

  const parse = (text) => {
    try {
      return JSON.parse(text);
    } catch {
      return null;
    }
  };

  const newPet = (name) => {
    const pet = { name, categoryId: 1 + Math.floor(random() * 1000) };
    const status = random() < 0.75 ? STATUSES[Math.floor(random() * 3)] : undefined;
    return status === undefined ? pet : { ...pet, status };
  };

  async function create(worker, i, keyed) {
    const key = keys[worker % keys.length];
    const pet = newPet(`${runId} ${keyed ? 'idem' : 'plain'} ${worker}-${i}`);
    const record = { ...pet, keyed, acknowledged: null, attempts: 0 };
    creates.push(record);
    const headers = { 'Content-Type': 'application/json' };
    if (keyed) headers['Idempotency-Key'] = randomUUID();
    const firstSent = now();
    for (;;) {
      record.attempts++;
      const answer = await send(
        'createPet',
        keyed ? 'create-idem' : 'create',
        `${baseUrl}/v1/pets`,
        {
          method: 'POST',
          headers,
          body: JSON.stringify(pet),
        },
        key,
      );
      if (answer !== null && (answer.status === 201 || answer.status === 200)) {
        record.acknowledged = parse(answer.text);
        acknowledged.push(record.acknowledged);
        return;
      }
      // A plain create that got no answer is not retried: the client cannot know if it was stored.
      if (!keyed) return;
      const retryable = answer === null || answer.status === 409 || answer.status >= 500;
      if (!retryable || now() - firstSent > RETRY_FOR_MS) return;
      await sleep(200 + random() * 800);
      await pace();
    }
  }

  async function getById(worker) {
    const pet = acknowledged[Math.floor(random() * acknowledged.length)];
    if (pet === undefined) return;
    const answer = await send('getPet', 'get', `${baseUrl}/v1/pets/${pet.id}`, {}, keys[worker % keys.length]);
    if (answer?.status === 404) answer.record.fault ??= `404 for acknowledged pet ${pet.id}`;
  }

  async function list(worker) {
    const status = random() < 0.5 ? STATUSES[Math.floor(random() * 3)] : null;
    const query = `limit=${1 + Math.floor(random() * 50)}${status ? `&status=${status}` : ''}`;
    await send(
      'listPets',
      status ? 'list-status' : 'list',
      `${baseUrl}/v1/pets?${query}`,
      {},
      keys[worker % keys.length],
    );
  }

  const workers = [];
  const WORKERS = 24;
  for (let worker = 0; worker < WORKERS; worker++) {
    workers.push(
      (async () => {
        for (let i = 0; !stopping; i++) {
          await pace();
          const draw = random();
          if (draw < 0.15) await create(worker, i, false);
          else if (draw < 0.35) await create(worker, i, true);
          else if (draw < 0.6) await getById(worker);
          else await list(worker);
        }
      })(),
    );
  }

  /** A pager follows rel="next"; on the last page it keeps polling the same URL for new pets. */
  for (const [index, status] of [null, null, 'available', 'sold'].entries()) {
    const pager = { status, seen: new Set(), late: 0, caughtUp: false, lastId: 0 };
    pagers.push(pager);
    const key = keys[index % keys.length];
    let url = `${baseUrl}/v1/pets?limit=100${status ? `&status=${status}` : ''}`;
    pager.run = (async () => {
      for (;;) {
        if (drainDeadline !== null && (pager.caughtUp || now() > drainDeadline)) return;
        if (!stopping) await pace();
        const draining = drainDeadline !== null;
        const answer = await send('listPets', 'page', url, {}, key);
        if (answer?.status !== 200) {
          await sleep(500);
          continue;
        }
        for (const pet of parse(answer.text) ?? []) {
          // A pet behind the pager's position that it had not seen: paging would have skipped it.
          if (pet.id < pager.lastId && !pager.seen.has(pet.id)) pager.late++;
          pager.lastId = Math.max(pager.lastId, pet.id);
          pager.seen.add(pet.id);
        }
        const next = /<([^>]+)>;\s*rel="next"/.exec(answer.link ?? '');
        if (next !== null) url = new URL(next[1], baseUrl).toString();
        // The last page: poll its URL again (the cursor that led to it) until more pets follow.
        else if (draining) pager.caughtUp = true;
        else await sleep(1000);
      }
    })();
  }

  return {
    records,
    creates,
    pagers,
    async stop() {
      stopping = true;
      await Promise.all(workers);
      // The pagers read on to the end once more, after the last create was answered.
      drainDeadline = now() + DRAIN_FOR_MS;
      await Promise.all(pagers.map((pager) => pager.run));
    },
  };
}
