// sbatch's options that Taras does not take, in a module of its own (no
// imports) so that `taras submit` can refuse one by name before it loads the
// rest of src/jobspec.

/**
 * sbatch's options that Taras does not take, each refused by name ("not
 * supported") rather than as unknown: the README's table "Slurm compatibility:
 * sbatch options" lists them with the supported ones. `[long, short]`.
 */
export const SBATCH_UNSUPPORTED: readonly (readonly [string, string?])[] = [
  ['acctg-freq'], ['batch'], ['bb'], ['bbf'], ['cluster-constraint'], ['clusters', 'M'],
  ['container'], ['container-id'], ['contiguous'], ['core-spec', 'S'], ['cores-per-socket'], ['cpu-freq'], ['cpus-per-gpu'],
  ['delay-boot'], ['distribution', 'm'], ['export-file'], ['extra'], ['extra-node-info', 'B'],
  ['get-user-env'], ['gid'], ['gpu-bind'], ['gpu-freq'], ['gpus', 'G'], ['gpus-per-node'], ['gpus-per-socket'], ['gpus-per-task'],
  ['gres'], ['gres-flags'], ['hint'], ['ignore-pbs'], ['input', 'i'], ['kill-on-invalid-dep'], ['licenses', 'L'],
  ['mcs-label'], ['mem-bind'], ['mem-per-gpu'], ['mincpus'], ['network'], ['no-kill', 'k'], ['nodefile', 'F'],
  ['ntasks-per-core'], ['ntasks-per-gpu'], ['ntasks-per-socket'], ['overcommit', 'O'], ['oversubscribe', 's'], ['power'], ['prefer'],
  ['priority'], ['profile'], ['propagate'], ['qos', 'q'], ['quiet', 'Q'], ['reboot'], ['sockets-per-node'], ['spread-job'],
  ['switches'], ['thread-spec'], ['threads-per-core'], ['time-min'], ['tmp'], ['tres-per-task'], ['uid'], ['usage'],
  ['use-min-nodes'], ['verbose', 'v'], ['version', 'V'], ['wait', 'W'], ['wait-all-nodes'], ['wckey'],
];

/** The refusal of an sbatch option Taras lacks: `not supported by Taras (see README: sbatch options)`; undefined for any other. */
export function unsupportedOptionMessage(written: string): string | undefined {
  const name = written.replace(/=.*$/s, '');
  const known = name.startsWith('--')
    ? SBATCH_UNSUPPORTED.some(([long]) => `--${long}` === name)
    : SBATCH_UNSUPPORTED.some(([, short]) => short !== undefined && `-${short}` === name.slice(0, 2));
  return known ? 'not supported by Taras (see README: sbatch options)' : undefined;
}
