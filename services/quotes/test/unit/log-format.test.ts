import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { createLogger, logDestination } from '../../src/logger.js';

describe('QUOTES_LOG_FORMAT: pretty on a terminal, JSON otherwise', () => {
  test('auto: JSON (the default destination) when stdout is not a terminal; json never prettifies', () => {
    assert.equal(logDestination('auto', false), undefined);
    assert.equal(logDestination('json', true), undefined);
    assert.notEqual(logDestination('auto', true), undefined);
    assert.notEqual(logDestination('pretty', false), undefined);
  });

  test('pretty: one readable line per record, the level and message in words, secrets still redacted', () => {
    const lines: string[] = [];
    const out = new Writable({
      write(chunk: Buffer, _enc, cb) {
        lines.push(chunk.toString());
        cb();
      },
    });
    const log = createLogger('info', logDestination('pretty', false, out));
    log.info({ component: 'market', req: { method: 'GET', url: '/api/v2/crypto?coin=BTC&token=qt_secret' } }, 'request completed');
    log.warn('MARKET_SOURCE=simulated');
    const text = lines.join('');
    assert.doesNotMatch(text, /^\{"level"/m, 'not JSON');
    assert.match(text, /INFO.*request completed/);
    assert.match(text, /WARN.*MARKET_SOURCE=simulated/);
    assert.match(text, /token=\[REDACTED\]/);
    assert.doesNotMatch(text, /qt_secret/);
    assert.equal(text.trim().split('\n').length, 2, 'one line per record');
  });
});
