import { quoteField } from '../../../../../src/interface/http/platform/validation-errors.js';

describe('quoteField', () => {
  it('shortens a field name only beyond 40 characters', () => {
    expect(quoteField('x'.repeat(40))).toBe(`"${'x'.repeat(40)}"`);
    expect(quoteField('x'.repeat(41))).toBe(`"${'x'.repeat(40)}…"`);
  });
});
