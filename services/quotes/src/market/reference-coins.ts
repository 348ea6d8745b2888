/**
 * Reference data for the simulated market: roughly where the top coins traded around the
 * start of 2026 (`price`, USD), when they started trading and at what price, their typical
 * annualised volatility, 24 h traded value (USD) and circulating supply. Indicative only.
 */
export interface ReferenceCoin {
  symbol: string;
  price: number;
  listed: string;
  listPrice: number;
  volatility: number;
  dailyVolume: number;
  supply: number;
}

export const REFERENCE_COINS: readonly ReferenceCoin[] = [
  { symbol: 'BTC', price: 95_000, listed: '2010-07-17', listPrice: 0.05, volatility: 0.6, dailyVolume: 35e9, supply: 19.9e6 },
  { symbol: 'ETH', price: 3_300, listed: '2015-08-07', listPrice: 2.8, volatility: 0.75, dailyVolume: 18e9, supply: 120.7e6 },
  { symbol: 'USDT', price: 1, listed: '2015-02-25', listPrice: 1, volatility: 0, dailyVolume: 60e9, supply: 140e9 },
  { symbol: 'XRP', price: 2.3, listed: '2013-08-04', listPrice: 0.006, volatility: 0.9, dailyVolume: 4e9, supply: 57e9 },
  { symbol: 'BNB', price: 650, listed: '2017-07-25', listPrice: 0.11, volatility: 0.7, dailyVolume: 1.8e9, supply: 145e6 },
  { symbol: 'SOL', price: 180, listed: '2020-04-10', listPrice: 0.95, volatility: 0.95, dailyVolume: 4e9, supply: 480e6 },
  { symbol: 'USDC', price: 1, listed: '2018-10-08', listPrice: 1, volatility: 0, dailyVolume: 8e9, supply: 45e9 },
  { symbol: 'DOGE', price: 0.32, listed: '2013-12-15', listPrice: 0.0005, volatility: 1.0, dailyVolume: 2e9, supply: 147e9 },
  { symbol: 'ADA', price: 0.9, listed: '2017-10-01', listPrice: 0.025, volatility: 0.9, dailyVolume: 800e6, supply: 35e9 },
  { symbol: 'TRX', price: 0.25, listed: '2017-09-13', listPrice: 0.002, volatility: 0.8, dailyVolume: 600e6, supply: 86e9 },
  { symbol: 'LINK', price: 22, listed: '2017-09-20', listPrice: 0.19, volatility: 0.95, dailyVolume: 600e6, supply: 630e6 },
  { symbol: 'AVAX', price: 35, listed: '2020-09-22', listPrice: 4.5, volatility: 1.0, dailyVolume: 500e6, supply: 410e6 },
  { symbol: 'XLM', price: 0.4, listed: '2014-08-05', listPrice: 0.002, volatility: 0.85, dailyVolume: 300e6, supply: 30e9 },
  { symbol: 'TON', price: 5, listed: '2021-09-01', listPrice: 0.7, volatility: 0.9, dailyVolume: 300e6, supply: 2.5e9 },
  { symbol: 'SHIB', price: 0.000021, listed: '2020-08-01', listPrice: 0.000000001, volatility: 1.2, dailyVolume: 500e6, supply: 589e12 },
  { symbol: 'DOT', price: 6.5, listed: '2020-08-19', listPrice: 2.9, volatility: 0.9, dailyVolume: 300e6, supply: 1.5e9 },
  { symbol: 'BCH', price: 450, listed: '2017-08-01', listPrice: 555, volatility: 0.85, dailyVolume: 400e6, supply: 19.8e6 },
  { symbol: 'LTC', price: 105, listed: '2013-04-28', listPrice: 4.3, volatility: 0.8, dailyVolume: 500e6, supply: 75e6 },
  { symbol: 'SUI', price: 4, listed: '2023-05-03', listPrice: 1.3, volatility: 1.1, dailyVolume: 800e6, supply: 3e9 },
  { symbol: 'HBAR', price: 0.3, listed: '2019-09-16', listPrice: 0.038, volatility: 0.95, dailyVolume: 200e6, supply: 38e9 },
  { symbol: 'UNI', price: 13, listed: '2020-09-17', listPrice: 3.4, volatility: 0.95, dailyVolume: 250e6, supply: 600e6 },
  { symbol: 'XMR', price: 200, listed: '2014-05-21', listPrice: 1.6, volatility: 0.75, dailyVolume: 100e6, supply: 18.4e6 },
  { symbol: 'DAI', price: 1, listed: '2019-11-18', listPrice: 1, volatility: 0, dailyVolume: 150e6, supply: 5e9 },
  { symbol: 'PEPE', price: 0.000018, listed: '2023-04-17', listPrice: 0.0000001, volatility: 1.3, dailyVolume: 1e9, supply: 420e12 },
  { symbol: 'NEAR', price: 5, listed: '2020-10-13', listPrice: 0.9, volatility: 1.0, dailyVolume: 300e6, supply: 1.2e9 },
  { symbol: 'APT', price: 9, listed: '2022-10-19', listPrice: 8.5, volatility: 1.0, dailyVolume: 200e6, supply: 560e6 },
  { symbol: 'ICP', price: 10, listed: '2021-05-10', listPrice: 400, volatility: 1.0, dailyVolume: 100e6, supply: 470e6 },
  { symbol: 'AAVE', price: 300, listed: '2020-10-02', listPrice: 52, volatility: 0.95, dailyVolume: 300e6, supply: 15e6 },
  { symbol: 'ETC', price: 27, listed: '2016-07-24', listPrice: 0.75, volatility: 0.85, dailyVolume: 200e6, supply: 150e6 },
  { symbol: 'MATIC', price: 0.5, listed: '2019-04-28', listPrice: 0.004, volatility: 1.0, dailyVolume: 200e6, supply: 9.3e9 },
  { symbol: 'ATOM', price: 6.5, listed: '2019-03-14', listPrice: 7.3, volatility: 0.9, dailyVolume: 150e6, supply: 390e6 },
  { symbol: 'FIL', price: 5, listed: '2020-10-15', listPrice: 30, volatility: 1.0, dailyVolume: 150e6, supply: 600e6 },
  { symbol: 'ARB', price: 0.8, listed: '2023-03-23', listPrice: 1.2, volatility: 1.0, dailyVolume: 300e6, supply: 4.3e9 },
  { symbol: 'OP', price: 2, listed: '2022-05-31', listPrice: 1.4, volatility: 1.05, dailyVolume: 200e6, supply: 1.3e9 },
  { symbol: 'VET', price: 0.045, listed: '2018-07-25', listPrice: 0.018, volatility: 0.95, dailyVolume: 80e6, supply: 81e9 },
  { symbol: 'ALGO', price: 0.4, listed: '2019-06-20', listPrice: 2.5, volatility: 0.95, dailyVolume: 100e6, supply: 8.3e9 },
  { symbol: 'MKR', price: 1_600, listed: '2017-12-01', listPrice: 600, volatility: 0.9, dailyVolume: 80e6, supply: 880e3 },
  { symbol: 'INJ', price: 22, listed: '2020-10-21', listPrice: 3.5, volatility: 1.1, dailyVolume: 120e6, supply: 97e6 },
  { symbol: 'RNDR', price: 7, listed: '2020-06-11', listPrice: 0.07, volatility: 1.1, dailyVolume: 150e6, supply: 520e6 },
  { symbol: 'GRT', price: 0.2, listed: '2020-12-17', listPrice: 0.5, volatility: 1.0, dailyVolume: 80e6, supply: 9.6e9 },
  { symbol: 'STX', price: 1.6, listed: '2019-10-25', listPrice: 0.12, volatility: 1.05, dailyVolume: 80e6, supply: 1.5e9 },
  { symbol: 'IMX', price: 1.4, listed: '2021-11-05', listPrice: 1.2, volatility: 1.1, dailyVolume: 50e6, supply: 1.7e9 },
  { symbol: 'XTZ', price: 1.2, listed: '2017-07-01', listPrice: 1.7, volatility: 0.9, dailyVolume: 40e6, supply: 1e9 },
  { symbol: 'SAND', price: 0.55, listed: '2020-08-14', listPrice: 0.05, volatility: 1.1, dailyVolume: 80e6, supply: 2.4e9 },
  { symbol: 'MANA', price: 0.5, listed: '2017-09-17', listPrice: 0.02, volatility: 1.05, dailyVolume: 60e6, supply: 1.9e9 },
  { symbol: 'AXS', price: 6, listed: '2020-11-04', listPrice: 0.15, volatility: 1.2, dailyVolume: 40e6, supply: 150e6 },
  { symbol: 'EOS', price: 0.8, listed: '2017-07-01', listPrice: 1.0, volatility: 0.9, dailyVolume: 150e6, supply: 1.5e9 },
  { symbol: 'THETA', price: 2, listed: '2018-01-17', listPrice: 0.2, volatility: 1.0, dailyVolume: 40e6, supply: 1e9 },
  { symbol: 'FTM', price: 0.7, listed: '2019-06-15', listPrice: 0.02, volatility: 1.15, dailyVolume: 150e6, supply: 2.8e9 },
  { symbol: 'KAS', price: 0.12, listed: '2021-11-07', listPrice: 0.0002, volatility: 1.1, dailyVolume: 80e6, supply: 25e9 },
  { symbol: 'WBTC', price: 95_000, listed: '2019-01-31', listPrice: 3_450, volatility: 0.6, dailyVolume: 300e6, supply: 140e3 },
  { symbol: 'LEO', price: 9, listed: '2019-05-20', listPrice: 1.0, volatility: 0.4, dailyVolume: 3e6, supply: 925e6 },
  { symbol: 'CRO', price: 0.15, listed: '2018-12-14', listPrice: 0.02, volatility: 0.95, dailyVolume: 30e6, supply: 27e9 },
];
