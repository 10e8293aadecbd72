"""An A2A agent built with the official Python SDK (a2a-sdk 1.x, Starlette + uvicorn), JSON-RPC at "/"
and HTTP+JSON beside it, for the client, command-line and gateway tests. It behaves like
tests/cli/agent.py: "ask ..." asks for a name and greets the follow-up, "slow a b c" streams the
words 0.3 s apart (a cancel stops it), "fail" fails, anything else is echoed.
Usage: python3 sdk_agent.py PORT"""
import asyncio
import sys

import uvicorn
from a2a.helpers.proto_helpers import new_task, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import a2a_pb2 as pb
from starlette.applications import Starlette


class Agent(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input().strip()
        follow_up = context.current_task is not None
        if not follow_up:
            await event_queue.enqueue_event(new_task(context.task_id, context.context_id, pb.TASK_STATE_SUBMITTED))
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        agent_says = lambda t: new_text_message(t, context_id=context.context_id, task_id=context.task_id, role=pb.ROLE_AGENT)  # noqa: E731
        if follow_up:
            await updater.add_artifact([pb.Part(text=f"Hello, {text}!")], artifact_id="answer", last_chunk=True)
            return await updater.complete()
        if text.startswith("ask"):
            return await updater.requires_input(agent_says("What is your name?"))
        if text == "fail":
            return await updater.failed(agent_says("it went wrong on purpose"))
        await updater.start_work()
        if text.startswith("slow"):
            words = text.split()[1:]
            for i, word in enumerate(words):
                await asyncio.sleep(0.3)
                await updater.add_artifact(
                    [pb.Part(text=word + " ")], artifact_id="answer", append=i > 0, last_chunk=i == len(words) - 1
                )
            return await updater.complete()
        await updater.add_artifact([pb.Part(text=text)], artifact_id="answer", last_chunk=True)
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def main(port: int) -> None:
    base = f"http://127.0.0.1:{port}"
    card = pb.AgentCard(
        name="SDK test agent",
        description="An agent built with the official a2a-sdk",
        version="1.0.0",
        capabilities=pb.AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        supported_interfaces=[
            pb.AgentInterface(url=f"{base}/", protocol_binding="JSONRPC", protocol_version="1.0"),
            pb.AgentInterface(url=base, protocol_binding="HTTP+JSON", protocol_version="1.0"),
        ],
        skills=[pb.AgentSkill(id="echo", name="Echo", description="Echoes, asks, streams", tags=["test"])],
    )
    handler = DefaultRequestHandler(agent_executor=Agent(), task_store=InMemoryTaskStore(), agent_card=card)
    routes = create_agent_card_routes(card) + create_jsonrpc_routes(handler, rpc_url="/") + create_rest_routes(handler)
    config = uvicorn.Config(Starlette(routes=routes), host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    print("listening", flush=True)
    server.run()


if __name__ == "__main__":
    main(int(sys.argv[1]))
