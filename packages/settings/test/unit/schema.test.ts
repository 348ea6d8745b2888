// The reader's own rules, independent of any service's table: aliases, blank values, families,
// optional values, redaction, clamps, and one error for every bad variable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { def, family, optional, parseHttpUrl, parseInteger, parseSecondsIn, SettingsError, SettingsReader, settingsTable } from '../../src/index.js';

const DEFS = {
  port: def({ name: 'PORT', aliases: ['OLD_PORT'], default: '80', unit: 'port', meaning: 'Port.', parse: (raw) => parseInteger(raw, 0, 65535) }),
  url: def({ name: 'DB_URL', default: undefined, meaning: 'Database | URL.', redact: (raw) => raw.replace(/\/\/[^@/]*@/, '//***@'), parse: optional(parseHttpUrl) }),
  hosts: family({ name: 'HOST_<ID>', pattern: /^HOST_([A-Z]+)$/, key: (id) => id.toLowerCase(), meaning: 'Per id.', parse: parseHttpUrl }),
  ttl: def({
    name: 'TTL',
    default: '1m',
    meaning: 'Seconds.',
    parse: (raw, ctx) => {
      const s = parseSecondsIn(raw, 0, 86_400);
      if (s > 3600) {
        ctx.clamp(3600, 'above an hour');
        return 3600;
      }
      return s;
    },
  }),
};

test('defaults, aliases (the primary name wins, with a warning), families, optional values', () => {
  const r = new SettingsReader({ OLD_PORT: '81', PORT: '82', HOST_A: 'http://a/', HOST_b: 'http://b', TTL: '2h' });
  const v = r.readAll(DEFS);
  assert.deepEqual(v, { port: 82, url: undefined, hosts: { a: 'http://a' }, ttl: 3600 });
  assert.deepEqual(r.finish().warnings, ['both PORT and OLD_PORT are set; using PORT', 'TTL="2h": above an hour; using 3600']);
});

test('blank values count as unset only when the reader is told so', () => {
  assert.equal(new SettingsReader({ PORT: '' }, { blankIsUnset: true }).readAll(DEFS).port, 80);
  const strict = new SettingsReader({ PORT: '' });
  strict.readAll(DEFS);
  assert.throws(() => strict.finish(), SettingsError);
});

test('every bad variable in one error, secrets redacted; a service may bring its own error', () => {
  const r = new SettingsReader({ PORT: 'x', DB_URL: 'ftp://u:secret@h', HOST_C: 'nope' });
  r.readAll(DEFS);
  r.fail('a cross-field problem');
  assert.throws(
    () => r.finish(),
    (e: unknown) => e instanceof SettingsError && e.problems.length === 4 && /^invalid settings \(4\)/.test(e.message) && !e.message.includes('secret') && /HOST_C=/.test(e.message),
  );
  const own = new SettingsReader({ PORT: 'x' }, { invalid: (p) => new RangeError(p.join(';')) });
  own.readAll(DEFS);
  assert.throws(() => own.finish(), RangeError);
});

test('the docs table shows alias and unit columns only when used, and escapes pipes', () => {
  const t = settingsTable(DEFS).split('\n');
  assert.equal(t[0], '| Setting | Upstream alias | Default | Unit | Meaning |');
  assert.equal(t[2], '| `PORT` | `OLD_PORT` | `80` | port | Port. |');
  assert.equal(t[3], '| `DB_URL` | — | (unset) | — | Database \\| URL. |');
  assert.equal(settingsTable({ ttl: DEFS.ttl }).split('\n')[0], '| Setting | Default | Meaning |');
});
