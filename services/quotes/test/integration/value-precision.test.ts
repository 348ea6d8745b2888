import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { CURRENCIES } from '../../src/market/currencies.js';
import { MAX_DIGITS, minorUnits, PRICE_DIGITS, RATE_DIGITS, valueFormat } from '../../src/domain/value-precision.js';
import { digitsOf } from './value-digits.js';

describe('value precision: one rounding for every output value', () => {
  const price = fc.double({ min: 1e-12, max: 1e15, noNaN: true, noDefaultInfinity: true });
  const currency = fc.constantFrom(...CURRENCIES);

  test('prices and percentages keep at most PRICE_DIGITS significant digits, within half a unit of the last one', () => {
    fc.assert(
      fc.property(price, currency, fc.boolean(), (x, cur, neg) => {
        const v = neg ? -x : x;
        const out = valueFormat(cur).price(v);
        assert.equal(Number(String(out)), out, 'parses back to itself');
        assert.ok(digitsOf(out).sig <= PRICE_DIGITS, `${v} -> ${out}`);
        assert.ok(Math.abs(out - v) <= Math.abs(v) * 5.0000001 * 10 ** -PRICE_DIGITS, `${v} -> ${out}`);
        assert.equal(valueFormat(cur).percent(v), out);
      }),
      { seed: 14, numRuns: 5000 },
    );
  });

  test('amounts (volume, market cap) keep at most the currency\'s minor units and MAX_DIGITS significant digits', () => {
    fc.assert(
      fc.property(fc.double({ min: 0, max: 1e18, noNaN: true, noDefaultInfinity: true }), currency, (x, cur) => {
        const out = valueFormat(cur).amount(x);
        const d = digitsOf(out);
        assert.equal(Number(String(out)), out);
        assert.ok(d.decimals <= minorUnits(cur), `${cur} ${x} -> ${out}`);
        assert.ok(d.sig <= MAX_DIGITS, `${cur} ${x} -> ${out}`);
        assert.ok(Math.abs(out - x) <= Math.max(0.5 * 10 ** -minorUnits(cur), x * 10 ** -(MAX_DIGITS - 1)), `${cur} ${x} -> ${out}`);
      }),
      { seed: 14, numRuns: 5000 },
    );
  });

  test('rates keep at most RATE_DIGITS significant digits; day ranges are two formatted prices', () => {
    fc.assert(
      fc.property(price, price, (a, b) => {
        const f = valueFormat('BRL');
        assert.ok(digitsOf(f.rate(a)).sig <= RATE_DIGITS);
        const [lo, hi] = f.dayRange(a, b).split(' - ').map(Number);
        assert.equal(lo, f.price(a));
        assert.equal(hi, f.price(b));
      }),
      { seed: 14, numRuns: 2000 },
    );
  });

  test('the reported noise is gone', () => {
    const f = valueFormat('BRL');
    assert.equal(f.price(92392.02801000001), 92392.02801);
    assert.equal(f.dayRange(546857.17394, 560134.0544799999), '546857.1739 - 560134.0545');
    assert.equal(f.price(0.00001234567891234), 0.00001234567891);
    assert.equal(valueFormat('JPY').amount(123456.789), 123457);
    assert.equal(f.amount(1234.5678), 1234.57);
  });
});
