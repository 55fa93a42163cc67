// `taras plan`: the controller's current plan (GET /plan) drawn as a text
// Gantt chart, nodes down and time across (src/cli/render/plan.ts draws it).
// This module parses the window, node and width flags and fetches the plan.

import type { Command } from 'commander';
import type { ApiPlan } from '../api/types.js';
import { badFlag, fail, parseIntegerFlag } from './flags.js';
import { controllerOption, print, printJson, withClient } from './controller-client.js';
import { parseClockTime } from '../jobspec/values.js';

const DEFAULT_WIDTH = 100;
const MAX_HOURS = 24 * 366;
const UNTIL_FORMS = 'HH:MM (the next such time), tomorrow, now+2hours, or a date and time such as 2026-11-25T09:00';

interface PlanFlags {
  hours?: string;
  until?: string;
  nodes?: string;
  width?: string;
  controller?: string;
  json?: boolean;
}

/**
 * `--until` against the plan's now, in the process's zone: "HH:MM" is the
 * next time the clock reads so (today or tomorrow), anything else a date and
 * time Date.parse reads. null: not a time; a time at or before now is an error
 * of its own.
 */
export function untilMillis(text: string, nowMillis: number): number | null {
  // The forms --start and --begin take (18:00, tomorrow, now+2hours, 2026-12-01T09:00), then any date Date.parse reads.
  const clock = parseClockTime(text, nowMillis);
  if (clock.ok) return clock.value;
  if (/^\s*(now|\d{1,2}:\d{2})/i.test(text)) return null; // a clock or `now` form it refused (12:60, now+3parsecs)
  // A bare number would parse as a year: not what anyone means by --until.
  if (/^\d+$/.test(text.trim())) return null;
  const parsed = Date.parse(text);
  return Number.isNaN(parsed) ? null : parsed;
}

/** Ends the command with flags.ts's line for a bad value. */
function refuse(flag: string, raw: string, expected: string): never {
  const refused = badFlag(flag, raw, expected);
  fail(refused.ok ? `error: option '${flag}' got '${raw}'` : refused.message);
}

function parseHours(raw: string): number {
  const hours = /^\d+(\.\d+)?$/.test(raw.trim()) ? Number(raw) : NaN;
  if (!(hours > 0 && hours <= MAX_HOURS)) refuse('--hours', raw, `a number of hours above 0, at most ${MAX_HOURS} (e.g. 6 or 1.5)`);
  return hours;
}

export function registerPlanCommand(program: Command): void {
  program
    .command('plan')
    .description('the plan as a chart: running and planned jobs, reservations and maintenance on each node over time')
    .option('--hours <h>', 'show the next H hours (default: until the last bar ends)')
    .option('--until <time>', `show until TIME: ${UNTIL_FORMS}`)
    .option('--nodes <list>', 'only these nodes\' rows: node01,node03 or node[01-04]')
    .option('--width <n>', `columns to fit (default: the terminal's width, else ${DEFAULT_WIDTH})`)
    .option(...controllerOption)
    .option('--json', 'print the plan as JSON (nodes, items, unplanned)')
    .addHelpText('after', `
Each job is a letter (A-Z, a-z, 0-9, then *), # a reservation, ! a maintenance
window, . idle, + several jobs on a node at once; colours on a terminal unless
NO_COLOR is set. The legend below gives each letter's job, user, state, times
and nodes.

Examples:
  taras plan
  taras plan --hours 6
  taras plan --until 18:00 --nodes 'node[01-08]'
  taras plan --json
`)
    .action(async (flags: PlanFlags) => {
      if (flags.hours !== undefined && flags.until !== undefined) fail('error: give --hours or --until, not both');
      const hours = flags.hours === undefined ? undefined : parseHours(flags.hours);
      if (flags.until !== undefined && untilMillis(flags.until, Date.now()) === null) refuse('--until', flags.until, UNTIL_FORMS);
      let width = process.stdout.columns || DEFAULT_WIDTH;
      if (flags.width !== undefined) {
        const parsed = parseIntegerFlag('--width', flags.width, 20, 10_000, 'a whole number of columns from 20 to 10000');
        if (!parsed.ok) fail(parsed.message);
        width = parsed.value;
      }
      let nodes: string[] | undefined;
      if (flags.nodes !== undefined) {
        const { describeHostlistProblem, parseHostlist } = await import('../config/hostlist.js');
        const parsed = parseHostlist(flags.nodes);
        if (!parsed.ok) fail(`error: option '--nodes': ${describeHostlistProblem(parsed.problem)}`);
        nodes = parsed.names;
      }
      await withClient(flags.controller, async (api) => {
        const [plan, { renderPlan }] = await Promise.all([api.get<ApiPlan>('/plan'), import('./render/plan.js')]);
        if (flags.json) return printJson(plan);
        const now = Date.parse(plan.now);
        let until: number | undefined;
        if (hours !== undefined) until = now + hours * 3_600_000;
        if (flags.until !== undefined) {
          until = untilMillis(flags.until, now) as number;
          if (until <= now) fail(`error: option '--until' got '${flags.until}': that is not after the controller's clock (${plan.now})`);
        }
        const unknown = nodes?.filter((node) => !plan.nodes.includes(node)) ?? [];
        if (unknown.length > 0) {
          const { hostlistText } = await import('./render/text.js');
          fail(`error: option '--nodes': no node ${hostlistText(unknown)} in the plan (its nodes: ${hostlistText(plan.nodes)})`);
        }
        const color = process.stdout.isTTY === true && (process.env.NO_COLOR ?? '') === '';
        print(renderPlan(plan, { width, color, until, nodes }));
      });
    });
}
