// Which rules a counter store can run: a rule set whose algorithms the store lacks is refused
// when it is loaded (never half-applied at request time). Used by the service when rules are
// swapped in and by ratelimit-config-check.
import { ConfigError } from '../errors.js';
import type { Algorithm, CounterStore } from '../store/counter-store.js';
import type { RuleSet } from './rule-set.js';

/** What a check needs of a store: its name and the algorithms it runs besides fixed_window. */
export type AlgorithmSupport = Pick<CounterStore, 'kind' | 'algorithms'>;

/** `fixed_window, sliding_window` etc.: everything the store runs. */
export function describeAlgorithms(store: AlgorithmSupport): string {
  const extra = [...(store.algorithms ?? [])].filter((a) => a !== 'fixed_window').sort();
  return ['fixed_window', ...extra].join(', ');
}

/**
 * The ConfigError for the first rule whose algorithm `store` cannot run atomically, or undefined
 * when the store runs every rule. The message names the source, the descriptor, the algorithm,
 * the store and what it supports.
 */
export function unsupportedAlgorithmError(rules: RuleSet, store: AlgorithmSupport): ConfigError | undefined {
  for (const [algorithm, where] of rules.algorithms) {
    if (store.algorithms?.has(algorithm) === true) continue;
    return new ConfigError(
      `${where}: algorithm ${algorithm} is not supported by the ${store.kind} store: it cannot run ${algorithmNeeds(algorithm)} atomically ` +
        `(it runs: ${describeAlgorithms(store)}); choose another algorithm or another store`,
    );
  }
  return undefined;
}

function algorithmNeeds(algorithm: Algorithm): string {
  switch (algorithm) {
    case 'sliding_window':
      return "a sliding window's increment with the previous window's read";
    case 'token_bucket':
      return "a token bucket's read-compare-write of its timestamp";
    default:
      return algorithm;
  }
}
