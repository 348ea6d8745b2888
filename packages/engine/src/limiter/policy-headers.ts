// `RateLimit-Policy` and `RateLimit` response headers (LIMIT_RESPONSE_POLICY_HEADERS_ENABLED; docs/ratelimit.md,
// "RateLimit-Policy headers (extension)"), in the structured-field syntax of
// draft-ietf-httpapi-ratelimit-headers-11 (May 2026): RateLimit-Policy is a List of policy Items
// (`"name";q=<quota>;w=<window seconds>`), RateLimit a List with the Item of the limit that
// decides (`"name";r=<remaining>;t=<seconds until reset>`). A client thus sees every budget that
// applied — the per-second and the per-day limit of a `rate_limits` descriptor — and the one it
// is closest to running out of.
import type { LimitMatch } from '../config/rule-tree.js';
import { sfString } from '../config/rule-tree.js';
import type { DescriptorStatus, HeaderValue } from '../domain.js';

export const POLICY_HEADER = 'RateLimit-Policy';
export const SERVICE_LIMIT_HEADER = 'RateLimit';

/**
 * The two headers for the counted limits of a request (`matches` per slot; `owner`: the descriptor
 * of each slot, undefined when slots are the descriptors), or none when no limit applied. `chosen`:
 * the slot whose status the RateLimit header describes (-1: none). A limit is named by its rule's
 * `name`; an unnamed one by its descriptor's index (`"0"`), and within a `rate_limits` list by its
 * position among the limits that applied (`"0.1"`).
 */
export function policyHeaders(
  matches: readonly (LimitMatch | undefined)[],
  statuses: readonly DescriptorStatus[],
  owner: readonly number[] | undefined,
  chosen: number,
): HeaderValue[] {
  let policy = '';
  let service = '';
  const seen = new Set<string>();
  let position = 0;
  for (let s = 0; s < matches.length; s++) {
    const d = owner === undefined ? s : owner[s]!;
    position = s > 0 && owner !== undefined && owner[s - 1] === d ? position + 1 : 0;
    const m = matches[s];
    if (m === undefined) continue;
    const limit = m.limit;
    const grouped = owner !== undefined && (owner[s + 1] === d || position > 0);
    const name = limit.policyName !== '' ? limit.policyName : sfString(grouped ? `${d}.${position}` : String(d));
    const item = name + limit.policyParams;
    if (!seen.has(item)) {
      seen.add(item);
      policy += (policy === '' ? '' : ', ') + item;
    }
    if (s === chosen) {
      const st = statuses[s]!;
      service = `${name};r=${st.limitRemaining};t=${st.durationUntilReset ?? 0}`;
    }
  }
  if (policy === '') return [];
  const out: HeaderValue[] = [{ key: POLICY_HEADER, value: policy }];
  if (service !== '') out.push({ key: SERVICE_LIMIT_HEADER, value: service });
  return out;
}
