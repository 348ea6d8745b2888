/**
 * The one table from our symbols to CoinGecko's coin ids (`bitcoin`, `ethereum`, ...). CoinGecko
 * ids are stable and unique where symbols are not; the CoinGecko-compatible API
 * (src/coingecko/) speaks ids, the brapi API symbols, and both go through this table.
 *
 * A coin a deployment lists that is not in the table gets an id derived from its display name
 * (`coinIdFallback`), documented in docs/quotes.md ("Coin ids").
 */
export const COINGECKO_IDS: Readonly<Record<string, string>> = Object.freeze({
  BTC: 'bitcoin',
  ETH: 'ethereum',
  USDT: 'tether',
  XRP: 'ripple',
  BNB: 'binancecoin',
  SOL: 'solana',
  USDC: 'usd-coin',
  DOGE: 'dogecoin',
  ADA: 'cardano',
  TRX: 'tron',
  LINK: 'chainlink',
  AVAX: 'avalanche-2',
  XLM: 'stellar',
  TON: 'the-open-network',
  SHIB: 'shiba-inu',
  DOT: 'polkadot',
  BCH: 'bitcoin-cash',
  LTC: 'litecoin',
  SUI: 'sui',
  HBAR: 'hedera-hashgraph',
  UNI: 'uniswap',
  XMR: 'monero',
  DAI: 'dai',
  PEPE: 'pepe',
  NEAR: 'near',
  APT: 'aptos',
  ICP: 'internet-computer',
  AAVE: 'aave',
  ETC: 'ethereum-classic',
  MATIC: 'matic-network',
  POL: 'polygon-ecosystem-token',
  ATOM: 'cosmos',
  FIL: 'filecoin',
  ARB: 'arbitrum',
  OP: 'optimism',
  VET: 'vechain',
  ALGO: 'algorand',
  MKR: 'maker',
  INJ: 'injective-protocol',
  RNDR: 'render-token',
  RENDER: 'render-token',
  GRT: 'the-graph',
  STX: 'blockstack',
  IMX: 'immutable-x',
  XTZ: 'tezos',
  SAND: 'the-sandbox',
  MANA: 'decentraland',
  AXS: 'axie-infinity',
  EOS: 'eos',
  THETA: 'theta-token',
  FTM: 'fantom',
  KAS: 'kaspa',
  WBTC: 'wrapped-bitcoin',
  LEO: 'leo-token',
  CRO: 'crypto-com-chain',
  FDUSD: 'first-digital-usd',
  TUSD: 'true-usd',
  USDP: 'paxos-standard',
  BUSD: 'binance-usd',
  PYUSD: 'paypal-usd',
  USDE: 'ethena-usde',
  ENA: 'ethena',
  WLD: 'worldcoin-wld',
  SEI: 'sei-network',
  TIA: 'celestia',
  BONK: 'bonk',
  WIF: 'dogwifcoin',
  FET: 'fetch-ai',
  TAO: 'bittensor',
  ONDO: 'ondo-finance',
  FLOKI: 'floki',
  GALA: 'gala',
  CRV: 'curve-dao-token',
  LDO: 'lido-dao',
  RUNE: 'thorchain',
  QNT: 'quant-network',
  EGLD: 'elrond-erd-2',
  FLOW: 'flow',
  CHZ: 'chiliz',
  SNX: 'havven',
  COMP: 'compound-governance-token',
  ZEC: 'zcash',
  DASH: 'dash',
  NEO: 'neo',
  KSM: 'kusama',
  ENS: 'ethereum-name-service',
  '1INCH': '1inch',
  SUSHI: 'sushi',
  YFI: 'yearn-finance',
  BAT: 'basic-attention-token',
  ZIL: 'zilliqa',
  IOTA: 'iota',
  MINA: 'mina-protocol',
  APE: 'apecoin',
  CAKE: 'pancakeswap-token',
  PENDLE: 'pendle',
  PYTH: 'pyth-network',
  STRK: 'starknet',
  JUP: 'jupiter-exchange-solana',
});

/** `Some Coin 2.0` -> `some-coin-2-0`: the id of a coin the table does not know. */
export function coinIdFallback(name: string, symbol: string): string {
  const slug = name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  return slug === '' ? symbol.toLowerCase() : slug;
}

/**
 * Ids of the coins a deployment lists, both ways, built once at start-up. Two symbols that would
 * share an id (RNDR and RENDER both being Render) keep it for the first in `symbols` order; the
 * other gets its symbol appended, so every id names exactly one coin.
 */
export class CoinIds {
  private readonly idOf = new Map<string, string>();
  private readonly symbolOf = new Map<string, string>();

  constructor(symbols: readonly string[], nameOf: (symbol: string) => string, table: Readonly<Record<string, string>> = COINGECKO_IDS) {
    for (const s of symbols) {
      let id = table[s] ?? coinIdFallback(nameOf(s), s);
      if (this.symbolOf.has(id)) id = `${id}-${s.toLowerCase()}`;
      this.idOf.set(s, id);
      this.symbolOf.set(id, s);
    }
  }

  /** CoinGecko id of a listed symbol. */
  id(symbol: string): string | undefined {
    return this.idOf.get(symbol);
  }

  /** Listed symbol of a CoinGecko id (ids are lower case; the lookup is case-insensitive). */
  symbol(id: string): string | undefined {
    return this.symbolOf.get(id.toLowerCase());
  }
}
