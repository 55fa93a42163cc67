// The job request module's public surface: what the CLI imports to turn a
// script, an optional job.toml and flags into a checked JobSpec.

export * from './types.js';
export { parseDirectives, splitDirectiveWords, DIRECTIVE, SBATCH_DIRECTIVE } from './directives.js';
export { parseFlagValues } from './flags.js';
export { parseJobFile, type TomlParser } from './jobfile.js';
export {
  mergeJobSpec, missingItems, describeItem, parseAnswer, promptLayer, buildJobSpec, REQUIRED_ITEMS, DEFAULT_OUTPUT,
  type MergedJobSpec, type MissingItem, type BuildContext,
} from './merge.js';
export { renderSummary, COMMIT_PROMPT, parseCommitAnswer, type SummaryOptions } from './summary.js';
export {
  validateAgainstCluster, type ClusterShape, type ClusterNodeShape, type ClusterPartitionShape, type Rejection,
} from './cluster.js';
export { expandPattern, checkPattern, type PatternValues } from './pattern.js';
export { JOB_OPTIONS, type JobOption } from './options.js';
export {
  parseTime, parseMemory, parseNodes, parseExport, parseConstraint, formatSbatchTime, formatHumanTime, formatMemory,
  formatNodes, formatExport, TIME_FORMS,
} from './values.js';
export { parseArraySpec, arrayFacts, formatTaskIds, taskName, parseArrayJobId, DEFAULT_MAX_ARRAY_SIZE, type ArrayTasks, type ArrayFacts } from './array.js';
