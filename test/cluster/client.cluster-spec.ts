import { PetstoreClient, type Pet } from '../../packages/client/src/index.js';
import { balancerServers, cluster, sharedCluster, sleep, until } from '../support/cluster.js';

// The client package through the balancer while an instance is killed: its retries, with one
// Idempotency-Key per create, must leave every pet stored exactly once.

const MINUTES = 60_000;

const clusterEnv = sharedCluster(5 * MINUTES);

describe('the client package in front of the cluster', () => {
  it(
    'kill -9 of an instance while 8 loops create through the balancer: every create is acknowledged, and stored once',
    async () => {
      const attempts = { requests: 0, failed: 0 };
      const petstore = new PetstoreClient({
        baseUrl: `${clusterEnv().balancerUrl}/v1`,
        apiKey: clusterEnv().apiKey,
        retry: { maxAttempts: 10, baseDelayMs: 100 },
        onDeprecation: () => {},
        fetch: async (request) => {
          attempts.requests++;
          const response = await fetch(request).catch((error: unknown) => {
            attempts.failed++;
            throw error;
          });
          if (!response.ok) attempts.failed++;
          return response;
        },
      });
      const prefix = `client-kill-${Date.now()}`;
      const acknowledged = new Map<string, Pet>();
      let stopping = false;
      const loops = Array.from({ length: 8 }, async (_, loop) => {
        for (let i = 0; !stopping; i++) {
          const name = `${prefix} ${loop}-${i}`;
          acknowledged.set(name, await petstore.pets.create({ name, categoryId: 1 }));
        }
      });
      // Counted creates, not seconds: creates before the kill, with instance 2 out of the balancer,
      // and with it back. A step that fails ends the loops too, and Jest with them.
      const createsAfter = (what: string): Promise<number> => {
        const from = acknowledged.size;
        return until(() => Promise.resolve(acknowledged.size >= from + 20), MINUTES, `20 creates ${what}`);
      };
      const app2 = async (): Promise<boolean | undefined> => (await balancerServers()).get('app2');
      try {
        await createsAfter('before the kill');
        await cluster('kill-instance', '2');
        await until(async () => (await app2()) === false, MINUTES, 'app2 out of the balancer');
        await createsAfter('with instance 2 out');
        await cluster('start-instance', '2');
        await until(async () => (await app2()) === true, MINUTES, 'app2 back in the balancer');
        await createsAfter('with instance 2 back');
      } finally {
        stopping = true;
        await Promise.allSettled(loops);
      }
      await Promise.all(loops); // a create the client gave up on fails the test here

      // Lists may be served by the replica, up to its lag behind: read until every name is there.
      let stored = new Map<string, number[]>();
      for (let read = 0; read === 0 || (stored.size < acknowledged.size && read < 20); read++) {
        if (read > 0) await sleep(500);
        stored = new Map();
        for await (const pet of petstore.pets.list())
          if (pet.name.startsWith(prefix)) stored.set(pet.name, [...(stored.get(pet.name) ?? []), pet.id]);
      }
      process.stdout.write(
        `cluster: client creates across a kill -9: ${acknowledged.size} acknowledged, ${attempts.requests} requests, ${attempts.failed} failed and retried\n`,
      );

      expect(acknowledged.size).toBeGreaterThan(50);
      expect([...stored.entries()].filter(([, ids]) => ids.length !== 1)).toEqual([]);
      expect([...stored.keys()].sort()).toEqual([...acknowledged.keys()].sort());
      for (const [name, pet] of acknowledged) expect(stored.get(name)).toEqual([pet.id]);
    },
    3 * MINUTES,
  );
});
