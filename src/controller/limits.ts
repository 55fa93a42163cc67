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
  /** The scripts of one user's PENDING jobs together, in MiB; 0: no cap. */
  readonly maxPendingScriptMiB: number;
}

/** A submission's script against its user's pending ones: bytes already pending (batched ones included) and its own. */
export interface ScriptBytes {
  readonly pending: number;
  readonly added: number;
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
  admit(user: string, pending: number, jobs = 1, scripts: ScriptBytes = { pending: 0, added: 0 }): void {
    if (user === 'root') return;
    const { maxPendingPerUser, maxSubmitRate, maxPendingScriptMiB } = this.caps();
    // Pending jobs keep their scripts in the controller's memory: 4,270 scripts of 1 MB, under the job cap,
    // ran it out of heap, and every restart after (red team). A cap on their size, as on their number.
    if (maxPendingScriptMiB > 0 && scripts.added > 0 && scripts.pending + scripts.added > maxPendingScriptMiB * 1024 * 1024) {
      const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
      throw new LimitRefused(
        `user ${user} has ${mib(scripts.pending)} of scripts in pending jobs, and this script's ${mib(scripts.added)} would pass the most one user may have (max_pending_script_size = ${maxPendingScriptMiB}M); nothing was stored`,
        `wait for some of them to start, or cancel some (taras queue --user ${user} --state PENDING), or keep large inputs in files the script reads, or ask an administrator to raise max_pending_script_size in cluster.toml`,
      );
    }
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

/** A read shorter than this never makes its user wait: small clusters never notice the limit below. */
const HEAVY_FLOOR_MS = 50;
/** After a read of d ms, its user's next one waits this many times d: one user's heavy reads take at most a quarter of the controller's time. */
const HEAVY_REST_FACTOR = 3;
/** The longest rest after one read (a client gives up on an answer after 30 s). */
const MAX_HEAVY_REST_MS = 10_000;
/** Heavy reads one user may have waiting behind a rest; one more gets 429. */
const MAX_HEAVY_WAITING = 4;
/** Heavy reads one user may have in flight at all, quick ones included (a burst that came in one turn of the event loop). */
const MAX_HEAVY_IN_FLIGHT = 16;
/** Past this many users remembered, those with nothing waiting and no rest left are forgotten. */
const HEAVY_SWEEP_AT = 1_000;

interface HeavyChain {
  /** Settles when this user's last heavy read so far has run. */
  tail: Promise<void>;
  /** This user's next heavy read starts no sooner (the monotonic clock's ms). */
  readyAtMs: number;
  waiting: number;
}

/**
 * Reads whose cost grows with the cluster and the queue, each a stretch of
 * the controller's one thread: a what-if (a plan of the whole queue),
 * `--test-only`, accounting listings, reports and the plan. Any user may ask
 * for them, so one user's are run one at a time and, after one that took d
 * ms (d of 50 or more), the next waits 3d (at most 10 s): reads that long
 * take at most a quarter of the controller's time, whatever a script asks.
 * Shorter reads never wait. The wait is served, not refused (a listing's
 * pages come one after another); a request that comes while 4 of its user's
 * wait behind a rest gets 429. Administrators are not limited (the daemon
 * does not route theirs here). d is the read's own synchronous work,
 * measured around the call: other work the event loop does meanwhile is
 * not charged to it. The clock is monotonic, so a change of the system's
 * time never lengthens a wait.
 */
export class HeavyReads {
  private readonly chains = new Map<string, HeavyChain>();
  /** Reads waiting out a rest: close() ends their wait. */
  private readonly resting = new Set<{ timer: NodeJS.Timeout; reject: (error: Error) => void }>();
  private closedWith: Error | null = null;

  constructor(private readonly clockMs: () => number = () => performance.now(), private readonly floorMs = HEAVY_FLOOR_MS) {}

  async run<T>(user: string, what: string, work: () => T | Promise<T>): Promise<T> {
    if (this.closedWith !== null) throw this.closedWith;
    if (this.chains.size >= HEAVY_SWEEP_AT) this.sweep();
    const chain = this.chains.get(user) ?? { tail: Promise.resolve(), readyAtMs: 0, waiting: 0 };
    this.chains.set(user, chain);
    const restMs = chain.readyAtMs - this.clockMs();
    if ((chain.waiting >= MAX_HEAVY_WAITING && restMs > 0) || chain.waiting >= MAX_HEAVY_IN_FLIGHT) {
      throw new LimitRefused(
        `${user} has ${chain.waiting} what-ifs, test-only submissions, accounting listings, reports or plans waiting, the most one user may have; this ${what} was not run`,
        'wait for them to be answered, then ask again (after a read that took a while, its user\'s next one waits three times as long, so that one user does not take the controller\'s time from everyone)',
        Math.max(1, Math.ceil(restMs / 1000)),
      );
    }
    chain.waiting++;
    const previous = chain.tail;
    let settle!: () => void;
    chain.tail = new Promise((resolve) => (settle = resolve));
    try {
      await previous;
      const rest = chain.readyAtMs - this.clockMs();
      if (this.closedWith === null && rest > 0) {
        await new Promise<void>((resolve, reject) => {
          const entry = { timer: setTimeout(() => (this.resting.delete(entry), resolve()), rest), reject };
          this.resting.add(entry);
        });
      }
      if (this.closedWith !== null) throw this.closedWith;
      const began = performance.now();
      let result: T | Promise<T>;
      try {
        result = work();
      } finally {
        const took = performance.now() - began;
        if (took >= this.floorMs) chain.readyAtMs = this.clockMs() + Math.min(MAX_HEAVY_REST_MS, HEAVY_REST_FACTOR * took);
      }
      return await result;
    } finally {
      chain.waiting--;
      settle();
    }
  }

  /**
   * The controller stops: every read still waiting (a rest, or behind its
   * user's running one) fails with `error` instead of running against a closed
   * store up to 10 s later; so does every later one.
   */
  close(error: Error): void {
    this.closedWith = error;
    for (const entry of this.resting) {
      clearTimeout(entry.timer);
      entry.reject(error);
    }
    this.resting.clear();
  }

  private sweep(): void {
    const now = this.clockMs();
    for (const [user, chain] of this.chains) if (chain.waiting === 0 && chain.readyAtMs <= now) this.chains.delete(user);
  }
}

/**
 * Requests of one user that may wait for their turn, at most; one more gets 429. High: they wait a turn each,
 * not long (the tasks of a big array that each run squeue as they start must all be answered). The controller
 * gives a quarter of its connection cap (at least 16), so that one user's waiting requests, which hold their
 * connections, never hold them all.
 */
const MAX_TURNS_WAITING = 1024;

interface Turns {
  /** A request of this user's has run in this turn of the event loop: the next waits for the next turn. */
  busy: boolean;
  /** Waiting, in the order they came. */
  readonly queue: { run: () => void; fail: (error: Error) => void }[];
}

/**
 * One request per user per turn of the event loop. Reads each too short for
 * HeavyReads (a page of GET /jobs takes tens of milliseconds at 50,000 jobs)
 * would otherwise run back to back when one user sends hundreds at once,
 * and another user's `sinfo`, read in the same turn, would wait for all of
 * them (about 12 s under 450 such pages). Now a user's first request of a
 * turn runs at once, as before; the next ones wait in order, one per later
 * turn (setImmediate: after the I/O that came meanwhile, so everyone else's
 * requests are read and answered in between). Past a quarter of the
 * connection cap waiting (at least 16, at most 1,024), 429.
 * Administrators and the agents are not routed here.
 */
export class UserTurns {
  private readonly users = new Map<string, Turns>();
  private closedWith: Error | null = null;

  /** @param maxWaiting read at each request (the connection cap is known once the server exists). */
  constructor(private readonly maxWaiting: () => number = () => MAX_TURNS_WAITING) {}

  run<T>(user: string, work: () => T | Promise<T>): T | Promise<T> {
    if (this.closedWith !== null) throw this.closedWith;
    let turns = this.users.get(user);
    if (turns === undefined) this.users.set(user, (turns = { busy: false, queue: [] }));
    if (!turns.busy) {
      this.take(user, turns);
      return work();
    }
    if (turns.queue.length >= Math.min(MAX_TURNS_WAITING, this.maxWaiting())) {
      throw new LimitRefused(
        `${user} has ${turns.queue.length} requests waiting to be answered, the most one user may have; this one was not run`,
        'send fewer requests at once (wait for answers before asking again): each user\'s requests are answered one a turn, between other users\'',
        1,
      );
    }
    return new Promise<T>((resolve, reject) => {
      turns.queue.push({
        run: () => {
          try {
            resolve(work());
          } catch (error) {
            reject(error);
          }
        },
        fail: reject,
      });
    });
  }

  /** Marks the user's turn as used; at the next turn, the user's next waiting request (if any) runs. */
  private take(user: string, turns: Turns): void {
    turns.busy = true;
    setImmediate(() => {
      const next = turns.queue.shift();
      if (next === undefined) {
        turns.busy = false;
        if (this.users.get(user) === turns) this.users.delete(user);
        return;
      }
      if (this.closedWith !== null) {
        for (const waiting of [next, ...turns.queue.splice(0)]) waiting.fail(this.closedWith);
        turns.busy = false;
        this.users.delete(user);
        return;
      }
      this.take(user, turns);
      next.run();
    });
  }

  /** The controller stops: requests still waiting for their turn fail with `error`, as later ones do. */
  close(error: Error): void {
    this.closedWith = error;
  }
}
