import { Writable } from 'node:stream';
import { pino } from 'pino';
import { NestLogger } from '../../../src/interface/nest-logger.js';

function capture(level: pino.Level = 'info'): { logger: NestLogger; lines: () => Array<Record<string, unknown>> } {
  const written: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      written.push(chunk.toString());
      done();
    },
  });
  return {
    logger: new NestLogger(pino({ level }, destination)),
    lines: () => written.join('').trim().split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

describe('NestLogger', () => {
  it("writes Nest's log(message, context) as one line with msg and context", () => {
    const { logger, lines } = capture();
    logger.log('Nest application successfully started', 'NestApplication');
    expect(lines()).toEqual([expect.objectContaining({ level: 30, msg: 'Nest application successfully started', context: 'NestApplication' })]);
  });

  it('keeps the stack Nest passes to error(message, stack, context)', () => {
    const { logger, lines } = capture();
    logger.error('boom', 'Error: boom\n    at somewhere', 'ExceptionsHandler');
    expect(lines()).toEqual([expect.objectContaining({ level: 50, msg: 'boom', context: 'ExceptionsHandler', err: { stack: 'Error: boom\n    at somewhere' } })]);
  });

  it('serialises an Error given as the message, with its stack', () => {
    const { logger, lines } = capture();
    logger.error(new Error('database gone'), 'Main');
    const [line] = lines();
    expect(line).toMatchObject({ level: 50, msg: 'database gone', context: 'Main', err: { message: 'database gone' } });
    expect(String((line?.err as { stack?: string }).stack)).toContain('database gone');
  });

  it('maps each of Nest\'s levels to pino\'s: verbose to trace, the others to their namesakes', () => {
    const { logger, lines } = capture('trace');
    logger.verbose?.('v', 'C');
    logger.debug?.('d', 'C');
    logger.log('l', 'C');
    logger.warn('w', 'C');
    logger.error('e', 'C');
    logger.fatal?.('f', 'C');
    expect(lines().map((line) => [line.level, line.msg, line.context])).toEqual([
      [10, 'v', 'C'],
      [20, 'd', 'C'],
      [30, 'l', 'C'],
      [40, 'w', 'C'],
      [50, 'e', 'C'],
      [60, 'f', 'C'],
    ]);
  });

  it('drops what the level filters out', () => {
    const { logger, lines } = capture('warn');
    logger.log('not written');
    logger.debug?.('not written either');
    logger.warn('written', 'Main');
    expect(lines()).toEqual([expect.objectContaining({ level: 40, msg: 'written', context: 'Main' })]);
  });

  it('takes a stack trace given without a context for the stack, not the context', () => {
    const { logger, lines } = capture();
    logger.error('boom', 'Error: boom\n    at somewhere');
    const [line] = lines();
    expect(line).toMatchObject({ msg: 'boom', err: { stack: 'Error: boom\n    at somewhere' } });
    expect(line).not.toHaveProperty('context');
  });

  it('keeps an Error given after the message, and any other parameters', () => {
    const { logger, lines } = capture();
    logger.error('query failed', new Error('socket hang up'), { attempt: 2 }, 'Store');
    expect(lines()).toEqual([
      expect.objectContaining({ msg: 'query failed', context: 'Store', err: expect.objectContaining({ message: 'socket hang up' }), params: [{ attempt: 2 }] }),
    ]);
  });

  it('writes a message that is not a string as a value', () => {
    const { logger, lines } = capture();
    logger.log({ routes: 3 }, 'RouterExplorer');
    expect(lines()).toEqual([expect.objectContaining({ msg: 'log', context: 'RouterExplorer', value: { routes: 3 } })]);
  });

  it('writes a message without a context as it is', () => {
    const { logger, lines } = capture();
    logger.log('plain');
    expect(lines()).toEqual([expect.not.objectContaining({ context: expect.anything() })]);
    expect(lines()[0]).toMatchObject({ msg: 'plain' });
  });
});
