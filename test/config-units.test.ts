// Value forms shared by cluster.toml and the job flags: Slurm hostlists
// (expansion, errors, compression and round trips), durations and memory sizes.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compareHostnames, compressHostlist, expandHostlist, HostlistError, parseHostlist } from '../src/config/hostlist.js';
import { parseDuration, parseMemoryMiB } from '../src/config/units.js';
import { SeededRandom } from '../src/core/random.js';

const sortedSet = (names: Iterable<string>): string[] => [...new Set(names)].sort(compareHostnames);

describe('hostlist expansion', () => {
  it('expands ranges with their zero padding, lists inside brackets and plain names, in written order', () => {
    assert.deepEqual(expandHostlist('node[01-03],gpu[1-2,5],login'), ['node01', 'node02', 'node03', 'gpu1', 'gpu2', 'gpu5', 'login']);
    assert.deepEqual(expandHostlist('node[01-16]').length, 16);
    assert.deepEqual(expandHostlist('node[01-16]').at(-1), 'node16');
  });

  it('pads every number to the width of the range start, and numbers may outgrow it', () => {
    assert.deepEqual(expandHostlist('n[8-10]'), ['n8', 'n9', 'n10']);
    assert.deepEqual(expandHostlist('n[098-101]'), ['n098', 'n099', 'n100', 'n101']);
    assert.deepEqual(expandHostlist('n[1,007,10-11]'), ['n1', 'n007', 'n10', 'n11']);
  });

  it('expands several bracket groups as a product, the first group outermost', () => {
    assert.deepEqual(expandHostlist('rack[1-2]-node[01-02]'), ['rack1-node01', 'rack1-node02', 'rack2-node01', 'rack2-node02']);
    assert.deepEqual(expandHostlist('r[1-2]c[3,5]n[0-1].ib'), [
      'r1c3n0.ib', 'r1c3n1.ib', 'r1c5n0.ib', 'r1c5n1.ib', 'r2c3n0.ib', 'r2c3n1.ib', 'r2c5n0.ib', 'r2c5n1.ib',
    ]);
  });

  it('allows spaces around the commas between names, and a bracket group alone is a name', () => {
    assert.deepEqual(expandHostlist(' node1 , node2,node3 '), ['node1', 'node2', 'node3']);
    assert.deepEqual(expandHostlist('[1-3]'), ['1', '2', '3']);
  });

  const problems: [expression: string, column: number, message: string][] = [
    ['node[01-16', 5, '"[" at character 5 is never closed'],
    ['node[1-', 5, '"[" at character 5 is never closed'],
    ['node[5-1]', 6, 'range 5-1 at character 6 goes backwards'],
    ['', 1, 'the hostlist is empty'],
    ['   ', 1, 'the hostlist is empty'],
    ['a,,b', 3, 'empty name at character 3'],
    ['a,b,', 5, 'empty name at character 5'],
    ['node]', 5, '"]" at character 5 has no matching "["'],
    ['node[]', 6, 'missing number before "]" at character 6 inside brackets'],
    ['node[1,]', 8, 'missing number before "]" at character 8 inside brackets'],
    ['node[-3]', 6, 'missing number before "-" at character 6 inside brackets'],
    ['node[1-2-3]', 9, 'unexpected "-" at character 9 inside brackets'],
    ['node[a]', 6, 'unexpected "a" at character 6 inside brackets'],
    ['node[1-2[3]]', 9, '"[" at character 9 inside another range'],
    ['no de', 3, 'space inside a name at character 3'],
    ['node*', 5, 'unexpected "*" at character 5'],
    ['n[1-100000000]', 1, 'expands to 100000000 names, more than the 100000 allowed'],
  ];
  for (const [expression, column, message] of problems) {
    it(`refuses ${JSON.stringify(expression)}: ${message}`, () => {
      const result = parseHostlist(expression);
      assert.equal(result.ok, false);
      if (result.ok) return;
      assert.deepEqual({ expression: result.problem.expression, column: result.problem.column, message: result.problem.message }, { expression, column, message });
      assert.ok(result.problem.fix.length > 0);
    });
  }

  it('expandHostlist throws a HostlistError naming the expression, the position and the fix', () => {
    assert.throws(
      () => expandHostlist('node[5-1]'),
      (error: unknown) =>
        error instanceof HostlistError &&
        error.message === 'bad hostlist "node[5-1]": range 5-1 at character 6 goes backwards (fix: write the smaller number first: [1-5])',
    );
  });
});

describe('hostlist compression', () => {
  const canonical = [
    'node[01-16]',
    'gpu[1-2,5],login,node[01-16]',
    'rack[1-2]-node[01-02]',
    'n[8-10]',
    'n[1,3,5-7]',
    'r[1-3]n[1-4],r4n[1-2]',
    'a[1-2]b[1-2]c[1-2]',
    'login',
  ];
  for (const expression of canonical) {
    it(`compresses the expansion of ${expression} back to it`, () => {
      assert.equal(compressHostlist(expandHostlist(expression)), expression);
    });
  }

  it('keeps different paddings apart and sorts names naturally', () => {
    assert.equal(compressHostlist(['n10', 'n9', 'n8', 'n08', 'n09']), 'n[8-10,08-09]');
    assert.equal(compressHostlist(['node10', 'node2', 'node1']), 'node[1-2,10]');
  });

  it('drops duplicates; one name stays as it is', () => {
    assert.equal(compressHostlist(['node1', 'node2', 'node1']), 'node[1-2]');
    assert.equal(compressHostlist(['node07']), 'node07');
    assert.equal(compressHostlist([]), '');
  });

  it('merges along whichever field gives the shorter form', () => {
    // Two racks of the same nodes: merging the rack field first is shorter.
    assert.equal(compressHostlist(['r1n1', 'r2n1', 'r1n5', 'r2n5']), 'r[1-2]n[1,5]');
    assert.equal(compressHostlist(['r1n1', 'r2n1', 'r3n1']), 'r[1-3]n1');
  });

  it('round trip: expanding the compressed form gives back exactly the names (random sets)', () => {
    const random = new SeededRandom(41);
    const prefixes = ['node', 'gpu', 'rack1-node', 'rack2-node', 'r', 'x.'];
    for (let round = 0; round < 200; round += 1) {
      const names: string[] = [];
      const count = random.int(1, 40);
      for (let i = 0; i < count; i += 1) {
        const prefix = prefixes[random.int(0, prefixes.length - 1)];
        const number = String(random.int(0, 120));
        const padded = random.chance(0.5) ? number.padStart(3, '0') : number;
        names.push(random.chance(0.2) ? `${prefix}${padded}-c${random.int(0, 3)}` : `${prefix}${padded}`);
      }
      const compressed = compressHostlist(names);
      assert.deepEqual(sortedSet(expandHostlist(compressed)), sortedSet(names), compressed);
      assert.equal(expandHostlist(compressed).length, new Set(names).size, `no name twice in ${compressed}`);
    }
  });

  it('refuses a name a hostlist cannot hold', () => {
    assert.throws(() => compressHostlist(['node[1]']), RangeError);
    assert.throws(() => compressHostlist(['']), RangeError);
  });
});

describe('durations', () => {
  const forms: [text: string, seconds: number | null][] = [
    ['30', 30 * 60],
    ['30:00', 30 * 60],
    ['1:30', 90],
    ['90:00', 90 * 60],
    ['2:00:00', 7200],
    ['1-12', 36 * 3600],
    ['1-12:30', 36 * 3600 + 1800],
    ['2-00:00:01', 2 * 86400 + 1],
    ['90s', 90],
    ['5m', 300],
    ['2h', 7200],
    ['1d', 86400],
    ['1h30m', 5400],
    ['1D2H', 93600],
    ['0s', 0],
    [' 45s ', 45],
    ['UNLIMITED', null],
    ['infinite', null],
    ['-1', null],
    ['0', null],
    ['0:00', null],
  ];
  for (const [text, seconds] of forms) {
    it(`"${text}" is ${seconds === null ? 'no limit' : `${seconds} s`}`, () => {
      assert.deepEqual(parseDuration(text), { ok: true, value: seconds });
    });
  }

  const bad: [text: string, why: string][] = [
    ['', 'it is empty'],
    ['1.5h', 'the unit must be d, h, m or s, in that order, with whole numbers'],
    ['5min', 'the unit must be d, h, m or s, in that order, with whole numbers'],
    ['3x', 'the unit must be d, h, m or s, in that order, with whole numbers'],
    ['1:2:3:4', 'unrecognised form'],
    ['1-', 'unrecognised form'],
    ['soon', 'unrecognised form'],
  ];
  for (const [text, why] of bad) {
    it(`refuses "${text}": ${why}`, () => {
      const result = parseDuration(text);
      assert.equal(result.ok, false);
      if (!result.ok) {
        assert.equal(result.message, `"${text}" is not a duration: ${why}`);
        assert.match(result.fix, /^write minutes, MM:SS, HH:MM:SS, D-HH/);
      }
    });
  }
});

describe('durations, sbatch forms only (job options)', () => {
  it('takes the sbatch forms as the default mode does', () => {
    for (const [text, seconds] of [['30', 1800], ['1:30', 90], ['1-12', 36 * 3600], ['0', null], ['UNLIMITED', null]] as const) {
      assert.deepEqual(parseDuration(text, { sbatchOnly: true }), { ok: true, value: seconds }, text);
    }
  });

  it('refuses the unit forms, and the fix names only sbatch forms', () => {
    for (const text of ['90s', '1h30m', '0s']) {
      assert.deepEqual(parseDuration(text, { sbatchOnly: true }), {
        ok: false,
        message: `"${text}" is not a duration: sbatch takes no units here`,
        fix: 'write minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or "UNLIMITED"',
      });
    }
    assert.equal(parseDuration('1.5h', { sbatchOnly: true }).ok, false);
  });
});

describe('memory sizes', () => {
  const forms: [text: string, mib: number][] = [
    ['512', 512],
    ['512M', 512],
    ['4G', 4096],
    ['16g', 16384],
    ['1T', 1024 * 1024],
    ['16GB', 16384],
    ['16GiB', 16384],
    ['2048K', 2],
    ['1K', 1],
    ['0', 0],
  ];
  for (const [text, mib] of forms) {
    it(`"${text}" is ${mib} MiB`, () => assert.deepEqual(parseMemoryMiB(text), { ok: true, value: mib }));
  }

  it('refuses fractions, unknown units and words, saying what to write', () => {
    assert.deepEqual(parseMemoryMiB('1.5G'), {
      ok: false,
      message: '"1.5G" is not a memory size: use a whole number with a smaller unit (1536M, not 1.5G)',
      fix: 'write MiB as a plain number (512), or with a K, M, G or T suffix (512M, 16G, 1T)',
    });
    for (const text of ['16Q', 'lots', '', '-1G']) assert.equal(parseMemoryMiB(text).ok, false, text);
  });

  it('sbatch forms only (job options): "GB" as sbatch allows, but no "GiB" and no space before the unit', () => {
    assert.deepEqual(parseMemoryMiB('16GB', { sbatchOnly: true }), { ok: true, value: 16384 });
    assert.deepEqual(parseMemoryMiB('1500k', { sbatchOnly: true }), { ok: true, value: 2 });
    for (const text of ['16GiB', '16 G', '16B']) assert.equal(parseMemoryMiB(text, { sbatchOnly: true }).ok, false, text);
    assert.deepEqual(parseMemoryMiB('16 G'), { ok: true, value: 16384 });
  });

  it('refuses an amount too large to read exactly, whatever the unit', () => {
    assert.equal(parseMemoryMiB('9007199254740993K').ok, false);
    assert.equal(parseMemoryMiB('9007199254740992T').ok, false);
  });
});
