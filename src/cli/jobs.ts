// The user's commands that talk to the controller: `submit`, `queue`,
// `show`, `when`, `cancel`, `wait`, `nodes`, `status`, and `jobid` (which
// runs inside a job). Heavy modules load inside actions, so each command
// pays only for what it uses.

import type { Command } from 'commander';
import { unsupportedOptionMessage } from '../jobspec/unsupported.js';
import { fail, parseImmediateFlag } from './flags.js';
import { client, controllerAddress, controllerOption, listAllJobs, parseJobIds, parseJobRefs, postIds, print, printJson, withClient, withRetries } from './controller-client.js';
import { parseJobStates } from './slurm/format.js';

export function registerJobCommands(program: Command): void {
  const submit = program
    .command('submit')
    .description('submit a batch script (#SBATCH and #TARAS directives, sbatch\'s flags)')
    .argument('[script]', 'the batch script (none with --many)')
    .argument('[args...]', 'arguments for the script: everything after its name, options too (as sbatch)')
    .passThroughOptions()
    .option('-N, --nodes <n>', 'nodes (N or N-M)')
    .option('-n, --ntasks <n>', 'tasks')
    .option('-c, --cpus-per-task <n>', 'CPUs per task')
    .option('--mem <size>', 'memory per node (e.g. 4G)')
    .option('-t, --time <limit>', 'time limit: minutes, MM:SS, HH:MM:SS, D-HH:MM:SS')
    .option('-p, --partition <name>', 'partition')
    .option('-J, --job-name <name>', 'job name')
    .option('-D, --chdir <dir>', 'working directory')
    .option('-o, --output <pattern>', 'output file (%j job id, %u user, %x name)')
    .option('-e, --error <pattern>', 'error file')
    .option('--export <spec>', 'ALL, NONE or a list of variables')
    .option('-C, --constraint <features>', 'node features, a&b')
    .option('--requeue', 'requeue the job if its node fails')
    // Defined after --requeue, --no-requeue leaves the default unset (commander), so an #SBATCH line still counts when neither is given.
    .option('--no-requeue', 'never requeue the job (the default)')
    .option('--signal <[B:]sig[@time]>', 'send SIG TIME seconds (default 60) before the time limit; B: to the batch shell only')
    .option('--reservation <name>', 'run in this advance reservation (taras reserve list)')
    .option('--checkpoint-interval <time>', 'send the periodic checkpoint signal this often (needs --checkpoint-duration)')
    .option('--checkpoint-duration <time>', 'the job checkpoints itself, within this time: it can be preempted and restarted from its checkpoint')
    .option('--program-class <name>', 'the cluster\'s program class: which signals and restart action (default: the first configured)')
    .option('--deadline <time>', 'a priority job that must end by TIME (18:00, now+2hours, tomorrow, 2026-12-01T09:00): guaranteed if the plan can, else run first without a guarantee')
    .option('--deadline-policy <policy>', 'guarantee (default) or cancel (Slurm\'s: refused if it cannot end in time; ended DEADLINE once it no longer can)')
    .option('-H, --hold', 'submit it held: it waits until `taras release ID`')
    .option('-b, --begin <time>', 'start no earlier than TIME (now+1hour, 16:00, tomorrow, 2026-12-01T09:00)')
    .option('-d, --dependency <list>', 'start only after other jobs: afterok:ID[:ID], afterany:ID, afternotok:ID, after:ID[+MIN], singleton; , all, ? any')
    .option('-a, --array <ids>', 'a job array: one job per task id (0-15, 1,3,5-9, 0-15:4), %N at most N at once (0-99%10); output names take %A (array id) and %a (task id)')
    .option('--ntasks-per-node <n>', 'tasks on each node (with -N: --ntasks is N x nodes)')
    .option('--mem-per-cpu <size>', 'memory per allocated CPU (not with --mem)')
    .option('-w, --nodelist <hostlist>', 'run on these nodes, e.g. node[01-04]')
    .option('-x, --exclude <hostlist>', 'never run on these nodes')
    .option('--open-mode <mode>', 'append to or truncate the output files')
    .option('--exclusive', 'whole nodes: all their CPUs and memory')
    .option('--nice [adjustment]', 'run behind the other jobs of the partition (bare: 100; negative: administrators only)')
    .option('-A, --account <name>', 'account (stored, shown by taras show)')
    .option('--comment <text>', 'comment (stored, shown by taras show)')
    .option('--mail-type <types>', 'mail when the job BEGINs, ENDs, FAILs, is REQUEUEd, reaches TIME_LIMIT(_90,_80,_50); ALL, NONE, ARRAY_TASKS')
    .option('--mail-user <address>', 'who gets the mail (default: you, at the cluster\'s mail_domain)')
    .option('--wrap <command>', 'the command is the whole script (#!/bin/sh and it); no script then')
    .option('--parsable', 'print only the job id')
    .option('--test-only', 'check the job and say when and where it would start; nothing is submitted')
    .option('--immediate [seconds]', 'sbatch\'s: fail unless the job starts within this many seconds (default 0: now); waits to say which')
    .option('--file <job.toml>', 'job description file (flags override it)')
    .option('--many <file>', 'many jobs in one call: a file (- for standard input) of JSON lines with job.toml\'s keys; the flags apply to each')
    .option(...controllerOption)
    .option('--json', 'print {"id": N}')
    .addHelpText('after', '\nExamples:\n  taras submit run.sh\n  taras submit -N 2 -t 30 --job-name sim run.sh input.dat\n  taras submit --file job.toml --time 1:00:00 run.sh\n  taras submit -t 2:00:00 --checkpoint-interval 30 --checkpoint-duration 5 sim.sh\n  taras submit --immediate -N 2 -t 10 run.sh     # fails (exit 1) unless it starts now\n  taras submit --many jobs.jsonl -t 10           # one job a line: {"script": "run.sh", "arguments": ["3"]}\n  taras submit -t 5 --wrap "hostname; date"\n  taras submit job.sh --input a.dat             # options after the script are its arguments, as sbatch\n')
    .action(async (script: string | undefined, args: string[], flags: Record<string, string | boolean | undefined>, cmd: Command) => {
      const { readFileSync } = await import('node:fs');
      // The modules submit needs, not the whole jobspec surface: the TOML parser loads only for --file.
      // The summary is only shown on a terminal: it loads there.
      const [types, directivesModule, flagsModule, mergeModule] = await Promise.all([
        import('../jobspec/types.js'), import('../jobspec/directives.js'), import('../jobspec/flags.js'), import('../jobspec/merge.js'),
      ]);
      const jobspec = { ...types, ...directivesModule, ...flagsModule, ...mergeModule };
      const given: Record<string, string | boolean | undefined> = {};
      for (const key of Object.keys(flags)) {
        if (['file', 'controller', 'json', 'immediate', 'many'].includes(key)) continue;
        if (cmd.getOptionValueSource(key) === 'cli') given[key] = flags[key];
      }
      // sbatch takes --immediate's value only as --immediate=S: what follows a bare --immediate is the script.
      if (typeof flags.immediate === 'string' && !process.argv.includes(`--immediate=${flags.immediate}`) && !/^\d+$/.test(flags.immediate)) {
        args = script === undefined ? args : [script, ...args];
        script = flags.immediate;
        flags.immediate = true;
      }
      let immediateSeconds: number | undefined;
      if (flags.immediate !== undefined) {
        const parsed = parseImmediateFlag(flags.immediate);
        if (!parsed.ok) fail(parsed.message);
        immediateSeconds = parsed.value;
      }
      if (typeof flags.many === 'string') {
        if (script !== undefined) fail(`error: --many ${flags.many} names every job's script in its lines: leave out the script ${script} (or --many)`);
        if (flags.file !== undefined) fail('error: --many and --file: each line of --many is already a job description; leave out --file');
        for (const single of ['wrap', 'testOnly'] as const) {
          if (given[single] !== undefined) fail(`error: --many and --${single === 'wrap' ? 'wrap' : 'test-only'}: they are for one job; leave one out`);
        }
        const { submitMany } = await import('./many.js');
        return submitMany(flags.many, { given, controller: flags.controller as string | undefined, json: flags.json === true, immediateSeconds });
      }
      const errors: string[] = [];
      const layer = <T>(parsed: { ok: true; value: T } | { ok: false; errors: readonly Parameters<typeof jobspec.formatError>[0][] }) => {
        if (parsed.ok) return parsed.value;
        errors.push(...parsed.errors.map(jobspec.formatError));
        return undefined;
      };
      let fileText: string | undefined;
      if (typeof flags.file === 'string') {
        try {
          fileText = readFileSync(flags.file, 'utf8');
        } catch (error) {
          const why = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message;
          fail(`error: --file ${flags.file}: cannot read the job file (${why}): give the path of a job.toml, or leave --file out`);
        }
      }
      const fileLayer = fileText !== undefined
        ? layer((await import('../jobspec/jobfile.js')).parseJobFile(fileText, flags.file as string))
        : undefined;
      // --wrap (sbatch's): the command is the script; a script operand with it is refused (buildJobSpec says so).
      const wrap = typeof flags.wrap === 'string' ? flags.wrap : fileLayer?.values.wrap;
      if (wrap !== undefined && script !== undefined) fail(`error: --wrap is the whole script: leave out the script ${script} (sbatch allows no script with --wrap)`);
      // No script named (or -) and standard input not a terminal: the script comes from there, as sbatch reads it
      // (sbatch <<EOF ... EOF, or a pipe); the job is named sbatch, as Slurm names it.
      const { readScript } = await import('./script-file.js');
      let stdinScript: string | undefined;
      if (wrap === undefined && (script === '-' || (script === undefined && process.stdin.isTTY !== true))) {
        const read = readScript(0, 'the batch script on standard input');
        if (!read.ok && read.unreadable !== true) fail(`error: ${read.message}`);
        stdinScript = read.ok ? read.text : '';
        if (stdinScript === '' && script === undefined) stdinScript = undefined;
        else script = 'sbatch';
      }
      if (wrap === undefined && script === undefined) fail('error: taras submit needs a batch script (taras submit run.sh), --wrap COMMAND, --many FILE for many jobs, or the script on standard input');
      let scriptText: string;
      if (wrap !== undefined) {
        scriptText = jobspec.wrapScript(wrap);
        script = jobspec.WRAP_SCRIPT;
      } else if (stdinScript !== undefined) {
        if (stdinScript === '') fail('error: the batch script on standard input is empty (sbatch - reads the script from there)');
        scriptText = stdinScript;
      } else {
        const read = readScript(script!, `the script ${script}`);
        if (!read.ok) fail(`error: ${read.message}`);
        scriptText = read.text;
      }
      const directives = layer(jobspec.parseDirectives(scriptText, script));
      const flagLayer = layer(jobspec.parseFlagValues(given, { script, args }));
      if (errors.length > 0) fail(errors.map((e) => `error: ${e}`).join('\n'));
      let merged = jobspec.mergeJobSpec(fileLayer, directives, flagLayer);
      const interactive = jobspec.missingItems(merged).length > 0 && process.stdin.isTTY === true;
      // With nobody at a terminal to ask, a missing time limit is the partition's default_time (sbatch's way):
      // the controller applies it, or refuses naming the partition that has none.
      const missing = jobspec.missingItems(merged).filter((item) => interactive || item.key !== 'timeLimitSeconds');
      if (missing.length > 0 && !interactive) {
        fail(`error: the job needs ${missing.map((m) => `${m.label} (${m.flag})`).join(' and ')}: add it as a flag or a #TARAS line`);
      }
      let ask: ((question: string) => Promise<string>) | undefined;
      let closePrompt = () => {};
      if (interactive) {
        // Argonne spsubmit: ask for what is missing, show the summary, then commit or abort.
        const readline = await import('node:readline/promises');
        const prompt = readline.createInterface({ input: process.stdin, output: process.stdout });
        // Ctrl-C and Ctrl-D end the prompt with a line, never a stack trace (130: interrupted, as a shell says).
        let answered = false;
        prompt.on('SIGINT', () => fail('\naborted (Ctrl-C): nothing was submitted', 130));
        prompt.on('close', () => {
          if (!answered) fail('\naborted (end of input): nothing was submitted', 1);
        });
        ask = (question) => prompt.question(question);
        closePrompt = () => {
          answered = true;
          prompt.close();
        };
        const answers: Record<string, string> = {};
        for (const item of missing) {
          for (;;) {
            const answer = (await ask(`${item.label} (${item.valueName || item.flag}): `)).trim();
            const parsed = jobspec.parseAnswer(item.key, answer);
            if (parsed.ok) {
              answers[item.key] = answer;
              break;
            }
            print(`  ${parsed.message}`);
          }
        }
        const prompted = jobspec.promptLayer(answers);
        if (!prompted.ok) fail(prompted.errors.map((e) => `error: ${jobspec.formatError(e)}`).join('\n'));
        merged = jobspec.mergeJobSpec(fileLayer, directives, flagLayer, prompted.value);
      }
      const built = jobspec.buildJobSpec(merged, { scriptText, submitDir: process.cwd(), nowMs: Date.now(), timeFromPartition: !interactive });
      if (!built.ok) fail(built.errors.map((e) => `error: ${jobspec.formatError(e)}`).join('\n'));
      if (ask) {
        const [{ localIdentity }, summary] = await Promise.all([import('../net/local-user.js'), import('../jobspec/summary.js')]);
        print(summary.renderSummary(built.value.spec, { origins: built.value.origins, user: localIdentity().user }));
        for (;;) {
          const choice = summary.parseCommitAnswer(await ask(summary.COMMIT_PROMPT));
          if (choice === 'abort') {
            closePrompt();
            fail('aborted: nothing was submitted', 1);
          }
          if (choice === 'commit') break;
        }
        closePrompt();
      }
      // The umask decides the mode of the job's new output files, as if the submitter had created them.
      const spec = {
        ...built.value.spec, umask: process.umask(), submitEnv: { ...process.env } as Record<string, string>, submitDir: process.cwd(),
        submitHost: (await import('node:os')).hostname(),
        ...(immediateSeconds === undefined ? {} : { immediateSeconds }),
      };
      // The body is checked by the controller alone, against src/api/schema.ts: a 400 that names the field
      // (what the flags and directives allow is already checked above). Checking it here too cost every
      // `taras submit` 3 to 5 ms (loading the schema, and a scavenge); --many checks every line first instead,
      // so that none is sent unless all would be taken.
      // The key makes the retries below safe: the controller answers a key it has stored with the job it created.
      // Keys are per user, so a key only has to differ from this user's other keys: time, pid and a random part do
      // (node:crypto's randomUUID would cost `taras submit` about 8 ms of loading).
      const body = { spec, idempotencyKey: `${Date.now().toString(36)}-${process.pid.toString(36)}-${Math.random().toString(36).slice(2, 12)}` };
      if (merged.values.testOnly === true) {
        const plan = await withClient(flags.controller as string | undefined,
          (api) => withRetries('submit', () => api.post<import('../api/types.js').ApiTestOnly>('/jobs/test-only', body)));
        if (flags.json) {
          printJson(plan);
          return;
        }
        // sbatch's line (on standard error, as sbatch writes it), the time local as Slurm's default format.
        const local = (ms: number) => new Date(ms - new Date(ms).getTimezoneOffset() * 60_000).toISOString().slice(0, 19);
        const { compressHostlist } = await import('../config/hostlist.js');
        process.stderr.write(plan.startMs === null
          ? `sbatch: Job ${plan.nextId} has no planned start now in partition ${plan.partition}: the nodes that count cannot hold it (taras nodes shows which are out)\n`
          : `sbatch: Job ${plan.nextId} to start at ${local(plan.startMs)} using ${plan.processors} processors on nodes ${compressHostlist(plan.nodes)} in partition ${plan.partition}\n`);
        return;
      }
      const answer = await withClient(flags.controller as string | undefined,
        (api) => withRetries('submit', () => api.post<import('../api/types.js').ApiSubmitted>('/jobs', body)));
      // --immediate (sbatch's): the controller ends the job unless it starts in time; say which, as the exit code.
      if (immediateSeconds !== undefined) {
        const started = await withClient(flags.controller as string | undefined, (api) => untilStartedOrEnded(api, answer.id));
        if (started.state !== 'RUNNING') fail(`error: job ${answer.id} did not start: ${started.state} (${started.reason ?? 'no reason given'})`, 1);
      }
      if (flags.json) printJson(answer);
      else if (merged.values.parsable === true) print(String(answer.id)); // sbatch --parsable: the id alone
      else {
        print(`Submitted batch job ${answer.id}`);
        if (answer.deadline) print(`Deadline: ${answer.deadline.text}`);
        if (answer.warning) process.stderr.write(`warning: ${answer.warning}\n`);
      }
    });

  bareOptionalValues(submit, process.argv);
  // sbatch options Taras lacks are refused by name, with where the table is, rather than as unknown.
  // (unknownOption is commander's hook for an option it does not know; not in its typings.)
  const hooks = submit as unknown as { unknownOption(flag: string): void };
  const unknownOption = hooks.unknownOption.bind(submit);
  hooks.unknownOption = (flag: string) => {
    const unsupported = unsupportedOptionMessage(flag);
    if (unsupported !== undefined) fail(`error: ${flag.replace(/=.*$/s, '')}: ${unsupported}`);
    unknownOption(flag);
  };

  program
    .command('queue')
    .description('running and pending jobs in predicted order, with planned starts')
    .option('-l, --long', 'add CPUs, memory, submit time, limit and working directory')
    .option('-u, --user <name>', 'only this user\'s jobs')
    .option('-s, --state <states>', 'only these states, e.g. PENDING,RUNNING (finished ones too: COMPLETED,FAILED...)')
    .option('-t, --states <states>', 'the same as --state (squeue\'s -t)')
    .option('-a, --all', 'finished jobs too (for an hour after they end; `taras acct` keeps them all)')
    .option('-r, --array', 'a job array\'s pending tasks one line each (squeue -r); without it they share one line, 12_[4-15%4]')
    .option(...controllerOption)
    .option('--json', 'print the jobs as JSON')
    .addHelpText('after', '\nA held job shows PENDING(h) (held by its user: taras release), PENDING(H) (held by an\nadministrator) or PENDING(P) (paused: taras unpause).\n\nExamples:\n  taras queue                                  running and pending jobs\n  taras queue --all                            and those that finished in the last hour\n  taras queue --user alice --state PENDING\n  taras queue -t COMPLETED,FAILED\n  taras queue -r                               job arrays: every task on its own line\n  taras queue --json\n')
    .action(async (flags: { long?: boolean; user?: string; state?: string; states?: string; all?: boolean; array?: boolean; controller?: string; json?: boolean }) => {
      const query = new URLSearchParams();
      if (flags.array) query.set('array', '1');
      if (flags.user) query.set('user', flags.user);
      const state = flags.state ?? flags.states;
      // As squeue: only jobs that are still in the system, unless finished ones are asked for.
      // Names or squeue's codes (PD, R, CA...), as squeue -t takes them.
      if (state) query.set('state', jobStatesOrFail(state).join(','));
      else if (!flags.all) query.set('state', 'PENDING,RUNNING,COMPLETING,SUSPENDED');
      await withClient(flags.controller, async (api) => {
        // --json: the full vocabulary; the table: compact rows in queue order (GET /queue).
        if (flags.json) return printJson(await listAllJobs(api, query));
        if (flags.long) query.set('long', '1');
        const [queue, { renderQueue }] = await Promise.all([
          api.get<import('../api/queue.js').ApiQueue>(`/queue${query.size ? `?${query}` : ''}`), import('./render/queue.js'),
        ]);
        const { status } = queue;
        renderQueue({ status, queue, now: status.now, long: flags.long, width: process.stdout.isTTY ? process.stdout.columns : undefined }, (chunk) => process.stdout.write(chunk));
      });
    });

  program
    .command('show')
    .description('everything about one job, with its event history')
    .argument('<id>', 'job id')
    .option(...controllerOption)
    .option('--json', 'print the job as JSON')
    .addHelpText('after', '\nExamples:\n  taras show 42\n  taras show 12_3     # task 3 of job array 12\n  taras show 42 --json\n')
    .action(async (raw: string, flags: { controller?: string; json?: boolean }) => {
      const [id] = parseJobRefs([raw]);
      await withClient(flags.controller, async (api) => {
        const job = await api.get<import('../api/types.js').ApiJobWithEvents>(`/jobs/${id}`);
        if (flags.json) return printJson(job);
        const { renderShow } = await import('./render/job.js');
        print(renderShow(job, new Date()));
      });
    });

  program
    .command('when')
    .description('when a pending job will start, and why it waits (spwhen)')
    .argument('<id>', 'job id')
    .option(...controllerOption)
    .option('--json', 'print as JSON')
    .addHelpText('after', '\nExamples:\n  taras when 42\n')
    .action(async (raw: string, flags: { controller?: string; json?: boolean }) => {
      const [id] = parseJobRefs([raw]);
      await withClient(flags.controller, async (api) => {
        const when = await api.get<import('../api/types.js').ApiWhen>(`/jobs/${id}/when`);
        if (flags.json) return printJson(when);
        const { renderWhen } = await import('./render/job.js');
        print(renderWhen(when, new Date()));
      });
    });

  for (const action of ['hold', 'release'] as const) {
    program
      .command(action)
      .description(action === 'hold'
        ? 'hold pending jobs: they keep their place but do not start until released (scontrol hold; an administrator\'s hold only an administrator releases)'
        : 'release held jobs: they go back to their place in the queue (scontrol release)')
      .argument('<ids...>', 'job ids')
      .option(...controllerOption)
      .option('--json', 'print the outcome of each job as JSON')
      .addHelpText('after', action === 'hold'
        ? '\nExamples:\n  taras hold 42 43\n  taras submit --hold job.sh     # submitted held\n'
        : '\nExamples:\n  taras release 42 43\n')
      .action(async (raw: string[], flags: { controller?: string; json?: boolean }) => {
        await withClient(flags.controller, async (api) => {
          const { jobs } = await api.post<{ jobs: import('../api/types.js').ApiCancelResult[] }>(`/jobs/${action}`, { ids: parseJobIds(raw) });
          if (flags.json) return printJsonOutcomes(jobs);
          printOutcomes(jobs);
        });
      });
  }

  program
    .command('move')
    .description('move a pending job behind another in the queue (0: the front); users give up places only, administrators move any job anywhere')
    .argument('<id>', 'the job to move')
    .requiredOption('--after <other>', 'the pending job to put it behind, or 0 for the front of the queue')
    .option(...controllerOption)
    .option('--json', 'print the job and the move as JSON')
    .addHelpText('after', '\nA user may move only their own jobs, and only to a later planned start (to let\nsomeone else go first). An administrator may move any job anywhere and is\nwarned when a priority job would then miss its deadline.\n\nExamples:\n  taras move 42 --after 57     # 42 waits behind 57\n  taras move 42 --after 0      # administrators: 42 to the front\n')
    .action(async (raw: string, flags: { after: string; controller?: string; json?: boolean }) => {
      const [id] = parseJobIds([raw]);
      const after = flags.after.trim() === '0' ? 0 : parseJobIds([flags.after])[0];
      await withClient(flags.controller, async (api) => {
        type Moved = import('../api/types.js').ApiJob & { move: { after: number; plannedStartBeforeMs: number | null; plannedStartAfterMs: number | null; warnings: string[] } };
        const job = await api.post<Moved>(`/jobs/${id}/move`, { after });
        if (flags.json) return printJson(job);
        const { localTime } = await import('./render/time.js');
        const now = new Date();
        const at = (ms: number | null): string => (ms === null ? 'no plan' : localTime(new Date(ms), now));
        print(`job ${id} moved ${after === 0 ? 'to the front of the queue' : `behind job ${after}`}`
          + (job.move.plannedStartBeforeMs === null && job.move.plannedStartAfterMs === null ? '' : `: planned start ${at(job.move.plannedStartBeforeMs)} -> ${at(job.move.plannedStartAfterMs)}`));
        for (const warning of job.move.warnings) process.stderr.write(`warning: ${warning}\n`);
      });
    });

  program
    .command('update')
    .description('change a pending job\'s time limit, partition or name, a running job\'s time limit or name, or an array\'s throttle (scontrol update); only an administrator raises a running job\'s limit')
    .argument('<id>', 'the job; an array\'s id: every task of it (ended ones are said); 12_3: one task')
    .option('-t, --time <limit>', 'new time limit: minutes, MM:SS, HH:MM:SS, D-HH:MM:SS or UNLIMITED')
    .option('-p, --partition <name>', 'new partition')
    .option('-J, --job-name <name>', 'new name')
    .option('--throttle <n>', 'an array\'s %N: at most N of its tasks run at once (0: no limit; scontrol\'s ArrayTaskThrottle)')
    .option(...controllerOption)
    .option('--json', 'print each job\'s answer as JSON')
    .addHelpText('after', '\nExamples:\n  taras update 42 --time 30          # 30 minutes\n  taras update 42 -p debug -J rerun\n  taras update 12 --time 30          # every task of array 12 (ended ones are said)\n  taras update 12 --throttle 4       # at most 4 tasks of array 12 at once\n  scontrol update JobId=42 TimeLimit=30 Partition=debug JobName=rerun\n')
    .action(async (raw: string, flags: { time?: string; partition?: string; jobName?: string; throttle?: string; controller?: string; json?: boolean }) => {
      const [id] = parseJobIds([raw]);
      const body: import('./slurm/scontrol.js').UpdateFields = {};
      if (flags.time !== undefined) {
        const { parseTime } = await import('../jobspec/values.js');
        const parsed = parseTime(flags.time);
        if (!parsed.ok) fail(`error: --time ${parsed.message}`);
        body.timeLimitSeconds = parsed.value;
      }
      if (flags.partition !== undefined) body.partition = flags.partition;
      if (flags.jobName !== undefined) body.name = flags.jobName;
      if (flags.throttle !== undefined) {
        if (!/^\d+$/.test(flags.throttle)) fail(`error: --throttle '${flags.throttle}' is not a whole number: give how many tasks may run at once (0: no limit)`);
        body.arrayThrottle = Number(flags.throttle);
      }
      if (Object.keys(body).length === 0) fail('error: give what to change: --time, --partition, --job-name or --throttle (taras update --help)');
      await withClient(flags.controller, async (api) => {
        const { jobs } = await api.post<{ jobs: import('../api/types.js').ApiCancelResult[] }>('/jobs/update', { ids: [id], ...body });
        if (flags.json) return printJson(jobs);
        const notDone = (job: { result: string }) => job.result === 'refused' || job.result === 'ended';
        for (const job of jobs.filter(notDone)) {
          process.stderr.write(`error: ${job.task === undefined ? '' : `job ${job.task} (${job.id}): `}${job.message}\n`);
          process.exitCode = 1;
        }
        const done = jobs.filter((job) => !notDone(job)).length;
        if (done > 0) print(`${jobs.length > 1 ? `${done} of ${jobs.length} updated` : `job ${id} updated`}: ${Object.entries(body).map(([key, value]) => `${key}=${value}`).join(' ')}`);
      });
    });

  for (const action of ['pause', 'unpause'] as const) {
    program
      .command(action)
      .description(action === 'pause'
        ? 'pause waiting jobs (sppause): passed over, they keep their place; no ids: all your waiting interactive jobs'
        : 'unpause paused jobs (spunpause): they wait in their place again; no ids: all your paused jobs')
      .argument('[ids...]', 'job ids')
      .option(...controllerOption)
      .option('--json', 'print the outcome of each job as JSON')
      .addHelpText('after', `\nExamples:\n  taras ${action}\n  taras ${action} 42 43\n`)
      .action(async (raw: string[], flags: { controller?: string; json?: boolean }) => {
        await withClient(flags.controller, async (api) => {
          const { jobs } = await api.post<{ jobs: import('../api/types.js').ApiCancelResult[] }>(`/jobs/${action}`, raw.length === 0 ? {} : { ids: parseJobIds(raw) });
          if (flags.json) return printJsonOutcomes(jobs);
          printOutcomes(jobs, action === 'pause' ? 'no waiting interactive jobs to pause' : 'no paused jobs');
        });
      });
  }

  program
    .command('cancel')
    .description('cancel jobs (kill/sprelease); --all cancels all of your own')
    .argument('[ids...]', 'job ids')
    .option('--all', 'all of your own pending and running jobs')
    .option(...controllerOption)
    .option('--json', 'print the jobs as JSON')
    .addHelpText('after', '\nExamples:\n  taras cancel 42 43\n  taras cancel 12      # a job array: all its tasks\n  taras cancel 12_3    # one task of array 12\n  taras cancel 12_[1-3,7]\n  taras cancel --all\n')
    .action(async (raw: string[], flags: { all?: boolean; controller?: string; json?: boolean }) => {
      if (!flags.all && raw.length === 0) fail('error: name the jobs to cancel, or --all for all of yours');
      await withClient(flags.controller, async (api) => {
        // One request for the whole set: the controller cancels the pending ones first, so none of them starts.
        const jobs = flags.all ? (await api.post<{ jobs: import('../api/types.js').ApiCancelResult[] }>('/jobs/cancel', { all: true })).jobs
          : await postIds<import('../api/types.js').ApiCancelResult>(api, '/jobs/cancel', parseJobRefs(raw));
        if (flags.json) return printJsonOutcomes(jobs);
        // A refusal (another user's job) is an error: stderr, and exit 1 below.
        // A job array's many tasks: refusals one by one, the rest counted (a line per task up to 20).
        const accepted = jobs.filter((job) => job.result !== 'refused');
        for (const job of jobs) {
          if (job.result === 'refused') process.stderr.write(`error: ${job.message}\n`);
          else if (accepted.length <= 20) print(job.message);
        }
        if (accepted.length > 20) {
          const count = (result: string) => accepted.filter((job) => job.result === result).length;
          print(`${accepted.length} jobs: ${count('cancelled')} pending cancelled, ${count('signalled')} running signalled, ${count('ended')} had already ended`);
        }
        if (jobs.length === 0) print('no jobs to cancel');
        if (jobs.some((job) => job.result === 'refused')) process.exitCode = 1;
      });
    });

  program
    .command('wait')
    .description('block until the jobs leave the queue; the exit code tells how they ended (spwait)')
    .argument('<ids...>', 'job ids')
    .option(...controllerOption)
    .addHelpText('after', '\nExit code: 0 when every job COMPLETED, 1 otherwise.\n\nExamples:\n  taras wait 42 && echo done\n')
    .action(async (raw: string[], flags: { controller?: string }) => {
      const ids = parseJobIds(raw);
      await withClient(flags.controller, async (api) => {
        const { finishedStates } = await import('../api/types.js');
        let allCompleted = true;
        for (const id of ids) {
          for (;;) {
            // A controller restart is ridden out (bounded): the job's fate is in its store.
            const job = await withRetries('wait', () => api.get<{ state: import('../api/types.js').JobState; exitCode: number | null }>(`/jobs/${id}`));
            if (finishedStates.includes(job.state)) {
              print(`job ${id}: ${job.state}${job.exitCode !== null ? ` (exit code ${job.exitCode})` : ''}`);
              if (job.state !== 'COMPLETED') allCompleted = false;
              break;
            }
            await new Promise((resolve) => setTimeout(resolve, 200));
          }
        }
        process.exitCode = allCompleted ? 0 : 1;
      });
    });

  program
    .command('nodes')
    .description('nodes, their state and the jobs and users on them (sinfo/spfree)')
    .option('--free', 'free node and CPU counts per partition')
    .option(...controllerOption)
    .option('--json', 'print the nodes as JSON')
    .addHelpText('after', '\nExamples:\n  taras nodes\n  taras nodes --free\n')
    .action(async (flags: { free?: boolean; controller?: string; json?: boolean }) => {
      await withClient(flags.controller, async (api) => {
        const nodes = await api.get<import('../api/types.js').ApiNode[]>('/nodes');
        if (flags.json) return printJson(nodes);
        const { renderNodes } = await import('./render/nodes.js');
        print(renderNodes(nodes, { free: flags.free }));
      });
    });

  program
    .command('status')
    .description('controller up or down, version, policy, node counts, message of the day')
    .option(...controllerOption)
    .option('--json', 'print as JSON')
    .addHelpText('after', '\nExamples:\n  taras status\n')
    .action(async (flags: { controller?: string; json?: boolean }) => {
      const address = controllerAddress(flags.controller);
      const api = await client(flags.controller);
      const { renderStatus } = await import('./render/status.js');
      try {
        const status = await api.get<import('../api/types.js').ApiClusterStatus>('/status');
        print(flags.json ? JSON.stringify(status, null, 2) : renderStatus(status, address));
      } catch {
        print(flags.json ? JSON.stringify({ up: false, address }) : renderStatus(null, address));
        process.exitCode = 1;
      } finally {
        api.close();
      }
    });

  program
    .command('jobid')
    .description('inside a job: print its id (getjid)')
    .addHelpText('after', '\nExamples:\n  echo "I am job $(taras jobid)"\n')
    .action(() => {
      const id = process.env.TARAS_JOB_ID;
      if (!id) fail('error: not inside a Taras job (TARAS_JOB_ID is not set)', 1);
      print(id);
    });
}

/**
 * sbatch's `--nice` takes its value only attached (`--nice=5`); commander would take the next word (the script)
 * as the value of a bare `--nice`. So before commander parses `taras submit`, a bare `--nice` among the options
 * (before the first operand: after it, everything is the script's) becomes `--nice=100`, sbatch's default.
 */
function bareOptionalValues(submit: Command, argv: string[]): void {
  const start = argv.indexOf('submit', 2);
  if (start < 0 || argv.slice(2, start).some((arg) => !arg.startsWith('-'))) return;
  for (let i = start + 1; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--' || !arg.startsWith('-') || arg === '-') return;
    if (arg === '--nice') argv[i] = '--nice=100';
    else if (!arg.includes('=') && submit.options.find((o) => o.long === arg || (arg.length === 2 && o.short === arg))?.required) i++; // its value
  }
}

/** --state's names or codes; an unknown one is squeue -t's line and exit code (1), not a stack trace. */
function jobStatesOrFail(text: string): ReturnType<typeof parseJobStates> {
  try {
    return parseJobStates(text, 'taras queue');
  } catch (error) {
    fail((error as Error).message, 1);
  }
}

/** Polls a job until it runs (or ran) or ended without running: --immediate's answer. */
async function untilStartedOrEnded(api: import('../net/client.js').ApiClient, id: number): Promise<import('../api/types.js').ApiJob> {
  for (;;) {
    const job = await withRetries('submit', () => api.get<import('../api/types.js').ApiJob>(`/jobs/${id}`));
    if (job.state !== 'PENDING') return job.startTime !== null ? { ...job, state: 'RUNNING' } : job;
    await new Promise((resolveWait) => setTimeout(resolveWait, 200));
  }
}

/** One line per job of a hold, release, pause or unpause; a refusal is an error (stderr, exit 1). */
/** Each job's outcome as JSON; the exit code is 1 when any was refused, as without --json (scancel's). */
function printJsonOutcomes(jobs: readonly import('../api/types.js').ApiCancelResult[]): void {
  printJson(jobs);
  if (jobs.some((job) => job.result === 'refused')) process.exitCode = 1;
}

function printOutcomes(jobs: readonly import('../api/types.js').ApiCancelResult[], none?: string): void {
  for (const job of jobs) {
    if (job.result === 'refused') process.stderr.write(`error: ${job.message}\n`);
    else print(job.message);
  }
  if (jobs.length === 0 && none !== undefined) print(none);
  if (jobs.some((job) => job.result === 'refused')) process.exitCode = 1;
}
