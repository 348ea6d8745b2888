import type { ErrorCode, ErrorDetails } from '../errors.js';

export type Language = 'en' | 'pt-BR';

export interface ErrorResponse {
  status: number;
  body: Record<string, unknown>;
  headers: Record<string, string>;
}

const STATUS: Readonly<Record<ErrorCode, number>> = {
  TOKEN_INVALID: 401,
  PLAN_NO_CRYPTO: 403,
  QUOTA_EXHAUSTED: 402,
  RATE_LIMITED: 429,
  STREAM_LIMIT: 429,
  STREAMS_FULL: 503,
  RATE_LIMIT_UNAVAILABLE: 503,
  LOGIN_FAILED: 401,
  LOGIN_THROTTLED: 429,
  CSRF_REJECTED: 403,
  SIGNED_OUT: 401,
  EMAIL_TAKEN: 409,
  SIGNUP_INVALID: 400,
  COIN_MISSING: 417,
  COIN_UNKNOWN: 400,
  COINS_TOO_MANY: 400,
  CURRENCY_INVALID: 400,
  RANGE_INVALID: 400,
  INTERVAL_INVALID: 400,
  DATES_INVALID: 400,
  HISTORY_TOO_LARGE: 400,
  HISTORY_BUSY: 503,
  SEARCH_NO_MATCH: 404,
  CURRENCY_MISSING: 417,
  CURRENCY_PAIR_UNKNOWN: 400,
  CURRENCY_PAIRS_TOO_MANY: 400,
  CURRENCY_NO_MATCH: 404,
  EXCHANGE_UNKNOWN: 404,
  HISTORY_BEYOND_PLAN: 400,
  QUOTE_UNAVAILABLE: 503,
  METHOD_NOT_ALLOWED: 405,
  ROUTE_NOT_FOUND: 404,
  BAD_REQUEST: 400,
  HOST_INVALID: 400,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  HEADERS_TOO_LARGE: 431,
  REQUEST_TIMEOUT: 408,
  SHUTTING_DOWN: 503,
  INTERNAL: 500,
};

const list = (v: readonly string[] | undefined): string => (v ?? []).join(', ');

/** English texts (default) and brapi's Portuguese texts, verbatim where brapi publishes one. */
const TEXT: Readonly<Record<ErrorCode, Record<Language, (d: ErrorDetails) => string>>> = {
  TOKEN_INVALID: {
    en: () => 'Your token is invalid, please check your token',
    'pt-BR': () => 'O seu token é inválido, por favor, verifique o seu token em brapi.dev/dashboard',
  },
  PLAN_NO_CRYPTO: {
    en: () => 'Your plan does not allow access to cryptocurrency data. Please consider upgrading to a paid plan',
    'pt-BR': () => 'O seu plano não permite acessar dados de criptomoedas. Por favor, considere fazer um upgrade para um plano pago em brapi.dev/dashboard',
  },
  QUOTA_EXHAUSTED: {
    en: () => 'You have reached the request limit of your plan. Please consider upgrading to a better plan',
    'pt-BR': () => 'Você atingiu o limite de requisições para o seu plano. Por favor, considere fazer um upgrade para um plano melhor em brapi.dev/dashboard',
  },
  RATE_LIMITED: {
    en: () => 'You have exceeded the rate limit of your plan',
    'pt-BR': () => 'Você excedeu o rate limit do seu plano',
  },
  STREAM_LIMIT: {
    en: (d) => `Too many open streams for this token (limit ${d.limit ?? 0}); close one first`,
    'pt-BR': (d) => `Muitos streams abertos para este token (limite ${d.limit ?? 0}); feche um antes`,
  },
  STREAMS_FULL: {
    en: () => 'The server has too many open streams, please retry shortly',
    'pt-BR': () => 'O servidor tem streams demais abertos, tente novamente em instantes',
  },
  RATE_LIMIT_UNAVAILABLE: {
    en: () => 'Rate limiting is temporarily unavailable, please retry shortly',
    'pt-BR': () => 'O controle de requisições está temporariamente indisponível, tente novamente em instantes',
  },
  LOGIN_FAILED: {
    en: () => 'Wrong email or password',
    'pt-BR': () => 'E-mail ou senha incorretos',
  },
  LOGIN_THROTTLED: {
    en: () => 'Too many attempts; please wait before trying again',
    'pt-BR': () => 'Muitas tentativas; aguarde antes de tentar novamente',
  },
  CSRF_REJECTED: {
    en: () => 'Missing or invalid CSRF token; reload the page and try again',
    'pt-BR': () => 'Token CSRF ausente ou inválido; recarregue a página e tente novamente',
  },
  SIGNED_OUT: {
    en: () => 'Please sign in',
    'pt-BR': () => 'Por favor, faça login',
  },
  EMAIL_TAKEN: {
    en: () => 'An account with this email already exists',
    'pt-BR': () => 'Já existe uma conta com este e-mail',
  },
  SIGNUP_INVALID: {
    en: (d) => d.reason ?? 'Invalid form',
    'pt-BR': (d) => d.reason ?? 'Formulário inválido',
  },
  COIN_MISSING: {
    en: () => 'Missing required parameter: `coin`',
    'pt-BR': () => 'Missing required parameter: `coin`',
  },
  COIN_UNKNOWN: {
    en: (d) => `Coin not found: ${list(d.coins)}`,
    'pt-BR': (d) => ((d.coins?.length ?? 0) > 1 ? `Não encontramos as criptomoedas ${list(d.coins)}` : `Não encontramos a criptomoeda ${list(d.coins)}`),
  },
  COINS_TOO_MANY: {
    en: (d) => `Your plan allows up to ${d.limit ?? 0} coins per request`,
    'pt-BR': (d) => `O seu plano permite até ${d.limit ?? 0} criptomoedas por requisição`,
  },
  CURRENCY_INVALID: {
    en: (d) => `Invalid field 'currency'. Valid currencies: ${list(d.valid)}`,
    'pt-BR': (d) => `Campo 'currency' inválido. Moedas válidas: ${list(d.valid)}`,
  },
  RANGE_INVALID: {
    en: (d) => `Invalid field 'range'. Valid ranges: ${list(d.valid)}`,
    'pt-BR': (d) => `Campo 'range' inválido. Ranges válidos: ${list(d.valid)}`,
  },
  INTERVAL_INVALID: {
    en: (d) => `Invalid field 'interval'. Valid intervals: ${list(d.valid)}`,
    'pt-BR': (d) => `Campo 'interval' inválido. Intervalos válidos: ${list(d.valid)}`,
  },
  DATES_INVALID: {
    en: (d) => `Invalid 'startDate'/'endDate': ${d.reason ?? ''}`,
    'pt-BR': (d) => `Campos 'startDate'/'endDate' inválidos: ${d.reason ?? ''}`,
  },
  HISTORY_TOO_LARGE: {
    en: (d) =>
      `This request asks for ${d.points ?? 0} candles (coins x points per coin); the limit is ${d.limit ?? 0} per request (QUOTES_HISTORY_MAX_POINTS). Ask for fewer coins, a coarser interval or a shorter range`,
    'pt-BR': (d) =>
      `Esta requisição pede ${d.points ?? 0} candles (moedas x pontos por moeda); o limite é ${d.limit ?? 0} por requisição (QUOTES_HISTORY_MAX_POINTS). Peça menos moedas, um intervalo maior ou um período menor`,
  },
  HISTORY_BUSY: {
    en: (d) => `The server is busy with ${d.limit ?? 0} large history requests (QUOTES_HISTORY_CONCURRENCY + QUOTES_HISTORY_QUEUE); please retry shortly`,
    'pt-BR': (d) => `O servidor está ocupado com ${d.limit ?? 0} requisições grandes de histórico (QUOTES_HISTORY_CONCURRENCY + QUOTES_HISTORY_QUEUE); tente novamente em instantes`,
  },
  SEARCH_NO_MATCH: {
    en: () => 'Coin not found',
    'pt-BR': () => 'Coin not found',
  },
  CURRENCY_MISSING: {
    en: () => "Missing required parameter: 'currency', e.g. /api/v2/currency?currency=USD-BRL",
    'pt-BR': () => "Não foi possível encontrar o parâmetro obrigatório: 'currency', exemplo: /api/v2/currency?currency=USD-BRL",
  },
  CURRENCY_PAIR_UNKNOWN: {
    en: (d) => `Currency pair not available: ${list(d.coins)} (pairs are FROM-TO of two currencies listed by /api/v2/currency/available)`,
    'pt-BR': (d) => `Algo deu errado ao buscar essa moeda: ${list(d.coins)} (pares são ORIGEM-DESTINO de duas moedas listadas em /api/v2/currency/available)`,
  },
  CURRENCY_PAIRS_TOO_MANY: {
    en: (d) => `Your plan allows up to ${d.limit ?? 0} currency pairs per request`,
    'pt-BR': (d) => `O seu plano permite até ${d.limit ?? 0} pares de moedas por requisição`,
  },
  CURRENCY_NO_MATCH: {
    en: () => 'Currency not found',
    'pt-BR': () => 'Currency not found',
  },
  EXCHANGE_UNKNOWN: {
    en: () => 'exchange not found',
    'pt-BR': () => 'exchange not found',
  },
  HISTORY_BEYOND_PLAN: {
    en: (d) => `The date is outside your plan's history (${d.limit ?? 0} days)`,
    'pt-BR': (d) => `A data está fora do histórico do seu plano (${d.limit ?? 0} dias)`,
  },
  QUOTE_UNAVAILABLE: {
    en: (d) => `Quote temporarily unavailable: ${list(d.coins)}${d.ageSeconds === undefined ? '' : ` (data is ${d.ageSeconds} s old; limit ${d.limitSeconds ?? '?'} s)`}`,
    'pt-BR': (d) => `Cotação temporariamente indisponível: ${list(d.coins)}${d.ageSeconds === undefined ? '' : ` (dados de ${d.ageSeconds} s atrás; limite ${d.limitSeconds ?? '?'} s)`}`,
  },
  METHOD_NOT_ALLOWED: {
    en: () => 'Method not allowed',
    'pt-BR': () => 'Método não permitido',
  },
  ROUTE_NOT_FOUND: {
    en: () => 'Route not found',
    'pt-BR': () => 'Rota não encontrada',
  },
  BAD_REQUEST: {
    en: (d) => (d.reason === undefined ? 'Bad request' : `Bad request: ${d.reason}`),
    'pt-BR': (d) => (d.reason === undefined ? 'Requisição inválida' : `Requisição inválida: ${d.reason}`),
  },
  HOST_INVALID: {
    en: (d) => `Invalid Host header: expected a host name or IP address with an optional port, at most ${d.limit ?? 0} characters`,
    'pt-BR': (d) => `Cabeçalho Host inválido: esperado um nome de host ou endereço IP com porta opcional, no máximo ${d.limit ?? 0} caracteres`,
  },
  PAYLOAD_TOO_LARGE: {
    en: (d) => `Request body too large: the limit is ${d.limit ?? 0} bytes`,
    'pt-BR': (d) => `Corpo da requisição grande demais: o limite é ${d.limit ?? 0} bytes`,
  },
  UNSUPPORTED_MEDIA_TYPE: {
    en: (d) => `Unsupported Content-Type${d.reason === undefined ? '' : ` '${d.reason}'`}: send application/json`,
    'pt-BR': (d) => `Content-Type não suportado${d.reason === undefined ? '' : ` '${d.reason}'`}: envie application/json`,
  },
  HEADERS_TOO_LARGE: {
    en: (d) => `Request header fields too large: the request line and headers may take at most ${d.limit ?? 0} bytes`,
    'pt-BR': (d) => `Cabeçalhos da requisição grandes demais: a linha de requisição e os cabeçalhos podem ter no máximo ${d.limit ?? 0} bytes`,
  },
  REQUEST_TIMEOUT: {
    en: () => 'The request was not received in time',
    'pt-BR': () => 'A requisição não foi recebida a tempo',
  },
  SHUTTING_DOWN: {
    en: () => 'The server is shutting down, please retry on another server or shortly',
    'pt-BR': () => 'O servidor está sendo desligado, tente novamente em outro servidor ou em instantes',
  },
  INTERNAL: {
    en: () => 'Something went wrong while fetching the data',
    'pt-BR': () => 'Algo deu errado ao buscar os dados',
  },
};

/** Maps a typed error to brapi's status and body. */
export function errorResponse(code: ErrorCode, details: ErrorDetails, lang: Language): ErrorResponse {
  const status = STATUS[code];
  const message = TEXT[code][lang](details);
  const headers: Record<string, string> = {};
  if (details.retryAfterSeconds !== undefined) headers['retry-after'] = String(details.retryAfterSeconds);
  if (details.allow !== undefined) headers.allow = details.allow;
  if (details.headers !== undefined) Object.assign(headers, details.headers);
  // brapi answers an empty /available search (crypto or currency) with a bare message (no `error` key).
  const body = code === 'SEARCH_NO_MATCH' || code === 'CURRENCY_NO_MATCH' ? { message } : { error: true, message };
  return { status, body, headers };
}

/** `pt-BR` when the caller's most preferred language is Portuguese, English otherwise. */
export function pickLanguage(acceptLanguage: string | undefined): Language {
  if (acceptLanguage === undefined || acceptLanguage === '') return 'en';
  let best: { tag: string; q: number } | undefined;
  for (const part of acceptLanguage.split(',')) {
    const [tagRaw, ...params] = part.trim().split(';');
    const tag = (tagRaw ?? '').trim().toLowerCase();
    if (tag === '') continue;
    let q = 1;
    for (const p of params) {
      const m = /^\s*q=([0-9.]+)\s*$/.exec(p);
      if (m?.[1] !== undefined) q = Number(m[1]);
    }
    if (q > 0 && (best === undefined || q > best.q)) best = { tag, q };
  }
  return best !== undefined && (best.tag === 'pt' || best.tag.startsWith('pt-')) ? 'pt-BR' : 'en';
}
