"""An A2A 0.3 agent built with the official Python SDK 0.3 (a2a-sdk 0.3.x, run with its own venv),
JSON-RPC only — an upstream that speaks nothing newer, for the client and the gateway. It behaves
like tests/cli/sdk_agent.py: "ask ..." asks for a name and greets the follow-up, "slow a b c"
streams the words 0.3 s apart, "fail" fails, anything else is echoed.
Usage: python3 sdk03_agent.py PORT"""
import asyncio
import sys

import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2AStarletteApplication
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentSkill, Part, TextPart
from a2a.utils import new_agent_text_message, new_task


class Agent(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input().strip()
        task = context.current_task
        follow_up = task is not None
        if task is None:
            task = new_task(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        says = lambda t: new_agent_text_message(t, task.context_id, task.id)  # noqa: E731
        if follow_up:
            await updater.add_artifact([Part(root=TextPart(text=f"Hello, {text}!"))], artifact_id="answer", last_chunk=True)
            return await updater.complete()
        if text.startswith("ask"):
            return await updater.requires_input(says("What is your name?"), final=True)
        if text == "fail":
            return await updater.failed(says("it went wrong on purpose"))
        await updater.start_work()
        if text.startswith("slow"):
            words = text.split()[1:]
            for i, word in enumerate(words):
                await asyncio.sleep(0.3)
                await updater.add_artifact(
                    [Part(root=TextPart(text=word + " "))], artifact_id="answer", append=i > 0, last_chunk=i == len(words) - 1
                )
            return await updater.complete()
        await updater.add_artifact([Part(root=TextPart(text=text))], artifact_id="answer", last_chunk=True)
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def main(port: int) -> None:
    card = AgentCard(
        name="SDK 0.3 test agent",
        description="An agent built with the official a2a-sdk 0.3",
        url=f"http://127.0.0.1:{port}/",
        version="1.0.0",
        protocol_version="0.3.0",
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="Echo", description="Echoes, asks, streams", tags=["test"])],
    )
    handler = DefaultRequestHandler(agent_executor=Agent(), task_store=InMemoryTaskStore())
    app = A2AStarletteApplication(agent_card=card, http_handler=handler).build()
    print("listening", flush=True)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main(int(sys.argv[1]))
