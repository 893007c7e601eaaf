import type { LookAnswer, LookBoard } from '../../src/infrastructure/pets/shared-looks.js';
import type { MarkSnapshot } from '../../src/infrastructure/pets/mark-snapshot.js';

export type LookBoards = {
  /** Two instances' boards on one store, fresh for each test. */
  boards(): [LookBoard, LookBoard];
  /** The lease lapses now, as it does `leaseMs` after its holder's last command. */
  lapseLease(): Promise<void>;
};

/** Give the lease up when no ask is left. */
const GIVE_UP = { keep: false };
const snapshot: MarkSnapshot = { upToId: 7, holders: ['3/10'], position: '0/16B3748', look: { looker: 'a', seq: 3 } };

/** The answers a board's listener receives, and a wait for the next `count` of them. */
function listen(board: LookBoard): { answers: LookAnswer[]; next(count: number): Promise<void> } {
  const answers: LookAnswer[] = [];
  let waiter: { count: number; resolve(): void } | null = null;
  board.onAnswer((answer) => {
    answers.push(answer);
    if (waiter !== null && answers.length >= waiter.count) waiter.resolve();
  });
  return {
    answers,
    next: (count) =>
      new Promise<void>((resolve) => {
        if (answers.length >= count) resolve();
        else waiter = { count, resolve };
      }),
  };
}

/** One behaviour suite, run against the in-memory board (unit) and Redis (integration). */
export function describeLookBoardContract(name: string, setup: () => LookBoards): void {
  describe(`${name} (LookBoard contract)`, () => {
    const store = setup();

    it('gives the first ask the lease, with the asks on the board (its own among them)', async () => {
      const [a] = store.boards();

      expect(await a.ask('a/1', 'a')).toEqual(['a/1']);
    });

    it('gives the looker that holds the lease the asks on the board at its next ask', async () => {
      const [a, b] = store.boards();
      await a.ask('a/1', 'a');
      await b.ask('b/1', 'b');

      expect(await a.ask('a/2', 'a')).toEqual(['b/1', 'a/2']);
    });

    it('leaves an ask made while another instance looks for that instance to take before its next look', async () => {
      const [a, b] = store.boards();
      await a.ask('a/1', 'a');

      const whileALooks = await b.ask('b/1', 'b');
      const forTheNextLook = await a.answer({ asks: ['a/1'], snapshot }, 'a', GIVE_UP);

      expect(whileALooks).toBeNull();
      expect(forTheNextLook).toEqual(['b/1']);
    });

    it('publishes an answer to every instance, as it was sent, a failed look too', async () => {
      const [a, b] = store.boards();
      const atA = listen(a);
      const atB = listen(b);
      await a.ask('a/1', 'a');

      await a.answer({ asks: ['a/1', 'b/1'], snapshot }, 'a', GIVE_UP);
      await a.answer({ asks: ['b/2'], snapshot: null }, 'a', GIVE_UP);
      await Promise.all([atA.next(2), atB.next(2)]);

      const sent = [
        { asks: ['a/1', 'b/1'], snapshot },
        { asks: ['b/2'], snapshot: null },
      ];
      expect(atA.answers).toEqual(sent);
      expect(atB.answers).toEqual(sent);
    });

    it('gives the lease up when no ask is left, and the next ask takes it', async () => {
      const [a, b] = store.boards();
      await a.ask('a/1', 'a');

      const nextForA = await a.answer({ asks: ['a/1'], snapshot }, 'a', GIVE_UP);
      const bTakesTheLease = await b.ask('b/1', 'b');

      expect(nextForA).toBeNull();
      expect(bTakesTheLease).toEqual(['b/1']);
    });

    it('keeps the lease with no ask left when the looker has its own asks left', async () => {
      const [a, b] = store.boards();
      await a.ask('a/1', 'a');

      const kept = await a.answer({ asks: ['a/1'], snapshot }, 'a', { keep: true });
      const whileKept = await b.ask('b/1', 'b');

      expect(kept).toEqual([]);
      expect(whileKept).toBeNull();
    });

    it('gives a lapsed lease to the next ask, and nothing more to the looker that lost it', async () => {
      const [a, b] = store.boards();
      await a.ask('a/1', 'a');
      await store.lapseLease();

      const bTakesTheLease = await b.ask('b/1', 'b');
      await a.ask('a/2', 'a');
      const nextForA = await a.answer({ asks: ['a/1'], snapshot }, 'a', GIVE_UP);
      const nextForB = await b.answer({ asks: ['b/1'], snapshot }, 'b', GIVE_UP);

      expect(bTakesTheLease).toEqual(['b/1']);
      expect(nextForA).toBeNull();
      expect(nextForB).toEqual(['a/2']);
    });
  });
}
