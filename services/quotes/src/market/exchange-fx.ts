import { CURRENCIES } from './currencies.js';
import type { ExchangeMarket } from './exchange-market.js';
import type { DailyRate, FxSnapshot, FxSource } from '../domain/market.js';

/**
 * Live USD->fiat rates implied by stablecoin pairs on the exchanges (USDT/BRL, EUR/USDT): fresh
 * to the minute, not official. It has no daily series; history comes from the official sources
 * layered after it.
 */
export class ExchangeFx implements FxSource {
  readonly kind = 'exchange';
  readonly currencies: readonly string[] = CURRENCIES.filter((c) => c !== 'USD');
  constructor(private readonly market: ExchangeMarket) {}

  async latest(): Promise<FxSnapshot> {
    const { time, rates } = await this.market.fiatRates();
    for (const c of [...rates.keys()]) if (!this.currencies.includes(c)) rates.delete(c);
    if (rates.size === 0) throw new Error('no stablecoin/fiat pair quoted yet');
    return { time, rates };
  }

  daily(): Promise<DailyRate[]> {
    return Promise.resolve([]);
  }
}
