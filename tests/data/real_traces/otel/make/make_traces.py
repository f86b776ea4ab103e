"""Write the corpus of real traces in tests/data/real_traces/otel/ (see ../SOURCES.md).

Each trace is made by the real SDK and the real instrumentation, offline: the model's answers
are the recorded HTTP responses of a public cassette (cassettes/, copied unchanged), served by
replay.py; the calls made are those the cassette's own test makes. The user has no parent span,
as in those projects' own tests, so each model call is a trace of its own. Each scenario runs in
a fresh interpreter (instrumentors patch the SDKs for the whole process).

Run it in a virtual environment holding the packages named in ../SOURCES.md:

    python tests/data/real_traces/otel/make/make_traces.py            # every trace
    python tests/data/real_traces/otel/make/make_traces.py NAME ...   # only these
    python tests/data/real_traces/otel/make/make_traces.py --print NAME  # to stdout

This folder is data, not tests: pytest collects no module here (none is named test_*).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

import replay  # noqa: E402

OUT = HERE.parent


def _provider() -> tuple[Any, Any]:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def _request_bodies(cassette: str) -> list[dict[str, Any]]:
    """The JSON bodies the cassette's test sent, to send them again."""
    bodies = []
    for interaction in replay.recorded(cassette):
        request = interaction["request"]
        if "parsed_body" in request:
            bodies.append(request["parsed_body"])
        else:
            bodies.append(json.loads(request["body"]))
    return bodies


# --------------------------------------------------------------------------------------------
# opentelemetry-instrumentation-openai-v2 (GenAI conventions, messages on the span)


def _openai_v2(cassette: str) -> Any:
    os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
    import openai
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    provider, exporter = _provider()
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    sdk = openai.OpenAI(api_key="test", http_client=replay.client(cassette))
    for body in _request_bodies(cassette):
        response = sdk.chat.completions.create(**body)
        if body.get("stream"):
            for _chunk in response:
                pass
    return exporter.get_finished_spans()


# --------------------------------------------------------------------------------------------
# openinference-instrumentation-openai (OpenInference attributes)


def _openinference_openai(cassette: str) -> Any:
    import openai
    from openinference.instrumentation.openai import OpenAIInstrumentor

    provider, exporter = _provider()
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    sdk = openai.OpenAI(api_key="test", http_client=replay.client(cassette))
    for body in _request_bodies(cassette):
        sdk.chat.completions.create(**body)
    return exporter.get_finished_spans()


# --------------------------------------------------------------------------------------------
# openinference-instrumentation-anthropic (OpenInference attributes)


def _openinference_anthropic(cassette: str) -> Any:
    import anthropic
    import httpx2
    from openinference.instrumentation.anthropic import AnthropicInstrumentor

    provider, exporter = _provider()
    AnthropicInstrumentor().instrument(tracer_provider=provider)
    sdk = anthropic.Anthropic(api_key="test", http_client=replay.client(cassette, httpx2))
    for body in _request_bodies(cassette):
        sdk.messages.create(**body)
    return exporter.get_finished_spans()


# --------------------------------------------------------------------------------------------
# openinference-instrumentation-langchain with LangGraph's prebuilt ReAct agent


def _langgraph_weather() -> Any:
    """The agent the otel-contrib cassette's calls describe: one tool, get_current_weather,
    answering what that test's tool messages say."""
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent
    from openinference.instrumentation.langchain import LangChainInstrumentor

    cassette = "otel-contrib__test_chat_completion_tool_calls_with_content.yaml"
    provider, exporter = _provider()
    LangChainInstrumentor().instrument(tracer_provider=provider)

    @tool
    def get_current_weather(location: str) -> str:
        """Get the current weather in a given location"""
        return {"Seattle, WA": "50 degrees and raining"}.get(location, "70 degrees and sunny")

    model = ChatOpenAI(model="gpt-4o-mini", api_key="test", http_client=replay.client(cassette))
    agent = create_react_agent(model, [get_current_weather], prompt="You're a helpful assistant.")
    agent.invoke({"messages": [("user", "What's the weather in Seattle and San Francisco today?")]})
    return exporter.get_finished_spans()


def _langchain_tool_call() -> Any:
    """openinference-langchain's own test_tool_call_with_function: a model bound to two tools."""
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from openinference.instrumentation.langchain import LangChainInstrumentor

    cassette = "openinference__langchain_test_tool_call_with_function.yaml"
    provider, exporter = _provider()
    LangChainInstrumentor().instrument(tracer_provider=provider)

    @tool
    def add(a: int, b: int) -> int:
        """Adds a and b."""
        return a + b

    @tool
    def multiply(a: int, b: int) -> int:
        """Multiplies a and b."""
        return a * b

    model = ChatOpenAI(model="gpt-4o-mini", api_key="test", http_client=replay.client(cassette))
    model.bind_tools([add, multiply]).invoke("What is 3 * 12? Also, what is 11 + 49?")
    return exporter.get_finished_spans()


# --------------------------------------------------------------------------------------------
# pydantic-ai's own instrumentation (GenAI conventions as pydantic-ai writes them)


def _pydantic_ai(version: int, include_content: bool = True) -> Any:
    """pydantic-ai's test_openai_instructions_with_tool_calls_keep_instructions, instrumented."""
    import warnings

    from openai import AsyncOpenAI
    from pydantic_ai import Agent
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    cassette = "pydantic-ai__test_openai_instructions_with_tool_calls_keep_instructions.yaml"
    provider, exporter = _provider()
    sdk = AsyncOpenAI(api_key="test", http_client=replay.async_client(cassette))
    model = OpenAIChatModel("gpt-4.1-mini", provider=OpenAIProvider(openai_client=sdk))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # versions 2-4 are deprecated; they are still written
        settings = InstrumentationSettings(
            tracer_provider=provider, version=version, include_content=include_content
        )
    Agent.instrument_all(settings)
    agent = Agent(model, instructions="You are a helpful assistant.")

    @agent.tool_plain
    async def get_temperature(city: str) -> float:
        return 20.0

    agent.run_sync("What is the temperature in Tokyo?")
    return exporter.get_finished_spans()


# --------------------------------------------------------------------------------------------

#: file name: (how its spans are made, the form it is stored in)
SCENARIOS: dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]] = {
    "openai_v2_tool_calls.json": (
        lambda: _openai_v2("otel-contrib__test_chat_completion_tool_calls_with_content.yaml"),
        replay.span_dicts,
    ),
    "openai_v2_tool_calls.otlp.json": (
        lambda: _openai_v2("otel-contrib__test_chat_completion_tool_calls_with_content.yaml"),
        replay.otlp_json,
    ),
    "openai_v2_with_content.json": (
        lambda: _openai_v2("otel-contrib__test_chat_completion_with_content.yaml"),
        replay.span_dicts,
    ),
    "openai_v2_tools_streaming.json": (
        lambda: _openai_v2(
            "otel-contrib__test_chat_completion_multiple_tools_streaming_with_content.yaml"
        ),
        replay.span_dicts,
    ),
    "openinference_openai_tool_calls.json": (
        lambda: _openinference_openai("openinference__openai_test_tool_calls.yaml"),
        replay.span_dicts,
    ),
    "openinference_openai_two_calls.json": (
        lambda: _openinference_openai(
            "otel-contrib__test_chat_completion_tool_calls_with_content.yaml"
        ),
        replay.span_dicts,
    ),
    "openinference_anthropic_tool_use_in_input.json": (
        lambda: _openinference_anthropic(
            "openinference__anthropic_test_anthropic_instrumentation_tool_use_in_input"
            "[with_blocks].yaml"
        ),
        replay.span_dicts,
    ),
    "openinference_anthropic_multiple_tool_calling.json": (
        lambda: _openinference_anthropic(
            "openinference__anthropic_test_anthropic_instrumentation_multiple_tool_calling.yaml"
        ),
        replay.span_dicts,
    ),
    "openinference_langgraph_weather.json": (_langgraph_weather, replay.span_dicts),
    "openinference_langgraph_weather.otlp.json": (_langgraph_weather, replay.otlp_json),
    "openinference_langchain_tool_call.json": (_langchain_tool_call, replay.span_dicts),
    "pydantic_ai_v2.json": (lambda: _pydantic_ai(2), replay.span_dicts),
    "pydantic_ai_v3.json": (lambda: _pydantic_ai(3), replay.span_dicts),
    "pydantic_ai_v4.json": (lambda: _pydantic_ai(4), replay.span_dicts),
    "pydantic_ai_v5.json": (lambda: _pydantic_ai(5), replay.span_dicts),
    "pydantic_ai_v6.json": (lambda: _pydantic_ai(6), replay.span_dicts),
    "pydantic_ai_v5_no_content.json": (lambda: _pydantic_ai(5, False), replay.span_dicts),
}


def make(name: str) -> Any:
    """The export of one scenario, as stored."""
    spans, form = SCENARIOS[name]
    return form(spans())


def main(names: list[str]) -> None:
    if len(names) == 2 and names[0] in ("--one", "--print"):
        text = json.dumps(make(names[1]), indent=1) + "\n"
        if names[0] == "--print":  # what tests/test_real_traces_otel.py compares
            sys.stdout.write(text)
        else:
            (OUT / names[1]).write_text(text, "utf-8")
        return
    for name in names or list(SCENARIOS):
        subprocess.run([sys.executable, __file__, "--one", name], check=True)
        print("wrote", OUT / name)


if __name__ == "__main__":
    main(sys.argv[1:])
