"""An agentbus agent in Python, written only from the README's section
"Writing an agent in any language": it serves the capability "shout", which
upper-cases input.text, with nothing but nats-py.

    NATS_URL            the server (default nats://127.0.0.1:4222)
    AGENT_ACK_WAIT_MS   AckWait of the consumer when this agent creates it (default 30000)
    AGENT_MAX_DELIVER   deliveries before the dead letter (default 5)
    AGENT_WORK_MS       how long shouting takes, to show in-progress acks (default 0)

It logs one JSON object a line on stdout, as examples/ts-agent does.
"""

import asyncio
import json
import os
import signal
import sys
from datetime import datetime, timezone

import nats
from nats.errors import TimeoutError as FetchTimeout
from nats.js.api import AckPolicy, ConsumerConfig
from nats.js.errors import NotFoundError

CAPABILITY = "shout"
STREAM = "AGENTBUS_STEPS"
DURABLE = f"step-{CAPABILITY}"
SOURCE = "/examples/py-agent"

NATS_URL = os.environ.get("NATS_URL", "nats://127.0.0.1:4222")
ACK_WAIT_MS = int(os.environ.get("AGENT_ACK_WAIT_MS") or 30000)
MAX_DELIVER = int(os.environ.get("AGENT_MAX_DELIVER") or 5)
WORK_MS = int(os.environ.get("AGENT_WORK_MS") or 0)

# The CloudEvent types this agent reads and writes (README, steps 2 and 4, and the events table).
REQUESTED = "io.agentbus.step.requested.v1"
COMPLETED = "io.agentbus.step.completed.v1"
FAILED = "io.agentbus.step.failed.v1"
PROGRESS = "io.agentbus.workflow.progress.v1"
ARTIFACT = "io.agentbus.workflow.artifact.v1"


class PermanentError(Exception):
    """A failure no retry can mend: answered with step.failed at once."""


def log(msg, **fields):
    line = {"time": datetime.now(timezone.utc).isoformat(), "msg": msg, **fields}
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


class Step:
    """What a step.requested message names: its headers and the fields of its data this agent uses."""

    def __init__(self, msg):
        h = msg.headers or {}
        self.tenant = h.get("ce-tenantid", "")
        self.workflow = h.get("ce-workflowid", "")
        if not self.tenant or not self.workflow:
            raise PermanentError("step request without ce-tenantid or ce-workflowid")
        if h.get("ce-type") != REQUESTED:
            raise PermanentError(f"ce-type {h.get('ce-type')}: want {REQUESTED}")
        try:
            data = json.loads(msg.data)
        except ValueError as err:
            raise PermanentError(f"step request data is not JSON: {err}") from err
        if not isinstance(data, dict):
            raise PermanentError("step request data is not a JSON object")
        step_id = data.get("step_id")
        self.step_id = step_id if isinstance(step_id, str) else h.get("ce-stepid", "")
        if not self.step_id:
            raise PermanentError("step request without step_id")
        self.attempt = data.get("attempt") if isinstance(data.get("attempt"), int) else 1
        self.input = data.get("input")

    def cloud_event(self, ce_type, ce_id):
        """The headers of a message about this step (README step 4). Its ce-id is the
        publish's Nats-Msg-Id: a repeat is the same event to JetStream and to CloudEvents."""
        return {
            "ce-specversion": "1.0",
            "ce-id": ce_id,
            "ce-source": SOURCE,
            "ce-type": ce_type,
            "ce-time": datetime.now(timezone.utc).isoformat().replace("+00:00", "Z"),
            "ce-tenantid": self.tenant,
            "ce-workflowid": self.workflow,
            "ce-stepid": self.step_id,
            "Content-Type": "application/json",
            "Nats-Msg-Id": ce_id,
        }


class Emitter:
    """Publishes a step's progress and artifact events on the workflow's events subject, each
    with a Nats-Msg-Id of its own that a redelivery of the step repeats, so it is stored once."""

    def __init__(self, js, step):
        self.js, self.step, self.n = js, step, 0

    async def emit(self, ce_type, data):
        s = self.step
        self.n += 1
        ce_id = f"{s.tenant}/{s.workflow}/{s.step_id}/{s.attempt}/emit/{self.n}"
        body = json.dumps({"step_id": s.step_id, **data}).encode()
        await self.js.publish(f"agentbus.{s.tenant}.events.{s.workflow}", body, headers=s.cloud_event(ce_type, ce_id))

    async def progress(self, percent, message):
        await self.emit(PROGRESS, {"completed_steps": 0, "total_steps": 0, "percent": percent, "message": message})

    async def artifact(self, artifact_id, name, data):
        await self.emit(ARTIFACT, {"artifact_id": artifact_id, "name": name, "data": data, "last_chunk": True})


async def shout(step, emit):
    """The capability itself."""
    text = step.input.get("text") if isinstance(step.input, dict) else None
    if not isinstance(text, str):
        raise PermanentError("input.text must be a string")
    await emit.progress(10, "shouting")
    text = text.upper()
    await emit.artifact(f"{step.step_id}-shout", "shout.txt", {"text": text})
    log("working", workflow=step.workflow, step=step.step_id, work_ms=WORK_MS)
    await asyncio.sleep(WORK_MS / 1000)
    return {"text": text}


async def reply(js, step, ce_type, data):
    """Answers the step on the workflow's reply subject (README step 4), once per attempt."""
    ce_id = f"{step.tenant}/{step.workflow}/{step.step_id}/{step.attempt}"
    body = json.dumps({"step_id": step.step_id, "capability": CAPABILITY, "attempt": step.attempt, **data}).encode()
    await js.publish(f"agentbus.{step.tenant}.reply.{step.workflow}", body, headers=step.cloud_event(ce_type, ce_id))


async def dead_letter(js, msg, step, deliveries):
    """Moves a step past its deliveries aside and fails it (README step 6)."""
    reason = f"delivered {deliveries} times, more than MaxDeliver {MAX_DELIVER}"
    h = dict(msg.headers or {})
    h["Agentbus-Deadletter-Reason"] = reason
    h["Agentbus-Deadletter-Deliveries"] = str(deliveries)
    h["Agentbus-Deadletter-By"] = SOURCE
    h["Agentbus-Deadletter-Subject"] = msg.subject
    await js.publish(f"agentbus.{step.tenant}.deadletter.{CAPABILITY}", msg.data, headers=h)
    await reply(js, step, FAILED, {"error": f"{CAPABILITY}: dead-lettered: {reason}", "retryable": False})


async def keep_alive(msg, every):
    """An in-progress ack at least every AckWait/3 keeps the step ours while it runs (README step 3)."""
    while True:
        await asyncio.sleep(every)
        await msg.in_progress()


async def handle(js, msg, ack_wait):
    """Serves one delivery of a step, from pickup to its ack or nak."""
    deliveries = msg.metadata.num_delivered
    keeper = asyncio.create_task(keep_alive(msg, max(ack_wait / 3, 0.1)))
    try:
        try:
            step = Step(msg)
        except PermanentError as err:
            log("step request refused", subject=msg.subject, error=str(err))
            await msg.term()  # it can never be answered: do not redeliver it
            return
        log("step taken", workflow=step.workflow, step=step.step_id, attempt=step.attempt, delivery=deliveries)
        try:
            if deliveries > MAX_DELIVER:
                await dead_letter(js, msg, step, deliveries)
                log("step dead-lettered", workflow=step.workflow, step=step.step_id, delivery=deliveries)
            else:
                try:
                    output = await shout(step, Emitter(js, step))
                    await reply(js, step, COMPLETED, {"output": output})
                    log("step completed", workflow=step.workflow, step=step.step_id, delivery=deliveries)
                except PermanentError as err:
                    await reply(js, step, FAILED, {"error": f"{CAPABILITY}: {err}", "retryable": False})
                    log("step failed", workflow=step.workflow, step=step.step_id, error=str(err))
            await msg.ack_sync()  # README step 5: ack after the answer is stored
        except Exception as err:  # the server unreachable, say: retry with a backoff (README step 5)
            delay = min(0.25 * 2 ** (deliveries - 1), 10.0)
            log("step retried", workflow=step.workflow, step=step.step_id, error=repr(err), delay_ms=int(delay * 1000))
            await msg.nak(delay=delay)
    finally:
        keeper.cancel()


async def bind(nc):
    """Returns a pull subscription on the durable consumer step-shout, creating it as README
    step 1 says if it is missing, and the consumer's AckWait in seconds."""
    js = nc.jetstream()
    try:
        info = await js.consumer_info(STREAM, DURABLE)
    except NotFoundError:
        info = await js.add_consumer(
            STREAM,
            ConsumerConfig(
                durable_name=DURABLE,
                filter_subject=f"agentbus.*.step.{CAPABILITY}",
                ack_policy=AckPolicy.EXPLICIT,
                ack_wait=ACK_WAIT_MS / 1000,  # seconds
                max_deliver=-1,  # this agent counts deliveries itself (README step 6)
                max_waiting=65536,  # one waiting pull per idle slot, as agentbus's workers (README step 1)
            ),
        )
    sub = await js.pull_subscribe_bind(DURABLE, STREAM)
    # Whoever created the consumer chose its AckWait: in-progress acks follow the consumer's.
    return js, sub, info.config.ack_wait or 30.0


async def main():
    nc = await nats.connect(NATS_URL, name="py-agent", max_reconnect_attempts=-1)
    js, sub, ack_wait = await bind(nc)
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stopping.set)
    log("ready", capability=CAPABILITY, consumer=DURABLE, ack_wait_ms=int(ack_wait * 1000), max_deliver=MAX_DELIVER)
    # One step at a time: fetch 1 only when the last one is done (README step 2).
    while not stopping.is_set():
        try:
            msgs = await sub.fetch(1, timeout=2)
        except (FetchTimeout, asyncio.TimeoutError):  # no step within 2 s: nats-py's TimeoutError is one
            continue
        except Exception as err:
            log("fetch failed", error=repr(err))
            await asyncio.sleep(1)
            continue
        for msg in msgs:
            await handle(js, msg, ack_wait)
    await nc.drain()
    log("stopped")


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except Exception as err:
        log("fatal", error=repr(err))
        sys.exit(1)
