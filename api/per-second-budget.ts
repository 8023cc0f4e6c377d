// A budget of so many a second, shared fairly among keys: what the decision record keeps of
// refusals (api/decision/record.ts) and the audit trail of refused sign-ins (api/audit.ts), so
// that a stranger in a loop can neither fill the database nor crowd out the others.

/**
 * At most `perSecond` a second, and of those at most `perKey` of one key: whether one
 * more of `key` may go now (`ok`), or which limit is spent. Keys are only remembered
 * for the second they took from, so there are never more than `perSecond` of them.
 */
export class PerSecondBudget {
  private second = -1;
  private used = 0;
  private readonly byKey = new Map<string, number>();

  constructor(
    private readonly perSecond: number,
    private readonly perKey = perSecond,
  ) {}

  take(now: number, key = ''): 'ok' | 'rate' | 'share' {
    const second = Math.floor(now / 1000);
    if (second !== this.second) {
      this.second = second;
      this.used = 0;
      this.byKey.clear();
    }
    if (this.used >= this.perSecond) return 'rate';
    const mine = this.byKey.get(key) ?? 0;
    if (mine >= this.perKey) return 'share';
    this.byKey.set(key, mine + 1);
    this.used++;
    return 'ok';
  }
}
