// The gateway's /v1 API as the page uses it. Requests carry the token in the
// agentbus_token cookie (set by the Login page), so no header is needed;
// errors come back as the API's JSON problems.

export interface Problem {
  in?: string;
  name?: string;
  pointer?: string;
  message: string;
}

/** ApiError is a non-2xx answer, with the API's code and problems. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly problems: Problem[] = [],
  ) {
    super(message);
  }
}

export async function api<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  const init: RequestInit = { method, credentials: 'same-origin', signal, headers: { Accept: 'application/json' } };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers = { ...init.headers, 'Content-Type': 'application/json' };
  }
  const r = await fetch(path, init);
  const text = await r.text();
  let doc: unknown = undefined;
  try {
    doc = text ? JSON.parse(text) : undefined;
  } catch {
    /* not JSON */
  }
  if (!r.ok) {
    const e = (doc as { error?: { code?: string; message?: string; problems?: Problem[] } })?.error;
    throw new ApiError(r.status, e?.code ?? String(r.status), e?.message ?? (text || r.statusText), e?.problems ?? []);
  }
  return doc as T;
}

export const get = <T>(path: string, signal?: AbortSignal) => api<T>('GET', path, undefined, signal);
export const post = <T>(path: string, body: unknown) => api<T>('POST', path, body);
export const del = <T>(path: string) => api<T>('DELETE', path);

export interface Whoami {
  tenant_id: string;
  auth: boolean;
  role?: string;
  may_control: boolean;
}

export type State = 'submitted' | 'working' | 'input-required' | 'completed' | 'failed' | 'canceled' | 'rejected';

export const terminal = (s?: string) => s === 'completed' || s === 'failed' || s === 'canceled' || s === 'rejected';

export interface Summary {
  workflow_id: string;
  status: State;
  query?: string;
  created_at?: string;
  updated_at?: string;
  resume_count?: number;
  error?: unknown;
  /** parent_workflow is the workflow whose step started this one. */
  parent_workflow?: string;
  /** steps is the plan size, when the page has learnt it. */
  steps?: number;
}

export interface Task {
  capability: string;
  status: State;
  attempt: number;
  output?: unknown;
  error?: string;
  worker?: string;
  approval?: { state: string; comment?: string; confidence?: number; before_dispatch?: boolean };
  /** confirm is the tool permissions rule by which the step waits for a confirmation before it runs. */
  confirm?: string;
  fell_back?: string;
  dispatched_at?: string;
  completed_at?: string;
  queued_ms?: number;
  run_ms?: number;
  /** wait is a wait step's wait: the signal it waits for, or when its timer is due. */
  wait?: { signal?: string; at?: string; on_timeout?: string };
}

export interface Citation {
  n: number;
  doc_id?: string;
  title?: string;
  source?: string;
  chunk_id?: string;
}

export interface WorkflowState {
  workflow_id: string;
  tenant_id: string;
  status: State;
  phase?: string;
  query?: string;
  plan?: { steps: import('./dag').PlanStep[] };
  stages?: string[][];
  tasks?: Record<string, Task>;
  result?: { answer?: string; citations?: Citation[]; [k: string]: unknown };
  error?: unknown;
  created_at?: string;
  updated_at?: string;
  resume_count?: number;
  event_count?: number;
  metadata?: Record<string, string>;
  forked_from?: unknown;
  /** paused: nothing new is dispatched until it is unpaused. */
  paused?: boolean;
  pause_reason?: string;
}

export interface Revision {
  revision: number;
  checkpoint_status: string;
  checkpoint: WorkflowState;
  created?: string;
}

export interface Instance {
  instance: string;
  worker: string;
  name: string;
  version?: string;
  description?: string;
  capabilities: string[];
  host?: string;
  pid?: number;
  started_at?: string;
  heartbeat_at?: string;
  health: string;
  in_flight: number;
  processed: number;
  errors: number;
  avg_ms: number;
}

export interface Match {
  name: string;
  description?: string;
  capabilities: string[];
  examples?: string[];
  score: number;
  instances: number;
  healthy: number;
}

/** TenantSteps is one tenant's steps of a capability (GET /v1/capabilities). */
export interface TenantSteps {
  tenant_id?: string;
  /** queued counts the steps waiting for admission (flow control). */
  queued: number;
  queued_by_priority?: Record<string, number>;
  /** in_flight counts the steps on the step subject: waiting for a worker or running. */
  in_flight: number;
  oldest_queued_ms?: number;
  /** throttled: steps wait while a worker is idle (the tenant's own limit). */
  throttled: boolean;
}

/** Capability is a capability's workers and the tenant's steps of it. */
export interface Capability extends TenantSteps {
  capability: string;
  instances: number;
  healthy: number;
  slots: number;
  idle: number;
  tenants?: TenantSteps[];
}

export interface CapabilitiesResponse {
  tenant_id: string;
  as_of: string;
  capabilities: Capability[];
}

export const wfPath = (id: string) => `/v1/workflows/${encodeURIComponent(id)}`;
