// Typing mistakes a user makes on the command line, through the real
// commands (bin/taras.js, bin/squeue, bin/sinfo, bin/sacct): each is one line
// naming the problem and the fix, with the usage exit code 2, never a stack
// trace, and a daemon given a bad data folder creates nothing.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const work = mkdtempSync(join(tmpdir(), 'taras-mistakes-'));
after(() => rmSync(work, { recursive: true, force: true }));

/** Runs a command of bin/ from an empty folder (no ./taras-data), TARAS_CONTROLLER as given. */
function run(command: string, args: string[], controller?: string, extraEnv: Record<string, string> = {}): { code: number | null; stdout: string; stderr: string } {
  const env = { ...process.env, ...extraEnv };
  delete env.TARAS_CONTROLLER;
  if (controller !== undefined) env.TARAS_CONTROLLER = controller;
  const file = join(root, 'bin', command);
  const [program, argv] = command.endsWith('.js') ? [process.execPath, [file, ...args]] : [file, args];
  const result = spawnSync(program, argv, { cwd: work, env, encoding: 'utf8', timeout: 30_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** One line on stderr, exit 2 (squeue and sinfo: 1, as Slurm's), nothing on stdout. */
function refused(result: { code: number | null; stdout: string; stderr: string }, line: string, code = 2): void {
  assert.deepEqual(result, { code, stdout: '', stderr: `${line}\n` });
}

describe('mistakes on the command line', () => {
  it('a controller address that is no address is refused as such, not taken for a controller that is down', () => {
    const kinds = 'give http://host:port, host:port or unix:/path/to/taras.sock';
    for (const address of ['garbage://x', 'http://127.0.0.1:99999', 'http://[::1', 'https://127.0.0.1:6817']) {
      refused(run('taras.js', ['queue', '--controller', address]), `error: the controller address "${address}" is not a valid http:// address: ${kinds}`);
      refused(run('taras.js', ['queue'], address), `error: the controller address "${address}" is not a valid http:// address: ${kinds}`);
    }
    refused(run('taras.js', ['queue', '--controller', 'unix:']), `error: cannot tell what kind of controller address "unix:" is: ${kinds}`);
    refused(run('taras.js', ['queue', '--controller', '']), `error: cannot tell what kind of controller address "" is: ${kinds}`);
    // An empty TARAS_CONTROLLER is as an unset one: the default address (where nothing listens here).
    const unset = run('taras.js', ['queue'], '');
    assert.equal(unset.code, 1);
    assert.match(unset.stderr, /^error: controller not reachable at http:\/\/127\.0\.0\.1:6817 /);
  });

  it('a format field wider than 1,000 characters is refused by squeue, sinfo and sacct (it ran out of memory)', () => {
    const width = 'give a width of at most 1000, or none (as wide as the value)';
    refused(run('squeue', ['-o', '%999999999i']), `squeue: error: the width of "%999999999i" is more than 1000; ${width}`, 1);
    refused(run('squeue', ['-o', '%.1001j']), `squeue: error: the width of "%.1001j" is more than 1000; ${width}`, 1);
    refused(run('sinfo', ['-o', '%.999999999P']), `sinfo: error: the width of "%.999999999P" is more than 1000; ${width}`, 1);
    refused(run('sacct', ['-o', 'JobID%999999999']), `--format: 'JobID%999999999' is wider than 1000; give a width of at most 1000`);
    refused(run('taras.js', ['acct', '-o', 'JobName%-1001']), `--format: 'JobName%-1001' is wider than 1000; give a width of at most 1000`);
  });

  it('a --deadline earlier than --begin is refused before anything is sent, naming both times in local time (sbatch: incompatible begin and deadline)', () => {
    // The script lives outside the empty folder the commands run in (a later test checks that nothing is created there).
    const scripts = mkdtempSync(join(tmpdir(), 'taras-mistakes-scripts-'));
    const late = join(scripts, 'late.sh');
    writeFileSync(late, '#!/bin/sh\n#SBATCH --begin=2026-12-01T10:00\n#SBATCH --deadline=2026-12-01T09:30\necho late\n');
    const words = (deadline: string, begin: string) => 'error: incompatible --begin and --deadline: '
      + `the deadline ${deadline} is earlier than the begin time ${begin}, so the job could never end by it; give a --deadline after the begin time, or an earlier --begin`;
    // No controller listens there: the refusal comes before the CLI sends anything (else: "not reachable").
    const nowhere = 'http://127.0.0.1:9';
    const berlin = { TZ: 'Europe/Berlin' };
    refused(run('sbatch', ['-t', '5', '--begin', '2026-12-01T10:00', '--deadline', '2026-12-01T09:00', late], nowhere, berlin),
      words('Tue 1 Dec 2026 09:00:00 CET', 'Tue 1 Dec 2026 10:00:00 CET'));
    refused(run('taras.js', ['submit', '-t', '5', late], nowhere, berlin), words('Tue 1 Dec 2026 09:30:00 CET', 'Tue 1 Dec 2026 10:00:00 CET'));
    refused(run('sbatch', ['-t', '5', late], nowhere, { TZ: 'America/New_York' }), words('Tue 1 Dec 2026 09:30:00 GMT-5', 'Tue 1 Dec 2026 10:00:00 GMT-5'));
    rmSync(scripts, { recursive: true, force: true });
  });

  it('a job id is digits only: hex, exponents and binary are refused before anything is sent, not read as another job\'s id (scancel\'s and the controller\'s rule)', () => {
    const nowhere = 'http://127.0.0.1:9';
    const digits = (text: string) => `error: '${text}' is not a job id: give its digits, as \`taras queue\` shows them (e.g. 42)`;
    const orTask = (text: string) => `error: '${text}' is not a job id: give its digits, as \`taras queue\` shows them (42; 12_3 for task 3 of array 12)`;
    refused(run('taras.js', ['cancel', '0xbf2'], nowhere), orTask('0xbf2'));
    refused(run('taras.js', ['cancel', '7', '3.059e3'], nowhere), orTask('3.059e3'));
    refused(run('taras.js', ['show', '1e3'], nowhere), orTask('1e3'));
    refused(run('taras.js', ['when', '-1'], nowhere), orTask('-1'));
    refused(run('taras.js', ['wait', '0b1'], nowhere), digits('0b1'));
    refused(run('taras.js', ['hold', '0o7'], nowhere), digits('0o7'));
    refused(run('taras.js', ['move', '5', '--after', '1e1'], nowhere), digits('1e1'));
    refused(run('taras.js', ['requeue', '0'], nowhere), digits('0'));
  });

  it('a bad --signal names the part at fault and the forms sbatch takes, with an example', () => {
    const forms = 'write [B:]SIG[@TIME]: a signal name or a number from 1 to 31 (USR1, SIGUSR1, 10), B: for the batch shell only, '
      + 'TIME seconds before the time limit (0 to 65535, default 60), e.g. --signal=B:USR1@120';
    // Outside the empty folder the commands run in; nothing is sent (no controller listens there).
    const scripts = mkdtempSync(join(tmpdir(), 'taras-mistakes-scripts-'));
    const job = join(scripts, 'job.sh');
    const directive = join(scripts, 'directive.sh');
    writeFileSync(job, '#!/bin/sh\necho\n');
    writeFileSync(directive, '#!/bin/sh\n#SBATCH --signal=B:USR1@\necho\n');
    refused(run('sbatch', ['-t', '5', '--signal=FOO', job], 'http://127.0.0.1:9'), `error: --signal: 'FOO' is not a signal name (kill -l lists them); ${forms}`);
    refused(run('taras.js', ['submit', '-t', '5', '--signal', 'B:USR1@abc', job], 'http://127.0.0.1:9'), `error: --signal: 'abc' after @ is not a number of seconds; ${forms}`);
    refused(run('sbatch', ['-t', '5', directive], 'http://127.0.0.1:9'), `error: ${directive}:2: --signal: no TIME after @ (or leave out @ for 60 s); ${forms}`);
    // A real-time signal: accepted before, and the job then FAILED at its start (no agent can send one).
    refused(run('sbatch', ['-t', '1', '--signal=40@30', job], 'http://127.0.0.1:9'), `error: --signal: '40' is a real-time signal (32 to 64), which Taras cannot send to a job; ${forms}`);
    rmSync(scripts, { recursive: true, force: true });
  });

  it('an unknown job state is squeue -t\'s one line and exit code, not a stack trace', () => {
    const line = 'invalid job state specified: bogus (give names or codes such as PENDING,RUNNING or PD,R, or all)';
    refused(run('taras.js', ['queue', '--state', 'bogus'], 'http://127.0.0.1:9'), `taras queue: error: ${line}`, 1);
    refused(run('taras.js', ['queue', '-t', 'PD,bogus'], 'http://127.0.0.1:9'), `taras queue: error: ${line}`, 1);
    refused(run('squeue', ['-t', 'bogus'], 'http://127.0.0.1:9'), `squeue: error: ${line}`, 1);
  });

  it('a jwt_key the controller cannot use (a folder, in a missing folder, short, readable by others) is one line naming it and the fix, exit 1', () => {
    const cluster = mkdtempSync(join(tmpdir(), 'taras-mistakes-jwt-'));
    const data = join(cluster, 'data');
    mkdirSync(join(data, 'folder.key'), { recursive: true, mode: 0o700 });
    writeFileSync(join(data, 'short.key'), `${Buffer.alloc(16, 1).toString('base64')}\n`, { mode: 0o600 });
    writeFileSync(join(data, 'open.key'), `${Buffer.alloc(32, 1).toString('base64')}\n`);
    chmodSync(join(data, 'open.key'), 0o644);
    const start = (jwtKey: string) => {
      writeFileSync(join(cluster, 'cluster.toml'), `[cluster]\nname = "jwt"\ndata_dir = "${data}"\njwt_key = "${jwtKey}"\n[[nodes]]\nnames = "n1"\ncpus = 1\nmemory = "1G"\n[[partitions]]\nname = "p"\nnodes = "ALL"\n`);
      return run('taras.js', ['controller', '--config', join(cluster, 'cluster.toml'), '--port', '0']);
    };
    const key = (name: string) => `error: the token key ${join(data, name)} (jwt_key)`;
    refused(start('folder.key'), `${key('folder.key')} is a folder, not a file: remove it (the controller creates a new key), or set jwt_key in cluster.toml to a file`, 1);
    refused(start('gone/jwt.key'), `${key('gone/jwt.key')} cannot be created: its folder ${join(data, 'gone')} does not exist: `
      + 'create the folder (mode 700), or set jwt_key in cluster.toml to a file in an existing one', 1);
    refused(start('short.key'), `${key('short.key')} holds 16 bytes, fewer than 32: remove it and restart the controller to make a new one (tokens issued before stop working)`, 1);
    refused(start('open.key'), `${key('open.key')} is readable by others (mode 644): anyone who reads it can sign tokens for any user: run \`chmod 600 ${join(data, 'open.key')}\``, 1);
    // Refused before the database is opened, and the data folder's lock let go: no taras.db.
    assert.equal(existsSync(join(data, 'taras.db')), false);
    rmSync(cluster, { recursive: true, force: true });
  });

  it('a script larger than a submission takes, or not a file, is refused before it is read (a 1.5 GB one took 2.1 GB of memory)', () => {
    const scripts = mkdtempSync(join(tmpdir(), 'taras-mistakes-big-'));
    const nowhere = 'http://127.0.0.1:9';
    const big = join(scripts, 'big.sh');
    writeFileSync(big, '#!/bin/sh\n');
    truncateSync(big, 1536 * 1024 * 1024); // sparse: nothing is written
    const tooLarge = 'more than a submission takes (1048576 bytes, 1 MiB): keep the script small and its data in files it reads';
    refused(run('taras.js', ['submit', '-t', '5', big], nowhere), `error: the script ${big} is 1610612736 bytes, ${tooLarge}`);
    refused(run('sbatch', ['-t', '5', big], nowhere), `error: the script ${big} is 1610612736 bytes, ${tooLarge}`);
    writeFileSync(join(scripts, 'many.jsonl'), `${JSON.stringify({ script: big, time: 5 })}\n`);
    refused(run('taras.js', ['submit', '--many', join(scripts, 'many.jsonl')], nowhere),
      `error: ${join(scripts, 'many.jsonl')}:1: the script ${big} is 1610612736 bytes, ${tooLarge}\nnothing was submitted`);
    // One byte past the limit; and from standard input, where no size is known before reading.
    const over = join(scripts, 'over.sh');
    writeFileSync(over, `#!/bin/sh\n${'#'.repeat(1024 * 1024 - 10)}\n`);
    refused(run('taras.js', ['submit', '-t', '5', over], nowhere), `error: the script ${over} is 1048577 bytes, ${tooLarge}`);
    const piped = spawnSync(process.execPath, [join(root, 'bin/taras.js'), 'submit', '-t', '5'], { cwd: work, input: readFileSync(over), encoding: 'utf8', timeout: 30_000, env: { ...process.env, TARAS_CONTROLLER: nowhere } });
    assert.deepEqual([piped.status, piped.stdout, piped.stderr], [2, '', `error: the batch script on standard input is ${tooLarge}\n`]);
    // A file that says 0 bytes and reads 5 MB (as one that grows while read): the read stops at the limit.
    if (existsSync('/proc/kallsyms')) refused(run('taras.js', ['submit', '-t', '5', '/proc/kallsyms'], nowhere), `error: the script /proc/kallsyms is ${tooLarge}`);
    refused(run('taras.js', ['submit', '-H', '/dev/zero'], nowhere), 'error: the script /dev/zero is a character device, not a file: give the path of a batch script');
    refused(run('taras.js', ['submit', '-t', '5', scripts], nowhere), `error: the script ${scripts} is a folder, not a file: give the path of a batch script`);
    const fifo = join(scripts, 'fifo');
    assert.equal(spawnSync('mkfifo', [fifo]).status, 0);
    refused(run('taras.js', ['submit', '-t', '5', fifo], nowhere), `error: the script ${fifo} is a FIFO, not a file: give the path of a batch script`);
    rmSync(scripts, { recursive: true, force: true });
  });

  it('a data folder that is empty or a file is refused before anything is created', () => {
    const file = join(work, 'not-a-folder');
    writeFileSync(file, 'x');
    const isFile = `error: the data folder ${file} exists and is not a folder: give another --data (or data_dir in cluster.toml)`;
    refused(run('taras.js', ['controller', '--data', file, '--port', '0']), isFile);
    refused(run('taras.js', ['up', '--data', file, '--port', '0']), isFile);
    refused(run('taras.js', ['agent', '--virtual', '2x2', '--data', file]), isFile);
    refused(run('taras.js', ['up', '--data', '', '--port', '0']), 'error: --data is empty: give the daemon\'s data folder (default ./taras-data)');
    refused(run('taras.js', ['controller', '--data', ' ', '--port', '0']), 'error: --data is empty: give the daemon\'s data folder (default ./taras-data)');
    assert.deepEqual(readdirSync(work), ['not-a-folder'], 'nothing was created in the current folder');
    assert.equal(existsSync(join(work, 'taras.db')), false);
  });

  it('a shared data folder (as /tmp) or another user\'s is refused in one line and left as it was (it was made 0711 for good); one under /proc is one line (it spun for ever)', () => {
    const shared = join(work, 'shared');
    mkdirSync(shared);
    chmodSync(shared, 0o1777);
    const isShared = `error: data folder ${shared} is a folder other users may write (mode 1777): making it private would lock them out of it, `
      + 'and they may have put files in it: give the daemon a data folder of its own (it is made if missing, private to the daemon\'s user)';
    refused(run('taras.js', ['controller', '--data', shared, '--port', '0']), isShared);
    refused(run('taras.js', ['up', '--data', shared, '--port', '0']), isShared);
    refused(run('taras.js', ['agent', '--virtual', '2x2', '--data', shared]), isShared);
    assert.equal(statSync(shared).mode & 0o7777, 0o1777);
    assert.deepEqual(readdirSync(shared), [], 'nothing made in it: no key, no database');
    if (process.getuid?.() === 0) {
      const foreign = join(work, 'foreign');
      mkdirSync(foreign, { mode: 0o755 });
      chownSync(foreign, 65534, 65534);
      refused(run('taras.js', ['controller', '--data', foreign, '--port', '0']), `error: data folder ${foreign} belongs to uid 65534, not to this daemon's user (uid 0), `
        + 'who could change it under the daemon: give the daemon a data folder of its own (it is made if missing, private to the daemon\'s user)');
      assert.deepEqual(readdirSync(foreign), []);
    }
    // Group-writable: refused as well (its group was locked out); a sticky bit alone is no reason.
    const grouped = join(work, 'grouped');
    mkdirSync(grouped);
    chmodSync(grouped, 0o775);
    assert.match(run('taras.js', ['controller', '--data', grouped, '--port', '0']).stderr, new RegExp(`^error: data folder ${grouped} is a folder other users may write \\(mode 0775\\)`));
    assert.equal(statSync(grouped).mode & 0o7777, 0o775);
    const proc = `/proc/taras-${process.pid}`;
    refused(run('taras.js', ['controller', '--data', proc, '--port', '0']),
      `error: cannot create or read the cluster key ${proc}/cluster.key (ENOENT: no such file or directory, mkdir '${proc}'); give another --key or --data`);
  });

  it('a cluster key that cannot be made is one line naming it, and the data folder is not created', () => {
    const file = join(work, 'plain');
    writeFileSync(file, 'x');
    const key = join(file, 'cluster.key');
    refused(run('taras.js', ['controller', '--data', join(work, 'data-for-key'), '--key', key, '--port', '0']),
      `error: cannot create or read the cluster key ${key} (EEXIST: file already exists, mkdir '${file}'); give another --key or --data`);
    assert.equal(existsSync(join(work, 'data-for-key')), false);
  });
});

describe('the daemons\' log', () => {
  it('keeps text from users to its entry: later lines indented, control characters escaped (red team: an srun command forged an entry)', async () => {
    const { logLine } = await import('../src/cli/daemons.js');
    const forged = 'job 2: step 0 for rtA: /bin/echo x\n2026-11-28T00:00:00.000Z token issued to root for root\r\n\u001b[2Jcleared';
    const text = logLine('', forged);
    const lines = text.split('\n');
    assert.match(lines[0], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z job 2: step 0 for rtA: \/bin\/echo x$/);
    assert.deepEqual(lines.slice(1), ['    2026-11-28T00:00:00.000Z token issued to root for root', '    \\x1b[2Jcleared']);
  });
});
