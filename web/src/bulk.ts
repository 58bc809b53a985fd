// The Workflows page's bulk control (POST /v1/workflows/bulk): the page's
// current filter made into the API's filter, and said in words for the
// confirmation.
import type { State } from './api';

export type Action = 'cancel' | 'pause' | 'unpause';

/** BulkFilter is the API's filter (api.BulkFilter). */
export interface BulkFilter {
  status?: State[];
  metadata?: Record<string, string>;
  older_than?: string;
}

/** BulkResult is the API's answer (api.BulkResult). */
export interface BulkResult {
  action: Action;
  matched: number;
  applied: number;
  not_applied: number;
  failed: number;
  limited?: boolean;
}

/** statesOf are the states a status chip of the Workflows page stands for. */
export const statesOf: Record<string, State[]> = {
  all: [],
  running: ['submitted', 'working'],
  'input-required': ['input-required'],
  completed: ['completed'],
  failed: ['failed', 'rejected'],
  canceled: ['canceled'],
};

/**
 * parseMetadata reads "key=value" pairs, separated by commas or new lines
 * (a value keeps its spaces), or says what is wrong with one.
 */
export function parseMetadata(text: string): { metadata: Record<string, string>; error?: string } {
  const metadata: Record<string, string> = {};
  for (const part of text.split(/[,\n]/)) {
    const p = part.trim();
    if (!p) continue;
    const eq = p.indexOf('=');
    if (eq <= 0) return { metadata, error: `${JSON.stringify(p)} is not key=value` };
    metadata[p.slice(0, eq).trim()] = p.slice(eq + 1).trim();
  }
  return { metadata };
}

const duration = /^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/;

/**
 * bulkFilter makes the API's filter of the page's: the status chip, the
 * metadata pairs, the age and the schedule whose runs are listed. At
 * least one must be set — the API acts on nothing less — or an error says so.
 */
export function bulkFilter(chip: string, metadataText: string, olderThan: string, scheduleId?: string): { filter?: BulkFilter; error?: string } {
  const f: BulkFilter = {};
  const states = statesOf[chip] ?? [];
  if (states.length) f.status = states;
  const md = parseMetadata(metadataText);
  if (md.error) return { error: md.error };
  if (scheduleId) md.metadata.schedule_id = scheduleId;
  if (Object.keys(md.metadata).length) f.metadata = md.metadata;
  const age = olderThan.trim();
  if (age) {
    if (!duration.test(age)) return { error: `older than ${JSON.stringify(age)}: want a duration such as 90s, 10m or 24h` };
    f.older_than = age;
  }
  if (!f.status && !f.metadata && !f.older_than) return { error: 'choose a status, a metadata key=value or an age: a bulk action needs a filter' };
  return { filter: f };
}

/** describe says a filter in words: "status working or submitted, metadata batch=b7, older than 1h". */
export function describe(f: BulkFilter): string {
  const parts: string[] = [];
  if (f.status?.length) parts.push(`status ${f.status.join(' or ')}`);
  if (f.metadata) parts.push(...Object.entries(f.metadata).map(([k, v]) => `${k}=${v}`));
  if (f.older_than) parts.push(`older than ${f.older_than}`);
  return parts.join(', ');
}
