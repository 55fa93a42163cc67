// Job history for `taras acct` (sacct) and `taras report` (sreport): the routes
// GET /acct and GET /report, read from the jobs table's columns (every job is
// kept for good; the queue's retention only hides finished jobs from listings).
//
// Who sees what (Slurm with PrivateData=jobs): a user sees only their own
// jobs; `all=1` from a user means their own; naming another user is refused.
// Administrators see everyone's when they ask (-a, -u, -j); root by default, as sacct. The usage report is the whole machine's, per
// user: administrators see every user, a user their own line and the totals.

import type { ApiAcctJob, ApiAcctPage, ApiUsageReport, ApiUserUsage, JobState } from '../api/types.js';
import { JOB_STATES } from '../store/events.js';
import { ACCOUNTING_FIELDS, type AccountingRow } from '../store/rows.js';
import type { Store, UsageTotals } from '../store/store.js';
import type { Caller } from '../net/identity.js';
import { RawJson, RouteError, type RequestContext, type Route } from '../net/server.js';
import { isoTime } from '../api/durations.js';

/** Jobs per page of GET /acct (a page is read from the window's index entries only). */
export const MAX_ACCT_PAGE = 20_000;
/** Jobs per page of GET /acct?format=rows (arrays: a quarter of the bytes; the window is read once per page). */
export const MAX_ACCT_ROWS_PAGE = 100_000;

export interface AccountingDeps {
  readonly store: Store;
  readonly callerOf: (ctx: RequestContext) => Caller;
  readonly isAdmin: (caller: Caller) => boolean;
  /** CPUs of the whole machine (for the report's share). */
  readonly totalCpus: () => number;
  readonly nowMs: () => number;
  /** The %N of throttled arrays with tasks not ended (sacct folds pending tasks as 12_[4-15%2]). */
  readonly arrayThrottles?: () => ReadonlyMap<number, number>;
}

const FIX = 'see `taras acct --help`';

function wholeNumber(ctx: RequestContext, name: string, fallback: number, max = Number.MAX_SAFE_INTEGER): number {
  const text = ctx.query.get(name);
  if (text === null) return fallback;
  if (!/^\d{1,16}$/.test(text) || Number(text) > max) throw new RouteError(400, `'${name}=${text}' is not a whole number from 0 to ${max}`, FIX);
  return Number(text);
}

function listOf(ctx: RequestContext, name: string): string[] | undefined {
  const text = ctx.query.get(name);
  return text === null ? undefined : text.split(',').filter((item) => item !== '');
}

/** Whose jobs the caller asks for and may see: undefined means everyone's (administrators only). */
function usersFor(ctx: RequestContext, caller: Caller, admin: boolean): string[] | undefined {
  const named = listOf(ctx, 'users');
  const all = ctx.query.get('all') === '1';
  // As sacct: root sees every user's jobs by default, other administrators their own unless they ask (-a, -u, -j).
  if (admin) return named ?? (all || ctx.query.get('jobs') !== null || caller.uid === 0 ? undefined : [caller.user]);
  const others = (named ?? []).filter((user) => user !== caller.user);
  if (others.length > 0) {
    throw new RouteError(403, `only administrators see other users' jobs (${others.join(', ')}); you are ${caller.user}`,
      'leave out -u to see your own jobs, or ask an administrator (root, or one listed in `admins` in cluster.toml)');
  }
  return [caller.user];
}

function statesOf(ctx: RequestContext): JobState[] | undefined {
  const states = listOf(ctx, 'states');
  for (const state of states ?? []) {
    if (!(JOB_STATES as readonly string[]).includes(state)) throw new RouteError(400, `no job state '${state}'`, `give states among ${JOB_STATES.join(', ')}`);
  }
  return states as JobState[] | undefined;
}

function windowOf(ctx: RequestContext, nowMs: number): { fromMs: number; toMs: number } {
  const fromMs = wholeNumber(ctx, 'start', 0);
  const toMs = wholeNumber(ctx, 'end', nowMs);
  if (toMs < fromMs) throw new RouteError(400, `the window ends (${isoTime(toMs)}) before it starts (${isoTime(fromMs)})`, 'give -E after -S');
  return { fromMs, toMs };
}

export const apiAcctJob = (row: AccountingRow): ApiAcctJob => row as ApiAcctJob;

/** The report of the window [startMs, endMs] (`taras report`) from each user's sums (Store.usageTotals), most CPU-hours first. */
export function usageReportOf(totals: readonly UsageTotals[], startMs: number, endMs: number, totalCpus: number): ApiUsageReport {
  const cpuSecondsAvailable = (totalCpus * Math.max(0, endMs - startMs)) / 1000;
  const users = totals.map((u): ApiUserUsage => ({
    user: u.user, jobs: u.jobs, allocCpuSeconds: u.allocCpuMs / 1000, usedCpuSeconds: u.usedCpuSeconds,
    meanWaitSeconds: u.waits === 0 ? null : u.waitedMs / 1000 / u.waits,
    share: cpuSecondsAvailable === 0 ? 0 : u.allocCpuMs / 1000 / cpuSecondsAvailable,
  })).sort((a, b) => b.allocCpuSeconds - a.allocCpuSeconds || a.user.localeCompare(b.user));
  return { startMs, endMs, cpuSecondsAvailable, users };
}

export function accountingRoutes(deps: AccountingDeps): Route[] {
  const { store } = deps;
  return [
    {
      method: 'GET', path: '/acct',
      handler: (ctx) => {
        const caller = deps.callerOf(ctx);
        const users = usersFor(ctx, caller, deps.isAdmin(caller));
        // 12: job 12, or every task of array 12; 12_3: task 3 of array 12.
        const refs = listOf(ctx, 'jobs')?.map((id) => {
          if (!/^\d{1,15}(_\d{1,9})?$/.test(id)) throw new RouteError(400, `'${id}' is not a job id`, 'give job ids as numbers, array tasks as ARRAYID_TASK: -j 12,13_2');
          return id;
        });
        const jobIds = refs?.filter((ref) => !ref.includes('_')).map(Number);
        const arrayTasks = refs?.filter((ref) => ref.includes('_'));
        const format = ctx.query.get('format') ?? 'jobs';
        if (format !== 'jobs' && format !== 'rows') throw new RouteError(400, `'format=${format}' is not a format of GET /acct`, 'give format=jobs (objects, the default) or format=rows (arrays)');
        const most = format === 'rows' ? MAX_ACCT_ROWS_PAGE : MAX_ACCT_PAGE;
        const limit = Math.min(most, wholeNumber(ctx, 'limit', most) || 1);
        const query = { ...windowOf(ctx, deps.nowMs()), users, states: statesOf(ctx), jobIds, arrayTasks, afterId: wholeNumber(ctx, 'after', 0) };
        if (format === 'rows') {
          // The rows as SQLite writes them (one string, no object per job); a full page may be followed by an empty one.
          // fields=a,b: only those (in ACCOUNTING_FIELDS order, the id always): what the caller's columns read.
          const asked = listOf(ctx, 'fields');
          const unknown = asked?.find((field) => !(ACCOUNTING_FIELDS as readonly string[]).includes(field));
          if (unknown !== undefined) throw new RouteError(400, `'${unknown}' is not a field of GET /acct`, `give fields among ${ACCOUNTING_FIELDS.join(', ')}`);
          const fields = asked === undefined ? [...ACCOUNTING_FIELDS] : ACCOUNTING_FIELDS.filter((field) => field === 'id' || asked.includes(field));
          const page = store.accountingJson({ ...query, limit }, fields);
          const next = page.count === limit ? page.lastId : null;
          // The throttles of arrays that may have pending tasks on the page (few: throttled arrays not ended), for the folded row's %N.
          const throttles = fields.includes('arrayJobId') ? deps.arrayThrottles?.() : undefined;
          const extra = throttles !== undefined && throttles.size > 0 ? `,"throttles":${JSON.stringify(Object.fromEntries(throttles))}` : '';
          const bytes = Buffer.concat([Buffer.from(`{"columns":${JSON.stringify(fields)},"rows":`), page.json, Buffer.from(`,"next":${JSON.stringify(next)}${extra}}`)]);
          return { status: 200, body: new RawJson(bytes) };
        }
        // One row more than the page: whether another page follows.
        const rows = store.accounting({ ...query, limit: limit + 1 });
        const page: ApiAcctPage = { jobs: rows.slice(0, limit).map(apiAcctJob), next: rows.length > limit ? rows[limit - 1].id : null };
        return { status: 200, body: page };
      },
    },
    {
      method: 'GET', path: '/report',
      handler: (ctx) => {
        const caller = deps.callerOf(ctx);
        const nowMs = deps.nowMs();
        const { fromMs, toMs } = windowOf(ctx, nowMs);
        // Summed by SQLite (a window of 100,000 jobs took 0.6 to 0.8 s as rows); a user's own line only, unless an administrator asks.
        const totals = store.usageTotals(fromMs, toMs, nowMs, deps.isAdmin(caller) ? undefined : caller.user);
        return { status: 200, body: usageReportOf(totals, fromMs, toMs, deps.totalCpus()) satisfies ApiUsageReport };
      },
    },
  ];
}
