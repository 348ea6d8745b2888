// Max-min fair division of one bucket's global quota among the data plane instances that report
// it. Pure integer arithmetic: callers express capacity and demands in one integer unit (the RLQS
// server uses micro-requests per quota period), so the shares sum to the capacity exactly and
// every replica that divides the same numbers gets the same shares.
//
// Water-filling: instances are served from the smallest demand up; each gets its demand while
// that is below an equal split of what is left, and the rest split what remains equally. An
// instance asking for less than its equal share therefore leaves the difference to the busier
// ones, and no instance whose demand is unmet gets less than any other (up to one unit, the
// remainder of an integer division, handed out in the caller's order).
//
// `share` adds the spare capacity (when the demands sum to less than the capacity) on top, split
// equally: an instance whose traffic rises before the next division has room to grow into, and
// the sum still never passes the capacity.

export interface FairDivision {
  /** Max-min fair allocation: Σ fair = min(capacity, Σ demand), fair_i ≤ demand_i. */
  readonly fair: number[];
  /** fair plus an equal part of the unused capacity: Σ share ≤ capacity, share_i ≥ fair_i. */
  readonly share: number[];
}

/**
 * Divides `capacity` among `demands` (non-negative safe integers, same unit). Remainders of the
 * integer divisions go one unit each to the instances earliest in the given order, so callers
 * pass instances in a stable order (the RLQS server sorts them by id).
 */
export function divideFairly(capacity: number, demands: readonly number[]): FairDivision {
  const n = demands.length;
  const fair = new Array<number>(n).fill(0);
  if (n === 0 || capacity <= 0) return { fair, share: fair.slice() };
  // Indices by demand, ties by position: the water-filling order.
  const order = demands.map((_, i) => i).sort((a, b) => demands[a]! - demands[b]! || a - b);
  let left = capacity;
  let k = 0;
  for (; k < n; k++) {
    const i = order[k]!;
    const d = demands[i]!;
    const waiting = n - k;
    // Everyone still waiting asks for at least d; if d fits an equal split, give it.
    if (d <= idiv(left, waiting)) {
      fair[i] = d;
      left -= d;
    } else {
      break;
    }
  }
  if (k < n) {
    // Instances order[k..] all want more than an equal split of `left`: they share it equally.
    // Each of them wants more than ⌊left / waiting⌋, so level + 1 never exceeds a demand.
    const waiting = n - k;
    const level = idiv(left, waiting);
    let extra = left - level * waiting;
    const unmet = new Uint8Array(n);
    for (let j = k; j < n; j++) {
      fair[order[j]!] = level;
      unmet[order[j]!] = 1;
    }
    for (let i = 0; i < n && extra > 0; i++) {
      if (unmet[i] === 1) {
        fair[i] = level + 1;
        extra--;
      }
    }
    return { fair, share: fair.slice() };
  }
  // Every demand met: split what is left equally on top.
  const share = fair.slice();
  const each = idiv(left, n);
  let extra = left - each * n;
  for (let i = 0; i < n; i++) {
    share[i] = fair[i]! + each + (extra > 0 ? 1 : 0);
    if (extra > 0) extra--;
  }
  return { fair, share };
}

/** ⌊a / b⌋ for safe non-negative integers, exact even where the float quotient rounds up to an integer. */
function idiv(a: number, b: number): number {
  let q = Math.floor(a / b);
  if (q * b > a) q--;
  else if ((q + 1) * b <= a) q++;
  return q;
}
