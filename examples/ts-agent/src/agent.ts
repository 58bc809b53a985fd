// An agentbus agent in TypeScript, written only from the README's section
// "Writing an agent in any language": it serves the capability "shout",
// which upper-cases input.text (or the "text" of its first dependency's output), repeated
// input.repeat times, with nothing but the official NATS client. Large payloads (README, "Large
// payloads"): references in its input and dependency outputs are read from the object store, and
// an output above the threshold is stored there and answered as a reference.
//
//   NATS_URL                 the server (default nats://127.0.0.1:4222)
//   AGENT_ACK_WAIT_MS        AckWait of the consumer when this agent creates it (default 30000)
//   AGENT_MAX_DELIVER        deliveries before the dead letter (default 5)
//   AGENT_WORK_MS            how long shouting takes, to show in-progress acks (default 0)
//   AGENT_PAYLOAD_THRESHOLD  bytes above which an output travels as a reference (default 262144)
//
// It logs one JSON object a line on stdout.
import { createHash } from "node:crypto";
import { connect, headers, nanos, type MsgHdrs, type NatsConnection } from "@nats-io/transport-node";
import { Objm, type ObjectStore } from "@nats-io/obj";
import {
  AckPolicy,
  jetstream,
  jetstreamManager,
  JetStreamApiError,
  type Consumer,
  type JetStreamClient,
  type JsMsg,
} from "@nats-io/jetstream";

const capability = "shout";
const stream = "AGENTBUS_STEPS";
const durable = `step-${capability}`;
const source = "/examples/ts-agent";

const natsURL = process.env.NATS_URL ?? "nats://127.0.0.1:4222";
const ackWaitMs = envInt("AGENT_ACK_WAIT_MS", 30_000);
const maxDeliver = envInt("AGENT_MAX_DELIVER", 5);
const workMs = envInt("AGENT_WORK_MS", 0);
const payloadThreshold = envInt("AGENT_PAYLOAD_THRESHOLD", 256 * 1024);
const payloadBucket = "AGENTBUS_PAYLOADS";
const refKey = "$agentbus_ref";

// The CloudEvent types this agent reads and writes (README, steps 2 and 4, and the events table).
const types = {
  requested: "io.agentbus.step.requested.v1",
  completed: "io.agentbus.step.completed.v1",
  failed: "io.agentbus.step.failed.v1",
  progress: "io.agentbus.workflow.progress.v1",
  artifact: "io.agentbus.workflow.artifact.v1",
} as const;

// Step is what a step.requested message names: its headers and the fields of its data this agent uses.
type Step = {
  tenant: string;
  workflow: string;
  stepID: string;
  attempt: number;
  input: unknown;
  dependencyOutputs: Record<string, unknown>;
};

// PayloadRef is what travels in place of a payload above the threshold (README, "Large payloads").
type PayloadRef = { bucket: string; key: string; size: number; sha256: string; content_type?: string };

// PermanentError is a failure that no retry can mend: it is answered with step.failed at once.
class PermanentError extends Error {}

function envInt(name: string, fallback: number): number {
  const v = process.env[name];
  if (v === undefined || v === "") return fallback;
  const n = Number.parseInt(v, 10);
  if (!Number.isFinite(n)) throw new Error(`${name}=${v}: want an integer`);
  return n;
}

function log(msg: string, fields: Record<string, unknown> = {}): void {
  process.stdout.write(JSON.stringify({ time: new Date().toISOString(), msg, ...fields }) + "\n");
}

// bind returns the durable pull consumer step-shout, creating it as README step 1 says if it is missing.
async function bind(nc: NatsConnection): Promise<{ consumer: Consumer; ackWaitMs: number }> {
  const jsm = await jetstreamManager(nc);
  let info;
  try {
    info = await jsm.consumers.info(stream, durable);
  } catch (err) {
    if (!(err instanceof JetStreamApiError) || err.status !== 404) throw err; // 404: no such consumer yet
    info = await jsm.consumers.add(stream, {
      durable_name: durable,
      filter_subject: `agentbus.*.step.${capability}`,
      ack_policy: AckPolicy.Explicit,
      ack_wait: nanos(ackWaitMs),
      max_deliver: -1, // this agent counts deliveries itself (README step 6)
      max_waiting: 65536, // one waiting pull per idle slot, as agentbus's workers make it (README step 1)
    });
  }
  const consumer = await jetstream(nc).consumers.get(stream, durable);
  // Whoever created the consumer chose its AckWait: in-progress acks follow the consumer's.
  return { consumer, ackWaitMs: (info.config.ack_wait ?? nanos(30_000)) / 1e6 };
}

// parse reads a step.requested message; it throws PermanentError when the message says nothing usable.
function parse(msg: JsMsg): Step {
  const h = msg.headers;
  const tenant = h?.get("ce-tenantid") ?? "";
  const workflow = h?.get("ce-workflowid") ?? "";
  if (!tenant || !workflow) throw new PermanentError("step request without ce-tenantid or ce-workflowid");
  if (h?.get("ce-type") !== types.requested) throw new PermanentError(`ce-type ${h?.get("ce-type")}: want ${types.requested}`);
  let data: { step_id?: unknown; capability?: unknown; attempt?: unknown; input?: unknown; dependency_outputs?: unknown };
  try {
    data = JSON.parse(new TextDecoder().decode(msg.data));
  } catch (err) {
    throw new PermanentError(`step request data is not JSON: ${(err as Error).message}`);
  }
  const stepID = typeof data.step_id === "string" ? data.step_id : (h?.get("ce-stepid") ?? "");
  const attempt = typeof data.attempt === "number" ? data.attempt : 1;
  if (!stepID) throw new PermanentError("step request without step_id");
  const deps = data.dependency_outputs;
  const dependencyOutputs = deps && typeof deps === "object" ? (deps as Record<string, unknown>) : {};
  return { tenant, workflow, stepID, attempt, input: data.input, dependencyOutputs };
}

// cloudEvent returns the headers of a message this agent publishes about a step (README step 4).
// Its ce-id is the publish's Nats-Msg-Id: a repeat is the same event to JetStream and to CloudEvents.
function cloudEvent(step: Step, type: string, id: string): MsgHdrs {
  const h = headers();
  h.set("ce-specversion", "1.0");
  h.set("ce-id", id);
  h.set("ce-source", source);
  h.set("ce-type", type);
  h.set("ce-time", new Date().toISOString());
  h.set("ce-tenantid", step.tenant);
  h.set("ce-workflowid", step.workflow);
  h.set("ce-stepid", step.stepID);
  h.set("Content-Type", "application/json");
  return h;
}

const json = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

// Emitter publishes a step's progress and artifact events on the workflow's events subject,
// each with a Nats-Msg-Id of its own that a redelivery of the step repeats, so it is stored once.
class Emitter {
  private n = 0;
  constructor(private js: JetStreamClient, private step: Step) {}

  async emit(type: string, data: Record<string, unknown>): Promise<void> {
    const s = this.step;
    const id = `${s.tenant}/${s.workflow}/${s.stepID}/${s.attempt}/emit/${++this.n}`;
    await this.js.publish(`agentbus.${s.tenant}.events.${s.workflow}`, json({ step_id: s.stepID, ...data }), {
      headers: cloudEvent(s, type, id),
      msgID: id,
    });
  }
  progress(percent: number, message: string) {
    return this.emit(types.progress, { completed_steps: 0, total_steps: 0, percent, message });
  }
  artifact(id: string, name: string, data: unknown) {
    return this.emit(types.artifact, { artifact_id: id, name, data, last_chunk: true });
  }
}

// asRef returns v's reference when v is one: an object whose only member is "$agentbus_ref".
function asRef(v: unknown): PayloadRef | null {
  if (!v || typeof v !== "object" || Array.isArray(v)) return null;
  const keys = Object.keys(v);
  if (keys.length !== 1 || keys[0] !== refKey) return null;
  const r = (v as Record<string, PayloadRef>)[refKey];
  if (!r || typeof r.key !== "string" || typeof r.sha256 !== "string" || typeof r.size !== "number") {
    throw new PermanentError(`malformed payload reference ${JSON.stringify(v)}`);
  }
  return r;
}

const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

// Payloads reads and writes the large payloads of a tenant's steps in object store AGENTBUS_PAYLOADS.
class Payloads {
  private store?: Promise<ObjectStore>;
  constructor(private nc: NatsConnection) {}

  private open(): Promise<ObjectStore> {
    this.store ??= new Objm(this.nc).open(payloadBucket);
    return this.store;
  }

  // resolve returns v, or the payload it refers to (parsed), checked against its size and SHA-256.
  async resolve(step: Step, v: unknown): Promise<unknown> {
    const ref = asRef(v);
    if (!ref) return v;
    if (ref.bucket !== payloadBucket || !ref.key.startsWith(`${step.tenant}/`)) {
      throw new PermanentError(`payload ${ref.key} is not tenant ${step.tenant}'s`);
    }
    const data = await (await this.open()).getBlob(ref.key);
    if (data === null) throw new PermanentError(`payload ${ref.bucket}/${ref.key} (${ref.size} bytes) is gone`);
    if (data.length !== ref.size || sha256(data) !== ref.sha256) {
      throw new PermanentError(`payload ${ref.key} does not match its reference (${data.length} bytes read)`);
    }
    return JSON.parse(new TextDecoder().decode(data));
  }

  // offload returns the JSON of v, or of a reference to it once stored when it is above the threshold.
  async offload(step: Step, v: unknown): Promise<unknown> {
    const bytes = json(v);
    if (payloadThreshold < 0 || bytes.length <= payloadThreshold) return v;
    const digest = sha256(bytes);
    const key = `${step.tenant}/${step.workflow}/${step.stepID}/${step.attempt}/output-${digest.slice(0, 16)}`;
    const h = headers();
    h.set("Content-Type", "application/json");
    await (await this.open()).putBlob({ name: key, headers: h }, bytes);
    const ref: PayloadRef = { bucket: payloadBucket, key, size: bytes.length, sha256: digest, content_type: "application/json" };
    return { [refKey]: ref };
  }
}

// shout is the capability itself.
async function shout(step: Step, emit: Emitter, payloads: Payloads): Promise<unknown> {
  let input = (await payloads.resolve(step, step.input)) as { text?: unknown; repeat?: unknown } | null;
  if (typeof input?.text !== "string") {
    const first = Object.values(step.dependencyOutputs)[0];
    const dep = (await payloads.resolve(step, first)) as { text?: unknown } | null;
    if (typeof dep?.text === "string") input = { ...input, text: dep.text };
  }
  if (typeof input?.text !== "string") throw new PermanentError("input.text must be a string");
  const repeat = typeof input.repeat === "number" && input.repeat > 1 ? Math.floor(input.repeat) : 1;
  await emit.progress(10, "shouting");
  const text = input.text.toUpperCase().repeat(repeat);
  await emit.artifact(`${step.stepID}-shout`, "shout.txt", { text: text.length > 1024 ? text.slice(0, 1024) : text });
  log("working", { workflow: step.workflow, step: step.stepID, work_ms: workMs });
  await new Promise((resolve) => setTimeout(resolve, workMs));
  return { text };
}

// reply answers the step (README step 4): first handed straight to an orchestrator, which answers
// "+OK" once the workflow's checkpoint records it; anything else, or no answer within 2s, and it
// is published on the workflow's reply subject, where a copy the orchestrator also took changes
// nothing. It says which way the answer went.
async function reply(nc: NatsConnection, js: JetStreamClient, step: Step, type: string, data: Record<string, unknown>): Promise<string> {
  const id = `${step.tenant}/${step.workflow}/${step.stepID}/${step.attempt}`; // one answer per attempt
  const body = json({ step_id: step.stepID, capability, attempt: step.attempt, ...data });
  try {
    const verdict = await nc.request(`agentbus.${step.tenant}.result.${step.workflow}`, body, {
      headers: cloudEvent(step, type, id),
      timeout: 2000,
    });
    if (verdict.string() === "+OK") return "handed";
  } catch {
    // no orchestrator listening, or none answered in time: the stream is the durable way
  }
  await js.publish(`agentbus.${step.tenant}.reply.${step.workflow}`, body, {
    headers: cloudEvent(step, type, id),
    msgID: id,
  });
  return "streamed";
}

// deadLetter moves a step past its deliveries aside and fails it (README step 6).
async function deadLetter(nc: NatsConnection, js: JetStreamClient, msg: JsMsg, step: Step, deliveries: number) {
  const reason = `delivered ${deliveries} times, more than MaxDeliver ${maxDeliver}`;
  const h = headers();
  for (const [k, vs] of msg.headers ?? []) for (const v of vs) h.append(k, v);
  h.set("Agentbus-Deadletter-Reason", reason);
  h.set("Agentbus-Deadletter-Deliveries", String(deliveries));
  h.set("Agentbus-Deadletter-By", source);
  h.set("Agentbus-Deadletter-Subject", msg.subject);
  await js.publish(`agentbus.${step.tenant}.deadletter.${capability}`, msg.data, { headers: h });
  await reply(nc, js, step, types.failed, { error: `${capability}: dead-lettered: ${reason}`, retryable: false });
}

// handle serves one delivery of a step, from pickup to its ack or nak.
async function handle(nc: NatsConnection, js: JetStreamClient, payloads: Payloads, msg: JsMsg, ackWaitMs: number): Promise<void> {
  const deliveries = msg.info.deliveryCount;
  // An in-progress ack at least every AckWait/3 keeps the step ours while it runs (README step 3).
  const keepalive = setInterval(() => msg.working(), Math.max(ackWaitMs / 3, 100));
  let step: Step;
  try {
    step = parse(msg);
  } catch (err) {
    clearInterval(keepalive);
    log("step request refused", { subject: msg.subject, error: (err as Error).message });
    msg.term((err as Error).message); // it can never be answered: do not redeliver it
    return;
  }
  log("step taken", { workflow: step.workflow, step: step.stepID, attempt: step.attempt, delivery: deliveries });
  try {
    if (deliveries > maxDeliver) {
      await deadLetter(nc, js, msg, step, deliveries);
      log("step dead-lettered", { workflow: step.workflow, step: step.stepID, delivery: deliveries });
    } else {
      try {
        const output = await payloads.offload(step, await shout(step, new Emitter(js, step), payloads));
        const way = await reply(nc, js, step, types.completed, { output });
        log("step completed", { workflow: step.workflow, step: step.stepID, delivery: deliveries, answer: way });
      } catch (err) {
        if (!(err instanceof PermanentError)) throw err;
        await reply(nc, js, step, types.failed, { error: `${capability}: ${err.message}`, retryable: false });
        log("step failed", { workflow: step.workflow, step: step.stepID, error: err.message });
      }
    }
    await msg.ackAck(); // README step 5: ack after the answer is stored
  } catch (err) {
    // Anything else (the server unreachable, say) is retried: nak with a backoff (README step 5).
    const delay = Math.min(250 * 2 ** (deliveries - 1), 10_000);
    log("step retried", { workflow: step.workflow, step: step.stepID, error: String(err), delay_ms: delay });
    msg.nak(delay);
  } finally {
    clearInterval(keepalive);
  }
}

async function main(): Promise<void> {
  const nc = await connect({ servers: natsURL, name: "ts-agent", maxReconnectAttempts: -1 });
  const js = jetstream(nc);
  const payloads = new Payloads(nc);
  const { consumer, ackWaitMs: wait } = await bind(nc);
  let stopping = false;
  const stop = () => {
    stopping = true;
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  log("ready", { capability, consumer: durable, ack_wait_ms: wait, max_deliver: maxDeliver });
  // One step at a time: fetch 1 only when the last one is done (README step 2).
  while (!stopping) {
    let msg: JsMsg | null;
    try {
      msg = await consumer.next({ expires: 2_000 });
    } catch (err) {
      log("fetch failed", { error: String(err) });
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      continue;
    }
    if (msg) await handle(nc, js, payloads, msg, wait);
  }
  await nc.drain();
  log("stopped");
}

main().catch((err) => {
  log("fatal", { error: String(err) });
  process.exit(1);
});
