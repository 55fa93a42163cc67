// Standard Workload Format: reading (plain or gzip), normalising into core job
// requests as the spec says, and writing per-job results. Parse errors are
// values that name the file, the line, the field and the fix.

import { readFile } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import type { JobRequest, ResourceRequest } from '../core/types.js';
import type { SimCluster } from './cluster.js';
import { jobId } from '../core/types.js';

export const SWF_FIELDS = [
  'job number', 'submit time', 'wait time', 'run time', 'allocated processors', 'average CPU time',
  'used memory', 'requested processors', 'requested time', 'requested memory', 'status', 'user id',
  'group id', 'executable number', 'queue number', 'partition number', 'preceding job', 'think time',
] as const;

export class SwfError extends Error {
  constructor(
    readonly file: string,
    readonly line: number,
    readonly field: number | undefined,
    detail: string,
  ) {
    super(`${file}${line > 0 ? `:${line}` : ''}: ${field === undefined ? '' : `field ${field} (${SWF_FIELDS[field - 1]}): `}${detail}`);
    this.name = 'SwfError';
  }
}

export interface SwfRecord {
  readonly lineNumber: number;
  /** The 18 fields as integers (decimals truncated toward zero). */
  readonly fields: readonly number[];
  /** The original tokens, copied to the output where the spec says "copied". */
  readonly tokens: readonly string[];
}

export interface SwfTrace {
  readonly file: string;
  readonly headerLines: readonly string[];
  /** Machine size from `; MaxProcs:` or else `; MaxNodes:`, if present. */
  readonly headerProcessors: number | undefined;
  readonly records: readonly SwfRecord[];
  readonly badLines: number;
}

export interface ParseOptions {
  /** Skip and count malformed lines instead of stopping at the first. */
  readonly skipBadLines?: boolean;
}

const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

export async function readSwf(file: string, options: ParseOptions = {}): Promise<SwfTrace> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a directory' : String(error);
    throw new SwfError(file, 0, undefined, `${why}; give the path of an SWF trace (plain or .gz)`);
  }
  if (bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b) {
    try {
      bytes = gunzipSync(bytes);
    } catch (error) {
      throw new SwfError(file, 0, undefined, `not a valid gzip file (${(error as Error).message})`);
    }
  }
  return parseSwf(bytes.toString('utf8'), file, options);
}

export function parseSwf(text: string, file: string, options: ParseOptions = {}): SwfTrace {
  const headerLines: string[] = [];
  const records: SwfRecord[] = [];
  let maxProcs: number | undefined;
  let maxNodes: number | undefined;
  let badLines = 0;
  const lines = text.split('\n');
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index].trim();
    if (line === '') continue;
    if (line.startsWith(';')) {
      headerLines.push(line);
      const header = /^;\s*(MaxProcs|MaxNodes)\s*:\s*(\d+)/i.exec(line);
      if (header) {
        if (header[1].toLowerCase() === 'maxprocs') maxProcs = Number(header[2]);
        else maxNodes = Number(header[2]);
      }
      continue;
    }
    try {
      records.push(parseRecord(line, file, index + 1));
    } catch (error) {
      if (!options.skipBadLines || !(error instanceof SwfError)) throw error;
      badLines++;
    }
  }
  const headerProcessors = maxProcs !== undefined && maxProcs > 0 ? maxProcs : maxNodes !== undefined && maxNodes > 0 ? maxNodes : undefined;
  return { file, headerLines, headerProcessors, records, badLines };
}

function parseRecord(line: string, file: string, lineNumber: number): SwfRecord {
  const tokens = line.split(/\s+/);
  if (tokens.length < 18) {
    throw new SwfError(file, lineNumber, tokens.length + 1,
      `missing: the line has ${tokens.length} fields, SWF needs 18 (fix the line, or pass --skip-bad-lines)`);
  }
  const fields = new Array<number>(18);
  for (let f = 0; f < 18; f++) {
    const token = tokens[f];
    if (!NUMBER.test(token)) {
      throw new SwfError(file, lineNumber, f + 1, `"${token}" is not a number (fix the line, or pass --skip-bad-lines)`);
    }
    fields[f] = Math.trunc(Number(token));
  }
  return { lineNumber, fields, tokens };
}

/** A job ready to simulate: the core's request plus what only the simulator knows. */
export interface SimJob {
  readonly request: JobRequest;
  /** Actual runtime after normalisation (never above the estimate). */
  readonly runtime: number;
  readonly record: SwfRecord;
}

export interface Workload {
  /** Processors the jobs run on: P, or on a cluster the CPUs of the nodes its jobs may use. */
  readonly processors: number;
  /** Simulated jobs in (submit time, job id) order. */
  readonly jobs: readonly SimJob[];
  readonly skipped: number;
  /** The nodes to replay on (`taras simulate --cluster`); absent: P identical processors. */
  readonly cluster?: SimCluster;
}

/** The size (processors) an SWF line asks for: field 5 if > 0, else field 8 (step 1). */
export const swfSize = (record: SwfRecord): number => (record.fields[4] > 0 ? record.fields[4] : record.fields[7]);

/** What a job of `size` processors (> 0) asks of the machine: its request's size and nodes, or undefined to skip it. */
export type JobShaper = (size: number) => { readonly size: number; readonly resources?: ResourceRequest } | undefined;

/** Applies the spec's normalisation for a machine of `processors`. */
export function normalise(trace: SwfTrace, processors: number): Workload {
  return { processors, ...normaliseWith(trace, (size) => (size > processors ? undefined : { size })) };
}

/**
 * The spec's normalisation with the machine's say in step 2 left to `shape`:
 * jobs with runtime <= 0 or size <= 0 are skipped, then those `shape` turns
 * down; runtimes are clipped to the estimate. Jobs in (submit time, id) order.
 */
export function normaliseWith(trace: SwfTrace, shape: JobShaper): { jobs: SimJob[]; skipped: number } {
  const jobs: SimJob[] = [];
  let skipped = 0;
  for (const record of trace.records) {
    const f = record.fields;
    const size = swfSize(record);
    let runtime = f[3];
    const estimate = f[8] > 0 ? f[8] : runtime;
    const shaped = runtime <= 0 || size <= 0 ? undefined : shape(size);
    if (shaped === undefined) {
      skipped++;
      continue;
    }
    if (runtime > estimate) runtime = estimate;
    const request: JobRequest = {
      id: jobId(f[0]), submitTime: f[1], size: shaped.size, estimate, user: f[11], queue: f[14], partition: f[15],
      ...(shaped.resources === undefined ? {} : { resources: shaped.resources }),
    };
    jobs.push({ request, runtime, record });
  }
  jobs.sort((a, b) => a.request.submitTime - b.request.submitTime || a.request.id - b.request.id);
  return { jobs, skipped };
}

/** One output line: the input tokens with wait (field 3) and run time (field 4) replaced. */
export function resultLine(job: SimJob, start: number): string {
  const tokens = job.record.tokens.slice();
  tokens[2] = String(start - job.request.submitTime);
  tokens[3] = String(job.runtime);
  return tokens.join(' ');
}
