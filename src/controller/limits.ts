// Per-user submission caps, checked before a submission is batched (so before
// anything is stored): the number of PENDING jobs a user may have
// (`max_pending_per_user`, Slurm's MaxSubmitJobs) and how fast a user may
// submit (`max_submit_rate` per second, a token bucket holding one second's
// worth, as Slurm's rl_* rate limiting). Root is exempt, as Slurm exempts
// root and SlurmUser from its rate limiting and root has no association
// limits. A refusal is a 429 naming the cap, the limit, the current count
// and what to do.

export interface SubmitCaps {
  /** 0: no cap. */
  readonly maxPendingPerUser: number;
  /** Submissions per second; 0: no cap. */
  readonly maxSubmitRate: number;
}

/** A submission over a cap: the message names it; `retryAfterSeconds` when waiting helps (the rate cap). */
export class LimitRefused extends Error {
  constructor(message: string, readonly fix: string, readonly retryAfterSeconds?: number) {
    super(message);
    this.name = 'LimitRefused';
  }
}

interface Bucket {
  tokens: number;
  atMs: number;
  /** Submissions admitted since the bucket was last full, and when that was: the count a refusal reports. */
  spent: number;
  fullAtMs: number;
}

/** Past this many users with a bucket, the full ones (the same as none) are dropped. */
const SWEEP_AT = 10_000;

export class SubmitLimits {
  private readonly buckets = new Map<string, Bucket>();

  /** @param caps read at each check, so a reconfigure takes effect at once. */
  constructor(private readonly caps: () => SubmitCaps, private readonly clockMs: () => number = Date.now) {}

  /**
   * Admits one submission of `user`, who has `pending` PENDING jobs counting
   * those accepted but not yet committed, or throws LimitRefused. An admitted
   * submission spends a token even if it is refused later for another reason.
   */
  admit(user: string, pending: number, jobs = 1): void {
    if (user === 'root') return;
    const { maxPendingPerUser, maxSubmitRate } = this.caps();
    // An array's tasks count one each, as Slurm counts them against MaxSubmitJobs.
    if (maxPendingPerUser > 0 && pending + jobs - 1 >= maxPendingPerUser) {
      // An array's tasks named, so that a user with few jobs sees why (a 10,000-task array was told only "10 pending jobs").
      const count = jobs > 1 ? `${pending} pending jobs and this array's ${jobs} tasks would make ${pending + jobs}, more than` : `${pending} pending jobs,`;
      throw new LimitRefused(
        `user ${user} has ${count} the most one user may have (max_pending_per_user = ${maxPendingPerUser}, Slurm's MaxSubmitJobs: QOSMaxSubmitJobPerUserLimit); nothing was stored`,
        `wait for some of them to start, or cancel some (taras queue --user ${user} --state PENDING), or ask an administrator to raise max_pending_per_user in cluster.toml`,
      );
    }
    if (maxSubmitRate > 0) this.take(user, maxSubmitRate);
  }

  private take(user: string, rate: number): void {
    const now = this.clockMs();
    let bucket = this.buckets.get(user);
    if (bucket === undefined) {
      if (this.buckets.size >= SWEEP_AT) this.sweep(rate, now);
      bucket = { tokens: rate, atMs: now, spent: 0, fullAtMs: now };
      this.buckets.set(user, bucket);
    }
    bucket.tokens = Math.min(rate, bucket.tokens + ((now - bucket.atMs) / 1000) * rate);
    bucket.atMs = now;
    if (bucket.tokens >= rate) {
      bucket.spent = 0;
      bucket.fullAtMs = now;
    }
    if (bucket.tokens < 1) {
      const waitSeconds = Math.max(1, Math.ceil((1 - bucket.tokens) / rate));
      const seconds = Math.max(0.001, (now - bucket.fullAtMs) / 1000);
      throw new LimitRefused(
        `user ${user} submits faster than max_submit_rate = ${rate} jobs per second allows (${bucket.spent} submitted in the last ${seconds.toFixed(seconds < 10 ? 1 : 0)} s); nothing was stored`,
        `wait ${waitSeconds} s and submit again (the answer's Retry-After says when), or submit fewer jobs (a job array or one job that runs many tasks), or ask an administrator to raise max_submit_rate in cluster.toml`,
        waitSeconds,
      );
    }
    bucket.tokens -= 1;
    bucket.spent++;
  }

  private sweep(rate: number, now: number): void {
    for (const [user, bucket] of this.buckets) {
      if (bucket.tokens + ((now - bucket.atMs) / 1000) * rate >= rate) this.buckets.delete(user);
    }
  }
}
