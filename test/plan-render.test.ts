// `taras plan`: the Gantt chart of a fixed plan (4 nodes, 2 running jobs, 2
// pending, a reservation and a maintenance window) at Tue 24 Nov 2026 12:00
// UTC, checked cell by cell against the time scale; then the command itself
// against a stand-in controller that serves GET /plan on a Unix socket.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { ApiPlan, ApiPlanItem } from '../src/api/types.js';
import { untilMillis } from '../src/cli/plan.js';
import { renderPlan, type PlanOptions } from '../src/cli/render/plan.js';

const NOW = '2026-11-24T12:00:00Z';
const HOUR_MS = 3_600_000;
const at = (time: string): number => Date.parse(`2026-11-24T${time}:00Z`);

function item(fields: Partial<ApiPlanItem> & Pick<ApiPlanItem, 'kind' | 'id' | 'state' | 'nodes' | 'start' | 'end'>): ApiPlanItem {
  return { name: fields.id, user: null, ...fields };
}

const PLAN: ApiPlan = {
  now: NOW,
  nodes: ['node01', 'node02', 'node03', 'node04'],
  items: [
    item({ kind: 'job', id: '17', name: 'train-resnet50', user: 'alice', state: 'RUNNING', nodes: ['node01', 'node02'], start: '2026-11-24T10:00:00Z', end: '2026-11-24T14:00:00Z' }),
    item({ kind: 'job', id: '19', name: 'postprocess', user: 'bob', state: 'RUNNING', nodes: ['node03'], start: '2026-11-24T11:05:00Z', end: '2026-11-24T13:30:00Z' }),
    item({ kind: 'job', id: '42', name: 'sweep', user: 'carol', state: 'PENDING', nodes: ['node01', 'node02'], start: '2026-11-24T14:00:00Z', end: '2026-11-24T16:00:00Z' }),
    // Two minutes: less than a column at every width below.
    item({ kind: 'job', id: '43', name: 'quick-check', user: 'alice', state: 'PENDING', nodes: ['node03'], start: '2026-11-24T13:30:00Z', end: '2026-11-24T13:32:00Z' }),
    item({ kind: 'reservation', id: 'course', state: 'RESERVED', nodes: ['node04'], start: '2026-11-24T12:30:00Z', end: '2026-11-24T15:00:00Z' }),
    item({ kind: 'maintenance', id: 'firmware', state: 'MAINT', nodes: ['node03', 'node04'], start: '2026-11-24T16:00:00Z', end: '2026-11-24T18:00:00Z' }),
  ],
  unplanned: [44, 45],
};

const render = (options: Partial<PlanOptions> = {}, plan: ApiPlan = PLAN): string => renderPlan(plan, { width: 80, color: false, timeZone: 'UTC', ...options });
const lines = (output: string): string[] => output.replace(/\n$/, '').split('\n');
const ANSI = /\x1b\[[0-9;]*m/g;
const visible = (line: string): number => Array.from(line.replace(ANSI, '')).length;
/** The chart cells of a node's row (after the label column: the longest name, then two spaces). */
function row(output: string, node: string, labelWidth = 6): string {
  const line = lines(output).find((text) => text.startsWith(`${node} `));
  assert.ok(line !== undefined, `no row for ${node} in:\n${output}`);
  return line.slice(labelWidth + 2);
}

describe('renderPlan: the chart', () => {
  // 80 columns, labels of 6 and a gap of 2: 72 chart columns over 12:00-18:00 (the last bar's end), 5 minutes each.
  const COLUMNS = 72;
  const MS_PER_COLUMN = (at('18:00') - at('12:00')) / COLUMNS;
  const column = (time: string): number => Math.round((at(time) - at('12:00')) / MS_PER_COLUMN);
  const output = render();

  it('draws one row per node, in the plan\'s order, each as wide as the chart', () => {
    const rows = lines(output).filter((line) => /^node\d\d /.test(line));
    assert.deepEqual(rows.map((line) => line.slice(0, 6)), ['node01', 'node02', 'node03', 'node04']);
    for (const line of rows) assert.equal(line.length, 80);
  });

  it('puts each letter at the columns of its times, on every node of the job, over idle dots', () => {
    assert.equal(MS_PER_COLUMN, 5 * 60_000);
    for (const node of ['node01', 'node02']) {
      const cells = row(output, node);
      // Job 17 started before now: its bar begins at the left edge.
      assert.equal(cells.slice(0, column('14:00')), 'A'.repeat(column('14:00')));
      assert.equal(cells.slice(column('14:00'), column('16:00')), 'C'.repeat(24));
      assert.equal(cells.slice(column('16:00')), '.'.repeat(COLUMNS - column('16:00')));
    }
    const node03 = row(output, 'node03');
    assert.equal(node03.slice(0, column('13:30')), 'B'.repeat(18));
    assert.equal(node03.slice(column('16:00')), '!'.repeat(24));
    const node04 = row(output, 'node04');
    assert.equal(node04.slice(0, column('12:30')), '......');
    assert.equal(node04.slice(column('12:30'), column('15:00')), '#'.repeat(30));
    assert.equal(node04.slice(column('15:00'), column('16:00')), '.'.repeat(12));
    assert.equal(node04.slice(column('16:00')), '!'.repeat(24));
  });

  it('gives a bar shorter than a column one cell', () => {
    const node03 = row(output, 'node03');
    assert.equal(node03[column('13:30')], 'D');
    assert.equal(node03.split('D').length - 1, 1);
  });

  it('labels the hours above a rule with a tick at each', () => {
    const [title, blank, labels, rule] = lines(output);
    assert.equal(title, 'Tue 24 Nov 2026 12:00 to 18:00; one column: 5 min; 4 nodes');
    assert.equal(blank, '');
    assert.equal(labels, '        12:00       13:00       14:00       15:00       16:00       17:00');
    for (const hour of ['13:00', '14:00', '17:00']) {
      assert.equal(labels.indexOf(hour), 8 + column(hour));
      assert.equal(rule[8 + column(hour)], '|');
    }
    assert.equal(rule.length, 80);
  });

  it('lists every bar in the legend: letter, id, user, state, start and end in local time, nodes, name', () => {
    const legend = lines(output).slice(lines(output).indexOf('', 2) + 1);
    assert.deepEqual(legend, [
      '   ID        USER   STATE     START        END    NODES        NAME',
      'A  17        alice  RUNNING   today 10:00  14:00  node[01-02]  train-resnet50',
      'B  19        bob    RUNNING   today 11:05  13:30  node03       postprocess',
      'C  42        carol  PENDING   today 14:00  16:00  node[01-02]  sweep',
      'D  43        alice  PENDING   today 13:30  13:32  node03       quick-check',
      '#  course    -      RESERVED  today 12:30  15:00  node04       course',
      '!  firmware  -      MAINT     today 16:00  18:00  node[03-04]  firmware',
      '.  idle',
      'not planned: 44, 45 (no node that counts can hold them)',
    ]);
  });

  it('shows the local time of the zone it is given', () => {
    const berlin = render({ timeZone: 'Europe/Berlin' });
    assert.match(lines(berlin)[0], /^Tue 24 Nov 2026 13:00 to 19:00;/);
    assert.match(lines(berlin)[2], /^ {8}13:00 {7}14:00/);
    assert.match(berlin, /^A {2}17 .* today 11:00 {2}15:00 /m);
  });
});

describe('renderPlan: widths and colours', () => {
  it('never writes a line wider than the width, coloured or not', () => {
    for (const width of [20, 30, 40, 57, 80, 100, 143, 240]) {
      for (const color of [false, true]) {
        const output = render({ width, color });
        for (const line of lines(output)) assert.ok(visible(line) <= width, `${width} columns, colour ${color}: "${line}" is ${visible(line)} wide`);
      }
    }
  });

  it('writes no escape codes without colour, and with colour the same text painted', () => {
    const plain = render({ width: 100 });
    assert.doesNotMatch(plain, /\x1b/);
    const colored = render({ width: 100, color: true });
    assert.match(colored, /\x1b\[[0-9;]*m/);
    assert.equal(colored.replace(ANSI, ''), plain);
    // A background per job, another for the reservation and the window; idle cells stay plain.
    assert.match(row(colored, 'node01'), /^\x1b\[30;106mA+\x1b\[0m\x1b\[30;103mC+\x1b\[0m\.+$/);
    assert.match(row(colored, 'node04'), /\x1b\[30;47m#+\x1b\[0m\.+\x1b\[97;41m!+\x1b\[0m$/);
    assert.match(colored, /^\x1b\[30;106mA\x1b\[0m {2}17 /m);
  });

  it('still draws every row and entry at 40 columns, the legend two lines an entry', () => {
    const output = render({ width: 40 });
    for (const node of PLAN.nodes) assert.equal(row(output, node).length, 32);
    assert.equal(row(output, 'node03')[Math.round((at('13:30') - at('12:00')) / ((6 * HOUR_MS) / 32))], 'D');
    const text = lines(output);
    assert.ok(text.includes('A  17 alice RUNNING train-resnet50'));
    assert.ok(text.includes('   today 10:00 - 14:00, node[01-02]'));
    assert.ok(text.includes('!  firmware MAINT firmware'));
    assert.deepEqual(text.slice(-2), ['not planned: 44, 45', '(no node that counts can hold them)']);
  });

  it('cuts long node names rather than the chart below ten columns', () => {
    const plan: ApiPlan = { ...PLAN, nodes: ['compute-node-with-a-very-long-name', ...PLAN.nodes] };
    const output = render({ width: 30 }, plan);
    const first = lines(output).find((line) => line.startsWith('compute'))!;
    assert.equal(first, 'compute-node-with…  ..........');
  });
});

describe('renderPlan: windows, filters and crowds', () => {
  it('labels a span of several days with the weekday', () => {
    const output = render({ until: Date.parse(NOW) + 3 * 24 * HOUR_MS });
    const [title, , labels] = lines(output);
    assert.equal(title, 'Tue 24 Nov 2026 12:00 to Fri 27 Nov 12:00; one column: 1 h; 4 nodes');
    // 72 columns of an hour: a tick every 12 hours, the labels nine wide.
    assert.equal(labels, '        Tue 12:00   Wed 00:00   Wed 12:00   Thu 00:00   Thu 12:00   Fri 00:00');
    assert.equal(row(output, 'node01').slice(0, 4), 'AACC');
  });

  it('--hours: cuts bars at the window and counts what starts after it', () => {
    const output = render({ until: Date.parse(NOW) + 2 * HOUR_MS });
    assert.equal(row(output, 'node01'), 'A'.repeat(72));
    assert.equal(row(output, 'node04'), `${'.'.repeat(18)}${'#'.repeat(54)}`);
    assert.equal(lines(output)[0], 'Tue 24 Nov 2026 12:00 to 14:00; one column: 1 min 40 s; 4 nodes');
    assert.doesNotMatch(output, /^. {2}42 /m);
    assert.ok(lines(output).includes('2 more items start after today 14:00; --hours or --until shows further'));
  });

  it('--nodes: only those rows, and only the bars on them in the legend, lettered from A', () => {
    const output = render({ nodes: ['node04', 'node03'] });
    assert.deepEqual(lines(output).filter((line) => line.startsWith('node')), [
      `node03  ${'A'.repeat(18)}B${'.'.repeat(29)}${'!'.repeat(24)}`,
      `node04  ......${'#'.repeat(30)}${'.'.repeat(12)}${'!'.repeat(24)}`,
    ]);
    assert.deepEqual(lines(output).filter((line) => /^[A-Z#!] /.test(line)).map((line) => line.split(/ +/)[1]), ['19', '43', 'course', 'firmware']);
    assert.match(lines(output)[0], /; 2 nodes$/);
  });

  it('marks the cells where jobs overlap on a node, but not where one ends as the next starts', () => {
    const plan: ApiPlan = {
      ...PLAN,
      items: [
        item({ kind: 'job', id: '1', state: 'RUNNING', nodes: ['node01'], start: '2026-11-24T11:00:00Z', end: '2026-11-24T15:00:00Z' }),
        item({ kind: 'job', id: '2', state: 'RUNNING', nodes: ['node01'], start: '2026-11-24T11:30:00Z', end: '2026-11-24T13:00:00Z' }),
        item({ kind: 'job', id: '3', state: 'PENDING', nodes: ['node02'], start: '2026-11-24T12:00:00Z', end: '2026-11-24T13:00:00Z' }),
        item({ kind: 'job', id: '4', state: 'PENDING', nodes: ['node02'], start: '2026-11-24T13:00:00Z', end: '2026-11-24T18:00:00Z' }),
      ],
    };
    const output = render({}, plan);
    assert.equal(row(output, 'node01'), `${'+'.repeat(12)}${'A'.repeat(24)}${'.'.repeat(36)}`);
    assert.equal(row(output, 'node02'), `${'C'.repeat(12)}${'D'.repeat(60)}`);
    assert.ok(lines(output).includes('.  idle, +  several jobs at once'));
  });

  it('gives the 63rd job on and a star, and counts them under the legend', () => {
    const items = Array.from({ length: 70 }, (_, i) => item({
      kind: 'job', id: String(100 + i), user: 'erin', state: 'PENDING', nodes: ['node01'],
      start: new Date(at('12:00') + i * 60_000).toISOString(), end: new Date(at('12:00') + (i + 1) * 60_000).toISOString(),
    }));
    const output = render({ width: 78 }, { ...PLAN, items });
    assert.equal(row(output, 'node01'), `${'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'}********`);
    assert.match(output, /^9 {2}161 /m);
    assert.ok(lines(output).includes('*  8 more jobs (taras queue lists them all)'));
  });

  it('says when there is nothing to draw, and when there are no nodes', () => {
    const empty = render({}, { now: NOW, nodes: ['node01'], items: [], unplanned: [] });
    assert.equal(row(empty, 'node01'), '.'.repeat(72));
    assert.match(empty, /^Tue 24 Nov 2026 12:00 to 13:00;/);
    assert.match(empty, /^No job, reservation or maintenance on these nodes in this window\.$/m);
    assert.equal(render({}, { now: NOW, nodes: [], items: [], unplanned: [7] }), 'No nodes in the plan: no agent has registered yet.\nnot planned: 7 (no node that counts can hold them)\n');
  });

  it('refuses a window that ends before it starts', () => {
    assert.throws(() => render({ until: Date.parse(NOW) - 1 }), /the window ends .* before it starts/);
  });
});

describe('taras plan --until', () => {
  it('reads HH:MM as the next such time and a date as given', () => {
    const zone = process.env.TZ;
    process.env.TZ = 'UTC';
    try {
      assert.equal(untilMillis('18:00', Date.parse(NOW)), at('18:00'));
      assert.equal(untilMillis('9:30', Date.parse(NOW)), Date.parse('2026-11-25T09:30:00Z'));
      assert.equal(untilMillis('2026-11-26T08:00', Date.parse(NOW)), Date.parse('2026-11-26T08:00:00Z'));
      for (const bad of ['25:00', '18', 'soon', '12:60']) assert.equal(untilMillis(bad, Date.parse(NOW)), null, bad);
    } finally {
      if (zone === undefined) delete process.env.TZ;
      else process.env.TZ = zone;
    }
  });
});

describe('taras plan against a controller', () => {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
  const work = mkdtempSync(join(tmpdir(), 'taras-plan-'));
  const socket = join(work, 'controller.sock');
  const requests: string[] = [];
  const server = createServer((request, response) => {
    requests.push(`${request.method} ${request.url}`);
    response.writeHead(request.url === '/plan' ? 200 : 404, { 'content-type': 'application/json' });
    response.end(JSON.stringify(request.url === '/plan' ? PLAN : { error: 'not found' }));
  });
  before(() => new Promise<void>((done) => server.listen(socket, done)));
  after(() => {
    server.close();
    rmSync(work, { recursive: true, force: true });
  });

  /** The command as a user runs it (not a terminal: no colours), in UTC. */
  function taras(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const child = spawn(process.execPath, [join(root, 'dist/src/cli/main.js'), 'plan', '--controller', `unix:${socket}`, ...args], {
      cwd: work, env: { ...process.env, TZ: 'UTC', NO_COLOR: '' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    return new Promise((done) => child.on('close', (code) => done({ code, stdout, stderr })));
  }

  it('draws the plan from GET /plan, fitted to --width', async () => {
    const run = await taras(['--width', '80']);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, render());
    assert.ok(requests.includes('GET /plan'));
  });

  it('--json prints the plan as the controller sent it', async () => {
    const run = await taras(['--json']);
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout), PLAN);
  });

  it('--hours and --nodes narrow the chart; a node not in the plan is an error naming it', async () => {
    const run = await taras(['--width', '80', '--hours', '2', '--nodes', 'node[03-04]']);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, render({ until: Date.parse(NOW) + 2 * HOUR_MS, nodes: ['node03', 'node04'] }));
    const unknown = await taras(['--nodes', 'node09']);
    assert.equal(unknown.code, 2);
    assert.equal(unknown.stderr, "error: option '--nodes': no node node09 in the plan (its nodes: node[01-04])\n");
  });

  it('refuses bad flags before asking the controller', async () => {
    const asked = requests.length;
    assert.match((await taras(['--hours', '0'])).stderr, /^error: option '--hours' got '0': expected a number of hours above 0/);
    assert.match((await taras(['--until', 'later'])).stderr, /^error: option '--until' got 'later': expected HH:MM/);
    assert.match((await taras(['--width', '5'])).stderr, /^error: option '--width' got '5': expected a whole number of columns from 20/);
    assert.equal((await taras(['--hours', '2', '--until', '18:00'])).stderr, 'error: give --hours or --until, not both\n');
    assert.equal(requests.length, asked);
  });
});
