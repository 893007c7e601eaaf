export type LoadCounts = { answered: number; notAnswered: number; failed: number };

/**
 * Steady load for the shutdown tests: 16 clients creating and listing back to back over keep-alive
 * connections. After `stopping()` each client stops at its first request the service no longer
 * takes (connection refused or closed); `finished` then resolves with the counts.
 */
export function steadyLoad(baseUrl: string, headers: Record<string, string>): { stopping(): void; finished: Promise<LoadCounts> } {
  const counts: LoadCounts = { answered: 0, notAnswered: 0, failed: 0 };
  let stopping = false;
  const clients = Array.from({ length: 16 }, async (_, client) => {
    for (let i = 0; ; i++) {
      const response = await (client % 2 === 0
        ? fetch(`${baseUrl}/v1/pets`, { method: 'POST', headers, body: JSON.stringify({ name: `load ${client}-${i}`, categoryId: 1 }) })
        : fetch(`${baseUrl}/v1/pets?limit=5`, { headers })
      ).catch(() => null);
      if (response === null) {
        counts.notAnswered++;
        if (stopping) return;
        continue;
      }
      await response.arrayBuffer();
      if (response.ok) counts.answered++;
      else counts.failed++;
    }
  });
  return {
    stopping: () => {
      stopping = true;
    },
    finished: Promise.all(clients).then(() => counts),
  };
}
